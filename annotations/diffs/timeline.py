"""``annotate history``: one symbol across every indexed version of its repo.

Versions are ordered by their version number, configured or not, then the names that are
not version numbers (``main``) in the order indexed (`queries.indexed_versions`). The
symbol is followed back to the first version where it is found and forward through moves
until it is removed (`annotations.matching.history`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotations.matching import HistoryEvent, HistoryStep, find_definition, history
from annotations.refs import Ref
from annotations.resolve import ResolveError, Resolver, UnindexedVersion, at_target_version
from db import queries
from db.database import Database
from db.errors import MissingIndex
from indexer.config import ProjectConfig, RepoConfig

HEADERS = ["version", "event", "symbol", "lines", "details"]


@dataclass(frozen=True)
class TimelineRow:
    """The symbol at one version. ``path``/``qualname`` are None once removed."""

    version: str
    event: str
    path: str | None
    qualname: str | None
    kind: str | None
    start_line: int | None
    end_line: int | None
    url: str | None
    kinds: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()
    content: str | None = None
    moved_from: str | None = None
    candidates: tuple[str, ...] = ()
    code_went_to: tuple[str, ...] = ()  # removed: the definitions that hold its lines now

    @property
    def ref(self) -> str | None:
        return f"{self.path}::{self.qualname}" if self.path else None


@dataclass(frozen=True)
class Timeline:
    repo: str
    asked: str  # the canonical ref asked about
    versions: tuple[str, ...]  # every version considered, oldest first
    rows: tuple[TimelineRow, ...]


def symbol_timeline(
    database: Database, config: ProjectConfig, ref: Ref, default_repo: str = "vllm"
) -> Timeline:
    """The timeline of the symbol ``ref`` names. A ref without a version is taken at
    ``default_repo``'s target version."""
    try:
        resolved = Resolver(database, config).resolve_symbol(
            at_target_version(config, ref, default_repo))
    except UnindexedVersion as error:  # worded as everywhere else: "...; run 'annotate index'"
        raise MissingIndex(error.message, error.hint) from None
    symbol = find_definition(database, resolved.version_key, resolved.path, resolved.qualname or "",
                             resolved.start_line)
    if symbol is None:  # resolved from the same index: not expected
        raise ResolveError(f"{resolved.canonical} is not in the index")
    repo = config.repo(resolved.repo)
    versions = queries.indexed_version_keys(database, repo.name)
    steps = history(database, repo.name, symbol, versions)
    previous = [None, *steps[:-1]]
    rows = [_row(step, repo, before) for step, before in zip(steps, previous, strict=True)]
    return Timeline(repo.name, resolved.canonical, tuple(v for v, _ in versions), tuple(rows))


def _row(step: HistoryStep, repo: RepoConfig, previous: HistoryStep | None) -> TimelineRow:
    symbol, match = step.symbol, step.match
    base: dict[str, Any] = {"version": step.version, "event": step.event.value}
    if symbol is not None:
        base.update(
            path=symbol.path, qualname=symbol.qualname, kind=symbol.kind,
            start_line=symbol.start_line, end_line=symbol.end_line,
            url=repo.permalink(step.version, symbol.path, symbol.start_line, symbol.end_line),
        )
    else:
        base.update(path=None, qualname=None, kind=None, start_line=None, end_line=None,
                    url=None)
    if match is None:
        return TimelineRow(**base)
    moved_from = None
    if step.event is HistoryEvent.MOVED and previous is not None and previous.symbol:
        moved_from = previous.symbol.ref
    return TimelineRow(
        **base, kinds=tuple(kind.value for kind in match.kinds), changes=match.explain(),
        content=match.content.value if match.content else None, moved_from=moved_from,
        candidates=tuple(candidate.ref for candidate in match.candidates),
        code_went_to=tuple(place.ref for place in step.code_went_to),
    )


def table_rows(timeline: Timeline) -> list[list[str]]:
    """Rows for `HEADERS`: one per step."""
    return [
        [row.version, row.event, row.ref or "-",
         f"{row.start_line}-{row.end_line}" if row.start_line else "", _details(row)]
        for row in timeline.rows
    ]


def _details(row: TimelineRow) -> str:
    parts = []
    if row.moved_from:
        parts.append(f"from {row.moved_from}")
        if row.content and row.content != "unchanged":
            parts.append(row.content)
    if row.kinds:
        parts.append(", ".join(row.kinds))
    if row.candidates:
        label = "also" if row.event == HistoryEvent.MOVED.value else "closest"
        parts.append(f"{label}: {', '.join(row.candidates)}")
    if row.code_went_to:
        parts.append(f"its code went to {', '.join(row.code_went_to)}")
    return "; ".join(parts)


def timeline_to_dict(timeline: Timeline) -> dict[str, Any]:
    return {
        "repo": timeline.repo,
        "ref": timeline.asked,
        "versions": list(timeline.versions),
        "steps": [
            {
                "version": row.version, "event": row.event, "ref": row.ref,
                "path": row.path, "qualname": row.qualname, "kind": row.kind,
                "start_line": row.start_line, "end_line": row.end_line, "url": row.url,
                "kinds": list(row.kinds), "changes": list(row.changes),
                "content": row.content, "moved_from": row.moved_from,
                "candidates": list(row.candidates), "code_went_to": list(row.code_went_to),
            }
            for row in timeline.rows
        ],
    }
