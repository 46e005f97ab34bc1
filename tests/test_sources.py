"""Where versions come from: the shallow git mirror, PyPI wheels via pip, local paths."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path

import fakevllm as fv
import pytest
from fakevllm import FakeRepo

from db.database import open_database
from indexer import git_source, sources
from indexer.config import RepoConfig, load_config
from indexer.errors import SourceError, VersionNotFound
from indexer.git_source import GitMirror
from indexer.models import FileEntry
from indexer.pipeline import index_version
from indexer.sources import (
    blob_id,
    fetch_wheel,
    open_local,
    open_snapshot,
    open_wheel,
    pypi_version,
)

TAG_PARAMS = [pytest.param(tag, id=tag) for tag in fv.TAGS]
WHEEL_TAGS = [pytest.param("v0.1.0", id="v0.1.0"), pytest.param("v0.2.0", id="v0.2.0")]


# ------------------------------------------------------------------------------ helpers


def _cache() -> Path:
    return Path.cwd() / "xdg-cache" / "annotate"


def _mirror() -> Path:
    (mirror,) = (_cache() / "git").glob("vllm-*.git")
    return mirror


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, env=fv.git_env(), capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _repo(url: str | None, sources: tuple[str, ...] = ("git",), name: str = "vllm") -> RepoConfig:
    return RepoConfig(name=name, git=url, pypi="vllm", sources=sources,
                      config_name="annotate.toml")


@pytest.fixture
def wheels(fake_wheels: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip sees only the fake wheels."""
    return _pip_sees_only(fake_wheels, monkeypatch)


def _pip_sees_only(links: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    return links


def _write_config(text: str) -> None:
    Path("annotate.toml").write_text(text)


def _tree(repo: Path, tag: str) -> dict[str, str]:
    """path -> blob id of the regular files of ``tag``."""
    out = _git(repo, "ls-tree", "-r", "-z", tag)
    entries = {}
    for record in filter(None, out.split("\0")):
        meta, path = record.split("\t", 1)
        mode, _, sha = meta.split()
        if mode != "120000":
            entries[path] = sha
    return entries


# ------------------------------------------------------------------------------ git


@pytest.mark.parametrize("tag", TAG_PARAMS)
def test_git_snapshot_is_the_tag_commit_and_its_files(fake_vllm: FakeRepo, tag: str) -> None:
    with open_snapshot(_repo(fake_vllm.url), tag, _cache()) as snapshot:
        info = snapshot.info
        contents = {entry.path: snapshot.read(entry) for entry in info.files}
    assert (info.repo, info.version, info.source_kind) == ("vllm", tag, "git")
    assert info.commit_sha == fake_vllm.commits[tag]
    assert info.wheel_sha256 is None
    assert {e.path: e.blob_id for e in info.files} == _tree(fake_vllm.path, tag)
    assert contents == fv.regular_files(fv.VERSIONS[tag])
    assert all(e.size == len(contents[e.path]) for e in info.files)
    assert all(blob_id(data) == e.blob_id for e in info.files for data in [contents[e.path]])


def test_annotated_tag_peels_to_its_commit(fake_vllm: FakeRepo) -> None:
    tag_object = _git(fake_vllm.path, "rev-parse", "v0.2.0")
    assert tag_object != fake_vllm.commits["v0.2.0"]  # the fixture's tag really is annotated
    with open_snapshot(_repo(fake_vllm.url), "v0.2.0", _cache()) as snapshot:
        assert snapshot.info.commit_sha == fake_vllm.commits["v0.2.0"]


def test_mirror_is_bare_shallow_and_holds_only_the_tags_asked_for(fake_vllm: FakeRepo) -> None:
    with open_snapshot(_repo(fake_vllm.url), "v0.2.0", _cache()):
        pass
    mirror = _mirror()
    assert _git(mirror, "rev-parse", "--is-bare-repository") == "true"
    assert _git(mirror, "rev-parse", "--is-shallow-repository") == "true"
    assert (mirror / "shallow").read_text().split() == [fake_vllm.commits["v0.2.0"]]
    assert _git(mirror, "for-each-ref", "--format=%(refname)") == "refs/tags/v0.2.0"
    assert _git(mirror, "rev-list", "--all").split() == [fake_vllm.commits["v0.2.0"]]

    with open_snapshot(_repo(fake_vllm.url), "v0.1.0", _cache()):
        pass
    assert _git(mirror, "tag", "--list").split() == ["v0.1.0", "v0.2.0"]
    assert sorted((mirror / "shallow").read_text().split()) == sorted(
        fake_vllm.commits[tag] for tag in ("v0.1.0", "v0.2.0")
    )


def _git_children() -> list[str]:
    """Command lines of this process's live git children (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and cmdline.startswith("git "):
            found.append(cmdline.strip())
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_git_reads_go_through_one_cat_file_batch(fake_vllm: FakeRepo) -> None:
    with open_snapshot(_repo(fake_vllm.url), "v0.1.0", _cache()) as snapshot:
        assert _git_children() == []  # ls-tree ran and finished
        for entry in snapshot.info.files:
            snapshot.read(entry)
        assert _git_children() == ["git cat-file --batch"]
    assert _git_children() == []


def test_tag_in_the_mirror_is_read_offline(fake_vllm: FakeRepo, tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    shutil.copytree(fake_vllm.path, origin, symlinks=True)
    _write_config(f'sources = ["git"]\n[repos.vllm]\ngit = "{origin}"\n')
    config = load_config()
    with open_database(tmp_path / "one.db") as database:
        first = index_version(database, config, "vllm", "v0.1.0")
    shutil.rmtree(origin)
    with open_database(tmp_path / "two.db") as database:
        second = index_version(database, config, "vllm", "v0.1.0")
        paths = database.conn.execute("SELECT count(*) FROM files").fetchone()[0]
    assert (second.source, second.source_id) == ("git", fake_vllm.commits["v0.1.0"])
    assert (second.files, second.symbols) == (first.files, first.symbols) == (paths, first.symbols)
    with pytest.raises(VersionNotFound, match=r"git: .*origin"):
        open_snapshot(config.repo("vllm"), "v0.2.0", config.cache_dir)


def test_concurrent_fetches_into_one_mirror_all_succeed(fake_vllm: FakeRepo) -> None:
    script = (
        "import sys; from pathlib import Path\n"
        "from indexer.config import RepoConfig\n"
        "from indexer.sources import open_snapshot\n"
        "repo = RepoConfig(name='vllm', git=sys.argv[1], sources=('git',), "
        "config_name='annotate.toml')\n"
        "with open_snapshot(repo, sys.argv[2], Path(sys.argv[3])) as s:\n"
        "    print(s.info.commit_sha)\n"
    )
    tags = ["v0.1.0", "v0.2.0", "v0.3.0", "v0.1.0", "v0.2.0"]
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", script, fake_vllm.url, tag, str(_cache())],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for tag in tags
    ]
    results = [(run.communicate(timeout=60), run.returncode) for run in runs]
    assert [(out.strip(), err, code) for (out, err), code in results] == [
        (fake_vllm.commits[tag], "", 0) for tag in tags
    ]


def test_unreachable_git_url_fails_fast() -> None:
    started = time.monotonic()
    with pytest.raises(VersionNotFound) as caught:
        open_snapshot(_repo("https://127.0.0.1:9/x.git"), "v0.1.0", _cache())
    assert time.monotonic() - started < 10
    assert caught.value.message.startswith(
        "vllm@v0.1.0 was not found (git: https://127.0.0.1:9/x.git: "
    )


def test_the_users_own_git_stall_limit_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_HTTP_LOW_SPEED_TIME", "7")
    monkeypatch.delenv("GIT_HTTP_LOW_SPEED_LIMIT", raising=False)
    fetch_env = {**os.environ, **git_source._fetch_env()}  # as GitPython runs git
    assert fetch_env["GIT_HTTP_LOW_SPEED_TIME"] == "7"
    assert fetch_env["GIT_HTTP_LOW_SPEED_LIMIT"] == "1000"


def test_unknown_tag_names_the_missing_ref(fake_vllm: FakeRepo) -> None:
    with pytest.raises(VersionNotFound) as caught:
        open_snapshot(_repo(fake_vllm.url), "v9.9.9", _cache())
    assert caught.value.message == (
        f"vllm@v9.9.9 was not found (git: {fake_vllm.url}: "
        "couldn't find remote ref refs/tags/v9.9.9)"
    )
    assert "\n" not in str(caught.value)


def test_relative_path_git_url_is_a_local_repo(fake_vllm: FakeRepo, tmp_path: Path) -> None:
    shutil.copytree(fake_vllm.path, tmp_path / "checkout", symlinks=True)
    with open_snapshot(_repo("checkout"), "v0.3.0", _cache()) as snapshot:
        assert snapshot.info.commit_sha == fake_vllm.commits["v0.3.0"]


@pytest.mark.parametrize("written", ["mirror/checkout", "./mirror/checkout"])
def test_relative_git_path_in_config_is_relative_to_the_config_file(
    fake_vllm: FakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, written: str
) -> None:
    project = tmp_path / "project"
    shutil.copytree(fake_vllm.path, project / "mirror" / "checkout", symlinks=True)
    (project / "annotate.toml").write_text(f'[repos.vllm]\ngit = "{written}"\n')
    (project / "sub").mkdir()
    monkeypatch.chdir(project / "sub")  # not where the config file is
    repo = load_config(project).repo("vllm")
    assert repo.git == str(project / written)
    with open_snapshot(repo, "v0.3.0", _cache()) as snapshot:
        assert snapshot.info.commit_sha == fake_vllm.commits["v0.3.0"]


def test_commit_sha_version_is_fetched_by_id(fake_vllm: FakeRepo) -> None:
    sha = fake_vllm.commits["v0.1.0"]
    with open_snapshot(_repo(fake_vllm.url), sha, _cache()) as snapshot:
        assert snapshot.info.commit_sha == sha
        assert {e.path for e in snapshot.info.files} == set(
            fv.regular_files(fv.VERSIONS["v0.1.0"])
        )


# ------------------------------------------------------------------------------ pypi


PYPI_VERSIONS = [
    pytest.param("v0.1.0", "0.1.0", id="v-prefix-dropped"),
    pytest.param("0.1.0", "0.1.0", id="plain"),
    pytest.param("v0.23.1rc0", "0.23.1rc0", id="pre-release"),
    pytest.param("v1", "1", id="single-number"),
    pytest.param("version", "version", id="v-then-letter-kept"),
    pytest.param("main", "main", id="branch-name"),
]


@pytest.mark.parametrize(("version", "expected"), PYPI_VERSIONS)
def test_pypi_version(version: str, expected: str) -> None:
    assert pypi_version(version) == expected


@pytest.mark.parametrize("tag", WHEEL_TAGS)
def test_wheel_is_downloaded_with_pip_and_cached(wheels: Path, tag: str) -> None:
    name = fv.wheel_filename("vllm", tag[1:])
    with open_snapshot(_repo(None, ("pypi",)), tag, _cache()) as snapshot:
        info = snapshot.info
        contents = {entry.path: snapshot.read(entry) for entry in info.files}
    cached = _cache() / "wheels" / "vllm" / tag[1:] / name
    assert cached.read_bytes() == (wheels / name).read_bytes()
    assert (info.source_kind, info.commit_sha) == ("pypi", None)
    assert info.wheel_sha256 == hashlib.sha256((wheels / name).read_bytes()).hexdigest()
    assert contents == fv.python_files(tag)  # .py members only, at their repo paths
    assert all(blob_id(contents[e.path]) == e.blob_id for e in info.files)
    assert list((_cache() / "wheels" / "vllm").iterdir()) == [cached.parent]  # no staging left


def test_a_wheel_whose_requires_python_excludes_this_python_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requires-Python says which Pythons may run the package (vLLM 0.20.0: <3.15,>=3.10;
    LMCache 0.5.1: <3.14,>=3.10); annotate only reads its files."""
    links = _pip_sees_only(tmp_path / "links", monkeypatch)
    links.mkdir()
    wheel = fv.write_wheel(links, "vllm", "0.1.0", requires_python="<3")
    fetched = fetch_wheel(_repo(None, ("pypi",)), "v0.1.0", _cache())
    assert (fetched.name, fetched.read_bytes()) == (wheel.name, wheel.read_bytes())


def test_cached_wheel_is_used_without_pip(wheels: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = fetch_wheel(_repo(None, ("pypi",)), "v0.1.0", _cache())
    monkeypatch.setenv("PIP_FIND_LINKS", str(Path.cwd() / "empty"))
    assert fetch_wheel(_repo(None, ("pypi",)), "v0.1.0", _cache()) == first


def test_a_lockless_staging_folder_is_removed_only_when_stale(wheels: Path) -> None:
    """A folder without a lock (left by a version of annotate before locks, or where there
    are none: Windows) is a live download's as long as one may take: pip, then pip again
    for another machine's wheel, each for up to PIP_TIMEOUT_SECONDS."""
    parent = _cache() / "wheels" / "vllm"
    stale, running, retrying = (parent / f".download-{name}"
                                for name in ("killed", "running", "retrying"))
    for folder in (stale, running, retrying):
        folder.mkdir(parents=True)
        (folder / "part.whl").write_bytes(b"partial")
    now = time.time()
    for folder, age in ((stale, 2 * sources.PIP_TIMEOUT_SECONDS + 60),
                        (retrying, sources.PIP_TIMEOUT_SECONDS + 60)):
        os.utime(folder, (now - age, now - age))
    fetch_wheel(_repo(None, ("pypi",)), "v0.1.0", _cache())
    assert (stale.exists(), running.exists(), retrying.exists()) == (False, True, True)


def _stalling_wheel_folder(tmp_path: Path) -> Path:
    """A find-links folder whose wheel is a FIFO: pip blocks reading it until it is written."""
    folder = tmp_path / "stalling"
    folder.mkdir()
    os.mkfifo(folder / fv.wheel_filename("vllm", "0.1.0"))
    return folder


def _open_once_read(fifo: Path, timeout: float = 60) -> int:
    """Open ``fifo`` for writing once a reader (pip) has opened it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: no reader yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.mark.parametrize("log_has_a_name", [
    pytest.param(False, id="a-log-with-no-name"),
    pytest.param(True, id="a-log-with-a-name-as-on-windows"),
])
def test_a_download_killed_with_sigkill_is_reclaimed_once_its_pip_is_gone(
    wheels: Path, tmp_path: Path, log_has_a_name: bool
) -> None:
    """``kill -9`` runs no cleanup; the orphaned pip may still be writing into the folder, so
    it is left while pip lives, and the next download removes it as soon as pip is gone,
    not half an hour later, with pip's own temporary folders and its debug log (where it
    has a name), which are kept in it."""
    stalling = _stalling_wheel_folder(tmp_path)
    killed_temp = tmp_path / "killed-tmp"
    killed_temp.mkdir()
    fetch = (f"import indexer.sources; indexer.sources.PIP_LOG_HAS_A_NAME = {log_has_a_name}; "
             "import sys; from pathlib import Path; from indexer.config import RepoConfig; "
             "from indexer.sources import fetch_wheel; fetch_wheel(RepoConfig(name='vllm', "
             "git=None, pypi='vllm', sources=('pypi',), config_name='annotate.toml'), 'v0.1.0', "
             "Path(sys.argv[1]))")
    killed = subprocess.Popen(
        [sys.executable, "-c", fetch, str(_cache())], start_new_session=True,
        env={**os.environ, "PIP_FIND_LINKS": str(stalling), "TMPDIR": str(killed_temp)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        writer = _open_once_read(stalling / fv.wheel_filename("vllm", "0.1.0"))
        killed.kill()  # annotate's process only: its pip goes on reading the wheel
        killed.wait()
        (staging,) = (_cache() / "wheels" / "vllm").glob(".download-*")
        assert [p.name for p in (staging / "pip-tmp").iterdir() if p.name.startswith("pip-")]
        fetch_wheel(_repo(None, ("pypi",)), "v0.2.0", _cache())
        assert staging.is_dir()  # pip still holds it
        os.killpg(killed.pid, signal.SIGKILL)
        os.close(writer)
        _wait_for_no_process_in_session(killed.pid)
        cached = fetch_wheel(_repo(None, ("pypi",)), "v0.1.0", _cache())
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(killed.pid, signal.SIGKILL)
    assert not staging.exists()
    assert sorted(p.name for p in (_cache() / "wheels" / "vllm").iterdir()) == ["0.1.0", "0.2.0"]
    assert cached.read_bytes() == (wheels / cached.name).read_bytes()
    assert list(killed_temp.iterdir()) == []  # pip's were in the staging folder


def test_a_download_stopped_with_sigterm_leaves_nothing(wheels: Path, tmp_path: Path) -> None:
    """SIGTERM to the run's process group (a CI job cancelled) ends pip at once, before it
    removes its temporary folders (the wheel as it arrives): they were in the staging
    folder, which the run removes as it stops."""
    stalling = _stalling_wheel_folder(tmp_path)
    run_temp = tmp_path / "run-tmp"
    run_temp.mkdir()
    _write_config('[repos.vllm]\nsources = ["pypi"]\n')
    run = subprocess.Popen(
        [sys.executable, "-m", "annotate_cli", "index", "vllm@v0.1.0"],
        start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PIP_FIND_LINKS": str(stalling), "TMPDIR": str(run_temp)},
    )
    try:
        writer = _open_once_read(stalling / fv.wheel_filename("vllm", "0.1.0"))
        os.killpg(run.pid, signal.SIGTERM)
        out, err = run.communicate(timeout=60)
        os.close(writer)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)
    assert (run.returncode, out, err) == (
        128 + signal.SIGTERM, "", "Interrupted; nothing half-written was kept.\n")
    assert list(run_temp.iterdir()) == []
    assert list((_cache() / "wheels" / "vllm").iterdir()) == []


def _wait_for_no_process_in_session(session: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while any(_session_of(stat) == session for stat in Path("/proc").glob("[0-9]*/stat")):
        assert time.monotonic() < deadline, "the orphaned pip did not end"
        time.sleep(0.05)


def _session_of(stat: Path) -> int | None:
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except OSError:  # the process ended meanwhile
        return None
    return int(fields[3]) if fields[0] != "Z" else None  # a zombie holds no files


def test_a_failed_download_leaves_nothing(wheels: Path) -> None:
    with pytest.raises(VersionNotFound):
        fetch_wheel(_repo(None, ("pypi",)), "v9.9.9", _cache())
    assert list((_cache() / "wheels" / "vllm").iterdir()) == []


def test_corrupt_cached_wheel_is_downloaded_again(wheels: Path) -> None:
    folder = _cache() / "wheels" / "vllm" / "0.1.0"
    folder.mkdir(parents=True)
    corrupt = folder / fv.wheel_filename("vllm", "0.1.0")
    corrupt.write_bytes(b"not a zip")
    fetched = fetch_wheel(_repo(None, ("pypi",)), "v0.1.0", _cache())
    assert fetched.read_bytes() == (wheels / corrupt.name).read_bytes()


ANOTHER_PLATFORM = "manylinux_2_28_x86_64" if sys.platform == "darwin" else "macosx_11_0_arm64"
"""A platform whose wheels this machine's pip does not take. No Python annotate runs on
(3.10 and later) takes a cp39-cp39 wheel, whatever the platform."""

WHEELS_OF_OTHER_MACHINES = [
    pytest.param([f"cp38-abi3-{ANOTHER_PLATFORM}"], f"cp38-abi3-{ANOTHER_PLATFORM}",
                 id="another-platform"),
    pytest.param(["cp39-cp39-manylinux_2_28_x86_64"], "cp39-cp39-manylinux_2_28_x86_64",
                 id="another-python"),
    pytest.param(["cp39-cp39-manylinux_2_27_x86_64.manylinux_2_28_x86_64"],
                 "cp39-cp39-manylinux_2_27_x86_64.manylinux_2_28_x86_64",
                 id="a-tag-naming-two-platforms"),
    pytest.param([f"py3-none-{ANOTHER_PLATFORM}"], f"py3-none-{ANOTHER_PLATFORM}",
                 id="pure-python-for-another-platform"),
    pytest.param(["pp39-pypy39_pp73-win_amd64"], "pp39-pypy39_pp73-win_amd64", id="pypy"),
    pytest.param(["cp39-cp39-manylinux_2_28_aarch64", "cp39-cp39-macosx_11_0_arm64",
                  "cp39-cp39-manylinux_2_28_x86_64", "cp39-cp39-win_amd64"],
                 "cp39-cp39-manylinux_2_28_x86_64", id="linux-x86-64-first"),
    pytest.param(["cp39-cp39-manylinux_2_28_x86_64", "py3-none-any"], "py3-none-any",
                 id="this-machines-wheel-first"),
]


@pytest.mark.parametrize(("tags", "taken"), WHEELS_OF_OTHER_MACHINES)
def test_a_wheel_of_another_platform_or_python_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tags: list[str], taken: str
) -> None:
    """pip takes only the wheels this machine could install: vLLM publishes manylinux ones
    alone, LMCache 0.5.1 CPython 3.11's; annotate reads their .py members, the same in
    every wheel of a version."""
    links = _pip_sees_only(tmp_path / "links", monkeypatch)
    links.mkdir()
    for tag in tags:
        fv.write_wheel(links, "vllm", "0.1.0", tag, requires_python=">=3.10")
    fv.write_wheel(links, "vllm", "0.2.0", "py3-none-any")
    with open_snapshot(_repo(None, ("pypi",)), "v0.1.0", _cache()) as snapshot:
        info = snapshot.info
        contents = {entry.path: snapshot.read(entry) for entry in info.files}
    wheel = links / fv.wheel_filename("vllm", "0.1.0", taken)
    (cached,) = (_cache() / "wheels" / "vllm" / "0.1.0").glob("*.whl")
    assert (cached.name, cached.read_bytes()) == (wheel.name, wheel.read_bytes())
    assert info.wheel_sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert contents == fv.python_files("v0.1.0")


@pytest.mark.parametrize(("asked", "published"), [
    pytest.param("v0.1", "0.1.0", id="a-version-with-fewer-zeros"),
    pytest.param("v0.1.0.0", "0.1.0", id="a-version-with-more-zeros"),
    pytest.param("v0.1.0", "0.1.0+cu129", id="a-wheel-with-a-local-part"),
    pytest.param("v0.1.0+cu129", "0.1.0+cu129", id="the-local-part-asked"),
    pytest.param("v0.1.0+CU129", "0.1.0+cu129", id="the-local-part-in-capitals"),
])
def test_a_wheel_of_another_machine_is_taken_for_the_version_pip_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, asked: str, published: str
) -> None:
    """pip takes for vllm==0.1 the wheel of 0.1.0, and for vllm==0.1.0 the one of
    0.1.0+cu129 (PEP 440's ==): of another machine's wheel, annotate asks the same."""
    links = _pip_sees_only(tmp_path / "links", monkeypatch)
    links.mkdir()
    wheel = fv.write_wheel(links, "vllm", published, f"cp39-cp39-{ANOTHER_PLATFORM}",
                           code_of="v0.1.0")
    with open_snapshot(_repo(None, ("pypi",)), asked, _cache()) as snapshot:
        assert snapshot.info.wheel_sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest()


@pytest.mark.parametrize(("asked", "published"), [
    pytest.param("v0.1.0", "0.1.0.post1", id="a-post-release"),
    pytest.param("v0.1.0+cu129", "0.1.0", id="a-local-part-the-wheel-has-not"),
    pytest.param("v0.1.0+cu129", "0.1.0+cu130", id="another-local-part"),
    pytest.param("v0.1", "0.1.1", id="a-later-version"),
])
def test_a_wheel_of_another_machine_pip_would_not_match_is_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, asked: str, published: str
) -> None:
    links = _pip_sees_only(tmp_path / "links", monkeypatch)
    links.mkdir()
    fv.write_wheel(links, "vllm", published, f"cp39-cp39-{ANOTHER_PLATFORM}", code_of="v0.1.0")
    with pytest.raises(VersionNotFound, match="No matching distribution"):
        open_snapshot(_repo(None, ("pypi",)), asked, _cache())


def test_a_wheel_of_another_platform_is_taken_from_an_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As from PyPI: a PEP 503 page whose link says the wheel's Requires-Python."""
    wheel = fv.write_wheel(tmp_path, "vllm", "0.1.0", "cp39-cp39-manylinux_2_28_aarch64")
    page = tmp_path / "simple" / "vllm" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(f'<a href="{wheel.as_uri()}" data-requires-python="&lt;3.10">'
                    f"{wheel.name}</a>\n")
    monkeypatch.setenv("PIP_INDEX_URL", (tmp_path / "simple").as_uri())
    fetched = fetch_wheel(_repo(None, ("pypi",)), "v0.1.0", _cache())
    assert (fetched.name, fetched.read_bytes()) == (wheel.name, wheel.read_bytes())


def test_a_wheel_of_another_platform_is_taken_where_the_log_has_a_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows has no /dev/fd: pip's debug log, which names the wheels pip skipped, is a
    file in the temporary folder, which is left empty (the autouse fixture checks)."""
    monkeypatch.setattr(sources, "PIP_LOG_HAS_A_NAME", True)
    links = _pip_sees_only(tmp_path / "links", monkeypatch)
    links.mkdir()
    wheel = fv.write_wheel(links, "vllm", "0.1.0", "cp39-cp39-win_amd64")
    fetched = fetch_wheel(_repo(None, ("pypi",)), "v0.1.0", _cache())
    assert (fetched.name, fetched.read_bytes()) == (wheel.name, wheel.read_bytes())


def test_a_link_of_a_million_characters_on_the_index_page_is_read_in_linear_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pip's debug log names every link of the page (pip itself reads this one in half a
    second): looking for wheel names in it went back over the link from each of its
    characters, about 45 minutes for this one."""
    wheel = fv.write_wheel(tmp_path, "vllm", "0.1.0", "cp39-cp39-win_amd64")
    page = tmp_path / "links.html"
    page.write_text(f'<a href="https://127.0.0.1:9/{"x" * 1_000_000}">x</a>\n'
                    f'<a href="{wheel.as_uri()}">{wheel.name}</a>\n')
    _pip_sees_only(page, monkeypatch)
    started = time.monotonic()
    fetched = fetch_wheel(_repo(None, ("pypi",)), "v0.1.0", _cache())
    assert time.monotonic() - started < 20
    assert (fetched.name, fetched.read_bytes()) == (wheel.name, wheel.read_bytes())


def test_no_wheel_of_the_version_for_any_machine_is_not_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    links = _pip_sees_only(tmp_path / "links", monkeypatch)
    links.mkdir()
    fv.write_wheel(links, "vllm", "0.1.0", "cp39-cp39-manylinux_2_28_x86_64")
    with pytest.raises(VersionNotFound) as caught:
        fetch_wheel(_repo(None, ("pypi",)), "v0.2.0", _cache())
    assert caught.value.message == (
        "pip: vllm==0.2.0: No matching distribution found for vllm==0.2.0")



@pytest.mark.parametrize("version", [
    pytest.param("v" + "1" * 256, id="a-number-longer-than-a-file-name"),
    pytest.param("rc" + "a" * 300, id="a-name-longer-than-a-file-name"),
])
def test_a_version_too_long_for_a_file_name_is_not_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    links = _pip_sees_only(tmp_path / "links", monkeypatch)
    links.mkdir()
    cache = _cache()
    with pytest.raises(VersionNotFound) as caught:
        open_snapshot(_repo(None, ("pypi",)), version, cache)
    number = version.removeprefix("v")
    assert caught.value.message == (
        f"vllm@{version} was not found (pypi: pip: vllm=={number}: no release has a name "
        "that long)")

def test_a_wheel_of_another_machine_that_pip_refuses_names_its_tag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    links = _pip_sees_only(tmp_path / "links", monkeypatch)
    links.mkdir()
    misnamed = fv.write_wheel(links, "vllm", "0.2.0", "cp39-cp39-manylinux_2_28_x86_64")
    misnamed.rename(links / fv.wheel_filename("vllm", "0.1.0", "cp39-cp39-manylinux_2_28_x86_64"))
    with pytest.raises(VersionNotFound) as caught:
        fetch_wheel(_repo(None, ("pypi",)), "v0.1.0", _cache())
    assert caught.value.message == (
        "pip: vllm==0.1.0: No matching distribution found for vllm==0.1.0; tried again for "
        "the wheel cp39-cp39-manylinux_2_28_x86_64 of another machine: No matching "
        "distribution found for vllm==0.1.0")
    assert list((_cache() / "wheels" / "vllm").iterdir()) == []


def test_pip_failure_names_the_requirement(wheels: Path) -> None:
    with pytest.raises(VersionNotFound) as caught:
        open_snapshot(_repo(None, ("pypi",)), "v9.9.9", _cache())
    assert caught.value.message == (
        "vllm@v9.9.9 was not found (pypi: pip: vllm==9.9.9: "
        "No matching distribution found for vllm==9.9.9)"
    )


def test_git_failure_falls_back_to_pypi(wheels: Path, tmp_path: Path) -> None:
    missing = tmp_path / "does-not-exist"
    repo = _repo(str(missing), ("git", "pypi"))
    with open_snapshot(repo, "v0.1.0", _cache()) as snapshot:
        assert snapshot.info.source_kind == "pypi"
        assert snapshot.info.passed_over == (
            f"git: {missing.as_uri()}: '{missing}' does not appear to be a git repository",)


def test_unusable_mirror_falls_back_to_pypi(wheels: Path, fake_vllm: FakeRepo) -> None:
    mirror = GitMirror(_repo(fake_vllm.url), _cache()).path
    mirror.mkdir(parents=True)
    (mirror / "HEAD").write_text("garbage\n")
    with open_snapshot(_repo(fake_vllm.url, ("git", "pypi")), "v0.1.0", _cache()) as snapshot:
        assert snapshot.info.source_kind == "pypi"


def test_neither_source_names_both_causes(wheels: Path, fake_vllm: FakeRepo) -> None:
    with pytest.raises(VersionNotFound) as caught:
        open_snapshot(_repo(fake_vllm.url, ("git", "pypi")), "v9.9.9", _cache())
    assert caught.value.message == (
        f"vllm@v9.9.9 was not found (git: {fake_vllm.url}: couldn't find remote ref "
        "refs/tags/v9.9.9; pypi: pip: vllm==9.9.9: No matching distribution found for "
        "vllm==9.9.9)"
    )


def test_no_source_configured() -> None:
    with pytest.raises(VersionNotFound, match=r"\(no git or pypi source is configured\)"):
        open_snapshot(RepoConfig(name="bare", config_name="annotate.toml"), "v1", _cache())


SOURCE_ORDERS = [
    pytest.param('sources = ["pypi"]\n[repos.vllm]\n', "pypi", id="top-level-pypi"),
    pytest.param('[repos.vllm]\nsources = ["pypi", "git"]\n', "pypi", id="repo-pypi-first"),
    pytest.param('sources = ["pypi"]\n[repos.vllm]\nsources = ["git"]\n', "git",
                 id="repo-overrides-top-level"),
    pytest.param("[repos.vllm]\n", "git", id="default-git-first"),
]


@pytest.mark.parametrize(("toml", "source"), SOURCE_ORDERS)
def test_source_order_is_configurable(
    wheels: Path, fake_vllm: FakeRepo, toml: str, source: str
) -> None:
    _write_config(toml + f'git = "{fake_vllm.url}"\n')
    config = load_config()
    with open_snapshot(config.repo("vllm"), "v0.1.0", config.cache_dir) as snapshot:
        assert snapshot.info.source_kind == source


def test_same_file_from_git_and_wheel_is_one_blob(wheels: Path, fake_vllm: FakeRepo) -> None:
    _write_config(
        f'[repos.vllm]\ngit = "{fake_vllm.url}"\nsources = ["git"]\n'
        '[repos.vllm-wheel]\npypi = "vllm"\nsources = ["pypi"]\n'
    )
    config = load_config()
    with open_database(Path("index.db")) as database:
        from_git = index_version(database, config, "vllm", "v0.1.0")
        from_wheel = index_version(database, config, "vllm-wheel", "v0.1.0")
        rows = database.conn.execute(
            "SELECT g.path, g.blob_id, w.blob_id FROM version_files g JOIN version_files w"
            " ON w.path = g.path AND w.repo = 'vllm-wheel' WHERE g.repo = 'vllm'"
        ).fetchall()
    assert from_wheel.source == "pypi" and from_git.source == "git"
    assert {path for path, _, _ in rows} == set(fv.python_files("v0.1.0"))
    assert all(git_blob == wheel_blob for _, git_blob, wheel_blob in rows)
    assert (from_wheel.new_blobs, from_wheel.parsed, from_wheel.symbols) == (0, 0, 0)


# ------------------------------------------------------------------------------ local


def test_local_directory_skips_symlinks_and_git(fake_vllm: FakeRepo, tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    fv.write_snapshot(checkout, fv.VERSIONS["v0.1.0"])
    (checkout / ".git").mkdir()
    (checkout / ".git" / "config.py").write_text("x = 1\n")
    with open_local(_repo(None), "v0.1.0", checkout) as snapshot:
        info = snapshot.info
        contents = {entry.path: snapshot.read(entry) for entry in info.files}
    assert (info.source_kind, info.commit_sha, info.wheel_sha256) == ("local", None, None)
    assert contents == fv.regular_files(fv.VERSIONS["v0.1.0"])
    assert {e.path: e.blob_id for e in info.files} == _tree(fake_vllm.path, "v0.1.0")


def test_local_wheel(fake_wheels: Path) -> None:
    wheel = fake_wheels / fv.wheel_filename("vllm", "0.2.0")
    with open_local(_repo(None), "v0.2.0", wheel) as snapshot:
        assert snapshot.info.wheel_sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest()
        assert {e.path for e in snapshot.info.files} == set(fv.python_files("v0.2.0"))


SOURCE = "".join(f"def f{number}(x):\n    return x * {number}\n" for number in range(300))


def _indexed_content(wheel: Path) -> bytes:
    """What the index stores as the content of the one member of ``wheel``."""
    _write_config('[repos.vllm]\nversions = ["v1"]\n')
    with open_database(Path("index.db")) as database:
        index_version(database, load_config(), "vllm", "v1", from_path=wheel)
        (content,) = database.conn.execute("SELECT content FROM blobs").fetchone()
    return content


def test_a_deflated_wheel_member_is_stored_as_the_wheel_compressed_it(tmp_path: Path) -> None:
    """Its deflate data in a zlib stream (2 bytes before, 4 after), not compressed again."""
    wheel = tmp_path / "vllm-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm/big.py", SOURCE, zipfile.ZIP_DEFLATED, compresslevel=9)
        (member,) = archive.infolist()
    content = _indexed_content(wheel)
    assert zlib.decompress(content) == SOURCE.encode()
    assert len(content) == member.compress_size + 6


def test_a_deflated_binary_wheel_member_stores_no_content(tmp_path: Path) -> None:
    wheel = tmp_path / "vllm-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm/blob.py", b"\0\1" * 4000, zipfile.ZIP_DEFLATED)
    assert _indexed_content(wheel) is None


def test_a_wheel_member_stored_uncompressed_is_compressed(tmp_path: Path) -> None:
    wheel = tmp_path / "vllm-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm/big.py", SOURCE, zipfile.ZIP_STORED)
    content = _indexed_content(wheel)
    assert zlib.decompress(content) == SOURCE.encode()
    assert len(content) < len(SOURCE) // 2


def test_local_directory_without_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty" / ".git").mkdir(parents=True)
    (tmp_path / "empty" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    _write_config('[repos.vllm]\nversions = ["v1"]\n')
    with open_database(Path("index.db")) as database, pytest.raises(
            SourceError, match="has no .py file to index"):
        index_version(database, load_config(), "vllm", "v1", from_path=tmp_path / "empty")


def test_local_path_must_be_a_directory_or_wheel(tmp_path: Path) -> None:
    other = tmp_path / "vllm.tar.gz"
    other.write_bytes(b"x")
    with pytest.raises(SourceError, match="is neither a directory nor a .whl file"):
        open_local(_repo(None), "v1", other)


def test_wheel_members_outside_the_tree_are_ignored(tmp_path: Path) -> None:
    wheel = tmp_path / "evil-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pkg/ok.py", "x = 1\n")
        archive.writestr("pkg/data.json", "{}")
        archive.writestr("../escape.py", "x = 1\n")
        archive.writestr("pkg/sub/../../../up.py", "x = 1\n")
        archive.writestr("/abs.py", "x = 1\n")
        archive.writestr("evil-1.0.dist-info/hook.py", "x = 1\n")
        archive.writestr("evil-1.0.data/scripts/tool.py", "x = 1\n")
    with open_wheel(_repo(None), "v1", wheel) as snapshot:
        assert [e.path for e in snapshot.info.files] == ["pkg/ok.py"]


def test_unreadable_cached_wheel_is_removed_with_a_hint(tmp_path: Path) -> None:
    wheel = tmp_path / "broken-1.0-py3-none-any.whl"
    wheel.write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(SourceError, match="is unreadable .*it was removed from the cache"):
        open_wheel(_repo(None), "v1", wheel, cached=True)
    assert not wheel.exists()


def test_unreadable_user_wheel_is_never_deleted(tmp_path: Path) -> None:
    wheel = tmp_path / "mine-1.0-py3-none-any.whl"
    wheel.write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(SourceError, match="is unreadable") as caught:
        open_wheel(_repo(None), "v1", wheel)
    assert "removed" not in str(caught.value)
    assert wheel.read_bytes() == b"PK\x03\x04 truncated"


def test_what_the_reader_of_members_raises_is_not_taken_for_an_unreadable_wheel(
    tmp_path: Path,
) -> None:
    """The pipeline starts its parser pool as the members are read: an OSError of its own
    (no process could be forked, too many open files) is raised as it was, and the cached
    wheel, readable, is kept."""
    wheel = tmp_path / "ok-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pkg/ok.py", "x = 1\n")
        archive.writestr("pkg/other.py", "y = 2\n")
    read: list[str] = []

    def fork_failed(entry: FileEntry, data: bytes, stream: bytes | None) -> None:
        read.append(entry.path)
        raise BlockingIOError(11, "Resource temporarily unavailable")

    with pytest.raises(BlockingIOError):
        open_wheel(_repo(None), "v1", wheel, cached=True, on_read=fork_failed)
    assert read == ["pkg/ok.py"] and wheel.exists()
    with open_wheel(_repo(None), "v1", wheel, cached=True, on_read=lambda *member: None) as snap:
        assert [entry.path for entry in snap.info.files] == ["pkg/ok.py", "pkg/other.py"]


def test_cached_wheel_sha256_is_remembered_and_checked_by_size(tmp_path: Path) -> None:
    wheel = tmp_path / "ok-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pkg/ok.py", "x = 1\n")
    expected = hashlib.sha256(wheel.read_bytes()).hexdigest()
    with open_wheel(_repo(None), "v1", wheel, cached=True) as snapshot:
        assert snapshot.info.wheel_sha256 == expected
    sidecar = wheel.with_name(wheel.name + ".sha256")
    assert sidecar.read_text() == f"{expected} {wheel.stat().st_size}\n"
    sidecar.write_text(f"{'0' * 64} {wheel.stat().st_size + 1}\n")  # stale: size differs
    with open_wheel(_repo(None), "v1", wheel, cached=True) as snapshot:
        assert snapshot.info.wheel_sha256 == expected


def test_git_mirror_path_is_per_repo_and_url(tmp_path: Path) -> None:
    """A repo pointed at a fork gets a mirror of its own, not the tags of the first URL."""
    paths = [GitMirror(_repo(url, name=name), tmp_path).path for name, url in [
        ("lmcache", "https://github.com/LMCache/LMCache.git"),
        ("lmcache", "https://github.com/LMCache/LMCache.git"),
        ("lmcache", "https://github.com/myorg/LMCache.git"),
    ]]
    assert paths[0] == paths[1] != paths[2]
    assert all(path.parent == tmp_path / "git" and path.name.startswith("lmcache-")
               for path in paths)


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS file names must be UTF-8")
@pytest.mark.parametrize("source", ["git", "local"])
def test_a_file_name_that_is_not_utf8_is_stored_escaped(tmp_path: Path, source: str) -> None:
    checkout = tmp_path / "odd"
    (checkout / "pkg").mkdir(parents=True)
    (checkout / os.fsdecode(b"pkg/caf\xe9.py")).write_bytes(b"def brewed():\n    pass\n")
    fv.git(checkout, "init", "-q")
    fv.git(checkout, "add", "-A")
    fv.git(checkout, "commit", "-q", "-m", "odd")
    fv.git(checkout, "tag", "v1")
    _write_config(f'[repos.odd]\ngit = "{checkout}"\nsources = ["git"]\n')
    with open_database(Path("index.db")) as database:
        index_version(database, load_config(), "odd", "v1",
                      from_path=checkout if source == "local" else None)
        rows = database.conn.execute(
            "SELECT path, qualname FROM version_symbols WHERE repo = 'odd'"
        ).fetchall()
    assert rows == [("pkg/caf\\xe9.py", "brewed")]


# ------------------------------------------------------------------------------ git's environment


def test_a_git_hooks_environment_leaves_the_users_repository_alone(
    fake_vllm: FakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside a git hook, GIT_DIR and friends name the user's repository: ``git init --bare``
    of the mirror would turn it bare, and fetches would write into it."""
    user = tmp_path / "user"
    user.mkdir()
    _git(user, "init", "-q")
    _git(user, "commit", "-q", "--allow-empty", "-m", "mine")
    monkeypatch.setenv("GIT_DIR", str(user / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(user))
    monkeypatch.setenv("GIT_INDEX_FILE", str(user / ".git" / "index"))
    with open_snapshot(_repo(fake_vllm.url), "v0.1.0", _cache()) as snapshot:
        assert snapshot.info.commit_sha == fake_vllm.commits["v0.1.0"]
        assert snapshot.read(snapshot.info.files[0])
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_WORK_TREE")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert _git(user, "config", "core.bare") == "false"
    assert _git(user, "tag") == ""  # no tag fetched into it
    assert _git(_mirror(), "tag") == "v0.1.0"


@pytest.mark.parametrize(("age", "fetched"), [
    pytest.param(git_source.GIT_TIMEOUT_SECONDS + 60, True, id="stale-lock-removed"),
    pytest.param(0, False, id="recent-lock-named"),
])
def test_a_lock_left_in_the_mirror_by_a_killed_fetch(
    fake_vllm: FakeRepo, age: int, fetched: bool
) -> None:
    with open_snapshot(_repo(fake_vllm.url), "v0.1.0", _cache()):
        pass
    lock = _mirror() / "shallow.lock"
    lock.write_text("")
    os.utime(lock, (time.time() - age, time.time() - age))
    if fetched:
        with open_snapshot(_repo(fake_vllm.url), "v0.2.0", _cache()) as snapshot:
            assert snapshot.info.commit_sha == fake_vllm.commits["v0.2.0"]
        assert not lock.exists()
        return
    with pytest.raises(VersionNotFound) as caught:
        open_snapshot(_repo(fake_vllm.url), "v0.2.0", _cache())
    assert "shallow.lock': File exists" in caught.value.message
    assert "if none is, delete that file" in (caught.value.hint or "")


def test_a_git_url_that_is_no_repository_says_so(tmp_path: Path) -> None:
    missing = tmp_path / "nope.git"
    with pytest.raises(VersionNotFound) as caught:
        open_snapshot(_repo(str(missing)), "v0.1.0", _cache())
    assert f"'{missing}' does not appear to be a git repository" in caught.value.message
    assert caught.value.hint.startswith(f"check the git location of repo vllm ({missing});")


def test_a_hint_two_failed_sources_give_is_said_once(tmp_path: Path) -> None:
    missing = tmp_path / "nope.git"
    with pytest.raises(VersionNotFound) as caught:
        open_snapshot(_repo(str(missing), ("git", "git")), "v0.1.0", _cache())
    hint = f"check the git location of repo vllm ({missing});"
    assert caught.value.message.count("does not appear to be a git repository") == 2
    assert caught.value.hint.startswith(hint) and caught.value.hint.count(hint) == 1


def _checkout_with_clutter(root: Path) -> None:
    """A checkout of v0.1.0 with what a developer's folder also holds."""
    fv.write_snapshot(root, fv.VERSIONS["v0.1.0"])
    venv = root / ".venv" / "lib" / "site-packages" / "torch"
    venv.mkdir(parents=True)
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "__init__.py").write_text("class Tensor:\n    pass\n")
    (root / "vllm" / "__pycache__").mkdir(exist_ok=True)
    (root / "vllm" / "__pycache__" / "utils.cpython-311.pyc").write_bytes(b"\0junk")


@pytest.mark.parametrize("tracked", [True, False], ids=["git-work-tree", "plain-folder"])
def test_local_directory_is_the_checkout_not_its_clutter(tmp_path: Path, tracked: bool) -> None:
    checkout = tmp_path / "checkout"
    _checkout_with_clutter(checkout)
    expected = set(fv.regular_files(fv.VERSIONS["v0.1.0"]))
    if tracked:
        _git(checkout, "init", "-q")
        (checkout / ".gitignore").write_text(".venv/\n__pycache__/\nbuild/\n")
        _git(checkout, "add", "-A")
        _git(checkout, "-c", "user.name=x", "-c", "user.email=x@y", "commit", "-q", "-m", "v")
        (checkout / "build").mkdir()
        (checkout / "build" / "copy.py").write_text("x = 1\n")  # ignored
        (checkout / "scratch.py").write_text("y = 2\n")  # untracked
        expected.add(".gitignore")
    with open_local(_repo(None), "v0.1.0", checkout) as snapshot:
        assert {entry.path for entry in snapshot.info.files} == expected


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="giving the checkout to another user needs root")
def test_local_work_tree_git_will_not_read_is_refused(tmp_path: Path) -> None:
    """Git refuses a work tree another user owns: its tracked files are unknown, and
    walking the folder would index its build and scratch files without a word."""
    checkout = tmp_path / "checkout"
    _checkout_with_clutter(checkout)
    _git(checkout, "init", "-q")
    subprocess.run(["chown", "-R", "12345", str(checkout)], check=True)
    with pytest.raises(SourceError) as caught:
        open_local(_repo(None), "v0.1.0", checkout)
    assert caught.value.message.startswith(f"cannot list the files git tracks in {checkout} (")
    assert "safe.directory" in caught.value.hint


def test_local_package_folder_is_refused(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    fv.write_snapshot(checkout, fv.VERSIONS["v0.1.0"])
    with pytest.raises(SourceError) as caught:
        open_local(_repo(None), "v0.1.0", checkout / "vllm")
    assert caught.value.message == (f"{checkout / 'vllm'} is the vllm package, not the "
                                    "checkout around it: its paths would lack the leading vllm/")
    assert caught.value.hint == f"pass {checkout}"
