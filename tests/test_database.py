"""The index database: schema and migrations, WAL, refusals, one transaction per version."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import fakevllm as fv
import pytest
from fakeproject import INDEX_TABLES, connected, table_counts
from fakevllm import FakeRepo

from db import database as database_module
from db import queries
from db.database import Database, _statements, open_database
from db.errors import DatabaseBusy, DatabaseError, MissingIndex, NotADatabase, SchemaTooNew
from db.schema import MIGRATIONS, SCHEMA_VERSION
from indexer.config import ProjectConfig
from indexer.pipeline import index_version

ROOT = Path(__file__).resolve().parents[1]


def _schema(path: Path) -> set[tuple[str, str]]:
    with connected(path) as conn:
        return {
            (kind, name)
            for kind, name in conn.execute("SELECT type, name FROM sqlite_master")
            if not name.startswith("sqlite_") and "claim_search_" not in name
        }


# ------------------------------------------------------------------------------ schema


def test_fresh_database_has_the_current_schema_and_is_in_wal_mode_once_closed(
    tmp_path: Path
) -> None:
    path = tmp_path / "deep" / "er" / "index.db"
    with open_database(path) as database:
        conn = database.conn
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    names = {name for _, name in _schema(path)}
    assert {*INDEX_TABLES, "version_files", "version_symbols", "version_summary"} <= names
    assert _journal_mode(path) == "wal"  # a property of the file, not of a connection


def _journal_mode(path: Path) -> str:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute("PRAGMA journal_mode").fetchone()[0]


def _meta_rows(count: int, start: int = 0) -> list[tuple[str, str]]:
    return [(f"key {number}", "x" * 200) for number in range(start, start + count)]


def test_a_new_index_is_first_written_with_a_rollback_journal_then_in_wal(
    tmp_path: Path
) -> None:
    """The first write after the schema goes to the file once (no log to checkpoint);
    every write after it goes to the WAL."""
    path = tmp_path / "index.db"
    wal, journal = Path(f"{path}-wal"), Path(f"{path}-journal")
    with open_database(path) as database:
        with database.write(bulk=True) as conn:
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", _meta_rows(100))
            assert journal.exists() and not wal.exists()
        assert not journal.exists()
        assert _journal_mode(path) == "wal"
        with database.write() as conn:
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", _meta_rows(1, 100))
        assert wal.stat().st_size > 0 and not journal.exists()
    with contextlib.closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT count(*) FROM meta").fetchone() == (101,)


def test_a_new_index_is_read_while_its_first_version_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages the cache cannot hold stay in memory until the commit: spilled into the
    file, they would take the exclusive lock that keeps every reader out."""
    monkeypatch.setattr(database_module, "BULK_CACHE_KIB", 500)
    path = tmp_path / "index.db"
    with open_database(path) as database:
        with database.write(bulk=True) as conn:
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                             _meta_rows(20_000))  # 4 MB: eight times the cache
            with contextlib.closing(sqlite3.connect(path, timeout=0)) as reader:
                assert reader.execute("SELECT count(*) FROM meta").fetchone() == (0,)
        assert conn.execute("PRAGMA cache_spill").fetchone()[0] > 0  # spills again
        assert conn.execute("SELECT count(*) FROM meta").fetchone() == (20_000,)


def test_the_first_write_of_a_new_index_waits_for_a_reader_to_finish_before_its_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its commit needs the exclusive lock, which a reader's open transaction keeps back
    longer than the quiet wait: the commit says so and waits for it (in WAL it would not
    need to)."""
    monkeypatch.setattr(database_module, "QUIET_WAIT_SECONDS", 0.1)
    path = tmp_path / "index.db"
    said: list[str] = []
    reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    with open_database(path, notify=said.append) as database:
        with database.write(bulk=True) as conn:
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", _meta_rows(10))
            reader.execute("BEGIN")
            assert reader.execute("SELECT count(*) FROM meta").fetchone() == (0,)
            threading.Timer(0.5, reader.execute, ("COMMIT",)).start()
        assert reader.execute("SELECT count(*) FROM meta").fetchone() == (10,)
    reader.close()
    assert said == [f"waiting for another program to stop reading {path}, to commit"]


def test_a_reader_that_keeps_a_new_index_from_wal_does_not_hold_up_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Switching to WAL after the first version needs the file to itself: a reader's
    transaction open just then keeps the file in rollback mode, and the run goes on after
    the quiet wait, not `WAIT_SECONDS`; the close switches it once the reader is gone."""
    monkeypatch.setattr(database_module, "QUIET_WAIT_SECONDS", 0.2)
    monkeypatch.setattr(database_module, "WAIT_SECONDS", 5.0)
    path = tmp_path / "index.db"
    reader = sqlite3.connect(path, isolation_level=None)
    commit = Database._commit_when_read_by_none

    def commit_then_read(self: Database) -> None:
        commit(self)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM meta").fetchone()  # holds its read lock

    with open_database(path) as database:  # its schema's commit is not held
        monkeypatch.setattr(Database, "_commit_when_read_by_none", commit_then_read)
        started = time.monotonic()
        with database.write(bulk=True) as conn:
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", _meta_rows(10))
        assert time.monotonic() - started < 2
        assert database.conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        reader.execute("COMMIT")
    reader.close()
    assert _journal_mode(path) == "wal"


def test_a_new_index_whose_first_write_fails_keeps_nothing_of_it_and_is_in_wal_once_closed(
    tmp_path: Path
) -> None:
    path = tmp_path / "index.db"
    with open_database(path) as database:
        with pytest.raises(RuntimeError), database.write(bulk=True) as conn:
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", _meta_rows(100))
            raise RuntimeError("the parse failed")
        assert not Path(f"{path}-journal").exists()
    assert _journal_mode(path) == "wal"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT count(*) FROM meta").fetchone() == (0,)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_new_index_closed_twice_is_closed(tmp_path: Path) -> None:
    """Closing asks the file's journal mode (see `Database.close`): not of a connection
    closed already."""
    database = open_database(tmp_path / "index.db")
    database.close()
    database.close()
    assert _journal_mode(tmp_path / "index.db") == "wal"


FIRST_WRITE_KILLED = """import sys
import threading
import time
from pathlib import Path
from db.database import open_database
database = open_database(Path(sys.argv[1]))
with database.write(bulk=True) as conn:
    conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                     ((f"key {n}", "x" * 200) for n in range(20_000)))
    print("written", flush=True)
    sys.stdin.read()  # killed here, inside the transaction
"""


def test_a_new_index_killed_in_its_first_write_keeps_nothing_of_it(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    with subprocess.Popen([sys.executable, "-c", FIRST_WRITE_KILLED, str(path)],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}) as process:
        assert process.stdout is not None and process.stdout.readline() == "written\n"
        process.kill()
        process.wait(timeout=30)
    with open_database(path) as database:
        conn = database.conn
        assert conn.execute("SELECT count(*) FROM meta").fetchone() == (0,)
        with database.write(bulk=True) as conn:
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", _meta_rows(10))
    assert _journal_mode(path) == "wal"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT count(*) FROM meta").fetchone() == (10,)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_schema_equals_running_every_migration_as_a_script(tmp_path: Path) -> None:
    with open_database(tmp_path / "index.db"):
        pass
    with connected(tmp_path / "script.db") as conn:
        for script in MIGRATIONS:
            conn.executescript(script)
    assert _schema(tmp_path / "index.db") == _schema(tmp_path / "script.db")


def test_views_are_usable(database: Database, config: ProjectConfig, fake_vllm: FakeRepo) -> None:
    outcome = index_version(database, config, "vllm", "v0.1.0")
    conn = database.conn
    files = conn.execute(
        "SELECT path, blob_id FROM version_files WHERE repo = 'vllm' AND version = 'v0.1.0'"
    ).fetchall()
    symbols = conn.execute(
        "SELECT count(*) FROM version_symbols WHERE repo = 'vllm' AND version = 'v0.1.0'"
    ).fetchone()[0]
    summary = list(database.db.query("SELECT * FROM version_summary"))
    assert {path for path, _ in files} == set(fv.regular_files(fv.VERSIONS["v0.1.0"]))
    assert symbols == outcome.symbols > 0
    assert [(row["repo"], row["version"], row["source"], row["source_id"], row["file_count"],
             row["symbol_count"]) for row in summary] == [
        ("vllm", "v0.1.0", "git", fake_vllm.commits["v0.1.0"], len(files), symbols)
    ]


STATEMENTS = [
    pytest.param("CREATE TABLE a (x);", ["CREATE TABLE a (x);"], id="one"),
    pytest.param(
        "CREATE TABLE a (x);\nCREATE TABLE b (y);\n",
        ["CREATE TABLE a (x);", "CREATE TABLE b (y);"], id="two-lines",
    ),
    pytest.param(
        "CREATE TABLE a (\n    x TEXT DEFAULT 'a;b'\n);\n",
        ["CREATE TABLE a (\n    x TEXT DEFAULT 'a;b'\n);"], id="semicolon-in-string",
    ),
    pytest.param(
        "CREATE TRIGGER t AFTER INSERT ON a BEGIN\n    INSERT INTO b VALUES (1);\n"
        "    INSERT INTO b VALUES (2);\nEND;\nCREATE TABLE c (z);\n",
        [
            "CREATE TRIGGER t AFTER INSERT ON a BEGIN\n    INSERT INTO b VALUES (1);\n"
            "    INSERT INTO b VALUES (2);\nEND;",
            "CREATE TABLE c (z);",
        ],
        id="trigger-body",
    ),
    pytest.param(
        "-- a comment; with a semicolon\nCREATE TABLE a (x);\n",
        ["-- a comment; with a semicolon\nCREATE TABLE a (x);"], id="comment-line",
    ),
    pytest.param("CREATE TABLE a (x)\n", ["CREATE TABLE a (x)"], id="unterminated-last"),
    pytest.param("\n\n", [], id="blank"),
]


@pytest.mark.parametrize(("script", "expected"), STATEMENTS)
def test_statements(script: str, expected: list[str]) -> None:
    assert _statements(script) == expected


@pytest.mark.parametrize("number", [pytest.param(n, id=f"migration-{n + 1}")
                                    for n in range(len(MIGRATIONS))])
def test_every_migration_splits_into_complete_statements(number: int) -> None:
    statements = _statements(MIGRATIONS[number])
    assert statements and all(sqlite3.complete_statement(s) for s in statements)
    assert "".join(statements).replace(" ", "").replace("\n", "") == (
        MIGRATIONS[number].replace(" ", "").replace("\n", "")
    )


def _at_schema(path: Path, version: int, *statements: str) -> None:
    """A database at ``version``, as the first migrations make it, with ``statements`` run
    after them."""
    with connected(path) as conn:
        for script in MIGRATIONS[:version]:
            for statement in _statements(script):
                conn.execute(statement)
        for statement in statements:
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {version}")


def test_older_schema_is_migrated_after_a_backup(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    _at_schema(path, 1, "INSERT INTO repos (name) VALUES ('vllm')")
    notes: list[str] = []
    with open_database(path, notify=notes.append) as database:
        assert database.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert database.conn.execute("SELECT name FROM repos").fetchall() == [("vllm",)]
    backup = tmp_path / "index.db.v1.bak"
    assert notes == [f"migrating {path} from schema 1 to {SCHEMA_VERSION}; backup at {backup}"]
    with connected(backup) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        assert conn.execute("SELECT name FROM repos").fetchall() == [("vllm",)]
    assert _schema(path) == _schema(_fresh(tmp_path / "fresh.db"))


def _page_size(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute("PRAGMA page_size").fetchone()[0]


def test_a_new_index_has_large_pages_and_an_older_one_keeps_its_own(tmp_path: Path) -> None:
    with open_database(tmp_path / "new.db"):
        pass
    assert _page_size(tmp_path / "new.db") == database_module.PAGE_SIZE != 4096
    _at_schema(tmp_path / "old.db", 1, "INSERT INTO repos (name) VALUES ('vllm')")
    with open_database(tmp_path / "old.db"):
        pass
    assert _page_size(tmp_path / "old.db") == 4096  # migrated, not rebuilt


def _cache_size(database: Database) -> int:
    return database.conn.execute("PRAGMA cache_size").fetchone()[0]


def test_a_bulk_write_has_a_large_cache_until_it_ends_however_it_ends(
    database: Database
) -> None:
    before = _cache_size(database)
    with database.write(bulk=True):
        assert _cache_size(database) == -database_module.BULK_CACHE_KIB != before
    assert _cache_size(database) == before
    with pytest.raises(RuntimeError), database.write(bulk=True):
        raise RuntimeError("the version failed")
    assert _cache_size(database) == before
    with database.write():
        assert _cache_size(database) == before


# Databases of development builds whose released migrations were edited afterwards: each
# reaches the schema a fresh database has, keeping its rows (`_V8` repairs them).
_FTS_BLOB_NAMES = ("CREATE VIRTUAL TABLE blob_names USING fts5("
                   "blob_id UNINDEXED, names, tokenize = \"unicode61 tokenchars '_'\")")
EDITED_MIGRATIONS = {
    "schema-2-without-meta": (2, ["DROP TABLE meta"]),
    "schema-3-without-match-cache": (3, ["DROP TABLE match_cache"]),
    "schema-3-with-a-search-table-of-names": (3, ["DROP TABLE blob_names", _FTS_BLOB_NAMES]),
    "schema-1-with-a-qualname-index": (1, ["CREATE INDEX symbols_qualname ON symbols(qualname)"]),
}


def _full_schema(path: Path) -> list[tuple[str, str, str]]:
    with connected(path) as conn:
        return sorted(conn.execute("SELECT type, name, tbl_name FROM sqlite_master"))


@pytest.mark.parametrize(("version", "edits"), EDITED_MIGRATIONS.values(),
                         ids=EDITED_MIGRATIONS.keys())
def test_a_database_of_an_edited_migration_reaches_the_fresh_schema(
    tmp_path: Path, version: int, edits: list[str]
) -> None:
    path = tmp_path / "index.db"
    names = ["INSERT INTO blob_names VALUES ('b', ' x y ')"] if version >= 3 else []
    _at_schema(path, version, *edits, "INSERT INTO blobs (id, size) VALUES ('b', 1)", *names)
    with open_database(path) as database:
        conn = database.conn
        assert conn.execute("SELECT id FROM blobs").fetchall() == [("b",)]
        names = conn.execute("SELECT blob_id, names FROM blob_names").fetchall()
        assert names == ([("b", " x y ")] if version >= 3 else [])
        conn.execute("INSERT INTO meta VALUES ('link_signature', 's')")  # what link writes
    assert _full_schema(path) == _full_schema(_fresh(tmp_path / "fresh.db"))


def test_a_search_table_of_names_holding_a_blob_twice_is_repaired(tmp_path: Path) -> None:
    """The early FTS5 ``blob_names`` had no key: a blob written twice keeps its first row."""
    path = tmp_path / "index.db"
    _at_schema(path, 3, "DROP TABLE blob_names", _FTS_BLOB_NAMES,
               "INSERT INTO blobs (id, size) VALUES ('b', 1)",
               "INSERT INTO blob_names VALUES ('b', ' x y ')",
               "INSERT INTO blob_names VALUES ('b', ' x y z ')")
    with open_database(path) as database:
        names = database.conn.execute("SELECT blob_id, names FROM blob_names").fetchall()
    assert names == [("b", " x y ")]
    assert _full_schema(path) == _full_schema(_fresh(tmp_path / "fresh.db"))


def test_an_unparsed_python_blob_of_a_schema_7_database_is_marked_for_parsing(
    tmp_path: Path
) -> None:
    """_V7's marking was added after _V7 ran: `_V8` marks again."""
    path = tmp_path / "index.db"
    _at_schema(
        path, 7, "INSERT INTO repos (name) VALUES ('vllm')",
        "INSERT INTO versions VALUES (1, 'vllm', 'v1', 'local', NULL, NULL, 'now', 2, 0, 2, 0.1)",
        *(f"INSERT INTO blobs (id, size, extractor) VALUES ('{b}', 1, 'x')" for b in ("py", "txt")),
        "INSERT INTO blobs (id, size, extractor, skipped) VALUES ('big', 1, 'x', 'too large')",
        "INSERT INTO files VALUES (1, 'a.py', 'py')",
        "INSERT INTO files VALUES (1, 'a.txt', 'txt')",
        "INSERT INTO files VALUES (1, 'big.py', 'big')",
    )
    with open_database(path) as database:
        marked = database.conn.execute("SELECT id, extractor FROM blobs ORDER BY id").fetchall()
    assert marked == [("big", "x"), ("py", ""), ("txt", "x")]  # a skipped blob stays skipped


def test_the_uses_targets_of_a_schema_8_database_keep_their_rows_with_repo_and_version(
    tmp_path: Path
) -> None:
    """_V9 splits a target's repo and version out of its canonical ``resolved``, and
    ``claim_use_links`` lists the targets with their claims and refs."""
    path = tmp_path / "index.db"
    target = "vllm@v0.20.0:vllm/model_executor/layers/kda.py::KimiDeltaAttention"
    _at_schema(
        path, 8, "INSERT INTO articles VALUES ('kimi.md', 'Kimi', 'kimi.yml')",
        "INSERT INTO claims VALUES (1, 'kimi.md', 'kda', 'x', NULL, 'kimi.yml', 3)",
        "INSERT INTO claim_refs (id, claim, seq, written, line, repo, version, path, qualname,"
        " state) VALUES (7, 1, 0, 'm.py::L.__init__', 5, 'vllm', 'v0.20.0', 'm.py',"
        " 'L.__init__', 'linked')",
        f"INSERT INTO claim_uses VALUES (7, '{target}', '{target}',"
        " 'vllm/model_executor/layers/kda.py', 'KimiDeltaAttention')",
        "INSERT INTO claim_uses (ref, written) VALUES (7, 'vllm@v0.23.1rc0:a.py::B')",
    )
    with open_database(path) as database:
        rows = database.conn.execute(
            "SELECT written, repo, version, qualname FROM claim_uses ORDER BY rowid").fetchall()
        links = list(database.query("SELECT article, claim_id, line, version, qualname,"
                                    " ref_written, ref_path FROM claim_use_links"))
    assert rows == [(target, "vllm", "v0.20.0", "KimiDeltaAttention"),
                    ("vllm@v0.23.1rc0:a.py::B", None, None, None)]  # unresolved: not indexed
    assert links[0] == {"article": "kimi.md", "claim_id": "kda", "line": 5,
                        "version": "v0.20.0", "qualname": "KimiDeltaAttention",
                        "ref_written": "m.py::L.__init__", "ref_path": "m.py"}
    assert _full_schema(path) == _full_schema(_fresh(tmp_path / "fresh.db"))


def _fresh(path: Path) -> Path:
    with open_database(path):
        pass
    return path


def test_current_schema_is_opened_without_migrating(tmp_path: Path) -> None:
    path = _fresh(tmp_path / "index.db")
    notes: list[str] = []
    with open_database(path, notify=notes.append):
        pass
    assert notes == []
    assert list(tmp_path.glob("*.bak")) == []


# ------------------------------------------------------------------------------ refusals


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = _fresh(tmp_path / "index.db")
    with connected(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(SchemaTooNew) as caught:
        open_database(path)
    assert str(caught.value) == (
        f"{path} has schema version 99, newer than this annotate understands "
        f"({SCHEMA_VERSION}); upgrade vllm-annotate, or pass another --db PATH"
    )


def test_file_that_is_not_sqlite_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "d" / "index.db"
    path.parent.mkdir()
    data = os.urandom(4096)
    path.write_bytes(data)
    with pytest.raises(NotADatabase) as caught:
        open_database(path)
    assert str(caught.value) == (
        f"{path} is not an annotate database (file is not a database); "
        "pass another --db PATH, or move that file away"
    )
    assert path.read_bytes() == data
    assert [p.name for p in path.parent.iterdir()] == ["index.db"]  # no -wal, -shm, backup


@pytest.mark.parametrize("user_version", [0, 5, -1, SCHEMA_VERSION, SCHEMA_VERSION + 1])
@pytest.mark.parametrize("tables", [
    "CREATE TABLE repos (owner TEXT, stars INTEGER)",
    "CREATE TABLE repos (id INTEGER PRIMARY KEY, url TEXT); CREATE TABLE versions (id "
    "INTEGER, name TEXT); CREATE TABLE blobs (sha TEXT, data BLOB)",
    "CREATE TABLE a (name, pypi, github, repo, commit_sha, symbol_count, id, content); "
    "CREATE VIEW repos AS SELECT * FROM a; CREATE VIEW versions AS SELECT * FROM a; "
    "CREATE VIEW blobs AS SELECT * FROM a",
], ids=["one-table", "tables-named-as-ours", "views-with-our-columns"])
def test_another_programs_sqlite_file_is_refused_and_left_alone(
    tmp_path: Path, user_version: int, tables: str
) -> None:
    """Many programs set a user_version of their own, and name tables as we do: neither
    says the file is an index."""
    (tmp_path / "d").mkdir()
    path = tmp_path / "d" / "other.db"
    with connected(path) as conn:
        conn.executescript(tables)
        conn.execute(f"PRAGMA user_version = {user_version}")
    before = path.read_bytes()
    with pytest.raises(NotADatabase, match="is an SQLite database but not an annotate index"):
        open_database(path)
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == ["other.db"]  # no backup, -wal, -shm


@pytest.mark.parametrize("in_the_way", ["index.db.v1.bak", "index.db.v1.bak.partial"])
def test_a_folder_where_the_backup_goes_is_one_error_and_the_index_stays(
    tmp_path: Path, in_the_way: str
) -> None:
    (tmp_path / "d").mkdir()
    path = tmp_path / "d" / "index.db"
    _at_schema(path, 1, "INSERT INTO repos (name) VALUES ('real')")
    (path.parent / in_the_way).mkdir()
    with pytest.raises(DatabaseError, match="cannot write the migration backup") as raised:
        open_database(path)
    assert raised.value.hint.startswith(f"move {path.parent / in_the_way} away")
    with contextlib.closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    left = {p.name for p in path.parent.iterdir()} - {"index.db-wal", "index.db-shm"}
    assert left == {"index.db", in_the_way}  # no .partial


def test_empty_file_becomes_a_database(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    path.touch()
    with open_database(path) as database:
        assert database.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_missing_database_is_not_created_when_only_reading(tmp_path: Path) -> None:
    with pytest.raises(MissingIndex) as caught:
        open_database(tmp_path / "new" / "nowhere.db", create=False)
    assert str(caught.value) == (
        f"no index at {tmp_path / 'new' / 'nowhere.db'}; "
        "run 'annotate index' first, or pass --db PATH"
    )
    assert not (tmp_path / "new").exists()


# ------------------------------------------------------------------------------ writes


def test_failure_before_the_version_row_leaves_nothing(
    database: Database, config: ProjectConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode() -> str:  # the version row's timestamp
        assert database.conn.execute("SELECT count(*) FROM blobs").fetchone()[0] > 0
        raise RuntimeError("injected between the blobs and the version")

    now = queries._now
    monkeypatch.setattr(queries, "_now", explode)
    with pytest.raises(RuntimeError, match="injected"):
        index_version(database, config, "vllm", "v0.1.0")
    assert table_counts(database) == dict.fromkeys(INDEX_TABLES, 0)
    assert not database.conn.in_transaction
    monkeypatch.setattr(queries, "_now", now)  # not undo(): the isolation stays
    outcome = index_version(database, config, "vllm", "v0.1.0")  # and it can be done again
    assert outcome.parsed == table_counts(database)["blobs"] - len(fv.NON_PYTHON_FILES)


def test_constraint_violation_in_a_blob_row_leaves_nothing(database: Database) -> None:
    version = queries.VersionRow("vllm", "v1", "local", None, None, 2, 2, 0.1)
    blobs = [
        queries.BlobRow("a" * 40, 1, b"", parsed=True),
        queries.BlobRow("b" * 40, None, b""),  # type: ignore[arg-type] - size is NOT NULL
    ]
    with pytest.raises(sqlite3.IntegrityError, match="NOT NULL"):
        queries.write_version(
            database, {"name": "vllm", "git": None, "pypi": None, "github": None}, version,
            [("a.py", "a" * 40), ("b.py", "b" * 40)], blobs, extractor="test",
        )
    assert table_counts(database) == dict.fromkeys(INDEX_TABLES, 0)


def test_file_pointing_at_an_unknown_blob_leaves_nothing(database: Database) -> None:
    version = queries.VersionRow("vllm", "v1", "local", None, None, 1, 0, 0.1)
    with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"):
        queries.write_version(
            database, {"name": "vllm", "git": None, "pypi": None, "github": None}, version,
            [("a.py", "c" * 40)], [], extractor="test",
        )
    assert table_counts(database) == dict.fromkeys(INDEX_TABLES, 0)


def test_write_version_twice_is_refused_the_second_time(database: Database) -> None:
    version = queries.VersionRow("vllm", "v1", "local", None, None, 1, 1, 0.1)
    repo = {"name": "vllm", "git": None, "pypi": None, "github": None}
    blob = queries.BlobRow("a" * 40, 1, b"")
    files = [("a.py", "a" * 40)]
    assert queries.write_version(database, repo, version, files, [blob], extractor="test")
    before = table_counts(database)
    assert not queries.write_version(database, repo, version, files, [blob], extractor="test")
    assert table_counts(database) == before


def test_blob_lookups_find_every_stored_id_past_one_chunk(database: Database) -> None:
    ids = [f"{n:040x}" for n in range(1001)]  # the lookups ask 500 ids at a time
    version = queries.VersionRow("vllm", "v1", "local", None, None, len(ids), len(ids), 0.1)
    queries.write_version(
        database, {"name": "vllm", "git": None, "pypi": None, "github": None}, version,
        [(f"f{n}.txt", blob) for n, blob in enumerate(ids)],
        [queries.BlobRow(blob, 1, None) for blob in ids], extractor="test",
    )
    assert queries.known_blobs(database, [*ids, "f" * 40]) == set(ids)
    assert queries.never_parsed_blobs(database, ids) == set(ids)


def test_symbols_named_matches_whole_qualname_components(
    tmp_path: Path, database: Database, config: ProjectConfig
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "m.py").write_text(
        "class AB:\n    def f(self):\n        pass\n\n\n"
        "class B:\n    def f(self):\n        pass\n"
    )
    index_version(database, config, "vllm", "v1", from_path=tree)
    key = queries.require_version(database, "vllm", "v1", config_name="annotate.toml")
    assert [row["qualname"] for row in queries.symbols_named(database, key, "B.f")] == ["B.f"]
    assert [row["qualname"] for row in queries.symbols_named(database, key, "f")] == [
        "AB.f", "B.f"
    ]


def test_writer_waits_for_another_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(database_module, "WAIT_SECONDS", 30.0)  # not 600 s if it never says so
    monkeypatch.setattr(database_module, "QUIET_WAIT_SECONDS", 0.05)  # not 2 s before it does
    path = _fresh(tmp_path / "index.db")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    notes: list[str] = []

    def note_then_release(note: str) -> None:  # the other writer finishes once it is waited for
        notes.append(note)
        holder.rollback()

    try:
        with open_database(path, notify=note_then_release) as database, database.write() as conn:
            conn.execute("INSERT INTO repos (name) VALUES ('waited')")
    finally:
        holder.close()
    assert notes == [f"waiting for another annotate process to finish writing {path}"]
    with connected(path) as conn:
        assert conn.execute("SELECT name FROM repos").fetchall() == [("waited",)]


def test_a_database_another_program_holds_locked_is_named_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An sqlite3 shell with an exclusive transaction open: not a full disk."""
    monkeypatch.setattr(database_module, "WAIT_SECONDS", 0.2)
    monkeypatch.setattr(database_module, "QUIET_WAIT_SECONDS", 0.05)
    path = _fresh(tmp_path / "index.db")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("CREATE TABLE scratch (x)")
    try:
        with pytest.raises(DatabaseBusy) as caught:
            open_database(path).close()
    finally:
        holder.close()
    assert str(caught.value) == (
        f"cannot open {path}: another process holds it locked; close the program holding it "
        "(an sqlite3 shell or Datasette with a transaction open, another annotate run), then "
        "try again")


def test_writer_gives_up_with_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(database_module, "WAIT_SECONDS", 0.2)
    monkeypatch.setattr(database_module, "QUIET_WAIT_SECONDS", 0.05)
    path = _fresh(tmp_path / "index.db")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with (
            open_database(path) as database,
            pytest.raises(DatabaseBusy) as caught,
            database.write(),
        ):
            pass
    finally:
        holder.close()
    assert str(caught.value) == (
        f"{path} stayed locked by another process for 0s; "
        "wait for the other annotate run to finish, then try again"
    )


def test_a_file_at_the_backups_name_is_replaced_not_written_into(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    _at_schema(path, 1)
    backup = tmp_path / "index.db.v1.bak"
    backup.write_bytes(os.urandom(100))  # a stray file, not a database
    with open_database(path) as database:
        assert database.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    with connected(backup) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert list(tmp_path.glob("*.partial")) == []



def test_a_partial_backup_left_by_an_interrupted_run_is_started_afresh(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    _at_schema(path, 1, "INSERT INTO repos (name) VALUES ('real')")
    partial = tmp_path / "index.db.v1.bak.partial"
    partial.write_bytes(os.urandom(100))  # what a run killed while copying left behind
    with open_database(path) as database:
        assert database.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    with contextlib.closing(sqlite3.connect(tmp_path / "index.db.v1.bak")) as conn:
        assert conn.execute("SELECT name FROM repos").fetchall() == [("real",)]
    assert not partial.exists()


def test_a_stale_backup_with_its_own_rollback_journal_is_replaced_whole(tmp_path: Path) -> None:
    """A hot -journal left beside an older backup would be rolled back into the new one."""
    path = tmp_path / "index.db"
    _at_schema(path, 1, "INSERT INTO repos (name) VALUES ('real')")
    stale, backup = tmp_path / "stale.db", tmp_path / "index.db.v1.bak"
    with contextlib.closing(sqlite3.connect(stale, isolation_level=None)) as writer:
        writer.execute("CREATE TABLE stale_only (x)")
        writer.execute("PRAGMA cache_size = 1")  # pages spill: the journal is hot at once
        writer.execute("BEGIN")
        writer.execute("DROP TABLE stale_only")
        writer.execute("CREATE TABLE stale_too (x)")
        writer.executemany("INSERT INTO stale_too VALUES (?)", [(b"x" * 900,)] * 100)
        shutil.copyfile(stale, backup)
        shutil.copyfile(stale.with_name("stale.db-journal"),
                        backup.with_name(backup.name + "-journal"))
        writer.execute("ROLLBACK")
    with open_database(path):
        pass
    with contextlib.closing(sqlite3.connect(backup)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("SELECT name FROM repos").fetchall() == [("real",)]
        tables = {name for name, in conn.execute("SELECT name FROM sqlite_master")}
    assert not tables & {"stale_only", "stale_too"}


def test_a_stale_backup_with_its_own_wal_is_replaced_whole(tmp_path: Path) -> None:
    """A -wal left beside an older backup would be replayed into the new one."""
    path = tmp_path / "index.db"
    _at_schema(path, 1, "INSERT INTO repos (name) VALUES ('real')")
    stale, backup = tmp_path / "stale.db", tmp_path / "index.db.v1.bak"
    writer = sqlite3.connect(stale)
    writer.execute("PRAGMA journal_mode = WAL")
    with writer:
        writer.execute("CREATE TABLE stale_only (x)")
    shutil.copyfile(stale, backup)
    shutil.copyfile(stale.with_name("stale.db-wal"), backup.with_name(backup.name + "-wal"))
    writer.close()
    with open_database(path):
        pass
    with contextlib.closing(sqlite3.connect(backup)) as conn:
        assert conn.execute("SELECT name FROM repos").fetchall() == [("real",)]
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        tables = {name for name, in conn.execute("SELECT name FROM sqlite_master")}
    assert "stale_only" not in tables


@pytest.mark.parametrize(("path", "module"), [
    pytest.param("vllm/envs.py", "vllm.envs", id="a-module"),
    pytest.param("vllm/config/__init__.py", "vllm.config", id="a-package-init"),
    pytest.param("vllm/__init__.py", "vllm", id="the-top-package-init"),
    pytest.param("__init__.py", "__init__", id="a-top-level-init-of-no-package"),
    pytest.param("vllm/my__init__.py", "vllm.my__init__", id="a-name-ending-in-init"),
    pytest.param("setup.py", "setup", id="a-top-level-module"),
])
def test_a_file_is_named_as_python_imports_it(path: str, module: str) -> None:
    """A package is imported by its folder's name, its ``__init__.py`` being the package;
    an ``__init__.py`` in no folder is a module of that name."""
    assert queries.module_name(path) == module
