"""``annotate.toml``: what each setting becomes once loaded (its refusals are in
test_cli_index's CONFIGS)."""

from __future__ import annotations

from pathlib import Path

import pytest

from db.database import open_database
from indexer.config import (
    DEFAULT_FAIL_ON,
    ProjectConfig,
    config_above,
    default_cache_dir,
    folder_in_repository,
    load_config,
)


def loaded(toml: str) -> ProjectConfig:
    Path("annotate.toml").write_text(toml, encoding="utf-8")
    return load_config()


@pytest.mark.parametrize(("first", "second", "older"), [
    pytest.param("vllm@v0.20.0", "vllm@v0.25.0", True, id="listed-before"),
    pytest.param("vllm@v0.25.0", "vllm@v0.20.0", False, id="listed-after"),
    pytest.param("vllm@v0.23.1rc0", "vllm@v0.23.1rc0", False, id="same-version"),
    pytest.param("vllm@v0.1.0", "vllm@v0.25.0", True, id="older-not-listed"),
    pytest.param("vllm@v0.20.0", "vllm@v9", True, id="newer-not-listed"),
    pytest.param("vllm@v0.23.0", "vllm@v0.23.1rc0", True, id="release-before-pre-release"),
    pytest.param("vllm@v0.23.1rc0", "vllm@0.23.1", True, id="pre-release-before-release"),
    pytest.param("vllm@v0.9.0", "vllm@v0.10.0", True, id="numbers-not-text"),
    pytest.param("vllm@v0.25.0", "vllm@main", False, id="number-and-unlisted-name"),
    pytest.param("vllm@main", "vllm@v0.20.0", False, id="unlisted-name-and-number"),
    pytest.param("vllm@v0.25.0", "vllm@4b530f17c5", False, id="number-and-commit-sha"),
    pytest.param("vllm@v0.25.0", "vllm@9767703351", False, id="commit-sha-of-digits-only"),
    pytest.param("vllm@v0.25.0", "vllm@12345a6789", False, id="commit-sha-read-as-an-alpha"),
    pytest.param("lmcache@v0.20.0", "vllm@v0.25.0", False, id="different-repos"),
    pytest.param("nosuch@v0.20.0", "nosuch@v0.25.0", False, id="repo-not-configured"),
])
def test_older_follows_the_version_numbers(first: str, second: str, older: bool) -> None:
    assert load_config().older(first, second) is older


@pytest.mark.parametrize(("first", "second", "older"), [
    pytest.param("vllm@main", "vllm@nightly", True, id="listed-before"),
    pytest.param("vllm@nightly", "vllm@main", False, id="listed-after"),
    pytest.param("vllm@main", "vllm@feature", False, id="second-not-listed"),
    pytest.param("vllm@feature", "vllm@nightly", False, id="first-not-listed"),
    pytest.param("vllm@nightly", "vllm@v0.20.0", False, id="name-listed-after-a-number"),
    pytest.param("vllm@v0.20.0", "vllm@main", True, id="number-listed-before-a-name"),
])
def test_older_follows_the_listed_order_of_names_that_are_not_versions(
    first: str, second: str, older: bool
) -> None:
    config = loaded('[repos.vllm]\nversions = ["v0.20.0", "main", "nightly"]\n')
    assert config.older(first, second) is older


@pytest.mark.parametrize(("github", "close"), [
    pytest.param("vllm-project/vlm", "vllm-project/vllm", id="one-edit"),
    pytest.param("vllm-project/vl", "vllm-project/vllm", id="two-edits"),
    pytest.param("vllm-project/vxxm", "vllm-project/vllm", id="two-substitutions"),
    pytest.param("vllm-project/xxxm", None, id="three-substitutions"),
    pytest.param("VLLM-Project/VLM", "vllm-project/vllm", id="case-is-ignored"),
    pytest.param("vllm-project/v", None, id="three-edits"),
    pytest.param("vllm-project/vllm-ascend", None, id="sibling-repo"),
    pytest.param("LMCache/LMCach", "LMCache/LMCache", id="another-repo"),
])
def test_github_close_to_finds_typos_only(github: str, close: str | None) -> None:
    assert load_config().github_close_to(github) == close


@pytest.mark.parametrize(("toml", "github"), [
    pytest.param('git = "https://github.com/me/proj.git"', "me/proj", id="dot-git-url"),
    pytest.param('git = "https://github.com/me/proj/"', "me/proj", id="trailing-slash"),
    pytest.param('git = "https://github.com/me/proj"', "me/proj", id="plain-url"),
    pytest.param('git = "https://gitlab.com/me/proj.git"', None, id="not-github"),
    pytest.param('git = "https://github.com/me/proj.git"\ngithub = "other/name"', "other/name",
                 id="github-wins-over-git"),
])
def test_a_new_repo_takes_its_github_name_from_its_git_url(toml: str, github: str | None
                                                         ) -> None:
    assert loaded(f"[repos.mine]\n{toml}\n").repo("mine").github == github


def test_a_built_in_repo_keeps_its_github_name_when_git_points_at_a_fork() -> None:
    config = loaded('[repos.vllm]\ngit = "https://github.com/me/vllm-fork.git"\n')
    repo = config.repo("vllm")
    assert (repo.git, repo.github) == ("https://github.com/me/vllm-fork.git", "vllm-project/vllm")


@pytest.mark.parametrize(("toml", "fail_on"), [
    pytest.param("", DEFAULT_FAIL_ON, id="default"),
    pytest.param('fail_on = ["removed"]\n', ("removed",), id="one-status"),
    pytest.param("fail_on = []\n", (), id="empty-list-fails-on-nothing"),
])
def test_fail_on(toml: str, fail_on: tuple[str, ...]) -> None:
    assert loaded(toml).fail_on == fail_on


@pytest.mark.parametrize(("toml", "versions", "target"), [
    pytest.param("", ("v0.20.0", "v0.23.1rc0", "v0.25.0"), "v0.25.0", id="built-in"),
    pytest.param("[repos.vllm]\nversions = ['v1', 'v2']\n", ("v1", "v2"), "v2",
                 id="target-is-the-last-version"),
    pytest.param("[repos.vllm]\nversions = ['v1', 'v2']\ntarget = 'v1'\n", ("v1", "v2"), "v1",
                 id="target-set"),
    pytest.param("[repos.vllm]\nversions = []\n", (), None, id="no-versions"),
    pytest.param("[repos.vllm]\npypi = 'vllm-nightly'\n",
                 ("v0.20.0", "v0.23.1rc0", "v0.25.0"), "v0.25.0", id="other-keys-kept"),
])
def test_versions_and_target(toml: str, versions: tuple[str, ...], target: str | None) -> None:
    repo = loaded(toml).repo("vllm")
    assert (repo.versions, repo.target_version) == (versions, target)


@pytest.mark.parametrize(("toml", "vllm", "lmcache"), [
    pytest.param("", ("git", "pypi"), ("git", "pypi"), id="default"),
    pytest.param("sources = ['pypi']\n", ("pypi",), ("pypi",), id="top-level-for-all"),
    pytest.param("sources = ['pypi']\n[repos.vllm]\nsources = ['git']\n", ("git",), ("pypi",),
                 id="repo-overrides"),
])
def test_sources(toml: str, vllm: tuple[str, ...], lmcache: tuple[str, ...]) -> None:
    config = loaded(toml)
    assert (config.repo("vllm").sources, config.repo("lmcache").sources) == (vllm, lmcache)


@pytest.mark.parametrize(("env", "expected"), [
    pytest.param({"ANNOTATE_CACHE_DIR": "own", "XDG_CACHE_HOME": "xdg"}, "own",
                 id="annotate-cache-dir-first"),
    pytest.param({"XDG_CACHE_HOME": "xdg"}, "xdg/annotate", id="xdg-cache-home"),
    pytest.param({"HOME": "home"}, "home/.cache/annotate", id="home"),
])
def test_default_cache_dir(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str
) -> None:
    for name in ("ANNOTATE_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert default_cache_dir("annotate.toml") == Path(expected)


@pytest.mark.parametrize(("files", "folder", "found"), [
    pytest.param((), "sub/x", "annotate.toml", id="subfolder-of-a-project"),
    pytest.param(("repo/.git/HEAD",), "repo/sub", None, id="inside-another-git-repository"),
    pytest.param(("repo/.git",), "repo", None, id="at-a-worktrees-root"),
    pytest.param(("proj/.git/HEAD", "proj/annotate.toml"), "proj/sub", "proj/annotate.toml",
                 id="project-is-the-repository"),
])
def test_config_above_stops_at_the_repository_it_is_in(
    tmp_path: Path, files: tuple[str, ...], folder: str, found: str | None
) -> None:
    """A config above the git repository a folder is in (a stray ~/annotate.toml) is
    another project's."""
    for name in ("annotate.toml", *files):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    assert config_above(tmp_path / folder) == (None if found is None else tmp_path / found)


@pytest.mark.parametrize(("git", "workspace", "root", "folder"), [
    pytest.param("repo/.git", None, "repo/docs", "docs", id="in-a-git-work-tree"),
    pytest.param("repo/.git", None, "repo", "", id="at-the-work-trees-root"),
    pytest.param(None, None, "repo/docs", "", id="outside-any-repository"),
    pytest.param(None, "repo", "repo/docs/site", "docs/site", id="under-the-github-workspace"),
    pytest.param("repo/docs/.git", "repo", "repo/docs", "docs",
                 id="the-github-workspace-before-the-work-tree"),
    pytest.param(None, "other", "repo/docs", "", id="outside-the-github-workspace"),
])
def test_the_projects_folder_in_its_repository(
    tmp_path: Path, git: str | None, workspace: str | None, root: str, folder: str
) -> None:
    """Where GitHub reads the project's paths from: its GITHUB_WORKSPACE, else the git work
    tree around the project's folder."""
    for made in (git, workspace, root):
        if made is not None:
            (tmp_path / made).mkdir(parents=True, exist_ok=True)
    given = str(tmp_path / workspace) if workspace is not None else None
    assert folder_in_repository(tmp_path / root, given) == folder


@pytest.mark.parametrize(("config", "indexed", "missing"), [
    pytest.param('[repos.vllm]\nversions = ["v1", "v2"]\n', set(),
                 ["lmcache@v0.5.1", "vllm@v1", "vllm@v2"], id="none-indexed"),
    pytest.param('[repos.vllm]\nversions = ["v1", "v2"]\n', {("vllm", "v1")},
                 ["lmcache@v0.5.1", "vllm@v2"], id="one-indexed"),
    pytest.param(None, set(), [], id="no-config-file-names-no-version-anyone-asked-for"),
])
def test_the_configured_versions_not_indexed_say_what_to_do(
    config: str | None, indexed: set[tuple[str, str]], missing: list[str]
) -> None:
    project = loaded(config) if config is not None else load_config()
    with open_database(Path("index.db"), create=True) as database:
        found = project.configured_not_indexed(database, indexed)
    assert [pin for pin, _hint in found] == missing
    assert [hint for pin, hint in found if pin.startswith("vllm@")] == [
        f"run 'annotate index {pin}'" for pin in missing if pin.startswith("vllm@")]
