"""Opening the index database: WAL, busy timeout, migrations and the write lock."""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite_utils

from db.errors import DatabaseBusy, DatabaseError, MissingIndex, NotADatabase, SchemaTooNew
from db.schema import MIGRATIONS, SCHEMA_VERSION

WAIT_SECONDS = 600.0
QUIET_WAIT_SECONDS = 2.0
"""How long a lock another process holds is waited for without a word: a writer then
says it waits (up to WAIT_SECONDS), and opening a database held exclusively gives up."""

PAGE_SIZE = 16384
"""The page size of a new index (SQLite's default is 4096). A cold index of vLLM v0.20.0
writes ~37 MB in one transaction, each page once to the WAL and once more when it is
checkpointed: in 16 KiB pages that cost the writing process 0.09 CPU-s less (inserting
its rows and committing, 0.46 -> 0.37 s; /tmp/me32/ins2.py, medians of 5), for the same
file size. An index made with 4 KiB pages keeps them."""
BULK_CACHE_KIB = 64 * 1024
"""The page cache of a transaction that writes a whole version. SQLite's default, 2 MB,
is far smaller than such a transaction: the B-trees' pages it evicts are written to the
WAL, read back and written again as rows keep coming (42k writes and 30k reads of a
page in a cold index of vLLM v0.20.0; 27k and 9k with this cache, and 0.05 CPU-s less).
Given back once the transaction ends."""

Notify = Callable[[str], None]


def open_database(path: Path, *, create: bool = True, notify: Notify | None = None) -> Database:
    """Open (and when ``create``, create or migrate) the index at ``path``."""
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        pass  # no index there yet: said below
    except OSError as error:  # a folder on the way it may not enter, a name too long
        raise DatabaseError(f"cannot open {path}: {error.strerror}",
                            "pass --db with a path in a folder you may read and write"
                            ) from None
    if path.is_dir():
        raise DatabaseError(f"{path} is a folder, not an index file",
                            "pass a file path, e.g. --db .annotate/index.db")
    if path.exists() and not path.is_file():  # SQLite reads it as a disk that fails
        raise DatabaseError(f"{path} is not a regular file (a device, pipe or socket)",
                            "pass a file path, e.g. --db .annotate/index.db")
    if not create and path.is_file() and path.stat().st_size == 0:
        raise MissingIndex(f"{path} is an empty file, not an index",
                           f"run 'annotate --db {path} index' to build one there")
    if not path.exists():
        if not create:
            raise MissingIndex(
                f"no index at {path}", "run 'annotate index' first, or pass --db PATH"
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            in_the_way = error.errno in (errno.EEXIST, errno.ENOTDIR)
            problem = "a file is in the way" if in_the_way else error.strerror
            raise DatabaseError(f"cannot create the folder {path.parent} for the index "
                                f"({problem})",
                                "pass --db with a path in a folder you may write") from None
    return Database(path, notify=notify)


LOCKED_HINT = ("close the program holding it (an sqlite3 shell or Datasette with a "
                "transaction open, another annotate run), then try again")


def _locked(error: sqlite3.Error) -> bool:
    return "locked" in str(error) or "busy" in str(error)


class Database:
    """One connection to the index, with its schema up to date."""

    def __init__(self, path: Path, notify: Notify | None = None) -> None:
        self.path = path
        self._notify = notify or (lambda message: None)
        self._target = str(path)
        self._scratch: Path | None = None  # a temporary copy's file, see `scratch_copy`
        self._creating = False  # writing a new index's schema, see `write`
        self._inherited: list[sqlite3.Connection] = []  # see `reconnect_in_child`
        connection = None
        try:
            connection = self._connect()
            try:
                version, tables = _first_look(connection)
            except sqlite3.OperationalError:
                if not _unwritable_folder(path):
                    raise
                connection.close()
                self._target = _immutable_uri(path)
                connection = self._connect()
                version, tables = _first_look(connection)
            self.conn = connection
            # SQLite opens a file this process may not write read-only, without a word
            self._read_only = self._target.startswith("file:") or not os.access(path, os.W_OK)
            foreign = tables > 0 and (version == 0 or not _has_index_tables(connection))
        except sqlite3.DatabaseError as error:
            if connection is not None:
                connection.close()
            raise _cannot_open(path, error) from None
        try:
            if foreign:  # another program's SQLite file: never add tables to it
                raise NotADatabase(
                    f"{path} is an SQLite database but not an annotate index",
                    "pass another --db PATH, or move that file away",
                )
            self._migrate(version)
            connection.execute("PRAGMA foreign_keys = ON")
        except BaseException:
            connection.close()
            raise

    def scratch_copy(self) -> Database:
        """A writable copy of this index in a temporary file, deleted when it is closed:
        what is written to it is not kept."""
        try:
            handle, name = tempfile.mkstemp(prefix="annotate-", suffix=".db")
        except OSError as error:  # no temporary folder can be written
            raise DatabaseError(f"cannot copy {self.path} for this run: {error.strerror}",
                                "set TMPDIR to a writable folder") from None
        os.close(handle)
        scratch = Path(name)
        connection = None
        try:
            connection = sqlite3.connect(scratch)
            self.conn.backup(connection)
        except (sqlite3.Error, MemoryError) as error:
            if connection is not None:
                connection.close()
            scratch.unlink(missing_ok=True)
            raise DatabaseError(f"cannot copy {self.path} to {scratch.parent} ({error})",
                                "free some space there, or set TMPDIR to a folder with room"
                                ) from None
        connection.execute("PRAGMA foreign_keys = ON")
        copy = Database.__new__(Database)  # already migrated: nothing to open or check
        copy.path, copy._notify, copy.conn = self.path, self._notify, connection
        copy._target, copy._scratch, copy._read_only = str(scratch), scratch, False
        copy._creating = False
        return copy

    @property
    def read_only(self) -> bool:
        """Opened read-only: the file, or its folder (see `_immutable_uri`), cannot be
        written."""
        return self._read_only

    @cached_property
    def db(self) -> sqlite_utils.Database:
        """The sqlite-utils view of this connection (tables, views, schema)."""
        import sqlite_utils

        return sqlite_utils.Database(self.conn, execute_plugins=False)

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Iterator[dict]:
        """Rows as dicts, straight from sqlite3 (sqlite-utils' import costs ~0.1-0.2 s,
        which the sub-second commands cannot afford)."""
        cursor = self.conn.execute(sql, params)
        names = [column[0] for column in cursor.description]
        for row in cursor:
            yield dict(zip(names, row, strict=True))

    def reconnect_in_child(self) -> None:
        """A new connection for a forked child. SQLite forbids using a connection across
        ``fork``: the inherited one is left to the parent, never used or closed here. It is
        kept, for Python closes a connection it frees, and closing its file in the child
        would drop the new connection's locks (POSIX locks are the process's, per file);
        the child ends with ``os._exit``, which frees nothing."""
        self._inherited.append(self.conn)
        self.conn = self._connect()

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self._target, timeout=WAIT_SECONDS,
                                     uri=self._target.startswith("file:"))
        _wait_quietly(connection)
        return connection

    def close(self) -> None:
        if not self._read_only:
            self._leave_rollback_mode()
        self.conn.close()
        if self._scratch is not None:
            self._scratch.unlink(missing_ok=True)

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextlib.contextmanager
    def write(self, wait: bool = True, bulk: bool = False) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction: committed whole or not at all. Without ``wait``,
        raise `DatabaseBusy` at once when another process holds the write lock. ``bulk``:
        it writes a whole version, with a page cache of `BULK_CACHE_KIB` meanwhile.

        A new index is written with a rollback journal until its first write after the
        schema's is committed (see `_in_rollback_mode`), then switched to WAL."""
        if bulk:
            cache = self.conn.execute("PRAGMA cache_size").fetchone()[0]
            self.conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
        rollback_mode = False
        try:
            rollback_mode = self._in_rollback_mode()
            if rollback_mode:  # read as the transaction begins: set before it
                self.conn.execute("PRAGMA cache_spill = OFF")
            self._begin_immediate(wait)
            try:
                yield self.conn
                if rollback_mode:
                    self._commit_when_read_by_none()
                else:
                    self.conn.commit()
            except BaseException:
                self.conn.rollback()
                raise
        finally:
            if rollback_mode:
                self.conn.execute("PRAGMA cache_spill = ON")
                _wait_quietly(self.conn)
            if bulk:
                self.conn.execute(f"PRAGMA cache_size = {cache}")
        if rollback_mode and not self._creating:
            with contextlib.suppress(sqlite3.OperationalError):  # the next write retries
                self._use_wal(patience=QUIET_WAIT_SECONDS)

    def _commit_when_read_by_none(self) -> None:
        """Commit a rollback-journal transaction, which needs the exclusive lock: a reader
        with a transaction open (an sqlite3 shell, a long query) keeps it back, which WAL
        would not. After the quiet wait, say so and wait up to `WAIT_SECONDS` (a commit
        that fails for a lock leaves its transaction open, to be committed again)."""
        try:
            self.conn.commit()
            return
        except sqlite3.OperationalError as error:
            if not _locked(error):
                raise
        self._notify(f"waiting for another program to stop reading {self.path}, to commit")
        self.conn.execute(f"PRAGMA busy_timeout = {int(WAIT_SECONDS * 1000)}")
        self.conn.commit()

    def _in_rollback_mode(self) -> bool:
        """Whether the file is written with a rollback journal, as a new index is until
        its first version is committed: in the one transaction that writes a whole
        version, each page is then written into the file once, where in WAL it is
        written to the log and copied into the file by the checkpoint the commit runs
        (0.1 s of a 2.3 s cold index of vLLM v0.20.0, all of it after the parse). Such a
        transaction keeps its pages in memory until the commit (``cache_spill`` off):
        spilled into the file, they would take the exclusive lock and keep every reader
        out until then, where WAL lets them read. A file never leaves WAL once in it; a
        connection that has read the file answers without a lock."""
        if self._scratch is not None:
            return False
        return self.conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal"

    def _begin_immediate(self, wait: bool = True) -> None:
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) and "busy" not in str(error):
                raise
            if not wait:
                raise DatabaseBusy(f"{self.path} is being written by another process") from None
        self._notify(f"waiting for another annotate process to finish writing {self.path}")
        self.conn.execute(f"PRAGMA busy_timeout = {int(WAIT_SECONDS * 1000)}")
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            raise DatabaseBusy(
                f"{self.path} stayed locked by another process for {WAIT_SECONDS:.0f}s",
                "wait for the other annotate run to finish, then try again",
            ) from None
        finally:
            _wait_quietly(self.conn)

    def _migrate(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"{self.path} has schema version {version}, newer than this annotate "
                f"understands ({SCHEMA_VERSION})",
                "upgrade vllm-annotate, or pass another --db PATH",
            )
        if version == SCHEMA_VERSION:
            return
        if version > 0 and not (os.access(self.path, os.W_OK)
                                and os.access(self.path.parent, os.W_OK)):
            raise DatabaseError(
                f"{self.path} has schema {version}, which this annotate must migrate to "
                f"{SCHEMA_VERSION}, but it cannot be written there",
                "copy it to a folder you can write and pass --db COPY, or index afresh",
            )
        if version == 0:
            self.conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # a no-op once it has pages
        else:
            self._use_wal()
        # a new file's schema is written with a rollback journal, kept for its first version
        self._creating = version == 0
        try:
            self._create_or_migrate()
        finally:
            self._creating = False

    def _create_or_migrate(self) -> None:
        with self.write() as connection:
            current = connection.execute("PRAGMA user_version").fetchone()[0]
            if current == SCHEMA_VERSION:
                return  # another process migrated it while we waited
            if current > 0:
                self._backup(current)  # under the write lock: one consistent copy
            for script in MIGRATIONS[current:]:
                for statement in _statements(script):
                    connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _leave_rollback_mode(self) -> None:
        """Switch a new index whose version was never written (an error came first) to
        WAL, unless another process is writing it: that one switches it when done."""
        # locked, in a transaction, or closed already: nothing to do
        with contextlib.suppress(sqlite3.OperationalError, sqlite3.ProgrammingError):
            if self._in_rollback_mode():
                self.conn.execute("PRAGMA busy_timeout = 0")
                self._use_wal(patience=0)

    def _use_wal(self, patience: float | None = None) -> None:
        """Switch to WAL. Two processes creating one file at once can make the switch fail
        at once with "database is locked" (no busy wait), so retry while it is locked, for
        ``patience`` seconds (default `WAIT_SECONDS`)."""
        deadline = time.monotonic() + (WAIT_SECONDS if patience is None else patience)
        while True:
            try:
                self.conn.execute("PRAGMA journal_mode = WAL").fetchall()
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
            time.sleep(0.02)

    def _backup(self, version: int) -> None:
        backup = self.path.with_name(f"{self.path.name}.v{version}.bak")
        self._notify(f"migrating {self.path} from schema {version} to {SCHEMA_VERSION}; "
                     f"backup at {backup}")
        # Written beside it, then renamed: a file already at that name (a stale copy, or
        # not a database at all) is replaced whole, never written into.
        partial = backup.with_name(backup.name + ".partial")
        try:
            _remove_with_journals(partial)
            self._copy_to(partial)
            _remove_with_journals(backup)  # a stale -wal beside it would be replayed into it
            os.replace(partial, backup)
        except OSError as error:  # a folder in the way, say
            _remove_with_journals(partial, quiet=True)
            raise DatabaseError(
                f"cannot write the migration backup {backup}: {error.strerror}",
                f"move {error.filename or backup} away, or free some space, then try again",
            ) from None

    def _copy_to(self, partial: Path) -> None:
        # A second connection reads the committed state: this one holds the write lock,
        # and a backup from a connection that is writing never finishes (SQLITE_LOCKED).
        try:
            with contextlib.closing(sqlite3.connect(self.path)) as source, \
                    contextlib.closing(sqlite3.connect(partial)) as copy:
                source.backup(copy)
                copy.execute("PRAGMA journal_mode = DELETE")  # one file: no -wal to follow
        except BaseException:
            _remove_with_journals(partial, quiet=True)
            raise


def _cannot_open(path: Path, error: sqlite3.DatabaseError) -> DatabaseError:
    """What keeps the file at ``path`` from being opened as an index, ``error`` said."""
    if isinstance(error, sqlite3.OperationalError) and _locked(error):
        return DatabaseBusy(f"cannot open {path}: another process holds it locked",
                            LOCKED_HINT)
    if isinstance(error, sqlite3.OperationalError):  # the disk, not the file
        return DatabaseError(f"cannot open {path} ({error})",
                             "free some space on its disk, and check that its folder is "
                             "writable")
    if "malformed" in str(error):  # SQLite's own header, pages missing or damaged
        return DatabaseError(f"{path} is damaged ({error})",
                             "rebuild the index with 'annotate index' into a fresh --db PATH, "
                             "or move that file away and index again")
    return NotADatabase(f"{path} is not an annotate database ({error})",
                        "pass another --db PATH, or move that file away")


def _wait_quietly(connection: sqlite3.Connection) -> None:
    connection.execute(f"PRAGMA busy_timeout = {int(QUIET_WAIT_SECONDS * 1000)}")


def _remove_with_journals(path: Path, quiet: bool = False) -> None:
    """Remove the file at ``path`` and its journals; ``quiet`` leaves what cannot be
    removed (a folder) for the error already being raised to name."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            path.with_name(path.name + suffix).unlink(missing_ok=True)
        except OSError:
            if not quiet:
                raise


_INDEX_COLUMNS = {
    ("repos", "name"), ("repos", "pypi"), ("repos", "github"), ("versions", "repo"),
    ("versions", "commit_sha"), ("versions", "symbol_count"), ("blobs", "id"),
    ("blobs", "content"),
}
"""Columns every schema version's tables have: generic table names are not enough."""


def _has_index_tables(connection: sqlite3.Connection) -> bool:
    """Whether the tables and columns every schema version has are there: another
    program's SQLite file may set a user_version of its own, and must never be migrated."""
    tables = {row[0] for row in connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    found = {(table, row[0]) for table in ("repos", "versions", "blobs") if table in tables
             for row in connection.execute("SELECT name FROM pragma_table_info(?)", (table,))}
    return _INDEX_COLUMNS.issubset(found)


def _first_look(connection: sqlite3.Connection) -> tuple[int, int]:
    """The schema version and the number of schema objects, from one consistent snapshot."""
    return connection.execute(
        "SELECT (SELECT user_version FROM pragma_user_version),"
        " (SELECT count(*) FROM sqlite_master)"
    ).fetchone()


def _unwritable_folder(path: Path) -> bool:
    return path.is_file() and not os.access(path.parent, os.W_OK)


def _immutable_uri(path: Path) -> str:
    """Read-only and immutable: a WAL database can be read without its ``-shm`` file only
    so, and in a folder nothing can be written to, nobody can be writing it either."""
    return path.absolute().as_uri() + "?mode=ro&immutable=1"


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (sqlite3 runs one per execute)."""
    statements, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    if pending.strip():
        statements.append(pending.strip())
    return statements
