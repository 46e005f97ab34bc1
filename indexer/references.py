"""What a blob refers to, recorded in the same parse as its symbols.

* ``names``: every distinct identifier that occurs in code (not in strings or comments),
  sorted, space-separated and padded; a query finds the files that may refer to a name
  with one ``instr`` per file. Where in the file and how is worked out per query
  (`annotations.xref`).
* ``imports``: every import statement, as (line, module, name, alias, level) rows:
  ``import a.b as c`` -> (n, "a.b", None, "c", 0); ``from ..x import Y as Z`` ->
  (n, "x", "Y", "Z", 2); ``from m import *`` -> (n, "m", "*", None, 0).
"""

from __future__ import annotations

import keyword
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING

from indexer.literals import WORD_BYTES, blank_literals

if TYPE_CHECKING:
    import tree_sitter

ImportRow = tuple[int, str, str | None, str | None, int]
KEYWORDS = frozenset(word.encode() for word in (*keyword.kwlist, *keyword.softkwlist))
_SEPARATE = bytes(byte if byte in WORD_BYTES else 0x20 for byte in range(256))
_DIGITS = b"0123456789"
_FIRST_LETTER = ord("A")  # word bytes below it are digits


def identifiers(code: bytes) -> set[bytes]:
    """``set(re.findall(rb"[A-Za-z_][A-Za-z0-9_]*", code))`` in C-speed steps: non-word
    bytes blanked, split, then the leading digits of a number cut off ("1e5" holds the
    identifier "e5")."""
    words = set(code.translate(_SEPARATE).split())
    numbers = [word for word in words if word[0] < _FIRST_LETTER]
    if numbers:
        words.difference_update(numbers)
        words.update(number.lstrip(_DIGITS) for number in numbers)
        words.discard(b"")
    return words


def python_name(text: str) -> str:
    """Identifiers as Python reads them, NFKC-normalized (PEP 3131): ``µ`` (the micro sign)
    is ``μ`` (mu), ``ﬁx`` is ``fix``, as ``__qualname__`` has them; ASCII ones as they are."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def names_in(code_parts: Iterable[bytes]) -> str:
    """The distinct identifiers of the code parts, sorted, space-separated and padded
    with a space at both ends (so `` name `` finds a whole name)."""
    found = identifiers(b" ".join(code_parts))  # a space ends any identifier
    found -= KEYWORDS
    return " " + b" ".join(sorted(found)).decode("ascii") + " "


def code_identifiers(code: bytes) -> set[bytes]:
    """The identifiers in ``code`` outside string literals and comments."""
    return identifiers(blank_literals(code))


def imports_in(source: bytes, nodes: Iterable[tree_sitter.Node]) -> tuple[ImportRow, ...]:
    """Rows of the import statement nodes (as the indexer's outline finds them) of the
    tree parsed from ``source``."""
    rows: list[ImportRow] = []
    for node in nodes:
        line = node.start_point[0] + 1
        if node.type == "import_statement":
            rows.extend(_plain_import(source, node, line))
        else:
            rows.extend(_from_import(source, node, line))
    return tuple(rows)


def _plain_import(source: bytes, node: tree_sitter.Node, line: int) -> list[ImportRow]:
    rows: list[ImportRow] = []
    for child in node.children_by_field_name("name"):
        module, alias = _name_and_alias(source, child)
        if module:
            rows.append((line, module, None, alias, 0))
    return rows


def _from_import(source: bytes, node: tree_sitter.Node, line: int) -> list[ImportRow]:
    module_node = node.child_by_field_name("module_name")
    if module_node is None:
        return []
    level, module = _relative(source, module_node)
    names = [_name_and_alias(source, child) for child in node.children_by_field_name("name")]
    if _may_import_all(source, node, module_node.end_byte) and any(
        child.type == "wildcard_import" for child in node.children
    ):
        names.append(("*", None))
    return [(line, module, name, alias, level) for name, alias in names if name]


def _may_import_all(source: bytes, node: tree_sitter.Node, names_start: int) -> bool:
    """Whether a from-import may end in ``*``: most do not hold the byte (a tree with an
    error may have made up a wildcard of none)."""
    return source.find(b"*", names_start, node.end_byte) >= 0 or node.has_error


def _relative(source: bytes, node: tree_sitter.Node) -> tuple[int, str]:
    text = _text(source, node)
    stripped = text.lstrip(".")
    return len(text) - len(stripped), stripped


def _name_and_alias(source: bytes, node: tree_sitter.Node) -> tuple[str, str | None]:
    if node.type == "aliased_import":
        name = node.child_by_field_name("name")
        alias = node.child_by_field_name("alias")
        return (_text(source, name) if name else "", _text(source, alias) if alias else None)
    return _text(source, node), None


def _text(source: bytes, node: tree_sitter.Node) -> str:
    return "".join(source[node.start_byte:node.end_byte].decode("utf-8", "replace").split())
