"""Reference symbol extractor built only on the stdlib ``ast`` module.

It is the oracle the tree-sitter indexer is checked against. Conventions:

* qualname is Python's ``__qualname__`` (PEP 3155): ``Cls.meth``, ``outer.<locals>.inner``.
* ``class``: every ClassDef, wherever it is.
* ``method``: a (async) def directly in a class body, also inside compound-statement blocks
  (if/try/with/for/while/match) that are themselves directly in the class body.
* ``function``: every other (async) def.
* ``attribute``: each plain ``Name`` target of ``Assign``/``AnnAssign`` at module level or
  directly in a class body (same block rule), never inside a function body.
* start_line is the first decorator's line when decorated; end_line is ``end_lineno``.
"""

from __future__ import annotations

import ast
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

RefSymbol = tuple[str, str, int, int]
TreeSymbol = tuple[str, str, str, int, int]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_TRY_NODES: tuple[type[ast.stmt], ...] = (ast.Try,) + (
    (ast.TryStar,) if hasattr(ast, "TryStar") else ()
)


def _block_bodies(node: ast.stmt) -> list[list[ast.stmt]] | None:
    """Statement lists nested in a compound (non-scope) statement, or None."""
    if isinstance(node, (ast.If, ast.For, ast.AsyncFor, ast.While)):
        return [node.body, node.orelse]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [node.body]
    if isinstance(node, _TRY_NODES):
        handlers = [h.body for h in node.handlers]  # type: ignore[attr-defined]
        return [node.body, *handlers, node.orelse, node.finalbody]  # type: ignore[attr-defined]
    if isinstance(node, ast.Match):
        return [case.body for case in node.cases]
    return None


def _start_line(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> int:
    if node.decorator_list:
        return node.decorator_list[0].lineno
    return node.lineno


def _assigned_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _walk(body: list[ast.stmt], prefix: str, scope: str) -> Iterator[RefSymbol]:
    """Yield symbols of ``body``; ``scope`` is "module", "class" or "function"."""
    for node in body:
        if isinstance(node, _DEFS):
            qualname = prefix + node.name
            kind = "method" if scope == "class" else "function"
            yield qualname, kind, _start_line(node), node.end_lineno or node.lineno
            yield from _walk(node.body, qualname + ".<locals>.", "function")
        elif isinstance(node, ast.ClassDef):
            qualname = prefix + node.name
            yield qualname, "class", _start_line(node), node.end_lineno or node.lineno
            yield from _walk(node.body, qualname + ".", "class")
        elif (bodies := _block_bodies(node)) is not None:
            for block in bodies:
                yield from _walk(block, prefix, scope)
        elif scope != "function":
            for name in _assigned_names(node):
                yield prefix + name, "attribute", node.lineno, node.end_lineno or node.lineno


def _sort_key(sym: RefSymbol) -> tuple[int, int, str, str]:
    qualname, kind, start, end = sym
    return start, end, qualname, kind


def reference_symbols(source: str) -> list[RefSymbol]:
    """All definitions of a valid Python source as (qualname, kind, start, end).

    Duplicates (property setters, conditional defs) are kept. Sorted by
    (start_line, end_line, qualname, kind). Raises SyntaxError on invalid source.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(source)
    return sorted(_walk(tree.body, "", "module"), key=_sort_key)


def _iter_py_files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for filename in sorted(filenames):
            path = Path(dirpath, filename)
            if filename.endswith(".py") and not path.is_symlink():
                yield path


def _parse_file(path: Path) -> list[RefSymbol] | None:
    """Symbols of one file, or None when it is not UTF-8 or not valid Python."""
    try:
        source = path.read_bytes().decode("utf-8-sig")  # a leading BOM is valid Python
        return reference_symbols(source)
    except (UnicodeDecodeError, SyntaxError, ValueError):
        return None


def reference_for_tree(root: Path) -> tuple[set[TreeSymbol], list[str]]:
    """Symbols of every ``.py`` file under ``root`` (symlinks and ``.git`` skipped).

    Returns ``(symbols, skipped)``: symbols as (relpath, qualname, kind, start, end) with
    POSIX relative paths, and the sorted relative paths of files that failed to decode as
    UTF-8 or to parse.
    """
    symbols: set[TreeSymbol] = set()
    skipped: list[str] = []
    for path in _iter_py_files(root):
        rel = path.relative_to(root).as_posix()
        found = _parse_file(path)
        if found is None:
            skipped.append(rel)
            continue
        symbols.update((rel, *sym) for sym in found)
    return symbols, sorted(skipped)
