"""Read a Markdown article as a reader sees it, for the claims its GitHub permalinks make.

Which lines and columns of the body show links (not code blocks, code spans, HTML comments
or ``<pre>`` blocks, as CommonMark reads them), the permalinks in them, and the text around
each link: its paragraph, or its sentence when the paragraph is long, links reduced to
their labels. The front matter is found here; the loader reads its YAML.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

MAX_LINK_TEXT = 300
"""Longest text of a claim made from a permalink in a Markdown article, in characters."""
LINE_BREAK_RE = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
URL_CHARS = r"[A-Za-z0-9\-._~:/?#@!$&*+,;=%]"
"""What a URL in prose holds: where `find_permalinks` ends one."""
URL_RE = re.compile(r"https://github\.com/" + URL_CHARS + "+")
PERMALINK_RE = re.compile(r"https://github\.com/(?P<repo>[^/]+/[^/]+)/blob/")
IMAGE_SUFFIXES = frozenset((".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".bmp", ".ico",
                            ".avif"))
"""The file names of images: a permalink to one shows a picture, and cites no code."""
_IMG_SOURCE_RE = re.compile(r"<img\s[^<>]*?\bsrc\s*=\s*[\"']?", re.IGNORECASE)
"""An HTML image's tag up to its source."""
URL_TRAILING = ".,;:!?*_~"
"""What ends a URL in prose rather than belonging to it, as GitHub's autolinks read it
(``~~URL~~`` and ``_URL_`` are struck out and emphasised, not part of the path)."""
_BACKTICKS_RE = re.compile(r"`+")
# The marker of a block quote or a list item (and the spaces after it) a line opens with.
_QUOTE_OPEN_RE = re.compile(r" {0,3}> ?")
_ITEM_OPEN_RE = re.compile(r" {0,3}(?:[-*+]|(?P<number>\d{1,9})[.)])(?P<spaces> +|$)")
_SPACES_RE = re.compile(" *")
MAX_CONTAINERS = 100
"""The most block quotes and list items read around a line: a marker past them is text
(a line of 100,000 '>' would cost each line after it as much)."""
_FENCE_RE = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})(?P<info>.*)")
_CLOSING_FENCE_RE = re.compile(r" {0,3}(?P<fence>`{3,}|~{3,})[ \t]*")
_HEADING_RE = re.compile(r"\s*#{1,6}(\s|$)")
_THEMATIC_BREAK_RE = re.compile(r" {0,3}([-*_])(?: *\1){2,} *$")
"""A thematic break (``---``, ``* * *``): a block of one line, which may interrupt a
paragraph, and no list item (``- - -``)."""
_SETEXT_UNDERLINE_RE = re.compile(r" {0,3}(?:=+|-+) *")
"""What makes the paragraph above it a heading (``===``, ``---``) and ends it."""
_REFERENCE_DEFINITION_RE = re.compile(
    r" {0,3}\[(?P<label>[^\[\]]{1,999})\]:[ \t]*<?(?P<url>[^\s>]+)")
# A full ([text][label]), collapsed ([label][]) or shortcut ([label]) reference link; a
# shortcut is not followed by '(' or ':' (an inline link, a definition).
_REFERENCE_USE_RE = re.compile(
    r"!?\[(?P<text>[^\[\]]{1,999})\](?:\[(?P<ref>[^\[\]]{0,999})\]|(?![(:\[]))")
_ATX_OPEN_RE = re.compile(r"#{1,6}(?:[ \t]+|$)")
_ATX_CLOSE_RE = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
"""The marks of an ATX heading (``## Title ##``) around its text."""
_MAX_LABEL, _MAX_DESTINATION, _MAX_TITLE = 500, 2000, 500
"""The longest label, destination and title of an inline link read (see `_inline_links`)."""
_DESTINATION_END_RE = re.compile(r"[)\s>]")
_OPEN_RE, _CLOSE_RE, _QUOTE_MARK_RE = re.compile(r"\["), re.compile(r"\]"), re.compile('"')
_BRACKET_RE = re.compile(r"[\[\]]")
_RAW_HTML_OPEN_RE = re.compile(r"<(?:pre|script|style|textarea)(?:[\s>]|$)", re.IGNORECASE)
_RAW_HTML, _TAGS = "<pre>", "<div>"
"""Two kinds of HTML block read: raw text (``<pre>``, ``<script>``, ...), and one of other
tags (``<div>``, a lone ``</pre>``), whose text a reader sees; the others are hidden to an
end (`_HIDDEN_HTML_ENDS`)."""
_HIDDEN_HTML_RE = re.compile(r"<!--|<\?|<!\[CDATA\[|<![A-Za-z]")
_HIDDEN_HTML_ENDS = {"<!--": "-->", "<?": "?>", "<![CDATA[": "]]>"}
"""CommonMark's HTML blocks of types 2 to 5, that a browser shows nothing of up to their
end (a comment, ``<?php ... ?>``, ``<![CDATA[ ... ]]>``, a declaration ``<!DOCTYPE ...>``),
by their opening: the end of each (a declaration's, '<!' and a letter, is '>')."""
# CommonMark's HTML blocks of types 6 (a block-level tag, which may interrupt a paragraph)
# and 7 (any other tag alone on its line), which run to a blank line.
_BLOCK_TAG_RE = re.compile(
    r"</?(?:address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd"
    r"|details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset"
    r"|h[1-6]|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol"
    r"|optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr"
    r"|track|ul)(?:[ \t>]|/>|$)", re.IGNORECASE)
_ATTRIBUTE = (r"[ \t]+[A-Za-z_:][A-Za-z0-9_.:-]*"
              r"""(?:[ \t]*=[ \t]*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?""")
_LONE_TAG_RE = re.compile(
    rf"(?:<[A-Za-z][A-Za-z0-9-]*(?:{_ATTRIBUTE})*[ \t]*/?>|</[A-Za-z][A-Za-z0-9-]*[ \t]*>)\s*")
Span = tuple[int, int]
"""A [start, stop) range of columns of a line."""
_AUTOLINK_RE = re.compile(r"<(https?://[^<>\s]+)>")
_MAX_REDUCED = 10 * MAX_LINK_TEXT
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


def front_matter_yaml(text: str) -> str | None:
    """A Markdown article's front matter as the loader reads it, with the file's line and
    column numbers; None when it has none (or it is not closed)."""
    lines = LINE_BREAK_RE.split(text)
    close = front_matter_close(lines)
    return None if close is None else front_matter_text(lines, close)


def front_matter_close(lines: list[str]) -> int | None:
    """The index of the line that closes the front matter; None when there is none, or
    it is not closed."""
    if lines[0].rstrip() != "---":
        return None
    return next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)


def front_matter_text(lines: list[str], close: int) -> str:
    # A leading empty line keeps YAML's line numbers equal to the file's.
    return "\n" + "\n".join(lines[1:close])


def visible_lines(lines: list[str], first: int) -> Iterator[tuple[int, str, list[Span]]]:
    """The body's lines whose links a reader sees, each with its inline code and its HTML
    comments blanked (the same length: a column is the line's own), and the spans its
    comments hide (a comment's end at its start included): code blocks, raw-text
    HTML blocks (``<pre>``) and comments (a note to self, a link kept for later) show no
    link. A comment hides what it holds, code and ``<pre>`` included."""
    return _visible_lines(lines, first, _blocks_of(lines, first))


def read_body(lines: list[str], first: int) -> Body:
    """The body of a Markdown article from line ``first`` on, as a reader sees it."""
    blocks = _blocks_of(lines, first)
    shown = list(_visible_lines(lines, first, blocks))
    visible = {index: text for index, text, _ in shown}
    hidden = {index: spans for index, _, spans in shown}
    return Body(lines, first, visible, hidden, blocks)


def _visible_lines(lines: list[str], first: int,
                   blocks: _Blocks) -> Iterator[tuple[int, str, list[Span]]]:
    """`visible_lines`, of a body whose blocks are ``blocks``."""
    paragraph_code = _paragraph_code_blanked(lines, first, blocks)
    comment = False  # a comment opened in a paragraph is open
    for index in range(first, len(lines)):
        line = lines[index]
        shown = blocks.shown.get(index, 0)
        in_block = index in blocks.lines and (not shown or not line[shown:].strip())
        if index in blocks.code or in_block:  # a comment's last line shows what follows its -->
            comment = False  # a block ends a paragraph, and its comment was text
            continue
        if shown or not line.strip():
            comment = False  # the paragraph ended: a comment never closed in it was text
        if comment:  # the line goes on past the comment's end
            end = line.find("-->")
            if end < 0:
                continue
            shown, comment = end + 3, False
        code_blanked = _code_blanked_line(line, index, shown, blocks, paragraph_code)
        spans, comment = _comment_spans(code_blanked)
        yield index, _blanked(code_blanked, spans), ([(0, shown)] if shown else []) + spans


def _code_blanked_line(line: str, index: int, shown: int, blocks: _Blocks,
                       paragraph_code: dict[int, str]) -> str:
    """Line ``index`` from column ``shown`` on, its code spans blanked: as its paragraph
    pairs them, or alone past a comment's end; none in an HTML block of other tags (a
    backtick there is text)."""
    if index in blocks.tags:
        return " " * shown + line[shown:]
    if not shown and index in paragraph_code:
        return paragraph_code[index]
    return _blank_code_spans(" " * shown + line[shown:])


def _paragraph_code_blanked(lines: list[str], first: int, blocks: _Blocks) -> dict[int, str]:
    """The lines of the body's paragraphs (no block holds them), each with its inline code
    blanked as CommonMark pairs backtick runs: across the lines of its paragraph (a code
    span may hold a line break, and a fence indented four past a paragraph is its text)."""
    blanked: dict[int, str] = {}
    paragraph: list[int] = []
    for index in range(first, len(lines) + 1):
        text = (index < len(lines) and bool(lines[index].strip())
                and not any(index in hidden for hidden in (blocks.lines, blocks.code, blocks.tags)))
        if paragraph and (not text or index not in blocks.continued):
            blanked.update(_code_blanked(lines, paragraph))
            paragraph = []
        if text:
            paragraph.append(index)
    return blanked


def _code_blanked(lines: list[str], paragraph: list[int]) -> dict[int, str]:
    """The lines of ``paragraph`` with its code spans blanked, by index."""
    joined = "\n".join(lines[index] for index in paragraph)
    blanked, at = _blank_code_spans(joined), 0
    by_index = {}
    for index in paragraph:
        by_index[index] = blanked[at:at + len(lines[index])]
        at += len(lines[index]) + 1
    return by_index


def markdown_visible_lines(text: str) -> dict[int, str]:
    """A Markdown article's body lines that a reader sees, by 0-based index, with inline
    code and HTML comments blanked (see `visible_lines`): where `fix` may rewrite a
    permalink, as the loader found it."""
    lines = LINE_BREAK_RE.split(text)
    close = front_matter_close(lines)
    seen = visible_lines(lines, 0 if close is None else close + 1)
    return {index: visible for index, visible, _ in seen}


def _closes_raw_html(line: str) -> bool:
    """Whether a raw-text HTML block ends on ``line``: at any of the four end tags, as
    CommonMark ends it."""
    lowered = line.lower()
    return any(tag in lowered for tag in ("</pre>", "</script>", "</style>", "</textarea>"))


def _comment_spans(line: str) -> tuple[list[Span], bool]:
    """Where ``line``'s HTML comments (``<!-- ... -->``) are, and the other inline HTML a
    browser shows nothing of (``<?...?>``, ``<!DOCTYPE ...>``, ``<![CDATA[...]]>``) closed
    on the line (one that is not is text), and whether a comment is still open at its end."""
    spans: list[Span] = []
    position, unclosed = 0, set()  # the openings that nothing after closes
    while (opening := _HIDDEN_HTML_RE.search(line, position)) is not None:
        kind, start = opening[0], opening.start()
        if kind == "<!--":
            end = line.find("-->", start)
            if end < 0:
                spans.append((start, len(line)))
                return spans, True
            end += 3
        else:
            closing = _HIDDEN_HTML_ENDS.get(kind, ">")
            end = -1 if kind in unclosed else line.find(closing, opening.end())
            if end < 0:  # text; and searched once: linear in the line
                unclosed.add(kind)
                position = opening.end()
                continue
            end += len(closing)
        spans.append((start, end))
        position = end
    return spans, False


def _blanked(line: str, spans: list[Span]) -> str:
    """``line`` with ``spans`` (in order, apart) blanked."""
    pieces, last = [], 0
    for start, stop in spans:
        pieces += [line[last:start], " " * (stop - start)]
        last = stop
    return "".join(pieces) + line[last:]


def _without(line: str, spans: list[Span]) -> str:
    """``line`` without ``spans`` (in order, apart), and without the blanks before one
    that blanks or the line's end follow (``A <!-- c --> B`` is ``A B``)."""
    pieces, last = [], 0
    for start, stop in spans:
        piece = line[last:start]
        pieces.append(piece.rstrip(" \t") if line[stop:stop + 1] in ("", " ", "\t") else piece)
        last = stop
    return "".join(pieces) + line[last:]


Containers = tuple[int, ...]
"""The block quotes and list items a line is in, outermost first: a block quote (_QUOTE),
or a list item by the width of its marker and the spaces after it (where its content
starts, past where the content of the container around it does)."""
_QUOTE = 0


def _indent(line: str, at: int) -> int:
    """How many spaces ``line`` holds from column ``at``."""
    spaces = _SPACES_RE.match(line, at)
    return spaces.end() - at if spaces else 0


def _continued(line: str, containers: Containers) -> tuple[int, int]:
    """How many of ``containers`` the tab-expanded ``line`` goes on (a block quote on its
    '>' at most three columns in, a list item on its content's indentation, or a blank),
    and the column past their markers and indentation."""
    at, text_end = 0, len(line.rstrip())
    if not text_end:  # blank: as cheap however many list items it goes on
        return (containers.index(_QUOTE) if _QUOTE in containers else len(containers)), 0
    for depth, container in enumerate(containers):
        if container == _QUOTE:
            quote = _QUOTE_OPEN_RE.match(line, at)
            if quote is None:
                return depth, at
            at = quote.end()
        elif at < text_end:
            if _indent(line, at) < container:
                return depth, at
            at += container
    return len(containers), at


def _opened(line: str, at: int, in_paragraph: bool, room: int) -> tuple[Containers, int]:
    """The block quotes and list items, ``room`` at most, the tab-expanded ``line`` opens
    from column ``at``, and the column past their markers. ``in_paragraph``: a paragraph
    goes on there, which an empty list item or one numbered other than 1 does not
    interrupt."""
    opened: Containers = ()
    while len(opened) < room:
        quote = _QUOTE_OPEN_RE.match(line, at)
        if quote is not None:
            opened, at = opened + (_QUOTE,), quote.end()
            continue
        if _THEMATIC_BREAK_RE.match(line, at):
            return opened, at
        item = _ITEM_OPEN_RE.match(line, at)
        blank = item is not None and not line[item.end():].strip()
        if item is None or (in_paragraph and not opened and _stays_text(item, blank)):
            return opened, at
        spaces = len(item["spaces"])
        width = item.end() - at - (spaces - 1 if blank or spaces > 4 else 0)
        opened, at = opened + (width,), min(at + width, len(line))
    return opened, at


def _stays_text(item: re.Match[str], blank: bool) -> bool:
    """Whether a list marker that a paragraph's line would go on with is its text: an
    empty item's, or one numbered other than 1."""
    return blank or (item["number"] is not None and int(item["number"]) != 1)


@dataclass(frozen=True)
class _Contained:
    """A block open in containers, that each of its lines must go on."""

    containers: Containers

    def content(self, line: str) -> str | None:
        """``line`` past the markers and indentation of the block's containers; None
        when the line is not in them (a block quote or list item ended, and the block
        with it). A blank line goes on a list item."""
        line = line.expandtabs(4)
        depth, at = _continued(line, self.containers)
        if depth < len(self.containers):
            return None
        return line[at:] if line[at:].strip() else ""


@dataclass(frozen=True)
class _Html(_Contained):
    """An open HTML block: a raw-text one such as ``<pre>`` (_RAW_HTML), one of other tags
    (_TAGS), or one hidden to its end, by its opening (``<!--``, ``<?``, ``<![CDATA[``, or
    ``<!`` for a declaration)."""

    kind: str


@dataclass(frozen=True)
class _Fence(_Contained):
    """An open fenced code block: its fence."""

    fence: str

    def closes(self, content: str) -> bool:
        """Whether a line whose content is ``content`` closes the fence: a fence of its
        character at least as long, at most three columns in, with no info."""
        closing = _CLOSING_FENCE_RE.fullmatch(content)
        return closing is not None and closing["fence"].startswith(self.fence)


def _block_opened(content: str, containers: Containers,
                  in_paragraph: bool = False) -> _Block | None:
    """The block a line whose ``content`` (past its containers' markers, at most three
    columns in) opens in ``containers``: a fence, a raw-text HTML block (``<pre>``), a
    comment (or a ``<?...?>``, ``<!DOCTYPE ...>`` or ``<![CDATA[...]]>``: hidden to its
    end), or an HTML block of other tags (a lone tag but a block-level one does not
    interrupt a paragraph, ``in_paragraph``); None for none."""
    start = _indent(content, 0)
    fence = _FENCE_RE.match(content, start)
    if fence is not None:
        backtick_in_info = fence["fence"][0] == "`" and "`" in fence["info"]
        return None if backtick_in_info else _Fence(containers, fence["fence"])
    if _RAW_HTML_OPEN_RE.match(content, start):
        return _Html(containers, _RAW_HTML)
    hidden = _HIDDEN_HTML_RE.match(content, start)
    if hidden is not None:
        return _Html(containers, hidden[0] if hidden[0] in _HIDDEN_HTML_ENDS else "<!")
    lone_tag = not in_paragraph and _LONE_TAG_RE.fullmatch(content, start)
    return _Html(containers, _TAGS) if lone_tag or _BLOCK_TAG_RE.match(content, start) else None


@dataclass
class _Blocks:
    """The lines of a body's fenced code blocks and HTML blocks (fences and tags included),
    and for a comment's last line, the column past its ``-->``: a reader sees what
    follows; the lines of its indented code blocks; the lines that go on the paragraph
    of the line before (a lazy line included); the lines of its HTML blocks of other
    tags (shown, as they are written: a backtick there is text); and for each line of a
    paragraph or heading, where its text starts (past its containers' markers), and which
    of those are ATX headings (``## Title``)."""

    lines: set[int] = field(default_factory=set)
    shown: dict[int, int] = field(default_factory=dict)
    code: set[int] = field(default_factory=set)
    continued: set[int] = field(default_factory=set)
    tags: set[int] = field(default_factory=set)
    text_at: dict[int, int] = field(default_factory=dict)
    headings: set[int] = field(default_factory=set)


_Block = _Fence | _Html
"""An open block: a fence or an HTML block."""


@dataclass
class _Reading:
    """Where a pass over a body stands: the block open (None: none), the block quotes and
    list items open, whether a paragraph is open (indented four, a line is its text
    rather than code), and where in the containers a list item opened empty on the line
    before is (None: none), which a blank line ends."""

    block: _Block | None = None
    containers: Containers = ()
    paragraph_open: bool = False
    empty_item: int | None = None


def _blocks_of(lines: list[str], first: int) -> _Blocks:
    """The fenced code blocks, HTML blocks (raw text, ``<pre>``, and comments) and indented
    code blocks of a body, found in one pass as CommonMark finds them: a block that starts
    a line runs to its end (an unclosed one to the body's, or to its block quote's or list
    item's), and what it holds is text: a fence in a comment or ``<pre>`` opens
    nothing, nor does a ``<!--`` or ``<pre>`` in a fence. A URL in a fence is code shown,
    not a link (a header pasted from vLLM's sources, ``# Adapted from
    https://github.com/...``). Indented code is indented four columns past the content of
    the block quotes and list items it is in, and not the continuation of a paragraph (a
    block ends one)."""
    blocks, reading = _Blocks(), _Reading()
    for index in range(first, len(lines)):
        line, block = lines[index], reading.block
        content = None if block is None else block.content(line)
        if content is None or (not content and isinstance(block, _Html) and block.kind == _TAGS):
            block = reading.block = None  # its container ended before the line, or a blank
        if block is not None:
            _read_in_block(blocks, reading, block, index, line, content)
        else:
            _read_outside_blocks(blocks, reading, index, line)
    return blocks


def _read_in_block(blocks: _Blocks, reading: _Reading, block: _Block, index: int, line: str,
                   content: str | None = None, opening: bool = False) -> None:
    """Read a line of ``block``, open (``opening``: opened on the line; ``content``: the
    line past the block's containers, which it goes on): it ends a paragraph, and may end
    the block (a comment or ``<pre>`` its opening line)."""
    shows_text = isinstance(block, _Html) and block.kind == _TAGS
    (blocks.tags if shows_text else blocks.lines).add(index)
    reading.paragraph_open = False
    end = _block_end(block, line, content, opening)
    if end is not None:
        if isinstance(block, _Html) and block.kind != _RAW_HTML:
            blocks.shown[index] = end
        reading.block = None


def _read_outside_blocks(blocks: _Blocks, reading: _Reading, index: int, line: str) -> None:
    """Read a line that no block holds, past the block quotes and list items it goes on
    and those it opens: a blank one, a lazy or indented line of the open paragraph,
    indented code, a block's opening, or text (of a paragraph, a heading)."""
    expanded = line.expandtabs(4)
    depth, at = _continued(expanded, reading.containers)
    in_paragraph = reading.paragraph_open and depth == len(reading.containers)
    opened, at = _opened(expanded, at, in_paragraph, MAX_CONTAINERS - depth)
    content = expanded[at:]
    empty_item, reading.empty_item = reading.empty_item, None
    if in_paragraph and not opened and _SETEXT_UNDERLINE_RE.fullmatch(content):
        reading.paragraph_open = False  # the paragraph is a heading's text, and ends
        return
    if reading.paragraph_open and not opened and content.strip() and _goes_on(content):
        if not content.lstrip().startswith("|"):  # a table's row is a paragraph of its own
            blocks.continued.add(index)
        blocks.text_at[index] = _column_of(line, at)
        return  # a lazy line keeps the containers that it did not go on
    reading.containers = reading.containers[:depth] + opened
    if not content.strip():
        reading.paragraph_open = False
        if opened and opened[-1] != _QUOTE:
            reading.empty_item = len(reading.containers) - 1
        elif empty_item is not None and not opened:  # an item opens with one blank line at most
            reading.containers = reading.containers[:empty_item]
    elif _indent(content, 0) >= 4:  # no paragraph goes on: indented code
        blocks.code.add(index)
        reading.paragraph_open = False
    elif (block := _block_opened(content, reading.containers)) is not None:
        reading.block = block
        _read_in_block(blocks, reading, block, index, line, opening=True)
    else:  # a heading or a thematic break is a block of one line
        heading = _HEADING_RE.match(content) is not None
        if heading:
            blocks.headings.add(index)
        blocks.text_at[index] = _column_of(line, at)
        reading.paragraph_open = not (heading or _THEMATIC_BREAK_RE.match(content))


def _column_of(line: str, expanded: int) -> int:
    """The index in ``line`` of the character at column ``expanded`` of the line with its
    tabs expanded (a tab part of which is before that column: the tab's)."""
    if "\t" not in line:
        return expanded
    column = 0
    for index, character in enumerate(line):
        column += 4 - column % 4 if character == "\t" else 1
        if column > expanded:
            return index
    return len(line)


def _goes_on(content: str) -> bool:
    """Whether a line whose ``content`` is past the containers it goes on and opens no
    other continues an open paragraph: indented four, or text that opens no block."""
    return _indent(content, 0) >= 4 or not (
        _HEADING_RE.match(content) or _THEMATIC_BREAK_RE.match(content)
        or _block_opened(content, (), in_paragraph=True) is not None)


def _block_end(block: _Block, line: str, content: str | None, opening: bool) -> int | None:
    """The column past the end of ``block`` on ``line``, None when the block goes on;
    ``content``: the line past the block's containers (None on its opening line);
    ``opening``: the block opened on the line. A fence closes at one at least as long, with
    no info (never on its own line); ``<pre>`` at any raw-text end tag; a comment at its
    ``-->`` (``<?`` at ``?>``, ...: `_HIDDEN_HTML_ENDS`); one of other tags not on a line
    (at a blank one, before it)."""
    if isinstance(block, _Fence):
        return len(line) if content is not None and block.closes(content) else None
    if block.kind == _TAGS:
        return None
    if block.kind == _RAW_HTML:
        return len(line) if _closes_raw_html(line) else None
    closing = _HIDDEN_HTML_ENDS.get(block.kind, ">")
    end = line.find(closing, line.find(block.kind) if opening else 0)
    return None if end < 0 else end + len(closing)


def code_span_ranges(line: str) -> list[tuple[int, int]]:
    """Where the inline code spans of a Markdown line are (their permalinks are code): as
    CommonMark pairs them, a run of backticks opens one that the next run of the same
    length closes; a run that none closes is text. Linear in the runs (a regex that
    backtracks over unclosed runs took minutes on a hostile line)."""
    runs = [match.span() for match in _BACKTICKS_RE.finditer(line)]
    by_length: dict[int, list[int]] = {}
    for number, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(number)
    spans, number = [], 0
    while number < len(runs):
        start, end = runs[number]
        same = by_length[end - start]
        later = bisect.bisect_right(same, number)
        if later == len(same):
            number += 1
            continue
        closer = same[later]
        spans.append((start, runs[closer][1]))
        number = closer + 1
    return spans


def _blank_code_spans(line: str) -> str:
    """``line`` with its inline code spans blanked (the same length)."""
    return _blanked(line, code_span_ranges(line))


def find_permalinks(
    line: str, before: str = "", after: str = "", *, defined: Collection[str] = ()
) -> list[str]:
    """The GitHub ``/blob/`` URLs in one Markdown line, trailing punctuation removed, but
    those that show a picture (`_shows_a_picture`). A link's destination (``[text](URL)``,
    ``<URL>``) is a URL to its end, raw non-ASCII paths included; in prose a URL ends at
    the first character no URL holds, so the Chinese text that often follows it with no
    space is not taken in. ``before``: the end of the lines of the paragraph before
    ``line``, where an image's alt text or an ``<img`` tag may start; ``after``: the start
    of those after it, where an image's alt text may end; ``defined``: the article's
    reference labels (`_reference_key`), which make ``![alt][label]`` an image."""
    matches = list(URL_RE.finditer(line))
    if not matches:
        return []
    ends = _destination_ends(line)
    starts_and_urls = ((match.start(), line[match.start():max(match.end(),
                                                              ends.get(match.start(), 0))])
                       for match in matches)
    # joined once: each URL's joining them copied the line (quadratic in its URLs)
    text, offset = (f"{before}\n{line}", len(before) + 1) if before else (line, 0)
    text += f"\n{after}" if after else ""
    return [url.rstrip(URL_TRAILING) for start, url in starts_and_urls
            if PERMALINK_RE.match(url)
            and not _shows_a_picture(text, offset + start, url, defined)]


def _shows_a_picture(text: str, at: int, url: str, defined: Collection[str]) -> bool:
    """Whether the URL at ``at`` of ``text`` (a line and the lines of its paragraph before
    it) is an image's source (``![alt](URL)``, ``<img src="URL">``), is in an image's alt
    text (``![see [x](URL)](fig.png)``: a reader sees the picture, not the link) or names an
    image file (``.png``): a picture, not code cited."""
    return (_is_image_destination(text, at) or _is_img_source(text, at)
            or _names_an_image(url) or _in_alt_text(text, at, defined))


def _in_alt_text(text: str, at: int, defined: Collection[str]) -> bool:
    """Whether column ``at`` of ``text`` is in the alt text of an inline or reference image:
    its '![' found by balancing brackets back from ``at``, its ']' (then '(', or a label
    ``defined``) forward, over _MAX_LABEL characters each way at most."""
    if text.rfind("![", max(at - _MAX_LABEL - 2, 0), at) < 0:  # most URLs: no image near
        return False
    opening = _label_start(text, at)
    if opening is None or opening == 0 or not _marks_an_image(text, opening - 1):
        return False
    depth = 0
    for bracket in _BRACKET_RE.finditer(text, at, at + _MAX_LABEL):
        if bracket[0] == "[":
            depth += 1
        elif depth:
            depth -= 1
        else:
            return text.startswith("(", bracket.end()) or _names_a_reference(
                text, bracket.end(), text[opening + 1:bracket.start()], defined)
    return False


def _names_a_reference(text: str, at: int, alt: str, defined: Collection[str]) -> bool:
    """Whether ``[label]`` (or ``[]``: the alt text is the label) at column ``at`` names a
    reference ``defined``: else, as CommonMark reads it, the brackets before are text and
    a link in them is a link (``![a [b](URL)][nodef]``)."""
    if not text.startswith("[", at):
        return False
    close = text.find("]", at + 1, at + 2 + _MAX_LABEL)
    if close < 0 or "[" in text[at + 1:close]:
        return False
    return _reference_key(text[at + 1:close] or alt) in defined


def _is_image_destination(text: str, start: int) -> bool:
    """Whether column ``start`` of ``text`` starts the destination of ``![alt](...)``."""
    destination = start - text.endswith("<", 0, start)  # ](<URL>), ]( URL), ]( <URL>)
    destination -= text.endswith(" ", 0, destination)
    close = destination - 2
    if close < 1 or not text.startswith("](", close):
        return False
    opening = _label_start(text, close)
    return opening is not None and opening > 0 and _marks_an_image(text, opening - 1)


def _label_start(text: str, close: int) -> int | None:
    """Where the '[' is that the ']' at ``close`` closes, the brackets between balanced (``![a
    [b] c](URL)``), at most _MAX_LABEL characters before it; None when there is none."""
    first = max(close - _MAX_LABEL - 1, 0)
    opening = text.rfind("[", first, close)
    if opening < 0 or text.find("]", opening, close) < 0:
        return None if opening < 0 else opening
    depth = 0
    for bracket in reversed(list(_BRACKET_RE.finditer(text, first, close))):
        if bracket[0] == "]":
            depth += 1
        elif depth == 0:
            return bracket.start()
        else:
            depth -= 1
    return None


def _marks_an_image(line: str, index: int) -> bool:
    """Whether ``line[index]`` is the '!' of an image: not escaped (``\\![x](URL)`` is a
    '!' and a link)."""
    escaped = index
    while escaped > 0 and line[escaped - 1] == "\\":  # not rstrip: linear in the line
        escaped -= 1
    return line[index] == "!" and (index - escaped) % 2 == 0


def _is_img_source(line: str, start: int) -> bool:
    """Whether column ``start`` of ``line`` starts the source of ``<img src="...">``."""
    tag = line.rfind("<", max(start - _MAX_LABEL, 0), start)
    return tag >= 0 and _IMG_SOURCE_RE.fullmatch(line, tag, start) is not None


def _names_an_image(url: str) -> bool:
    """Whether ``url``'s path ends with the name of an image file, whatever its case."""
    name = url.partition("#")[0].partition("?")[0].rpartition("/")[2]
    dot = name.rfind(".")
    return dot > 0 and name[dot:].lower() in IMAGE_SUFFIXES


def _destination_ends(line: str) -> dict[int, int]:
    """Where each link destination of the line ends, by where it starts."""
    ends = dict(link.destination for link in _inline_links(line))
    ends.update((match.start(1), match.end(1)) for match in _AUTOLINK_RE.finditer(line))
    return ends


class _InlineLink(NamedTuple):
    """An inline link of a text: where it starts and ends, its label, and where its
    destination starts and ends."""

    start: int
    end: int
    label: str
    destination: tuple[int, int]


class _Next:
    """Where some characters of a text stand, to find the next one from an index in log
    time (scanning for it would be linear in the distance)."""

    def __init__(self, found: list[int]) -> None:
        self.found = found

    def at_or_after(self, index: int) -> int | None:
        later = bisect.bisect_left(self.found, index)
        return self.found[later] if later < len(self.found) else None


class _Spans:
    """Spans of a text (its code spans), in order and apart, to tell in log time whether
    one holds a position."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.spans = spans
        self.starts = [start for start, _ in spans]

    def hold(self, position: int) -> bool:
        index = bisect.bisect_right(self.starts, position) - 1
        return index >= 0 and position < self.spans[index][1]

    def outside(self, pattern: re.Pattern[str], text: str) -> list[int]:
        """Where ``pattern`` matches in ``text``, but not in the spans."""
        return [match.start() for match in pattern.finditer(text) if not self.hold(match.start())]


_NO_SPANS = _Spans([])


def _inline_links(text: str, code: _Spans = _NO_SPANS) -> list[_InlineLink]:
    """The inline links of ``text``, ``[label](<destination> "title")`` (a space allowed
    after '(' and before ')', '!' before an image), left to right, none inside another:
    a label runs from the first '[' after the last ']' (and the last link) to the next
    ']'. A '[' or ']' in the ``code`` spans is text (code spans bind tighter than links).
    Linear in the text: each ']' is looked at once, and where a destination or a title
    ends is looked up, not scanned for (a regex scanned up to 2,000 characters from each
    '[': a 2 MB line of ``[a](`` took 98 s)."""
    if "](" not in text:
        return []
    opens = _Next(code.outside(_OPEN_RE, text))
    ends = _Next([match.start() for match in _DESTINATION_END_RE.finditer(text)])
    quotes = _Next([match.start() for match in _QUOTE_MARK_RE.finditer(text)])
    links: list[_InlineLink] = []
    after = 0  # where the next label may start: past the last ']' and the last link
    for close in code.outside(_CLOSE_RE, text):
        if close < after:
            continue
        label = opens.at_or_after(max(after, close - 1 - _MAX_LABEL))
        after = close + 1
        if label is None or label > close or text[close + 1:close + 2] != "(":
            continue
        tail = _link_tail(text, close + 2, ends, quotes)
        if tail is not None:
            destination, after = tail
            start = label - 1 if label and _marks_an_image(text, label - 1) else label
            links.append(_InlineLink(start, after, text[label + 1:close], destination))
    return links


_Tail = tuple[tuple[int, int], int]


def _link_tail(text: str, at: int, ends: _Next, quotes: _Next) -> _Tail | None:
    r"""Where the destination of the link whose '(' ends before ``at`` starts and ends,
    and where the link ends; None when it is no link. The same choices as the regex
    ``( ?<?([^)\s>]{0,2000})>?(?: "[^"]{0,500}")? ?\)`` makes, in the same order."""
    first = at + text.startswith(" ", at)
    tries = [first + 1, first] if text.startswith("<", first) else [first]
    for start in tries + ([at] if first > at else []):
        stop = ends.at_or_after(start)
        stop = len(text) if stop is None else stop
        end = _after_destination(text, stop, quotes) if stop - start <= _MAX_DESTINATION else None
        if end is not None:
            return (start, stop), end
    return None


def _after_destination(text: str, stop: int, quotes: _Next) -> int | None:
    """Where a link ends whose destination ends at ``stop``: after an optional '>', an
    optional `` "title"`` and an optional space, at ')'; None when it does not."""
    at = stop + text.startswith(">", stop)
    if text.startswith(' "', at):
        close = quotes.at_or_after(at + 2)
        if close is not None and close - (at + 2) <= _MAX_TITLE:
            end = _closing_parenthesis(text, close + 1)
            if end is not None:
                return end
    return _closing_parenthesis(text, at)


def _closing_parenthesis(text: str, at: int) -> int | None:
    if text.startswith(" )", at):
        return at + 2
    return at + 1 if text.startswith(")", at) else None


@dataclass(frozen=True)
class _Paragraph:
    """One paragraph of a Markdown body: its lines joined, and where each line starts in it."""

    start: int
    parts: list[str]
    offsets: list[int]
    text: str
    reduced: str
    sentence_ends: list[int]
    sentence_starts: list[int]
    reduced_sentences: dict[int, _Reduced] = field(default_factory=dict)

    def sentence_at(self, position: int) -> str:
        """The sentence holding `position`, links reduced to their labels; a long one is
        cut to a window around `position` ("…"), after the links are reduced (a window of
        the raw text may start inside a URL)."""
        i = min(bisect.bisect_right(self.sentence_ends, position), len(self.sentence_ends) - 1)
        first = self.sentence_starts[i]
        if i not in self.reduced_sentences:  # once per sentence: it may hold many links
            self.reduced_sentences[i] = _Reduced.of(self.text[first:self.sentence_ends[i]])
        reduced = self.reduced_sentences[i]
        sentence, where = reduced.text, reduced.position(position - first)
        if len(sentence) <= MAX_LINK_TEXT:
            return sentence.strip()
        start = max(where - MAX_LINK_TEXT // 3, 0)
        end = min(start + MAX_LINK_TEXT - 2, len(sentence))
        return ("…" if start else "") + sentence[start:end] + ("…" if end < len(sentence) else "")


class Body:
    """A Markdown body split into paragraphs once (each link's text is then cheap to find);
    ``visible`` holds its lines as a reader sees them (`visible_lines`): a line it does not
    hold (code, a comment, ``<pre>``) is a block of its own, not text of the paragraph
    around it; ``blocks``: its blocks (`_blocks_of`): which lines go on the paragraph of the
    line before, where each line's text starts."""

    def __init__(
        self, lines: list[str], first: int, visible: dict[int, str],
        hidden: dict[int, list[Span]], blocks: _Blocks,
    ) -> None:
        self.lines = lines
        self.visible = visible
        self.hidden = hidden  # the spans of each line that its comments hide
        self.blocks = blocks
        continued = blocks.continued
        self.starts: dict[int, int] = {}
        for index in range(first, len(lines)):
            edge = index not in visible or index - 1 not in visible  # of a hidden block
            new = index == first or edge or index not in continued
            self.starts[index] = index if new else self.starts[index - 1]
        self.cache: dict[int, _Paragraph] = {}
        self.uses: dict[str, tuple[int, str]] | None = None
        self.pictured: set[str] = set()  # the labels of images (``![alt][label]``)
        self.defined: frozenset[str] | None = None

    def permalinks(self, index: int) -> list[str]:
        """The permalinks of line ``index`` (`find_permalinks`), but the URL of a reference
        definition that only images use (``![alt][fig]``): a picture's source."""
        visible = self.visible[index]
        if URL_RE.search(visible) is None:  # most lines: the lines before it are not read
            return []
        urls = find_permalinks(visible, self._before(index), self._after(index),
                               defined=self._defined())
        definition = _REFERENCE_DEFINITION_RE.match(self.lines[index])
        if definition is None or not self._only_images_use(definition["label"]):
            return urls
        return [url for url in urls if url != definition["url"]]

    def _before(self, index: int) -> str:
        """The visible lines of the paragraph before line ``index``, joined, back to one
        that reaches as far back as an image's alt text or tag may open."""
        lines: list[str] = []
        earlier, length = index, 0
        while earlier > self.starts[index] and length <= _MAX_LABEL + 2:
            earlier -= 1
            lines.append(self.visible[earlier])
            length += len(lines[-1]) + 1
        return "\n".join(reversed(lines))

    def _after(self, index: int) -> str:
        """The visible lines of the paragraph after line ``index``, joined, on to one that
        reaches as far as an image's alt text opened before may close."""
        lines: list[str] = []
        later, length = index + 1, 0
        while self.starts.get(later) == self.starts[index] and length <= _MAX_LABEL + 2:
            lines.append(self.visible[later])
            length += len(lines[-1]) + 1
            later += 1
        return "\n".join(lines)

    def _defined(self) -> frozenset[str]:
        """The reference labels the article defines (``[label]: URL``), once."""
        if self.defined is None:
            self.defined = frozenset(
                _reference_key(definition["label"]) for index in self.visible
                if (definition := _REFERENCE_DEFINITION_RE.match(self.lines[index])))
        return self.defined

    def _only_images_use(self, label: str) -> bool:
        return self._use_of(label) is None and _reference_key(label) in self.pictured

    def text_of_link(self, index: int, url: str) -> str:
        """The text around the link to ``url`` on line ``index``; for a link reference
        definition (``[label]: URL``), the text around the first link that uses it."""
        definition = _REFERENCE_DEFINITION_RE.match(self.lines[index])
        if definition is not None and definition["url"] == url:
            use = self._use_of(definition["label"])
            if use is not None:
                return self.link_text(*use)
            return self._text_in(self._line_alone(index), index, url)  # not its neighbours'
        return self.link_text(index, url)

    def _use_of(self, label: str) -> tuple[int, str] | None:
        """The line of the first link to reference ``label`` (``[text][label]``,
        ``[label][]`` or ``[label]``; an image, ``![alt][label]``, is no link), and that
        link's text."""
        if self.uses is None:  # once: an article may define many references
            self.uses = {}
            for index, visible in self.visible.items():
                line = self.lines[index]
                for match in _REFERENCE_USE_RE.finditer(line):
                    bang = match[0].startswith("!")  # an image's, unless escaped
                    image = bang and _marks_an_image(line, match.start())
                    if visible[match.start() + bang] != "[":  # in code or a comment
                        continue
                    key = _reference_key(match["ref"] or match["text"])
                    if image:
                        self.pictured.add(key)
                    else:
                        self.uses.setdefault(key, (index, match[0]))
        return self.uses.get(_reference_key(label))

    def link_text(self, index: int, url: str) -> str:
        """The text around a link on line `index`: its paragraph, or else its sentence."""
        return self._text_in(self._paragraph(self.starts[index]), index, url)

    def _text_of(self, index: int) -> str:
        """Line ``index`` as a reader sees it in its paragraph or heading: past its block
        quotes' and list items' markers, without its comments (or a heading's marks)."""
        line, at = self.lines[index], self.blocks.text_at.get(index, 0)
        text = _without(" " * at + line[at:], self.hidden.get(index, [])).strip()
        if index in self.blocks.headings:
            text = _ATX_CLOSE_RE.sub("", _ATX_OPEN_RE.sub("", text, count=1))
        return text

    def _line_alone(self, index: int) -> _Paragraph:
        """Line `index` as a paragraph of its own."""
        return _make_paragraph(index, [_without(self.lines[index],
                                                self.hidden.get(index, [])).strip()])

    @staticmethod
    def _text_in(paragraph: _Paragraph, index: int, url: str) -> str:
        """The text around a link on line `index` of `paragraph`: all of it, or else its
        sentence."""
        if len(paragraph.reduced) <= MAX_LINK_TEXT:
            return paragraph.reduced
        row = index - paragraph.start
        position = paragraph.offsets[row] + max(paragraph.parts[row].find(url), 0)
        return paragraph.sentence_at(position)

    def _paragraph(self, start: int) -> _Paragraph:
        if start not in self.cache:
            end = start + 1
            while end < len(self.lines) and self.starts.get(end) == start:
                end += 1
            parts = [self._text_of(index) for index in range(start, end)]
            self.cache[start] = _make_paragraph(start, parts)
        return self.cache[start]


def _make_paragraph(start: int, parts: list[str]) -> _Paragraph:
    text, offsets = _join_lines(parts)
    sentence_starts, sentence_ends = [0], []
    for boundary in _SENTENCE_END_RE.finditer(text):
        sentence_ends.append(boundary.start())
        sentence_starts.append(boundary.end())
    sentence_ends.append(len(text))
    reduced = _Reduced.of(text).text.strip() if len(text) <= _MAX_REDUCED else text
    return _Paragraph(start, parts, offsets, text, reduced, sentence_ends, sentence_starts)


def _reference_key(label: str) -> str:
    """A link label as CommonMark matches labels: case and inner white space aside."""
    return " ".join(label.split()).casefold()


def _join_lines(parts: list[str]) -> tuple[str, list[int]]:
    """Join wrapped lines with a space, or with nothing between two wide (CJK) characters.

    Also returns where each part starts in the joined text.
    """
    pieces: list[str] = []
    offsets: list[int] = []
    length, last = 0, ""
    for part in parts:
        joint = (
            "" if not pieces or (last and part and _is_wide(last) and _is_wide(part[0])) else " "
        )
        pieces.append(joint + part)
        offsets.append(length + len(joint))
        length += len(joint) + len(part)
        last = part[-1] if part else last
    return "".join(pieces), offsets


def _is_wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in ("W", "F")


@dataclass(frozen=True)
class _Reduced:
    """A text with its links reduced to their labels, and where its links were: (start,
    end) in the text and (start, end) of their labels in the reduced text."""

    text: str
    raw: list[tuple[int, int]]
    labels: list[tuple[int, int]]

    @classmethod
    def of(cls, text: str) -> _Reduced:
        pieces: list[str] = []
        raw, labels = [], []
        length = last = 0
        for link in _inline_links(text, _Spans(code_span_ranges(text))):
            length += link.start - last
            pieces += [text[last:link.start], link.label]
            raw.append((link.start, link.end))
            labels.append((length, length + len(link.label)))
            length += len(link.label)
            last = link.end
        pieces.append(text[last:])
        return cls(_unwrap_autolinks("".join(pieces)), raw, labels)

    def position(self, raw: int) -> int:
        """About where ``raw`` of the text is in the reduced text (in a link: its label)."""
        index = bisect.bisect_right(self.raw, (raw, float("inf"))) - 1
        if index < 0:
            return raw
        (_, end), (label_start, label_end) = self.raw[index], self.labels[index]
        return label_start if raw < end else label_end + raw - end


def _unwrap_autolinks(text: str) -> str:
    """``text`` with its autolinks (``<https://…>``) unwrapped, but not in its code spans."""
    code = _Spans(code_span_ranges(text))
    return _AUTOLINK_RE.sub(lambda link: link[0] if code.hold(link.start()) else link[1], text)
