"""Where a claim's values stand in its file's text, for edits that touch only them.

The claims' YAML (an annotation file, or a Markdown article's front matter) is composed
as `link` composes it (`loader.compose_yaml`), with marks that give each value's line and
column in the file. An edit is a `Span` of one line to replace, or a line to insert; a
value written in a form that cannot be rewritten in place (over several lines, with
escapes, through an alias another claim shares) raises `Unwritable`, with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from annotations.errors import AnnotationError, RefSyntaxError
from annotations.loader import ComposedYaml, compose_yaml
from annotations.markdown import front_matter_yaml
from annotations.refs import parse_ref

_ALIAS_AFTER_KEY = re.compile(r"[ \t]*:[ \t]*(\*[^\s,\[\]{}]+)")
_BOM = "\ufeff"


class Unwritable(AnnotationError):
    """A value that fix cannot rewrite in place; the message says why."""


@dataclass(frozen=True)
class Span:
    """Characters ``start:end`` of line ``line`` (0-based), and what to write there."""

    line: int
    start: int
    end: int
    new: str


@dataclass(frozen=True)
class NewLine:
    """A line to insert after line ``after`` (0-based), without its line ending."""

    after: int
    text: str


class ClaimsYaml:
    """The composed claims of one file, with the file's lines (endings kept)."""

    def __init__(
        self, root: yaml.Node | None, lines: list[str], bom: bool,
        composed: ComposedYaml | None = None,
    ) -> None:
        self._root = root
        self._lines = lines
        self._bom = bom
        self._shared = _shared_nodes(root)
        self._by_id: dict[str, yaml.MappingNode] | None = None
        self.composed = composed
        """The YAML composed, for the loader to read the file's claims from (not again)."""

    @classmethod
    def of(cls, lines: list[str]) -> ClaimsYaml:
        """The file's front matter's YAML when it has front matter, else its own.

        A text with front matter is YAML of one document only when that document is its
        front matter (a second '---' starts another): composing a Markdown article whole
        only failed, twice (libyaml, then PyYAML's slow parser for its message)."""
        text = "".join(lines)
        bom = text.startswith(_BOM)
        text = text.removeprefix(_BOM)
        front_matter = front_matter_yaml(text)
        source = text if front_matter is None else front_matter
        root = compose_yaml(source)
        composed = None if root is None else ComposedYaml(source, root)
        if isinstance(_value_of(root, "claims"), yaml.SequenceNode):
            return cls(root, lines, bom, composed)
        return cls(None, lines, bom, composed)

    def claim(self, claim_id: str) -> yaml.MappingNode | None:
        if self._by_id is None:  # once: fix asks for a claim per edit
            self._by_id = {}
            claims = _value_of(self._root, "claims")
            for item in claims.value if isinstance(claims, yaml.SequenceNode) else ():
                id_node = _value_of(item, "id")
                if isinstance(id_node, yaml.ScalarNode):
                    self._by_id.setdefault(id_node.value, item)
        return self._by_id.get(claim_id)

    def ref_edits(
        self, claim_id: str, line: int, written: str, new: str, pinned: list[tuple[str, ...]]
    ) -> list[Span]:
        """The edits that rewrite the claim's ref ``written`` on 1-based ``line`` to
        ``new``, one per time it is written there (``refs: [A, A]``), then those that write
        out the pin of its unpinned ``uses:`` targets, as ``pinned`` has it (for each entry,
        the canonical texts of its targets, in order): an unpinned target takes its ref's
        pin, which the rewrite changes. No edit when the claim or the ref is not found."""
        items = self._ref_items(claim_id, line, written)
        spans = []
        for _, node in items:
            if id(node) in self._shared:
                raise Unwritable("it is an alias that other refs share; write it out")
            spans.append(self._scalar_span(node, new))
        return spans + self._uses_spans(items, pinned)

    def uses_edits(
        self, claim_id: str, line: int, written: str, pinned: list[tuple[str, ...]]
    ) -> list[Span]:
        """The edits of `ref_edits` that write out the pin of the unpinned ``uses:``
        targets of the claim's ref ``written`` on ``line``, leaving the ref as it is."""
        return self._uses_spans(self._ref_items(claim_id, line, written), pinned)

    def _uses_spans(
        self, items: list[tuple[yaml.Node, yaml.ScalarNode]], pinned: list[tuple[str, ...]]
    ) -> list[Span]:
        spans = []
        for (item, _), canonical_texts in zip(items, pinned, strict=False):
            uses = _value_of(item, "uses")
            for node, canonical in zip(uses.value if isinstance(uses, yaml.SequenceNode)
                                       else (), canonical_texts, strict=False):
                if isinstance(node, yaml.ScalarNode) and not _is_pinned(node.value):
                    if id(node) in self._shared:
                        raise Unwritable("its uses: target is an alias that other refs share")
                    spans.append(self._scalar_span(node, canonical, "its uses: target"))
        return spans

    def _ref_items(
        self, claim_id: str, line: int, written: str
    ) -> list[tuple[yaml.Node, yaml.ScalarNode]]:
        """The claim's refs entries of ``written`` on 1-based ``line``, each with its ref
        scalar."""
        refs = _value_of(self.claim(claim_id), "refs")
        found = []
        for item in refs.value if isinstance(refs, yaml.SequenceNode) else ():
            node = _value_of(item, "ref") if isinstance(item, yaml.MappingNode) else item
            if (isinstance(node, yaml.ScalarNode) and node.value == written
                    and node.end_mark.line == line - 1):
                found.append((item, node))
        return found

    def pin_edit(self, claim_id: str, target: str) -> Span | NewLine:
        """The edit that makes ``target`` the claim's own ``at:``."""
        claim = self.claim(claim_id)
        if claim is None:
            raise Unwritable("it is not found in the file's claims")
        keys = {key.value: (key, value) for key, value in claim.value
                if isinstance(key, yaml.ScalarNode)}
        if "at" in keys:
            return self._pin_replacement(*keys["at"], target)
        return self._pin_insertion(claim.flow_style, *keys["id"], target)

    def _pin_replacement(self, key: yaml.Node, value: yaml.Node, target: str) -> Span:
        if value.start_mark.index < key.end_mark.index:  # an alias: marks are its anchor's
            line = key.end_mark.line
            alias = _ALIAS_AFTER_KEY.match(self._lines[line], self._column(key.end_mark))
            if alias is None:
                raise Unwritable("its 'at:' is an alias fix cannot find")
            return Span(line, *alias.span(1), target)
        if id(value) in self._shared:
            raise Unwritable("its 'at:' is an anchor that other values share")
        if not isinstance(value, yaml.ScalarNode):  # a claim that loads has a text 'at:'
            raise Unwritable("its 'at:' is not a text")
        if value.value == "" and _style(value) is None:
            return self._empty_pin(value, target)
        return self._scalar_span(value, target, "its 'at:'")

    def _empty_pin(self, value: yaml.Node, target: str) -> Span:
        line, column = value.end_mark.line, self._column(value.end_mark)
        if not self._lines[line][:column].rstrip().endswith(":"):
            raise Unwritable("its 'at:' is written in a way fix cannot fill in")
        return Span(line, column, column, " " + target)

    def _pin_insertion(
        self, flow: bool, key: yaml.Node, value: yaml.Node, target: str
    ) -> Span | NewLine:
        line = key.start_mark.line
        between = self._lines[line][self._column(key.end_mark):self._column(value.start_mark)]
        simple = (
            _style(key) in (None, "'", '"') and _style(value) in (None, "'", '"')
            and value.start_mark.index > key.end_mark.index
            and value.end_mark.line == line and between.strip() == ":"
            and not self._lines[line][:self._column(key.start_mark)].rstrip().endswith("?")
        )
        if not simple:
            raise Unwritable("its 'id:' is written in a way fix cannot add an 'at:' after")
        if flow:
            column = self._column(value.end_mark)
            return Span(line, column, column, f", at: {target}")
        return NewLine(line, " " * self._column(key.start_mark) + f"at: {target}")

    def _scalar_span(self, node: yaml.ScalarNode, new: str, what: str = "it") -> Span:
        """The span of the scalar's text between its quotes, counted from its end (an
        anchor or a tag may come before it)."""
        line, end = node.end_mark.line, self._column(node.end_mark)
        style = _style(node)
        quoted = style in ("'", '"')
        last = end - 1 if quoted else end
        first = last - len(node.value)
        text = self._lines[line]
        plain = (
            node.start_mark.line == line and style in (None, "'", '"')
            and first >= self._column(node.start_mark) and text[first:last] == node.value
            and (not quoted or text[first - 1] == style)
        )
        if not plain:
            raise Unwritable(f"{what} is not written as plain text on one line (escapes, "
                             "a block scalar or a line break)")
        return Span(line, first, last, new)

    def _column(self, mark: yaml.Mark) -> int:
        return mark.column + (1 if self._bom and mark.line == 0 else 0)


def _style(node: yaml.Node) -> str | None:
    """A scalar's quote, block indicator or None when plain (libyaml says '' for plain)."""
    return getattr(node, "style", None) or None


def _is_pinned(written: str) -> bool:
    try:
        return parse_ref(written.strip()).pinned
    except RefSyntaxError:
        return True  # not a ref: left as written (the loader reports it)


def _value_of(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((value for name, value in node.value
                 if isinstance(name, yaml.ScalarNode) and name.value == key), None)


def _shared_nodes(root: yaml.Node | None) -> set[int]:
    """The ids of the nodes that stand in more than one place: an anchor and its aliases,
    and every node inside them (``uses: &u [a]`` shares ``a`` too)."""
    seen: set[int] = set()
    anchors: list[yaml.Node] = []
    pending = [root] if root is not None else []
    while pending:
        node = pending.pop()
        if id(node) in seen:
            anchors.append(node)
            continue
        seen.add(id(node))
        pending.extend(_children(node))
    shared: set[int] = set()
    while anchors:
        node = anchors.pop()
        if id(node) not in shared:
            shared.add(id(node))
            anchors.extend(_children(node))
    return shared


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
