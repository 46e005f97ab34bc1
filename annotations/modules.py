"""The modules of one indexed version: which file a module name is, what each file
defines and imports, and where a name imported from a module is defined."""

from __future__ import annotations

from db import references as store
from db.database import Database
from db.match_queries import file_blobs

MAX_REEXPORT_DEPTH = 8


class VersionModules:
    """Module paths of one version, and what each defines and imports."""

    def __init__(self, database: Database, version_key: int) -> None:
        self.database = database
        self.version_key = version_key
        self.paths = file_blobs(database, version_key)
        self._definitions: dict[str, set[str]] = {}
        self._imports: dict[str, list[tuple]] = {}
        self._bodies: dict[str, list[tuple[int, int]]] = {}  # (start, end) of defs, classes
        self._module_imports: dict[str, list[tuple]] = {}

    def module_path(self, module: str, level: int, importer: str) -> str | None:
        """The file a module name refers to from ``importer`` (relative when level > 0)."""
        parts = module.split(".") if module else []
        if level:
            package = importer.split("/")[:-1]
            if level > 1:
                package = package[: len(package) - (level - 1)]
            parts = package + parts
        base = "/".join(parts)
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if candidate in self.paths:
                return candidate
        return None

    def defines(self, path: str) -> set[str]:
        if path not in self._definitions:
            rows = store.definitions_in(self.database, [self.paths[path]])
            found = rows.get(self.paths[path], ())
            self._definitions[path] = {row[0] for row in found}
            self._bodies[path] = [(start, end) for _name, kind, start, end in found
                                  if kind != "attribute"]
        return self._definitions[path]

    def module_imports(self, path: str) -> list[tuple]:
        """The imports of ``path`` that bind a name of the module: not those inside a def
        or a class (a function's lazy import binds a local name). Sorted out once per
        file: ``follow`` and the matcher's base lookups ask again and again."""
        if path not in self._module_imports:
            self.defines(path)
            bodies = self._bodies[path]
            self._module_imports[path] = [
                row for row in self.imports(path)
                if not any(start < row[0] <= end for start, end in bodies)]
        return self._module_imports[path]

    def imported_names(self, path: str) -> list[str]:
        """The names the module ``path`` binds by importing them by name (``from a import b
        as c`` binds ``c``; not ``import a``, nor ``*``), in source order."""
        names = (alias or imported for _line, _module, imported, alias, _level
                 in self.module_imports(path) if imported and imported != "*")
        return list(dict.fromkeys(names))

    def imports(self, path: str) -> list[tuple]:
        if path not in self._imports:
            self._imports[path] = store.imports_of(self.database, [self.paths[path]]).get(
                self.paths[path], []
            )
        return self._imports[path]

    def follow(self, module_path: str, name: str, depth: int = 0) -> str | None:
        """Where ``name`` imported from ``module_path`` is defined, through re-exports."""
        if name in self.defines(module_path):
            return f"{module_path}::{name}"
        if depth >= MAX_REEXPORT_DEPTH:
            return None
        rows = self.module_imports(module_path)
        for _line, module, imported, alias, level in rows:
            if imported and (alias or imported) == name and imported != "*":
                source = self.module_path(module, level, module_path)
                if source is not None:
                    return self.follow(source, imported, depth + 1)
        for _line, module, imported, _alias, level in rows:
            source = self.module_path(module, level, module_path) if imported == "*" else None
            found = self.follow(source, name, depth + 1) if source is not None else None
            if found is not None:
                return found
        return None
