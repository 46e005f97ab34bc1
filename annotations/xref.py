"""Cross-references: where a name is defined and used in one indexed version.

References are found in each file's code (strings and comments excluded) and resolved
per version, in this order:

1. ``import``: the file binds the name by an import of a module that exists in the
   version and defines it (re-exports are followed: ``from .linear import X`` in an
   ``__init__`` that the file imports from);
2. ``local``: the file itself defines the name, in a scope the reference sees (the
   enclosing functions, the class body it stands directly in, the module);
3. ``guess``: exactly one definition of that (short) name exists in the version;
4. ``unresolved``: none of these; kept by name.

An attribute ``owner.name`` is resolved through its owner instead: a class or module the
file imports as ``owner`` (``import``), a class the file defines (``local``), the class
around it for ``self``/``cls`` (``local``); then ``guess`` and ``unresolved`` as above.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from dataclasses import dataclass, field

from annotations.errors import AnnotationError
from annotations.modules import VersionModules
from annotations.refs import Ref, RefForm, parse_ref
from annotations.resolve import Resolver, at_indexed_target_version
from db import queries
from db import references as store
from db.database import Database
from db.match_queries import version_label
from indexer.config import ProjectConfig
from indexer.literals import WORD_BYTES, literal_ranges, universal_newlines
from indexer.references import python_name

_OWNER = re.compile(rb"(?<![\w.])([A-Za-z_]\w*)\s*\.\s*\Z")  # ``owner.`` before a name


@dataclass(frozen=True)
class Occurrence:
    path: str
    line: int
    column: int
    context: str
    enclosing: str | None
    resolution: str
    target: str | None


@dataclass
class XrefResult:
    name: str
    version: str
    definitions: list[dict] = field(default_factory=list)
    references: list[Occurrence] = field(default_factory=list)
    importers: list[dict] = field(default_factory=list)
    searched: bool = True
    """Whether the references were searched: the index records the uses of ASCII names
    only (`indexer.references.names_in`), and none of vLLM's is other."""


def locate(
    database: Database, config: ProjectConfig, repo: str, version: str, name: str
) -> tuple[str | None, str]:
    """``name`` as (path, qualname) when it is a dotted name with its module, which no
    qualname is (``vllm.config.CacheConfig`` is ``vllm/config/cache.py``'s ``CacheConfig``,
    through the package's import); else (None, ``name``), as Python reads it (NFKC)."""
    name = python_name(name)
    version_key = config.require_version(database, repo, version)
    if "." not in name or queries.symbols_named(database, version_key, name):
        return None, name
    try:
        resolved = Resolver(database, config).resolve(parse_ref(f"{repo}@{version}:{name}"))
    except AnnotationError:
        return None, name
    if resolved.qualname is None:
        return None, name
    return resolved.path, resolved.qualname


def lines_named(text: str) -> Ref | None:
    """The ref ``text`` is when it is written as lines, which name the innermost symbol
    covering them (`symbol_of_lines`): a GitHub permalink or ``[REPO@VERSION:]PATH#Lx-Ly``;
    None for a name, a dotted name or ``PATH::QUALNAME``. Raises RefSyntaxError for text
    written as lines that names none (a bad anchor, ``foo#bar``; a URL that is not a GitHub
    permalink)."""
    if "#" not in text and "://" not in text:
        return None
    ref = parse_ref(text)
    return ref if ref.form in (RefForm.LINES, RefForm.PERMALINK) else None


def symbol_of_lines(database: Database, config: ProjectConfig, ref: Ref) -> str:
    """The ref ``REPO@VERSION:PATH::QUALNAME`` of the innermost symbol covering the lines
    ``ref`` names (`lines_named`), at vllm's indexed target version when it names none
    (`at_indexed_target_version`), under the name its version is indexed as (a
    permalink's commit SHA is). Raises ResolveError for lines no symbol covers."""
    ref = at_indexed_target_version(database, config, ref)
    resolved = Resolver(database, config).resolve_symbol(ref)
    repo, version = version_label(database, resolved.version_key) or (
        resolved.repo, resolved.version)
    return f"{repo}@{version}:{resolved.path}::{resolved.qualname}"


def xref(
    database: Database, repo: str, version: str, name: str, path: str | None = None,
    *, config_name: str,
) -> XrefResult:
    """Definitions of ``name`` (a short name or a qualname; only those in ``path`` when
    given) and every reference to it; ``config_name``: the config, as hints name it.
    ``name`` is read as Python reads it (NFKC: ``µ``, the micro sign, is ``μ``); the
    references of a name that is not ASCII are not searched (`XrefResult.searched`)."""
    name = python_name(name)
    version_key = queries.require_version(database, repo, version, config_name=config_name)
    short = name.rsplit(".", 1)[-1]
    result = XrefResult(name=name, version=f"{repo}@{version}")
    named = queries.symbols_named(database, version_key, name)
    result.definitions = [row for row in named if path is None or row["path"] == path]
    if not short.isascii():
        result.searched = False
        return result
    same_name = named if short == name else queries.symbols_named(
        database, version_key, short)
    candidates = store.files_mentioning(database, version_key, short)
    imports = store.imports_of(database, (blob for _, blob in candidates))
    result.references = _references(database, version_key, short, candidates, imports,
                                     _unique_target(same_name))
    result.importers = _importers(candidates, imports, short)
    return result


def references_in(
    database: Database, version_key: int, name: str, files: list[tuple[str, str]]
) -> list[Occurrence]:
    """`xref`'s references to ``name``, a short name, at the version of ``version_key``,
    in those of ``files`` (path, blob_id) that name it."""
    imports = store.imports_of(database, (blob for _, blob in files))
    unique = _unique_target(queries.symbols_named(database, version_key, name))
    return _references(database, version_key, name, files, imports, unique)


def _references(
    database: Database, version_key: int, name: str, candidates: list[tuple[str, str]],
    imports: dict[str, list[tuple]], unique: str | None,
) -> list[Occurrence]:
    """The references to ``name`` in the ``candidates`` files, in their order."""
    modules = VersionModules(database, version_key)
    definitions = store.definitions_in(database, (blob for _, blob in candidates))
    found = []
    for path, blob_id in candidates:
        content = universal_newlines(queries.blob_content(database, blob_id) or b"")
        scanner = _FileScanner(path, content, definitions.get(blob_id, []),
                               imports.get(blob_id, []), modules, unique)
        found.extend(scanner.occurrences(name))
    return found


def _importers(
    candidates: list[tuple[str, str]], imports: dict[str, list[tuple]], name: str
) -> list[dict]:
    """The imports that bind ``name``: ``from m import name``, ``... as name``,
    ``import a.name``. Such a file mentions ``name`` in its code, so it is a candidate."""
    found = []
    for path, blob_id in candidates:
        for line, module, imported, alias, level in imports.get(blob_id, ()):
            if name in (imported, alias, module) or (module or "").endswith("." + name):
                found.append({"path": path, "line": line, "module": module,
                              "name": imported, "alias": alias, "level": level})
    return found


def _word_positions(content: bytes, word: bytes) -> list[int]:
    """Offsets where ``word`` occurs as a whole identifier."""
    positions = []
    after = len(word)
    start = content.find(word)
    while start >= 0:
        end = start + after
        if (start == 0 or content[start - 1] not in WORD_BYTES) and (
            end == len(content) or content[end] not in WORD_BYTES
        ):
            positions.append(start)
        start = content.find(word, start + 1)
    return positions


# ``x:``, ``def f(a, *b:``: a name and its colon, where a statement or parameter starts.
_ANNOTATED_NAME = re.compile(rb"(?:^|[(,])\s*\*{0,2}[A-Za-z_]\w*\s*:$")
_ANNOTATION_OPEN = re.compile(rb"(?:^|[(,])\s*\*{0,2}[A-Za-z_]\w*\s*:\s|->")


EXTERNAL = ""
"""`_FileScanner._binding` of a name imported from a module outside the version."""


def _annotates(before: bytes) -> bool:
    """Whether a name after ``before`` (its line up to it, stripped) is in an annotation:
    after ``x:`` or ``->``, or inside ``Optional[`` of one; not a dict value after
    ``"key":``, a lambda's body or an index."""
    if before.endswith(b"->"):
        return True
    if b"lambda" in before or before.startswith((b"return", b"yield")):
        return False
    if before.endswith(b":"):
        return _ANNOTATED_NAME.search(before) is not None
    return before.endswith(b"[") and _ANNOTATION_OPEN.search(before) is not None


def _unique_target(definitions: list[dict]) -> str | None:
    if len(definitions) != 1:
        return None
    return f"{definitions[0]['path']}::{definitions[0]['qualname']}"


class _FileScanner:
    def __init__(
        self,
        path: str,
        content: bytes,
        definitions: list[tuple],
        imports: list[tuple],
        modules: VersionModules,
        unique: str | None,
    ) -> None:
        self.path = path
        self.content = content
        self.definitions = definitions
        self.imports = imports
        self.modules = modules
        self.unique = unique
        self._scanned_to = -1
        self._literal_starts: list[int] = []
        self._literal_ends: list[int] = []

    def _literals(self, until: int) -> tuple[list[int], list[int]]:
        """Literal ranges up to ``until``, scanned once and extended when asked for more."""
        if until > self._scanned_to:
            ranges = literal_ranges(self.content, until)
            self._literal_starts = [start for start, _ in ranges]
            self._literal_ends = [end for _, end in ranges]
            self._scanned_to = until
        return self._literal_starts, self._literal_ends

    def _in_code(self, position: int) -> bool:
        starts, ends = self._literals(position)
        index = bisect_right(starts, position) - 1
        return index < 0 or position >= ends[index]

    def occurrences(self, name: str) -> list[Occurrence]:
        """Where ``name`` occurs in code, and where the aliases it is imported as do."""
        found = []
        for spelled in (name, *self._aliases(name)):
            binding = self._binding(spelled)
            positions = _word_positions(self.content, spelled.encode())
            if positions:
                self._literals(positions[-1])
            for position in positions:
                if not self._in_code(position):
                    continue
                line = self.content.count(b"\n", 0, position) + 1
                context = self._context(position)
                if context == "name" and self._defines_attribute(spelled, position, line):
                    context = "definition"
                if context == "import" and spelled != name:
                    continue  # the alias that ``import name as alias`` binds: no use yet
                if context != "definition":
                    found.append(self._occurrence(spelled, position, line, context, binding))
        return sorted(found, key=lambda occurrence: (occurrence.line, occurrence.column))

    def _defines_attribute(self, name: str, position: int, line: int) -> bool:
        """``name`` opens ``line``, where an attribute of that name is defined (``x: int``)."""
        line_start = self.content.rfind(b"\n", 0, position) + 1
        if self.content[line_start:position].strip():
            return False
        return any(
            kind == "attribute" and start == line
            and queries.is_named(qualname, name)
            for qualname, kind, start, _end in self.definitions
        )

    def _aliases(self, name: str) -> list[str]:
        return [alias for _line, _module, imported, alias, _level in self.imports
                if imported == name and alias and alias != name]

    def _occurrence(
        self, name: str, position: int, line: int, context: str, binding: str | None
    ) -> Occurrence:
        column = position - self.content.rfind(b"\n", 0, position)
        if context == "attribute":
            resolution, target = self._resolve_attribute(name, position, line)
        elif context == "import":
            resolution, target = self._resolve(name, line, self._imported_here(name, line))
        else:
            resolution, target = self._resolve(name, line, binding)
        return Occurrence(self.path, line, column, context, self._enclosing(line),
                          resolution, target)

    def _binding(self, name: str) -> str | None:
        """Where the file's own imports say ``name`` comes from, if they bind it;
        `EXTERNAL` when they import it from a module this version does not have."""
        for _line, module, imported, alias, level in self.imports:
            if imported and imported != "*" and (alias or imported) == name:
                return self._imported_from(module, imported, level)
        return None

    def _imported_here(self, name: str, line: int) -> str | None:
        """What the import statement on (or continued on) ``line`` imports as ``name``,
        whatever alias it binds it to."""
        rows = [row for row in self.imports if row[2] == name and row[0] <= line]
        if not rows:
            return None
        _line, module, imported, _alias, level = max(rows, key=lambda row: row[0])
        return self._imported_from(module, imported, level)

    def _imported_from(self, module: str, imported: str, level: int) -> str | None:
        source = self.modules.module_path(module, level, self.path)
        if source is None:
            return EXTERNAL if level == 0 and module else None
        return self.modules.follow(source, imported)

    def _resolve(self, name: str, line: int, binding: str | None) -> tuple[str, str | None]:
        if binding == EXTERNAL:
            return "unresolved", None
        if binding is not None:
            return "import", binding
        local = self._local(name, line)
        if local is not None:
            return "local", local
        return self._fallback()

    def _resolve_attribute(
        self, name: str, position: int, line: int
    ) -> tuple[str, str | None]:
        line_start = self.content.rfind(b"\n", 0, position) + 1
        found = _OWNER.search(self.content, line_start, position)
        owner = found.group(1).decode() if found else None
        if owner is None:
            return self._fallback()
        member = self._member_import(owner, name)
        if member == EXTERNAL:
            return "unresolved", None  # a member of what a module outside the version gives
        if member is not None:
            return "import", member
        if owner in ("self", "cls"):
            local = self._member_of_enclosing_class(name, line)
            if local is None and self._assigns_to_self(name):
                return "unresolved", None  # an instance attribute, not a definition
        else:
            local = self._local_member(owner, name)
        return ("local", local) if local is not None else self._fallback()

    def _assigns_to_self(self, name: str) -> bool:
        """Whether the file assigns ``self.name = ...`` (an instance attribute)."""
        pattern = rb"\bself\.%s\s*(?::[^=\n]*)?=(?!=)" % re.escape(name.encode())
        return re.search(pattern, self.content) is not None

    def _fallback(self) -> tuple[str, str | None]:
        return ("guess", self.unique) if self.unique is not None else ("unresolved", None)

    def _local(self, name: str, line: int) -> str | None:
        """The file's definition a bare ``name`` on ``line`` refers to, by Python's scopes:
        the enclosing functions' locals, the class body it stands directly in, the module
        (a method's body does not see its class's names)."""
        local = next((q for q in self._scopes(name, line) if q in self._qualnames), None)
        return None if local is None else f"{self.path}::{local}"

    def _scopes(self, name: str, line: int) -> list[str]:
        row = self._enclosing_row(line)
        scope, kind = (row[0], row[1]) if row else ("", None)
        if kind == "attribute":  # a class attribute's value is in its class's body
            scope = scope.rpartition(".")[0]
            kind = "class" if scope else None
        found = [f"{scope}.{name}"] if kind == "class" else []
        while scope:
            found.append(f"{scope}.<locals>.{name}")
            scope = scope.rpartition(".")[0]
        return [*found, name]

    def _member_of_enclosing_class(self, name: str, line: int) -> str | None:
        """``self.name`` in a method: ``name`` as defined by a class around it."""
        enclosing = self._enclosing(line)
        parts = enclosing.split(".") if enclosing else []
        for cut in range(len(parts) - 1, 0, -1):
            member = ".".join(parts[:cut]) + "." + name
            if member in self._qualnames:
                return f"{self.path}::{member}"
        return None

    def _local_member(self, owner: str, name: str) -> str | None:
        qualname = f"{owner}.{name}"
        return f"{self.path}::{qualname}" if qualname in self._qualnames else None

    @functools.cached_property
    def _qualnames(self) -> frozenset[str]:
        return frozenset(row[0] for row in self.definitions)

    def _member_import(self, owner: str, name: str) -> str | None:
        """``owner.name`` where the file imports ``owner``: a member of the class it
        imports, or a name the module it imports defines; `EXTERNAL` when ``owner`` comes
        from a module outside the version."""
        binding = self._binding(owner)
        if binding == EXTERNAL:
            return EXTERNAL
        if binding is not None:
            path, _, qualname = binding.partition("::")
            if f"{qualname}.{name}" in self.modules.defines(path):
                return f"{path}::{qualname}.{name}"
            return None
        module = self._module_bound_to(owner)
        return self.modules.follow(module, name) if module is not None else None

    def _module_bound_to(self, owner: str) -> str | None:
        """The file of the module that ``import m as owner``, ``import owner`` or
        ``from package import owner`` (a submodule) binds to ``owner``."""
        for _line, module, imported, alias, level in self.imports:
            if imported is None and (alias or module) == owner:
                return self.modules.module_path(module, level, self.path)
            if imported and imported != "*" and (alias or imported) == owner:
                submodule = f"{module}.{imported}" if module else imported
                return self.modules.module_path(submodule, level, self.path)
        return None

    def _context(self, position: int) -> str:
        line_start = self.content.rfind(b"\n", 0, position) + 1
        before = self.content[line_start:position]
        stripped = before.strip()
        if before.rstrip().endswith(b"."):
            return "attribute"
        if stripped in (b"def", b"async def", b"class"):
            return "definition"
        if stripped.startswith((b"import ", b"from ")) or self._in_import(position):
            return "import"
        if stripped.startswith(b"@"):
            return "decorator"
        if stripped.startswith(b"class "):
            return "base"
        if _annotates(stripped):
            return "annotation"
        return "name"

    def _in_import(self, position: int) -> bool:
        """Inside a parenthesized ``from m import (...)`` spanning several lines."""
        if not self.imports:
            return False
        opened = self.content.rfind(b"(", 0, position)
        if opened < 0 or self.content.rfind(b")", 0, position) > opened:
            return False
        line_start = self.content.rfind(b"\n", 0, opened) + 1
        return self.content[line_start:opened].lstrip().startswith(b"from ")

    def _enclosing(self, line: int) -> str | None:
        row = self._enclosing_row(line)
        return row[0] if row else None

    def _enclosing_row(self, line: int) -> tuple | None:
        covering = [row for row in self.definitions if row[2] <= line <= row[3]]
        if not covering:
            return None
        return min(covering, key=lambda row: row[3] - row[2])
