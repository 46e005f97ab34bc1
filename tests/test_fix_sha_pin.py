"""fix moves a ref pinned at a commit SHA forward: a SHA says nothing of its order, so it
is not taken for a version later than the target."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from annotate_cli import cli


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def run(*args: str):
    return CliRunner().invoke(cli, list(args), prog_name="annotate")


@pytest.fixture
def moved_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "src"
    src.mkdir()
    git(src, "init", "-q")
    (src / "a.py").write_text("def g(x):\n    y = x + 1\n    z = y * 2\n    return z - 3\n")
    git(src, "add", ".")
    git(src, "commit", "-qm1")
    git(src, "tag", "v1")
    sha = git(src, "rev-parse", "--short=10", "HEAD")
    git(src, "mv", "a.py", "b.py")
    git(src, "commit", "-qm2")
    git(src, "tag", "v2")
    proj = tmp_path / "proj"
    (proj / "articles").mkdir(parents=True)
    (proj / "annotate.toml").write_text(f'[repos.mine]\ngit = "{src}"\nversions = ["v1", "v2"]\n')
    monkeypatch.chdir(proj)
    done = run("index", "mine@v1", "mine@v2")
    assert done.exit_code == 0, done.output
    return proj, sha


def test_fix_moves_a_ref_pinned_at_a_commit_sha_forward(moved_repo: tuple[Path, str]) -> None:
    """A claim pinned at v1's commit SHA: v2 is newer, fix should rewrite it."""
    proj, sha = moved_repo
    (proj / "articles" / "a.yml").write_text(
        f"article: a.md\nclaims:\n  - id: c\n    text: g\n    refs: [mine@{sha}:a.py::g]\n")
    assert "moved" in run("check", "--exit-zero").output
    result = run("fix")
    assert "forward only" not in result.output, result.output
    assert "mine@v2:b.py::g" in (proj / "articles" / "a.yml").read_text()
