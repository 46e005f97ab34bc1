"""Project configuration: ``annotate.toml`` or ``[tool.annotate]`` in ``pyproject.toml``.

Built-in repos (vllm, lmcache) are always configured; a ``[repos.NAME]`` table with
their name overrides the keys it sets and keeps the others.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, before it joined the standard library
    import tomli as tomllib

from db import queries
from db.close_matches import did_you_mean
from db.config_names import PYPROJECT_CONFIG, keys_at, table_header, table_in
from db.database import Database
from db.version_order import NOT_A_VERSION, version_key
from indexer.errors import ConfigError, NotATag

REPO_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
VERSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
SOURCE_KINDS = ("git", "pypi")
DEFAULT_FAIL_ON = ("changed", "moved", "removed", "quote-missing", "broken", "relation-missing")
CHECK_STATUSES = ("fresh", "cosmetic", "unindexed", *DEFAULT_FAIL_ON)
CONFIG_FILE = "annotate.toml"


@dataclass(frozen=True)
class RepoConfig:
    name: str
    git: str | None = None
    pypi: str | None = None
    github: str | None = None
    versions: tuple[str, ...] = ()
    target: str | None = None
    sources: tuple[str, ...] = SOURCE_KINDS
    config_name: str = field(kw_only=True)  # the config that configures it, as hints name it

    @property
    def target_version(self) -> str | None:
        return self.target or (self.versions[-1] if self.versions else None)

    def permalink(self, version: str, path: str, start: int, end: int) -> str | None:
        if not self.github:
            return None
        where = _url_path(path)  # a path may hold '#', '?', '%', spaces or quotes
        return f"https://github.com/{self.github}/blob/{version}/{where}#{line_span(start, end)}"


def line_span(start: int, end: int | None = None) -> str:
    """Lines as GitHub's anchors write them: ``L5`` for one, ``L5-L7`` for several."""
    return f"L{start}" if end is None or end == start else f"L{start}-L{end}"


@lru_cache(maxsize=8192)
def _url_path(path: str) -> str:
    """``path`` percent-encoded for a URL (a diff builds tens of thousands of permalinks
    into a few thousand files)."""
    return quote(path, safe="/")


BUILTIN_REPOS = {
    "vllm": RepoConfig(
        name="vllm",
        git="https://github.com/vllm-project/vllm.git",
        pypi="vllm",
        github="vllm-project/vllm",
        versions=("v0.20.0", "v0.23.1rc0", "v0.25.0"),
        config_name=CONFIG_FILE,  # until a config names itself (`_build`)
    ),
    "lmcache": RepoConfig(
        name="lmcache",
        git="https://github.com/LMCache/LMCache.git",
        pypi="lmcache",
        github="LMCache/LMCache",
        versions=("v0.5.1",),
        config_name=CONFIG_FILE,
    ),
}


@dataclass(frozen=True)
class ProjectConfig:
    root: Path
    db: Path
    configured_cache_dir: Path | None  # None: `default_cache_dir`, found when first needed
    repos: dict[str, RepoConfig]
    annotations: tuple[str, ...] = ("annotations/**/*.yml", "annotations/**/*.yaml",
                                    "articles/**/*.yml", "articles/**/*.yaml")
    articles: tuple[str, ...] = ("articles/**/*.md",)
    fail_on: tuple[str, ...] = DEFAULT_FAIL_ON
    source_file: Path | None = None

    @property
    def cache_dir(self) -> Path:
        """Where git mirrors and wheels are cached."""
        return self.configured_cache_dir or default_cache_dir(self.file_name)

    @property
    def file_name(self) -> str:
        """The config as hints name it: the file it was read from (``--config FILE``),
        ``[tool.annotate] of pyproject.toml``, or ``annotate.toml`` (the file to write
        when there is none)."""
        return config_name(self.source_file)

    def table(self, table: str) -> str:
        """`table_in` this config."""
        return table_in(self.file_name, table)

    def repo(self, name: str) -> RepoConfig:
        try:
            return self.repos[name]
        except KeyError:
            known = ", ".join(sorted(self.repos))
            close = self._close_repo(name)
            raise ConfigError(
                f"unknown repo '{name}'",
                f"{did_you_mean([close])} configured repos are: {known}" if close else
                f"configured repos are: {known} (add it as {self.table(f'repos.{name}')})",
            ) from None

    def _close_repo(self, name: str) -> str | None:
        """The configured repo ``name`` is most likely a misspelling of (`misspelling_of`):
        ``vLLM``, ``lmcach``, ``llm``; not a sibling whose name merely starts alike
        (``vllm-omni``, a repo to add to the config), nor a short name (``lm``)."""
        return misspelling_of(name, sorted(self.repos))

    def config_above(self) -> Path | None:
        """The config file of a project above the root (`config_above`), when this config
        was not read from a file: a command run from a subfolder of that project."""
        return config_above(self.root) if self.source_file is None else None

    def config_below(self) -> Path | None:
        """The config file of a project below the root (`config_below`), when this config
        was not read from a file: a command run from the top of a repository that keeps
        its articles in a folder of their own."""
        return config_below(self.root) if self.source_file is None else None

    def configured_versions(self, name: str) -> tuple[str, ...]:
        """The versions of repo ``name`` to index (none when it is not configured)."""
        repo = self.repos.get(name)
        return repo.versions if repo else ()

    def configured_not_indexed(
        self, database: Database, indexed: Collection[tuple[str, str]]
    ) -> list[tuple[str, str]]:
        """Each configured ``REPO@VERSION`` that ``indexed`` (its (repo, version) pairs)
        lacks, repos by name, with what to do (`db.queries.unindexed`'s hint: index it, or
        give it a source when no source had it). None without a config file: the defaults
        name no version anyone asked for (an index read with --db from another folder)."""
        if self.source_file is None:
            return []
        return [(f"{repo.name}@{version}",
                 queries.unindexed(database, repo.name, version, repo.versions,
                                   config_name=self.file_name).hint)
                for repo in sorted(self.repos.values(), key=lambda repo: repo.name)
                for version in repo.versions if (repo.name, version) not in indexed]

    def require_version(self, database: Database, repo: str, version: str) -> int:
        """The key of the indexed ``repo@version``; else `db.queries.require_version`'s
        MissingIndex, worded with the repo's configured versions and this config's name."""
        return queries.require_version(database, repo, version,
                                       self.configured_versions(repo),
                                       config_name=self.file_name)

    def older(self, first: str, second: str) -> bool:
        """Whether ``REPO@VERSION`` ``first`` is known to come before ``second``: of two
        version numbers, by `db.version_order` (as ``history`` orders them, configured or
        not); when either is a name that is not one (``main``, a commit SHA), by their
        places in ``versions``. False when the repos differ, or when a name is not listed
        (a SHA says nothing of its order)."""
        (repo, _, version), (other, _, later) = first.partition("@"), second.partition("@")
        return repo == other and self.comes_before(repo, version, later)

    def comes_before(self, repo: str, version: str, later: str) -> bool:
        """`older` of two versions of ``repo``."""
        if repo not in self.repos:
            return False
        keys = version_key(version), version_key(later)
        if NOT_A_VERSION not in keys:
            return keys[0] < keys[1]
        versions = self.repos[repo].versions
        return (version in versions and later in versions
                and versions.index(version) < versions.index(later))

    def repo_for_github(self, org_name: str) -> RepoConfig | None:
        wanted = org_name.lower()
        return next(
            (r for r in self.repos.values() if r.github and r.github.lower() == wanted), None
        )

    def github_close_to(self, org_name: str) -> str | None:
        """The configured GitHub ``ORG/NAME`` that ``org_name`` is likely a typo of
        (`misspelling_of`): ``vllm-project/vlm``, not a sibling repo whose name merely
        starts alike (``vllm-project/vllm-ascend``)."""
        return misspelling_of(org_name, [r.github for r in self.repos.values() if r.github])


def config_name(source_file: Path | None) -> str:
    """`ProjectConfig.file_name` of a config read from ``source_file``."""
    if source_file is None:
        return CONFIG_FILE
    if source_file.name == "pyproject.toml":
        return PYPROJECT_CONFIG
    return source_file.name


def misspelling_of(name: str, meant: Sequence[str]) -> str | None:
    """The one of ``meant`` that ``name`` is most likely a misspelling of: the same but for
    case, else the fewest edits away, two at most and a third of its length (``llm`` and
    ``vlm`` for ``vllm``, ``lmcach`` for ``lmcache``; not ``lm``, half of a short name)."""
    wanted = name.lower()
    close = sorted((_edits(option.lower(), wanted), option) for option in meant)
    return next((option for edits, option in close[:1]
                 if edits <= min(2, len(option) / 3)), None)


def _edits(a: str, b: str) -> int:
    """Levenshtein distance between ``a`` and ``b``."""
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, start=1):
        current = [i]
        for j, other in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (char != other)))
        previous = current
    return previous[-1]


def check_version_name(version: str) -> str:
    if not VERSION_NAME.fullmatch(version):
        raise ConfigError(
            f"invalid version '{version}'",
            "a version is a tag or commit such as v0.20.0 and starts with a letter or digit",
        )
    return version


def default_cache_dir(config_name: str) -> Path:
    """ANNOTATE_CACHE_DIR, else ``annotate`` in the user's cache folder; ``config_name``
    names the config in the hint when there is none."""
    override = os.environ.get("ANNOTATE_CACHE_DIR")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError):  # no HOME, and a user id with no passwd entry
            raise ConfigError("there is no home folder to keep the cache in (HOME is not "
                              "set)", "set ANNOTATE_CACHE_DIR (or cache_dir in "
                              f"{config_name}) to a writable folder") from None
    return Path(base) / "annotate"


def load_config(start: Path | None = None, config_file: Path | None = None) -> ProjectConfig:
    """Read annotate.toml (or pyproject's [tool.annotate]) in ``start``, else defaults."""
    root = (start or Path.cwd()).resolve()
    table: dict[str, Any] = {}
    if config_file is None and os.path.lexists(root / CONFIG_FILE):
        config_file = root / CONFIG_FILE  # a folder or a dangling symlink too: read, refused
    if config_file is None and (root / "pyproject.toml").is_file():
        table = _tool_table(root / "pyproject.toml")
        config_file = root / "pyproject.toml" if table else None
    elif config_file is not None:
        is_pyproject = config_file.name == "pyproject.toml"
        table = _tool_table(config_file, given=True) if is_pyproject else _read_toml(config_file)
        root = config_file.resolve().parent
    return _build(table, root, config_file)


def folder_in_repository(root: Path, workspace: str | None) -> str:
    """Where the project's folder ``root`` is in the repository GitHub reads paths from
    (``workspace``, its ``GITHUB_WORKSPACE``, else the git work tree around ``root``):
    ``docs`` for a config in ``docs/``; empty at the repository's root, or outside any."""
    root = root.resolve()
    base = Path(workspace).resolve() if workspace else repository_top(root)
    if base is None or base == root or not root.is_relative_to(base):
        return ""
    return root.relative_to(base).as_posix()


def config_above(folder: Path) -> Path | None:
    """The config file of the nearest folder above ``folder`` that has one (annotate.toml,
    or a pyproject.toml with [tool.annotate]), or None: what a command run from a
    subfolder of a project would read from the project's folder. The search stops at the
    git repository ``folder`` is in: a config above it (a stray ``~/annotate.toml``) is
    another project's."""
    folder = folder.resolve()
    top = repository_top(folder)
    if top == folder:
        return None
    for parent in folder.parents:
        if (parent / CONFIG_FILE).is_file():
            return parent / CONFIG_FILE
        if (parent / "pyproject.toml").is_file() and _has_tool_table(parent / "pyproject.toml"):
            return parent / "pyproject.toml"
        if parent == top:
            return None
    return None


CONFIG_BELOW_DEPTH = 3
"""How many folders down `config_below` looks."""
_NOT_A_PROJECT = frozenset({"node_modules", "__pycache__", "site-packages"})


def config_below(folder: Path) -> Path | None:
    """The annotate.toml of the shallowest folder below ``folder`` that has one, at most
    `CONFIG_BELOW_DEPTH` folders down, the first by name at that depth (``docs/``, in a
    repository whose CI runs from its top); hidden folders, virtual environments and
    symlinks to folders are not entered, nor, from a git work tree, another one (a vendored
    checkout, a submodule: another project's config, as a config above its top is)."""
    level = [folder]
    in_a_repository = repository_top(folder.resolve()) is not None
    for _ in range(CONFIG_BELOW_DEPTH):
        level = sorted(child for parent in level for child in _project_subfolders(parent)
                       if not (in_a_repository and os.path.lexists(child / ".git")))
        # os.path's tests, not Path's: a folder that cannot be entered holds none (False)
        found = next((child / CONFIG_FILE for child in level
                      if os.path.isfile(child / CONFIG_FILE)), None)
        if found is not None:
            return found
    return None


def _project_subfolders(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as entries:
            children = [Path(entry.path) for entry in entries
                        if not entry.name.startswith(".") and entry.name not in _NOT_A_PROJECT
                        and entry.is_dir(follow_symlinks=False)]
    except OSError:  # a folder that may not be listed holds no config of ours
        return []
    return [child for child in children if not os.path.exists(child / "pyvenv.cfg")]


def repository_top(folder: Path) -> Path | None:
    """The top of the git work tree ``folder`` (resolved) is in: the nearest of it and the
    folders above it that holds ``.git``; None outside any."""
    return next((above for above in (folder, *folder.parents) if (above / ".git").exists()),
                None)


def run_from(found: Path) -> str:
    """What to do in a subfolder of the project whose config is ``found``."""
    return f"run from {found.parent}, where {found.name} is, or pass --config {found}"


def _has_tool_table(pyproject: Path) -> bool:
    try:
        return bool(_tool_table(pyproject))
    except ConfigError:  # not this command's config: it does not read that file
        return False


def _tool_table(pyproject: Path, given: bool = False) -> dict[str, Any]:
    """The ``[tool.annotate]`` table of a pyproject.toml, empty when it has none, unless
    the file was ``given`` as the config (``--config``): then it must have one."""
    table: Any = _read_toml(pyproject)
    for key in ("tool", "annotate"):
        if given and key not in table:
            raise ConfigError(f"{pyproject} has no [tool.annotate] table",
                              "write the settings there, or pass --config with the file that "
                              "holds them")
        table = table.get(key, {})
        if not isinstance(table, dict):
            raise ConfigError(f"{pyproject}: '{key}' must be a table",
                              "write the settings under [tool.annotate]")
    return table


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_bytes().decode("utf-8-sig")  # tomllib refuses a byte order mark
        return tomllib.loads(text)
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror}",
                          "make it a file you may read, or pass --config FILE") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not valid UTF-8 (byte {error.start + 1})",
                          "save the file as UTF-8") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}", "fix the file's syntax") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise ConfigError(f"{path}: invalid TOML: arrays or inline tables nested too deeply",
                          "fix the file's syntax") from None


_TOP_KEYS = {"db", "cache_dir", "repos", "annotations", "articles", "fail_on", "sources"}
_REPO_KEYS = {"git", "pypi", "github", "versions", "target", "sources"}


def _build(table: dict[str, Any], root: Path, source_file: Path | None) -> ProjectConfig:
    file = str(source_file) if source_file else CONFIG_FILE
    shown = config_name(source_file)
    where = keys_at(file, shown)
    _reject_a_tool_table(table, where, shown)
    _reject_unknown(table, _TOP_KEYS, where)
    default_sources = _sources(table, where) or SOURCE_KINDS
    for key in ("db", "cache_dir"):
        _string(table, key, where)
    repos = {name: replace(repo, sources=default_sources, config_name=shown)
             for name, repo in BUILTIN_REPOS.items()}
    repo_tables = table.get("repos", {})
    if not isinstance(repo_tables, dict):
        raise ConfigError(f"{where}: 'repos' must be a table of "
                          f"{table_header(shown, 'repos.NAME')} tables")
    for name, repo_table in repo_tables.items():
        repos[name] = _repo(name, repo_table, repos.get(name), default_sources, file, root,
                            shown=shown)
    cache_dir = table.get("cache_dir")
    fail_on = _string_list(table, "fail_on", where)
    for status in fail_on or ():
        if status not in CHECK_STATUSES:
            raise ConfigError(f"{where}: unknown status '{status}' in fail_on",
                              f"choose from {', '.join(CHECK_STATUSES)}")
    return ProjectConfig(
        root=root,
        db=root / _local_path(table.get("db", ".annotate/index.db"), "db", where),
        configured_cache_dir=root / _local_path(cache_dir, "cache_dir", where)
        if cache_dir is not None else None,
        repos=repos,
        annotations=_or_default(_globs(table, "annotations", where), ProjectConfig.annotations),
        articles=_or_default(_globs(table, "articles", where), ProjectConfig.articles),
        fail_on=fail_on if fail_on is not None else DEFAULT_FAIL_ON,
        source_file=source_file,
    )


def _repo(
    name: str,
    table: Any,
    base: RepoConfig | None,
    default_sources: tuple[str, ...],
    file: str,
    root: Path,
    *,
    shown: str,
) -> RepoConfig:
    """``[repos.NAME]`` of the config ``file`` read over ``base``, the built-in repo of that
    name if any; ``shown``: the config, as hints name it (`config_name`)."""
    _check_repo_table(name, table, base, file, shown)
    at = keys_at(file, shown, f"repos.{name}")
    _check_repo_strings(table, at)
    versions = _string_list(table, "versions", at)
    if any(not version.strip() for version in versions or ()):
        raise ConfigError(f"{at}: 'versions' lists an empty version",
                          "list tags or commits such as v0.20.0")
    for version in versions or ():
        _check_version_in(version, f"{at} versions")
    _check_listed_once(versions or (), at)
    sources = _sources(table, at)
    repo = base or RepoConfig(name=name, sources=default_sources, config_name=shown)
    repo = replace(
        repo,
        git=_git_location(table["git"], root, at) if "git" in table else repo.git,
        pypi=table.get("pypi", repo.pypi),
        github=table.get("github", repo.github or _github_from_url(table.get("git"))),
        versions=versions if versions is not None else repo.versions,
        target=table.get("target", repo.target),
        sources=sources or repo.sources,
    )
    _check_target(repo, at)
    _check_tags_start_with_v(repo, at)
    return repo


def _check_tags_start_with_v(repo: RepoConfig, at: str) -> None:
    for version in repo.versions:
        if is_pypi_number(repo, version):
            raise ConfigError(*_not_a_tag(repo, version, f"{at} versions: '{version}'",
                                          f"'v{version}'"))


def is_pypi_number(repo: RepoConfig, version: str) -> bool:
    """Whether ``version`` is a release as PyPI numbers it, ``0.20.0``, of a built-in repo
    read from its own GitHub: vLLM and LMCache tag their releases ``v0.20.0``, so such a
    version's every permalink would name a tag GitHub does not have."""
    builtin = BUILTIN_REPOS.get(repo.name)
    if builtin is None or (repo.github or "").lower() != (builtin.github or "").lower():
        return False
    return version[:1].isdigit() and "+" not in version and version_key(version) != NOT_A_VERSION


def refuse_a_pypi_number(repo: RepoConfig, version: str) -> None:
    """`NotATag` for a version to index that `is_pypi_number`: indexed from its wheel,
    it would be stored under a name whose permalinks all fail."""
    if is_pypi_number(repo, version):
        raise NotATag(*_not_a_tag(repo, version, f"{repo.name}@{version}",
                                  f"{repo.name}@v{version}"))


def _not_a_tag(repo: RepoConfig, version: str, named: str, written: str) -> tuple[str, str]:
    """The message and hint of a version that `is_pypi_number`, ``named`` as the config or
    the command line has it, with the tag to write in its place."""
    return (f"{named} is PyPI's number, not a tag of {repo.github}, so its permalinks would "
            f"name a tag GitHub does not have (blob/{version}/...)",
            f"write {written}, its tag (pypi still fetches {version} for it)")


def _check_repo_table(
    name: str, table: Any, base: RepoConfig | None, file: str, shown: str
) -> None:
    """A valid name, a table of known keys, and a place to fetch from (unless the repo is
    built in); ``shown``: the config, as messages name its tables (`table_header`)."""
    if not REPO_NAME.fullmatch(name):
        raise ConfigError(f"{keys_at(file, shown, 'repos')}: invalid repo name '{name}'",
                          "use letters, digits, _ . -")
    if not isinstance(table, dict):
        raise ConfigError(f"{file}: {table_header(shown, f'repos.{name}')} must be a table")
    _reject_unknown(table, _REPO_KEYS, keys_at(file, shown, f"repos.{name}"))
    if base is None and not any(key in table for key in ("git", "pypi", "github")):
        close = misspelling_of(name, sorted(BUILTIN_REPOS))
        raise ConfigError(f"{file}: {table_header(shown, f'repos.{name}')} names no git, "
                          "pypi or github",
                          did_you_mean([table_header(shown, f"repos.{close}")]) if close else
                          "give it git = \"URL or PATH\", pypi = \"NAME\", or github = "
                          "\"ORG/NAME\" for versions indexed with --from")


def _check_repo_strings(table: dict[str, Any], at: str) -> None:
    for key in ("git", "pypi", "github", "target"):
        _string(table, key, at)
    if "github" in table and not GITHUB_NAME.fullmatch(table["github"]):
        raise ConfigError(f"{at}: github '{table['github']}' is not ORG/NAME",
                          'write it as in its URL: github = "vllm-project/vllm"')
    if "pypi" in table and not PYPI_NAME.fullmatch(table["pypi"]):
        raise ConfigError(f"{at}: pypi '{table['pypi']}' is not a PyPI "
                          "project name", 'write it as pip takes it: pypi = "vllm"')


def _check_target(repo: RepoConfig, at: str) -> None:
    if repo.target is None:
        return
    _check_version_in(repo.target, f"{at} target")
    if repo.target not in repo.versions:
        raise ConfigError(
            f"{at}: target '{repo.target}' is not one of its versions "
            f"({', '.join(repo.versions) or 'none'})",
            "fix the target, or add it to versions",
        )


def _check_listed_once(versions: tuple[str, ...], at: str) -> None:
    twice = next((v for i, v in enumerate(versions) if v in versions[:i]), None)
    if twice is not None:
        raise ConfigError(f"{at}: versions lists '{twice}' twice", "list each version once")


def _check_version_in(version: str, where: str) -> None:
    try:
        check_version_name(version)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error.message}", error.hint) from None


PYPI_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
"""A project name as PyPI takes it (PEP 508): never an option pip would read."""
GITHUB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+")
"""``ORG/NAME`` as in a GitHub URL."""


def is_remote_git(location: str) -> bool:
    """Whether a ``git`` value is a URL (``https://``, ``file://``, ``git@host:``) rather
    than a local path."""
    return "://" in location or location.startswith("git@")


def _git_location(location: str, root: Path, where: str) -> str:
    """A relative local path is relative to the config file's folder, like ``db``; an empty
    one was refused with the other strings (`_string`)."""
    if is_remote_git(location):
        return location
    path = _local_path(location, "git", where)
    return location if path.is_absolute() else str(root / path)


def _local_path(value: str, key: str, where: str) -> Path:
    """A path value (not empty: `_string` refused that), ``~`` expanded; one error for what
    names no path."""
    if "\0" in value:
        raise ConfigError(f"{where}: '{key}' holds a NUL character", "write a plain path")
    if _has_too_long_name(value):
        raise ConfigError(f"{where}: '{key}' has a name longer than {NAME_MAX} bytes",
                          "write a shorter path")
    try:
        return Path(value).expanduser()
    except RuntimeError:  # ~user, of no such user
        raise ConfigError(f"{where}: '{key}' = '{value}' starts with the home folder of a "
                          "user this machine does not have", "write the path in full") from None


NAME_MAX = 255
"""The longest file name, in bytes, that Linux's and macOS's file systems take: a longer one
fails every use of the path (ENAMETOOLONG)."""


def _has_too_long_name(path: str) -> bool:
    return any(len(os.fsencode(name)) > NAME_MAX for name in path.split("/"))


def _or_default(value: tuple[str, ...] | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """The configured list, even an empty one (``articles = []``: none), else the default."""
    return default if value is None else value


def _github_from_url(url: str | None) -> str | None:
    match = re.match(r"https://github\.com/([^/]+/[^/]+?)(?:\.git)?/?$", url or "")
    return match.group(1) if match else None


def _sources(table: dict[str, Any], where: str) -> tuple[str, ...] | None:
    sources = _string_list(table, "sources", where)
    if sources == ():
        raise ConfigError(f"{where}: 'sources' is empty",
                          f"list {' or '.join(SOURCE_KINDS)}, or leave the key out for both")
    for kind in sources or ():
        if kind not in SOURCE_KINDS:
            raise ConfigError(f"{where}: unknown source '{kind}'",
                              f"choose from {', '.join(SOURCE_KINDS)}")
    return sources


_WHAT_TO_WRITE = {
    "db": "write a path, or leave the key out for its default",
    "cache_dir": "write a path, or leave the key out for its default",
    "git": "write a clone URL or a path, or leave the key out",
    "pypi": "write the project's name as pip takes it, or leave the key out",
    "github": "write ORG/NAME as in its URL, or leave the key out",
    "target": "write one of its versions, or leave the key out for the last of them",
}
"""What to write in place of each string key's empty value."""


def _string(table: dict[str, Any], key: str, where: str) -> str | None:
    """The string value of ``key``; refused when empty or only white space (``db = " "``
    names no file a user meant), as an empty command-line path is."""
    value = table.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{where}: '{key}' must be a string")
    if value is not None and not value.strip():
        raise ConfigError(f"{where}: '{key}' is empty", _WHAT_TO_WRITE[key])
    return value


def _string_list(table: dict[str, Any], key: str, where: str) -> tuple[str, ...] | None:
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}: '{key}' must be a list of strings")
    return tuple(value)


def _globs(table: dict[str, Any], key: str, where: str) -> tuple[str, ...] | None:
    """A list of file globs relative to the config's folder (``articles/**/*.md``)."""
    patterns = _string_list(table, key, where)
    if any(not pattern.strip() for pattern in patterns or ()):
        raise ConfigError(f"{where}: '{key}' lists an empty glob", _GLOB_HINT)
    for pattern in patterns or ():
        problem = _glob_problem(pattern)
        if problem:
            raise ConfigError(f"{where}: '{key}' pattern '{pattern}' {problem}", _GLOB_HINT)
    return patterns


_GLOB_HINT = "write a glob relative to the config's folder, such as 'articles/**/*.md'"


def _glob_problem(pattern: str) -> str | None:
    parts = [part for part in pattern.split("/") if part not in ("", ".")]
    if pattern.startswith(("/", "~")) or Path(pattern).is_absolute():
        return "is not relative"
    if not parts:
        return "names no file"
    if _has_too_long_name(pattern):
        return f"has a name longer than {NAME_MAX} bytes"
    if ".." in parts:
        return "leaves the config's folder"
    if any("**" in part and part != "**" for part in parts):
        return "uses '**' inside a name: it can only stand alone between slashes"
    return None


def _reject_a_tool_table(table: dict[str, Any], where: str, shown: str) -> None:
    """A ``[tool.annotate]`` table copied from a pyproject.toml into a config of its own."""
    tool = table.get("tool")
    if shown != PYPROJECT_CONFIG and isinstance(tool, dict) and "annotate" in tool:
        raise ConfigError(f"{where}: unknown key 'tool'", "[tool.annotate] is read from "
                          f"pyproject.toml only: write its keys at the top of {where}")


def _reject_unknown(table: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        close = difflib.get_close_matches(unknown[0], sorted(allowed), n=1, cutoff=0.8)
        meant = f"{did_you_mean(close)} " if close else ""
        raise ConfigError(f"{where}: unknown key '{unknown[0]}'",
                          f"{meant}allowed keys: {', '.join(sorted(allowed))}")
