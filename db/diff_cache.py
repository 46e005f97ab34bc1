"""The stored whole-version matches of ``annotate diff`` (table ``diff_cache``).

One row per version pair, with the identity of what the matches were computed from
(`pair_identity`): a row whose identity is not the asking run's is not read, and the
next store replaces it.
"""

from __future__ import annotations

import hashlib

from db.database import Database
from db.errors import DatabaseBusy

KEPT_PAIRS = 16
"""How many version pairs' matches the table keeps, the last stored (vLLM's are some
0.3 MB a pair): diffs of ever more pairs do not grow the index without end."""


def pair_identity(database: Database, version_a: int, version_b: int, engine: str) -> str:
    """A digest of all a whole-version match depends on: the matching ``engine`` and, of
    each version, its row (id, name, source and when it was indexed), its files (path and
    blob) and the extractors of their blobs (a re-extraction stamps its own)."""
    found = hashlib.sha256(engine.encode())
    for key in (version_a, version_b):
        found.update(b"\0version\0" + repr(_version_row(database, key)).encode())
        for path, blob_id, extractor in database.conn.execute(
            "SELECT f.path, f.blob_id, b.extractor FROM files f JOIN blobs b ON b.id = f.blob_id"
            " WHERE f.version_id = ? ORDER BY f.path", (key,)
        ):
            found.update(f"\0{path}\0{blob_id}\0{extractor}".encode("utf-8", "surrogatepass"))
    return found.hexdigest()


def _version_row(database: Database, key: int) -> tuple | None:
    return database.conn.execute(
        "SELECT id, repo, version, source, commit_sha, wheel_sha256, indexed_at FROM versions"
        " WHERE id = ?", (key,)
    ).fetchone()


def cached_matches(database: Database, version_a: int, version_b: int, identity: str
                   ) -> bytes | None:
    """The stored matches of the pair (compressed), if they were made from ``identity``."""
    row = database.conn.execute(
        "SELECT matches FROM diff_cache WHERE a = ? AND b = ? AND identity = ?",
        (version_a, version_b, identity),
    ).fetchone()
    return row[0] if row else None


def store_matches(database: Database, version_a: int, version_b: int, identity: str,
                  matches: bytes) -> bool:
    """Keep the pair's matches (compressed), replacing the row of another identity, and
    the rows of the `KEPT_PAIRS` - 1 pairs stored last before it (a replaced row takes the
    next rowid); skipped, returning False, when the database is read-only or another
    process holds the write lock (a cache: the next run matches again)."""
    if database.read_only:
        return False
    try:
        with database.write(wait=False) as conn:
            conn.execute(
                "INSERT OR REPLACE INTO diff_cache (a, b, identity, matches) VALUES (?,?,?,?)",
                (version_a, version_b, identity, matches),
            )
            conn.execute("DELETE FROM diff_cache WHERE rowid NOT IN"
                         " (SELECT rowid FROM diff_cache ORDER BY rowid DESC LIMIT ?)",
                         (KEPT_PAIRS,))
    except DatabaseBusy:
        return False
    return True
