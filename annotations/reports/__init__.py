"""Render a `CheckReport` as text, JSON, GitHub workflow commands, SARIF or Markdown.

Every renderer is pure: it returns the whole report as one string without a trailing
newline, and never prints. Only the ``text`` format uses colour, and only on request.
"""

from __future__ import annotations

from collections.abc import Callable

from annotations.reports import github, json_report, markdown, sarif, text
from annotations.results import CheckReport

FORMATS: tuple[str, ...] = ("text", "json", "github", "sarif", "markdown")
"""Accepted values of `render`'s `fmt`, the default first."""

_PLAIN: dict[str, Callable[[CheckReport], str]] = {
    "json": json_report.render,
    "github": github.render,
    "sarif": sarif.render,
    "markdown": markdown.render,
}


class UnknownFormatError(ValueError):
    """`render` was asked for a format not in `FORMATS`."""


def render(report: CheckReport, fmt: str, *, color: bool = False) -> str:
    """`report` in format `fmt` (one of `FORMATS`); `color` applies to ``text`` only."""
    if fmt == "text":
        return text.render(report, color=color)
    renderer = _PLAIN.get(fmt)
    if renderer is None:
        raise UnknownFormatError(f"unknown report format {fmt!r}; use one of {', '.join(FORMATS)}")
    return renderer(report)


__all__ = ["FORMATS", "UnknownFormatError", "render"]
