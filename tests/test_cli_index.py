"""``annotate index``, ``versions`` and ``symbols``: output, exit codes and one-line errors."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click
import fakevllm as fv
import pytest
from fakeproject import DB, connected, run_annotate, undo_uses_pins, write_file
from fakeproject import invoke as run
from fakevllm import FakeRepo

from db.database import open_database
from indexer.extractor import extractor_id
from indexer.sources import blob_id
from indexer.symbols import parse_blob

SECONDS = r"\d+\.\d\ds"


@pytest.fixture
def project(fake_vllm: FakeRepo, fake_lmcache: FakeRepo) -> Path:
    """annotate.toml pointing both built-in repos at the fixtures (git only)."""
    config = Path("annotate.toml")
    config.write_text(
        'sources = ["git"]\n'
        f'[repos.vllm]\ngit = "{fake_vllm.url}"\npypi = "vllm"\n'
        'versions = ["v0.1.0", "v0.2.0", "v0.3.0"]\n'
        f'[repos.lmcache]\ngit = "{fake_lmcache.url}"\n'
    )
    return config.resolve()


@pytest.fixture
def wheels(fake_wheels: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(fake_wheels))
    return fake_wheels


def _summary(repo: str, tag: str, files: dict[str, bytes], known: set[str], source: str) -> str:
    new = {blob_id(data): (path, data) for path, data in files.items()}
    new = {blob: item for blob, item in new.items() if blob not in known}
    parsed = [data for path, data in new.values() if path.endswith(".py")]
    symbols = sum(len(parse_blob("x", data).symbols) for data in parsed)
    return (
        f"{re.escape(f'{repo}@{tag}')}: {len(files)} files, {len(parsed)} new blobs parsed, "
        f"{symbols} new symbols, {SECONDS} \\({re.escape(source)}\\)"
    )


# ------------------------------------------------------------------------------ index


def test_index_prints_one_summary_line_per_version(project: Path, fake_vllm: FakeRepo) -> None:
    result = run("index", "vllm@v0.1.0", "vllm@v0.2.0")
    assert result.exit_code == 0 and result.stderr == ""
    first = fv.regular_files(fv.VERSIONS["v0.1.0"])
    second = fv.regular_files(fv.VERSIONS["v0.2.0"])
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    assert re.fullmatch(
        _summary("vllm", "v0.1.0", first, set(), f"git {fake_vllm.commits['v0.1.0'][:12]}"),
        lines[0],
    )
    assert re.fullmatch(
        _summary("vllm", "v0.2.0", second, {blob_id(d) for d in first.values()},
                 f"git {fake_vllm.commits['v0.2.0'][:12]}"),
        lines[1],
    )


def test_bare_index_indexes_every_configured_version(
    project: Path, fake_vllm: FakeRepo, fake_lmcache: FakeRepo
) -> None:
    result = run("index")
    assert result.exit_code == 0, result.stderr
    names = [line.split(":")[0] for line in result.stdout.splitlines()]
    assert names == ["vllm@v0.1.0", "vllm@v0.2.0", "vllm@v0.3.0", "lmcache@v0.5.1"]
    with connected(DB) as conn:
        rows = conn.execute("SELECT repo, version, commit_sha FROM versions ORDER BY id").fetchall()
    assert rows == [("vllm", tag, fake_vllm.commits[tag]) for tag in fv.TAGS] + [
        ("lmcache", "v0.5.1", fake_lmcache.commits["v0.5.1"])
    ]
    again = run("index")
    assert again.exit_code == 0
    assert again.stdout.splitlines() == [
        f"{name}: already indexed, nothing to do" for name in names
    ]


def test_bare_index_with_no_version_configured_says_so(
    project: Path, fake_vllm: FakeRepo
) -> None:
    """Not a silent exit 0 that leaves an empty index, which `versions` then answers with
    'run annotate index' again; what another extractor indexed is still parsed again."""
    project.write_text(f'sources = ["git"]\n[repos.vllm]\ngit = "{fake_vllm.url}"\n'
                       'versions = []\n[repos.lmcache]\nversions = []\n')
    nothing = ("Error: no version to index: annotate.toml lists none; name one "
               "('annotate index vllm@VERSION'), or list them in 'versions' of "
               "[repos.NAME] in annotate.toml\n")
    result = run("index")
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", nothing)
    assert not DB.exists()
    assert run("index", "vllm@v0.1.0").exit_code == 0
    _as_schema_5(DB)
    again = run("index")
    assert again.exit_code == 0, again.output
    assert again.stdout.startswith(f"{len(fv.python_files('v0.1.0'))} blobs indexed by another "
                                   "extractor (not recorded) parsed again: ")
    assert run("index").stderr == nothing


def test_reindex_says_so_and_changes_nothing(project: Path) -> None:
    assert run("index", "vllm@v0.1.0").exit_code == 0
    with connected(DB) as conn:
        before = [conn.execute(f"SELECT * FROM {t}").fetchall() for t in ("versions", "files")]
    result = run("index", "vllm@v0.1.0")
    assert (result.exit_code, result.stdout, result.stderr) == (
        0, "vllm@v0.1.0: already indexed, nothing to do\n", "",
    )
    with connected(DB) as conn:
        after = [conn.execute(f"SELECT * FROM {t}").fetchall() for t in ("versions", "files")]
    assert after == before


def _as_schema_5(path: Path) -> None:
    """Make ``path`` what annotate wrote before it recorded each blob's extractor."""
    with connected(path) as conn:
        conn.execute("DROP INDEX blobs_extractor")
        conn.execute("ALTER TABLE blobs DROP COLUMN extractor")
        undo_uses_pins(conn)
        conn.execute("PRAGMA user_version = 5")


def test_index_parses_again_what_an_older_annotate_indexed(project: Path) -> None:
    assert run("index", "vllm@v0.1.0").exit_code == 0
    with connected(DB) as conn:
        symbols = conn.execute("SELECT blob_id, seq, qualname, exact, normalized FROM symbols"
                               " ORDER BY blob_id, seq").fetchall()
    _as_schema_5(DB)
    listed = run("versions")
    assert listed.exit_code == 0
    assert listed.stderr.splitlines()[1:2] == [  # then the versions configured, not indexed
        "Note: some blobs were indexed by another extractor (an older annotate or tree-sitter);"
        " run 'annotate index' to parse them again"
    ]
    result = run("index", "vllm@v0.1.0")
    assert result.exit_code == 0, result.output
    python_blobs = {blob_id(data) for data in fv.python_files("v0.1.0").values()}
    count = len(symbols)
    assert re.fullmatch(
        f"{len(python_blobs)} blobs indexed by another extractor \\(not recorded\\) parsed"
        f" again: {count} -> {count} symbols, 0 blobs changed, {SECONDS}"
        f" \\({re.escape(extractor_id())}\\)\n"
        "vllm@v0.1.0: already indexed, nothing to do\n",
        result.stdout,
    )
    assert listed.stderr.startswith(
        f"migrating {DB.resolve()} from schema 5 to {_schema_version()}; backup at ")
    assert result.stderr == ""
    with connected(DB) as conn:
        assert conn.execute("SELECT blob_id, seq, qualname, exact, normalized FROM symbols"
                            " ORDER BY blob_id, seq").fetchall() == symbols
    again = run("index", "vllm@v0.1.0")
    assert (again.stdout, again.stderr) == ("vllm@v0.1.0: already indexed, nothing to do\n", "")
    assert "extractor" not in run("versions").stderr


def test_the_outdated_blobs_note_is_said_once_per_command(project: Path) -> None:
    """`links NAME` opens the index up to four times (the links, a check for moves, the
    names close to NAME): the note is one line all the same."""
    assert run("index", "vllm@v0.1.0").exit_code == 0
    _as_schema_5(DB)
    assert run("versions").exit_code == 0  # migrates
    result = run("links", "NoSuchName")
    assert result.exit_code == 0, result.output
    assert result.stderr.count("indexed by another extractor") == 1, result.stderr


def test_index_from_a_directory(project: Path, tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    fv.write_snapshot(checkout, fv.VERSIONS["v0.3.0"])
    result = run("index", "vllm@v0.3.0", "--from", str(checkout))
    assert result.exit_code == 0, result.stderr
    files = fv.regular_files(fv.VERSIONS["v0.3.0"])
    assert re.fullmatch(_summary("vllm", "v0.3.0", files, set(), "local"), result.stdout.strip())
    again = run("index", "vllm@v0.3.0", "--from", str(tmp_path))  # not read: said so
    assert (again.exit_code, again.stdout) == (0, "vllm@v0.3.0: already indexed, nothing to do\n")
    assert again.stderr == (
        f"Note: {tmp_path} was not read: vllm@v0.3.0 is indexed and an indexed version never "
        "changes; name the checkout's version otherwise (vllm@v0.3.0-local) to index it\n")


@pytest.mark.parametrize("named", [
    pytest.param(fv.wheel_filename("vllm", "0.2.0"), id="named-as-pip-names-it"),
    pytest.param(fv.wheel_filename("lmcache", "0.2.0"), id="renamed-as-a-wheel-of-the-repo"),
])
def test_index_from_a_wheel_of_another_project_is_refused(
    project: Path, fake_wheels: Path, tmp_path: Path, named: str
) -> None:
    """An indexed version never changes: another project's code indexed under a version's
    name would stay there, every ref to it broken, until a fresh index. What the wheel is
    a wheel of is what it says inside (its .dist-info), whatever its file is named."""
    wheel = tmp_path / named
    shutil.copyfile(fake_wheels / fv.wheel_filename("vllm", "0.2.0"), wheel)
    result = run("index", "lmcache@v0.2.0", "--from", str(wheel))
    assert (result.exit_code, result.stdout, result.stderr) == (
        2, "", f"Error: {wheel} is a wheel of vllm, not of lmcache (the pypi of repo lmcache); "
               "pass a wheel of lmcache\n")
    assert "Error: lmcache@v0.2.0 is neither indexed nor configured" in run(
        "symbols", "lmcache@v0.2.0").stderr


def test_index_from_a_wheel_of_the_repo_renamed_is_indexed(project: Path, tmp_path: Path) -> None:
    """A wheel saved under a name of its own (``curl -o lmcache.whl``) names no project: its
    .dist-info says it is LMCache's."""
    wheel = fv.write_wheel(tmp_path, "lmcache", "0.2.0").rename(tmp_path / "lmcache.whl")
    result = run("index", "lmcache@v0.2.0", "--from", str(wheel))
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.startswith("lmcache@v0.2.0: ")


def _folder_of_no_python(folder: Path) -> Path:
    write_file(folder / "README.md", "# docs\n")
    write_file(folder / "csrc" / "kernel.cu", "__global__ void k() {}\n")
    return folder


def _folder_of_skipped_python(folder: Path) -> Path:
    """Its .py files are a virtual environment's, __pycache__'s and a symlink, as is read."""
    write_file(folder / ".venv" / "pyvenv.cfg", "home = /usr/bin\n")
    write_file(folder / ".venv" / "lib" / "site.py", "def f():\n    pass\n")
    write_file(folder / "vllm" / "__pycache__" / "utils.py", "def g():\n    pass\n")
    (folder / "vllm" / "link.py").symlink_to(folder / ".venv" / "lib" / "site.py")
    return _folder_of_no_python(folder)


def _wheel_of_no_python(folder: Path) -> Path:
    folder.mkdir()
    members = fv.wheel_members("vllm", "0.2.0", fv.PURE_PYTHON, None)
    wheel = folder / fv.wheel_filename("vllm", "0.2.0")
    fv._write_wheel(wheel, {name: data for name, data in members.items()
                            if not name.endswith(".py")} | {"vllm/_C.abi3.so": b"\0"})
    return wheel


@pytest.mark.parametrize(("make", "what"), [
    pytest.param(_folder_of_no_python, "{path} has no .py file to index (symlinks, .git, "
                 "__pycache__, virtual environments and files git does not track are skipped); "
                 "pass the checkout's top folder", id="a-folder-of-no-py-file"),
    pytest.param(_folder_of_skipped_python, "{path} has no .py file to index (symlinks, .git, "
                 "__pycache__, virtual environments and files git does not track are skipped); "
                 "pass the checkout's top folder", id="a-folder-whose-py-files-are-skipped"),
    pytest.param(_wheel_of_no_python, "{path} has no .py file to index; pass a wheel that "
                 "holds vllm's .py files", id="a-wheel-of-no-py-member"),
])
def test_index_from_what_holds_no_python_is_refused(
    project: Path, tmp_path: Path, make: Callable[[Path], Path], what: str
) -> None:
    """An indexed version is never replaced: stored with no file to resolve a ref in, it
    would stay, every ref to it broken, until a fresh index."""
    source = make(tmp_path / "source")
    result = run("index", "vllm@v0.9.0", "--from", str(source))
    assert (result.exit_code, result.stdout, result.stderr) == (
        2, "", f"Error: {what.format(path=source)}\n")
    assert "vllm@v0.9.0 is neither indexed nor configured" in run(
        "symbols", "vllm@v0.9.0").stderr


def test_a_git_tag_that_holds_no_python_is_refused(project: Path, tmp_path: Path) -> None:
    """As from a folder: a tag of the docs or the kernels alone would stay indexed."""
    checkout = _folder_of_no_python(tmp_path / "docs")
    fv.git(checkout, "init", "-q")
    fv.git(checkout, "add", "-A")
    fv.git(checkout, "commit", "-q", "-m", "docs")
    fv.git(checkout, "tag", "v1")
    sha = fv.git(checkout, "rev-parse", "HEAD")
    project.write_text(f'[repos.docs]\ngit = "{checkout}"\nsources = ["git"]\n')
    result = run("index", "docs@v1")
    assert (result.exit_code, result.stdout, result.stderr) == (
        2, "", f"Error: docs@v1 has no .py file to index (git {sha[:12]}); check the version "
               "name: annotate reads a version's Python code\n")
    assert "docs@v1 is neither indexed nor configured" in run("symbols", "docs@v1").stderr


def noted() -> list[tuple[str, str]]:
    """The ``meta`` notes of versions no source had."""
    with connected(DB) as conn:
        return conn.execute("SELECT key, value FROM meta WHERE key LIKE 'not_found:%'"
                            ).fetchall()


@pytest.mark.usefixtures("project")
def test_a_version_not_configured_that_no_source_has_is_not_noted() -> None:
    """A typo's version: noting it would leave a row that names no configured version."""
    assert run("index", "--keep-going", "vllm@v9.9.9", "vllm@v0.1.0").exit_code == 0
    assert noted() == []
    assert run("index", "vllm@v9.9.9").exit_code == 2
    assert noted() == []


def test_a_version_no_source_had_is_forgotten_as_such_once_indexed(
    project: Path, tmp_path: Path
) -> None:
    """`index` notes a configured version no source has (check then advises providing
    it); indexed from a checkout later, the note goes."""
    project.write_text(project.read_text().replace('versions = [', 'versions = ["v9.9.9", '))
    assert run("index", "--keep-going", "vllm@v9.9.9").exit_code == 0
    assert noted() == [("not_found:vllm@v9.9.9", "git")]
    checkout = tmp_path / "checkout"
    fv.write_snapshot(checkout, fv.VERSIONS["v0.3.0"])
    assert run("index", "vllm@v9.9.9", "--from", str(checkout)).exit_code == 0
    assert noted() == []


def test_a_version_typo_lists_the_configured_then_the_other_indexed_versions(
    project: Path, tmp_path: Path
) -> None:
    """Not "run 'annotate index vllm@v0.3.O'", which would index the typo."""
    checkout = tmp_path / "checkout"
    fv.write_snapshot(checkout, fv.VERSIONS["v0.3.0"])
    assert run("index", "vllm@v0.3.0-local", "--from", str(checkout)).exit_code == 0
    typo = ("vllm@v0.3.O is neither indexed nor configured (vllm has v0.1.0, v0.2.0, v0.3.0, "
            "v0.3.0-local); fix the version, or run 'annotate index vllm@v0.3.O' to index it")
    for args, error in (
            (("symbols", "vllm@v0.3.O"), typo),
            (("--db", str(DB), "symbols", "vllm@v0.3.O"), typo),
            (("diff", "vllm@v0.3.0-local", "vllm@v0.3.O"),
             f"Invalid value for 'REPO@B': {typo} (see 'annotate diff --help')"),
            (("history", "vllm@v0.3.O:vllm/utils.py::cdiv"), typo),
            (("show", "vllm@v0.3.O:vllm/utils.py::cdiv"), typo)):
        result = run(*args)
        assert (result.exit_code, result.stdout) == (2, ""), args
        assert result.stderr.splitlines()[-1] == f"Error: {error}", args
    for args in (("symbols", "vllm@v0.3.0"), ("show", "vllm@v0.3.0:vllm/utils.py::cdiv")):
        result = run(*args)
        assert (result.exit_code, result.stderr) == (
            2, "Error: vllm@v0.3.0 is not indexed; run 'annotate index vllm@v0.3.0'\n"), args


@pytest.mark.parametrize("digits", [
    pytest.param(4300, id="as-many-digits-as-int-reads"),
    pytest.param(5000, id="more-digits-than-int-reads"),
])
def test_a_version_of_a_huge_number_is_a_typo_like_any_other(project: Path, digits: int) -> None:
    """Its number is compared with the indexed versions' (is it one of them spelt
    otherwise?) without int(), which refuses a string of more than 4,300 digits."""
    assert run("index", "vllm@v0.1.0").exit_code == 0
    pin = f"vllm@v0.{'1' * digits}"
    typo = (f"{pin} is neither indexed nor configured (vllm has v0.1.0, v0.2.0, v0.3.0); "
            f"fix the version, or run 'annotate index {pin}' to index it")
    for args, error in ((("symbols", pin), typo),
                        (("diff", "vllm@v0.1.0", pin),
                         f"Invalid value for 'REPO@B': {typo} (see 'annotate diff --help')")):
        result = run(*args)
        assert (result.exit_code, result.stdout) == (2, ""), args
        assert result.stderr.splitlines() == [f"Error: {error}"], args


@pytest.mark.parametrize("unreadable", ["file", "folder"])
def test_a_checkout_with_what_cannot_be_read_is_one_error(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unreadable: str
) -> None:
    """Permission denied, which root (the tests' user in CI) never meets: os's answer is
    stood in for, for one file or for a folder's listing."""
    checkout = tmp_path / "checkout"
    fv.write_snapshot(checkout, fv.VERSIONS["v0.3.0"])
    secret = checkout / "vllm" / ("utils.py" if unreadable == "file" else "engine")
    real_read, real_exists = Path.read_bytes, Path.exists

    def read_bytes(path: Path) -> bytes:
        if path == secret:
            raise PermissionError(13, "Permission denied", str(path))
        return real_read(path)

    def exists(path: Path) -> bool:
        if path.parent == secret:
            raise PermissionError(13, "Permission denied", str(path))
        return real_exists(path)

    monkeypatch.setattr(Path, "read_bytes" if unreadable == "file" else "exists",
                        read_bytes if unreadable == "file" else exists)
    result = run("index", "vllm@v0.3.0", "--from", str(checkout))
    assert result.exit_code == 2
    assert result.stderr == (f"Error: cannot read {secret} (Permission denied); make it "
                             "readable, or index a copy of the folder without it\n")


def test_index_from_a_wheel(project: Path, fake_wheels: Path) -> None:
    wheel = fake_wheels / fv.wheel_filename("vllm", "0.2.0")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    result = run("index", "vllm@v0.2.0", "--from", str(wheel))
    assert result.exit_code == 0, result.stderr
    files = fv.python_files("v0.2.0")
    assert re.fullmatch(
        _summary("vllm", "v0.2.0", files, set(), f"local {digest[:12]}"), result.stdout.strip()
    )
    with connected(DB) as conn:
        assert conn.execute("SELECT source, wheel_sha256 FROM versions").fetchone() == (
            "local", digest
        )


def test_git_failure_falls_back_to_pypi(wheels: Path, tmp_path: Path) -> None:
    Path("annotate.toml").write_text(
        f'[repos.vllm]\ngit = "{tmp_path / "nowhere"}"\npypi = "vllm"\n'
    )
    result = run("index", "vllm@v0.1.0")
    assert result.exit_code == 0, result.stderr
    assert re.fullmatch(r"vllm@v0\.1\.0: 17 files, .* \(pypi [0-9a-f]{12}\)", result.stdout.strip())
    nowhere = tmp_path / "nowhere"
    assert result.stderr == (f"Note: vllm@v0.1.0 was read from pypi: git: {nowhere.as_uri()}: "
                             f"'{nowhere}' does not appear to be a git repository\n")
    with connected(DB) as conn:
        assert conn.execute("SELECT source, commit_sha FROM versions").fetchone() == ("pypi", None)


def test_a_file_other_than_python_of_a_wheel_says_where_to_find_it(
    wheels: Path, tmp_path: Path
) -> None:
    """A wheel is read for its Python files: a kernel's lines are not there, and no close
    Python path is what the author meant."""
    Path("annotate.toml").write_text(
        f'[repos.vllm]\ngit = "{tmp_path / "nowhere"}"\npypi = "vllm"\n')
    assert run("index", "vllm@v0.1.0").exit_code == 0
    result = run("show", "vllm@v0.1.0:csrc/attention/paged_attention_v1.cu#L1-L3")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "Error: path 'csrc/attention/paged_attention_v1.cu' is not in vllm@v0.1.0, which was "
        "indexed from its PyPI wheel: only its package's Python files are read (hint: an "
        "indexed version never changes: to cite other files, index vllm@v0.1.0 from git, or "
        "from a checkout with --from PATH, into a new index, --db NEW.db)\n")
    again = run("index", "vllm@v0.1.0")  # what the hint said before: nothing to do
    assert again.stdout == "vllm@v0.1.0: already indexed, nothing to do\n"
    outside = run("show", "vllm@v0.1.0:benchmarks/serve.py::main")
    assert outside.stderr.startswith(
        "Error: path 'benchmarks/serve.py' is not in vllm@v0.1.0, which was indexed from its "
        "PyPI wheel")


def test_a_ref_outside_a_wheel_target_is_unindexed_not_removed(
    wheels: Path, fake_vllm: FakeRepo
) -> None:
    """A pin indexed from git against a target indexed from its wheel (v0.23.1rc0 against
    v0.25.0): the wheel has no kernels, which were not removed for all that."""
    config = (f'[repos.vllm]\ngit = "{fake_vllm.url}"\npypi = "vllm"\n'
              'versions = ["v0.1.0", "v0.2.0"]\nsources = ["{source}"]\n')
    Path("annotate.toml").write_text(config.format(source="git"))
    assert run("index", "vllm@v0.1.0").exit_code == 0
    Path("annotate.toml").write_text(config.format(source="pypi"))
    assert run("index", "vllm@v0.2.0").exit_code == 0
    Path("annotations").mkdir()
    Path("annotations/k.yml").write_text(
        "article: k.md\nat: vllm@v0.1.0\nclaims:\n  - id: k\n    text: t\n"
        "    refs: [csrc/attention/paged_attention_v1.cu#L1-L3]\n")
    result = run("check", "--format", "json")
    assert result.exit_code == 0, result.output
    [ref] = json.loads(result.stdout)["results"]
    assert (ref["status"], ref["message"]) == (
        "unindexed", "csrc/attention/paged_attention_v1.cu is not in vllm@v0.2.0, which was "
        "indexed from its PyPI wheel (its package's Python files only); index vllm@v0.2.0 "
        "from git to check this ref")


def test_another_name_of_an_indexed_wheel_is_refused(wheels: Path, tmp_path: Path) -> None:
    """Of a fork that may tag 0.1.0 (vllm-project's own tags have a v: see
    test_a_version_named_as_pypi_numbers_it_is_refused)."""
    Path("annotate.toml").write_text(
        f'[repos.vllm]\ngit = "{tmp_path / "nowhere"}"\npypi = "vllm"\ngithub = "me/vllm"\n'
        'versions = ["v0.2.0"]\n'
    )
    assert run("index", "vllm@v0.1.0").exit_code == 0
    result = run("index", "vllm@0.1.0")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == ("Error: vllm@0.1.0 is the PyPI wheel of vllm@v0.1.0, which is "
                             "indexed; write vllm@v0.1.0\n")
    # a configured name is indexed even when another name of its wheel came first
    assert run("index", "vllm@0.2.0").exit_code == 0
    configured = run("index", "vllm@v0.2.0")
    assert configured.exit_code == 0, configured.stderr
    with connected(DB) as conn:
        assert conn.execute("SELECT version FROM versions ORDER BY id").fetchall() == [
            ("v0.1.0",), ("0.2.0",), ("v0.2.0",)]


@pytest.mark.parametrize("config", [
    pytest.param('github = "me/vllm"\nversions = ["0.1.0"]\n', id="a-fork-that-tags-so"),
    pytest.param('versions = ["1234567"]\n', id="a-commit-of-digits"),
    pytest.param('versions = ["main"]\n', id="a-branch"),
])
def test_versions_of_no_pypi_number_or_of_another_github_are_taken(config: str) -> None:
    Path("annotate.toml").write_text(f"[repos.vllm]\n{config}")
    result = run("versions")
    assert result.exit_code == 2 and result.stderr.startswith("Error: no index at ")


def test_an_index_of_a_version_without_its_v_reads_its_wheel_again_under_the_tag(
    wheels: Path
) -> None:
    """Refused in the config, PyPI's number costs no work: the tag's version is its wheel
    again, its files parsed already, and the old name's rows stay for the pins that cite it."""
    config = '[repos.vllm]\nversions = ["v0.1.0"]\nsources = ["pypi"]\n'
    Path("annotate.toml").write_text(config + 'github = "me/vllm"\n')
    assert run("index", "vllm@0.1.0").exit_code == 0  # as an older annotate took it
    Path("annotate.toml").write_text(config)
    listed = run("versions")  # the configured name is the one to index, not the old one
    assert listed.stderr.splitlines()[-1] == (
        "Note: vllm@v0.1.0 is configured but not indexed; run 'annotate index vllm@v0.1.0'")
    result = run("index", "vllm@v0.1.0")
    assert (result.exit_code, result.stderr) == (0, "")
    assert re.fullmatch(r"vllm@v0\.1\.0: 17 files, 0 new blobs parsed, 0 new symbols, .*\n",
                        result.stdout)
    shown = run("show", "vllm@0.1.0:vllm/config/cache.py::CacheConfig")
    assert shown.exit_code == 0, shown.stderr
    with connected(DB) as conn:
        assert conn.execute("SELECT version FROM versions ORDER BY id").fetchall() == [
            ("0.1.0",), ("v0.1.0",)]


@pytest.mark.parametrize(("version", "source"), [
    pytest.param("vllm@0.1.0", (), id="vllm"),
    pytest.param("vllm@0.23.1rc0", (), id="a-pre-release"),
    pytest.param("lmcache@0.5.1", (), id="lmcache"),
    pytest.param("vllm@0.1.0", ("--from", "src"), id="from-a-folder"),
])
def test_a_version_named_as_pypi_numbers_it_is_refused(
    wheels: Path, version: str, source: tuple[str, ...]
) -> None:
    """Indexed from its wheel, it would be stored under a name whose every permalink
    names a tag GitHub does not have; as in the config, the tag is asked for."""
    Path("annotate.toml").write_text('[repos.vllm]\nsources = ["pypi"]\n')
    Path("src").mkdir()
    Path("src/m.py").write_text("X = 1\n")
    repo, number = version.split("@")
    github = {"vllm": "vllm-project/vllm", "lmcache": "LMCache/LMCache"}[repo]
    result = run("index", version, *source)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"Error: {version} is PyPI's number, not a tag of {github}, so its permalinks would "
        f"name a tag GitHub does not have (blob/{number}/...); write {repo}@v{number}, its "
        f"tag (pypi still fetches {number} for it)\n")
    assert not DB.exists()  # refused before the index is made
    # a name to write otherwise, as an unknown repo's, not a version to pass over
    kept = run("index", "vllm@v0.1.0", version, "--keep-going")
    assert (kept.exit_code, kept.stdout, kept.stderr) == (2, "", result.stderr)
    assert not DB.exists()


def test_a_fork_may_tag_as_pypi_numbers(wheels: Path) -> None:
    Path("annotate.toml").write_text(
        '[repos.vllm]\nsources = ["pypi"]\ngithub = "me/vllm"\nversions = ["0.1.0"]\n')
    result = run("index", "vllm@0.1.0")
    assert result.exit_code == 0, result.output
    shown = run("show", "vllm@0.1.0:vllm/config/cache.py::CacheConfig")
    assert "https://github.com/me/vllm/blob/0.1.0/vllm/config/cache.py#L" in shown.stdout


def test_version_in_no_source_is_one_error_line(
    project: Path, wheels: Path, fake_vllm: FakeRepo
) -> None:
    project.write_text(project.read_text().replace('sources = ["git"]\n', ""))
    result = run("index", "vllm@v9.9.9")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"Error: vllm@v9.9.9 was not found (git: {fake_vllm.url}: couldn't find remote ref "
        "refs/tags/v9.9.9; pypi: pip: vllm==9.9.9: No matching distribution found for "
        "vllm==9.9.9); check the version name, or index it from a checkout with "
        "'annotate index vllm@v9.9.9 --from PATH'\n"
    )


def test_some_versions_failing(project: Path) -> None:
    result = run("index", "vllm@v0.1.0", "vllm@v9.9.9")
    assert result.exit_code == 2
    assert re.fullmatch(r"vllm@v0\.1\.0: 19 files, .*\n", result.stdout)
    lines = result.stderr.splitlines()
    assert [line[:30] for line in lines] == [
        "Error: vllm@v9.9.9 was not fou", "Error: 1 of 2 versions could n",
    ]
    assert lines[1] == "Error: 1 of 2 versions could not be indexed (see above)"


@pytest.mark.parametrize("args", [
    pytest.param(("index",), id="every-configured"),
    pytest.param(("index", "--keep-going"), id="keep-going"),
    pytest.param(("index", "vllm@v0.1.0", "--from", "checkout"), id="a-version-named"),
    pytest.param(("--db", "elsewhere.db", "index"), id="another-index"),
])
def test_index_above_a_project_refuses_the_defaults_naming_its_config(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """From a repository's top (a CI job's folder) whose config is in docs/, the defaults
    would index the built-in versions, some 500 MB of wheels, where the project does not
    read them: said before anything is fetched or written, as link and check say it."""
    write_file("docs/annotate.toml", '[repos.vllm]\nversions = ["v0.1.0"]\n')
    fv.write_snapshot(tmp_path / "checkout", fv.VERSIONS["v0.1.0"])
    before = sorted(tmp_path.rglob("*"))
    result = run(*args)
    config = tmp_path / "docs" / "annotate.toml"
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", (
        f"Error: no annotate.toml in {tmp_path}, so 'annotate index' would index the built-in "
        f"defaults, not those of {config}; run from {config.parent}, where annotate.toml is, "
        f"or pass --config {config} (for the defaults here, write an empty annotate.toml in "
        f"{tmp_path})\n"))
    assert sorted(tmp_path.rglob("*")) == before  # no index, no cache


def test_index_above_a_project_with_an_empty_config_here_uses_the_defaults(
    tmp_path: Path
) -> None:
    """The way out the refusal gives for a config below that is not this project's (a test
    fixture's, a vendored project's): an empty annotate.toml here, the built-in defaults."""
    write_file("tests/fixtures/p/annotate.toml", '[repos.vllm]\nversions = ["v0.1.0"]\n')
    fv.write_snapshot(tmp_path / "checkout", fv.VERSIONS["v0.1.0"])
    refused = run("index", "vllm@v0.1.0", "--from", "checkout")
    assert refused.exit_code == 2
    assert refused.stderr.endswith(
        f"(for the defaults here, write an empty annotate.toml in {tmp_path})\n")
    write_file("annotate.toml", "")
    result = run("index", "vllm@v0.1.0", "--from", "checkout")
    assert (result.exit_code, result.stderr) == (0, "")
    assert DB.is_file()


@pytest.mark.parametrize("below", [
    pytest.param("one/two/three/four", id="four-folders-down"),
    pytest.param(".hidden", id="in-a-hidden-folder"),
])
def test_index_above_a_config_it_does_not_look_for_uses_the_defaults(
    tmp_path: Path, below: str
) -> None:
    write_file(f"{below}/annotate.toml", "")
    fv.write_snapshot(tmp_path / "checkout", fv.VERSIONS["v0.1.0"])
    result = run("index", "vllm@v0.1.0", "--from", "checkout")
    assert (result.exit_code, result.stderr) == (0, "")
    assert DB.is_file()


@pytest.mark.parametrize("git", [
    pytest.param("folder", id="a-vendored-clone"),
    pytest.param("file", id="a-submodule"),
])
def test_index_in_a_repository_passes_over_the_config_of_another_below(
    tmp_path: Path, git: str
) -> None:
    """A git work tree below the repository's own (third_party/, a submodule) is another
    project: its config is not this one's, as a config above the repository's top is not."""
    (tmp_path / ".git").mkdir()
    write_file("third_party/other/annotate.toml", '[repos.vllm]\nversions = ["v0.1.0"]\n')
    other_git = tmp_path / "third_party" / "other" / ".git"
    other_git.mkdir() if git == "folder" else other_git.write_text("gitdir: ../../.git/x\n")
    fv.write_snapshot(tmp_path / "checkout", fv.VERSIONS["v0.1.0"])
    result = run("index", "vllm@v0.1.0", "--from", "checkout")
    assert (result.exit_code, result.stderr) == (0, "")
    assert DB.is_file()


def test_index_outside_a_repository_above_a_clone_refuses_naming_its_config(
    tmp_path: Path
) -> None:
    """A clone below a folder that is in no repository (a 'git clone' not followed by a
    'cd') is the project the user means: named, as before."""
    write_file("clone/annotate.toml", '[repos.vllm]\nversions = ["v0.1.0"]\n')
    (tmp_path / "clone" / ".git").mkdir()
    result = run("index")
    assert result.exit_code == 2
    assert f"not those of {tmp_path / 'clone' / 'annotate.toml'};" in result.stderr


def test_index_with_the_config_given_runs_as_told(tmp_path: Path) -> None:
    write_file("docs/annotate.toml", '[repos.vllm]\nversions = ["v0.1.0"]\n')
    fv.write_snapshot(tmp_path / "checkout", fv.VERSIONS["v0.1.0"])
    result = run("--config", "docs/annotate.toml", "index", "vllm@v0.1.0", "--from", "checkout")
    assert (result.exit_code, result.stderr) == (0, "")
    assert (tmp_path / "docs" / DB).is_file()


def test_keep_going_exits_zero_but_reports(project: Path) -> None:
    result = run("index", "--keep-going", "vllm@v9.9.9", "vllm@v0.1.0")
    assert result.exit_code == 0
    assert result.stdout.startswith("vllm@v0.1.0: 19 files, ")
    assert result.stderr.startswith("Warning: vllm@v9.9.9 was not found (git: ")
    assert len(result.stderr.splitlines()) == 1


def test_unreachable_git_fails_fast(tmp_path: Path) -> None:
    Path("annotate.toml").write_text(
        '[repos.vllm]\ngit = "https://127.0.0.1:9/x.git"\nsources = ["git"]\n'
    )
    result = run("index", "vllm@v0.1.0")
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: vllm@v0.1.0 was not found (git: https://127.0.0.1:9/x.git: "
    )
    assert len(result.stderr.splitlines()) == 1


# ------------------------------------------------------------------------------ versions


def test_versions_table_and_json(project: Path, fake_vllm: FakeRepo) -> None:
    assert run("index", "vllm@v0.1.0", "vllm@v0.2.0").exit_code == 0
    with connected(DB) as conn:
        conn.row_factory = sqlite3.Row
        rows = [dict(row) for row in conn.execute("SELECT * FROM version_summary")]
    table = run("versions")
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    assert re.split(r"\s{2,}", lines[0]) == [
        "repo", "version", "source", "sha", "files", "symbols", "indexed at",
    ]
    assert [re.split(r"\s{2,}", line) for line in lines[1:]] == [
        ["vllm", row["version"], "git", fake_vllm.commits[row["version"]][:12],
         str(row["file_count"]), str(row["symbol_count"]), row["indexed_at"]]
        for row in rows
    ]
    as_json = run("versions", "--format", "json")
    assert as_json.exit_code == 0
    assert json.loads(as_json.stdout) == rows
    assert [row["version"] for row in rows] == ["v0.1.0", "v0.2.0"]


def test_versions_names_the_configured_versions_not_indexed(project: Path) -> None:
    """What a user runs to see what they have: a configured version missing (not indexed
    yet, or found in no source by the last index) is a note on stderr saying what to do;
    stdout stays the table, or the JSON, of what is indexed."""
    project.write_text(project.read_text().replace('"v0.3.0"]', '"v0.3.0", "v0.9.9"]'))
    assert run("index", "--keep-going", "vllm@v0.1.0", "vllm@v0.9.9").exit_code == 0
    notes = [
        "Note: lmcache@v0.5.1 is configured but not indexed; "
        "run 'annotate index lmcache@v0.5.1'",
        "Note: vllm@v0.2.0 is configured but not indexed; run 'annotate index vllm@v0.2.0'",
        "Note: vllm@v0.3.0 is configured but not indexed; run 'annotate index vllm@v0.3.0'",
        "Note: vllm@v0.9.9 is configured but not indexed; 'annotate index' could not fetch it "
        "from its sources (git): set git of [repos.vllm] in annotate.toml to a local clone that "
        "has it, or run 'annotate index vllm@v0.9.9 --from PATH' on a checkout of it",
    ]
    table = run("versions")
    assert (table.exit_code, table.stderr.splitlines()) == (0, notes)
    assert [line.split()[:2] for line in table.stdout.splitlines()] == [
        ["repo", "version"], ["vllm", "v0.1.0"]]
    as_json = run("versions", "--format", "json")
    assert (as_json.exit_code, as_json.stderr.splitlines()) == (0, notes)
    assert [row["version"] for row in json.loads(as_json.stdout)] == ["v0.1.0"]
    assert run("index", "vllm@v0.2.0", "vllm@v0.3.0", "lmcache@v0.5.1").exit_code == 0
    assert run("versions").stderr.splitlines() == notes[3:]


def test_versions_of_an_empty_index(project: Path) -> None:
    open_database(Path("empty.db")).close()
    result = run("versions", "--db", "empty.db")
    assert (result.exit_code, result.stdout) == (
        0, "No versions indexed yet; run 'annotate index'.\n",
    )
    assert json.loads(run("--db", "empty.db", "versions", "--format", "json").stdout) == []


# ------------------------------------------------------------------------------ symbols

FIELDS = ("path", "qualname", "kind", "start_line", "end_line", "signature", "exact",
          "normalized", "shape")

FILTERS = [
    pytest.param(None, None, id="everything"),
    pytest.param("vllm/engine/*", None, id="path-glob"),
    pytest.param(None, "method", id="kind-method"),
    pytest.param(None, "attribute", id="kind-attribute"),
    pytest.param("*.py", "class", id="glob-and-kind"),
    pytest.param("vllm/utils.py", "function", id="one-file"),
    pytest.param("vllm/*/cache.py", None, id="glob-spans-directories"),
    pytest.param("nothing/*", None, id="no-match"),
]


@pytest.mark.parametrize(("glob", "kind"), FILTERS)
def test_symbols_jsonl_equals_the_database(project: Path, glob: str | None, kind: str | None
                                           ) -> None:
    assert run("index", "vllm@v0.2.0").exit_code == 0
    args = ["symbols", "vllm@v0.2.0", "--format", "jsonl"]
    args += ["--path", glob] if glob else []
    args += ["--kind", kind] if kind else []
    result = run(*args)
    assert result.exit_code == 0
    assert result.stderr.startswith("Note: no file") is (glob == "nothing/*")
    emitted = [json.loads(line) for line in result.stdout.splitlines()]
    assert all(list(record) == list(FIELDS) for record in emitted)
    with connected(DB) as conn:
        expected = [
            row for row in conn.execute(
                f"SELECT {', '.join(FIELDS)} FROM version_symbols WHERE version = 'v0.2.0'"
            )
            if (glob is None or fnmatch.fnmatchcase(row[0], glob))
            and (kind is None or row[2] == kind)
        ]
    got = [tuple(record[field] for field in FIELDS) for record in emitted]
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    assert (len(emitted) == 0) is (glob == "nothing/*")


def test_symbols_jsonl_keeps_each_symbol_on_its_line(project: Path, tmp_path: Path) -> None:
    """A value may hold U+0085, U+2028 or U+2029, which JSON leaves unescaped and which
    ``str.splitlines`` (and other line splitters) take for line breaks."""
    source = tmp_path / "source"
    write_file(source / "vllm" / "marks.py",
               'A = "a\u2028b"\nB = "c\x85d\u2029e"\nC = "\u4e2d"\n')
    assert run("index", "vllm@v0.9.0", "--from", str(source)).exit_code == 0
    result = run("symbols", "vllm@v0.9.0", "--format", "jsonl")
    lines = result.stdout.splitlines()
    assert [json.loads(line)["signature"] for line in lines] == [
        '"a\u2028b"', '"c\x85d\u2029e"', '"\u4e2d"']
    assert "\u4e2d" in result.stdout  # other non-ASCII text as it is


@pytest.mark.parametrize(("glob", "paths"), [
    pytest.param("vllm/engine", {"vllm/engine/llm_engine.py", "vllm/engine/async_llm_engine.py"},
                 id="a-folder"),
    pytest.param("vllm/utils.py", {"vllm/utils.py"}, id="a-file"),
    pytest.param("./vllm/utils.py", {"vllm/utils.py"}, id="a-file-from-here"),
    pytest.param("vllm/util", set(), id="not-a-prefix-of-a-name"),
    pytest.param("vllm/**/*.py", None, id="double-star-includes-no-folder"),
    pytest.param("vllm/**/layers/**/linear.py", {"vllm/model_executor/layers/linear.py"},
                 id="two-double-stars-each-may-be-no-folder"),
])
def test_symbols_path_without_wildcards_or_with_double_star(
    project: Path, glob: str, paths: set[str] | None
) -> None:
    assert run("index", "vllm@v0.2.0").exit_code == 0
    result = run("symbols", "vllm@v0.2.0", "--format", "jsonl", "--path", glob)
    no_file = (f"Note: no file of vllm@v0.2.0 matches --path {glob} (closest: vllm/utils.py); "
               "paths are relative to the repository, as in vllm/config/cache.py\n")
    assert (result.exit_code, result.stderr) == (0, no_file if paths == set() else "")
    found = {json.loads(line)["path"] for line in result.stdout.splitlines()}
    if paths is None:  # every file under vllm/, directly in it too
        with connected(DB) as conn:
            paths = {row[0] for row in conn.execute(
                "SELECT DISTINCT path FROM version_symbols WHERE version = 'v0.2.0'"
                " AND path LIKE 'vllm/%'")}
        assert "vllm/utils.py" in paths
    assert found == paths


def test_symbols_help_says_path_takes_a_file_or_a_folder() -> None:
    """As the README says: not only a glob (a newcomer would write vllm/config/**)."""
    shown = " ".join(run("symbols", "--help").stdout.split())
    assert ("--path GLOB Only the symbols of this file, this folder (vllm/config/) or the files "
            "this glob matches (* crosses folders)." in shown)


@pytest.mark.parametrize(("glob", "closest"), [
    pytest.param("vllm/confg/", " (closest: vllm/config/)", id="a-misspelt-folder"),
    pytest.param("vllm/model_executor/layer", " (closest: vllm/model_executor/layers/)",
                 id="a-misspelt-folder-without-its-slash"),
    pytest.param("vllm/config/cache", " (closest: vllm/config/cache.py)",
                 id="a-file-without-its-suffix"),
    pytest.param("cache.py", " (closest: vllm/config/cache.py)",
                 id="a-file-name-without-its-folder"),
    pytest.param("vllm/nothing/", "", id="nothing-close"),
    pytest.param("vllm/confg/*.py", "", id="a-glob"),
])
def test_symbols_path_of_a_folder_not_there_names_the_closest(
    project: Path, glob: str, closest: str
) -> None:
    """A misspelt folder is compared with the version's folders, not only its files, which
    share too little of its name."""
    assert run("index", "vllm@v0.2.0").exit_code == 0
    result = run("symbols", "vllm@v0.2.0", "--path", glob)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", (
        f"Note: no file of vllm@v0.2.0 matches --path {glob}{closest}; paths are relative to "
        "the repository, as in vllm/config/cache.py\n"))


@pytest.mark.parametrize("output_format", ["table", "jsonl"])
def test_symbols_path_matching_no_file_prints_only_the_note(
    project: Path, output_format: str
) -> None:
    """No empty table: the note alone says why nothing is listed."""
    assert run("index", "vllm@v0.2.0").exit_code == 0
    result = run("symbols", "vllm@v0.2.0", "--format", output_format, "--path", "nothing/*.py")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", (
        "Note: no file of vllm@v0.2.0 matches --path nothing/*.py; paths are relative to the "
        "repository, as in vllm/config/cache.py\n"))


WHEEL_HOLDS = ("it was indexed from its PyPI wheel, which holds its package's Python files "
               "only, under vllm/ (to list others, index vllm@v0.1.0 from git, or from a "
               "checkout with --from PATH, into a new index, --db NEW.db)")
RELATIVE = "paths are relative to the repository, as in vllm/config/cache.py"


@pytest.mark.parametrize(("glob", "why"), [
    pytest.param("benchmarks/", WHEEL_HOLDS, id="a-folder-no-wheel-holds"),
    pytest.param("vlm/*.py", WHEEL_HOLDS, id="a-misspelt-package"),
    pytest.param("*/nothing.py", WHEEL_HOLDS, id="any-folder"),
    pytest.param("vllm/nothing/", RELATIVE, id="a-folder-of-its-package"),
    pytest.param("./vllm/*/nothing.py", RELATIVE, id="a-glob-in-its-package"),
])
def test_symbols_path_matching_no_file_of_a_wheel_says_what_it_holds(
    wheels: Path, tmp_path: Path, glob: str, why: str
) -> None:
    """Not 'paths are relative to the repository' for benchmarks/, which is: a wheel holds
    its package's files only; but a path in its package that is not there is not to be
    looked for in a git index."""
    Path("annotate.toml").write_text(
        f'[repos.vllm]\ngit = "{tmp_path / "nowhere"}"\npypi = "vllm"\n')
    assert run("index", "vllm@v0.1.0").exit_code == 0
    result = run("symbols", "vllm@v0.1.0", "--path", glob)
    assert (result.exit_code, result.stdout, result.stderr) == (
        0, "", f"Note: no file of vllm@v0.1.0 matches --path {glob}; {why}\n")


@pytest.mark.parametrize(("options", "note"), [
    pytest.param(("--path", "vllm/utils.py", "--kind", "class"),
                 "vllm@v0.2.0 defines no class in the files --path vllm/utils.py matches",
                 id="no-class-in-the-file"),
    pytest.param(("--path", "vllm/utils.py", "--kind", "attribute", "--format", "jsonl"),
                 "vllm@v0.2.0 defines no attribute in the files --path vllm/utils.py matches",
                 id="jsonl"),
])
def test_symbols_where_files_match_but_none_is_defined_prints_only_a_note(
    project: Path, options: tuple[str, ...], note: str
) -> None:
    """No table of a header alone, without a word: the note says what matched nothing."""
    assert run("index", "vllm@v0.2.0").exit_code == 0
    assert run("symbols", "vllm@v0.2.0", "--path", "vllm/utils.py").stdout.count("\n") > 1
    result = run("symbols", "vllm@v0.2.0", *options)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", f"Note: {note}\n")


def test_symbols_table(project: Path) -> None:
    assert run("index", "vllm@v0.1.0").exit_code == 0
    result = run("symbols", "vllm@v0.1.0", "--path", "vllm/utils.py", "--kind", "function")
    assert result.exit_code == 0
    lines = [re.split(r"\s{2,}", line) for line in result.stdout.splitlines()]
    assert lines[0] == ["path", "line", "kind", "qualname"]
    assert [line[3] for line in lines[1:]] == [
        "cdiv", "random_uuid", "get_distributed_init_method", "get_cpu_memory", "is_neuron",
        "get_open_port",
    ]
    start = fv.UTILS_V1.splitlines().index("@functools.lru_cache(maxsize=None)") + 1
    assert lines[4] == ["vllm/utils.py", f"{start}-{start + 3}", "function", "get_cpu_memory"]


# ------------------------------------------------------------------------------ errors


def _broken_files() -> None:
    Path("new.db").touch()
    with connected("new.db") as conn:
        conn.execute("PRAGMA user_version = 99")
    Path("junk.db").write_bytes(bytes(range(256)) * 16)
    open_database(Path("empty.db")).close()
    Path("zero.db").touch()
    Path("folder.db").mkdir()
    os.mkfifo("pipe.db")


UNKNOWN_REPO = (
    "Error: unknown repo 'foo'; configured repos are: lmcache, vllm "
    "(add it as [repos.foo] in annotate.toml)"
)
NOT_REPO_VERSION = ("Error: Invalid value for 'REPO@VERSION': '{0}' is not REPO@VERSION (for "
                    "example vllm@v0.20.0) (see 'annotate {1} --help')")

LONG_NAME = "x" * 300 + ".db"
"""Longer than a file name may be (ENAMETOOLONG)."""

# (args, expected last stderr line); every one exits 2.
ERRORS = [
    pytest.param(("--db", "zero.db", "versions"),
                 "Error: zero.db is an empty file, not an index; run 'annotate --db zero.db "
                 "index' to build one there", id="read-an-empty-file"),
    pytest.param(("--db", "folder.db", "versions"),
                 "Error: folder.db is a folder, not an index file; pass a file path, e.g. "
                 "--db .annotate/index.db", id="db-is-a-folder"),
    pytest.param(("--db", "folder.db", "index", "vllm@v1"),
                 "Error: folder.db is a folder, not an index file; pass a file path, e.g. "
                 "--db .annotate/index.db", id="index-into-a-folder"),
    *(pytest.param(("--db", db, *command),
                   f"Error: {db} is not a regular file (a device, pipe or socket); pass a file "
                   "path, e.g. --db .annotate/index.db", id=f"{command[0]}-{name}")
      for db, name in (("/dev/null", "the-null-device"), ("pipe.db", "a-named-pipe"))
      for command in (("versions",), ("index", "vllm@v1"))),
    *(pytest.param(("--db", db, "index", "vllm@v1"),
                   f"Error: cannot create the folder {folder} for the index (a file is in the "
                   "way); pass --db with a path in a folder you may write", id=name)
      for db, folder, name in (("junk.db/x.db", "junk.db", "index-under-a-file"),
                               ("junk.db/sub/x.db", "junk.db/sub", "index-below-a-file"))),
    *(pytest.param(("--db", f"no{brk}where.db", *command),
                   f"Error: no index at no{shown}where.db; run 'annotate index' first, or pass "
                   "--db PATH", id=f"{name}-in-the-db-path-{command[0]}")
      for brk, shown, name in (("\n", "\\n", "line-feed"), ("\u2028", "\\u2028",
                                                             "line-separator"))
      for command in (("versions",), ("symbols", "vllm@v0.1.0"))),
    *(pytest.param(("--db", LONG_NAME, *command),
                   f"Error: cannot open {LONG_NAME}: File name too long; pass --db with a path "
                   "in a folder you may read and write", id=f"db-name-too-long-{command[0]}")
      for command in (("versions",), ("index", "vllm@v1"))),
    pytest.param(("index", "foo@v1"), UNKNOWN_REPO, id="index-unknown-repo"),
    pytest.param(("--db", "nowhere.db", "index", "foo@v1"), UNKNOWN_REPO,
                 id="index-unknown-repo-into-a-new-index"),
    pytest.param(("--db", "nowhere.db", "index", "vllm@v1", "foo@v1"), UNKNOWN_REPO,
                 id="index-a-known-and-an-unknown-repo"),
    pytest.param(("symbols", "foo@v1"), UNKNOWN_REPO, id="symbols-unknown-repo"),
    pytest.param(("index", "vllm"), NOT_REPO_VERSION.format("vllm", "index"), id="index-no-at"),
    pytest.param(("index", "@v1"), NOT_REPO_VERSION.format("@v1", "index"), id="index-no-repo"),
    pytest.param(("symbols", "vllm@"), NOT_REPO_VERSION.format("vllm@", "symbols"),
                 id="symbols-no-version"),
    pytest.param(("diff", "vllm@v0.1.0", "vllm"),
                 NOT_REPO_VERSION.format("vllm", "diff").replace("'REPO@VERSION'", "'REPO@B'"),
                 id="diff-second-not-repo-at"),
    pytest.param(("diff", "vllm@-x", "vllm@v0.1.0"),
                 "Error: Invalid value for 'REPO@A': invalid version '-x'; a version is a tag or "
                 "commit such as v0.20.0 and starts with a letter or digit (see 'annotate diff "
                 "--help')", id="diff-first-invalid-version"),
    pytest.param(("xref", "cdiv", "vllm"), NOT_REPO_VERSION.format("vllm", "xref"),
                 id="xref-version-not-repo-at"),
    pytest.param(
        ("index", "vllm@.x"),
        "Error: Invalid value for 'REPO@VERSION': invalid version '.x'; a version is a tag or "
        "commit such as v0.20.0 and starts with a letter or digit (see 'annotate index --help')",
        id="invalid-version-name",
    ),
    pytest.param(
        ("symbols", "vllm@v1:vllm/utils.py"),
        "Error: Invalid value for 'REPO@VERSION': invalid version 'v1:vllm/utils.py'; a version "
        "is a tag or commit such as v0.20.0 and starts with a letter or digit (see 'annotate "
        "symbols --help')",
        id="symbols-of-a-ref",
    ),
    pytest.param(
        ("symbols", "vllm@v1\n"),
        "Error: Invalid value for 'REPO@VERSION': invalid version 'v1\\n'; a version is a tag or "
        "commit such as v0.20.0 and starts with a letter or digit (see 'annotate symbols "
        "--help')",
        id="version-with-a-line-break",
    ),
    pytest.param(
        ("--db", "empty.db", "symbols", "vllm@v0.2.0"),
        "Error: vllm@v0.2.0 is not indexed; run 'annotate index vllm@v0.2.0'",
        id="version-not-indexed",
    ),
    pytest.param(
        ("--db", "empty.db", "symbols", "vllm@v0.2.O"),
        "Error: vllm@v0.2.O is neither indexed nor configured (vllm has v0.1.0, v0.2.0, "
        "v0.3.0); fix the version, or run 'annotate index vllm@v0.2.O' to index it",
        id="version-neither-indexed-nor-configured",
    ),
    pytest.param(
        ("versions", "--db", "nowhere.db"),
        "Error: no index at nowhere.db; run 'annotate index' first, or pass --db PATH",
        id="versions-missing-db-after",
    ),
    pytest.param(
        ("--db", "nowhere.db", "versions"),
        "Error: no index at nowhere.db; run 'annotate index' first, or pass --db PATH",
        id="versions-missing-db-before",
    ),
    pytest.param(
        ("symbols", "vllm@v0.1.0", "--db", "nowhere.db"),
        "Error: no index at nowhere.db; run 'annotate index' first, or pass --db PATH",
        id="symbols-missing-db",
    ),
    pytest.param(
        ("versions", "--db", "new.db"),
        "Error: new.db has schema version 99, newer than this annotate understands (2); "
        "upgrade vllm-annotate, or pass another --db PATH",
        id="schema-too-new",
    ),
    pytest.param(
        ("index", "vllm@v0.1.0", "--db", "junk.db"),
        "Error: junk.db is not an annotate database (file is not a database); "
        "pass another --db PATH, or move that file away",
        id="not-sqlite",
    ),
    pytest.param(
        ("index", "vllm@v0.1.0", "vllm@v0.2.0", "--from", "."),
        "Error: --from reads one version: name exactly one REPO@VERSION (see 'annotate index "
        "--help')",
        id="from-with-two-versions",
    ),
    *(pytest.param(args, f"Error: Invalid value for {name}: it is empty (see 'annotate "
                   f"{args[0]} --help')", id=f"empty-{args[0]}-{name.strip(chr(39))}")
      for args, name in (
          (("show", ""), "'REF'"),
          (("history", "  "), "'REF'"),
          (("symbols", "vllm@v0.1.0", "--path", ""), "'--path'"),
          (("fix", "--bump", "c", "--bump", " "), "'--bump'"),
          (("index", "vllm@v0.1.0", ""), "'REPO@VERSION'"),
          (("symbols", ""), "'REPO@VERSION'"),
          (("links", ""), "'SYMBOL'"),
          (("links", "--article", " "), "'--article'"),
          (("search", "kv", ""), "'TEXT'"),
          (("check", "--against", ""), "'--against'"),
          (("fix", "--against", ""), "'--against'"),
          (("xref", ""), "'NAME|REF'"),
          (("xref", "cdiv", ""), "'REPO@VERSION'"),
          (("diff", "", "vllm@v0.2.0"), "'REPO@A'"),
          (("diff", "vllm@v0.1.0", " "), "'REPO@B'"),
      )),
]


@pytest.mark.parametrize(("args", "message"), ERRORS)
def test_errors_are_one_line_with_exit_2(project: Path, args: tuple[str, ...], message: str
                                         ) -> None:
    _broken_files()
    junk = Path("junk.db").read_bytes()
    result = run(*args)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == message.replace("(2)", f"({_schema_version()})") + "\n"
    assert Path("junk.db").read_bytes() == junk
    assert Path("zero.db").stat().st_size == 0
    assert not Path("nowhere.db").exists()


@pytest.mark.parametrize("value", ["", " ", "\t "], ids=["empty", "a-space", "white-space"])
@pytest.mark.parametrize(("args", "option", "command_path"), [
    pytest.param(args, option, command_path, id=name)
    for args, option, command_path, name in (
        (("--db", "{}", "versions"), "'--db'", "annotate", "db-before"),
        (("versions", "--db", "{}"), "'--db'", "annotate versions", "db-after"),
        (("--db={}", "check"), "'--db'", "annotate", "db-with-equals"),
        (("--config", "{}", "check"), "'--config'", "annotate", "config"),
        (("index", "vllm@v0.1.0", "--from", "{}"), "'--from'", "annotate index", "from"),
        (("check", "-o", "{}"), "'--output' / '-o'", "annotate check", "output-of-check"),
        (("diff", "vllm@v0.1.0", "vllm@v0.2.0", "--output={}"), "'--output' / '-o'",
         "annotate diff", "output-of-diff"),
    )
])
def test_a_path_option_empty_or_only_white_space_is_refused_as_empty(
    project: Path, args: tuple[str, ...], option: str, command_path: str, value: str
) -> None:
    """An unset variable with a stray space (``-o "$OUT "``) names no file: it is refused as
    an empty one is, every path option's and every text's alike, before a file named " "
    is written or looked for as the index."""
    before = sorted(os.listdir())
    result = run(*(arg.format(value) for arg in args))
    assert (result.exit_code, result.stdout, result.stderr) == (
        2, "", f"Error: Invalid value for {option}: it is empty (see '{command_path} --help')\n")
    assert sorted(os.listdir()) == before


@pytest.mark.parametrize("args", [
    pytest.param(("check", "-o", "report.json/"), id="check"),
    pytest.param(("diff", "vllm@v0.1.0", "vllm@v0.2.0", "--output=report.json/"), id="diff"),
])
def test_an_output_path_that_ends_with_a_slash_is_refused(
    project: Path, args: tuple[str, ...]
) -> None:
    """``-o report.json/`` names a folder: writing the file report.json instead, as `Path`
    reads it, would surprise whoever meant ``-o "$DIR/"``."""
    before = sorted(os.listdir())
    result = run(*args)
    assert (result.exit_code, result.stdout, result.stderr) == (
        2, "", "Error: Invalid value for '--output' / '-o': 'report.json/' ends with a slash, "
        "which names a folder: give the report file's path (report.json, say) (see "
        f"'annotate {args[0]} --help')\n")
    assert sorted(os.listdir()) == before


def _schema_version() -> int:
    from db.schema import SCHEMA_VERSION

    return SCHEMA_VERSION


CONFIGS = [
    pytest.param(
        "[repos.vllm\n",
        "{path}: invalid TOML: Expected ']' at the end of a table declaration "
        "(at line 1, column 12); fix the file's syntax",
        id="toml-syntax",
    ),
    *(pytest.param(
        f"db = {nested}\n", "{path}: invalid TOML: arrays or inline tables nested too deeply; "
        "fix the file's syntax", id=name) for nested, name in (
            ("[" * 10_000 + "]" * 10_000, "toml-arrays-nested-too-deeply"),
            ("{a=" * 10_000 + "1" + "}" * 10_000, "toml-tables-nested-too-deeply"))),
    pytest.param(
        "colour = 'red'\n",
        "{path}: unknown key 'colour'; allowed keys: annotations, articles, cache_dir, db, "
        "fail_on, repos, sources",
        id="unknown-top-level-key",
    ),
    pytest.param(
        "[repos.vllm]\nbranch = 'main'\n",
        "{path} [repos.vllm]: unknown key 'branch'; allowed keys: git, github, pypi, sources, "
        "target, versions",
        id="unknown-repo-key",
    ),
    pytest.param(
        "annotation = ['notes/*.yml']\n",
        "{path}: unknown key 'annotation'; did you mean 'annotations'? allowed keys: "
        "annotations, articles, cache_dir, db, fail_on, repos, sources",
        id="misspelt-top-level-key",
    ),
    pytest.param(
        "[repos.vllm]\nversion = ['v1']\n",
        "{path} [repos.vllm]: unknown key 'version'; did you mean 'versions'? allowed keys: git, "
        "github, pypi, sources, target, versions",
        id="misspelt-repo-key",
    ),
    pytest.param(
        "sources = ['pypy']\n", "{path}: unknown source 'pypy'; choose from git, pypi",
        id="unknown-top-level-source",
    ),
    pytest.param(
        "[repos.vllm]\nsources = ['svn']\n",
        "{path} [repos.vllm]: unknown source 'svn'; choose from git, pypi",
        id="unknown-repo-source",
    ),
    pytest.param(
        "[repos.vllm]\nsources = 'git'\n", "{path} [repos.vllm]: 'sources' must be a list of "
        "strings", id="repo-sources-not-a-list",
    ),
    pytest.param(
        "fail_on = 'changed'\n", "{path}: 'fail_on' must be a list of strings",
        id="fail-on-not-a-list",
    ),
    pytest.param("db = 5\n", "{path}: 'db' must be a string", id="db-not-a-string"),
    pytest.param(
        "[repos.vllm]\ngit = ['a']\n", "{path} [repos.vllm]: 'git' must be a string",
        id="git-not-a-string",
    ),
    pytest.param(
        "[repos.vllm]\nversions = 'v1'\n", "{path} [repos.vllm]: 'versions' must be a list of "
        "strings",
        id="versions-not-a-list",
    ),
    pytest.param(
        "repos = 3\n", "{path}: 'repos' must be a table of [repos.NAME] tables",
        id="repos-not-a-table",
    ),
    pytest.param(
        "[repos.'bad name']\n",
        "{path} [repos]: invalid repo name 'bad name'; use letters, digits, _ . -",
        id="invalid-repo-name",
    ),
    pytest.param(
        "[repos.vllm]\nversions = ['v0.20.0', 'v0.25.0']\ntarget = 'v0.250'\n",
        "{path} [repos.vllm]: target 'v0.250' is not one of its versions (v0.20.0, v0.25.0); "
        "fix the target, or add it to versions", id="target-not-a-version",
    ),
    pytest.param(
        "[repos.vllm]\nversions = ['-x']\n",
        "{path} [repos.vllm] versions: invalid version '-x'; a version is a tag or commit such "
        "as v0.20.0 and starts with a letter or digit", id="invalid-version"),
    pytest.param(
        "[repos.vllm]\nversions = ['v1']\ntarget = '-x'\n",
        "{path} [repos.vllm] target: invalid version '-x'; a version is a tag or commit such as "
        "v0.20.0 and starts with a letter or digit", id="invalid-target"),
    pytest.param(
        "[repos.vllm]\ngithub = 'not a repo'\n",
        "{path} [repos.vllm]: github 'not a repo' is not ORG/NAME; write it as in its URL: "
        "github = \"vllm-project/vllm\"", id="github-not-org-name"),
    pytest.param(
        "[repos.vllm]\ngithub = 'vllm-project/vllm/tree/main'\n",
        "{path} [repos.vllm]: github 'vllm-project/vllm/tree/main' is not ORG/NAME; write it as "
        "in its URL: github = \"vllm-project/vllm\"", id="github-with-more-than-org-name"),
    *(pytest.param(
        f"{table}{key} = \"{value}\"\n", f"{{path}}{where}: '{key}' {problem}",
        id=f"{key}-{name}",
    ) for table, where in (("", ""),) for key in ("db", "cache_dir")
      for value, problem, name in (
        ("~nosuchuser/x", "= '~nosuchuser/x' starts with the home folder of a user this "
                          "machine does not have; write the path in full", "unknown-user"),
        ("a\\u0000b", "holds a NUL character; write a plain path", "nul"),
        (f"cache/{'x' * 256}", "has a name longer than 255 bytes; write a shorter path",
         "name-too-long"))),
    *(pytest.param(f"{table}{key} = {json.dumps(value)}\n",
                   f"{{path}}{where}: '{key}' is empty; {hint}",
                   id=f"{where.strip(' []') or 'top'}-{key}-{name}")
      for table, where, key, hint in (
        ("", "", "db", "write a path, or leave the key out for its default"),
        ("", "", "cache_dir", "write a path, or leave the key out for its default"),
        ("[repos.vllm]\n", " [repos.vllm]", "git",
         "write a clone URL or a path, or leave the key out"),
        ("[repos.vllm]\n", " [repos.vllm]", "pypi",
         "write the project's name as pip takes it, or leave the key out"),
        ("[repos.vllm]\n", " [repos.vllm]", "github",
         "write ORG/NAME as in its URL, or leave the key out"),
        ("[repos.vllm]\n", " [repos.vllm]", "target",
         "write one of its versions, or leave the key out for the last of them"))
      for value, name in (("", "empty"), (" ", "white-space"), ("\t ", "tab-and-space"))),
    *(pytest.param(f"[repos.mine]\n{key} = {json.dumps(value)}\n",
                   f"{{path}} [repos.mine]: '{key}' is empty; {hint}",
                   id=f"a-repo-of-its-own-{key}-{name}")
      for key, hint in (("git", "write a clone URL or a path, or leave the key out"),
                        ("pypi", "write the project's name as pip takes it, or leave the key out"),
                        ("github", "write ORG/NAME as in its URL, or leave the key out"))
      for value, name in (("", "empty"), (" ", "white-space"))),
    *(pytest.param(f"[repos.vllm]\nversions = ['v1', {json.dumps(value)}]\n",
                   "{path} [repos.vllm]: 'versions' lists an empty version; list tags or "
                   "commits such as v0.20.0", id=f"versions-{name}")
      for value, name in (("", "empty"), (" ", "white-space"), ("\t ", "tab-and-space"))),
    pytest.param(
        "sources = []\n",
        "{path}: 'sources' is empty; list git or pypi, or leave the key out for both",
        id="sources-empty"),
    pytest.param(
        "[repos.lmcache]\nsources = []\n",
        "{path} [repos.lmcache]: 'sources' is empty; list git or pypi, or leave the key out "
        "for both", id="repo-sources-empty"),
    *(pytest.param(
        f"[repos.{repo}]\nversions = ['v0.1.0', '{number}']\n",
        f"{{path}} [repos.{repo}] versions: '{number}' is PyPI's number, not a tag of {github}, "
        f"so its permalinks would name a tag GitHub does not have (blob/{number}/...); write "
        f"'v{number}', its tag (pypi still fetches {number} for it)",
        id=f"{repo}-version-without-its-v-{number}")
      for repo, github, number in (("vllm", "vllm-project/vllm", "0.20.0"),
                                   ("vllm", "vllm-project/vllm", "0.23.1rc0"),
                                   ("lmcache", "LMCache/LMCache", "0.5.1"))),
    pytest.param(
        "[repos.vllm]\nversions = ['v0.1.0', 'v0.2.0', 'v0.1.0']\n",
        "{path} [repos.vllm]: versions lists 'v0.1.0' twice; list each version once",
        id="a-version-listed-twice"),
    pytest.param(
        "[repos.vllm]\ngit = '~nosuchuser/vllm'\n",
        "{path} [repos.vllm]: 'git' = '~nosuchuser/vllm' starts with the home folder of a user "
        "this machine does not have; write the path in full", id="git-unknown-user"),
    pytest.param(
        "[repos.vllm]\npypi = '-r/etc/passwd'\n",
        "{path} [repos.vllm]: pypi '-r/etc/passwd' is not a PyPI project name; write it as pip "
        "takes it: pypi = \"vllm\"", id="pypi-not-a-name"),
    pytest.param(
        "[repos.lmcahce]\nversions = ['v0.5.1']\n",
        "{path}: [repos.lmcahce] names no git, pypi or github; did you mean '[repos.lmcache]'?",
        id="misspelt-built-in-repo"),
    pytest.param(
        "[repos.mine]\nversions = ['v1']\n",
        "{path}: [repos.mine] names no git, pypi or github; give it git = \"URL or PATH\", "
        "pypi = \"NAME\", or github = \"ORG/NAME\" for versions indexed with --from",
        id="repo-without-any-source"),
    pytest.param(
        "[repos.vllm-omni]\nversions = ['v1']\n",
        "{path}: [repos.vllm-omni] names no git, pypi or github; give it git = \"URL or "
        "PATH\", pypi = \"NAME\", or github = \"ORG/NAME\" for versions indexed with --from",
        id="sibling-of-a-built-in-repo-without-any-source"),
    *(pytest.param(f"{key} = ['{key}/*.yml', {json.dumps(value)}]\n",
                   f"{{path}}: '{key}' lists an empty glob; write a glob relative to the "
                   "config's folder, such as 'articles/**/*.md'", id=f"{key}-{name}")
      for key in ("annotations", "articles")
      for value, name in (("", "empty-glob"), (" ", "white-space-glob"),
                          ("\t ", "tab-and-space-glob"))),
    *(pytest.param(
        f"{key} = ['{pattern}']\n", f"{{path}}: '{key}' pattern '{pattern}' {problem}; write a "
        "glob relative to the config's folder, such as 'articles/**/*.md'", id=f"{key}-{name}",
    ) for key in ("annotations", "articles") for pattern, problem, name in (
        ("./", "names no file", "glob-of-the-folder"),
        ("/ci/articles/*.yml", "is not relative", "absolute-glob"),
        ("~/articles/*.md", "is not relative", "home-glob"),
        ("../../**/*.yml", "leaves the config's folder", "glob-outside"),
        ("articles/a**/*.md",
         "uses '**' inside a name: it can only stand alone between slashes", "glob-with-a**"),
        (f"{'x' * 256}/*.md", "has a name longer than 255 bytes", "glob-name-too-long"),
    )),
]


@pytest.mark.parametrize("command", [
    pytest.param(("index", "vllm@v0.1.0"), id="index"),
    pytest.param(("versions",), id="versions"),
    pytest.param(("symbols", "vllm@v0.1.0"), id="symbols"),
])
@pytest.mark.parametrize(("toml", "message"), CONFIGS)
def test_invalid_config_is_one_line_with_exit_2(
    toml: str, message: str, command: tuple[str, ...]
) -> None:
    Path("annotate.toml").write_text(toml)
    result = run(*command)
    assert (result.exit_code, result.stdout) == (2, "")
    path = Path("annotate.toml").resolve()
    assert result.stderr == "Error: " + message.format(path=path) + "\n"
    assert not Path(".annotate").exists()


@pytest.mark.parametrize(("toml", "message"),
                         [config for config in CONFIGS if config.id != "toml-syntax"])
def test_invalid_config_in_pyproject_names_its_tables_as_written_there(
    toml: str, message: str
) -> None:
    """[tool.annotate.repos.vllm], not [repos.vllm], which pyproject.toml does not have, and
    [tool.annotate] for its own keys (db, repos...), which annotate.toml has at its top."""
    table = "[tool.annotate.repos."
    Path("pyproject.toml").write_text("[tool.annotate]\n" + toml.replace("[repos.", table))
    result = run("versions")
    assert (result.exit_code, result.stdout) == (2, "")
    path = Path("pyproject.toml").resolve()
    expected = re.sub(r"^\{path\}: (?!\[|invalid TOML)", "{path} [tool.annotate]: ",
                      message.replace("[repos.", table).replace("[repos]", table[:-1] + "]"))
    assert result.stderr == "Error: " + expected.format(path=path) + "\n"


PYPROJECTS = [
    pytest.param(b"tool = 1\n", "{path}: 'tool' must be a table", id="tool-not-a-table"),
    pytest.param(b"[tool]\nannotate = 5\n", "{path}: 'annotate' must be a table",
                 id="annotate-not-a-table"),
]


@pytest.mark.parametrize(("toml", "message"), PYPROJECTS)
def test_invalid_pyproject_is_one_line_with_exit_2(toml: bytes, message: str) -> None:
    Path("pyproject.toml").write_bytes(toml)
    result = run("versions")
    path = Path("pyproject.toml").resolve()
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"Error: {message.format(path=path)}; write the settings under [tool.annotate]\n"
    )


@pytest.mark.parametrize(("name", "text", "message"), [
    pytest.param("pyproject.toml", "[project]\nname = 'x'\n",
                 "{path} has no [tool.annotate] table; write the settings there, or pass "
                 "--config with the file that holds them", id="pyproject-without-the-table"),
    pytest.param("ci.toml", "[tool.annotate]\ndb = 'ci.db'\n",
                 "{path}: unknown key 'tool'; [tool.annotate] is read from pyproject.toml "
                 "only: write its keys at the top of {path}", id="tool-annotate-in-another-file"),
])
def test_settings_where_the_config_given_does_not_hold_them_are_one_line(
    name: str, text: str, message: str
) -> None:
    """``--config`` names a file to read settings from: one that holds none where annotate
    reads them was taken for no settings, every default (the built-in repos' versions)."""
    Path(name).write_text(text)
    result = run("--config", name, "versions")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == "Error: " + message.format(path=name) + "\n"
    assert not Path(".annotate").exists()


def _config_folder(path: Path) -> None:
    path.mkdir()


def _dangling_config(path: Path) -> None:
    path.symlink_to("moved-away.toml")


@pytest.mark.parametrize(("args", "make", "problem"), [
    pytest.param((), _config_folder, "Is a directory", id="annotate.toml-is-a-folder"),
    pytest.param((), _dangling_config, "No such file or directory",
                 id="annotate.toml-is-a-dangling-symlink"),
    pytest.param(("--config", "annotate.toml"), _config_folder, "Is a directory",
                 id="config-is-a-folder"),
    pytest.param(("--config", "annotate.toml"), lambda _: None, "No such file or directory",
                 id="config-does-not-exist"),
])
def test_a_config_that_cannot_be_read_is_one_line_with_exit_2(
    args: tuple[str, ...], make: Callable[[Path], None], problem: str
) -> None:
    """Not taken for no config (the defaults would index another project's versions)."""
    make(Path("annotate.toml"))
    result = run(*args, "versions")
    path = Path.cwd().resolve() / "annotate.toml" if not args else Path("annotate.toml")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (f"Error: cannot read {path}: {problem}; make it a file you may "
                             "read, or pass --config FILE\n")
    assert not Path(".annotate").exists()


@pytest.mark.parametrize("name", ["annotate.toml", "pyproject.toml"])
def test_config_that_is_not_utf8_is_one_line_with_exit_2(name: str) -> None:
    Path(name).write_bytes(b'[tool.annotate]\ndb = "\xff"\n')
    result = run("versions")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"Error: {Path(name).resolve()}: not valid UTF-8 (byte 23); save the file as UTF-8\n"
    )


# ------------------------------------------------------------------------------ processes


def _annotate() -> list[str]:
    script = Path(sys.executable).with_name("annotate")
    return [str(script)] if script.exists() else [shutil.which("annotate") or "annotate"]


def test_console_script_reports_errors_without_traceback(project: Path) -> None:
    done = subprocess.run(
        [*_annotate(), "versions", "--db", "nowhere.db"], capture_output=True, text=True,
        env=dict(os.environ), timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", "Error: no index at nowhere.db; run 'annotate index' first, or pass --db PATH\n",
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", [
    pytest.param(("versions",), id="versions"),
    pytest.param(("symbols", "vllm@v0.1.0", "--format", "jsonl"), id="symbols-jsonl"),
])
def test_a_full_disk_under_standard_output_is_one_line(project: Path, command: tuple[str, ...]
                                                       ) -> None:
    assert run("index", "vllm@v0.1.0").exit_code == 0
    with open("/dev/full", "w") as full:
        done = subprocess.run([*_annotate(), *command], stdout=full, stderr=subprocess.PIPE,
                              text=True, env=dict(os.environ), timeout=60)
    assert (done.returncode, done.stderr) == (
        2, "Error: cannot write the output: No space left on device; free some space, or "
        "send the output elsewhere\n",
    )


@pytest.mark.parametrize("versions", [
    pytest.param(("v0.1.0", "v0.2.0"), id="different-versions"),
    pytest.param(("v0.1.0", "v0.1.0"), id="same-version"),
])
def test_concurrent_index_runs(project: Path, versions: tuple[str, str]) -> None:
    runs = [
        subprocess.Popen(
            [*_annotate(), "index", f"vllm@{version}"], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=dict(os.environ),
        )
        for version in versions
    ]
    outputs = [(*run.communicate(timeout=120), run.returncode) for run in runs]
    assert [(err, code) for _, err, code in outputs] == [("", 0), ("", 0)]
    lines = sorted(out.strip() for out, _, _ in outputs)
    if versions[0] == versions[1]:
        already = "vllm@v0.1.0: already indexed, nothing to do"
        assert already in lines  # exactly one run wrote it
        assert next(line for line in lines if line != already).startswith(
            "vllm@v0.1.0: 19 files, 17 new blobs parsed, "
        )
    else:
        assert [line.split(": ")[0] for line in lines] == ["vllm@v0.1.0", "vllm@v0.2.0"]
    with connected(DB) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        rows = conn.execute(
            "SELECT v.version, v.file_count, v.symbol_count,"
            " (SELECT count(*) FROM files f WHERE f.version_id = v.id),"
            " (SELECT count(*) FROM version_symbols s WHERE s.version = v.version)"
            " FROM versions v ORDER BY v.version"
        ).fetchall()
        duplicates = conn.execute(
            "SELECT count(*) FROM (SELECT blob_id, seq FROM symbols GROUP BY blob_id, seq"
            " HAVING count(*) > 1)"
        ).fetchone()[0]
    assert [row[0] for row in rows] == sorted(set(versions))
    for version, file_count, symbol_count, files, symbols in rows:
        assert file_count == files == len(fv.regular_files(fv.VERSIONS[version]))
        assert symbol_count == symbols > 0
    assert duplicates == 0


def test_an_empty_glob_list_means_none(tmp_path: Path) -> None:
    from indexer.config import load_config

    (tmp_path / "annotate.toml").write_text('articles = []\nannotations = ["notes/*.yml"]\n')
    config = load_config(tmp_path)
    assert (config.articles, config.annotations) == ((), ("notes/*.yml",))


@pytest.mark.parametrize(("name", "text"), [
    pytest.param("annotate.toml", '\ufeffdb = "x.db"\n', id="byte-order-mark"),
    pytest.param("pyproject.toml", '[project]\nname = "p"\n[tool.annotate]\ndb = "x.db"\n',
                 id="config-option-on-pyproject"),
])
def test_config_files_a_user_may_hand_over(tmp_path: Path, name: str, text: str) -> None:
    from indexer.config import load_config

    (tmp_path / "conf").mkdir()
    path = tmp_path / "conf" / name
    path.write_text(text, encoding="utf-8")
    assert load_config(tmp_path, config_file=path).db == tmp_path / "conf" / "x.db"


@pytest.mark.parametrize(("config", "shown"), [
    ("annotate.toml", "annotate.toml"),
    ("pyproject.toml", "[tool.annotate] of pyproject.toml"),
])
def test_no_home_folder_stops_only_what_needs_the_cache(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, config: str, shown: str
) -> None:
    """A user id with no passwd entry and no HOME (a container run with --user): the cache
    folder cannot be found, which only fetching a version needs."""
    if config == "pyproject.toml":
        text = project.read_text(encoding="utf-8").replace("[repos.", "[tool.annotate.repos.")
        write_file(config, f"[tool.annotate]\n{text}")
        project.unlink()
    def no_home(_cls: type) -> Path:
        raise RuntimeError("Could not determine home directory.")

    for name in ("ANNOTATE_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(Path, "home", classmethod(no_home))
    fv.write_snapshot(tmp_path / "v1", fv.VERSIONS["v0.1.0"])
    local = run("index", "vllm@v0.1.0", "--from", str(tmp_path / "v1"))
    assert (local.exit_code, local.stderr) == (0, ""), local.output
    assert run("versions").exit_code == 0
    fetched = run("index", "vllm@v0.2.0")
    assert (fetched.exit_code, fetched.stdout) == (2, "")
    assert fetched.stderr == ("Error: there is no home folder to keep the cache in (HOME is "
                              "not set); set ANNOTATE_CACHE_DIR (or cache_dir in "
                              f"{shown}) to a writable folder\n")


def test_config_paths_expand_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from indexer.config import load_config

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "annotate.toml").write_text('db = "~/x.db"\ncache_dir = "~/cache"\n')
    config = load_config(tmp_path)
    assert (config.db, config.cache_dir) == (tmp_path / "home/x.db", tmp_path / "home/cache")


def _no_such_option(option: str) -> str:
    """Click's own words for an unknown ``option``, without the period it may end with:
    ``No such option '--bogus'`` (click 8.4), ``No such option: --bogus`` (8.2)."""
    return click.NoSuchOption(option).format_message().removesuffix(".")


@pytest.mark.parametrize(("args", "error"), [
    pytest.param(("--bogus",), f"Error: {_no_such_option('--bogus')} "
                 "(see 'annotate --help')", id="unknown-global-option"),
    pytest.param(("nosuch",), "Error: No such command 'nosuch' (see 'annotate --help')",
                 id="unknown-command"),
    pytest.param(("check", "--format", "xml"),
                 "Error: Invalid value for '--format': 'xml' is not one of 'text', 'json', "
                 "'github', 'sarif', 'markdown' (see 'annotate check --help')", id="bad-choice"),
    pytest.param(("show",), "Error: Missing argument 'REF' (see 'annotate show --help')",
                 id="missing-argument"),
    pytest.param(("check", "--against"), "Error: Option '--against' requires an argument "
                 "(see 'annotate check --help')", id="option-without-its-value"),
    pytest.param(("--db",), "Error: Option '--db' requires an argument (see 'annotate --help')",
                 id="global-option-without-its-value"),
])
def test_usage_errors_are_one_line_naming_the_help(args: tuple[str, ...], error: str) -> None:
    done = subprocess.run([*_annotate(), *args], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", error + "\n")


@pytest.mark.parametrize(("args", "error"), [
    pytest.param(("link", "--config", "a.toml"),
                 "--config goes before the command: annotate --config a.toml link", id="config"),
    pytest.param(("check", "--config=a.toml", "--format", "json"),
                 "--config goes before the command: annotate --config a.toml check --format json",
                 id="config-equals"),
    pytest.param(("versions", "--config=a.toml", "--db", "y.db"),
                 "--config goes before the command: annotate --config a.toml versions --db y.db",
                 id="config-where-db-is-taken"),
    pytest.param(("--db", "x y.db", "search", "a b", "--config", "c.toml"),
                 "--config goes before the command: annotate --db 'x y.db' --config c.toml "
                 "search 'a b'", id="after-other-global-options"),
    pytest.param(("show", "x", "--config"),
                 "--config goes before the command: annotate --config FILE show x", id="no-value"),
    pytest.param(("--config", "a.toml", "--db", "x.db", "check", "--config", "b.toml"),
                 "--config goes before the command: annotate --db x.db --config b.toml check",
                 id="given-before-too"),
    pytest.param(("--db", "x.db", "check", "--config", "--db"),
                 "--config goes before the command: annotate --db x.db --config --db check",
                 id="an-option-name-as-a-value"),
    pytest.param(("search", "--config", "c.toml", "--", "--db"),
                 "--config goes before the command: annotate --config c.toml search -- --db",
                 id="nothing-after-double-dash-is-an-option"),
])
def test_a_global_option_after_the_command_says_where_it_goes(
    args: tuple[str, ...], error: str
) -> None:
    done = subprocess.run([*_annotate(), *args], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"Error: {error}\n")


EVERY_COMMAND = [
    ("index",), ("index", "vllm@v0.1.0"), ("versions",), ("symbols", "vllm@v0.1.0"),
    ("show", "vllm@v0.1.0:vllm/utils.py::cdiv"), ("link",), ("links", "cdiv"),
    ("search", "cdiv"), ("check",), ("fix",), ("diff", "vllm@v0.1.0", "vllm@v0.2.0"),
    ("history", "vllm@v0.1.0:vllm/utils.py::cdiv"), ("xref", "cdiv"),
]


@pytest.mark.parametrize("args", [args for args in EVERY_COMMAND if args[0] != "index"],
                         ids=" ".join)
def test_every_command_takes_db_after_its_name(tmp_path: Path, args: tuple[str, ...]) -> None:
    """As the global option, and over it when given both ways (``index``: its own tests)."""
    empty = tmp_path / "empty.db"
    (tmp_path / "annotations").mkdir()  # what link, check and fix read before the index
    (tmp_path / "annotations" / "a.yml").write_text(
        "article: blog/a.md\nat: vllm@v0.1.0\nclaims:\n  - id: a\n    text: x\n"
        "    refs: [cdiv]\n", encoding="utf-8")
    done = subprocess.run([*_annotate(), "--db", "other.db", *args, "--db", str(empty)],
                          capture_output=True, text=True, check=False, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"Error: no index at {empty}; run 'annotate index' first, or pass --db PATH\n")


@pytest.mark.parametrize("args", EVERY_COMMAND, ids=" ".join)
@pytest.mark.parametrize("config", ["annotate.toml", "pyproject.toml"])
def test_a_subfolder_of_a_project_names_the_folder_to_run_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], config: str
) -> None:
    """Not the defaults, and a second index in articles/.annotate/."""
    table = "[tool.annotate]\n" if config == "pyproject.toml" else ""
    write_file(tmp_path / config, f'{table}annotations = ["notes/*.yml"]\n')
    articles = tmp_path / "articles"
    write_file(articles / "pyproject.toml", "[project]\nname = 'articles'\n")  # no config
    monkeypatch.chdir(articles)
    result = run(*args)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"Error: no annotate.toml in {articles}; run from {tmp_path}, where {config} is, or "
        f"pass --config {tmp_path / config}\n")
    assert not (articles / ".annotate").exists()


def test_a_subfolder_with_db_or_config_given_or_no_project_above_runs_as_before(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run("index", "vllm@v0.1.0").exit_code == 0
    Path("articles").mkdir()
    monkeypatch.chdir("articles")
    given = run("--db", str(project.parent / DB), "versions")
    assert (given.exit_code, given.stderr) == (0, "")
    assert given.stdout.splitlines()[1].startswith("vllm  v0.1.0")
    configured = run("--config", str(project), "symbols", "vllm@v0.1.0", "--path",
                     "vllm/utils.py")
    assert (configured.exit_code, configured.stderr) == (0, "")
    project.rename(project.with_name("elsewhere.toml"))  # no project above: the defaults
    assert run("versions").stderr == (
        f"Error: no index at {Path.cwd() / DB}; run 'annotate index' first, or pass --db PATH\n")


def test_annotate_alone_prints_its_help() -> None:
    done = subprocess.run(_annotate(), capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("Usage: annotate [OPTIONS] COMMAND [ARGS]...\n")
    assert "  index " in done.stdout and "  check " in done.stdout


def test_without_git_installed_pypi_is_used_or_the_error_says_so(
    tmp_path: Path, fake_vllm: FakeRepo, fake_wheels: Path
) -> None:
    """GitPython refuses to load where no git command is (a slim container)."""
    no_git = tmp_path / "empty-path"
    no_git.mkdir()
    root = tmp_path / "project"
    root.mkdir()
    config = root / "annotate.toml"
    config.write_text(f'[repos.vllm]\ngit = "{fake_vllm.url}"\n')  # git, then pypi
    done = run_annotate(root, "index", "vllm@v0.1.0", PATH=str(no_git), PIP_NO_INDEX="1",
                        PIP_FIND_LINKS=str(fake_wheels))
    assert (done.returncode, done.stderr) == (0, "Note: vllm@v0.1.0 was read from pypi: git: "
                                                 "the git command is not installed (or not on "
                                                 "PATH)\n")
    assert done.stdout.startswith("vllm@v0.1.0: ") and "(pypi " in done.stdout
    config.write_text(f'[repos.vllm]\ngit = "{fake_vllm.url}"\nsources = ["git"]\n')
    done = run_annotate(root, "index", "vllm@v0.2.0", PATH=str(no_git))
    assert done.returncode == 2
    assert done.stderr.startswith(
        "Error: vllm@v0.2.0 was not found (git: the git command is not installed (or not on "
        "PATH)); install git, or use sources = [\"pypi\"];")


# A hint that names the config names the file in use, and a table as it is written there:
# (config lines, files, command, hint). In the hint, {config} is the config as a whole,
# [{repos}.NAME] a repo's table, {file} the file.
_CLAIM = "  - {id: c, text: x, refs: [vllm/utils.py::cdiv]}\n"
_PERMALINK = "https://github.com/other/repo/blob/v1/x.py#L1"
CONFIG_HINTS = {
    "unknown-repo": ("", {}, ("index", "zzzz@v1"), "add it as [{repos}.zzzz] in {file}"),
    "no-version-configured": (
        "[repos.vllm]\nversions = []\n[repos.lmcache]\nversions = []\n", {}, ("index",),
        "{config} lists none; name one ('annotate index vllm@VERSION'), or list them in "
        "'versions' of [{repos}.NAME] in {file}"),
    "globs-select-no-file": ("", {}, ("link",),
                             "add one, or set 'annotations' and 'articles' in {config}"),
    "globs-select-no-claims": ("", {"notes/a.yml": "article: notes/a.md\nclaims: []\n"},
                               ("link",), "check 'annotations' and 'articles' in {config}"),
    "article-not-selected": ("", {"notes/a.yml": f"article: notes/a.md\nclaims:\n{_CLAIM}"},
                             ("link",), "add 'notes/a.md' to 'articles' in {config}"),
    "unknown-pin": (
        "", {"notes/a.yml": f"article: notes/a.md\nat: vllm@v9.9.9\nclaims:\n{_CLAIM}"},
        ("link",), "add v9.9.9 to 'versions' of [{repos}.vllm] in {file} and run"),
    "permalink-into-an-unconfigured-repo": (
        "", {"notes/a.yml": f"article: notes/a.md\nclaims:\n  - {{id: c, text: x, refs: "
                            f"['{_PERMALINK}']}}\n"},
        ("link",), 'add it as [{repos}.NAME] in {file} with github = "ORG/NAME"'),
    "article-permalink-into-an-unconfigured-repo": (
        "", {"articles/p.md": f"# P\n\nSee [x]({_PERMALINK}).\n",
             "notes/p.yml": f"article: articles/p.md\nclaims:\n{_CLAIM}"},
        ("link",), 'add [{repos}.NAME] in {file} with github = "ORG/NAME" to check them'),
}
# How each config is named: (--config given, {config}, {repos}, {file}).
CONFIG_NAMES = {
    "annotate.toml": (False, "annotate.toml", "repos", "annotate.toml"),
    "pyproject.toml": (False, "[tool.annotate] of pyproject.toml", "tool.annotate.repos",
                       "pyproject.toml"),
    "other.toml": (True, "other.toml", "repos", "other.toml"),
}


@pytest.mark.parametrize("config", CONFIG_NAMES)
@pytest.mark.parametrize("case", CONFIG_HINTS)
def test_hints_name_the_config_file_in_use(case: str, config: str) -> None:
    """Not annotate.toml, when the config is [tool.annotate] of pyproject.toml or the file
    --config names; and a repo's table as the user writes it in that file, which in
    pyproject.toml is [tool.annotate.repos.NAME]."""
    lines, files, args, hint = CONFIG_HINTS[case]
    given, shown, repos, file = CONFIG_NAMES[config]
    text = f'annotations = ["notes/*.yml"]\n{lines}'
    if config == "pyproject.toml":
        text = "[tool.annotate]\n" + text.replace("[repos.", "[tool.annotate.repos.")
    write_file(config, text)
    write_file("notes/a.md", "# A\n")
    for path, content in files.items():
        write_file(path, content)
    with open_database(DB):  # an empty index: link reads it
        pass
    result = run(*(("--config", config) if given else ()), *args)
    assert hint.format(config=shown, repos=repos, file=file) in result.stderr
    if config != "annotate.toml":
        assert "annotate.toml" not in result.stderr
    if config == "pyproject.toml":
        assert "[repos." not in result.stderr
