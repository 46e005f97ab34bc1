"""Reads and writes of the symbol index. Rows go in and out as plain tuples and dicts."""

from __future__ import annotations

import contextlib
import datetime
import fnmatch
import itertools
import sqlite3
import zlib
from collections import Counter
from collections.abc import Callable, Collection, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from db.close_matches import close_matches, did_you_mean
from db.config_names import table_in
from db.database import Database
from db.errors import DatabaseBusy, MissingIndex
from db.version_order import COMMIT, NOT_A_VERSION, in_version_order, version_key

SYMBOL_COLUMNS = (
    "blob_id", "seq", "qualname", "name", "kind", "start_line", "end_line",
    "start_byte", "end_byte", "signature", "exact", "normalized", "shape", "header_key",
    "body_key",
)


@dataclass(frozen=True)
class BlobRow:
    """A blob to store: its id, size, zlib-compressed content and parse results."""

    blob_id: str
    size: int
    content: bytes | None
    parsed: bool = False
    has_errors: bool = False
    decode_errors: bool = False
    skipped: str | None = None
    symbols: Sequence[tuple] = ()
    names: str = ""
    imports: Sequence[tuple] = ()
    python: bool = False  # read at a .py path: parsed, unless binary or too large


@dataclass
class Stored:
    """What one version's write stored: the blobs new to the index, and those whose
    extraction it filled in (stored unparsed before, at a .py path now)."""

    blobs: int = 0  # the new ones, `VersionRow.new_blobs`
    filled_in: int = 0
    parsed: int = 0  # blobs parsed, of both kinds
    symbols: int = 0  # their symbols

    def add(self, rows: Sequence[BlobRow], new: bool) -> None:
        if new:
            self.blobs += len(rows)
        else:
            self.filled_in += len(rows)
        self.parsed += sum(row.parsed for row in rows)
        self.symbols += sum(len(row.symbols) for row in rows)


@dataclass(frozen=True)
class VersionRow:
    repo: str
    version: str
    source: str
    commit_sha: str | None
    wheel_sha256: str | None
    file_count: int
    new_blobs: int
    seconds: float


def version_id(database: Database, repo: str, version: str) -> int | None:
    row = database.conn.execute(
        "SELECT id FROM versions WHERE repo = ? AND version = ?", (repo, version)
    ).fetchone()
    return row[0] if row else None


def version_source(database: Database, version_key: int) -> str | None:
    """Where a version's files came from: ``git``, ``pypi`` or ``path``."""
    row = database.conn.execute(
        "SELECT source FROM versions WHERE id = ?", (version_key,)).fetchone()
    return row[0] if row else None


def version_of_wheel(database: Database, repo: str, wheel_sha256: str) -> str | None:
    """The version of ``repo`` indexed from PyPI's wheel ``wheel_sha256``, if any."""
    row = database.conn.execute(
        "SELECT version FROM versions WHERE repo = ? AND source = 'pypi' AND wheel_sha256 = ?",
        (repo, wheel_sha256),
    ).fetchone()
    return row[0] if row else None


def version_at_commit(database: Database, repo: str, commit: str) -> int | None:
    """The one version of ``repo`` indexed from git at a commit whose SHA starts with
    ``commit``; None when there is none, or several."""
    rows = database.conn.execute(
        "SELECT id FROM versions WHERE repo = ? AND substr(commit_sha, 1, ?) = ?",
        (repo, len(commit), commit),
    ).fetchall()
    return rows[0][0] if len(rows) == 1 else None


def indexed_spelling_hint(repo: str, indexed: str) -> str:
    """The hint of a version spelt otherwise than ``indexed``, which is indexed."""
    return f"{did_you_mean([f'{repo}@{indexed}'])} It is indexed"


def indexed_spelling(database: Database, repo: str, version: str) -> str | None:
    """The indexed version that ``version`` is another spelling of, the same version number
    as PEP 440 reads them (``v0.20.0`` for ``0.20.0``, or ``v0.20``, and back)."""
    number = version_key(version)
    if number == NOT_A_VERSION:
        return None
    return next((other for other in indexed_versions(database, repo)
                 if other != version and version_key(other) == number), None)


def require_version(
    database: Database, repo: str, version: str, configured: Collection[str] | None = None,
    *, config_name: str,
) -> int:
    """The key of ``repo@version``; `unindexed` says what to do when it is not indexed."""
    found = version_id(database, repo, version)
    if found is None:
        missing = unindexed(database, repo, version, configured, config_name=config_name)
        raise MissingIndex(missing.message, missing.hint)
    return found


@dataclass(frozen=True)
class Unindexed:
    """A version not in the index: what is wrong, and what to do."""

    message: str
    hint: str
    misspelling_of: str | None = None
    """The indexed version it is another spelling of (`indexed_spelling`)."""


def unindexed(
    database: Database, repo: str, version: str, configured: Collection[str] | None,
    *, config_name: str,
) -> Unindexed:
    """Why ``repo@version`` is not there, for every command that needs it: another
    spelling of an indexed version, unless it is ``configured`` (an index an older annotate
    made holds ``vllm@0.20.0``, which is no name to write now, where ``vllm@v0.20.0`` is
    configured: indexing it reads the same files); a version neither indexed nor
    ``configured`` (the repo's configured versions; None when they are not known: the
    caller expects it indexed), most likely a typo, with the versions the repo has; else
    the ``annotate index`` to run; ``config_name``: the config, as its hints name it."""
    pin = f"{repo}@{version}"
    is_configured = configured is not None and version in configured
    misspelling_of = None if is_configured else indexed_spelling(database, repo, version)
    if misspelling_of is not None:
        return Unindexed(f"{pin} is not indexed", indexed_spelling_hint(repo, misspelling_of),
                         misspelling_of)
    if configured is None or is_configured:
        return Unindexed(f"{pin} is not indexed",
                         advice_for(database, pin, config_name=config_name))
    known = ", ".join(dict.fromkeys([*configured, *indexed_versions(database, repo)]))
    return Unindexed(f"{pin} is neither indexed nor configured ({repo} has {known or 'none'})",
                     _commit_advice(pin) if COMMIT.fullmatch(version)
                     else f"fix the version, or "
                          f"{index_advice(pin, config_name=config_name)} to index it")


def _commit_advice(pin: str) -> str:
    """What indexes a commit: only git knows it (a permalink's "Copy permalink" SHA)."""
    return ("a commit names only a version indexed from git at that commit (a wheel records "
            "none): put the release tag in its place, or index the commit with git ('annotate "
            f"index {pin}', which needs access to the repository) or from a checkout of it "
            f"('annotate index {pin} --from PATH')")


def index_advice(pin: str, not_found_in: str | None = None, *, config_name: str) -> str:
    """What to do about ``REPO@VERSION``, configured and not indexed yet; ``not_found_in``:
    the sources the last ``annotate index`` of it tried in vain (`not_found_in`);
    ``config_name``: the config, as the advice names it."""
    if not_found_in is None:
        return f"run 'annotate index {pin}'"
    repo = pin.partition("@")[0]
    return (f"'annotate index' could not fetch it from its sources ({not_found_in}): set "
            f"git of {table_in(config_name, f'repos.{repo}')} to a local clone that has it, or run "
            f"'annotate index {pin} --from PATH' on a checkout of it")


def advice_for(database: Database, pin: str, *, config_name: str) -> str:
    """`index_advice` for ``pin``, saying so when no source had it the last time it was tried."""
    return index_advice(pin, not_found_in(database, pin), config_name=config_name)


def record_not_found(database: Database, pin: str, sources: Sequence[str]) -> None:
    """Remember that none of ``sources`` had ``pin`` (`not_found_in` reads it back); raise
    `DatabaseBusy` at once when another process is writing: the note is not worth a wait."""
    with database.write(wait=False) as conn:
        conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                     (f"{_NOT_FOUND}{pin}", ", ".join(sources) or "none configured"))


def not_found_in(database: Database, pin: str) -> str | None:
    """The sources the last failed ``annotate index`` of ``pin`` tried, or None when none
    failed to find it."""
    row = database.conn.execute("SELECT value FROM meta WHERE key = ?",
                                (f"{_NOT_FOUND}{pin}",)).fetchone()
    return row[0] if row else None


_NOT_FOUND = "not_found:"
"""The ``meta`` key prefix of a version no source had: ``not_found:vllm@v0.23.1rc0``."""


PYTHON_FILE = "substr(f.path, -3) = '.py'"
"""SQL: file ``f`` is Python. A blob's symbols are its .py paths' only: the same content
at another path (a copy kept as .txt) defines nothing there."""


def is_python_path(path: str) -> bool:
    """`PYTHON_FILE` for a path in hand: whether its blob is parsed and listed there."""
    return path.endswith(".py")


def module_name(path: str) -> str:
    """The module a Python file is imported as: ``vllm.envs`` of ``vllm/envs.py``,
    ``vllm.config`` of ``vllm/config/__init__.py``."""
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


NOT_STORED = "too large to store"
"""Why a blob that is not Python and larger than the storage limit has no content."""

# Stored, yet never parsed: every path it was seen at so far was not a .py one.
_NEVER_PARSED = f"parsed = 0 AND (skipped IS NULL OR skipped = '{NOT_STORED}')"


def known_blobs(database: Database, ids: Iterable[str]) -> set[str]:
    return _blobs_among(database, ids, "1")


def never_parsed_blobs(database: Database, ids: Iterable[str]) -> set[str]:
    """Those of ``ids`` that are stored but were never parsed, having been seen only at
    paths that are not Python: a version with one at a .py path must parse it."""
    return _blobs_among(database, ids, _NEVER_PARSED)


def _blobs_among(database: Database, ids: Iterable[str], condition: str) -> set[str]:
    found: set[str] = set()
    for chunk, marks in in_chunks(ids):
        rows = database.conn.execute(
            f"SELECT id FROM blobs WHERE id IN ({marks}) AND {condition}", chunk)
        found.update(row[0] for row in rows)
    return found


def in_chunks(ids: Iterable[str], size: int = 500) -> Iterator[tuple[list[str], str]]:
    """``ids`` without repeats, in lists of at most ``size`` (SQLite caps the parameters of
    one statement), each with the ``?,?,...`` that its ``IN (...)`` takes."""
    wanted = list(dict.fromkeys(ids))
    for start in range(0, len(wanted), size):
        chunk = wanted[start:start + size]
        yield chunk, ",".join("?" * len(chunk))


STORE_BATCH = 64
"""How many blob rows `write_version` writes at a time. The last batch is written after
the parser pool's last rows arrive, the parser processes done and one core of two idle: at
256 that took 20-28 ms of a cold index of vLLM v0.20.0, at 64 11-16 ms."""


def write_version(
    database: Database,
    repo_row: dict,
    version: VersionRow,
    files: Sequence[tuple[str, str]],
    blobs: Iterable[BlobRow],
    *,
    extractor: str,
    clock: Callable[[], float] | None = None,
) -> Stored | None:
    """Store one version whole, in one transaction: what it stored, or None if the
    version was there already.

    ``blobs`` may be a generator that parses as it goes: each batch is written as it
    arrives, inside the transaction, so writing overlaps parsing. A blob another process
    stored meanwhile is left as it is, and not counted. ``extractor`` names what parsed
    them. ``clock`` (seconds since the run started), read at the end, replaces
    ``version.seconds``.
    """
    with database.write(bulk=True) as conn:
        if version_id(database, version.repo, version.version) is not None:
            return None
        conn.execute(
            "INSERT INTO repos (name, git, pypi, github) VALUES (:name, :git, :pypi, :github) "
            "ON CONFLICT(name) DO UPDATE SET git = :git, pypi = :pypi, github = :github",
            repo_row,
        )
        stored = _store_blobs(database, blobs, extractor)
        if clock is not None:
            version = replace(version, seconds=clock())
        new_id = _insert_version(conn, version, stored.blobs)
        conn.executemany(
            "INSERT INTO files (version_id, path, blob_id) VALUES (?, ?, ?)",
            ((new_id, path, blob_id) for path, blob_id in files),
        )
        conn.execute(f"{_RECOUNT_SYMBOLS} WHERE id = ?", (new_id,))
        conn.execute("DELETE FROM meta WHERE key = ?",
                     (f"{_NOT_FOUND}{version.repo}@{version.version}",))
    return stored


def _store_blobs(database: Database, blobs: Iterable[BlobRow], extractor: str) -> Stored:
    """Insert the blobs not stored yet, and the extraction of those stored unparsed that
    are at a .py path now."""
    conn = database.conn
    stored = Stored()
    for batch in _batched(blobs, STORE_BATCH):
        already = known_blobs(database, (blob.blob_id for blob in batch))
        new = [blob for blob in batch if blob.blob_id not in already]
        _insert_blobs(conn, new, extractor)
        stored.add(new, new=True)
        now_python = never_parsed_blobs(
            database, (b.blob_id for b in batch if b.python and b.blob_id in already))
        filled_in = [b for b in batch if b.blob_id in now_python]
        _replace_extraction(conn, filled_in, extractor)
        stored.add(filled_in, new=False)
    return stored


def _insert_version(conn: sqlite3.Connection, version: VersionRow, new_blobs: int) -> int:
    """The new row's id; its symbol count is filled in once its files are stored."""
    return inserted_id(conn.execute(
        "INSERT INTO versions (repo, version, source, commit_sha, wheel_sha256, indexed_at,"
        " file_count, symbol_count, new_blobs, seconds) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (
            version.repo, version.version, version.source, version.commit_sha,
            version.wheel_sha256, _now(), version.file_count, 0, new_blobs,
            round(version.seconds, 3),
        ),
    ))


def inserted_id(cursor: sqlite3.Cursor) -> int:
    """The rowid of the row that ``cursor``'s INSERT added."""
    assert cursor.lastrowid is not None  # set by any INSERT
    return cursor.lastrowid


def _batched(items: Iterable[BlobRow], size: int) -> Iterator[list[BlobRow]]:
    batch: list[BlobRow] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _insert_blobs(conn: sqlite3.Connection, blobs: Sequence[BlobRow], extractor: str) -> None:
    conn.executemany(
        "INSERT INTO blobs (id, size, content, parsed, has_errors, decode_errors, skipped,"
        " extractor) VALUES (?,?,?,?,?,?,?,?)",
        (
            (b.blob_id, b.size, b.content, b.parsed, b.has_errors, b.decode_errors, b.skipped,
             extractor)
            for b in blobs
        ),
    )
    _insert_extraction(conn, blobs)


def _insert_extraction(conn: sqlite3.Connection, blobs: Sequence[BlobRow]) -> None:
    """The symbols, names and imports of ``blobs``."""
    marks = ",".join("?" * len(SYMBOL_COLUMNS))
    conn.executemany(
        f"INSERT INTO symbols ({', '.join(SYMBOL_COLUMNS)}) VALUES ({marks})",
        (row for blob in blobs for row in blob.symbols),
    )
    conn.executemany(
        "INSERT INTO blob_names (blob_id, names) VALUES (?, ?)",
        ((blob.blob_id, blob.names) for blob in blobs if blob.names.strip()),
    )
    conn.executemany(
        "INSERT INTO imports (blob_id, line, module, name, alias, level) VALUES (?,?,?,?,?,?)",
        ((blob.blob_id, *row) for blob in blobs for row in blob.imports),
    )


_RECOUNT_SYMBOLS = f"""
    UPDATE versions SET symbol_count = (SELECT count(*) FROM symbols WHERE blob_id IN
        (SELECT blob_id FROM files f WHERE f.version_id = versions.id AND {PYTHON_FILE}))
"""


def _count_symbols(conn: sqlite3.Connection, blob_ids: set[str]) -> int:
    """The symbols of ``blob_ids`` (a version's count is `_RECOUNT_SYMBOLS`)."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS _count_blobs (id TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM _count_blobs")
    conn.executemany("INSERT OR IGNORE INTO _count_blobs VALUES (?)", ((b,) for b in blob_ids))
    return conn.execute(
        "SELECT count(*) FROM symbols WHERE blob_id IN (SELECT id FROM _count_blobs)"
    ).fetchone()[0]


@dataclass(frozen=True)
class Reextraction:
    """What extracting the blobs of older extractors again did."""

    previous: tuple[str, ...]
    blobs: int
    symbols_before: int
    symbols_after: int
    changed: int  # blobs whose extraction differs


# A Python blob is one that some version has at a .py path; binary ones (no content)
# were never parsed and never will be. `!=` would scan the table: two index ranges do not.
_OUTDATED = "(extractor < :extractor OR extractor > :extractor)"
_OUTDATED_PYTHON = f"""
    SELECT id FROM blobs WHERE {_OUTDATED} AND content IS NOT NULL
    AND EXISTS (SELECT 1 FROM files f WHERE f.blob_id = blobs.id AND {PYTHON_FILE})
"""


def has_outdated_blobs(database: Database, extractor: str) -> bool:
    """Whether a blob was indexed by another extractor than ``extractor``."""
    query = f"SELECT 1 FROM blobs WHERE {_OUTDATED} LIMIT 1"
    return database.conn.execute(query, {"extractor": extractor}).fetchone() is not None


def reextract(
    database: Database,
    extractor: str,
    parse: Callable[[int, Iterator[tuple[str, bytes]]], Generator[BlobRow, None, None]],
) -> Reextraction | None:
    """Replace what older extractors stored for each blob by what ``parse`` makes of its
    (blob id, content), in one transaction; None if no blob needed it.

    ``parse`` is given the number of Python blobs and an iterator over them. A blob whose
    extraction is the same is only stamped: a new extractor changes few blobs, and
    rewriting the rows of the others would cost more than parsing them. When some did
    change, the comparison results and the claims' link state, computed from the old
    symbols, go too.
    """
    with database.write(bulk=True) as conn:
        marks = {"extractor": extractor}
        previous = tuple(row[0] for row in conn.execute(
            f"SELECT DISTINCT extractor FROM blobs WHERE {_OUTDATED}", marks))
        if not previous:
            return None  # another process did it while this one waited
        blob_ids = [row[0] for row in conn.execute(_OUTDATED_PYTHON, marks)]
        before = _count_symbols(conn, set(blob_ids))
        # closed on failure too: parsing stops now, not when the traceback is freed
        changed = 0
        with contextlib.closing(parse(len(blob_ids), _contents(conn, blob_ids))) as rows:
            for batch in _batched(rows, 256):
                different = _changed_extraction(conn, batch)
                _replace_extraction(conn, different, extractor)
                changed += len(different)
        after = _count_symbols(conn, set(blob_ids))
        conn.execute(f"UPDATE blobs SET extractor = :extractor WHERE {_OUTDATED}", marks)
        if changed:
            conn.execute(_RECOUNT_SYMBOLS)
            conn.execute("DELETE FROM match_cache")
            conn.execute("DELETE FROM diff_cache")
            conn.execute("DELETE FROM meta WHERE key = 'link_signature'")
            conn.execute("DELETE FROM link_files")
    return Reextraction(previous, len(blob_ids), before, after, changed)


def _changed_extraction(conn: sqlite3.Connection, blobs: Sequence[BlobRow]) -> list[BlobRow]:
    """The blobs whose flags, symbols, names or imports differ from the stored ones."""
    stored = _stored_extraction(conn, [blob.blob_id for blob in blobs])
    return [blob for blob in blobs if stored.get(blob.blob_id) != _Extraction.of(blob)]


@dataclass
class _Extraction:
    """What `_insert_extraction` stores of a blob (imports in any order)."""

    flags: tuple
    symbols: list[tuple] = field(default_factory=list)
    names: str | None = None
    imports: Counter = field(default_factory=Counter)

    @classmethod
    def of(cls, blob: BlobRow) -> _Extraction:
        flags = (int(blob.parsed), int(blob.has_errors), int(blob.decode_errors), blob.skipped)
        names = blob.names if blob.names.strip() else None
        return cls(flags, list(blob.symbols), names, Counter(blob.imports))


def _stored_extraction(conn: sqlite3.Connection, blob_ids: list[str]) -> dict[str, _Extraction]:
    marks = ",".join("?" * len(blob_ids))
    found = {
        blob_id: _Extraction(tuple(flags)) for blob_id, *flags in conn.execute(
            "SELECT id, parsed, has_errors, decode_errors, skipped FROM blobs"
            f" WHERE id IN ({marks})", blob_ids)
    }
    for row in conn.execute(
        f"SELECT {', '.join(SYMBOL_COLUMNS)} FROM symbols WHERE blob_id IN ({marks})"
        " ORDER BY blob_id, seq", blob_ids
    ):
        found[row[0]].symbols.append(tuple(row))
    for blob_id, names in conn.execute(
        f"SELECT blob_id, names FROM blob_names WHERE blob_id IN ({marks})", blob_ids
    ):
        found[blob_id].names = names
    for blob_id, *row in conn.execute(
        "SELECT blob_id, line, module, name, alias, level FROM imports"
        f" WHERE blob_id IN ({marks})", blob_ids
    ):
        found[blob_id].imports[tuple(row)] += 1
    return found


def _contents(conn: sqlite3.Connection, blob_ids: list[str]) -> Iterator[tuple[str, bytes]]:
    for wanted, marks in in_chunks(blob_ids, size=200):  # 200 contents in memory at most
        rows = conn.execute(f"SELECT id, content FROM blobs WHERE id IN ({marks})", wanted)
        for blob_id, content in rows.fetchall():
            yield blob_id, zlib.decompress(content)


def _replace_extraction(conn: sqlite3.Connection, blobs: Sequence[BlobRow], extractor: str) -> None:
    """Replace the stored extraction of blobs parsed again, or parsed at last (stored
    unparsed where first seen, not at a .py path): flags, symbols, names and imports, and
    the content when none was stored."""
    ids = [(blob.blob_id,) for blob in blobs]
    for table in ("symbols", "blob_names", "imports"):
        conn.executemany(f"DELETE FROM {table} WHERE blob_id = ?", ids)
    conn.executemany(
        "UPDATE blobs SET content = coalesce(content, ?), parsed = ?, has_errors = ?,"
        " decode_errors = ?, skipped = ?, extractor = ? WHERE id = ?",
        (
            (b.content, b.parsed, b.has_errors, b.decode_errors, b.skipped, extractor,
             b.blob_id)
            for b in blobs
        ),
    )
    _insert_extraction(conn, blobs)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def list_versions(database: Database) -> list[dict]:
    """Every indexed version, by repo, then in version order (see `indexed_versions`)."""
    rows = database.query("SELECT * FROM version_summary")  # by repo, then as indexed
    return sorted(rows, key=lambda row: (row["repo"], version_key(row["version"])))


def indexed_versions(database: Database, repo: str) -> list[str]:
    """The repo's indexed versions, oldest first: by version number, then the names that
    are not version numbers (``main``) in the order indexed."""
    return [version for version, _key in indexed_version_keys(database, repo)]


def indexed_version_keys(database: Database, repo: str) -> list[tuple[str, int]]:
    """(version, key) of each of `indexed_versions`, in its order."""
    keys = dict(database.conn.execute(
        "SELECT version, id FROM versions WHERE repo = ? ORDER BY id", (repo,)))
    return [(version, keys[version]) for version in in_version_order(keys)]


def version_symbols(
    database: Database,
    version_key: int,
    path_glob: str | None = None,
    kind: str | None = None,
) -> Iterator[dict]:
    """Every symbol of a version, by path then position."""
    sql = (
        "SELECT f.path, s.* FROM files f JOIN symbols s ON s.blob_id = f.blob_id"
        f" AND {PYTHON_FILE} WHERE f.version_id = ?"
    )
    params: list = [version_key]
    if kind:
        sql += " AND s.kind = ?"
        params.append(kind)
    sql += " ORDER BY f.path, s.seq"
    matches = path_matcher(path_glob) if path_glob is not None else None
    for row in database.query(sql, params):
        if matches is None or matches(row["path"]):
            yield row


GLOB_CHARACTERS = "*?["


def path_matcher(glob: str) -> Callable[[str], bool]:
    """Whether a repository path matches ``glob``: ``fnmatch`` (as a git pathspec, ``*``
    matches ``/`` too), where ``**/`` may also stand for no folder (``vllm/**/*.py``
    includes ``vllm/envs.py``) and a glob without wildcards is a file or a folder."""
    glob = glob.removeprefix("./")
    if not any(char in glob for char in GLOB_CHARACTERS):
        folder = glob.rstrip("/") + "/"
        return lambda path: path == glob or path.startswith(folder)
    globs = _without_double_stars(glob)
    return lambda path: any(fnmatch.fnmatchcase(path, each) for each in globs)


def _without_double_stars(glob: str) -> set[str]:
    """``glob`` with each ``**/`` kept or left out, independently of the others (all or
    none past eight of them)."""
    pieces = glob.split("**/")
    if len(pieces) > 9:
        return {glob, glob.replace("**/", "")}
    return {"".join(piece + joint for piece, joint in zip(pieces, (*choice, ""), strict=True))
            for choice in itertools.product(("**/", ""), repeat=len(pieces) - 1)}


def file_blob(database: Database, version_key: int, path: str) -> str | None:
    row = database.conn.execute(
        "SELECT blob_id FROM files WHERE version_id = ? AND path = ?", (version_key, path)
    ).fetchone()
    return row[0] if row else None


def is_indexed_path(database: Database, path: str) -> bool:
    """Whether some indexed version has a file at ``path``."""
    row = database.conn.execute("SELECT 1 FROM files WHERE path = ? LIMIT 1", (path,)).fetchone()
    return row is not None


def is_indexed_folder(database: Database, path: str) -> bool:
    """Whether some indexed version has a file in the folder ``path`` (or below it)."""
    row = database.conn.execute("SELECT 1 FROM files WHERE path >= ? AND path < ? LIMIT 1",
                                folder_bounds(path)).fetchone()
    return row is not None


def files_in_folder(
    database: Database, version_key: int, folder: str, limit: int
) -> list[str]:
    """The first ``limit`` paths, in order, of the version's files in the folder ``folder``
    (or below it)."""
    rows = database.conn.execute(
        "SELECT path FROM files WHERE version_id = ? AND path >= ? AND path < ? "
        "ORDER BY path LIMIT ?", (version_key, *folder_bounds(folder), limit))
    return [row[0] for row in rows]


def folder_bounds(folder: str) -> tuple[str, str]:
    """The paths of the files in ``folder`` (and below it) are those from the first bound
    on and before the second: ``vllm/config/`` to ``vllm/config0`` ('0' follows '/')."""
    folder = folder.rstrip("/")
    return f"{folder}/", f"{folder}0"


def paths_close_to(database: Database, path: str) -> list[str]:
    """`closest_paths` to ``path`` among the indexed versions' files."""
    paths = [row[0] for row in database.conn.execute("SELECT DISTINCT path FROM files")]
    return closest_paths(path, paths)


def closest_paths(path: str, paths: list[str]) -> list[str]:
    """Up to three of the file ``paths`` close to ``path``, for a "did you mean" (closer
    than names need be: paths share long prefixes, ``vllm/``); to a file's name without its
    folder (``cache.py``), the files of that name, shallowest first; to a path that
    `looks_like_a_folder`, `closest_in_folder`; none to a glob."""
    if any(char in path for char in GLOB_CHARACTERS):
        return []
    if "/" not in path and path.endswith(".py"):  # a file's name, without its folder
        named = sorted((found for found in paths if found.rsplit("/", 1)[-1] == path),
                       key=lambda found: (found.count("/"), found))
        if named:
            return named[:3]
    if not looks_like_a_folder(path):
        return close_matches(path, paths, n=3, cutoff=0.8)
    return closest_in_folder(path.rstrip("/"), paths)


def closest_in_folder(path: str, paths: list[str]) -> list[str]:
    """Of ``path``, which names no folder of the file ``paths``, the deepest folder that
    is one (``vllm/`` of ``vllm/confg``), and up to three files or folders in it named like
    the name that follows (``vllm/config/``), with the rest of ``path`` when that is there
    (``vllm/config/`` of ``vlm/config``): not the whole paths, whose shared prefixes make
    every sibling of a long one close (``vllm/model_executor/model_loader/`` of
    ``vllm/model_executor/layer``)."""
    folders = folders_holding(paths)
    names = path.split("/")
    depth = next(depth for depth in range(len(names), -1, -1)
                 if depth == 0 or "/".join(names[:depth]) + "/" in folders)
    if depth == len(names):
        return []
    prefix = "".join(f"{name}/" for name in names[:depth])
    children: dict[str, str] = {}  # a name in the folder -> it as written: config/, x.py
    for each in paths:
        if each.startswith(prefix):
            child, slash, _ = each[len(prefix):].partition("/")
            children[child] = child + slash
    rest = "".join(f"{name}/" for name in names[depth + 1:])
    found = [prefix + children[name]
             for name in close_matches(names[depth], sorted(children), n=3, cutoff=0.6)]
    return [each + rest if rest and each + rest in folders else each for each in found]


def looks_like_a_folder(path: str) -> bool:
    """Whether the path (not a glob) ``path`` reads as a folder's: a slash at its end or
    no '.' in its last name (``vllm/confg/``, ``vllm/confg``; not ``vllm/config/cach.py``)."""
    return path.endswith("/") or "." not in path.rsplit("/", 1)[-1]


def folders_holding(paths: Iterable[str]) -> set[str]:
    """The folders the file ``paths`` are in, directly or below, each with its slash
    (``vllm/``, ``vllm/config/`` of ``vllm/config/cache.py``)."""
    folders: set[str] = set()
    for path in paths:
        names = path.split("/")[:-1]
        folders.update("/".join(names[:depth]) + "/" for depth in range(1, len(names) + 1))
    return folders


def version_paths(database: Database, version_key: int) -> list[str]:
    rows = database.conn.execute(
        "SELECT path FROM files WHERE version_id = ? ORDER BY path", (version_key,)
    )
    return [row[0] for row in rows]


def symbols_in_file(database: Database, version_key: int, path: str) -> list[dict]:
    return list(
        database.query(
            "SELECT f.path, s.* FROM files f JOIN symbols s ON s.blob_id = f.blob_id"
            f" AND {PYTHON_FILE} WHERE f.version_id = ? AND f.path = ? ORDER BY s.seq",
            (version_key, path),
        )
    )


def definitions_in_file(
    database: Database, version_key: int, path: str, qualname: str
) -> list[dict]:
    """The rows of `symbols_in_file` whose qualname is ``qualname`` (found by the index
    ``symbols_blob``, not by reading the file's every row)."""
    return list(
        database.query(
            "SELECT f.path, s.* FROM files f JOIN symbols s ON s.blob_id = f.blob_id"
            f" AND s.qualname = ? AND {PYTHON_FILE} WHERE f.version_id = ? AND f.path = ?"
            " ORDER BY s.seq",
            (qualname, version_key, path),
        )
    )


def innermost_covering(
    database: Database, version_key: int, path: str, start: int, end: int
) -> dict | None:
    """The row of `symbols_in_file` spanning fewest lines among those covering lines
    ``start``-``end`` (the first in source order of equal spans); None when none does."""
    rows = database.query(
        "SELECT f.path, s.* FROM files f JOIN symbols s ON s.blob_id = f.blob_id"
        f" AND {PYTHON_FILE} WHERE f.version_id = ? AND f.path = ? AND s.start_line <= ?"
        " AND s.end_line >= ? ORDER BY s.end_line - s.start_line, s.seq LIMIT 1",
        (version_key, path, start, end),
    )
    return next(rows, None)


def is_named(qualname: str, wanted: str) -> bool:
    """Whether ``wanted`` names the symbol ``qualname``: all of it, or its end after a '.'."""
    return qualname == wanted or qualname.endswith("." + wanted)


def symbols_named(database: Database, version_key: int, qualname: str) -> list[dict]:
    """Symbols of a version whose qualname is ``qualname`` or ends with ``.qualname``."""
    last = qualname.rsplit(".", 1)[-1]
    rows = database.query(
        "SELECT f.path, s.* FROM symbols s JOIN files f ON f.blob_id = s.blob_id"
        f" AND {PYTHON_FILE} WHERE s.name = ? AND f.version_id = ? ORDER BY f.path, s.seq",
        (last, version_key),
    )
    return [row for row in rows if is_named(row["qualname"], qualname)]


def versions_defining(database: Database, qualname: str) -> list[tuple[str, str]]:
    """Every indexed (repo, version) with a symbol whose qualname is ``qualname`` or ends
    with ``.qualname``, in the order `list_versions` lists them."""
    last = qualname.rsplit(".", 1)[-1]
    rows = database.query(
        "SELECT DISTINCT v.repo, v.version, s.qualname FROM symbols s JOIN files f"
        f" ON f.blob_id = s.blob_id AND {PYTHON_FILE} JOIN versions v ON v.id = f.version_id"
        " WHERE s.name = ?", (last,))
    found = {(row["repo"], row["version"]) for row in rows if is_named(row["qualname"], qualname)}
    return [(row["repo"], row["version"]) for row in list_versions(database)
            if (row["repo"], row["version"]) in found]


def names_close_to(
    database: Database, name: str, version_key: int | None = None
) -> list[str] | None:
    """None when a symbol (of the version, or of any indexed one) has this name; else up
    to three close names that some symbol has, for a "did you mean"."""
    in_version = (f" AND blob_id IN (SELECT blob_id FROM files f WHERE f.version_id = ?"
                  f" AND {PYTHON_FILE})") if version_key is not None else ""
    versions = (version_key,) if version_key is not None else ()
    found = database.conn.execute(
        f"SELECT 1 FROM symbols WHERE name = ?{in_version} LIMIT 1", (name, *versions)
    ).fetchone()
    if found:
        return None
    names = [row[0] for row in database.conn.execute(
        f"SELECT DISTINCT name FROM symbols WHERE name LIKE ? ESCAPE '\\'{in_version}",
        (like_escape(name[:2]) + "%", *versions),
    )]
    return close_matches(name, names, n=3, cutoff=0.6)


def like_escape(text: str) -> str:
    """``text`` literal in a LIKE pattern with ``ESCAPE '\\'``."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def blob_content(database: Database, blob_id: str) -> bytes | None:
    row = database.conn.execute("SELECT content FROM blobs WHERE id = ?", (blob_id,)).fetchone()
    if row is None or row[0] is None:
        return None
    return zlib.decompress(row[0])


def cached_matches(database: Database, pin: int, target: int, engine: str) -> dict[tuple, str]:
    """Stored comparison results of one version pair: (path, qualname, exact,
    start_line) -> JSON text."""
    rows = database.conn.execute(
        "SELECT path, qualname, exact, start_line, result FROM match_cache"
        " WHERE pin = ? AND target = ? AND engine = ?",
        (pin, target, engine),
    )
    return {(path, qualname, exact, line): result for path, qualname, exact, line, result in rows}


def store_matches(database: Database, engine: str, rows: Sequence[tuple]) -> bool:
    """Remember comparison results (pin, target, path, qualname, exact, start_line,
    result); skipped, returning False, when another process holds the write lock or the
    database is read-only (a cache: the comparisons are made again next time)."""
    if not rows:
        return True
    if database.read_only:
        return False
    try:
        with database.write(wait=False) as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO match_cache (pin, target, path, qualname, exact,"
                " start_line, engine, result) VALUES (?,?,?,?,?,?,?,?)",
                ((*row[:6], engine, row[6]) for row in rows),
            )
    except DatabaseBusy:
        return False
    return True
