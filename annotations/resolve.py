"""Resolve a parsed ref to exact symbols (or a line range) of an indexed version."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache, partial
from typing import Any

from annotations.errors import AnnotationError, RefSyntaxError
from annotations.modules import VersionModules
from annotations.refs import Ref, RefForm, parse_ref
from db import queries
from db.close_matches import CloseCandidates, close_matches, did_you_mean, either
from db.database import Database
from db.errors import MissingIndex
from db.version_order import COMMIT
from indexer.config import ProjectConfig, line_span
from indexer.errors import ConfigError
from indexer.fingerprints import digest
from indexer.literals import split_lines, universal_newlines
from indexer.references import code_identifiers


class ResolveError(AnnotationError):
    """A ref that does not resolve at its own pin."""


class UnindexedVersion(ResolveError):
    """The ref's version is not in the index (yet); ``missing`` is `queries.unindexed`'s
    wording of ``repo@version``."""

    def __init__(self, repo: str, version: str, missing: queries.Unindexed) -> None:
        super().__init__(missing.message, hint=missing.hint)
        self.repo = repo
        self.version = version
        self.misspelling_of = missing.misspelling_of
        self._missing = missing

    def __reduce__(self) -> tuple[Any, ...]:
        """Copied (`located`) and pickled with its own arguments: the default rebuilds an
        exception from its message alone."""
        return type(self), (self.repo, self.version, self._missing), self.__dict__


class AmbiguousRef(ResolveError):
    """A short or dotted ref that names more than one symbol."""


@dataclass(frozen=True)
class Resolved:
    """A ref pinned to one definition (or a line range) of one indexed version."""

    repo: str
    version: str
    version_key: int
    path: str
    blob_id: str
    start_line: int
    end_line: int
    exact: str
    normalized: str
    qualname: str | None = None
    kind: str | None = None
    shape: str | None = None
    start_byte: int | None = None
    end_byte: int | None = None

    @property
    def canonical(self) -> str:
        base = f"{self.repo}@{self.version}:{self.path}"
        if self.qualname is not None:
            return f"{base}::{self.qualname}"
        return f"{base}#{line_span(self.start_line, self.end_line)}"

    @property
    def pin(self) -> str:
        return f"{self.repo}@{self.version}"


def permalink_repo(config: ProjectConfig, github: str) -> str:
    """The configured repo of a permalink's GitHub repository ``github`` (``ORG/NAME``)."""
    repo = config.repo_for_github(github)
    if repo is not None:
        return repo.name
    close = config.github_close_to(github)
    raise ResolveError(f"github.com/{github} is not a configured repo",
                       hint=did_you_mean([f"github.com/{close}"]) if close else
                       f"add it as {config.table('repos.NAME')} with github = \"ORG/NAME\"")


_SYMBOL_FORMS = ("write a symbol: PATH::QUALNAME, a dotted name, or a permalink or "
                 "REPO@VERSION:PATH#Lx-Ly to lines within one")


def at_target_version(config: ProjectConfig, ref: Ref, default_repo: str = "vllm") -> Ref:
    """``ref``, pinned at ``default_repo``'s target version when it names no version (and
    that repo is configured with one)."""
    if ref.pinned or default_repo not in config.repos:
        return ref
    target = config.repo(default_repo).target_version
    return ref if target is None else ref.with_pin(default_repo, target)


def at_indexed_target_version(database: Database, config: ProjectConfig, ref: Ref) -> Ref:
    """``ref``, pinned at vllm's target version when it names none (`at_target_version`),
    which must be indexed (`require_indexed_target`)."""
    pinned = at_target_version(config, ref)
    if pinned is not ref and pinned.repo and pinned.version:
        require_indexed_target(database, config, (pinned.repo, pinned.version))
    return pinned


def require_indexed_target(
    database: Database, config: ProjectConfig, pin: tuple[str, str]
) -> None:
    """The repo's target version ``pin``, used where no version is named, indexed: else
    MissingIndex that says it is the target, which the user did not type."""
    repo, version = pin
    try:
        config.require_version(database, repo, version)
    except MissingIndex as missing:
        raise MissingIndex(f"{missing.message} ({repo}'s target version, used where no "
                           "version is named)", f"{missing.hint}, or name an indexed version"
                           ) from None


class Resolver:
    """Resolves refs against one database; caches what it reads per version, the lines of
    ``files_split`` files among them (a link resolving a big collection's refs wants
    ~1,000, a check, which keeps more besides, the default)."""

    def __init__(
        self, database: Database, config: ProjectConfig, files_split: int = 256
    ) -> None:
        self.database = database
        self.config = config
        self._version_keys: dict[tuple[str, str], int | None] = {}
        self._paths: dict[int, set[str]] = {}
        self._close_paths: dict[int, CloseCandidates] = {}  # for "did you mean"
        self._modules: dict[int, VersionModules] = {}
        self._wheel_folders: dict[int, set[str] | None] = {}
        # Caches over plain functions, not over this object's methods: a cache holding a
        # bound method makes a cycle, which kept a big collection's link (~140 MB) alive
        # until a gc pass.
        self.source: Callable[[str], str] = lru_cache(maxsize=1024)(
            partial(_source, database))
        self.source_lines: Callable[[str], list[str]] = lru_cache(maxsize=files_split)(
            partial(_source_lines, self.source))
        self.file_symbols: Callable[[int, str], tuple[dict, ...]] = lru_cache(maxsize=256)(
            partial(_file_symbols, database))
        # A collection cites symbols of thousands of files: a ref's own rows, not its file's.
        self.definitions_in_file: Callable[[int, str, str], tuple[dict, ...]] = lru_cache(
            maxsize=8192)(partial(_definitions_in_file, database))
        # What indexes a pin not indexed, for each of the refs pinned there.
        self.index_advice: Callable[[str, str], str] = lru_cache(maxsize=256)(
            partial(_index_advice, database))

    def resolve(self, ref: Ref) -> Resolved:
        repo, version = self._pin(ref)
        key = self.version_key(repo, version)
        if ref.form is RefForm.SYMBOL:
            return self._symbol(repo, version, key, ref.path or "", ref.qualname or "")
        if ref.form is RefForm.DOTTED:
            return self._dotted(repo, version, key, ref.dotted or "")
        if ref.form is RefForm.LINES:
            return self._lines(repo, version, key, ref.path or "", ref.start_line, ref.end_line)
        return self._permalink(repo, version, key, ref)

    def as_shown(self, ref: Ref) -> Ref:
        """``ref`` as ``annotate show`` takes it: a dotted name that is the path of a file
        of its version (``setup.py``: a top-level file's path reads as a dotted name) is
        that whole file, as a path with a folder is (`parse_ref`'s ``whole_file``)."""
        if ref.form is not RefForm.DOTTED or not ref.dotted:
            return ref
        repo, version = self._pin(ref)
        if ref.dotted not in self.paths(self.version_key(repo, version)):
            return ref
        return Ref(repo, version, RefForm.LINES, path=ref.dotted)

    def resolve_symbol(self, ref: Ref) -> Resolved:
        """The symbol ``ref`` names: lines, ``REPO@VERSION:PATH#Lx-Ly`` as a permalink's,
        name the innermost symbol covering them. Raises ResolveError for lines no symbol
        covers, or a whole file."""
        if ref.form is RefForm.LINES:
            repo, version = self._pin(ref)
            key = self.version_key(repo, version)
            resolved = self._innermost(repo, version, key, ref.path or "", ref.start_line or 1,
                                       ref.end_line or ref.start_line or 1)
        else:
            resolved = self.resolve(ref)
        if resolved.qualname is None:
            what = "lines that no symbol covers" if ref.start_line else "a whole file, not a symbol"
            raise ResolveError(f"'{ref}' names {what}", hint=_SYMBOL_FORMS)
        return resolved

    def version_key(self, repo: str, version: str) -> int:
        if (repo, version) not in self._version_keys:
            key = queries.version_id(self.database, repo, version)
            if key is None and COMMIT.fullmatch(version):  # GitHub's "Copy permalink"
                key = queries.version_at_commit(self.database, repo, version)
            self._version_keys[repo, version] = key
        key = self._version_keys[repo, version]
        if key is None:
            configured = self.config.configured_versions(repo)
            raise UnindexedVersion(
                repo, version, queries.unindexed(self.database, repo, version, configured,
                                                 config_name=self.config.file_name))
        return key

    def _pin(self, ref: Ref) -> tuple[str, str]:
        if ref.form is RefForm.PERMALINK:
            return permalink_repo(self.config, ref.github or ""), ref.version or ""
        if ref.repo is None or ref.version is None:
            raise ResolveError(
                f"'{ref}' names no version",
                hint="add 'at: REPO@VERSION' to the claim or file, or write REPO@VERSION: first",
            )
        try:
            self.config.repo(ref.repo)
        except ConfigError as error:
            raise ResolveError(error.message, hint=error.hint) from None
        return ref.repo, ref.version

    def outside_wheel(self, key: int, path: str) -> bool:
        """Whether ``path`` cannot be in version ``key`` because it was indexed from a
        wheel, which holds its package's Python files only (no csrc/, benchmarks/ or
        setup.py)."""
        if key not in self._wheel_folders:
            pypi = queries.version_source(self.database, key) == "pypi"
            self._wheel_folders[key] = (
                {path.split("/", 1)[0] for path in self.paths(key)} if pypi else None)
        folders = self._wheel_folders[key]
        return folders is not None and (
            not path.endswith(".py") or path.split("/", 1)[0] not in folders)

    def _other_repo_with(self, repo: str, path: str) -> str | None:
        """``REPO@VERSION`` of another configured repo's indexed version that has ``path``
        (a ref to LMCache's code left at the file's ``at: vllm@...``), the latest one."""
        for other in self.config.repos:
            if other == repo:
                continue
            for version in reversed(queries.indexed_versions(self.database, other)):
                key = queries.version_id(self.database, other, version)
                if key is not None and path in self.paths(key):
                    return f"{other}@{version}"
        return None

    def paths(self, key: int) -> set[str]:
        if key not in self._paths:
            self._paths[key] = set(queries.version_paths(self.database, key))
        return self._paths[key]

    def _paths_close_to(self, key: int, path: str) -> list[str]:
        """The version's paths most like ``path``, best first (at most 3)."""
        candidates = self._close_paths.get(key)
        if candidates is None:
            candidates = self._close_paths[key] = CloseCandidates(self.paths(key))
        return candidates.close(path, n=3, cutoff=0.6)

    def _blob(self, repo: str, version: str, key: int, path: str) -> str:
        blob_id = queries.file_blob(self.database, key, path)
        elsewhere = None if blob_id is not None else self._other_repo_with(repo, path)
        if elsewhere is not None:
            raise ResolveError(f"path '{path}' is not in {repo}@{version}; it is in {elsewhere}",
                               hint=f"pin the ref at {elsewhere} ('{elsewhere}:' before its path)")
        if blob_id is None:
            self._refuse_a_folder(repo, version, key, path)
        if blob_id is None and self.outside_wheel(key, path):
            raise ResolveError(
                f"path '{path}' is not in {repo}@{version}, which was indexed from its PyPI "
                "wheel: only its package's Python files are read",
                hint=f"an indexed version never changes: to cite other files, index "
                     f"{repo}@{version} from git, or from a checkout with --from PATH, into a "
                     "new index, --db NEW.db",
            )
        if blob_id is None:
            close = self._paths_close_to(key, path)
            raise ResolveError(
                f"path '{path}' does not exist at {repo}@{version}",
                hint=did_you_mean(close) if close else "check the path",
            )
        return blob_id

    def _refuse_a_folder(self, repo: str, version: str, key: int, path: str) -> None:
        """A ref's path that is a folder of the version: named so, with files to name."""
        files = queries.files_in_folder(self.database, key, path, limit=3)
        if files:
            raise ResolveError(f"'{path}' is a folder at {repo}@{version}, not a file",
                               hint=f"name a file in it: {either(files)}")

    def _symbol(self, repo: str, version: str, key: int, path: str, qualname: str) -> Resolved:
        matching = self.definitions_in_file(key, path, qualname)
        if matching:
            return _from_row(repo, version, key, matching[0])
        elsewhere = self._defined_elsewhere(repo, key, path, qualname)
        try:
            self._blob(repo, version, key, path)
        except ResolveError as error:
            error.hint = _and_elsewhere(error.hint, elsewhere, f"{repo}@{version}")
            raise
        rows = self.file_symbols(key, path)
        names = list(dict.fromkeys(row["qualname"] for row in rows))  # defined twice: once
        close = close_matches(qualname, names, n=3, cutoff=0.5)
        raise ResolveError(
            f"no symbol '{qualname}' in {path} at {repo}@{version}",
            hint=_and_elsewhere(f"closest: {either(close)}" if close else None, elsewhere,
                                f"{repo}@{version}") or "check the qualname",
        )

    def _defined_elsewhere(self, repo: str, key: int, path: str, qualname: str) -> str | None:
        """The hint naming the other indexed versions of ``repo`` whose ``path`` defines
        ``qualname`` (a symbol removed at the target, written without a pin, or pinned at
        the wrong version); None when none does."""
        elsewhere = [f"{repo}@{other}" for other, other_key
                     in queries.indexed_version_keys(self.database, repo)
                     if other_key != key and self.definitions_in_file(other_key, path, qualname)]
        return _defined_at(elsewhere, f"{path}::{qualname}") if elsewhere else None

    def unnamed_uses_in(
        self, resolved: Resolved, uses: Iterable[Mapping[str, Any]]
    ) -> list[str]:
        """`unnamed_uses` of ``resolved``'s source, with the header of the class around it
        ("" when none), whose bases ``super()`` names."""
        parent = (resolved.qualname or "").rpartition(".")[0]
        rows = self.file_symbols(resolved.version_key, resolved.path) if parent else ()
        header = next((row["signature"] for row in rows
                       if row["qualname"] == parent and row["kind"] == "class"), "")
        return unnamed_uses(self.text_of(resolved), uses, header)

    def alias_of(self, key: int, path: str, name: str) -> tuple[str, int] | None:
        """Where module ``path`` at version ``key`` binds ``name`` to a definition of
        another name, and on which line: ``from .x import new as name``, or ``name = new``
        (``PATH::QUALNAME`` of that definition, through re-exports); None otherwise."""
        if path not in self.paths(key):
            return None
        modules = self._version_modules(key)
        for line, module, imported, alias, level in modules.module_imports(path):
            if alias == name and imported not in (None, "*", name):
                source = modules.module_path(module, level, path)
                place = modules.follow(source, imported) if source is not None else None
                return (place, line) if place is not None else None
        for row in self.definitions_in_file(key, path, name):
            value = row["signature"]
            if row["kind"] == "attribute" and value.isidentifier() and value != name:
                place = modules.follow(path, value)
                return (place, row["start_line"]) if place is not None else None
        return None

    def function_or_class_named(self, at: Resolved, name: str) -> Resolved | None:
        """The class or function that ``at``'s module binds ``name`` to at its version (one
        it defines, or imports, through re-exports); None for another kind of definition,
        or a name the module does not bind (a local, an attribute after a dot)."""
        if at.path not in self.paths(at.version_key):
            return None
        place = self._version_modules(at.version_key).follow(at.path, name)
        if place is None:
            return None
        path, qualname = place.split("::", 1)
        rows = self.definitions_in_file(at.version_key, path, qualname)
        if not rows or rows[0]["kind"] not in ("class", "function"):
            return None
        return _from_row(at.repo, at.version, at.version_key, rows[0])

    def definitions(self, resolved: Resolved) -> list[Resolved]:
        """Every definition in ``resolved``'s file at its version."""
        rows = self.file_symbols(resolved.version_key, resolved.path)
        return [_from_row(resolved.repo, resolved.version, resolved.version_key, row)
                for row in rows]

    def other_definitions(self, resolved: Resolved) -> list[Resolved]:
        """The other definitions of ``resolved``'s qualname in its file (a property's
        setter, a def under if/else, @overload stubs), in source order."""
        if resolved.qualname is None:
            return []
        rows = self.file_symbols(resolved.version_key, resolved.path)
        return [_from_row(resolved.repo, resolved.version, resolved.version_key, row)
                for row in rows if row["qualname"] == resolved.qualname
                and row["start_line"] != resolved.start_line]

    def _dotted(self, repo: str, version: str, key: int, dotted: str) -> Resolved:
        try:
            return self._dotted_symbol(repo, version, key, dotted)
        except ResolveError:
            module = next((path for path in module_files(dotted) if path in self.paths(key)),
                          None)
            if module is None:
                raise
            raise ResolveError(f"'{dotted}' is the module {module} at {repo}@{version}, not a "
                               "symbol", hint=f"name a symbol in it, or write {repo}@{version}:"
                                              f"{module}#Lx-Ly for its lines") from None

    def _dotted_symbol(self, repo: str, version: str, key: int, dotted: str) -> Resolved:
        parts = dotted.split(".")
        paths = self.paths(key)
        for cut in range(len(parts) - 1, 0, -1):
            for path in module_files(".".join(parts[:cut])):
                if path in paths:
                    return self._in_module(repo, version, key, path, parts, cut)
        return self._short(repo, version, key, dotted)

    def _in_module(
        self, repo: str, version: str, key: int, path: str, parts: list[str], cut: int
    ) -> Resolved:
        """What ``parts[cut:]`` names in module ``path``: a symbol it defines, else one it
        imports (a package's re-export). The hints of a name it does neither, which look
        at its other names and versions, are made only then."""
        qualname = ".".join(parts[cut:])
        if not self.definitions_in_file(key, path, qualname):
            imported = self._imported(key, path, parts[cut:])
            if imported is not None:
                return self._symbol(repo, version, key, *imported)
            self._refuse_misspelt(f"{repo}@{version}", key, path, parts, cut)
        return self._symbol(repo, version, key, path, qualname)

    def _refuse_misspelt(
        self, pin: str, key: int, path: str, parts: list[str], cut: int
    ) -> None:
        """Raise what ``parts[cut:]``, which module ``path`` neither defines nor imports,
        most likely misspells: names it defines or imports (``vllm.config.CacheConfg``),
        or, of a package, a submodule (``vllm.platforms.interfaces``), whichever is
        closer; return when nothing is close."""
        wanted = ".".join(parts[cut:])
        followed = [name for name in self._version_modules(key).imported_names(path)
                    if self._imported(key, path, [name]) is not None]
        defined = [row["qualname"] for row in self.file_symbols(key, path)]
        close = close_matches(wanted, list(dict.fromkeys(defined + followed)), n=3, cutoff=0.5)
        modules = _close_submodules(parts, cut, self.paths(key)) if path.endswith(
            "/__init__.py") else []
        if modules and (not close or _likeness(parts[cut], modules[0])
                        >= _likeness(wanted, close[0])):
            package = ".".join(parts[:cut])
            raise ResolveError(f"no module '{package}.{parts[cut]}' at {pin}",
                               hint=did_you_mean([f"{package}.{module}" for module in modules]))
        if close:
            raise ResolveError(f"no symbol '{wanted}' in {path} at {pin}",
                               hint=f"closest: {either(close)}")

    def _version_modules(self, key: int) -> VersionModules:
        if key not in self._modules:
            self._modules[key] = VersionModules(self.database, key)
        return self._modules[key]

    def _imported(self, key: int, path: str, names: list[str]) -> tuple[str, str] | None:
        """The (path, qualname) that ``names`` stand for in module ``path`` when their first
        is imported there (``vllm.config.CacheConfig`` is ``vllm/config/cache.py::
        CacheConfig``, re-exported by ``vllm/config/__init__.py``); None otherwise."""
        found = self._version_modules(key).follow(path, names[0])
        if found is None:
            return None
        defined_in, name = found.split("::")
        if defined_in == path:
            return None
        return defined_in, ".".join([name, *names[1:]])

    def _short(self, repo: str, version: str, key: int, name: str) -> Resolved:
        # Several definitions of one qualname in one file (a property's getter and setter,
        # a def under if/else) are one symbol, as in PATH::QUALNAME: the first one.
        distinct: dict[tuple[str, str], dict] = {}
        for row in queries.symbols_named(self.database, key, name):
            distinct.setdefault((row["path"], row["qualname"]), row)
        rows = list(distinct.values())
        if len(rows) == 1:
            return _from_row(repo, version, key, rows[0])
        if not rows:
            raise ResolveError(f"no module or symbol '{name}' at {repo}@{version}",
                               hint=self._unknown_name_hint(key, name))
        listed = ", ".join(f"{row['path']}::{row['qualname']}" for row in rows[:8])
        more = f" and {len(rows) - 8} more" if len(rows) > 8 else ""
        raise AmbiguousRef(
            f"'{name}' matches {len(rows)} symbols at {repo}@{version}: {listed}{more}",
            hint="write PATH::QUALNAME to pick one",
        )

    def _unknown_name_hint(self, key: int, name: str) -> str:
        """Where a qualname (or its last parts) that version ``key`` does not define is
        defined, else the closest qualnames it defines (``CUDAGraphWraper``,
        ``GPUModelRuner.capture_model``), else how else to write the ref."""
        elsewhere = [f"{r}@{v}" for r, v in queries.versions_defining(self.database, name)]
        if elsewhere:
            return _defined_at(elsewhere, name)
        last = name.rpartition(".")[2]
        lasts = queries.names_close_to(self.database, last, key) or [last]
        qualnames = dict.fromkeys(row["qualname"] for close in lasts
                                  for row in queries.symbols_named(self.database, key, close))
        close = close_matches(name, qualnames, n=3, cutoff=0.5)
        if close:
            return f"closest: {either(close)}"
        return "write PATH::QUALNAME, or a dotted name starting with the module"

    def _lines(
        self, repo: str, version: str, key: int, path: str, start: int | None, end: int | None
    ) -> Resolved:
        blob_id = self._blob(repo, version, key, path)
        lines = self.source_lines(blob_id)
        first, last = start or 1, end or start or len(lines)
        if not lines or last > len(lines):
            raise ResolveError(
                f"lines {first}-{last} are past the end of {path} ({len(lines)} lines) "
                f"at {repo}@{version}",
                hint="check the line range",
            )
        chosen = "".join(lines[first - 1:last]).encode()
        return Resolved(repo, version, key, path, blob_id, first, last,
                        exact=digest(chosen), normalized=digest(b" ".join(chosen.split())))

    def _permalink(self, repo: str, version: str, key: int, ref: Ref) -> Resolved:
        path = ref.path or ""
        if ref.start_line is None:
            return self._lines(repo, version, key, path, None, None)
        return self._innermost(repo, version, key, path, ref.start_line,
                               ref.end_line or ref.start_line)

    def _innermost(
        self, repo: str, version: str, key: int, path: str, start: int, end: int
    ) -> Resolved:
        """The innermost symbol covering lines ``start``-``end`` (blank lines at either end
        left out), else those lines."""
        blob_id = self._blob(repo, version, key, path)
        first, last = self._trimmed(blob_id, start, end)
        innermost = queries.innermost_covering(self.database, key, path, first, last)
        if innermost is not None:
            return _from_row(repo, version, key, innermost)
        return self._lines(repo, version, key, path, start, end)

    def _trimmed(self, blob_id: str, start: int, end: int) -> tuple[int, int]:
        try:
            lines = self.source_lines(blob_id)
        except ResolveError:  # a file over 1 MiB, not stored: the range as written
            return start, end
        return _without_blank_edges(lines, start, end)

    def text_of(self, resolved: Resolved) -> str:
        """The source text a resolved ref covers (whole lines)."""
        lines = self.source_lines(resolved.blob_id)
        return "".join(lines[resolved.start_line - 1:resolved.end_line])


def _defined_at(pins: list[str], written: str) -> str:
    """The hint of a ref that resolves at other versions: ``pins``, then the ref to write,
    at the last of them."""
    return f"it is defined at {', '.join(pins)}: write {pins[-1]}:{written}"


def _and_elsewhere(hint: str | None, elsewhere: str | None, pin: str) -> str | None:
    """``elsewhere``, where the ref's symbol is defined, when it is, then ``hint`` about
    its own ``pin`` (the closest names there), unless it says only what to check."""
    if elsewhere is None:
        return hint
    if hint is None or hint.startswith("check the "):
        return elsewhere
    return f"{elsewhere}; at {pin}, {hint}"


def _source(database: Database, blob_id: str) -> str:
    content = queries.blob_content(database, blob_id)
    if content is None:
        raise ResolveError(f"the content of blob {blob_id} is not stored",
                           hint="only files up to 1 MiB are stored")
    return universal_newlines(content).decode("utf-8", "replace")


def _index_advice(database: Database, pin: str, config_name: str) -> str:
    return queries.advice_for(database, pin, config_name=config_name)


def _source_lines(source: Callable[[str], str], blob_id: str) -> list[str]:
    return split_lines(source(blob_id))


def _file_symbols(database: Database, version_key: int, path: str) -> tuple[dict, ...]:
    """The symbol rows of a file at a version (read, not changed: they are shared)."""
    return tuple(queries.symbols_in_file(database, version_key, path))


def _definitions_in_file(database: Database, version_key: int, path: str, qualname: str
                         ) -> tuple[dict, ...]:
    """The rows of `file_symbols` whose qualname is ``qualname`` (read, not changed)."""
    return tuple(queries.definitions_in_file(database, version_key, path, qualname))


def _without_blank_edges(lines: list[str], start: int, end: int) -> tuple[int, int]:
    """The range without the blank lines it starts or ends with: a selection on GitHub
    often takes the blank line after a function, which would make it cite the class
    around."""
    while start < end and start <= len(lines) and not lines[start - 1].strip():
        start += 1
    while end > start and end <= len(lines) and not lines[end - 1].strip():
        end -= 1
    return start, end


def linked_lines(written: str, start_line: int, end_line: int) -> tuple[int, int] | None:
    """The lines a permalink ``written`` links inside the symbol it resolved to (lines
    ``start_line``-``end_line``), when they start below its first line; None for any
    other ref."""
    if not written.startswith("https://"):
        return None
    try:
        ref = parse_ref(written)
    except RefSyntaxError:
        return None
    if ref.start_line is None or ref.end_line is None or ref.start_line <= start_line:
        return None
    return ref.start_line, min(ref.end_line, end_line)


def linked_text(
    written: str, start_line: int, end_line: int, symbol_lines: Callable[[], list[str]]
) -> str | None:
    """The text a permalink ``written`` links inside its symbol (lines ``start_line``-
    ``end_line``, which ``symbol_lines`` reads only for such a permalink), when it starts
    below the symbol's ``def`` or ``class`` line: the author's evidence, as a quote is. A
    link from that line or above (GitHub's link to a function is ``#L`` of its ``def``)
    cites the whole symbol: None then, as for any other ref."""
    lines = linked_lines(written, start_line, end_line)
    if lines is None:
        return None
    source = symbol_lines()
    header = next((number for number, line in enumerate(source) if _HEADER.match(line)), 0)
    if lines[0] <= start_line + header:  # the def line, below decorators
        return None
    return "".join(source[lines[0] - start_line:lines[1] - start_line + 1]).strip() or None


_HEADER = re.compile(r"[ \t]*(?:async[ \t]+def|def|class)\b")


def unnamed_uses(
    code: str, uses: Iterable[Mapping[str, Any]], class_header: str = ""
) -> list[str]:
    """The ``uses:`` targets (rows with ``written``, and ``resolved`` and ``qualname`` once
    resolved) whose name does not occur in ``code`` outside strings, comments and the
    names of its definitions (a method of the same name is no use of it).

    A dunder method (``Cls.__init__``) is used through its class (its own name is in every
    constructor), or through ``super().__init__`` when ``Cls`` is a base named in the
    ``class_header`` of the class around ``code``."""
    names = code_identifiers(_DEFINED_NAME.sub(" ", code).encode())
    bases = code_identifiers(class_header.encode()) if b"super" in names else set()
    return [
        use.get("resolved") or use["written"]
        for use in uses
        if not _uses(names, bases, use.get("qualname") or use["written"])
    ]


def _uses(names: set[bytes], bases: set[bytes], target: str) -> bool:
    parts = [part.encode() for part in target.rsplit(":", 1)[-1].split(".")]
    name = parts[-1]
    if len(parts) > 1 and name.startswith(b"__") and name.endswith(b"__"):
        owner = parts[-2]
        return owner in names or (owner in bases and name in names)
    return name in names


_DEFINED_NAME = re.compile(r"\b(?:def|class)[ \t]+\w+")


def _from_row(repo: str, version: str, key: int, row: dict) -> Resolved:
    return Resolved(
        repo=repo, version=version, version_key=key, path=row["path"], blob_id=row["blob_id"],
        start_line=row["start_line"], end_line=row["end_line"], exact=row["exact"],
        normalized=row["normalized"], qualname=row["qualname"], kind=row["kind"],
        shape=row["shape"], start_byte=row["start_byte"], end_byte=row["end_byte"],
    )


def module_files(dotted: str) -> tuple[str, str]:
    """The files that may hold the module ``dotted`` names: ``a/b.py``, ``a/b/__init__.py``."""
    module = dotted.replace(".", "/")
    return f"{module}.py", f"{module}/__init__.py"


def _close_submodules(parts: list[str], cut: int, paths: Iterable[str]) -> list[str]:
    """In ``a.b.cudagraph.X``, with ``a/b`` a package: its submodules named like
    ``cudagraph``, closest first."""
    prefix = "/".join(parts[:cut]) + "/"
    children = {path[len(prefix):].split("/")[0].removesuffix(".py")
                for path in paths if path.startswith(prefix)} - {"__init__"}
    return close_matches(parts[cut], sorted(children), n=3, cutoff=0.6)


def _likeness(word: str, other: str) -> float:
    return SequenceMatcher(None, word, other).ratio()
