"""Faults: interrupted runs, failing sources, broken caches, full disks and odd databases.

Every case runs the real ``annotate`` (a subprocess, or the click command in-process with
real git, pip and SQLite underneath) and checks the same three things: the error is one
line naming the cause and the next step, the exit code is 2 (130 for Ctrl-C), and the
database holds exactly what it held before (a full SQL dump is compared).

Mount-based cases (a read-only disk, a full disk) mount a tiny tmpfs and are skipped with
the reason when mounting is not permitted (not root, or no CAP_SYS_ADMIN).
"""

from __future__ import annotations

import contextlib
import errno
import http.server
import io
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakevllm as fv
import pytest
from click.testing import Result
from fakeproject import DB, as_a_foreground_job, connected, held_writer
from fakeproject import invoke as run

from annotations.links import linkable
from db import database as database_module
from db.database import open_database
from db.schema import MIGRATIONS, SCHEMA_VERSION
from indexer import git_source, sources
from indexer.config import load_config
from indexer.symbols import parse_blob

FILES = 2000
"""Files of the synthetic tree the interruption tests index (about 2 s of work)."""
COUNTED = ("versions", "files", "blobs", "symbols")
INTERRUPTED = "Interrupted; nothing half-written was kept."


# ------------------------------------------------------------------------------ helpers


def _annotate() -> list[str]:
    script = Path(sys.executable).with_name("annotate")
    return [str(script)] if script.exists() else [shutil.which("annotate") or "annotate"]


NOT_FOUND_NOTE = "INSERT INTO \"meta\" VALUES('not_found:"
"""The row a fetch that failed leaves: which sources did not have the version (check's
advice then says so). The one row these faults may add."""


def dump(path: Path) -> list[str]:
    """Every row and every schema object of the database, as SQL, but a failed fetch's note."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return [line for line in conn.iterdump() if not line.startswith(NOT_FOUND_NOTE)]


def not_found_notes(path: Path) -> list[tuple[str, str]]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT * FROM meta WHERE key LIKE 'not_found:%'").fetchall()


def counts(path: Path) -> dict[str, int]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in COUNTED}


def one_error_line(result: Result, *needles: str) -> str:
    """The single stderr line of a failed run, checked to contain every needle."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _synthetic_module(number: int) -> str:
    lines = [f'"""Synthetic module {number}."""', "", f"LIMIT_{number} = {number}", ""]
    for c in range(2):
        lines += [f"class Worker{c}x{number}:", f"    size = {c}", ""]
        for m in range(3):
            lines += [
                f"    def step_{m}(self, value: int = {m}) -> int:",
                f"        total = value * {number} + {m}",
                "        return total if total > 10 else -total",
                "",
            ]
    lines += [f"def helper_{number}(a, b=1):", f"    return a + b + {number}", ""]
    return "\n".join(lines)


def write_synthetic_tree(root: Path, files: int = FILES) -> int:
    """``files`` Python modules under ``root``; returns the symbols the index must hold."""
    for number in range(files):
        path = root / "pkg" / f"sub{number % 50}" / f"mod{number}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_synthetic_module(number))
    per_file = len(parse_blob("x", _synthetic_module(0).encode()).symbols)
    return per_file * files


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    root = tmp_path_factory.mktemp("big") / "tree"
    return root, write_synthetic_tree(root)


@pytest.fixture(scope="module")
def small_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("small") / "tree"
    fv.write_snapshot(root, fv.VERSIONS["v0.1.0"])
    return root


@pytest.fixture
def indexed_db(small_tree: Path) -> Path:
    """An index holding vllm@v0.1.0 (from a directory), in the test's directory."""
    Path("annotate.toml").write_text('[repos.vllm]\nsources = ["git"]\nversions = ["v0.1.0"]\n')
    result = run("index", "vllm@v0.1.0", "--from", str(small_tree))
    assert result.exit_code == 0, result.output
    return DB.resolve()


# ------------------------------------------------------------------------------ interrupts


@pytest.mark.parametrize("signum", [
    pytest.param(signal.SIGINT, id="SIGINT-to-the-process-group"),
    pytest.param(-signal.SIGINT, id="SIGINT-to-the-process-then-its-group"),  # timeout -s INT
    pytest.param(signal.SIGTERM, id="SIGTERM-to-the-process-group"),
    pytest.param(signal.SIGKILL, id="SIGKILL-to-the-main-process"),
])
def test_interrupted_index_keeps_nothing_half_written(
    big_tree: tuple[Path, int], small_tree: Path, signum: int
) -> None:
    tree, symbols = big_tree
    Path("annotate.toml").write_text('[repos.vllm]\nsources = ["git"]\n')
    assert run("index", "vllm@v0.1.0", "--from", str(small_tree)).exit_code == 0
    db = DB
    before = dump(db)
    with held_writer("index", "vllm@v9.0.0", "--from", str(tree)) as held:
        assert dump(db) == before  # mid-write: its pages are in the WAL, uncommitted
        process = held.process
        if signum == signal.SIGKILL:
            process.kill()  # the main process only; its parser workers are left to notice
        elif signum < 0:  # what `timeout -s INT` does: the main process gets it twice
            process.send_signal(-signum)
            os.killpg(process.pid, -signum)
        else:  # what Ctrl-C, or a CI runner cancelling a job, sends: to the workers too
            os.killpg(process.pid, signum)
        out, err = process.communicate(timeout=30)  # EOF: the workers are gone too
    if signum == signal.SIGKILL:
        assert process.returncode == -signum
    else:  # SIGTERM too: the run stops as on Ctrl-C, cleaning up (exit 128 + the signal)
        assert (process.returncode, out, err) == (128 + abs(signum), "", INTERRUPTED + "\n")
    assert dump(db) == before  # integrity_check ok, and not one row of v9.0.0 kept
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT count(*) FROM versions WHERE version = 'v9.0.0'"
                            ).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM files WHERE path LIKE 'pkg/sub%'"
                            ).fetchone() == (0,)
    again = subprocess.run(
        [*_annotate(), "index", "vllm@v9.0.0", "--from", str(tree)],
        capture_output=True, text=True, env=dict(os.environ), timeout=120,
    )
    assert (again.returncode, again.stderr) == (0, "")
    assert again.stdout.startswith(
        f"vllm@v9.0.0: {FILES} files, {FILES} new blobs parsed, {symbols} new symbols, "
    )
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute(
            "SELECT file_count, symbol_count, (SELECT count(*) FROM files f"
            " WHERE f.version_id = v.id) FROM versions v WHERE version = 'v9.0.0'"
        ).fetchone() == (FILES, symbols, FILES)


def test_ctrl_c_while_annotate_starts_is_the_one_line(tmp_path: Path) -> None:
    """A Ctrl-C in the first few tenths of a second, while the console script imports the
    command and its libraries (a module imported then sends it, at once), is the same
    line as one later: no traceback."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "click.py").write_text("import os, signal, time\n"
                                   "os.kill(os.getpid(), signal.SIGINT)\ntime.sleep(30)\n")
    done = subprocess.run([*_annotate(), "versions"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(shim)}, timeout=60,
                          preexec_fn=as_a_foreground_job)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", INTERRUPTED + "\n")


def test_a_hangup_ignored_by_nohup_stays_ignored(
    big_tree: tuple[Path, int], small_tree: Path
) -> None:
    """``nohup annotate index ...``: the run goes on when its terminal goes away."""
    tree, symbols = big_tree
    Path("annotate.toml").write_text('[repos.vllm]\nsources = ["git"]\n')
    with held_writer("index", "vllm@v9.0.0", "--from", str(tree),
                     ignored=(signal.SIGHUP,)) as held:  # what nohup does
        os.killpg(held.process.pid, signal.SIGHUP)
        held.resume()
        out, err = held.process.communicate(timeout=120)
    process = held.process
    assert (process.returncode, err) == (0, "")
    assert out.startswith(f"vllm@v9.0.0: {FILES} files, {FILES} new blobs parsed, {symbols} ")


# ------------------------------------------------------------------------------ sources


class _NotFound(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the http.server hook's name
        self.send_error(404)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def not_found_server() -> Iterator[str]:
    """A loopback HTTP server answering 404 to everything; yields its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def silent_server() -> Iterator[str]:
    """A loopback socket that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _pypi_only(monkeypatch: pytest.MonkeyPatch, index_url: str) -> None:
    Path("annotate.toml").write_text('[repos.vllm]\nsources = ["pypi"]\n')
    monkeypatch.setenv("PIP_INDEX_URL", f"{index_url}/simple")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    monkeypatch.setenv("PIP_RETRIES", "0")


def test_unreachable_git_remote(indexed_db: Path) -> None:
    before = dump(indexed_db)
    url = f"http://127.0.0.1:{closed_port()}/vllm.git"
    Path("annotate.toml").write_text(
        f'[repos.vllm]\nsources = ["git"]\ngit = "{url}"\nversions = ["v0.2.0"]\n')
    started = time.monotonic()
    result = run("index", "vllm@v0.2.0")
    assert time.monotonic() - started < 30
    one_error_line(result, f"vllm@v0.2.0 was not found (git: {url}: ", "Failed to connect",
                   "--from PATH")
    assert dump(indexed_db) == before
    assert not_found_notes(indexed_db) == [("not_found:vllm@v0.2.0", "git")]


def test_git_remote_that_never_answers(
    indexed_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_source, "GIT_STALL_SECONDS", 1)  # git counts whole seconds
    monkeypatch.delenv("GIT_HTTP_LOW_SPEED_TIME", raising=False)
    monkeypatch.delenv("GIT_HTTP_LOW_SPEED_LIMIT", raising=False)
    before = dump(indexed_db)
    with silent_server() as url:
        Path("annotate.toml").write_text(
            f'[repos.vllm]\nsources = ["git"]\ngit = "{url}/vllm.git"\n'
        )
        started = time.monotonic()
        result = run("index", "vllm@v0.2.0")
        elapsed = time.monotonic() - started
    assert elapsed < 20  # the stall limit, not the 600 s timeout
    one_error_line(result, f"vllm@v0.2.0 was not found (git: {url}/vllm.git: ",
                   "Operation too slow", "--from PATH")
    assert dump(indexed_db) == before


def test_tag_that_does_not_exist(indexed_db: Path, fake_vllm: fv.FakeRepo) -> None:
    before = dump(indexed_db)
    Path("annotate.toml").write_text(
        f'[repos.vllm]\nsources = ["git"]\ngit = "{fake_vllm.url}"\n'
    )
    result = run("index", "vllm@v0.9.9")
    one_error_line(result, "couldn't find remote ref refs/tags/v0.9.9",
                   "check the version name", "--from PATH")
    assert dump(indexed_db) == before


def test_pip_index_answering_404(indexed_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = dump(indexed_db)
    with not_found_server() as url:
        _pypi_only(monkeypatch, url)
        result = run("index", "vllm@v0.2.0")
    one_error_line(result, "pypi: pip: vllm==0.2.0: No matching distribution found",
                   f"{url}/simple/vllm/: 404", "--from PATH")
    assert dump(indexed_db) == before


def test_pip_index_that_never_answers(indexed_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = dump(indexed_db)
    with silent_server() as url:
        _pypi_only(monkeypatch, url)
        monkeypatch.setenv("PIP_TIMEOUT", "0.5")  # nothing comes: no answer is cut short
        started = time.monotonic()
        result = run("index", "vllm@v0.2.0")
        elapsed = time.monotonic() - started
    assert elapsed < 30  # pip's own --timeout, not annotate's 30-minute guard
    one_error_line(result, "pypi: pip: vllm==0.2.0: ", "read timed out", "--from PATH")
    assert dump(indexed_db) == before


# ------------------------------------------------------------------------------ the wheel cache


def _cached_wheel_dir() -> Path:
    return Path.cwd() / "xdg-cache" / "annotate" / "wheels" / "vllm" / "0.2.0"


def _corrupt_member(data: bytes) -> bytes:
    """The wheel with the compressed bytes of its first member scrambled: still a zip
    (its central directory is intact), but the member no longer inflates."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.infolist()[0]
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    scrambled = bytearray(data)
    for offset in range(start + 2, start + 2 + min(16, info.compress_size - 2)):
        scrambled[offset] ^= 0xFF
    return bytes(scrambled)


WHEEL_DAMAGE = [  # (damage, fetched again in the same run)
    pytest.param(lambda data: data[: len(data) // 2], True, id="truncated"),
    pytest.param(lambda data: b"", True, id="empty"),
    pytest.param(_corrupt_member, False, id="member-data-corrupt"),
]


@pytest.mark.parametrize(("damage", "same_run"), WHEEL_DAMAGE)
def test_damaged_wheel_in_the_cache_is_discarded_and_fetched_again(
    indexed_db: Path, fake_wheels: Path, monkeypatch: pytest.MonkeyPatch, damage: object,
    same_run: bool,
) -> None:
    """Not a zip file: discarded and downloaded again at once. A zip whose member does not
    inflate is found only when read: discarded, with a message; the next run downloads it."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(fake_wheels))
    Path("annotate.toml").write_text('[repos.vllm]\nsources = ["pypi"]\n')
    name = fv.wheel_filename("vllm", "0.2.0")
    good = (fake_wheels / name).read_bytes()
    _cached_wheel_dir().mkdir(parents=True)
    damaged = damage(good)  # type: ignore[operator]
    assert damaged != good
    (_cached_wheel_dir() / name).write_bytes(damaged)
    before = dump(indexed_db)
    first = run("index", "vllm@v0.2.0")
    if not same_run:
        one_error_line(first, name, "removed from the cache", "run the command again")
        assert dump(indexed_db) == before
        assert not (_cached_wheel_dir() / name).exists()
        first = run("index", "vllm@v0.2.0")
    assert first.exit_code == 0, first.output
    assert first.stdout.startswith("vllm@v0.2.0: ")
    assert (_cached_wheel_dir() / name).read_bytes() == good
    assert counts(indexed_db)["versions"] == 2


# ------------------------------------------------------------------------------ unwritable cache


def _mount_tmpfs(where: Path, options: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'not permitted'})")


@pytest.fixture
def mounted() -> Iterator[list[Path]]:
    """Mount points to unmount after the test."""
    points: list[Path] = []
    yield points
    for point in reversed(points):
        subprocess.run(["umount", "-l", str(point)], capture_output=True)


@pytest.fixture
def git_project(indexed_db: Path, fake_vllm: fv.FakeRepo) -> Path:
    Path("annotate.toml").write_text(
        f'[repos.vllm]\nsources = ["git", "pypi"]\ngit = "{fake_vllm.url}"\n'
    )
    return indexed_db


@pytest.mark.parametrize(("config", "shown"), [
    ("annotate.toml", "annotate.toml"),
    ("pyproject.toml", "[tool.annotate] of pyproject.toml"),
])
def test_cache_folder_under_a_regular_file(
    git_project: Path, monkeypatch: pytest.MonkeyPatch, config: str, shown: str
) -> None:
    """Root ignores permission bits, so the cache is put below a regular file instead:
    every mkdir in it fails with ENOTDIR, whoever runs the test. The hint names the config
    in use."""
    if config == "pyproject.toml":
        text = Path("annotate.toml").read_text().replace("[repos.", "[tool.annotate.repos.")
        Path(config).write_text(f"[tool.annotate]\n{text}")
        Path("annotate.toml").unlink()
    Path("a-file").write_text("not a folder\n")
    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(Path("a-file/cache").resolve()))
    before = dump(git_project)
    result = run("index", "vllm@v0.2.0")
    one_error_line(result, "cannot write the cache folder", "Not a directory",
                   f"point cache_dir in {shown} (or ANNOTATE_CACHE_DIR, when cache_dir is "
                   "not set) at a writable folder")
    assert dump(git_project) == before
    assert Path("a-file").read_text() == "not a folder\n"


def test_cache_on_a_read_only_disk(
    git_project: Path, monkeypatch: pytest.MonkeyPatch, mounted: list[Path]
) -> None:
    point = Path("ro").resolve()
    _mount_tmpfs(point, "size=64k,ro")
    mounted.append(point)
    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(point / "annotate"))
    before = dump(git_project)
    result = run("index", "vllm@v0.2.0")
    one_error_line(result, "cannot write the cache folder", "Read-only file system",
                   "at a writable folder")
    assert dump(git_project) == before


def test_index_into_an_immutable_database(indexed_db: Path, small_tree: Path) -> None:
    """Root ignores permission bits; the immutable attribute stops root too."""
    before = dump(indexed_db)
    if subprocess.run(["chattr", "+i", str(indexed_db)], capture_output=True).returncode:
        pytest.skip("cannot make a file immutable here")
    try:
        result = run("index", "vllm@v0.2.0", "--from", str(small_tree))
    finally:
        subprocess.run(["chattr", "-i", str(indexed_db)], capture_output=True)
    one_error_line(result, "the index database cannot be written", "readonly database",
                   "make it, its -wal and -shm files and its folder writable, or pass "
                   "another --db PATH")
    assert dump(indexed_db) == before


def test_an_index_file_that_cannot_be_written_is_read_and_checked_in_a_copy(
    indexed_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file this user may not write, in a folder it may (a CI cache restored as another
    user's, made immutable here since root ignores permission bits), is opened read-only by
    SQLite: check and fix link a changed annotation file in a temporary copy of it, as they
    do for an index on a read-only disk, and say so in a note true of each (it said "for
    this check only" of fix too)."""
    _an_annotation_file("vllm/utils.py::cdiv")
    assert run("link").exit_code == 0
    before = dump(indexed_db)
    _an_annotation_file("vllm/utils.py::get_open_port")  # a pull request edits a claim
    scratch = Path("scratch").resolve()
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    if subprocess.run(["chattr", "+i", str(indexed_db)], capture_output=True).returncode:
        pytest.skip("cannot make a file immutable here")
    try:
        checked = run("check", "--format", "json")
        fixed = run("fix", "--dry-run")
        linked = run("link")
    finally:
        subprocess.run(["chattr", "-i", str(indexed_db)], capture_output=True)
    copied = ("Note: the index cannot be written: the annotation files are linked in a "
              "temporary copy of it, for this run only\n")
    assert (checked.exit_code, checked.stderr) == (0, copied), checked.output
    assert [r["ref"] for r in json.loads(checked.stdout)["results"]] == [
        "vllm/utils.py::get_open_port"]
    nothing = "Note: --dry-run wrote nothing: fix would make 0 edits in 0 files\n"
    assert (fixed.exit_code, fixed.stderr) == (0, copied + nothing), fixed.output
    one_error_line(linked, "the index database cannot be written", "readonly database")
    assert list(scratch.iterdir()) == []
    assert dump(indexed_db) == before


def test_an_older_index_on_a_read_only_disk_is_one_error_not_a_failed_migration(
    mounted: list[Path]
) -> None:
    point = Path("ro").resolve()
    _mount_tmpfs(point, "size=4m")
    mounted.append(point)
    path = point / "index.db"
    with connected(path) as conn:
        conn.executescript(MIGRATIONS[0])
        conn.execute("PRAGMA user_version = 1")
    done = subprocess.run(["mount", "-o", "remount,ro", str(point)], capture_output=True)
    assert done.returncode == 0, done.stderr
    before = path.read_bytes()
    result = run("--db", str(path), "versions")
    assert one_error_line(result) == (
        f"Error: {path} has schema 1, which this annotate must migrate to {SCHEMA_VERSION}, "
        "but it cannot be written there; copy it to a folder you can write and pass "
        "--db COPY, or index afresh")
    assert path.read_bytes() == before
    assert sorted(p.name for p in point.iterdir()) == ["index.db"]


def test_an_index_on_a_read_only_disk_is_read(
    indexed_db: Path, small_tree: Path, mounted: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A WAL database whose folder cannot hold its -shm file (a read-only mount, a CI cache
    restored read-only) is opened immutable: read commands work, writes are one error."""
    point = Path("ro").resolve()
    _mount_tmpfs(point, "size=4m")
    mounted.append(point)
    shutil.copyfile(indexed_db, point / "index.db")
    db = ("--db", str(point / "index.db"))
    fv.write_snapshot(Path("v2"), fv.VERSIONS["v0.2.0"])
    assert run(*db, "index", "vllm@v0.2.0", "--from", "v2").exit_code == 0
    _an_annotation_file("vllm/utils.py::cdiv")
    assert run(*db, "link").exit_code == 0
    with connected(point / "index.db") as conn:
        conn.execute("DELETE FROM match_cache")  # check must compare, and may not cache
    before = dump(point / "index.db")
    done = subprocess.run(["mount", "-o", "remount,ro", str(point)], capture_output=True)
    assert done.returncode == 0, done.stderr
    checked = run(*db, "check", "--against", "vllm@v0.2.0", "--format", "json")
    assert (checked.exit_code, checked.stderr) == (1, ""), checked.output
    assert json.loads(checked.stdout)["results"][0]["status"] == "changed"
    _an_annotation_file("vllm/utils.py::get_open_port")  # a pull request edits a claim
    scratch = Path("scratch").resolve()
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    edited = run(*db, "check", "--against", "vllm@v0.2.0", "--format", "json")
    assert list(scratch.iterdir()) == []  # the copy is gone
    assert edited.stderr == ("Note: the index cannot be written: the annotation files are "
                             "linked in a temporary copy of it, for this run only\n")
    assert [r["ref"] for r in json.loads(edited.stdout)["results"]] == [
        "vllm/utils.py::get_open_port"]
    diffed = run(*db, "diff", "vllm@v0.1.0", "vllm@v0.2.0", "--format", "json")
    assert diffed.exit_code == 0 and json.loads(diffed.stdout)["counts"]["changed"] > 0
    versions = run(*db, "versions")
    assert versions.exit_code == 0  # saying only which configured versions it lacks:
    assert all(" is configured but not indexed; " in line
               for line in versions.stderr.splitlines()), versions.stderr
    assert versions.stdout.splitlines()[1].split()[:3] == ["vllm", "v0.1.0", "local"]
    symbols = run(*db, "symbols", "vllm@v0.1.0", "--format", "jsonl")
    assert symbols.exit_code == 0 and symbols.stdout.count("\n") > 10, symbols.output
    result = run(*db, "index", "vllm@v0.3.0", "--from", str(small_tree))
    one_error_line(result, "the index database cannot be written", "readonly database")
    assert sorted(path.name for path in point.iterdir()) == ["index.db"]
    subprocess.run(["mount", "-o", "remount,rw", str(point)], capture_output=True)
    assert dump(point / "index.db") == before


def _linked_on_a_read_only_mount(indexed_db: Path, mounted: list[Path]) -> Path:
    """A copy of ``indexed_db``, its one annotation file linked, on a tmpfs remounted
    read-only (the mount point, ro/, holding index.db)."""
    point = Path("ro").resolve()
    _mount_tmpfs(point, "size=4m")
    mounted.append(point)
    shutil.copyfile(indexed_db, point / "index.db")
    _an_annotation_file("vllm/utils.py::cdiv")
    assert run("--db", str(point / "index.db"), "link").exit_code == 0
    subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True)
    return point


@pytest.mark.parametrize(("edited", "relink", "copied"), [
    pytest.param(False, True, False, id="links-current"),
    pytest.param(True, True, True, id="links-changed"),
    pytest.param(True, False, False, id="links-changed-not-to-be-linked"),
])
def test_a_read_only_index_is_linked_in_a_temporary_copy_when_its_links_changed(
    indexed_db: Path, mounted: list[Path], edited: bool, relink: bool, copied: bool
) -> None:
    """Not linked again (``relink=False``: links --article reads the stored links' status),
    the index is read as it is."""
    point = _linked_on_a_read_only_mount(indexed_db, mounted)
    if edited:
        _an_annotation_file("vllm/utils.py::get_open_port")
    notes: list[str] = []
    with open_database(point / "index.db") as database, linkable(
        database, load_config(), relink=relink, notify=notes.append
    ) as linked:
        assert database.read_only
        assert (linked is not database, linked.read_only) == (copied, not copied)
    assert notes == (["the index cannot be written: the annotation files are linked in a "
                      "temporary copy of it, for this run only"] if copied else [])


def test_links_of_an_article_on_a_read_only_index_whose_links_changed_copy_nothing(
    indexed_db: Path, mounted: list[Path]
) -> None:
    """links --article reads the stored links' status, linking nothing: no temporary copy
    of the index, and no note of one."""
    point = _linked_on_a_read_only_mount(indexed_db, mounted)
    _an_annotation_file("vllm/utils.py::get_open_port")
    result = run("--db", str(point / "index.db"), "links", "--article", "annotations/a.yml")
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "Note: the annotation files, the index or annotate changed since the last link; run "
        "'annotate link' (or 'annotate check') to bring the claims shown here up to date\n")
    assert "vllm/utils.py::cdiv" in result.stdout


def test_no_room_for_the_copy_of_a_read_only_index_is_one_error(
    indexed_db: Path, mounted: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    point, tiny = Path("ro").resolve(), Path("tiny").resolve()
    for where, options in ((point, "size=4m"), (tiny, "size=64k")):
        _mount_tmpfs(where, options)
        mounted.append(where)
    shutil.copyfile(indexed_db, point / "index.db")
    subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True)
    _an_annotation_file("vllm/utils.py::cdiv")
    monkeypatch.setattr(tempfile, "tempdir", str(tiny))
    result = run("--db", str(point / "index.db"), "check")
    one_error_line(result, f"cannot copy {point / 'index.db'} to {tiny}",
                   "free some space there, or set TMPDIR to a folder with room")
    assert list(tiny.iterdir()) == []
    assert _files_open_under(tiny) == []  # the copy's connection is closed, not left to GC


def _files_open_under(folder: Path) -> list[str]:
    """The files under ``folder`` that this process has a descriptor open on (a deleted
    one's name ends in `` (deleted)``), as Linux's /proc tells."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed since
            target = os.readlink(f"/proc/self/fd/{name}")
            if target.startswith(f"{folder}/"):
                found.append(target)
    return found


def test_no_writable_temporary_folder_for_the_copy_is_one_error(
    indexed_db: Path, mounted: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    point = Path("ro").resolve()
    _mount_tmpfs(point, "size=4m")
    mounted.append(point)
    shutil.copyfile(indexed_db, point / "index.db")
    subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True)
    _an_annotation_file("vllm/utils.py::cdiv")
    monkeypatch.setattr(tempfile, "tempdir", str(Path("no-such-folder").resolve()))
    result = run("--db", str(point / "index.db"), "check")
    one_error_line(result, f"cannot copy {point / 'index.db'} for this run: No such file",
                   "set TMPDIR to a writable folder")


def fill(disk: Path, leave: int = 0) -> None:
    """Fill the file system of ``disk`` up to ``leave`` free bytes (or to the last byte)."""
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with contextlib.suppress(OSError), (disk / "filler").open("ab") as filler:
        filler.write(b"\0" * max(0, free - leave))
        filler.flush()
        while not leave:
            filler.write(b"\0" * 4096)
            filler.flush()


@pytest.mark.parametrize("case", ["git-fetch", "git-new-mirror", "pypi"])
def test_cache_on_a_full_disk(
    indexed_db: Path, fake_vllm: fv.FakeRepo, fake_wheels: Path,
    monkeypatch: pytest.MonkeyPatch, mounted: list[Path], case: str,
) -> None:
    point = Path("full").resolve()
    _mount_tmpfs(point, "size=2m")
    mounted.append(point)
    source = case.split("-")[0]
    Path("annotate.toml").write_text(
        f'[repos.vllm]\nsources = ["{source}"]\ngit = "{fake_vllm.url}"\n'
    )
    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(point / "annotate"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(fake_wheels))
    if case != "git-new-mirror":  # the cache is in use already (a mirror, a wheel)
        assert run("index", "vllm@v0.1.0", "--db", "other.db").exit_code == 0
    fill(point)
    before = dump(indexed_db)
    result = run("index", "vllm@v0.2.0")
    one_error_line(result, "No space left on device", "free some space")
    assert dump(indexed_db) == before
    (point / "filler").unlink()
    again = run("index", "vllm@v0.2.0")  # space freed: the same command now works
    assert again.exit_code == 0, again.output
    assert counts(indexed_db)["versions"] == 2


@pytest.mark.parametrize("leave", [
    pytest.param(0, id="full-before-it-opens"),
    pytest.param(512 * 1024, id="fills-while-it-writes"),
])
def test_database_on_a_full_disk(small_tree: Path, mounted: list[Path], leave: int) -> None:
    point = Path("dbdisk").resolve()
    _mount_tmpfs(point, "size=16m")
    mounted.append(point)
    Path("annotate.toml").write_text('[repos.vllm]\nsources = ["git"]\n')
    db = point / "index.db"
    assert run("--db", str(db), "index", "vllm@v0.1.0", "--from", str(small_tree)
               ).exit_code == 0
    before = dump(db)
    bigger = Path("bigger")
    write_synthetic_tree(bigger, files=400)
    fill(point, leave)
    result = run("--db", str(db), "index", "vllm@v9.0.0", "--from", str(bigger))
    one_error_line(result, "full" if leave else "disk I/O error", "free some space")
    (point / "filler").unlink()
    assert dump(db) == before
    again = run("--db", str(db), "index", "vllm@v9.0.0", "--from", str(bigger))
    assert again.exit_code == 0, again.output


def test_a_new_index_on_a_disk_that_fills_while_its_first_version_is_written(
    mounted: list[Path]
) -> None:
    """The first version of a new index is written with a rollback journal (see
    `db.database.Database.write`): its commit on a full disk is one error, the index
    keeps its schema alone, and once space is freed the same command indexes it, in WAL."""
    point = Path("dbdisk").resolve()
    _mount_tmpfs(point, "size=16m")
    mounted.append(point)
    Path("annotate.toml").write_text('[repos.vllm]\nsources = ["git"]\n')
    bigger = Path("bigger")
    symbols = write_synthetic_tree(bigger, files=400)
    db = point / "index.db"
    fill(point, 1024 * 1024)  # room for the schema (640 KiB), not for the version
    result = run("--db", str(db), "index", "vllm@v9.0.0", "--from", str(bigger))
    one_error_line(result, "full", "free some space")
    (point / "filler").unlink()
    assert sorted(p.name for p in point.iterdir()) == ["index.db"]  # no journal left
    assert {table: rows for table, rows in counts(db).items() if rows} == {}
    again = run("--db", str(db), "index", "vllm@v9.0.0", "--from", str(bigger))
    assert again.exit_code == 0, again.output
    assert f"400 new blobs parsed, {symbols} new symbols" in again.stdout
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def _previous_report_on_a_small_disk(mounted: list[Path]) -> Path:
    """A report of an earlier run, on a 1 MiB disk of its own (``reports/``), with
    vllm@v0.2.0 indexed for a new one."""
    point = Path("reports").resolve()
    _mount_tmpfs(point, "size=1m")
    mounted.append(point)
    fv.write_snapshot(Path("v2"), fv.VERSIONS["v0.2.0"])
    assert run("index", "vllm@v0.2.0", "--from", "v2").exit_code == 0
    report = point / "diff.html"
    report.write_text("the previous report\n")
    return report


def test_a_report_that_does_not_fit_leaves_the_previous_one_whole(
    indexed_db: Path, mounted: list[Path]
) -> None:
    """``--output`` onto a full disk: the previous report stays as it was (a CI artifact is
    never replaced by the first part of a new one), and no partial file is left."""
    report = _previous_report_on_a_small_disk(mounted)
    point = report.parent
    fill(point)
    result = run("diff", "vllm@v0.1.0", "vllm@v0.2.0", "--format", "html", "--output",
                 str(report))
    one_error_line(result, f"cannot write {report}: No space left on device; make room on its "
                   "disk, or pass an --output on another disk")
    assert report.read_text() == "the previous report\n"
    assert sorted(path.name for path in point.iterdir()) == ["diff.html", "filler"]
    (point / "filler").unlink()
    assert run("diff", "vllm@v0.1.0", "vllm@v0.2.0", "--format", "html", "--output",
               str(report)).exit_code == 0
    assert report.read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize(("folder", "error"), [
    pytest.param("ro", "Read-only file system; its folder ro is on a read-only file system: "
                 "pass an --output on a writable one", id="a-read-only-mount"),
    pytest.param("a-file", "Not a directory; a-file is not a folder: pass another --output",
                 id="a-file-for-its-folder"),
    pytest.param("missing", "No such file or directory; its folder missing does not exist: "
                 "create it, or pass another --output", id="a-missing-folder"),
])
def test_a_report_whose_folder_takes_no_file_says_why_and_what_to_do(
    indexed_db: Path, mounted: list[Path], folder: str, error: str
) -> None:
    """Each cause its own advice: "check that its folder exists and can be written" said
    nothing of a read-only disk, nor what to do about it."""
    if folder == "ro":
        _mount_tmpfs(Path(folder).resolve(), "size=64k,ro")
        mounted.append(Path(folder).resolve())
    elif folder == "a-file":
        Path(folder).write_text("not a folder\n")
    _an_annotation_file("vllm/utils.py::cdiv")
    result = run("check", "--exit-zero", "--output", f"{folder}/report.txt")
    assert one_error_line(result) == f"Error: cannot write {folder}/report.txt: {error}"
    assert not Path(folder, "report.txt").exists()


@pytest.mark.parametrize(("output", "error"), [
    pytest.param("a-file/sub/report.txt", "Not a directory; a-file is not a folder: pass "
                 "another --output", id="a-file-above-its-folder"),
    pytest.param("link.txt", "No such file or directory; its folder {cwd}/gone does not "
                 "exist: create it, or pass another --output", id="a-link-into-a-missing-folder"),
    pytest.param("r" * 300, "File name too long; pass an --output of shorter names",
                 id="a-name-too-long"),
])
def test_a_report_names_the_folder_in_the_way(
    indexed_db: Path, output: str, error: str
) -> None:
    """The folder named is the one in the way: not a path below a file, which does not
    exist either, nor the folder of a symlink rather than that of the file it leads to; a
    name too long (which ``Path.is_symlink`` raises on) is told to be shorter."""
    Path("a-file").write_text("not a folder\n")
    Path("link.txt").symlink_to(Path("gone", "report.txt").resolve())
    _an_annotation_file("vllm/utils.py::cdiv")
    result = run("check", "--exit-zero", "--output", output)
    assert one_error_line(result) == (
        f"Error: cannot write {output}: {error.format(cwd=Path.cwd().as_posix())}")
    assert not Path("gone").exists()


def test_a_report_whose_file_system_refuses_a_new_file_says_so(
    indexed_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system that refuses O_EXCL (EINVAL, as some FUSE and network ones answer) cannot
    be mounted here: its answer is stood in for. The error says it is the temporary file
    that was refused, not the report's folder missing or read-only."""
    _an_annotation_file("vllm/utils.py::cdiv")
    Path("odd").mkdir()
    real_open = os.open

    def os_open(path: str | Path, flags: int, mode: int = 0o777, **kwargs: Any) -> int:
        if flags & os.O_EXCL and Path(path).parent == Path("odd").resolve():
            raise OSError(errno.EINVAL, "Invalid argument", str(path))
        return real_open(path, flags, mode, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    result = run("check", "--exit-zero", "--output", "odd/report.txt")
    assert one_error_line(result) == (
        "Error: cannot write odd/report.txt: its folder odd refused the new file a report is "
        "written to before it replaces the old one (Invalid argument); pass an --output on "
        "another file system")
    assert list(Path("odd").iterdir()) == []


def test_a_report_keeps_the_mode_a_written_file_has(indexed_db: Path) -> None:
    """The report is renamed into place from a temporary file (owner-only when made): a new
    one gets the mode the umask gives, one written over keeps its own, and a symlink to it
    stays a symlink."""
    _an_annotation_file("vllm/utils.py::cdiv")
    umask = os.umask(0o022)
    try:
        kept = Path("kept.md")
        kept.write_text("old")
        kept.chmod(0o640)
        Path("link.md").symlink_to("kept.md")
        for name in ("new.md", "link.md"):
            result = run("check", "--exit-zero", "--format", "markdown", "--output", name)
            assert (result.exit_code, result.output) == (0, "")
    finally:
        os.umask(umask)
    assert Path("new.md").stat().st_mode & 0o777 == 0o644
    assert Path("link.md").is_symlink()
    assert kept.stat().st_mode & 0o777 == 0o640
    assert kept.read_text().startswith("## annotate check")



def _refuse_new_files_in(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand in for ``folder`` refusing a new file (root, the tests' user in CI, is never
    refused): the temporary file a report is renamed from cannot be made there."""
    real_open = os.open

    def os_open(path: str | Path, flags: int, mode: int = 0o777, **kwargs: Any) -> int:
        if flags & os.O_CREAT and Path(path).parent == folder:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, mode, **kwargs)

    monkeypatch.setattr(os, "open", os_open)


def test_a_report_file_in_a_folder_that_takes_no_new_file_is_written_in_place(
    indexed_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report one may write in a folder one may not add a file to, as before reports were
    renamed into place (root, the tests' user in CI, is never refused: the folder's answer
    to a new file is stood in for)."""
    _an_annotation_file("vllm/utils.py::cdiv")
    report = Path("locked/report.md").resolve()
    report.parent.mkdir()
    report.write_text("the previous report\n")
    _refuse_new_files_in(report.parent, monkeypatch)
    result = run("check", "--exit-zero", "--format", "markdown", "--output", str(report))
    assert (result.exit_code, result.output) == (0, "")
    assert report.read_text().startswith("## annotate check")
    assert sorted(path.name for path in report.parent.iterdir()) == ["report.md"]


@pytest.mark.parametrize("reserves", [True, False], ids=["room-reserved", "no-fallocate"])
def test_a_report_written_in_place_that_does_not_fit_leaves_the_previous_one_whole(
    indexed_db: Path, mounted: list[Path], monkeypatch: pytest.MonkeyPatch, reserves: bool
) -> None:
    """In a folder that takes no new file, on a full disk: the previous report is not
    emptied for a new one that cannot be written whole (it was: its first 4 KiB were left).
    Its room is reserved first; where the system cannot (macOS), the previous report is
    put back."""
    if not reserves:
        monkeypatch.delattr(os, "posix_fallocate", raising=False)
    report = _previous_report_on_a_small_disk(mounted)
    point = report.parent
    _refuse_new_files_in(point, monkeypatch)
    fill(point)
    result = run("diff", "vllm@v0.1.0", "vllm@v0.2.0", "--format", "html", "--output",
                 str(report))
    one_error_line(result, f"cannot write {report}: No space left on device; make room on its "
                   "disk, or pass an --output on another disk")
    assert report.read_text() == "the previous report\n"
    (point / "filler").unlink()
    assert run("diff", "vllm@v0.1.0", "vllm@v0.2.0", "--format", "html", "--output",
               str(report)).exit_code == 0
    assert report.read_text().startswith("<!DOCTYPE html>")
    assert sorted(path.name for path in point.iterdir()) == ["diff.html"]


def test_a_report_one_may_write_but_not_read_is_written_in_place(
    indexed_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mode 0200 in a folder that takes no new file: the previous report cannot be copied
    aside, and is written over all the same (root reads any file: the refusal is stood in
    for)."""
    _an_annotation_file("vllm/utils.py::cdiv")
    report = Path("locked/report.md").resolve()
    report.parent.mkdir()
    report.write_text("the previous report\n")
    _refuse_new_files_in(report.parent, monkeypatch)
    real_open = Path.open

    def write_only(self: Path, mode: str = "r", *args: object, **kwargs: object) -> object:
        if self == report and "r" in mode:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", write_only)
    result = run("check", "--exit-zero", "--format", "markdown", "--output", str(report))
    monkeypatch.setattr(Path, "open", real_open)
    assert (result.exit_code, result.output) == (0, "")
    assert report.read_text().startswith("## annotate check")


@pytest.mark.parametrize(("failure", "exit_code"), [
    pytest.param(KeyboardInterrupt(), 130, id="ctrl-c"),
    pytest.param(OSError(28, "No space left on device"), 2, id="disk-full"),
])
def test_a_report_written_in_place_survives_a_render_that_stops(
    indexed_db: Path, monkeypatch: pytest.MonkeyPatch, failure: BaseException, exit_code: int
) -> None:
    """In a folder that takes no new file, the streamed JSON report is made whole before the
    previous one is written over: stopped halfway, it leaves the previous report as it was
    (root ignores the folder's mode: its answer to a new file is stood in for)."""
    from annotations.reports import json_report

    _an_annotation_file("vllm/utils.py::cdiv")
    report = Path("locked/report.json").resolve()
    report.parent.mkdir()
    report.write_text("the previous report\n")
    report.parent.chmod(0o555)
    if os.geteuid() == 0:
        _refuse_new_files_in(report.parent, monkeypatch)
    real_chunks = json_report.chunks

    def stopping_halfway(*args: object) -> Iterator[str]:
        yield next(real_chunks(*args))
        raise failure

    monkeypatch.setattr(json_report, "chunks", stopping_halfway)
    try:
        result = run("check", "--exit-zero", "--format", "json", "--output", str(report))
    finally:
        report.parent.chmod(0o755)
    assert result.exit_code == exit_code
    assert report.read_text() == "the previous report\n"
    assert sorted(path.name for path in report.parent.iterdir()) == ["report.json"]
    monkeypatch.setattr(json_report, "chunks", real_chunks)
    report.parent.chmod(0o555)
    try:
        again = run("check", "--exit-zero", "--format", "json", "--output", str(report))
    finally:
        report.parent.chmod(0o755)
    assert (again.exit_code, again.output) == (0, "")
    assert json.loads(report.read_text())["summary"]


# ------------------------------------------------------------------------------ databases


def _v1_database(path: Path, small_tree: Path) -> None:
    """A schema-1 database (what the first release wrote) holding one indexed version."""
    with connected(path) as conn:
        conn.executescript(MIGRATIONS[0])
        conn.execute("PRAGMA user_version = 1")
        conn.execute("INSERT INTO repos (name, git, pypi, github) VALUES ('vllm', NULL, 'vllm',"
                     " 'vllm-project/vllm')")
        files = sorted(p for p in small_tree.rglob("*") if p.is_file() and not p.is_symlink())
        symbols = 0
        cursor = conn.execute(
            "INSERT INTO versions (repo, version, source, indexed_at, file_count, symbol_count,"
            " new_blobs, seconds) VALUES ('vllm', 'v0.1.0', 'local', '2024-01-01T00:00:00',"
            " ?, 0, ?, 0.5)", (len(files), len(files)),
        )
        version = cursor.lastrowid
        for file in files:
            data = file.read_bytes()
            blob = sources.blob_id(data)
            parsed = parse_blob(blob, data) if file.suffix == ".py" else None
            conn.execute("INSERT OR IGNORE INTO blobs (id, size, content, parsed) VALUES"
                         " (?, ?, ?, ?)", (blob, len(data), None, parsed is not None))
            conn.execute("INSERT INTO files VALUES (?, ?, ?)",
                         (version, file.relative_to(small_tree).as_posix(), blob))
            for seq, s in enumerate(parsed.symbols if parsed else ()):
                conn.execute(
                    "INSERT INTO symbols (blob_id, seq, qualname, name, kind, start_line,"
                    " end_line, start_byte, end_byte, signature, exact, normalized, shape)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (blob, seq, s.qualname, s.qualname.rsplit(".", 1)[-1], s.kind.value,
                     s.start_line, s.end_line, s.start_byte, s.end_byte, s.signature,
                     s.exact, s.normalized, s.shape),
                )
                symbols += 1
        conn.execute("UPDATE versions SET symbol_count = ?", (symbols,))


def test_old_database_is_backed_up_then_migrated_with_its_data(small_tree: Path) -> None:
    db = Path("old.db").resolve()
    _v1_database(db, small_tree)
    old_dump = dump(db)
    result = run("--db", str(db), "symbols", "vllm@v0.1.0", "--format", "jsonl")
    backup = db.with_name("old.db.v1.bak")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"migrating {db} from schema 1 to {SCHEMA_VERSION}; backup at {backup}",
        "Note: some blobs were indexed by another extractor (an older annotate or tree-sitter);"
        " run 'annotate index' to parse them again",
    ]
    assert dump(backup) == old_dump  # the backup is the old database, row for row
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        symbols = conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
    assert len(result.stdout.splitlines()) == symbols > 0  # the indexed data survived
    assert _v1_symbol_rows(db) == _v1_symbol_rows(backup)
    with contextlib.closing(sqlite3.connect(db)) as conn:  # keys that schema 4 added: unknown
        assert conn.execute("SELECT count(*) FROM symbols WHERE header_key IS NOT NULL"
                            " OR body_key IS NOT NULL").fetchone() == (0,)


def _v1_symbol_rows(db: Path) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute(
            "SELECT id, blob_id, seq, qualname, name, kind, start_line, end_line, start_byte,"
            " end_byte, signature, exact, normalized, shape FROM symbols ORDER BY id"
        ).fetchall()


def test_a_failing_migration_changes_nothing(
    small_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migrations run in one transaction: a statement failing half-way (here, an extra
    one appended to the last migration) leaves the old database exactly as it was."""
    from db import database as database_module

    db = Path("old.db").resolve()
    _v1_database(db, small_tree)
    old_dump = dump(db)
    broken = (*MIGRATIONS[:-1], MIGRATIONS[-1] + "\nINSERT INTO no_such_table VALUES (1);\n")
    monkeypatch.setattr(database_module, "MIGRATIONS", broken)
    result = run("--db", str(db), "versions")
    notice, error = result.stderr.splitlines()
    assert notice.startswith(f"migrating {db} from schema 1 to {SCHEMA_VERSION}; backup at ")
    assert result.exit_code == 2
    assert error.startswith("Error: the index database failed: no such table: no_such_table")
    assert dump(db) == old_dump
    monkeypatch.undo()
    assert run("--db", str(db), "versions").exit_code == 0  # and the real migration works


def _damage_a_page(path: Path) -> None:
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    for offset in range(page * 2, min(len(data), page * 6)):
        data[offset] = 0x5A
    path.write_bytes(bytes(data))


def _an_annotation_file(ref: str = "vllm/a.py::f") -> None:
    """Something for ``check`` and ``link`` to read (with none they stop before the index)."""
    path = Path("annotations/a.yml")
    path.parent.mkdir(exist_ok=True)
    path.write_text("article: a.md\nat: vllm@v0.1.0\nclaims:\n  - id: a\n    text: t\n"
                    f"    refs: [{ref}]\n")


@pytest.mark.parametrize("command", [
    pytest.param(("versions",), id="versions"),
    pytest.param(("symbols", "vllm@v0.1.0"), id="symbols"),
    pytest.param(("index", "vllm@v0.2.0", "--from", "."), id="index"),
    pytest.param(("check",), id="check"),
])
def test_damaged_database_is_one_error_and_left_alone(
    indexed_db: Path, command: tuple[str, ...]
) -> None:
    with contextlib.closing(sqlite3.connect(indexed_db)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    _damage_a_page(indexed_db)
    damaged = indexed_db.read_bytes()
    _an_annotation_file()
    result = run(*command)
    one_error_line(result, "malformed", "rebuild it")
    assert indexed_db.read_bytes() == damaged


@pytest.mark.parametrize("command", [
    pytest.param(("versions",), id="versions"),
    pytest.param(("link",), id="link"),
    pytest.param(("check",), id="check"),
    pytest.param(("index", "vllm@v0.2.0", "--from", "."), id="index"),
])
def test_a_truncated_database_is_called_damaged_not_another_file(
    indexed_db: Path, command: tuple[str, ...]
) -> None:
    """An index cut short (a copy or download stopped half-way) is the user's index, damaged:
    not a file to move away as if it were another program's."""
    with contextlib.closing(sqlite3.connect(indexed_db)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    truncated = indexed_db.read_bytes()[:16384]
    indexed_db.write_bytes(truncated)
    _an_annotation_file()
    result = run(*command)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"Error: {indexed_db} is damaged (database disk image is malformed); rebuild the "
        "index with 'annotate index' into a fresh --db PATH, or move that file away and index "
        "again\n")
    assert indexed_db.read_bytes() == truncated


@pytest.mark.parametrize("command", [
    pytest.param(("versions",), id="versions"),
    pytest.param(("link",), id="link"),
    pytest.param(("check",), id="check"),
    pytest.param(("index", "vllm@v0.1.0", "--from", "."), id="index"),
])
def test_file_that_is_not_a_database_is_refused_by_every_command(
    command: tuple[str, ...]
) -> None:
    Path("annotate.toml").write_text('[repos.vllm]\nsources = ["git"]\n')
    db = DB
    db.parent.mkdir()
    junk = b"SQLite format 2\0" + os.urandom(8000)
    db.write_bytes(junk)
    _an_annotation_file()
    result = run(*command)
    one_error_line(result, "is not an annotate database", "pass another --db PATH")
    assert db.read_bytes() == junk
    assert sorted(p.name for p in db.parent.iterdir()) == ["index.db"]


def test_newer_database_is_refused_by_index_and_check(indexed_db: Path) -> None:
    with contextlib.closing(sqlite3.connect(indexed_db)) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    before = dump(indexed_db)
    _an_annotation_file()
    for command in (("index", "vllm@v0.2.0", "--from", "."), ("check",), ("link",)):
        result = run(*command)
        one_error_line(result, f"has schema version {SCHEMA_VERSION + 1}, newer than",
                       "upgrade vllm-annotate")
    assert dump(indexed_db) == before


# ------------------------------------------------------------------------------ invocation


def test_an_argument_that_is_not_utf8_is_one_error_line() -> None:
    done = subprocess.run([*_annotate(), "search", os.fsdecode(b"a\xff\xfeb")],
                          capture_output=True, text=True, env=dict(os.environ), check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("Error: the argument 'a\\xff\\xfeb' is not valid UTF-8 text (in a "
                           "locale that is not UTF-8, set PYTHONUTF8=1)\n")


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS file names must be UTF-8")
def test_a_file_name_argument_may_be_any_bytes(small_tree: Path, tmp_path: Path) -> None:
    """A path is bytes to the system: only text arguments must be UTF-8."""
    odd = tmp_path / os.fsdecode(b"tree\xff")
    shutil.copytree(small_tree, odd)
    Path("annotate.toml").write_text('[repos.vllm]\nsources = ["git"]\n')
    done = subprocess.run([*_annotate(), "--db", str(tmp_path / os.fsdecode(b"i\xff.db")),
                           "index", "vllm@v0.1.0", "--from", str(odd)],
                          capture_output=True, text=True, env=dict(os.environ), check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("vllm@v0.1.0: ")


def test_a_closed_standard_output_is_one_error_line() -> None:
    done = subprocess.run([*_annotate(), "versions"], stdin=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, env=dict(os.environ),
                          preexec_fn=lambda: os.close(1), check=False)
    assert done.returncode == 2
    assert done.stderr == ("Error: standard output is closed; send it somewhere (> /dev/null "
                           "to drop it), or write the report with --output FILE\n")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["--help"], ["--version"], ["check", "--help"]],
                         ids=["help", "version", "command-help"])
def test_help_to_a_full_disk_is_one_error_line(args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run([*_annotate(), *args], stdout=full, stderr=subprocess.PIPE,
                              text=True, env=dict(os.environ), check=False)
    assert (done.returncode, done.stderr) == (
        2, "Error: cannot write the output: No space left on device\n")


@pytest.fixture
def unreachable_git(indexed_db: Path) -> str:
    """annotate.toml pointing vllm's git source at a port nobody listens on."""
    url = f"http://127.0.0.1:{closed_port()}/vllm.git"
    Path("annotate.toml").write_text(f'[repos.vllm]\nsources = ["git"]\ngit = "{url}"\n')
    return url


def test_a_version_not_found_is_the_error_on_an_immutable_index(
    indexed_db: Path, unreachable_git: str
) -> None:
    """The note that no source had the version is advice for check: an index that cannot be
    written goes without it, and the error is still why the version was not indexed."""
    before = dump(indexed_db)
    if subprocess.run(["chattr", "+i", str(indexed_db)], capture_output=True).returncode:
        pytest.skip("cannot make a file immutable here")
    try:
        result = run("index", "vllm@v0.2.0")
    finally:
        subprocess.run(["chattr", "-i", str(indexed_db)], capture_output=True)
    one_error_line(result, f"vllm@v0.2.0 was not found (git: {unreachable_git}: ")
    assert dump(indexed_db) == before
    assert not_found_notes(indexed_db) == []


def test_a_version_not_found_is_the_error_at_once_while_another_process_writes(
    indexed_db: Path, unreachable_git: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The note does not wait for another writer (up to 10 minutes) nor replace the error."""
    monkeypatch.setattr(database_module, "WAIT_SECONDS", 1.0)
    holder = sqlite3.connect(indexed_db, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        result = run("index", "vllm@v0.2.0")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    one_error_line(result, f"vllm@v0.2.0 was not found (git: {unreachable_git}: ")
    assert not_found_notes(indexed_db) == []
