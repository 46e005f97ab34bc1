"""Queries behind cross-references: which files mention a name, and their imports."""

from __future__ import annotations

from collections.abc import Iterable

from db.database import Database
from db.queries import PYTHON_FILE, in_chunks


def files_mentioning(database: Database, version_key: int, name: str) -> list[tuple[str, str]]:
    """(path, blob_id) of the version's files whose code contains the identifier ``name``.

    ``blob_names.names`` is `` a b c `` (space-separated, padded), so a whole-word test
    is one ``instr`` per file of the version: a few milliseconds, no text index to build.
    """
    rows = database.conn.execute(
        "SELECT f.path, f.blob_id FROM files f JOIN blob_names n ON n.blob_id = f.blob_id"
        f" AND {PYTHON_FILE} WHERE f.version_id = ? AND instr(n.names, ?) > 0 ORDER BY f.path",
        (version_key, f" {name} "),
    )
    return [(path, blob_id) for path, blob_id in rows]


def imports_of(database: Database, blob_ids: Iterable[str]) -> dict[str, list[tuple]]:
    """Import rows (line, module, name, alias, level) per blob."""
    return _per_blob(database, "line, module, name, alias, level", "imports",
                     "blob_id, line", blob_ids)


def definitions_in(database: Database, blob_ids: Iterable[str]) -> dict[str, list[tuple]]:
    """(qualname, kind, start_line, end_line) per blob, in source order."""
    return _per_blob(database, "qualname, kind, start_line, end_line", "symbols",
                     "blob_id, seq", blob_ids)


def _per_blob(
    database: Database, columns: str, table: str, order: str, blob_ids: Iterable[str]
) -> dict[str, list[tuple]]:
    found: dict[str, list[tuple]] = {}
    for chunk, marks in in_chunks(blob_ids):
        rows = database.conn.execute(
            f"SELECT blob_id, {columns} FROM {table} WHERE blob_id IN ({marks})"
            f" ORDER BY {order}",
            chunk,
        )
        for blob_id, *row in rows:
            found.setdefault(blob_id, []).append(tuple(row))
    return found


def importing_files(
    database: Database, version_key: int, names: Iterable[str], modules: Iterable[str] = ()
) -> list[tuple[str, str, tuple]]:
    """(path, blob_id, import row: line, module, name, alias, level) of the version's
    Python files, for their imports that import one of ``names`` by name or bind one as
    an alias, or that import one of ``modules`` whole (``import a.b [as c]``): looked up
    in the indexes of names and aliases (schema 11), where a whole-version
    `files_mentioning` reads every file's names."""
    names, modules = list(dict.fromkeys(names)), list(dict.fromkeys(modules))
    marks, module_marks = ",".join("?" * len(names)), ",".join("?" * len(modules))
    wanted = [f"i.name IN ({marks}) OR i.alias IN ({marks})"] if names else []
    wanted += [f"i.name IS NULL AND i.module IN ({module_marks})"] if modules else []
    if not wanted:
        return []
    rows = database.conn.execute(  # CROSS JOIN: imports first, by imports_name and _alias
        "SELECT f.path, f.blob_id, i.line, i.module, i.name, i.alias, i.level FROM imports i"
        f" CROSS JOIN files f ON f.blob_id = i.blob_id AND {PYTHON_FILE} WHERE f.version_id = ?"
        f" AND ({' OR '.join(f'({part})' for part in wanted)})",
        (version_key, *names, *names, *modules),
    )
    return [(path, blob_id, tuple(row)) for path, blob_id, *row in rows]
