"""``annotate diff`` and ``annotate history``: the entry points the CLI calls.

* `diff_report`: every symbol change between two indexed versions of one repo (see
  `annotations.diffs.build`), and `render_diff` in ``markdown``, ``json`` or ``html``.
* `history_of`: one symbol's timeline across the repo's indexed versions
  (`annotations.diffs.timeline`).

Pure library code: results come back as objects and strings; errors are the project's
named errors (`db.errors.MissingIndex` for an unindexed version, `DiffError` for two
versions of different repos, `annotations.resolve.ResolveError` for a bad ref).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from importlib import import_module
from typing import TYPE_CHECKING

from annotations.errors import AnnotationError

if TYPE_CHECKING:  # each command imports only what it runs
    from annotations.diffs.model import DiffReport
    from annotations.diffs.timeline import Timeline
    from annotations.refs import Ref
    from db.database import Database
    from indexer.config import ProjectConfig

DIFF_FORMATS: tuple[str, ...] = ("markdown", "json", "html")
"""Accepted formats of `render_diff`, the default first."""
_RENDERERS = {"markdown": "markdown", "json": "json_format", "html": "html_page"}


class DiffError(AnnotationError):
    """Two versions that cannot be compared."""


def diff_report(
    database: Database, config: ProjectConfig, version_a: tuple[str, str],
    version_b: tuple[str, str], *, annotated: bool = False, diff_limit: int = 0,
    workers: int = 1,
) -> DiffReport:
    """Every symbol change from ``version_a`` to ``version_b``, each a (repo, version).

    ``annotated`` keeps only the symbols claims cite; ``diff_limit`` symbols carry their
    sources for side-by-side diffs (the HTML format shows them); ``workers`` processes
    match the symbols (forked; the results do not depend on their number).
    """
    from annotations.diffs.build import build_report

    (repo, old), (other, new) = version_a, version_b
    config.repo(repo)
    config.repo(other)
    if repo != other:
        raise DiffError(
            f"{repo}@{old} and {other}@{new} are versions of different repos",
            hint=f"compare two versions of one repo, e.g. {repo}@{old} {repo}@VERSION",
        )
    with _few_collections():
        return build_report(database, config, repo, old, new, annotated=annotated,
                            diff_limit=diff_limit, workers=workers)


def render_diff(report: DiffReport, fmt: str) -> str:
    """``report`` in one of `DIFF_FORMATS`."""
    if fmt not in _RENDERERS:
        raise ValueError(f"unknown diff format {fmt!r}; use one of {', '.join(DIFF_FORMATS)}")
    module = import_module(f"annotations.diffs.{_RENDERERS[fmt]}")
    with _few_collections():
        return module.render(report)


def history_of(database: Database, config: ProjectConfig, ref: Ref) -> Timeline:
    """The timeline of the symbol ``ref`` names, oldest version first."""
    from annotations.diffs.timeline import symbol_timeline

    return symbol_timeline(database, config, ref)


@contextlib.contextmanager
def _few_collections() -> Iterator[None]:
    """Pause the cyclic garbage collector while a whole-version diff builds and renders its
    hundreds of thousands of short-lived objects (none of them garbage cycles): it would
    spend a tenth of the run traversing them. Restored afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
