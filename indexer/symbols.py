"""Definitions of one Python blob, found with tree-sitter.

Conventions (tests compare them with Python's ``ast``):

* ``qualname`` is ``__qualname__`` (PEP 3155): ``Cls.meth``, ``outer.<locals>.inner``.
* ``class``: any class; ``method``: a def directly in a class body; ``function``: any
  other def; ``attribute``: a simple name assigned (annotated or not) at module level or
  directly in a class body. "Directly" looks through if/elif/else, try/except/finally,
  with, for, while and match blocks.
* Lines are 1-based; a decorated definition starts at its first decorator and every
  definition ends at its last statement (trailing comment lines excluded).

Definitions and imports are found from their keywords (a regex, each hit checked against
the tree); their nesting comes from byte ranges, so Python walks only module and class
bodies (for attributes), never function bodies.

What this module extracts from a blob is stored once, so a change to what it extracts
from some input must bump ``indexer.extractor.EXTRACTION_VERSION``: `extractor_id`
names it, with the parser's versions, and ``annotate index`` extracts again every blob
that an older extractor indexed.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

import tree_sitter
import tree_sitter_python

from indexer.fingerprints import NormalizedFile, digest, shape_digest, split_commas
from indexer.literals import WORD_BYTES, blanked_in_place, universal_newlines
from indexer.models import ParsedBlob, SymbolKind, SymbolRow
from indexer.references import imports_in, names_in, python_name

MAX_PARSE_BYTES = 8 * 1024 * 1024

_TRANSPARENT = frozenset(
    {
        "if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
        "except_group_clause", "finally_clause", "with_statement", "for_statement",
        "while_statement", "match_statement", "case_clause", "block", "ERROR",
    }
)
_TUPLES = frozenset({"tuple", "tuple_pattern"})
_TRAILING = frozenset({"comment", "line_continuation"})  # not the end of a definition
_CLASS, _FUNCTION = SymbolKind.CLASS.value, SymbolKind.FUNCTION.value
_METHOD, _ATTRIBUTE = SymbolKind.METHOD.value, SymbolKind.ATTRIBUTE.value


@lru_cache(maxsize=1)
def _language() -> tree_sitter.Language:
    return tree_sitter.Language(tree_sitter_python.language())


@lru_cache(maxsize=1)
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(_language())


# A keyword that may start a definition or an import, when only indentation (or
# ``async``) comes before it on its line, or after the ``;`` or ``:`` that ends a statement
# or a clause on it (``try: import x``). Each hit is checked against the tree (a hit
# inside a string lands on a string node and is dropped): faster on vLLM than a tree-sitter
# query, which visits every node of the tree. The keyword is searched first because a
# pattern that starts with ``^`` is tried at every byte of the file (twice the time), and
# each keyword on its own: the engine then looks for the whole word, where one pattern of
# the four stops at every d, c, i and f of the file (half the time on vLLM). No two hits
# can overlap (no keyword starts with the end of another and its separator).
_KEYWORDS = tuple(re.compile(keyword + rb"[ \t\\(.]")
                  for keyword in (b"def", b"class", b"import", b"from"))
_BEFORE_KEYWORD = re.compile(rb"(?:\xef\xbb\xbf)?[ \t\f]*(?:async[ \t]+)?")
_DEFINITIONS = frozenset({"function_definition", "class_definition"})
_IMPORTS = frozenset({"import_statement", "import_from_statement"})
# The dot of an attribute reference that ends its line, the name after it on the next
# (Python joins the lines inside brackets; tree-sitter-python reads an indentation there,
# when the next line is indented less, and errs).
_DOT_BEFORE_A_LINE_BREAK = re.compile(rb"(?<=[\w)\]}])\.([ \t]*\r?\n[ \t\f]*)(?=[A-Za-z_])")
_NAME_OR_DOT = WORD_BYTES | {ord(".")}
_BRACKET = re.compile(rb"[()\[\]{}]")
# A star that starts a starred item (after ``,``, ``=``, an opening bracket, ``return``,
# ``yield`` or ``in``) of something other than a name, attribute, subscript or call, which
# tree-sitter-python rejects in a bare expression list or a subscript (``return a, *(b)``,
# ``x = *-b, c``, ``t[a, *f'{b}']``); ``*,``, ``*)`` and ``*:`` (``def f(a, *, b)``) and
# ``**`` are not such stars.
_REJECTED_STAR = re.compile(
    rb"(?:(?<=[,=(\[{])|(?<=\breturn)|(?<=\byield)|(?<=\bin))(\s*)\*"
    rb"(?=\s*(?:[^\s\w*,):\x80-\xff]|\d|[A-Za-z]{1,2}['\"]"
    rb"|(?:True|False|None|await|not|lambda)\b))"
)


def _outline(
    source: bytes, root: tree_sitter.Node
) -> tuple[list[tree_sitter.Node], list[tree_sitter.Node]]:
    """The definition and import statement nodes, in source order."""
    definitions: list[tree_sitter.Node] = []
    imports: list[tree_sitter.Node] = []
    for keyword in _statement_keywords(source):
        # the keyword token is unnamed: the smallest named node around it is its statement
        statement = root.named_descendant_for_byte_range(keyword, keyword + 1)
        if statement is None:
            continue
        start, kind = statement.start_byte, statement.type  # each read is a call into C
        if start > keyword:
            continue
        if kind in _DEFINITIONS:
            definitions.append(statement)
        elif kind in _IMPORTS and start == keyword:
            imports.append(statement)
    return definitions, imports


def _statement_keywords(source: bytes) -> list[int]:
    """Offsets of the keywords that ``_KEYWORDS`` find where a statement may start: at the
    start of a line, or after the last ``;`` or ``:`` before them on their line. A lone CR
    is taken for a character (`universal_newlines` makes it a LF first). Most keywords
    that start a statement have only indentation before them, which one strip tells."""
    found = sorted([match.start() for pattern in _KEYWORDS for match in pattern.finditer(source)])
    starting = []
    for keyword in found:
        line_start = source.rfind(b"\n", 0, keyword) + 1
        if not source[line_start:keyword].strip(b" \t\f"):
            starting.append(keyword)
            continue
        statement_start = max(line_start, source.rfind(b";", line_start, keyword) + 1,
                              source.rfind(b":", line_start, keyword) + 1)
        if _BEFORE_KEYWORD.fullmatch(source, statement_start, keyword):
            starting.append(keyword)
    return starting


@dataclass(slots=True)
class _Definition:
    """A definition found in the tree, before its fingerprints are computed."""

    qualname: str
    kind: str  # a SymbolKind's value: reading an enum member's ``value`` is a property call
    start: int
    end: int
    start_line: int
    end_line: int
    header_end: int
    signature: str
    members: list[_Definition] | None = None
    normalized_header: bytes = field(default=b"")


def parse_blob(blob_id: str, source: bytes, references: bool = True) -> ParsedBlob:
    """Parse one blob and return its definitions in source order, and (unless
    ``references`` is false, which only the benchmark asks for) its names and imports."""
    if len(source) > MAX_PARSE_BYTES:
        return ParsedBlob(blob_id, (), skipped=f"larger than {MAX_PARSE_BYTES} bytes")
    try:
        source.decode("utf-8")
        decode_errors = False
    except UnicodeDecodeError:
        decode_errors = True
    text = universal_newlines(source)
    root, has_errors = _tree(text)
    definition_nodes, import_nodes = _outline(text, root)
    finder = _Finder(text)
    definitions = finder.find(root, definition_nodes)
    docstrings = sorted(finder.docstrings)
    commas = _dropped_commas(text, root)
    normalized = _normalized_file(text, definitions, docstrings, commas)
    return ParsedBlob(
        blob_id,
        _fingerprint(source, definitions, normalized),
        has_errors=has_errors,
        decode_errors=decode_errors,
        names=names_in(normalized.code_parts) if references else "",
        imports=imports_in(text, import_nodes) if references else (),
    )


def _tree(text: bytes) -> tuple[tree_sitter.Node, bool]:
    """The root of ``text``'s tree, and whether tree-sitter found an error in it. A file
    with errors is parsed again from a copy in which the valid Python that the grammar
    rejects is written as it accepts it: each `_REJECTED_STAR` read as a space (a starred
    item becomes a plain one), and each `_DOT_BEFORE_A_LINE_BREAK` moved after the line
    break (`_rejoined`), so that its definitions and their extents are Python's. The copy
    is as long as ``text``, and has its line breaks: only the tree is read from it; every
    byte stored or fingerprinted is ``text``'s, at the same offsets."""
    root = _parser().parse(text).root_node
    if not root.has_error:
        return root, False
    repaired = _rejoined(_REJECTED_STAR.sub(lambda found: found[1] + b" ", text))
    if repaired == text:
        return root, True
    return _parser().parse(repaired).root_node, True


def _rejoined(text: bytes) -> bytes:
    """``text`` with each `_DOT_BEFORE_A_LINE_BREAK` in code inside brackets (not in a
    string or a comment, nor a number's, ``1.``) moved to the start of the name after it:
    ``(bar.`` then ``baz)`` on a line indented less becomes ``(bar`` then ``.baz)``, which
    tree-sitter reads as the same attribute, where the dedent inside the brackets broke
    the rest of the file's tree (CPython's test_compile.py has it). Outside brackets such
    a dot is an error Python makes too, and the line after it is left to stand alone."""
    if b"." not in text:
        return text
    blanked = blanked_in_place(text)  # a string an operand, a comment spaces
    moves = [found for found in _DOT_BEFORE_A_LINE_BREAK.finditer(blanked)
             if not _ends_a_number(blanked, found.start())]
    if moves:
        depth_at = _BracketDepth(blanked)
        moves = [found for found in moves if depth_at(found.start()) > 0]
    if not moves:
        return text
    repaired = bytearray(text)
    for found in moves:  # its bytes are white space and the dot, as in ``text``
        repaired[found.start():found.end()] = found[1] + b"."
    return bytes(repaired)


class _BracketDepth:
    """How many brackets are open at an offset of a text whose literals are blanked."""

    def __init__(self, blanked: bytes) -> None:
        self._offsets: list[int] = []
        self._depths: list[int] = []
        depth = 0
        for found in _BRACKET.finditer(blanked):
            depth += 1 if found[0] in b"([{" else -1
            self._offsets.append(found.start())
            self._depths.append(depth)

    def __call__(self, offset: int) -> int:
        index = bisect.bisect_right(self._offsets, offset) - 1
        return self._depths[index] if index >= 0 else 0


def _ends_a_number(code: bytes, dot: int) -> bool:
    """Whether the token before the dot at ``dot`` is a number (``1.``, ``1e5.``)."""
    start = dot
    while start > 0 and code[start - 1] in _NAME_OR_DOT:
        start -= 1
    return code[start:start + 1].isdigit()


class _Finder:
    def __init__(self, source: bytes) -> None:
        self._source = source
        self.docstrings: list[tuple[int, int]] = []

    def find(
        self, root: tree_sitter.Node, nodes: Iterable[tree_sitter.Node]
    ) -> list[_Definition]:
        definitions: list[_Definition] = []
        self._note_docstring(root)
        module_attributes = self._attributes(root, "")
        definitions.extend(module_attributes)
        stack: list[tuple[int, _Definition]] = []
        for node in nodes:
            while stack and stack[-1][0] <= node.start_byte:
                stack.pop()
            parent = stack[-1][1] if stack else None
            definition = self._definition(node, parent)
            if definition is None:
                continue
            definitions.append(definition)
            if definition.members:
                definitions.extend(definition.members)  # the class's attributes
            stack.append((node.end_byte, definition))
        return definitions

    def _definition(
        self, node: tree_sitter.Node, parent: _Definition | None
    ) -> _Definition | None:
        name = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name is None or body is None:
            return None
        class_members = None if parent is None else parent.members  # None: not in a class
        in_class = class_members is not None
        name_text = self._name(name)
        if parent is None:
            qualname = name_text
        else:
            joint = "." if in_class else ".<locals>."
            qualname = parent.qualname + joint + name_text
        outer = node.parent  # finding a parent walks down from the root: once only
        if outer is None or outer.type != "decorated_definition":
            outer = node
        end_node = _content_end(node, self._source)
        self._note_docstring(body)
        is_class = node.type == "class_definition"
        kind = _CLASS if is_class else (_METHOD if in_class else _FUNCTION)
        definition = _Definition(
            qualname=qualname, kind=kind, start=outer.start_byte, end=end_node.end_byte,
            start_line=outer.start_point[0] + 1, end_line=end_node.end_point[0] + 1,
            header_end=body.start_byte,
            signature=self._source[outer.start_byte:_header_end(body)]
            .decode("utf-8", "replace").rstrip(),
        )
        if class_members is not None:
            class_members.append(definition)
        if is_class:
            definition.members = self._attributes(body, qualname + ".")
        return definition

    def _attributes(self, body: tree_sitter.Node, prefix: str) -> list[_Definition]:
        found: list[_Definition] = []
        for statement in _statements(body):
            if statement.type != "expression_statement" or statement.named_child_count != 1:
                continue
            assignment: tree_sitter.Node | None = statement.named_child(0)
            while assignment is not None and assignment.type == "assignment":
                left = _unparenthesized(assignment.child_by_field_name("left"))
                value = assignment.child_by_field_name("right")
                if left is not None and left.type == "identifier":
                    found.append(self._attribute(prefix + self._name(left), statement, value))
                assignment = value
        return found

    def _attribute(
        self, qualname: str, statement: tree_sitter.Node, value: tree_sitter.Node | None
    ) -> _Definition:
        while value is not None and value.type == "assignment":
            value = value.child_by_field_name("right")
        end = _content_end(statement, self._source)
        return _Definition(
            qualname=qualname, kind=_ATTRIBUTE, start=statement.start_byte,
            end=end.end_byte, start_line=statement.start_point[0] + 1,
            end_line=end.end_point[0] + 1, header_end=end.end_byte,
            signature="" if value is None
            else self._source[value.start_byte:value.end_byte].decode("utf-8", "replace"),
        )

    def _name(self, identifier: tree_sitter.Node) -> str:
        """An identifier node's name as Python reads it (`python_name`)."""
        return python_name(
            self._source[identifier.start_byte:identifier.end_byte].decode("utf-8", "replace"))

    def _note_docstring(self, body: tree_sitter.Node) -> None:
        if body.named_child_count == 0:
            return
        child: tree_sitter.Node | None = body.named_child(0)
        while child is not None and child.type == "comment":
            child = child.next_named_sibling
        if (
            child is not None
            and child.type == "expression_statement"
            and child.named_child_count == 1
            and _is_text_literal(child.named_child(0), self._source)
        ):
            self.docstrings.append((child.start_byte, child.end_byte))


def _is_text_literal(node: tree_sitter.Node, source: bytes) -> bool:
    """Whether ``node`` is a str literal, as a docstring must be: not an f-string (nor a
    t-string) and not bytes, which Python keeps as statements."""
    if node.type == "concatenated_string":
        return all(_is_text_literal(part, source) for part in node.named_children)
    if node.type != "string":
        return False
    start = node.children[0]
    prefix = source[start.start_byte:start.end_byte].rstrip(b"'\"").lower()
    return not any(letter in prefix for letter in b"fbt")


def _statements(body: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """The statements of a body, looking through compound statements' blocks (with a
    stack, not recursion: a file may nest blocks deeper than Python's recursion limit)."""
    pending = [iter(body.children)]
    while pending:
        child = next(pending[-1], None)
        if child is None:
            pending.pop()
        elif child.type in _TRANSPARENT:
            pending.append(iter(child.children))
        else:
            yield child


def _header_end(body: tree_sitter.Node) -> int:
    """Where the header before ``body`` ends: at its colon, before the comments that
    tree-sitter puts between the colon and the body (``def f():  # why``)."""
    before = body.prev_sibling
    while before is not None and before.type == "comment":
        before = before.prev_sibling
    return body.start_byte if before is None else before.end_byte


def _unparenthesized(node: tree_sitter.Node | None) -> tree_sitter.Node | None:
    """``(name)`` as a target is ``name`` (tree-sitter parses it as a 1-tuple pattern)."""
    while (
        node is not None
        and node.type in ("tuple_pattern", "parenthesized_expression")
        and node.child_count == 3
        and node.named_child_count == 1
    ):
        node = node.named_child(0)
    return node


def _content_end(node: tree_sitter.Node, source: bytes) -> tree_sitter.Node:
    """The node itself, or its last descendant that is not a trailing comment line."""
    line_start = source.rfind(b"\n", 0, node.end_byte) + 1
    if not source[line_start:node.end_byte].lstrip().startswith(b"#"):
        return node
    while node.child_count:
        last = next((c for c in reversed(node.children) if c.type not in _TRAILING), None)
        if last is None:
            break
        node = last
    return node


def _dropped_commas(source: bytes, root: tree_sitter.Node) -> list[int]:
    """The split trailing commas to normalize away: all but those that make a tuple of one
    element, ``(x,)`` or ``t[x,]``, which would not be the same code without them."""
    return [position for position in split_commas(source)
            if not _makes_one_tuple(root, position)]


def _makes_one_tuple(root: tree_sitter.Node, comma: int) -> bool:
    """Whether the comma at offset ``comma`` ends a one-element tuple (``with (a as b,):``
    has none: Python reads the parentheses as the with statement's). A comma token is
    unnamed, so the smallest named node around it is the one that holds it: found in one
    walk down from the root, where asking the token for its parent is a second."""
    container = root.named_descendant_for_byte_range(comma, comma + 1)
    if container is None:
        return False
    if container.type == "subscript":
        return len(container.children_by_field_name("subscript")) == 1
    if container.type not in _TUPLES:
        return False  # a call's, a list's... or in a string or a comment
    elements = [child for child in container.named_children if child.type != "comment"]
    if len(elements) != 1:
        return False
    around = container.parent  # walks down from the root again: for the rare tuple of one
    return around is None or around.type != "with_item"


def _normalized_file(
    source: bytes, definitions: list[_Definition], docstrings: list[tuple[int, int]],
    commas: list[int],
) -> NormalizedFile:
    boundaries = [offset for d in definitions for offset in (d.start, d.header_end, d.end)]
    return NormalizedFile(source, docstrings, boundaries, commas)


def _fingerprint(
    source: bytes, definitions: list[_Definition], normalized: NormalizedFile
) -> tuple[SymbolRow, ...]:
    for definition in definitions:
        definition.normalized_header = normalized.slice(definition.start, definition.header_end)
    rows = [_symbol_row(source, definition, normalized) for definition in definitions]
    rows.sort(key=lambda row: (row[5], -row[6]))  # start_byte, then the longer first
    return tuple(rows)


def _symbol_row(source: bytes, definition: _Definition, normalized: NormalizedFile) -> SymbolRow:
    shape = None
    if definition.members is not None:
        shape = shape_digest(
            definition.normalized_header,
            (
                (member.kind, member.qualname,
                 member.normalized_header.decode("utf-8", "replace"))
                for member in definition.members
            ),
        )
    start, end = definition.start, definition.end
    is_attribute = definition.kind == _ATTRIBUTE
    qualname = definition.qualname
    return (
        qualname, qualname.rsplit(".", 1)[-1], definition.kind,
        definition.start_line, definition.end_line, start, end, definition.signature,
        digest(source[start:end]), digest(normalized.slice(start, end)), shape,
        None if is_attribute else digest(definition.normalized_header),
        None if is_attribute else digest(_normalized_body(definition, normalized)),
    )


def _normalized_body(definition: _Definition, normalized: NormalizedFile) -> bytes:
    """The normalized code after the header; for a class, without its members' spans."""
    if not definition.members:
        return normalized.slice(definition.header_end, definition.end)
    position, pieces = definition.header_end, []
    for member in sorted(definition.members, key=lambda member: member.start):
        if member.start > position:
            pieces.append(normalized.slice(position, member.start))
        position = max(position, member.end)
    pieces.append(normalized.slice(position, definition.end))
    return b"".join(pieces)
