"""Shared fixtures: the fake vLLM corpus, and isolation from the user's environment."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeproject import isolate, run_annotate, write_fakes_config
from fakevllm import FakeRepo, build_fake_lmcache, build_fake_vllm, build_fake_wheels
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

from db.database import Database, open_database
from indexer.config import ProjectConfig, load_config

# Time is not what the properties test: on a loaded 2-core machine an example can pass
# hypothesis's 200 ms deadline and fail the run. The rest is the active profile's (its
# "ci" profile, derandomized, under CI=true).
settings.register_profile("annotate", parent=settings(), deadline=None)
settings.load_profile("annotate")


def pytest_configure(config: pytest.Config) -> None:
    """Hypothesis's examples and caches (written from collection on) in a temporary folder
    of the run's, not in a ``.hypothesis`` folder of wherever pytest was started."""
    home = Path(tempfile.mkdtemp(prefix="annotate-hypothesis-"))
    set_hypothesis_home_dir(home)
    config.add_cleanup(lambda: shutil.rmtree(home, ignore_errors=True))


@pytest.fixture(scope="session")
def fake_vllm(tmp_path_factory: pytest.TempPathFactory) -> FakeRepo:
    """The fake vLLM repo (tags v0.1.0, v0.2.0 annotated, v0.3.0). Treat as read-only."""
    return build_fake_vllm(tmp_path_factory.mktemp("fake_vllm") / "vllm")


@pytest.fixture(scope="session")
def fake_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directory holding vllm-0.1.0 and vllm-0.2.0 py3-none-any wheels. Read-only."""
    return build_fake_wheels(tmp_path_factory.mktemp("fake_wheels"))


@pytest.fixture(scope="session")
def fake_lmcache(tmp_path_factory: pytest.TempPathFactory) -> FakeRepo:
    """The fake LMCache repo (tag v0.5.1). Treat as read-only."""
    return build_fake_lmcache(tmp_path_factory.mktemp("fake_lmcache") / "LMCache")


@pytest.fixture(autouse=True)
def _isolated_env(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Keep every test away from the user's caches, git/pip config, temporary folder and
    cwd; what the test and its processes leave in its temporary folder fails it."""
    cache = tmp_path / "xdg-cache"
    cache.mkdir()
    isolate(monkeypatch, cache)
    temporary = tmp_path_factory.mktemp("tmp")  # short: Chromium's socket path must fit
    monkeypatch.setenv("TMPDIR", str(temporary))
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    monkeypatch.chdir(tmp_path)
    yield
    assert sorted(path.name for path in temporary.iterdir()) == [], "left in TMPDIR"



@pytest.fixture(scope="session")
def indexed_fakes(
    tmp_path_factory: pytest.TempPathFactory, fake_vllm: FakeRepo, fake_lmcache: FakeRepo
) -> Path:
    """A directory with annotate.toml naming the fake repos and `annotate index` of every
    tag in .annotate/index.db. Shared: copy the database before changing it."""
    root = tmp_path_factory.mktemp("indexed-fakes")
    write_fakes_config(root, fake_vllm, fake_lmcache)
    done = run_annotate(root, "index")
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture
def config(fake_vllm: FakeRepo) -> ProjectConfig:
    """The fake vLLM repo as the git source, from annotate.toml in the test's directory."""
    Path("annotate.toml").write_text(
        f'sources = ["git"]\n[repos.vllm]\ngit = "{fake_vllm.url}"\n'
    )
    return load_config()


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    """A fresh index database."""
    with open_database(tmp_path / "index.db") as opened:
        yield opened


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the children that ``os.fork`` starts during the test, as the parent
    sees them."""
    pids: list[int] = []
    real_fork = os.fork

    def recording_fork() -> int:
        pid = real_fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", recording_fork)
    return pids
