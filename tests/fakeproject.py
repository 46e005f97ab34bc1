"""A project directory over the fake repos, and `annotate` run as a real, isolated process."""

from __future__ import annotations

import contextlib
import functools
import os
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import fakevllm
import pytest
from click.testing import CliRunner, Result
from fakevllm import FakeRepo

from annotate_cli import cli
from annotations.links import link_if_changed
from db.database import Database, open_database
from indexer.config import load_config
from indexer.pipeline import index_version


def undo_uses_pins(conn: sqlite3.Connection) -> None:
    """Take a database back before migration 9, for a test that sets an older
    ``user_version`` on it (migrations 9 to 12 add these again)."""
    conn.execute("DROP TABLE diff_cache")
    conn.execute("DROP INDEX imports_name")
    conn.execute("DROP INDEX imports_alias")
    conn.execute("DROP TABLE link_files")
    conn.execute("DROP VIEW claim_use_links")
    conn.execute("ALTER TABLE claim_uses DROP COLUMN repo")
    conn.execute("ALTER TABLE claim_uses DROP COLUMN version")


LEAKY_PREFIXES = ("GIT_", "PIP_", "GITHUB_", "ANNOTATE_")
"""The user's variables that would point a test's git, pip, cache or report paths at the
user's own (``ANNOTATE_CACHE_DIR`` wins over ``XDG_CACHE_HOME``)."""


@contextlib.contextmanager
def connected(path: str | Path) -> Iterator[sqlite3.Connection]:
    """A plain sqlite3 connection to ``path``, its transaction committed when the block
    ends (rolled back on an error), then closed: ``with sqlite3.connect(...)`` ends the
    transaction only, and the connection stays open until it is freed."""
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        yield conn


def isolated_env(environ: Mapping[str, str], cache: Path) -> dict[str, str]:
    """``environ`` without the user's git, pip, annotate and GitHub settings, with the
    cache in ``cache``."""
    env = {name: value for name, value in environ.items()
           if not name.startswith(LEAKY_PREFIXES)}
    env.update(
        XDG_CACHE_HOME=str(cache), GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0", PIP_CONFIG_FILE=os.devnull, PIP_NO_INPUT="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    return env


def isolate(patch: pytest.MonkeyPatch, cache: Path) -> None:
    """Make this process's environment `isolated_env`'s."""
    wanted = isolated_env(os.environ, cache)
    for name in set(os.environ) - set(wanted):
        patch.delenv(name)
    for name, value in wanted.items():
        patch.setenv(name, value)


DB = Path(".annotate/index.db")
"""A project's index, where annotate.toml puts it by default."""

FAKES_CONFIG = """\
[repos.vllm]
git = "{vllm}"
versions = ["v0.1.0", "v0.2.0", "v0.3.0"]

[repos.lmcache]
git = "{lmcache}"
versions = ["v0.5.1"]
"""


def run_annotate(root: Path, *args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    """``annotate ARGS`` as a real process in ``root``, isolated from the user's git, pip
    and cache settings (``extra_env`` is set after)."""
    env = {**isolated_env(os.environ, root / "xdg-cache"), **extra_env}
    return subprocess.run([sys.executable, "-m", "annotate_cli", *args],
                          cwd=root, env=env, capture_output=True, text=True, check=False)


def write_fakes_config(root: Path, fake_vllm: FakeRepo, fake_lmcache: FakeRepo) -> None:
    config = FAKES_CONFIG.format(vllm=fake_vllm.url, lmcache=fake_lmcache.url)
    (root / "annotate.toml").write_text(config, encoding="utf-8")


INDEX_TABLES = ("repos", "versions", "blobs", "files", "symbols")


def table_counts(database: Database) -> dict[str, int]:
    """Row counts of the symbol index's tables."""
    return {
        table: database.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        for table in INDEX_TABLES
    }


def stored_fingerprints(database: Database, version: str, path: str, qualname: str) -> tuple:
    """(exact, normalized, shape) of a fake vLLM symbol as the index stored it."""
    return database.conn.execute(
        "SELECT exact, normalized, shape FROM version_symbols"
        " WHERE repo = 'vllm' AND version = ? AND path = ? AND qualname = ?",
        (version, path, qualname),
    ).fetchone()


def write_file(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8, byte for byte) to ``path``, making its folders."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Each (relative path, text) of ``files`` written under ``root``."""
    for relative, text in files.items():
        write_file(root / relative, text)
    return root


def copy_project(source: Path) -> Path:
    """The annotate.toml and index of ``source``, copied into the current directory."""
    root = Path.cwd()
    shutil.copyfile(source / "annotate.toml", root / "annotate.toml")
    (root / DB).parent.mkdir(exist_ok=True)
    shutil.copyfile(source / DB, root / DB)
    return root


HELD_INDEX = Path(__file__).with_name("held_index.py")


@dataclass(frozen=True)
class HeldWriter:
    """An ``annotate index`` process held inside its write transaction (see held_index.py)."""

    process: subprocess.Popen
    resume_end: int

    def resume(self) -> None:
        """Let the write go on."""
        os.write(self.resume_end, b"r")


@contextlib.contextmanager
def held_writer(*args: str, ignored: tuple[int, ...] = ()) -> Iterator[HeldWriter]:
    """``annotate ARGS`` (an index of a version large enough to spill pages into the WAL)
    as a real process in a process group of its own, like a job on a terminal: SIGINT,
    SIGTERM and SIGHUP at their defaults, or ignored when in ``ignored``. Yields once it
    is held inside its write transaction, where it stays until `HeldWriter.resume`: what
    the test does meanwhile happens mid-write, however loaded the machine is. The process
    and its parser workers are killed when the block ends."""
    ready_read, ready_write = os.pipe()
    resume_read, resume_write = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, str(HELD_INDEX), str(ready_write), str(resume_read), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
            pass_fds=(ready_write, resume_read), start_new_session=True,
            preexec_fn=functools.partial(as_a_foreground_job, ignored),
        )
    finally:
        os.close(ready_write)
        os.close(resume_read)
    try:
        _wait_until_held(process, ready_read)
        yield HeldWriter(process, resume_write)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        os.close(ready_read)
        os.close(resume_write)


def as_a_foreground_job(ignored: tuple[int, ...] = ()) -> None:
    """Signal dispositions as a shell sets them for a foreground job: pytest run as a
    background job of a script (``pytest &``) has SIGINT ignored, which its children
    would inherit and keep."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN if signum in ignored else signal.SIG_DFL)


def _wait_until_held(process: subprocess.Popen, ready: int) -> None:
    """Return once ``process`` says it is held mid-write; fail if it ends first (its
    workers gone too: the pipe's end is closed) or hangs before."""
    readable, _, _ = select.select([ready], [], [], 120)
    assert readable, "the run was not held mid-write within two minutes"
    if os.read(ready, 1) != b"w":
        out, err = process.communicate(timeout=60)
        raise AssertionError(f"the run ended before it was held mid-write: {out}{err}")


def invoke(*args: str) -> Result:
    """``annotate ARGS`` through click's runner, failing the test on a traceback or an
    exception other than the command's own exit."""
    result = CliRunner().invoke(cli, list(args), prog_name="annotate")
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    return result


def indexed_project(
    root: Path, versions: dict[str, dict[str, str]], claims: str, repo: str = "nest"
) -> Path:
    """``repo`` at ``versions`` (its files at each), indexed from snapshots, and the
    annotation file ``claims`` linked."""
    listed = ", ".join(f'"{version}"' for version in versions)
    (root / "annotate.toml").write_text(
        f'[repos.{repo}]\ngithub = "example/{repo}"\nversions = [{listed}]\n',
        encoding="utf-8")
    (root / "annotations").mkdir()
    (root / "annotations" / f"{repo}.yml").write_text(claims, encoding="utf-8")
    config = load_config(root)
    with open_database(config.db) as database:
        for version, files in versions.items():
            fakevllm.write_snapshot(root / "src" / version, files)
            index_version(database, config, repo, version, from_path=root / "src" / version,
                          workers=1)
        outcome = link_if_changed(database, config, force=True)
    assert outcome is not None and not outcome.errors
    return root
