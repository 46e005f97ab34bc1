"""Several ``annotate`` processes on one database at once: each finishes with the right
result, and a writer that has to wait says so (one line on stderr) instead of failing.

Every test runs the real console script in separate processes on a real SQLite file; the
long-running writer indexes a synthetic tree of 2000 modules (about 2 s of work).
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import fakevllm as fv
import pytest
from fakeproject import DB, connected, held_writer

from db.database import open_database
from db.schema import MIGRATIONS, SCHEMA_VERSION
from indexer.symbols import parse_blob

FILES = 2000
CHANGED = 20
WAITING = "waiting for another annotate process to finish writing {db}\n"
ANNOUNCED_WRITE = Path(__file__).with_name("announced_write.py")


def _annotate() -> list[str]:
    script = Path(sys.executable).with_name("annotate")
    return [str(script)] if script.exists() else [shutil.which("annotate") or "annotate"]


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([*_annotate(), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ),
                            start_new_session=True)


def read_line(process: subprocess.Popen, timeout: float = 30) -> str:
    """The next stderr line of ``process``, waiting at most ``timeout`` seconds."""
    assert process.stderr is not None
    ready, _, _ = select.select([process.stderr], [], [], timeout)
    assert ready, "no line on stderr in time"
    return process.stderr.readline()


def finish(process: subprocess.Popen, timeout: float = 120) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:  # timed out: it, and any parser workers it started
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert "Traceback" not in err, err
    return process.returncode, out, err


def annotate(*args: str, timeout: float = 120) -> tuple[int, str, str]:
    return finish(start(*args), timeout)


def module_text(number: int, edition: int = 0) -> str:
    lines = [f'"""Synthetic module {number}."""', "", f"LIMIT_{number} = {number + edition}", ""]
    for c in range(2):
        lines += [f"class Worker{c}x{number}:", f"    size = {c}", ""]
        for m in range(3):
            lines += [f"    def step_{m}(self, value: int = {m}) -> int:",
                      f"        return value * {number} + {m}", ""]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int]:
    """Two versions of 2000 modules that differ in CHANGED of them; symbols per module."""
    base = tmp_path_factory.mktemp("trees")
    for name in ("a", "b"):
        for number in range(FILES):
            path = base / name / f"pkg{number % 40}" / f"mod{number}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            edition = 1 if name == "b" and number < CHANGED else 0
            path.write_text(module_text(number, edition))
    return base / "a", base / "b", len(parse_blob("x", module_text(0).encode()).symbols)


def test_second_index_waits_for_the_first_and_both_are_complete(
    trees: tuple[Path, Path, int]
) -> None:
    tree_a, tree_b, per_file = trees
    Path("annotate.toml").write_text('[repos.vllm]\nsources = ["git"]\n')
    db = DB.resolve()
    with held_writer("index", "vllm@v9.0.0", "--from", str(tree_a)) as first:
        # the first holds the write lock for as long as it is held
        second = start("index", "vllm@v9.1.0", "--from", str(tree_b))
        assert read_line(second) == WAITING.format(db=db)  # after 2 s of silent waiting
        first.resume()
        code_a, out_a, err_a = finish(first.process)
    code_b, out_b, err_b = finish(second)
    assert (code_a, err_a) == (0, "")
    assert (code_b, err_b) == (0, "")
    assert out_a.startswith(f"vllm@v9.0.0: {FILES} files, {FILES} new blobs parsed, ")
    # it parsed all 2000 (none was stored when it looked), but stored only the 20 new ones
    assert out_b.startswith(f"vllm@v9.1.0: {FILES} files, {CHANGED} new blobs parsed, "
                            f"{CHANGED * per_file} new symbols, ")
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        rows = conn.execute(
            "SELECT version, file_count, new_blobs, symbol_count,"
            " (SELECT count(*) FROM files f WHERE f.version_id = v.id)"
            " FROM versions v ORDER BY version"
        ).fetchall()
        blobs, symbols = conn.execute(
            "SELECT (SELECT count(*) FROM blobs), (SELECT count(*) FROM symbols)"
        ).fetchone()
        doubled = conn.execute("SELECT count(*) FROM (SELECT 1 FROM symbols"
                               " GROUP BY blob_id, seq HAVING count(*) > 1)").fetchone()[0]
    assert rows == [
        ("v9.0.0", FILES, FILES, FILES * per_file, FILES),
        ("v9.1.0", FILES, CHANGED, FILES * per_file, FILES),  # shared blobs stored once
    ]
    assert (blobs, symbols, doubled) == (FILES + CHANGED, (FILES + CHANGED) * per_file, 0)


CLAIMS = """\
article: notes
at: vllm@v0.1.0
claims:
  - id: cdiv
    text: cdiv rounds up
    refs: [vllm/utils.py::cdiv]
  - id: config
    text: the cache configuration
    refs: [vllm/config/cache.py::CacheConfig.gpu_memory_utilization]
  - id: engine
    text: the engine steps
    refs: [vllm/engine/llm_engine.py::LLMEngine.step]
"""


def test_check_reads_and_link_waits_while_an_index_runs(
    trees: tuple[Path, Path, int], fake_vllm: fv.FakeRepo
) -> None:
    tree_a, _, _ = trees
    Path("annotate.toml").write_text(
        f'[repos.vllm]\nsources = ["git"]\ngit = "{fake_vllm.url}"\n'
        'versions = ["v0.1.0", "v0.3.0"]\n'
    )
    Path("annotations").mkdir()
    Path("annotations/notes.yml").write_text(CLAIMS)
    db = DB.resolve()
    assert annotate("index")[0] == 0
    link_code, link_out, _ = annotate("link")
    check_code, check_out, check_err = annotate("check")
    assert link_code == 0 and check_code in (0, 1) and "3 claims, 3 refs" in check_out
    with held_writer("index", "vllm@v9.0.0", "--from", str(tree_a)) as writer:
        # the index holds the write lock throughout
        during = annotate("check", timeout=30)  # a reader does not wait for a writer
        assert during == (check_code, check_out, check_err)
        link_during = start("link")  # link writes: it waits for the index, and says so
        assert read_line(link_during) == WAITING.format(db=db)
        writer.resume()
        assert finish(writer.process)[0] == 0
    assert finish(link_during) == (0, link_out, "")
    assert annotate("check")[:2] == (check_code, check_out)


def _v1_database(path: Path) -> None:
    """A database of schema 1 as annotate left it: in WAL mode."""
    with connected(path) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(MIGRATIONS[0])
        conn.execute("PRAGMA user_version = 1")
        conn.execute("INSERT INTO repos (name) VALUES ('vllm')")
        conn.execute("INSERT INTO versions (repo, version, source, indexed_at, file_count,"
                     " symbol_count, new_blobs, seconds) VALUES ('vllm', 'v0.1.0', 'local',"
                     " '2024-01-01T00:00:00', 0, 0, 0, 0.1)")


def start_announcing_writes(ready: int, *args: str) -> subprocess.Popen:
    """``annotate ARGS`` that writes a byte to ``ready`` as it goes for the write lock
    (see announced_write.py)."""
    return subprocess.Popen([sys.executable, str(ANNOUNCED_WRITE), str(ready), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ), pass_fds=(ready,), start_new_session=True)


def wait_for_bytes(ready: int, count: int, timeout: float = 120) -> None:
    """Return once ``count`` bytes came on ``ready``; fail if its writers are all gone
    first, or the bytes do not come within ``timeout`` seconds."""
    got = b""
    while len(got) < count:
        readable, _, _ = select.select([ready], [], [], timeout)
        assert readable, f"{len(got)} of {count} runs went for the write lock in time"
        chunk = os.read(ready, count - len(got))
        assert chunk, f"the runs ended after {len(got)} of {count} went for the write lock"
        got += chunk


def test_two_processes_opening_an_old_database_migrate_it_once() -> None:
    """Three runs read schema 1, then go for the write lock that the test holds: once all
    three wait for it, it is let go, and the first to take it migrates; the others find
    the database migrated."""
    db = Path("old.db").resolve()
    _v1_database(db)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    ready_read, ready_write = os.pipe()
    try:
        try:
            runs = [start_announcing_writes(ready_write, "--db", str(db), "versions",
                                            "--format", "json") for _ in range(3)]
        finally:
            os.close(ready_write)  # the runs' own: the pipe ends once they all have
        wait_for_bytes(ready_read, len(runs))
    finally:
        holder.rollback()
        holder.close()
        os.close(ready_read)
    results = [finish(run) for run in runs]
    assert [code for code, _, _ in results] == [0, 0, 0]
    assert len({out for _, out, _ in results}) == 1 and '"v0.1.0"' in results[0][1]
    notices = [err for _, _, err in results if "migrating" in err]
    backup = db.with_name("old.db.v1.bak")
    assert notices == [f"migrating {db} from schema 1 to {SCHEMA_VERSION}; backup at {backup}\n"]
    assert sorted(p.name for p in db.parent.glob("old.db*.bak")) == ["old.db.v1.bak"]
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert conn.execute("SELECT version FROM versions").fetchall() == [("v0.1.0",)]


def _files_open_on(path: Path) -> int:
    """How many of this process's descriptors are open on ``path`` (Linux's /proc)."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed since
            count += os.readlink(f"/proc/self/fd/{name}") == str(path)
    return count


@pytest.mark.skipif(not hasattr(os, "fork") or not Path("/proc/self/fd").is_dir(),
                    reason="needs os.fork and /proc")
def test_a_forked_child_keeps_the_connection_it_inherited_open(tmp_path: Path) -> None:
    """SQLite forbids closing a connection across fork, and Python closes one it frees:
    closing the file in the child would drop the locks of the child's own connection."""
    path = tmp_path / "index.db"
    database = open_database(path)
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            before = _files_open_on(path)
            database.reconnect_in_child()
            database.query("SELECT count(*) FROM symbols")
            gc.collect()
            os.write(writer, f"{before} {_files_open_on(path)}".encode())
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        before, after = map(int, pipe.read().split())
    os.waitpid(pid, 0)
    database.close()
    assert (before, after) == (1, 2)
