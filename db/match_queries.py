"""Read-only queries for the symbol matcher (``annotations.matching``).

Rows come back as plain tuples in ``MATCH_COLUMNS`` order, which is cheaper than dicts
when a whole version (tens of thousands of symbols) is loaded at once.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from db.database import Database
from db.queries import PYTHON_FILE, in_chunks

MATCH_COLUMNS = (
    "path", "blob_id", "qualname", "name", "kind", "start_line", "end_line", "start_byte",
    "end_byte", "signature", "exact", "normalized", "shape", "header_key", "body_key",
)
_SELECT = (
    "SELECT f.path, s.blob_id, s.qualname, s.name, s.kind, s.start_line, s.end_line,"
    " s.start_byte, s.end_byte, s.signature, s.exact, s.normalized, s.shape,"
    " s.header_key, s.body_key FROM files f JOIN symbols s ON s.blob_id = f.blob_id"
    f" AND {PYTHON_FILE}"
)
FINGERPRINT_COLUMNS = ("exact", "normalized")


def classes_in_several_files(database: Database, version_key: int) -> dict[str, list[str]]:
    """Qualname -> paths of the classes a version defines in more than one file."""
    rows = database.conn.execute(
        "SELECT s.qualname, f.path FROM files f JOIN symbols s ON s.blob_id = f.blob_id"
        f" AND {PYTHON_FILE} WHERE f.version_id = ? AND s.kind = 'class' ORDER BY f.path",
        (version_key,),
    )
    found: dict[str, list[str]] = {}
    for qualname, path in rows:
        found.setdefault(qualname, []).append(path)
    return {qualname: paths for qualname, paths in found.items() if len(set(paths)) > 1}


def places_of(database: Database, version_key: int, qualname: str) -> list[tuple[str, str]]:
    """(path, kind) of each definition of ``qualname`` in a version."""
    name = qualname.rsplit(".", 1)[-1]
    return database.conn.execute(
        "SELECT f.path, s.kind FROM files f JOIN symbols s ON s.blob_id = f.blob_id"
        f" AND {PYTHON_FILE} WHERE f.version_id = ? AND s.name = ? AND s.qualname = ?",
        (version_key, name, qualname),
    ).fetchall()


def version_label(database: Database, version_key: int) -> tuple[str, str] | None:
    """(repo, version) of a version id, or None when there is no such version."""
    row = database.conn.execute(
        "SELECT repo, version FROM versions WHERE id = ?", (version_key,)
    ).fetchone()
    return (row[0], row[1]) if row else None


def file_blobs(database: Database, version_key: int) -> dict[str, str]:
    """Path -> blob id of every file of a version."""
    rows = database.conn.execute(
        "SELECT path, blob_id FROM files WHERE version_id = ?", (version_key,)
    )
    return dict(rows)


def all_symbol_rows(
    database: Database, version_key: int, unless_same_in: int | None = None
) -> list[tuple]:
    """Every symbol row of a version, in one query, by path then position; with
    ``unless_same_in``, but those of the files that version has at the same path with
    the same blob."""
    if unless_same_in is None:
        return _sharing_strings(database.conn.execute(
            _SELECT + " WHERE f.version_id = ? ORDER BY f.path, s.seq", (version_key,)
        ))
    return _sharing_strings(database.conn.execute(
        _SELECT + " WHERE f.version_id = ? AND NOT EXISTS (SELECT 1 FROM files o"
        " WHERE o.version_id = ? AND o.path = f.path AND o.blob_id = f.blob_id)"
        " ORDER BY f.path, s.seq", (version_key, unless_same_in)
    ))


def file_symbol_rows(database: Database, version_key: int, path: str) -> list[tuple]:
    """The symbol rows of one file of a version, in source order."""
    return database.conn.execute(
        _SELECT + " WHERE f.version_id = ? AND f.path = ? ORDER BY s.seq", (version_key, path)
    ).fetchall()


def _sharing_strings(rows: Iterable[tuple]) -> list[tuple]:
    """``rows`` with one string of each path, blob id and kind for them all: sqlite3 makes
    one for each row (~250 bytes a row of a whole version, which the matcher holds)."""
    shared: dict[str, str] = {}
    return [(shared.setdefault(path, path), shared.setdefault(blob, blob), qualname, name,
             shared.setdefault(kind, kind), *rest)
            for path, blob, qualname, name, kind, *rest in rows]


def blob_symbol_rows(database: Database, blob_id: str) -> list[tuple]:
    """The symbol rows of one blob (``path`` left empty), in source order."""
    return database.conn.execute(
        "SELECT '', s.blob_id, s.qualname, s.name, s.kind, s.start_line, s.end_line,"
        " s.start_byte, s.end_byte, s.signature, s.exact, s.normalized, s.shape,"
        " s.header_key, s.body_key FROM symbols s WHERE s.blob_id = ? ORDER BY s.seq",
        (blob_id,),
    ).fetchall()


def rows_with_fingerprint(
    database: Database, version_key: int, column: str, value: str
) -> list[tuple]:
    """Symbol rows of a version whose ``exact`` or ``normalized`` fingerprint is ``value``."""
    if column not in FINGERPRINT_COLUMNS:
        raise ValueError(f"not a fingerprint column: {column}")
    return database.conn.execute(
        _SELECT + f" WHERE s.{column} = ? AND f.version_id = ? ORDER BY f.path, s.seq",
        (value, version_key),
    ).fetchall()


def blob_contents(database: Database, blob_ids: Iterable[str]) -> dict[str, bytes]:
    """Decompressed content of each stored blob among ``blob_ids`` (absent ones are left out)."""
    found: dict[str, bytes] = {}
    for chunk, marks in in_chunks(blob_ids):
        rows = database.conn.execute(
            f"SELECT id, content FROM blobs WHERE id IN ({marks}) AND content IS NOT NULL",
            chunk,
        )
        found.update((blob_id, zlib.decompress(content)) for blob_id, content in rows)
    return found
