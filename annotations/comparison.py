"""One ref at its pin against the target version, as a check status.

Symbols go through the cross-version matcher (`annotations.matching`); line ranges are
tracked by their text.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotations.resolve import Resolved, Resolver
from annotations.results import Status
from db import queries
from indexer.fingerprints import digest


@dataclass(frozen=True)
class Comparison:
    status: Status
    message: str
    new: Resolved | None = None
    changes: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ()


def compare_lines(resolver: Resolver, pinned: Resolved, target_key: int) -> Comparison:
    """Find the pinned lines' text in the same file at the target version."""
    target = _target_pin(resolver, target_key)
    blob_id = queries.file_blob(resolver.database, target_key, pinned.path)
    if blob_id is None:
        return Comparison(Status.REMOVED, f"{pinned.path} does not exist at {target}")
    old = resolver.text_of(pinned)
    new_text = resolver.source(blob_id)
    if blob_id == pinned.blob_id:
        return Comparison(Status.FRESH, "file unchanged", _moved_lines(pinned, target_key,
                                                                         blob_id, target, 0))
    found = _find_lines(new_text, old)
    if found is None:
        return Comparison(Status.CHANGED, f"lines {pinned.start_line}-{pinned.end_line} of "
                          f"{pinned.path} no longer stand as written at {target}",
                          _moved_lines(pinned, target_key, blob_id, target, 0), ("body",))
    shift = found - pinned.start_line
    new = _moved_lines(pinned, target_key, blob_id, target, shift)
    if shift == 0:
        return Comparison(Status.FRESH, "lines unchanged", new)
    return Comparison(Status.MOVED, f"the lines moved by {shift:+d}", new)


def _find_lines(text: str, wanted: str) -> int | None:
    position = text.find(wanted)
    if position < 0:
        return None
    return text.count("\n", 0, position) + 1


def _moved_lines(
    pinned: Resolved, target_key: int, blob_id: str, target: str, shift: int
) -> Resolved:
    repo, _, version = target.partition("@")
    return Resolved(
        repo=repo, version=version, version_key=target_key, path=pinned.path, blob_id=blob_id,
        start_line=pinned.start_line + shift, end_line=pinned.end_line + shift,
        exact=pinned.exact, normalized=digest(b""),
    )


def _target_pin(resolver: Resolver, target_key: int) -> str:
    row = resolver.database.conn.execute(
        "SELECT repo, version FROM versions WHERE id = ?", (target_key,)
    ).fetchone()
    return f"{row[0]}@{row[1]}"


def compare_symbol(resolver: Resolver, pinned: Resolved, target_key: int) -> Comparison:
    """Provisional: same path and qualname only (the matcher replaces this)."""
    target = _target_pin(resolver, target_key)
    rows = [
        row for row in queries.symbols_in_file(resolver.database, target_key, pinned.path)
        if row["qualname"] == pinned.qualname
    ]
    if not rows:
        return Comparison(Status.REMOVED, f"{pinned.qualname} not found at {target}")
    row = rows[0]
    repo, _, version = target.partition("@")
    new = Resolved(
        repo=repo, version=version, version_key=target_key, path=row["path"],
        blob_id=row["blob_id"], start_line=row["start_line"], end_line=row["end_line"],
        exact=row["exact"], normalized=row["normalized"], qualname=row["qualname"],
        kind=row["kind"], shape=row["shape"],
    )
    if row["exact"] == pinned.exact:
        return Comparison(Status.FRESH, "unchanged", new)
    if row["normalized"] == pinned.normalized:
        return Comparison(Status.COSMETIC, "only comments, docstrings or formatting changed",
                          new)
    return Comparison(Status.CHANGED, "changed", new, ("body",))
