"""Fingerprints of a symbol's source span.

* ``exact``: a hash of the span's bytes.
* ``normalized``: a hash of the span with comments and docstrings removed, white space
  outside string literals removed (line continuations included), and a trailing comma
  dropped where a line break separates it from the closing bracket (the "magic trailing
  comma" a formatter adds when it splits a call over several lines; comments may stand
  between them; a one-element tuple's is kept). A symbol that was only re-commented,
  re-documented or reformatted keeps its normalized fingerprint; so does one whose
  statements nest differently (``;`` is dropped too): where statements start and blocks
  end is compared by `annotations.layout` when two fingerprints are equal. A string
  literal is kept as written, so quote style, implicit concatenation and white
  space inside an f-string's fields count, as do redundant parentheses and a number's
  spelling (``1e3``, ``1_000``): Python's ``ast`` calls such code equal.
* ``shape`` (classes): a hash of the class header and its members' kinds, names and
  normalized signatures, so a changed method body leaves it alone and a changed
  interface does not.
"""

from __future__ import annotations

import hashlib
import keyword
import math
import re
from collections.abc import Iterable

from indexer.literals import LITERAL, WORD_BYTES, blanked_in_place

_RARE_NOISE = re.compile(rb",(?=[ \t]*\r?\n\s*[)\]}])|\\\r?\n")
_CONTINUATION = re.compile(rb"\\\r?\n")
_WHITE_SPACE = b" \t\n\r\x0b\x0c"  # what \s matches in a bytes pattern
_LAYOUT = _WHITE_SPACE + b";"  # `annotations.layout` tells statements apart instead
# A comma that only line breaks, white space and comments separate from a closing bracket.
_SPLIT_COMMA = re.compile(rb",(?=[ \t]*(?:#[^\n]*)?\r?\n(?:\s*#[^\n]*\n)*\s*[)\]}])")
_COMMA = ord(",")
_OPENING = frozenset(b"([{")
_CLOSING = frozenset(b")]}")
_SPACE_BEFORE = frozenset(_WHITE_SPACE + b"\\")
_KEYWORDS = frozenset(word.encode() for word in keyword.kwlist) - {b"True", b"False", b"None"}
_NO_TUPLE_AFTER = frozenset({b"import", b"with"})
_IDENTIFIER = re.compile(rb"[A-Za-z_]\w*")
_PARAMETER = re.compile(rb"\s*\*{0,2}\s*[A-Za-z_]\w*\s*")
_TARGET = re.compile(rb"\s*[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*(?:\s*\[.*\])?\s*", re.S)
_ARROW_HEAD, _MINUS, _COLON, _NEWLINE = ord(">"), ord("-"), ord(":"), ord("\n")
_OPEN_SQUARE, _OPEN_PARENTHESIS, _CLOSE_SQUARE = ord("["), ord("("), ord("]")
_EQUALS, _BAR = ord("="), ord("|")
_BLOCK_SOFT_KEYWORDS = frozenset({b"match", b"case"})
_GENERIC_DEFINITION = frozenset({b"def", b"class"})
_TYPE_ALIAS = re.compile(rb"\s*type\s+[A-Za-z_]\w*\s*(?:\[.*\])?\s*", re.S)
_SEGMENT_ENDS = frozenset(b",;")


def denoise(code: bytes) -> bytes:
    r"""``code`` without what normalization drops: white space, line continuations, ``;``
    and a trailing comma that a line break separates from its closing bracket.

    The same as one pass of ``,(?=[ \t]*\r?\n\s*[)\]}])|\\\r?\n|\s+|;`` (tested), about 3x
    faster: every white space byte goes whichever alternative matched it, so only the
    commas and continuations need the regex, whose lookahead reads the text before
    anything is removed."""
    return _RARE_NOISE.sub(b"", code).translate(None, _LAYOUT)


_EMPTY_DIGEST = hashlib.blake2b(digest_size=16)


def digest(data: bytes) -> str:
    """The hex blake2b digest (16 bytes) of ``data``, from a copy of an empty hash: a third
    faster per call than a new hash object, whose parameters are set up again each time."""
    hashed = _EMPTY_DIGEST.copy()
    hashed.update(data)
    return hashed.hexdigest()


def normalize(code: bytes) -> bytes:
    """``code`` without comments, white space outside strings, or split trailing commas
    but a one-element tuple's, which the indexer keeps too (it asks the tree)."""
    plain = b"#" not in code and b"'" not in code and b'"' not in code
    commas = split_commas(code)
    if commas:
        blanked = code if plain else blanked_in_place(code)
        kept = {comma for comma in commas if _ends_one_tuple(blanked, comma)}
        if kept:
            dropped = [comma for comma in commas if comma not in kept]
            return NormalizedFile(code, [], [0, len(code)], dropped).slice(0, len(code))
    if plain:
        return denoise(code)
    return NormalizedFile(code, [], [0, len(code)], commas).slice(0, len(code))


def _ends_one_tuple(blanked: bytes, comma: int) -> bool:
    """Whether the comma at ``comma`` ends a one-element tuple, ``(x,)`` or ``t[x,]``: no
    other comma stands in its brackets, which are no call's, definition's or list's."""
    if blanked[comma] != _COMMA:
        return False  # in a string literal
    bracket = _opener(blanked, comma, after_comma=False)
    return bracket is not None and _makes_tuple(blanked, bracket)


def _makes_tuple(blanked: bytes, bracket: int) -> bool:
    """Whether one element and a trailing comma in the bracket at ``bracket`` are a tuple:
    a parenthesis after no operand (not a call's), a square bracket after one (a
    subscript's)."""
    start, word = _word_before(blanked, bracket)
    end = start + len(word)
    if word in _NO_TUPLE_AFTER:
        return False  # ``from m import (a,)``, ``with (a as b,):``
    keyword = word in _KEYWORDS or _opens_a_block_statement(blanked, start, word)
    operand = (word != b"" and not keyword) or blanked[end - 1:end] in (
        b")", b"]", b"}"
    )
    opening = blanked[bracket:bracket + 1]
    if opening == b"[" and operand and (_names_generic_type(blanked, start, word)
                                        or _names_a_generic_definition(blanked, start)):
        return False  # ``x: Optional[int,]``, ``def f[T,]``: as the tree reads them
    return (opening == b"(" and not operand) or (opening == b"[" and operand)


def _opens_a_block_statement(blanked: bytes, start: int, word: bytes) -> bool:
    """Whether the soft keyword ``match`` or ``case`` at ``start`` is one: it starts its
    line, and its statement ends in a block's ``:`` (``match(a,)`` is a call)."""
    if word not in _BLOCK_SOFT_KEYWORDS or not _starts_a_line(blanked, start):
        return False
    depth = 0
    for at in range(start + len(word), len(blanked)):
        char = blanked[at]
        if char in _OPENING:
            depth += 1
        elif char in _CLOSING:
            depth -= 1
        elif depth == 0 and char == _COLON:
            return blanked[at + 1:at + 2] != b"="  # not a walrus
        elif depth == 0 and char == _NEWLINE and blanked[at - 1:at] != b"\\":
            return False
    return False


def _starts_a_line(blanked: bytes, start: int) -> bool:
    """Whether only spaces and tabs stand before ``start`` on its line."""
    line_start = blanked.rfind(b"\n", 0, start) + 1
    return not blanked[line_start:start].strip(b" \t")


def _names_a_generic_definition(blanked: bytes, start: int) -> bool:
    """Whether the name at ``start``, before a ``[``, is that of a function, class or type
    alias whose type parameters follow (``def f[T,]``, ``type A[T,] = ...``)."""
    word_start, word = _word_before(blanked, start)
    return word in _GENERIC_DEFINITION or (
        word == b"type" and _starts_a_line(blanked, word_start))


def _word_before(blanked: bytes, index: int) -> tuple[int, bytes]:
    """The start and text of the word that ends before ``index`` (white space between)."""
    end = _previous(blanked, index) + 1
    start = end
    while start > 0 and blanked[start - 1] in WORD_BYTES:
        start -= 1
    return start, blanked[start:end]


def _previous(blanked: bytes, index: int) -> int:
    """The offset of the last byte before ``index`` that is no white space; -1 if none."""
    index -= 1
    while index >= 0 and blanked[index] in _SPACE_BEFORE:
        index -= 1
    return index


def _names_generic_type(blanked: bytes, start: int, word: bytes) -> bool:
    """Whether the name ``word`` at ``start``, before a ``[``, is a generic type in an
    annotation, where tree-sitter reads ``Optional[int,]`` as ``Optional[int]``: a bare
    name after ``->``, after an annotation's ``:``, or among another generic type's
    parameters (``dict[str, Optional[int,]]``)."""
    if not _IDENTIFIER.fullmatch(word) or word in _KEYWORDS:
        return False
    before = _previous(blanked, start)
    char = blanked[before] if before >= 0 else None
    if char == _ARROW_HEAD:
        return before > 0 and blanked[before - 1] == _MINUS
    if char == _COLON:
        return _annotates(blanked, before)
    if char == _EQUALS:
        return bool(_TYPE_ALIAS.fullmatch(_segment_before(blanked, before)))
    if char == _BAR:
        return _follows_a_generic_type(blanked, before)
    opener = before if char == _OPEN_SQUARE else (
        _opener(blanked, before) if char == _COMMA else None)
    if opener is None or blanked[opener] != _OPEN_SQUARE:
        return False
    name_start, name = _word_before(blanked, opener)
    return _names_generic_type(blanked, name_start, name)


def _follows_a_generic_type(blanked: bytes, bar: int) -> bool:
    """Whether the ``|`` at ``bar`` follows a generic type, ``list[int] | ...``, which makes
    the union a type (after a bare name, ``int | ...``, the tree reads an expression)."""
    end = _previous(blanked, bar)
    if end < 0 or blanked[end] != _CLOSE_SQUARE:
        return False
    opener = _opener(blanked, end)
    if opener is None or blanked[opener] != _OPEN_SQUARE:
        return False
    name_start, name = _word_before(blanked, opener)
    return _names_generic_type(blanked, name_start, name)


def _opener(blanked: bytes, index: int, after_comma: bool = True) -> int | None:
    """The offset of the bracket left open before ``index``; None at the top level, or
    when a comma stands in that bracket before ``index`` and not ``after_comma``."""
    depth = 0
    for at in range(index - 1, -1, -1):
        char = blanked[at]
        if char in _CLOSING:
            depth += 1
        elif char in _OPENING:
            if depth == 0:
                return at
            depth -= 1
        elif char == _COMMA and depth == 0 and not after_comma:
            return None
    return None


def _annotates(blanked: bytes, colon: int) -> bool:
    """Whether the ``:`` at ``colon`` starts an annotation: of a parameter of a ``def``
    (``a: T``, ``*a: T``, ``def f[T](a: T)``), or of a statement's target
    (``self.a: T = v``)."""
    opener = _opener(blanked, colon)
    owner = _segment_before(blanked, colon)
    if opener is None:
        first = owner.split(b".", 1)[0].strip()
        return bool(_TARGET.fullmatch(owner)) and first not in _KEYWORDS
    if blanked[opener] != _OPEN_PARENTHESIS or not _PARAMETER.fullmatch(owner):
        return False
    before = _previous(blanked, opener)
    if before >= 0 and blanked[before] == _CLOSE_SQUARE:  # ``def f[T](a: T)``
        type_parameters = _opener(blanked, before)
        opener = opener if type_parameters is None else type_parameters
    name_start, _ = _word_before(blanked, opener)
    return _word_before(blanked, name_start)[1] == b"def"


def _segment_before(blanked: bytes, index: int) -> bytes:
    """The text before ``index`` back to the ``,``, ``;``, open bracket or line end that
    stands at its bracket depth."""
    depth = 0
    for at in range(index - 1, -1, -1):
        char = blanked[at]
        if char in _CLOSING:
            depth += 1
        elif char in _OPENING and depth:
            depth -= 1
        elif depth == 0 and (char in _SEGMENT_ENDS or char in _OPENING or (
                char == _NEWLINE and blanked[at - 1:at] != b"\\")):
            return blanked[at + 1:index]
    return blanked[:index]


class NormalizedFile:
    """A whole file normalized once, with the normalized offset of each boundary.

    ``docstrings`` are sorted (start, end) byte ranges of docstring statements, dropped
    like comments. ``boundaries`` are the offsets ``slice`` may be called with: symbol
    starts, header ends and ends, which never fall inside a string literal. ``commas``
    are the offsets of the trailing commas to drop, by default every `split_commas` one.
    """

    def __init__(
        self, source: bytes, docstrings: list[tuple[int, int]], boundaries: list[int],
        commas: Iterable[int] | None = None,
    ) -> None:
        commas = set(split_commas(source) if commas is None else commas)
        # a docstring's start is where its prefix (r, u) starts, before its literal
        stops = sorted(commas.union(boundaries, (start for start, _ in docstrings)))
        parts = LITERAL.split(source)  # code at even indexes, literals at odd ones
        self.code_parts: list[bytes] = parts[::2]
        self._positions: dict[int, int] = {}
        self._text = self._normalized(source, parts, stops, commas, _Docstrings(docstrings))

    def _normalized(
        self, source: bytes, parts: list[bytes], stops: list[int], commas: set[int],
        docstrings: _Docstrings,
    ) -> bytes:
        """The text of ``parts`` normalized, noting each stop's offset in it. One loop over
        the parts, the file's hottest in the index: the work per part is inlined."""
        positions = self._positions
        pieces: list[bytes] = []
        offset = length = 0
        no_stop = max(len(source), stops[-1] if stops else 0) + 1  # after every stop
        next_stops = iter(stops)
        stop = next(next_stops, no_stop)
        docstring_end, next_docstring = docstrings.reach(0)
        is_code = False
        for part in parts:
            is_code = not is_code
            start, end = offset, offset + len(part)
            while stop < end:
                if is_code:
                    piece = _strip_layout(source[offset:stop])
                    pieces.append(piece)
                    length += len(piece)
                    offset = stop + (stop in commas)
                positions[stop] = length  # inside a literal: at its start
                stop = next(next_stops, no_stop)
            if offset >= next_docstring:
                docstring_end, next_docstring = docstrings.reach(offset)
            if offset < docstring_end:
                piece = b""  # a docstring's literals, prefixes and the space between them
            elif is_code:
                piece = _strip_layout(part if offset == start else source[offset:end])
            else:
                piece = b"" if part[:1] == b"#" else part
            pieces.append(piece)
            length += len(piece)
            offset = end
        if stop != no_stop:
            positions[stop] = length
        for stop in next_stops:
            positions[stop] = length
        return b"".join(pieces)

    def slice(self, start: int, end: int) -> bytes:
        return self._text[self._positions[start]:self._positions[end]]


def split_commas(source: bytes) -> list[int]:
    """Offsets of the trailing commas that line breaks (and maybe comments) separate from
    their closing bracket; those inside string literals too, which are never code."""
    return [match.start() for match in _SPLIT_COMMA.finditer(source)]


def _strip_layout(code: bytes) -> bytes:
    """``code`` (no literal in it) without white space, line continuations and ``;``."""
    if b"\\" in code:
        code = _CONTINUATION.sub(b"", code)
    return code.translate(None, _LAYOUT)


def shape_digest(header: bytes, members: Iterable[tuple[str, str, str]]) -> str:
    """Hash of a class's normalized header and its (kind, name, signature) members."""
    parts = [header] + [
        f"{kind}\0{name}\0{signature}".encode() for kind, name, signature in sorted(members)
    ]
    return digest(b"\1".join(parts))


class _Docstrings:
    """Sorted (start, end) ranges, walked through by offsets that never decrease."""

    def __init__(self, ranges: list[tuple[int, int]]) -> None:
        self._ranges = ranges
        self._next = 0  # the first range that starts after the last offset reached
        self._end = -1  # the end of the last range that starts at or before it

    def reach(self, offset: int) -> tuple[int, float]:
        """The end of the last range that starts at or before ``offset`` (an offset holds
        it when before it), and where the next range starts."""
        ranges = self._ranges
        while self._next < len(ranges) and ranges[self._next][0] <= offset:
            self._end = ranges[self._next][1]
            self._next += 1
        return self._end, ranges[self._next][0] if self._next < len(ranges) else math.inf
