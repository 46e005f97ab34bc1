"""What changed in a symbol between two versions, as small self-explaining objects.

``classify(old, new)`` compares two definitions of (what is taken to be) the same symbol:

* identical ``exact`` fingerprints: ``unchanged``;
* identical ``normalized`` fingerprints (comments, docstrings, white space): ``cosmetic``,
  unless their statements nest differently (`annotations.layout`);
* otherwise ``changed``, with one ``Change`` per kind that differs:

  - ``signature``: decorators, parameters (defaults, annotations), return annotation or
    ``async`` of a def; decorators of a class. Compared on the normalized header text,
    split into decorators and the def/class line by scanning it (strings and brackets
    aware), so no Python parser is needed.
  - ``bases``: the parenthesized part of a class line (bases, metaclass, keywords).
  - ``members``: a class gained or lost direct members (``Cls.name``, one level down), or
    a member's normalized signature changed; for an attribute member, its statement.
  - ``body``: anything else in the definition (a function's statements, a method body of
    a class, what a nested class holds, class-level code that is not a member).
  - ``annotation``: an attribute's type annotation (``x: int = 1``: ``int``), gained,
    lost or changed.
  - ``value``: an attribute's value; its whole statement when neither its value nor its
    annotation differs (its targets do: ``x = y = 1``).

A rename alone (the definition's own name) is not a change: a renamed symbol whose text
is otherwise identical is ``unchanged`` (``cosmetic`` if it differs only in comments,
layout or its leading docstring).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import Enum
from functools import lru_cache
from typing import Any, ClassVar, Protocol

from annotations.layout import same_layout
from indexer.fingerprints import normalize


class Verdict(str, Enum):
    """How a symbol of version A fares at version B."""

    UNCHANGED = "unchanged"
    COSMETIC = "cosmetic"
    CHANGED = "changed"
    MOVED = "moved"
    REMOVED = "removed"


class ChangeKind(str, Enum):
    SIGNATURE = "signature"
    BASES = "bases"
    MEMBERS = "members"
    BODY = "body"
    VALUE = "value"
    ANNOTATION = "annotation"


class KindGroup(str, Enum):
    """Symbol kinds that can match each other: a function may become a method."""

    CLASS = "class"
    FUNCTION = "function"
    ATTRIBUTE = "attribute"


def kind_group(kind: str) -> KindGroup:
    if kind == "class":
        return KindGroup.CLASS
    if kind == "attribute":
        return KindGroup.ATTRIBUTE
    return KindGroup.FUNCTION


class Comparable(Protocol):
    """What ``classify`` needs of a symbol (``matching.SymbolSnapshot`` provides it)."""

    @property
    def kind(self) -> str: ...
    @property
    def qualname(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def signature(self) -> str: ...
    @property
    def exact(self) -> str: ...
    @property
    def normalized(self) -> str: ...
    @property
    def start_byte(self) -> int: ...
    @property
    def end_byte(self) -> int: ...
    @property
    def source(self) -> str: ...
    @property
    def source_bytes(self) -> bytes: ...
    def members(self) -> Mapping[str, tuple[Comparable, ...]]: ...


# --- change objects -------------------------------------------------------------------

_EXPLAIN_WIDTH = 120


@dataclass(frozen=True)
class Change:
    """One kind of difference; ``explain()`` says it in one line, ``in_full()`` with the
    detail a reader wants and the one-line form leaves out."""

    kind: ClassVar[ChangeKind]

    def explain(self) -> str:
        raise NotImplementedError

    def in_full(self) -> str:
        return self.explain()


@dataclass(frozen=True)
class SignatureChange(Change):
    """``old``/``new`` are the one-line headers; ``parts`` names what differs in them."""

    kind: ClassVar[ChangeKind] = ChangeKind.SIGNATURE
    old: str
    new: str
    parts: tuple[str, ...] = ()

    def explain(self) -> str:
        return f"signature changed: {self.old} -> {self.new}"


@dataclass(frozen=True)
class BasesChange(Change):
    """``old``/``new`` are the parenthesized part of the class line (``()`` for none)."""

    kind: ClassVar[ChangeKind] = ChangeKind.BASES
    old: str
    new: str

    def explain(self) -> str:
        return f"bases changed: {self.old} -> {self.new}"


@dataclass(frozen=True)
class MembersChange(Change):
    """Direct members (names) added, removed, or whose signature (or statement) changed."""

    kind: ClassVar[ChangeKind] = ChangeKind.MEMBERS
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    def explain(self) -> str:
        parts = [
            f"{label} {', '.join(names)}"
            for label, names in (
                ("added", self.added), ("removed", self.removed), ("changed", self.changed)
            )
            if names
        ]
        return "members changed: " + "; ".join(parts)


@dataclass(frozen=True)
class NestedChange:
    """A nested class ``name`` whose own ``changes`` (its members, its body) changed the
    body of the class around it."""

    name: str
    changes: tuple[Change, ...]

    def explain(self) -> str:
        return f"nested {self.name}: " + ", ".join(change.in_full() for change in self.changes)


@dataclass(frozen=True)
class BodyChange(Change):
    """``nested``: the nested classes among what changed, by name."""

    kind: ClassVar[ChangeKind] = ChangeKind.BODY
    nested: tuple[NestedChange, ...] = ()

    def explain(self) -> str:
        return "body changed"

    def in_full(self) -> str:
        if not self.nested:
            return self.explain()
        return f"body changed ({'; '.join(nested.explain() for nested in self.nested)})"


@dataclass(frozen=True)
class ValueChange(Change):
    """``old``/``new``: the attribute's value (``""`` for none: ``x: int``), or its whole
    statement if the value is equal (as written; ``explain`` puts them on one line,
    shortened)."""

    kind: ClassVar[ChangeKind] = ChangeKind.VALUE
    old: str
    new: str

    def explain(self) -> str:
        return _added_removed_or_changed("value", self.old, self.new)


@dataclass(frozen=True)
class AnnotationChange(Change):
    """``old``/``new``: an attribute's type annotation as written (``""`` for none)."""

    kind: ClassVar[ChangeKind] = ChangeKind.ANNOTATION
    old: str
    new: str

    def explain(self) -> str:
        return _added_removed_or_changed("annotation", self.old, self.new)


_STORED = (SignatureChange, BasesChange, MembersChange, NestedChange, BodyChange, ValueChange,
           AnnotationChange)
_BY_NAME = {kind.__name__: kind for kind in _STORED}


def change_to_data(change: Change | NestedChange) -> dict:
    """``change`` as JSON data (`change_from_data` makes it again): its type and fields."""
    return {"type": type(change).__name__,
            **{item.name: _to_data(getattr(change, item.name)) for item in fields(change)}}


def change_from_data(data: dict) -> Change | NestedChange:
    """The change `change_to_data` made ``data`` of."""
    values: dict[str, Any] = {
        name: _from_data(value) for name, value in data.items() if name != "type"}
    return _BY_NAME[data["type"]](**values)


def _to_data(value: object) -> object:
    if isinstance(value, tuple):
        return [_to_data(item) for item in value]
    if isinstance(value, (Change, NestedChange)):
        return change_to_data(value)
    return value


def _from_data(value: object) -> object:
    if isinstance(value, list):
        return tuple(_from_data(item) for item in value)
    if isinstance(value, dict):
        return change_from_data(value)
    return value


def _added_removed_or_changed(what: str, old: str, new: str) -> str:
    """``what`` added, removed (``""`` on one side) or changed, on one line, shortened."""
    if not old:
        return f"{what} added: {_shorten(_display(new))}"
    if not new:
        return f"{what} removed: {_shorten(_display(old))}"
    return f"{what} changed: {_shorten(_display(old))} -> {_shorten(_display(new))}"


# --- classification -------------------------------------------------------------------


def classify(old: Comparable, new: Comparable) -> tuple[Verdict, tuple[Change, ...]]:
    """``unchanged``, ``cosmetic`` or ``changed`` (with its changes) from ``old`` to ``new``."""
    if old.exact == new.exact:
        return Verdict.UNCHANGED, ()
    if old.normalized == new.normalized:
        return _cosmetic(old, new)
    if old.name != new.name:
        if _renamed(old.source, old, new.name) == new.source:
            return Verdict.UNCHANGED, ()
        if _same_but_name(old, new):
            return _cosmetic(old, new)
    changes = describe(old, new)
    if not changes and kind_group(old.kind) is KindGroup.CLASS:
        return _cosmetic(old, new)  # the same header, members and code: ``class A():``
    return Verdict.CHANGED, changes or (BodyChange(),)


def _cosmetic(old: Comparable, new: Comparable) -> tuple[Verdict, tuple[Change, ...]]:
    """Cosmetic, unless the statements nest or split differently (the same code without
    white space: ``return`` dedented out of a loop)."""
    if same_layout(old.source, new.source):
        return Verdict.COSMETIC, ()
    return Verdict.CHANGED, (BodyChange(),)


def describe(old: Comparable, new: Comparable) -> tuple[Change, ...]:
    """The changes between two definitions whose normalized fingerprints differ."""
    group = kind_group(old.kind)
    if group is not kind_group(new.kind):
        return (SignatureChange(_display_symbol(old), _display_symbol(new), ("kind",)),
                BodyChange())
    if group is KindGroup.ATTRIBUTE:
        return _attribute_changes(old, new)
    if group is KindGroup.CLASS:
        return _class_changes(old, new)
    return _function_changes(old, new)


def _function_changes(old: Comparable, new: Comparable) -> tuple[Change, ...]:
    if old.name == new.name and _same_header(old, new):
        return (BodyChange(),)
    old_header, new_header = parse_header(old.signature), parse_header(new.signature)
    signature = _signature_change(old_header, new_header, ("decorators", "parameters",
                                                            "returns", "keyword"))
    if signature is None:
        return (BodyChange(),)
    if not _same_body(old, new):
        return signature, BodyChange()
    return (signature,)


def _class_changes(old: Comparable, new: Comparable) -> tuple[Change, ...]:
    changes: list[Change] = []
    if old.signature != new.signature:
        changes.extend(_class_header_changes(parse_header(old.signature),
                                             parse_header(new.signature)))
    members = _members_change(old.members(), new.members())
    if members is not None:
        changes.append(members)
    if _class_body_changed(old, new):
        changes.append(BodyChange(_nested_changes(old, new)))
    return tuple(changes)


def _nested_changes(old: Comparable, new: Comparable) -> tuple[NestedChange, ...]:
    """The nested classes of ``old`` whose members or body changed at ``new`` (what
    `_inner_changed` sees of them), each with those changes."""
    old_members, new_members = old.members(), new.members()
    found = []
    for name in sorted(old_members.keys() & new_members.keys()):
        for before, after in zip(old_members[name], new_members[name], strict=False):
            if not (before.kind == after.kind == "class") or before.normalized == after.normalized:
                continue
            inner = tuple(change for change in _class_changes(before, after)
                          if change.kind in (ChangeKind.MEMBERS, ChangeKind.BODY))
            if inner:
                found.append(NestedChange(name, inner))
    return tuple(found)


def _class_header_changes(old: Header, new: Header) -> list[Change]:
    changes: list[Change] = []
    signature = _signature_change(old, new, ("decorators", "keyword"))
    if signature is not None:
        changes.append(signature)
    if old.parameters != new.parameters and _bases_key(old.parameters) != _bases_key(
        new.parameters
    ):
        changes.append(BasesChange(_display(old.parameters) or "()",
                                   _display(new.parameters) or "()"))
    return changes


def _signature_change(
    old: Header, new: Header, fields: tuple[str, ...]
) -> SignatureChange | None:
    parts = tuple(
        name for name in fields
        if getattr(old, name) != getattr(new, name)
        and _part_key(name, getattr(old, name)) != _part_key(name, getattr(new, name))
    )
    if not parts:
        return None
    return SignatureChange(old.display(), new.display(), parts)


def _members_change(
    old: Mapping[str, tuple[Comparable, ...]], new: Mapping[str, tuple[Comparable, ...]]
) -> MembersChange | None:
    added = tuple(sorted(new.keys() - old.keys()))
    removed = tuple(sorted(old.keys() - new.keys()))
    changed = tuple(
        sorted(
            name for name in old.keys() & new.keys()
            if _raw_member_key(old[name]) != _raw_member_key(new[name])
            and _member_key(old[name]) != _member_key(new[name])
        )
    )
    if not (added or removed or changed):
        return None
    return MembersChange(added, removed, changed)


def _raw_member_key(members: tuple[Comparable, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((m.kind, m.normalized if m.kind == "attribute" else m.signature)
                 for m in members)


def _member_key(members: tuple[Comparable, ...]) -> tuple[tuple[str, str | bytes], ...]:
    return tuple(
        (m.kind, m.normalized if m.kind == "attribute" else _key(m.signature)) for m in members
    )


def _class_body_changed(old: Comparable, new: Comparable) -> bool:
    """Whether a method body or the class-level code outside members differs."""
    old_members, new_members = old.members(), new.members()
    for name in old_members.keys() & new_members.keys():
        for before, after in zip(old_members[name], new_members[name], strict=False):
            if before.normalized != after.normalized and _inner_changed(before, after):
                return True
    return not _same_body(old, new)


def _inner_changed(old: Comparable, new: Comparable) -> bool:
    group = kind_group(old.kind)
    if group is not kind_group(new.kind) or group is KindGroup.ATTRIBUTE:
        return False  # reported as a member change
    if group is KindGroup.CLASS:  # its members are one level down from the outer class
        return (_members_change(old.members(), new.members()) is not None
                or _class_body_changed(old, new))
    if _same_header(old, new):
        return True
    return not _same_body(old, new)


def _residual(symbol: Comparable) -> bytes:
    """A class's code without its header and its direct members, canonical."""
    data = symbol.source_bytes
    cuts = sorted(
        (member.start_byte - symbol.start_byte, member.end_byte - symbol.start_byte)
        for members in symbol.members().values()
        for member in members
    )
    pieces, position = [], len(symbol.signature.encode("utf-8", "replace"))
    for start, end in cuts:
        pieces.append(data[position:max(position, start)])
        position = max(position, end)
    pieces.append(data[position:])
    return canonical(b"".join(pieces).decode("utf-8", "replace"))


def _attribute_changes(old: Comparable, new: Comparable) -> tuple[Change, ...]:
    """Its annotation's change and its value's, each when it differs; when neither does,
    its statement's (its targets differ: ``x = y = 1``)."""
    changes: list[Change] = []
    old_annotation, new_annotation = _annotation(old.source), _annotation(new.source)
    if not _same_annotation(old_annotation, new_annotation):
        changes.append(AnnotationChange(old_annotation, new_annotation))
    if not _same_code(old.signature, new.signature):
        changes.append(ValueChange(old.signature, new.signature))
    return tuple(changes) or (ValueChange(old.source, new.source),)


def _same_annotation(old: str, new: str) -> bool:
    if old == new:
        return True
    return bool(old and new) and _part_key("returns", old) == _part_key("returns", new)


def _body_text(symbol: Comparable) -> str:
    return symbol.source[len(symbol.signature):]


def _same_but_name(old: Comparable, new: Comparable) -> bool:
    """Whether ``old`` renamed to ``new.name`` is ``new`` but for comments and layout."""
    if old.kind == "attribute" or new.kind == "attribute":
        return _key(_renamed(old.source, old, new.name)) == _key(new.source)
    return _key(_renamed(old.signature, old, new.name)) == _key(new.signature) and canonical(
        _body_text(old)
    ) == canonical(_body_text(new))


def _renamed(text: str, symbol: Comparable, new_name: str) -> str:
    """``text`` (``symbol``'s source or header) with the defined name set to ``new_name``."""
    name = re.escape(symbol.name)
    if symbol.kind == "attribute":
        pattern = rf"(?<![\w.]){name}(?!\w)"
    else:
        pattern = rf"(?<!\w)((?:def|class)\s+){name}(?!\w)"
        new_name = r"\g<1>" + new_name.replace("\\", r"\\")
    return re.sub(pattern, new_name, text, count=1)


# --- header text ----------------------------------------------------------------------

_STRING = (
    r"(?:(?<![\w])[rRuUbBfF]{1,2})?"
    r"(?:'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'(?:[^'\\\n]|\\.)*'"
    r'|"(?:[^"\\\n]|\\.)*")'
)
_STRING_OR_COMMENT = re.compile(rf"({_STRING})|#[^\n]*", re.DOTALL)
# Each comment runs to its line's end, so a line of '#####' has one reading (no backtracking).
_LEADING_DOCSTRING = re.compile(
    rf"(?:\s|#[^\n]*(?=\n|\Z))*{_STRING}[ \t;]*(?=#|\n|\Z)", re.DOTALL
)
_STRUCTURE = re.compile(r"[()\[\]{}\n]")
_DEF_LINE = re.compile(r"(async\s+def|def|class)\s+(\w+)\s*(.*?)\s*:?\s*\Z", re.DOTALL)


@dataclass(frozen=True)
class Header:
    """A def or class header split into its parts (comments dropped, layout kept)."""

    decorators: tuple[str, ...]
    keyword: str  # "def", "async def", "class"; "" if the text is not a def/class line
    name: str
    parameters: str  # "(a, b=1)" (type parameters included) or a class's "(Base)"
    returns: str

    def display(self) -> str:
        """The header on one line: ``@deco def name(params) -> returns``."""
        line = f"{self.keyword} {self.name}{self.parameters}".strip()
        if self.returns:
            line += f" -> {self.returns}"
        return " ".join(_display(part) for part in (*self.decorators, line))


@lru_cache(maxsize=16384)
def parse_header(text: str) -> Header:
    """Split a header (decorators, then the def/class line up to its colon)."""
    code, masked = _masked(text)
    lines = logical_lines(code, masked)
    decorators = tuple(line for line in lines if line.startswith("@"))
    definition = " ".join(line for line in lines if not line.startswith("@"))
    found = _DEF_LINE.match(definition)
    if found is None:
        return Header(decorators, "", "", definition, "")
    keyword = " ".join(found.group(1).split())
    rest = found.group(3)
    arrow = _masked(rest)[1].find("->")
    if arrow < 0:
        return Header(decorators, keyword, found.group(2), rest.strip(), "")
    return Header(decorators, keyword, found.group(2), rest[:arrow].strip(),
                  rest[arrow + 2:].strip())


_ANNOTATION_MARKS = re.compile(r"[()\[\]{}]|:(?!=)|(?<![=!<>:])=(?!=)")
"""Brackets, and the colons and ``=`` that are not part of ``:=``, ``==``, ``<=``..."""


def _annotation(statement: str) -> str:
    """The type annotation of an attribute's statement (``x: int = 1``: ``int``; ``""`` for
    ``x = 1`` or ``x = y = 1``): between the first colon outside brackets and strings and
    the ``=`` after it, if any."""
    code, masked = _masked(statement)
    depth, colon = 0, -1
    for found in _ANNOTATION_MARKS.finditer(masked):
        char = found.group()
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0 and char == "=":
            return code[colon + 1:found.start()].strip() if colon >= 0 else ""
        elif depth == 0 and colon < 0:
            colon = found.start()
    return code[colon + 1:].strip() if colon >= 0 else ""


def _masked(text: str) -> tuple[str, str]:
    """``text`` without comments, and the same with string contents blanked out."""
    if "#" not in text and "'" not in text and '"' not in text:
        return text, text
    code = _STRING_OR_COMMENT.sub(lambda m: m.group(1) or "", text)
    masked = _STRING_OR_COMMENT.sub(lambda m: "s" * len(m.group()), code)
    return code, masked


def logical_lines(code: str, masked: str) -> list[str]:
    """Lines of ``code`` split at newlines outside brackets (``masked`` gives positions)."""
    lines, depth, start = [], 0, 0
    for found in _STRUCTURE.finditer(masked):
        char, index = found.group(), found.start()
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0 and masked[index - 1:index] != "\\":
            lines.append(code[start:index])
            start = index + 1
    lines.append(code[start:])
    return [line.strip() for line in lines if line.strip()]


def _same_header(old: Comparable, new: Comparable) -> bool:
    """Whether two def/class headers are the same but for comments and layout."""
    keys = _stored_keys(old, new, "header_key")
    if keys is not None:
        return keys[0] == keys[1]
    return _same_code(old.signature, new.signature)


def _same_body(old: Comparable, new: Comparable) -> bool:
    """Whether the code after two headers (a class's outside its members) is the same but
    for comments, docstrings and layout."""
    keys = _stored_keys(old, new, "body_key")
    if keys is not None:
        return keys[0] == keys[1]
    if kind_group(old.kind) is KindGroup.CLASS:
        return _residual(old) == _residual(new)
    return canonical(_body_text(old)) == canonical(_body_text(new))


def _stored_keys(old: Comparable, new: Comparable, column: str) -> tuple[str, str] | None:
    """The two symbols' comparison keys stored at index time, if both have one (rows
    indexed before schema 4, attributes and symbols built from source have none)."""
    old_key, new_key = getattr(old, column, None), getattr(new, column, None)
    if old_key is None or new_key is None:
        return None
    return old_key, new_key


def _same_code(old: str, new: str) -> bool:
    return old == new or _key(old) == _key(new)


@lru_cache(maxsize=65536)
def _key(text: str) -> bytes:
    """Comparison key of a piece of code: normalized (no comments or layout)."""
    return normalize(text.encode("utf-8", "replace"))


_IN_HEADER = {"parameters": "def _{}:", "returns": "def _() -> {}:"}
"""Where a header part stands when it is keyed: in a def line, which tells its brackets
(a parameter list, an annotation's generic type) from a tuple's, as the tree does."""


def _part_key(name: str, value: str | tuple[str, ...]) -> bytes:
    text = "\n".join(value) if isinstance(value, tuple) else value
    return _key(_IN_HEADER.get(name, "{}").format(text))


def _bases_key(text: str) -> bytes:
    """The key of a class's ``(bases)``, keyed in a class line, where ``(Base,)`` is
    ``(Base)`` as the tree reads it: no tuple; ``()`` is no bases."""
    key = _key(f"class _{text}:")
    return b"class_:" if key == b"class_():" else key


def _display(text: str) -> str:
    """One-line rendering of a piece of code (white space collapsed, trailing comma gone)."""
    line = " ".join(text.split())
    line = re.sub(r"([(\[{]) ", r"\1", line)
    return re.sub(r",? ([)\]}])", r"\1", line)


def _display_symbol(symbol: Comparable) -> str:
    if symbol.kind == "attribute":
        return f"{symbol.name} = {_display(symbol.signature)}"
    return parse_header(symbol.signature).display()


def _shorten(text: str) -> str:
    return text if len(text) <= _EXPLAIN_WIDTH else text[:_EXPLAIN_WIDTH - 3] + "..."


# --- canonical code -------------------------------------------------------------------


def canonical(code: str) -> bytes:
    """``code`` normalized like the ``normalized`` fingerprint, its leading docstring dropped.

    Used on bodies (the code after a header), where the leading string statement is the
    docstring; docstrings of nested definitions are kept (no parser is involved).
    """
    found = _LEADING_DOCSTRING.match(code)
    if found is not None:
        code = code[found.end():]
    return normalize(code.encode("utf-8", "replace"))
