"""Plain data passed between the indexer's stages and to the database layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class SymbolKind(str, Enum):
    CLASS = "class"
    FUNCTION = "function"
    METHOD = "method"
    ATTRIBUTE = "attribute"


@dataclass(frozen=True, slots=True)
class Symbol:
    """One definition found in one blob.

    Lines are 1-based and inclusive; bytes are 0-based, end exclusive. A decorated
    definition starts at its first decorator.
    """

    qualname: str
    kind: SymbolKind
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    signature: str
    exact: str
    normalized: str
    shape: str | None = None
    header_key: str | None = None
    body_key: str | None = None


SymbolRow = tuple[str, str, str, int, int, int, int, str, str, str, str | None, str | None,
                  str | None]
"""A symbol as the ``symbols`` table stores it after its blob and seq: (qualname, name,
kind, start_line, end_line, start_byte, end_byte, signature, exact, normalized, shape,
header_key, body_key)."""


@dataclass(frozen=True, slots=True)
class ParsedBlob:
    """What parsing one blob yields: its symbols, in source order, as rows (the index
    stores them as they are; a `Symbol` each, made on demand, is for other readers)."""

    blob_id: str
    rows: tuple[SymbolRow, ...]
    has_errors: bool = False
    decode_errors: bool = False
    skipped: str | None = None
    names: str = ""
    imports: tuple[tuple[int, str, str | None, str | None, int], ...] = ()

    @property
    def symbols(self) -> tuple[Symbol, ...]:
        return tuple(Symbol(row[0], SymbolKind(row[2]), *row[3:]) for row in self.rows)


@dataclass(frozen=True, slots=True)
class FileEntry:
    """A file of a version snapshot: its repository path and git blob id."""

    path: str
    blob_id: str
    size: int


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    """Where a version's files came from."""

    repo: str
    version: str
    source_kind: str
    commit_sha: str | None = None
    wheel_sha256: str | None = None
    files: tuple[FileEntry, ...] = field(default_factory=tuple)
    passed_over: tuple[str, ...] = ()
    """Why the sources tried before this one did not give the version."""
