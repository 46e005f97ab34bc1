"""A project directory over the fake repos, and `annotate` run as a real, isolated process."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fakevllm import FakeRepo

from annotate_cli import cli
from db.database import Database


def undo_uses_pins(conn: sqlite3.Connection) -> None:
    """Take a database back before migration 9, for a test that sets an older
    ``user_version`` on it (migration 9 adds these again)."""
    conn.execute("DROP VIEW claim_use_links")
    conn.execute("ALTER TABLE claim_uses DROP COLUMN repo")
    conn.execute("ALTER TABLE claim_uses DROP COLUMN version")


LEAKY_PREFIXES = ("GIT_", "PIP_", "GITHUB_", "ANNOTATE_")
"""The user's variables that would point a test's git, pip, cache or report paths at the
user's own (``ANNOTATE_CACHE_DIR`` wins over ``XDG_CACHE_HOME``)."""


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


def wait_until_writing(process: subprocess.Popen, db: Path) -> None:
    """Return once ``process`` is inside its write transaction to ``db`` (pages spill
    into the WAL); fail if it exits first or never gets there within a minute."""
    wal = db.with_name(db.name + "-wal")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "the process finished before it started writing"
        with contextlib.suppress(FileNotFoundError):
            if wal.stat().st_size > 256 * 1024:
                return
        time.sleep(0.005)
    raise AssertionError("the process never started writing")


def invoke(*args: str) -> Result:
    """``annotate ARGS`` through click's runner, failing the test on a traceback or an
    exception other than the command's own exit."""
    result = CliRunner().invoke(cli, list(args), prog_name="annotate")
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    return result
