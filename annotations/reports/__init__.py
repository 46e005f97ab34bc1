"""Render a `CheckReport` as text, JSON, GitHub workflow commands, SARIF or Markdown.

Every renderer is pure: it returns the whole report as one string without a trailing
newline, and never prints (`render_chunks` gives it in pieces). Only the ``text`` format
uses colour, and only on request.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the CLI reads FORMATS at every start; a render imports the model
    from annotations.results import CheckReport

FORMATS: tuple[str, ...] = ("text", "json", "github", "sarif", "markdown")
"""Accepted values of `render`'s `fmt`, the default first."""

# Each format's module is imported only when asked for: `annotate check` is timed whole.
_MODULES = {
    "text": "text",
    "json": "json_report",
    "github": "github",
    "sarif": "sarif",
    "markdown": "markdown",
}


class UnknownFormatError(ValueError):
    """`render` was asked for a format not in `FORMATS`."""


def render(report: CheckReport, fmt: str, *, color: bool = False) -> str:
    """`report` in format `fmt` (one of `FORMATS`); `color` applies to ``text`` only."""
    module = _module(fmt)
    if fmt == "text":
        return module.render(report, color=color)
    return module.render(report)


def render_chunks(report: CheckReport, fmt: str, *, color: bool = False) -> Iterator[str]:
    """`render`'s text in pieces that join into it: JSON as it is encoded, never whole in
    memory; the other formats in one piece."""
    if fmt == "json":
        yield from _module(fmt).chunks(report)
    else:
        yield render(report, fmt, color=color)


def _module(fmt: str) -> Any:
    module_name = _MODULES.get(fmt)
    if module_name is None:
        raise UnknownFormatError(f"unknown report format {fmt!r}; use one of {', '.join(FORMATS)}")
    return import_module(f"annotations.reports.{module_name}")


__all__ = ["FORMATS", "UnknownFormatError", "render", "render_chunks"]
