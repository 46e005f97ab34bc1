"""Indexing versions: incremental (a blob is parsed once, ever), no-op re-runs, worker pool."""

from __future__ import annotations

import collections
import contextlib
import fcntl
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile
import zlib
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from importlib import metadata
from pathlib import Path

import fakevllm as fv
import pytest
import tree_sitter
from fakeproject import INDEX_TABLES, connected, table_counts, undo_uses_pins
from fakevllm import FakeRepo

from db import queries
from db.database import Database, open_database
from db.queries import SYMBOL_COLUMNS
from indexer import pipeline
from indexer.config import ProjectConfig, load_config
from indexer.errors import NotATag, SourceError
from indexer.extractor import EXTRACTION_VERSION, extractor_id
from indexer.pipeline import index_version, parse_batch
from indexer.sources import blob_id
from indexer.symbols import parse_blob


def _blobs(tag: str) -> set[str]:
    return {blob_id(data) for data in fv.regular_files(fv.VERSIONS[tag]).values()}


def _python_blobs(tag: str) -> set[str]:
    return {blob_id(data) for data in fv.python_files(tag).values()}


def _rows(database: Database, table: str) -> list[tuple]:
    return sorted(database.conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)


# ------------------------------------------------------------------------------ outcomes


def test_first_version_parses_every_python_blob(
    database: Database, config: ProjectConfig, fake_vllm: FakeRepo
) -> None:
    outcome = index_version(database, config, "vllm", "v0.1.0")
    expected_symbols = sum(
        len(parse_blob("x", data).symbols) for data in set(fv.python_files("v0.1.0").values())
    )
    assert (outcome.repo, outcome.version, outcome.already) == ("vllm", "v0.1.0", False)
    assert (outcome.source, outcome.source_id) == ("git", fake_vllm.commits["v0.1.0"])
    assert outcome.files == len(fv.regular_files(fv.VERSIONS["v0.1.0"]))
    assert outcome.new_blobs == len(_blobs("v0.1.0"))
    assert outcome.parsed == len(_python_blobs("v0.1.0"))
    assert outcome.symbols == expected_symbols
    row = database.conn.execute(
        "SELECT source, commit_sha, wheel_sha256, file_count, symbol_count, new_blobs"
        " FROM versions"
    ).fetchone()
    assert row == (
        "git", fake_vllm.commits["v0.1.0"], None, outcome.files, expected_symbols,
        outcome.new_blobs,
    )


STEPS = [
    pytest.param(("v0.1.0", "v0.2.0"), id="v0.1.0-then-v0.2.0"),
    pytest.param(("v0.2.0", "v0.3.0"), id="v0.2.0-then-v0.3.0"),
    pytest.param(("v0.1.0", "v0.3.0"), id="v0.1.0-then-v0.3.0"),
    pytest.param(("v0.3.0", "v0.1.0"), id="newer-first"),
]


@pytest.mark.parametrize("tags", STEPS)
def test_next_version_parses_only_new_blobs(
    database: Database, config: ProjectConfig, tags: tuple[str, str]
) -> None:
    first, second = tags
    index_version(database, config, "vllm", first)
    outcome = index_version(database, config, "vllm", second)
    new = _blobs(second) - _blobs(first)
    assert outcome.new_blobs == len(new)
    assert outcome.parsed == len(_python_blobs(second) - _blobs(first))
    assert outcome.symbols == sum(
        len(parse_blob("x", data).symbols)
        for data in {d for d in fv.python_files(second).values() if blob_id(d) in new}
    )
    stored = database.conn.execute("SELECT symbol_count FROM versions WHERE version = ?",
                                   (second,)).fetchone()[0]
    in_view = database.conn.execute(
        "SELECT count(*) FROM version_symbols WHERE version = ?", (second,)
    ).fetchone()[0]
    assert stored == in_view > outcome.symbols


def test_each_blob_is_parsed_once_ever(database: Database, config: ProjectConfig) -> None:
    for tag in fv.TAGS:
        index_version(database, config, "vllm", tag)
    conn = database.conn
    blobs = _blobs("v0.1.0") | _blobs("v0.2.0") | _blobs("v0.3.0")
    assert {row[0] for row in conn.execute("SELECT id FROM blobs")} == blobs
    assert conn.execute(
        "SELECT count(*) FROM (SELECT blob_id, seq FROM symbols GROUP BY blob_id, seq"
        " HAVING count(*) > 1)"
    ).fetchone()[0] == 0
    for blob, content in conn.execute("SELECT id, content FROM blobs WHERE parsed = 1"):
        stored = conn.execute(
            "SELECT qualname, kind, start_line, end_line, exact FROM symbols"
            " WHERE blob_id = ? ORDER BY seq", (blob,)
        ).fetchall()
        expected = [
            (s.qualname, s.kind.value, s.start_line, s.end_line, s.exact)
            for s in parse_blob(blob, zlib.decompress(content)).symbols
        ]
        assert stored == expected


def test_reindexing_is_a_no_op(database: Database, config: ProjectConfig) -> None:
    index_version(database, config, "vllm", "v0.1.0")
    before = {table: _rows(database, table) for table in INDEX_TABLES}
    outcome = index_version(database, config, "vllm", "v0.1.0")
    assert outcome == pipeline.IndexOutcome("vllm", "v0.1.0", already=True)
    assert {table: _rows(database, table) for table in INDEX_TABLES} == before


def test_reindexing_does_not_touch_the_source(
    database: Database, config: ProjectConfig, tmp_path: Path
) -> None:
    index_version(database, config, "vllm", "v0.1.0")
    gone = load_config().repo("vllm")
    Path("annotate.toml").write_text(
        f'sources = ["git"]\n[repos.vllm]\ngit = "{tmp_path / "gone"}"\n'
    )
    assert gone.git != load_config().repo("vllm").git
    assert index_version(database, load_config(), "vllm", "v0.1.0").already


def test_a_version_named_as_pypi_numbers_it_is_refused_before_any_source_is_read(
    database: Database, config: ProjectConfig, tmp_path: Path
) -> None:
    """vLLM tags v0.1.0: stored as 0.1.0, every permalink would name a tag it does not have."""
    before = {table: _rows(database, table) for table in INDEX_TABLES}
    with pytest.raises(NotATag, match=r"^vllm@0\.1\.0 is PyPI's number, not a tag of "):
        index_version(database, config, "vllm", "0.1.0", from_path=tmp_path / "no-such-folder")
    assert {table: _rows(database, table) for table in INDEX_TABLES} == before


def test_two_repos_sharing_files_store_them_once(
    database: Database, fake_vllm: FakeRepo, fake_lmcache: FakeRepo
) -> None:
    Path("annotate.toml").write_text(
        f'sources = ["git"]\n[repos.vllm]\ngit = "{fake_vllm.url}"\n'
        f'[repos.lmcache]\ngit = "{fake_lmcache.url}"\n'
    )
    config = load_config()
    index_version(database, config, "vllm", "v0.1.0")
    outcome = index_version(database, config, "lmcache", "v0.5.1")
    lmcache = {blob_id(d) for d in fv.regular_files(fv.LMCACHE_VERSIONS["v0.5.1"]).values()}
    assert outcome.new_blobs == len(lmcache - _blobs("v0.1.0"))  # the empty __init__ is shared
    assert outcome.new_blobs < len(lmcache)
    assert database.conn.execute("SELECT name FROM repos ORDER BY name").fetchall() == [
        ("lmcache",), ("vllm",),
    ]


# ------------------------------------------------------------------------------ local trees


def _tree(root: Path, count: int) -> Path:
    root.mkdir()
    for number in range(count):
        (root / f"module_{number:03d}.py").write_text(
            f"class C{number}:\n    x = {number}\n\n    def m(self):\n        return {number}\n"
        )
    (root / "notes.txt").write_text("not python\n")
    return root


def test_worker_pool_gives_the_same_index(
    tmp_path: Path, config: ProjectConfig
) -> None:
    count = pipeline.INLINE_PARSE_LIMIT + 20  # enough for the pool
    tree = _tree(tmp_path / "tree", count)
    results = {}
    for workers in (1, 2):
        with open_database(tmp_path / f"w{workers}.db") as database:
            outcome = index_version(
                database, config, "vllm", "v1", from_path=tree, workers=workers
            )
            results[workers] = (outcome.parsed, outcome.symbols, _rows(database, "symbols"))
    assert results[1] == results[2]
    assert results[1][:2] == (count, 3 * count)


def test_the_last_batches_are_small_so_that_the_workers_finish_together(
    tmp_path: Path, config: ProjectConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A last batch of 512 KiB (~0.1 s of a cold index of vLLM) kept one worker busy while
    the others had nothing left to do. The batches shrink as the bytes left do."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for number in range(32):  # 2 MiB in all: four full batches
        (tree / f"module_{number:02d}.py").write_text(f"x = {number}\n".ljust(64 * 1024, "#"))
    batches: list[list[str]] = []

    def recording(batch: pipeline.Batch, references: bool = True) -> list[queries.BlobRow]:
        batches.append([blob_id for blob_id, _, _, _ in batch])
        return parse_batch(batch, references)

    monkeypatch.setattr(pipeline, "parse_batch", recording)
    with open_database(tmp_path / "index.db") as database:
        outcome = index_version(database, config, "vllm", "v1", from_path=tree, workers=1)
    assert outcome.parsed == 32
    assert [len(batch) for batch in batches] == [8, 8, 8, 4, 2, 1, 1]
    assert sum(batches, []) == [blob_id(path.read_bytes()) for path in sorted(tree.iterdir())]


def _pipes_may_be_widened() -> bool:
    """Linux lets a user widen a pipe up to /proc/sys/fs/pipe-max-size (root beyond)."""
    limit = Path("/proc/sys/fs/pipe-max-size")
    return os.geteuid() == 0 or int(limit.read_text()) >= pipeline.PIPE_BYTES


def _pipes(pid: int) -> dict[str, list[int]]:
    """The pipes process ``pid`` has open ('pipe:[INODE]'), each with its descriptors."""
    found: dict[str, list[int]] = {}
    for entry in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # a listing's own descriptor, closed since
            if (target := os.readlink(entry)).startswith("pipe:"):
                found.setdefault(target, []).append(int(entry.name))
    return found


@pytest.mark.skipif(sys.platform != "linux" or not _pipes_may_be_widened(),
                    reason="pipes are widened on Linux, up to the system's limit")
def test_the_parser_pools_pipes_hold_a_batch_whole() -> None:
    """Through Linux's default 64 KiB pipes a worker waited for the main process, busy
    writing to SQLite, at every 64 KiB of the batch it took and of the rows it gave back:
    about 11 waits a batch, when indexing vLLM 0.20.0, against 1 with 1 MiB pipes. Every
    pipe the pool opened, which its worker shares, holds a batch whole."""
    before = _pipes(os.getpid())
    pool = pipeline.parser_pool(1)
    try:  # the pipes made with the pool (the worker's start makes others, of no data)
        made = {pipe: ends for pipe, ends in _pipes(os.getpid()).items() if pipe not in before}
        sizes = [fcntl.fcntl(ends[0], fcntl.F_GETPIPE_SZ) for ends in made.values()]
        shared = set(made) <= set(_pipes(pool.submit(os.getpid).result()))
    finally:
        pool.shutdown()
    assert len(sizes) >= 2 and shared
    assert min(sizes) >= 2 * pipeline.BATCH_BYTES


def test_the_pools_rows_are_let_go_once_taken() -> None:
    """Held until the version is committed, the rows of every batch stayed in memory (24 MB
    more at the peak of a cold index of vLLM) and were freed after it, with one core idle.
    Each task is let go once its rows are taken: only those not taken are held."""
    batches = [[(blob_id(data), True, data, False)]
               for data in (b"def a(): pass\n", b"def b(): pass\n", b"class C: pass\n")]
    pool = pipeline.parser_pool(1)
    try:
        sent = collections.deque([pipeline.submit(pool, parse_batch, batches[0])])
        rows = pipeline._pooled(pool, parse_batch, batches[1:], pipeline._NoProgress(), sent)
        held = []
        for row in rows:
            held.append(len(sent))
            assert row.symbols
    finally:
        pool.shutdown()
    assert held == [2, 1, 0]


def test_the_pools_rows_come_back_as_the_worker_made_them() -> None:
    """Rows cross from the workers as marshal data: every field comes back, in its place
    and of its type (a bool stays a bool, a tuple a tuple, bytes bytes)."""
    sources = [b"import os\nfrom . import a as b\nX: int = 1\nclass C:\n    def m(self): pass\n",
               b"def broken(:\n", b"# caf\xe9\nx = 1\n", b"\0binary"]
    batch = [(blob_id(data), data != b"\0binary", data, True) for data in sources]
    pool = pipeline.parser_pool(1)
    try:
        rows = list(pipeline._pooled(pool, parse_batch, [batch], pipeline._NoProgress()))
    finally:
        pool.shutdown()
    assert rows == parse_batch(batch)
    assert [(row.has_errors, row.decode_errors, row.skipped) for row in rows] == [
        (False, False, None), (True, False, None), (False, True, None),
        (False, False, pipeline.BINARY)]
    assert [(type(row.parsed), type(row.content)) for row in rows] == [(bool, bytes)] * 3 + [
        (bool, type(None))]


def test_progress_is_reported_per_parsed_blob(
    tmp_path: Path, database: Database, config: ProjectConfig
) -> None:
    events: list[tuple] = []

    class Recorder:
        def start(self, label: str, total: int) -> None:
            events.append(("start", label, total))

        def advance(self, count: int) -> None:
            events.append(("advance", count))

        def finish(self) -> None:
            events.append(("finish",))

    tree = _tree(tmp_path / "tree", 5)
    index_version(database, config, "vllm", "v1", from_path=tree, progress=Recorder())
    assert events[0] == ("start", "vllm@v1", 6)
    assert sum(event[1] for event in events if event[0] == "advance") == 6
    assert events[-1] == ("finish",)


def test_local_version_records_no_source_id(
    tmp_path: Path, database: Database, config: ProjectConfig
) -> None:
    outcome = index_version(database, config, "vllm", "v1", from_path=_tree(tmp_path / "t", 2))
    assert (outcome.source, outcome.source_id) == ("local", None)
    assert database.conn.execute(
        "SELECT source, commit_sha, wheel_sha256 FROM versions"
    ).fetchone() == ("local", None, None)


# ------------------------------------------------------------------------------ blob rows

BATCH = [
    pytest.param("a.py", b"def f():\n    pass\n", True, None, 1, id="python"),
    pytest.param("a.txt", b"def f():\n    pass\n", False, None, 0, id="text-not-parsed"),
    pytest.param("a.py", b"\x00\x01binary", False, "binary", 0, id="binary-python-path"),
    pytest.param("a.so", b"\x7fELF\x00\x00", False, "binary", 0, id="binary"),
    pytest.param("a.py", b"", True, None, 0, id="empty-python"),
]


@pytest.mark.parametrize(("path", "data", "parsed", "skipped", "symbols"), BATCH)
def test_parse_batch_rows(
    path: str, data: bytes, parsed: bool, skipped: str | None, symbols: int
) -> None:
    (row,) = parse_batch([(blob_id(data), path.endswith(".py"), data, True)])
    assert (row.blob_id, row.size, row.parsed, row.skipped) == (
        blob_id(data), len(data), parsed, skipped,
    )
    assert len(row.symbols) == symbols
    assert row.content is None if skipped == "binary" else zlib.decompress(row.content) == data


def test_large_non_python_files_are_listed_but_not_stored(
    tmp_path: Path, database: Database, config: ProjectConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "MAX_STORED_BYTES", 100)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "big.bin").write_bytes(b"x" * 200)
    (tree / "big.py").write_text("x = 1\n" * 40)
    (tree / "small.txt").write_text("small\n")
    index_version(database, config, "vllm", "v1", from_path=tree)
    rows = database.conn.execute(
        "SELECT f.path, b.size, b.content IS NULL, b.parsed, b.skipped FROM files f"
        " JOIN blobs b ON b.id = f.blob_id ORDER BY f.path"
    ).fetchall()
    assert rows == [
        ("big.bin", 200, 1, 0, "too large to store"),
        ("big.py", 240, 0, 1, None),
        ("small.txt", 6, 0, 0, None),
    ]


# ------------------------------------------------------------ same content, other paths

SOURCE = "class Copied:\n    limit = 1\n\n    def run(self):\n        return self.limit\n"


def _write_tree(root: Path, paths: tuple[str, ...]) -> Path:
    root.mkdir()
    for path in paths:
        (root / path).write_text(SOURCE)
    return root


def _listed(database: Database, version: str) -> tuple[list[tuple], int]:
    """(path, qualname) of a version's symbols, by the query and the view; its count."""
    key = queries.require_version(database, "vllm", version, config_name="annotate.toml")
    listed = [(row["path"], row["qualname"]) for row in queries.version_symbols(database, key)]
    viewed = database.conn.execute(
        "SELECT path, qualname FROM version_symbols WHERE version = ? ORDER BY path, symbol_id",
        (version,),
    ).fetchall()
    assert listed == viewed
    count = database.conn.execute(
        "SELECT symbol_count FROM versions WHERE id = ?", (key,)).fetchone()[0]
    return listed, count


@pytest.mark.parametrize("paths", [
    pytest.param(("mod.py", "mod.py.txt"), id="python-path-sorted-first"),
    pytest.param(("a.txt", "b.py"), id="python-path-sorted-last"),
])
def test_a_blob_at_python_and_other_paths_is_parsed_and_listed_at_the_python_one(
    tmp_path: Path, database: Database, config: ProjectConfig, paths: tuple[str, ...]
) -> None:
    tree = _write_tree(tmp_path / "tree", paths)
    outcome = index_version(database, config, "vllm", "v1", from_path=tree)
    python_path = next(path for path in paths if path.endswith(".py"))
    expected = [(python_path, q) for q in ("Copied", "Copied.limit", "Copied.run")]
    assert (outcome.new_blobs, outcome.parsed, outcome.symbols) == (1, 1, 3)
    assert _listed(database, "v1") == (expected, 3)


ACROSS_VERSIONS = [
    pytest.param(("notes.txt",), ("notes.txt", "real.py"), 1024, id="text-then-python"),
    pytest.param(("notes.txt",), ("real.py",), 100, id="text-then-python-elsewhere"),
    pytest.param(("notes.txt",), ("real.py",), len(SOURCE) - 1,
                 id="too-large-text-then-python"),
    pytest.param(("real.py",), ("notes.txt",), 1024, id="python-then-text"),
]


@pytest.mark.parametrize(("first", "second", "store_limit"), ACROSS_VERSIONS)
def test_what_a_version_lists_does_not_depend_on_the_versions_indexed_before(
    tmp_path: Path, config: ProjectConfig, monkeypatch: pytest.MonkeyPatch,
    first: tuple[str, ...], second: tuple[str, ...], store_limit: int,
) -> None:
    monkeypatch.setattr(pipeline, "MAX_STORED_BYTES", store_limit)
    trees = {"v1": _write_tree(tmp_path / "v1", first), "v2": _write_tree(tmp_path / "v2", second)}
    for tree in trees.values():  # a version of no .py file is refused
        (tree / "__init__.py").write_text("")
    alone = {}
    for version, tree in trees.items():
        with open_database(tmp_path / f"{version}.db") as database:
            index_version(database, config, "vllm", version, from_path=tree)
            alone[version] = _listed(database, version)
    with open_database(tmp_path / "both.db") as database:
        for version, tree in trees.items():
            index_version(database, config, "vllm", version, from_path=tree)
        assert {version: _listed(database, version) for version in trees} == alone
        content = database.conn.execute("SELECT content FROM blobs WHERE id = ?",
                                        (blob_id(SOURCE.encode()),)).fetchone()[0]
    assert zlib.decompress(content) == SOURCE.encode()
    assert {count for _, count in alone.values()} == {0, 3}


def test_unparsed_python_blobs_of_a_schema_6_database_are_parsed_by_the_next_index(
    tmp_path: Path, config: ProjectConfig
) -> None:
    path = tmp_path / "index.db"
    with open_database(path) as database:
        index_version(database, config, "vllm", "v1",
                      from_path=_write_tree(tmp_path / "v1", ("notes.txt", "real.py")))
        expected = _listed(database, "v1")
    with connected(path) as conn:
        for table in EXTRACTED:  # as indexers before schema 7 could leave it
            conn.execute(f"DELETE FROM {table}")
        conn.execute("UPDATE blobs SET parsed = 0")
        conn.execute("UPDATE versions SET symbol_count = 0")
        undo_uses_pins(conn)
        conn.execute("PRAGMA user_version = 6")
    with open_database(path) as database:
        done, _ = pipeline.reextract_outdated(database)
        assert (done.previous, done.blobs, done.symbols_before, done.symbols_after) == (
            ("",), 1, 0, 3)
        assert _listed(database, "v1") == expected


def test_git_snapshot_blob_ids_are_the_repository_ones(
    database: Database, config: ProjectConfig, fake_vllm: FakeRepo
) -> None:
    index_version(database, config, "vllm", "v0.3.0")
    listed = subprocess.run(
        ["git", "ls-tree", "-r", "v0.3.0"], cwd=fake_vllm.path, env=fv.git_env(),
        capture_output=True, text=True, check=True,
    ).stdout
    expected = {
        line.split("\t")[1]: line.split()[2]
        for line in listed.splitlines() if not line.startswith("120000")
    }
    stored = dict(database.conn.execute(
        "SELECT path, blob_id FROM version_files WHERE version = 'v0.3.0'"
    ).fetchall())
    assert stored == expected
    assert queries.known_blobs(database, expected.values()) == set(expected.values())


# ------------------------------------------------------------------------------ re-extraction

OLD_EXTRACTOR = "extraction 0; tree-sitter 0.20.0; tree-sitter-python 0.20.0"
EXTRACTED = ("symbols", "blob_names", "imports")


def _extraction(database: Database) -> dict[str, list[tuple]]:
    """What extraction stored, without the symbols' row ids (new rows get new ids)."""
    conn = database.conn
    columns = ", ".join(SYMBOL_COLUMNS)
    found = {"symbols": sorted(conn.execute(f"SELECT {columns} FROM symbols").fetchall())}
    found.update({table: _rows(database, table) for table in EXTRACTED[1:]})
    found["blobs"] = sorted(conn.execute(
        "SELECT id, parsed, has_errors, decode_errors, skipped, extractor FROM blobs"
    ).fetchall())
    found["versions"] = conn.execute("SELECT version, symbol_count FROM versions").fetchall()
    return found


def _age(database: Database, where: str = "1") -> None:
    """Mark blobs as indexed by an older extractor that got some of them wrong."""
    with database.write() as conn:
        conn.execute(f"UPDATE blobs SET extractor = ? WHERE {where}", (OLD_EXTRACTOR,))
        conn.execute("DELETE FROM symbols WHERE id IN (SELECT id FROM symbols LIMIT 3)")
        conn.execute("UPDATE symbols SET normalized = 'stale', shape = NULL")
        conn.execute("DELETE FROM imports WHERE rowid IN (SELECT rowid FROM imports LIMIT 2)")
        conn.execute("UPDATE blob_names SET names = ' stale '")
        conn.execute("UPDATE blobs SET has_errors = 1 - has_errors WHERE parsed = 1")
        conn.execute("UPDATE versions SET symbol_count = 0")
        conn.execute("INSERT INTO match_cache VALUES (1, 2, 'a.py', 'f', 'x', 1, 'e', '{}')")
        conn.execute("INSERT INTO diff_cache VALUES (1, 2, 'before', x'00')")
        conn.execute("INSERT INTO meta VALUES ('link_signature', 'before')")
        conn.execute("INSERT INTO link_files VALUES ('a.yml', 0, 'before', x'00')")


def _index_tags(database: Database, config: ProjectConfig) -> dict[str, list[tuple]]:
    for tag in fv.TAGS:
        index_version(database, config, "vllm", tag)
    return _extraction(database)


def test_blobs_of_another_extractor_are_parsed_again(
    database: Database, config: ProjectConfig
) -> None:
    fresh = _index_tags(database, config)
    python_blobs = _python_blobs("v0.1.0") | _python_blobs("v0.2.0") | _python_blobs("v0.3.0")
    symbols = len(fresh["symbols"])
    _age(database)
    done, seconds = pipeline.reextract_outdated(database)
    assert done == queries.Reextraction(
        (OLD_EXTRACTOR,), len(python_blobs), symbols - 3, symbols, len(python_blobs))
    assert seconds > 0
    assert _extraction(database) == fresh
    conn = database.conn
    assert conn.execute("SELECT count(*) FROM match_cache").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM diff_cache").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM meta WHERE key = 'link_signature'").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM link_files").fetchone()[0] == 0
    assert pipeline.reextract_outdated(database) is None


def _symbol_ids(database: Database) -> dict[str, list[int]]:
    ids: dict[str, list[int]] = {}
    for blob, symbol in database.conn.execute("SELECT blob_id, id FROM symbols ORDER BY id"):
        ids.setdefault(blob, []).append(symbol)
    return ids


def test_a_new_extractor_that_extracts_the_same_only_stamps_the_blobs(
    database: Database, config: ProjectConfig
) -> None:
    fresh = _index_tags(database, config)
    ids = _symbol_ids(database)
    with database.write() as conn:
        conn.execute("UPDATE blobs SET extractor = ?", (OLD_EXTRACTOR,))
        conn.execute("INSERT INTO match_cache VALUES (1, 2, 'a.py', 'f', 'x', 1, 'e', '{}')")
        conn.execute("INSERT INTO meta VALUES ('link_signature', 'before')")
    done, _ = pipeline.reextract_outdated(database)
    assert done.changed == 0 and done.blobs > 0
    assert _extraction(database) == fresh
    assert _symbol_ids(database) == ids  # no row rewritten
    conn = database.conn
    assert conn.execute("SELECT count(*) FROM match_cache").fetchone()[0] == 1
    assert conn.execute("SELECT value FROM meta WHERE key = 'link_signature'").fetchone()[0] == (
        "before")


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param("UPDATE symbols SET end_line = end_line + 1 WHERE id = {symbol}", id="symbol"),
        pytest.param("DELETE FROM symbols WHERE id = {symbol}", id="missing-symbol"),
        pytest.param("UPDATE blob_names SET names = ' x ' WHERE blob_id = '{blob}'", id="names"),
        pytest.param("DELETE FROM blob_names WHERE blob_id = '{blob}'", id="missing-names"),
        pytest.param("UPDATE imports SET level = 3 WHERE rowid = "
                     "(SELECT min(rowid) FROM imports WHERE blob_id = '{blob}')", id="import"),
        pytest.param("INSERT INTO imports SELECT * FROM imports WHERE rowid = "
                     "(SELECT min(rowid) FROM imports WHERE blob_id = '{blob}')",
                     id="repeated-import"),
        pytest.param("UPDATE blobs SET has_errors = 1 WHERE id = '{blob}'", id="flag"),
    ],
)
def test_only_the_blobs_whose_extraction_differs_are_rewritten(
    database: Database, config: ProjectConfig, damage: str
) -> None:
    fresh = _index_tags(database, config)
    ids = _symbol_ids(database)
    blob = database.conn.execute(
        "SELECT blob_id FROM imports GROUP BY blob_id ORDER BY count(*) DESC").fetchone()[0]
    with database.write() as conn:
        conn.execute("UPDATE blobs SET extractor = ?", (OLD_EXTRACTOR,))
        conn.execute(damage.format(blob=blob, symbol=ids[blob][0]))
        conn.execute("INSERT INTO meta VALUES ('link_signature', 'before')")
    done, _ = pipeline.reextract_outdated(database)
    assert done.changed == 1
    assert _extraction(database) == fresh
    after = _symbol_ids(database)
    assert {b: i for b, i in after.items() if b != blob} == {
        b: i for b, i in ids.items() if b != blob}
    assert after[blob] != ids[blob]
    assert "link_signature" not in {key for key, in database.conn.execute("SELECT key FROM meta")}


def test_only_the_outdated_blobs_are_parsed_again(
    database: Database, config: ProjectConfig
) -> None:
    fresh = _index_tags(database, config)
    one_blob = blob_id(fv.python_files("v0.1.0")["vllm/config/cache.py"])
    _age(database, f"id = '{one_blob}'")
    done, _ = pipeline.reextract_outdated(database)
    assert (done.previous, done.blobs) == ((OLD_EXTRACTOR,), 1)
    repaired = _extraction(database)
    assert repaired["blobs"] != fresh["blobs"]  # the others keep what _age did to them
    assert [row for row in repaired["symbols"] if row[0] == one_blob] == [
        row for row in fresh["symbols"] if row[0] == one_blob
    ]


def test_an_outdated_non_python_blob_is_stamped_without_parsing(
    database: Database, config: ProjectConfig
) -> None:
    fresh = _index_tags(database, config)
    _age(database, "parsed = 0 AND skipped IS NULL")
    before = _extraction(database)
    assert before["blobs"] != [row[:-1] + (OLD_EXTRACTOR,) for row in fresh["blobs"]]
    done, _ = pipeline.reextract_outdated(database)
    assert (done.blobs, done.symbols_before, done.symbols_after) == (0, 0, 0)
    after = _extraction(database)
    assert after["blobs"] == [row[:-1] + (extractor_id(),) for row in before["blobs"]]
    assert after["symbols"] == before["symbols"] != fresh["symbols"]


def test_interrupted_reextraction_changes_nothing(
    database: Database, config: ProjectConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    _index_tags(database, config)
    _age(database)
    aged = _extraction(database)
    calls = iter(range(1000))

    def parse_then_fail(*args: object, **kwargs: object) -> object:
        if next(calls) == 5:
            raise KeyboardInterrupt
        return parse_blob(*args, **kwargs)

    monkeypatch.setattr(pipeline, "parse_blob", parse_then_fail)
    with pytest.raises(KeyboardInterrupt):
        pipeline.reextract_outdated(database)
    assert _extraction(database) == aged
    monkeypatch.undo()
    assert pipeline.reextract_outdated(database) is not None


def test_reextraction_in_the_worker_pool_gives_the_same_rows(
    tmp_path: Path, config: ProjectConfig, forks: list[int]
) -> None:
    tree = _tree(tmp_path / "tree", pipeline.INLINE_PARSE_LIMIT + 20)
    results = {}
    for workers in (1, 2):
        with open_database(tmp_path / f"w{workers}.db") as database:
            index_version(database, config, "vllm", "v1", from_path=tree, workers=1)
            fresh = _extraction(database)
            _age(database)
            forks.clear()
            pipeline.reextract_outdated(database, workers=workers)
            results[workers] = (_extraction(database), len(forks))
            assert results[workers][0] == fresh
    assert (results[1][1], results[2][1]) == (0, 2)


def test_blobs_indexed_without_references_get_them_at_the_next_run(
    tmp_path: Path, database: Database, config: ProjectConfig
) -> None:
    tree = _tree(tmp_path / "tree", 3)
    index_version(database, config, "vllm", "v1", from_path=tree, references=False)
    assert _rows(database, "blob_names") == []
    done, _ = pipeline.reextract_outdated(database)
    assert done.blobs == 3
    assert len(_rows(database, "blob_names")) == 3
    assert pipeline.reextract_outdated(database) is None


def test_extractor_names_the_extraction_and_parser_versions() -> None:
    """Read from the parser and its grammar, the versions are those the packages' metadata
    gives: another spelling would make every index extract all of its blobs again."""
    assert extractor_id() == (
        f"extraction {EXTRACTION_VERSION}; tree-sitter {metadata.version('tree-sitter')}; "
        f"tree-sitter-python {metadata.version('tree-sitter-python')}")


def test_extractor_reads_the_metadata_of_a_grammar_that_states_no_version(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """A grammar of ABI 14 (tree-sitter-python before 0.25) has no semantic version."""

    class Unversioned:
        def __init__(self, pointer: object) -> None:
            self.semantic_version = None

    monkeypatch.setattr(tree_sitter, "Language", Unversioned)
    monkeypatch.delattr(tree_sitter, "__version__", raising=False)  # 0.25 has none
    extractor_id.cache_clear()
    try:
        assert extractor_id().endswith(
            f"; tree-sitter {metadata.version('tree-sitter')}; "
            f"tree-sitter-python {metadata.version('tree-sitter-python')}")
    finally:
        extractor_id.cache_clear()


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt, as in a terminal, whatever pytest was started with:
    run in the background of a script (``pytest &``) it has SIGINT ignored, and the run's
    shutdown leaves an ignored signal ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _interrupt_the_parent(go: int) -> None:
    """Worker task: once told the parent is shutting the pool down, Ctrl-C it, then work
    on a moment (the shutdown waits for this task)."""
    os.read(go, 1)
    os.kill(os.getppid(), signal.SIGINT)
    time.sleep(0.3)


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_while_the_pool_shuts_down_waits_for_it_then_stops_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Ctrl-C that lands while the parser pool shuts down (the last results taken, the
    version not yet committed) lets the shutdown finish, then still stops the run: it was
    once swallowed there, and the version committed as if nobody had asked to stop."""
    go_read, go_write = os.pipe()  # before the pool: its worker inherits it
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"),
                               initializer=pipeline.start_worker)
    shutdown = ProcessPoolExecutor.shutdown

    def telling_shutdown(pool: ProcessPoolExecutor, *args: object, **kwargs: object) -> None:
        os.write(go_write, b"g")  # the Ctrl-C comes while this shutdown waits for the task
        shutdown(pool, *args, **kwargs)

    try:
        task = pool.submit(_interrupt_the_parent, go_read)
        while not task.running():  # handed to the worker: the shutdown will not cancel it
            time.sleep(0.01)
        workers = list(pool._processes.values())
        monkeypatch.setattr(ProcessPoolExecutor, "shutdown", telling_shutdown)
        with pytest.raises(KeyboardInterrupt):
            pipeline.shut_down(pool)
        assert task.done() and not task.cancelled() and task.exception() is None
        assert all(worker.exitcode == 0 for worker in workers)
    finally:
        shutdown(pool, wait=True)
        os.close(go_read)
        os.close(go_write)


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_while_the_pool_shuts_down_after_a_failed_write_stops_the_run(
    tmp_path: Path, database: Database, config: ProjectConfig,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A write that fails mid-version (a full disk, or the first of the two SIGINTs of
    ``timeout -s INT``) shuts the parser pool down, and a Ctrl-C meanwhile is raised to
    the caller once the pool is down. It was raised where the garbage collector closed the
    parser stream: printed as 'Exception ignored in: <generator object _blob_rows>' with a
    traceback, and lost."""
    tree = _tree(tmp_path / "tree", 300)  # a first batch of 256 rows leaves the stream open
    shutdown = ProcessPoolExecutor.shutdown

    def interrupted_shutdown(pool: ProcessPoolExecutor, *args: object, **kwargs: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # lands in shut_down, which notes it
        shutdown(pool, *args, **kwargs)

    def full_disk(*args: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(ProcessPoolExecutor, "shutdown", interrupted_shutdown)
    monkeypatch.setattr(queries, "_insert_blobs", full_disk)
    unraisable: list[object] = []
    monkeypatch.setattr("sys.unraisablehook", unraisable.append)
    with pytest.raises(KeyboardInterrupt):
        index_version(database, config, "vllm", "v1", from_path=tree, workers=2)
    assert unraisable == []
    assert queries.version_id(database, "vllm", "v1") is None


class _Stop(Exception):
    """What the CLI's SIGTERM and SIGHUP handler raises (Terminated), in these tests."""


@pytest.mark.parametrize("signum", [
    pytest.param(signal.SIGINT, id="Ctrl-C"),
    pytest.param(signal.SIGTERM, id="SIGTERM"),
    pytest.param(signal.SIGHUP, id="SIGHUP"),
])
@pytest.mark.usefixtures("ctrl_c_raises")
def test_a_signal_that_stops_the_run_is_handled_once_the_pool_is_down(
    signum: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``timeout annotate index`` sends SIGTERM to the run, then to its process group: the
    second one, landing while the parser pool shut down after the first, was raised inside
    the wait, and the run hung at exit (7 of 8 runs with the two 30-100 ms apart). It is
    noted until the pool is down, then handled as it would have been."""
    def stop(signum: int, frame: object) -> None:
        raise _Stop(signum)

    handlers = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"),
                               initializer=pipeline.start_worker)
    shutdown = ProcessPoolExecutor.shutdown

    def signalled_shutdown(pool: ProcessPoolExecutor, *args: object, **kwargs: object) -> None:
        os.kill(os.getpid(), signum)  # lands in shut_down, before the wait
        shutdown(pool, *args, **kwargs)

    try:
        task = pool.submit(time.sleep, 0.3)
        while not task.running():
            time.sleep(0.01)
        workers = list(pool._processes.values())
        monkeypatch.setattr(ProcessPoolExecutor, "shutdown", signalled_shutdown)
        with pytest.raises(KeyboardInterrupt if signum == signal.SIGINT else _Stop):
            pipeline.shut_down(pool)
        assert task.done() and not task.cancelled() and task.exception() is None
        assert all(worker.exitcode == 0 for worker in workers)
    finally:
        shutdown(pool, wait=True)
        for other, handler in handlers.items():
            signal.signal(other, handler)


# ---------------------------------------------------------------- wheels parsed as read

AHEAD_MODULES = 320
"""Enough members for the pool (`INLINE_PARSE_LIMIT`) and, at 8 KiB each, for full batches
sent while the wheel is still read (`BATCH_BYTES`), as for vLLM's."""


def _module(number: int) -> bytes:
    code = f"class C{number}:\n    x = {number}\n\n    def m(self):\n        return {number}\n"
    return code.ljust(8 * 1024, "#").encode() + b"\n"


def _wheel(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr("vllm-1.0.dist-info/METADATA", "Name: vllm\n")
    return path


def _modules(numbers: range) -> dict[str, bytes]:
    return {f"vllm/m{number:03d}.py": _module(number) for number in numbers}


def _scrambled(wheel: Path, member: str) -> Path:
    """``wheel`` with the deflate data of ``member`` scrambled past its first bytes: a zip
    still, whose member no longer inflates."""
    data = bytearray(wheel.read_bytes())
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo(member)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for offset in range(start + 2, start + 18):
        data[offset] ^= 0xFF
    wheel.write_bytes(bytes(data))
    return wheel


@pytest.fixture
def sent_ahead(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many blobs each index run of the test had sent to the parsers by the time the
    wheel was read."""
    counts: list[int] = []
    sent_of = pipeline._ParseAhead.sent_of

    def counting(ahead: pipeline._ParseAhead, *args: object) -> int:
        counts.append(sent_of(ahead, *args))  # type: ignore[arg-type]
        return counts[-1]

    monkeypatch.setattr(pipeline._ParseAhead, "sent_of", counting)
    return counts


def _first_wheel(tmp_path: Path) -> Path:
    return _wheel(tmp_path / "first.whl", _modules(range(0, AHEAD_MODULES, 2)))


def _first_tree(tmp_path: Path) -> Path:
    """The modules' code at paths that are not Python: stored, never parsed."""
    tree = tmp_path / "texts"
    tree.mkdir(exist_ok=True)
    for number in range(AHEAD_MODULES):
        (tree / f"m{number:03d}.txt").write_bytes(_module(number))
    (tree / "setup.py").write_text("x = 1\n")  # a version has a .py file
    return tree


AHEAD_CASES = [
    pytest.param(None, _modules(range(AHEAD_MODULES)), id="cold"),
    pytest.param(None, {"vllm/__init__.py": b"", **_modules(range(200)),
                        "vllm/z/again.py": _module(0), "vllm/z/__init__.py": b"",
                        **_modules(range(200, AHEAD_MODULES))},
                 id="same-blobs-at-paths-far-apart"),
    pytest.param(_first_wheel, _modules(range(AHEAD_MODULES)), id="half-indexed-already"),
    pytest.param(_first_tree, _modules(range(AHEAD_MODULES)),
                 id="stored-unparsed-now-at-py-paths"),
]


@pytest.mark.parametrize(("before", "files"), AHEAD_CASES)
def test_a_wheel_parsed_as_it_is_read_gives_the_index_of_one_read_first(
    tmp_path: Path, config: ProjectConfig, sent_ahead: list[int],
    before: object, files: dict[str, bytes],
) -> None:
    """Its new blobs sent to the parsers while the wheel is read, a version is indexed as
    when they were sent once it was read whole (one worker: none is sent ahead): the same
    rows in every table, each blob once."""
    wheel = _wheel(tmp_path / "vllm-2.0-py3-none-any.whl", files)
    indexes = {}
    for workers in (1, 2):
        with open_database(tmp_path / f"w{workers}.db") as database:
            if before is not None:
                index_version(database, config, "vllm", "v1", workers=1,
                              from_path=before(tmp_path))  # type: ignore[operator]
            outcome = index_version(database, config, "vllm", "v2", from_path=wheel,
                                    workers=workers)
            indexes[workers] = (outcome.new_blobs, outcome.parsed, outcome.symbols,
                                {table: _rows(database, table) for table in AHEAD_TABLES})
    assert sent_ahead[-1] > 0  # the workers had batches before the wheel was read whole
    assert indexes[2] == indexes[1]
    assert indexes[1][1] == len({blob_id(data) for data in files.values()}) - (
        AHEAD_MODULES // 2 if before is _first_wheel else 0)


AHEAD_TABLES = ("repos", "blobs", "files", "symbols", "imports", "blob_names")


@pytest.mark.parametrize("source", ["from", "cache"])
def test_a_member_that_does_not_inflate_late_in_the_wheel_stores_nothing(
    tmp_path: Path, config: ProjectConfig, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    """A member found corrupt once batches were parsed: the same error as when it was
    found before any, the cached wheel removed alike, the parser pool down, and nothing
    of the version stored."""
    files = _modules(range(AHEAD_MODULES))
    pools: list[int] = []
    make_pool = pipeline.parser_pool
    monkeypatch.setattr(pipeline, "parser_pool", lambda n: pools.append(n) or make_pool(n))
    if source == "cache":
        Path("annotate.toml").write_text('sources = ["pypi"]\n')
        config = load_config()
    cache = config.cache_dir / "wheels" / "vllm" / "2.0"
    cache.mkdir(parents=True)
    errors = {}
    for workers in (1, 2):
        wheel = _wheel(cache / "vllm-2.0-py3-none-any.whl", files)
        _scrambled(wheel, f"vllm/m{AHEAD_MODULES - 10:03d}.py")
        with open_database(tmp_path / f"w{workers}.db") as database:
            with pytest.raises(SourceError) as caught:
                index_version(database, config, "vllm", "v2.0", workers=workers,
                              from_path=wheel if source == "from" else None)
            errors[workers] = (type(caught.value), str(caught.value), caught.value.hint,
                               wheel.exists(), table_counts(database))
        assert multiprocessing.active_children() == []
    assert pools == [2]  # parsing had started when the member was read
    assert errors[2] == errors[1]
    assert errors[1][1].startswith(
        "the wheel " if source == "from" else "vllm@v2.0 was not found (pypi: the wheel ")
    assert errors[1][3] is (source == "from")
    assert set(errors[1][4].values()) == {0}


def test_a_wheel_found_corrupt_once_parsed_ahead_gives_way_to_the_next_source(
    tmp_path: Path, fake_vllm: FakeRepo, sent_ahead: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With pypi tried before git, a cached wheel whose late member does not inflate is
    passed over as before, though its first batches were parsed: the version is git's,
    indexed as git alone would index it, and nothing of the wheel is stored."""
    Path("annotate.toml").write_text(
        f'sources = ["pypi", "git"]\n[repos.vllm]\ngit = "{fake_vllm.url}"\n')
    config = load_config()
    cache = config.cache_dir / "wheels" / "vllm" / "0.1.0"
    cache.mkdir(parents=True)
    wheel = _wheel(cache / "vllm-0.1.0-py3-none-any.whl", _modules(range(AHEAD_MODULES)))
    _scrambled(wheel, f"vllm/m{AHEAD_MODULES - 10:03d}.py")
    pools: list[int] = []
    make_pool = pipeline.parser_pool
    monkeypatch.setattr(pipeline, "parser_pool", lambda n: pools.append(n) or make_pool(n))
    with open_database(tmp_path / "ahead.db") as database:
        outcome = index_version(database, config, "vllm", "v0.1.0", workers=2)
        indexed = {table: _rows(database, table) for table in AHEAD_TABLES}
    Path("annotate.toml").write_text(
        f'sources = ["git"]\n[repos.vllm]\ngit = "{fake_vllm.url}"\n')
    with open_database(tmp_path / "git.db") as database:
        index_version(database, load_config(), "vllm", "v0.1.0", workers=1)
        assert indexed == {table: _rows(database, table) for table in AHEAD_TABLES}
    assert outcome.source == "git" and not wheel.exists()
    assert outcome.passed_over[0].startswith("pypi: the wheel vllm-0.1.0-py3-none-any.whl is "
                                             "unreadable (vllm/m310.py: ")
    assert pools == [2]  # the wheel's first batches were parsed: git's few blobs need no pool
    assert sent_ahead[0] == 0  # and dropped
    assert multiprocessing.active_children() == []


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_while_the_wheel_is_read_and_parsed_stops_the_pool_and_stores_nothing(
    tmp_path: Path, database: Database, config: ProjectConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = _wheel(tmp_path / "vllm-2.0-py3-none-any.whl", _modules(range(AHEAD_MODULES)))
    checks: list[int] = []
    entries_to_store = pipeline._entries_to_store

    def interrupted(*args: object) -> object:
        checks.append(len(checks))
        if len(checks) == 3:  # the pool started at the second
            os.kill(os.getpid(), signal.SIGINT)
        return entries_to_store(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "_entries_to_store", interrupted)
    with pytest.raises(KeyboardInterrupt):
        index_version(database, config, "vllm", "v2", from_path=wheel, workers=2)
    assert multiprocessing.active_children() == []
    assert set(table_counts(database).values()) == {0}
