"""What a changed symbol started or stopped using.

A symbol *uses* a name when the name occurs in its code (strings and comments excluded:
`used_identifiers`) and names a definition of the version: at least one symbol of that
name exists there. Names the symbol defines itself (its own name, its members, its local
functions and classes) and Python keywords do not count, nor does a keyword argument's
name (``default`` in ``Field(default=None)`` names a parameter of the callee, which no
index holds). An attribute after a dot (a method called) is a use; so is a parameter of
the symbol, as any name it binds (its body reads it by that name). ``started`` = names its
code uses at B but not at A (definitions of B); ``stopped`` = the reverse (definitions of
A).

Built for whole-version diffs: each blob is decompressed once by the caller, each stretch
of a blob is tokenized once (a class and its methods share their text), and the defined
names of both versions come from the rows the matcher loaded anyway.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from annotations.diffs.model import Usage
from db.match_queries import MATCH_COLUMNS
from indexer.literals import WORD_BYTES, blank_literals
from indexer.references import KEYWORDS, identifiers

MAX_NAMES = 20
"""How many started or stopped names a symbol lists (the totals count them all)."""

Span = tuple[int, int]
_START_BYTE, _NAME = (MATCH_COLUMNS.index(column) for column in ("start_byte", "name"))


class Spanned(Protocol):
    """What `usage_changes` needs of a symbol (``matching.SymbolSnapshot`` provides it)."""

    @property
    def name(self) -> str: ...
    @property
    def blob_id(self) -> str: ...
    @property
    def start_byte(self) -> int: ...
    @property
    def end_byte(self) -> int: ...


def usage_changes(
    pairs: Sequence[tuple[Spanned, Spanned]],
    contents: Mapping[str, bytes],
    defined: Callable[[], tuple[frozenset[str], frozenset[str]]],
    rows: Callable[[str], Sequence[tuple]],
    limit: int = MAX_NAMES,
) -> list[Usage]:
    """The `Usage` of each (old, new) pair. ``contents`` maps blob ids to their bytes;
    ``defined`` gives the names of every symbol of A and of B (called once, if any pair:
    ``Matcher.defined_names``); ``rows`` a blob's symbol rows (``MATCH_COLUMNS`` tuples:
    ``SourceStore.blob_rows``)."""
    if not pairs:
        return []
    defined_a, defined_b = (_encoded(names) for names in defined())
    tokens = _tokenize(pairs, contents, rows, defined_a | defined_b)
    usages = []
    for old, new in pairs:
        before = tokens[old.blob_id].used(old.start_byte, old.end_byte)
        after = tokens[new.blob_id].used(new.start_byte, new.end_byte)
        started = sorted(name.decode() for name in (after - before) & defined_b)
        stopped = sorted(name.decode() for name in (before - after) & defined_a)
        usages.append(Usage(tuple(started[:limit]), tuple(stopped[:limit]),
                            len(started), len(stopped)))
    return usages


def _encoded(names: frozenset[str]) -> frozenset[bytes]:
    return frozenset(name.encode() for name in names) - KEYWORDS


def _tokenize(
    pairs: Iterable[tuple[Spanned, Spanned]], contents: Mapping[str, bytes],
    rows: Callable[[str], Sequence[tuple]], defined: frozenset[bytes],
) -> dict[str, _BlobNames]:
    """The names of each blob's spans; ``defined``: the names a use may be of (another
    name's keyword arguments need not be found)."""
    spans: dict[str, list[Span]] = defaultdict(list)
    for pair in pairs:
        for symbol in pair:
            spans[symbol.blob_id].append((symbol.start_byte, symbol.end_byte))
    seen: dict[bytes, set[bytes]] = {}  # a stretch unchanged between A and B: tokenized once
    return {
        blob_id: _BlobNames(contents.get(blob_id, b""), blob_spans, rows(blob_id), seen,
                            defined)
        for blob_id, blob_spans in spans.items()
    }


class _BlobNames:
    """The identifiers of a blob's code, per stretch between consecutive span bounds, and
    the blob's definitions by position.

    Symbols start and end outside string literals and comments, so each stretch is
    split into code and literals on its own, and a span's names are the union of its
    stretches'.
    """

    def __init__(
        self, data: bytes, spans: list[Span], rows: Sequence[tuple],
        seen: dict[bytes, set[bytes]], defined: frozenset[bytes],
    ) -> None:
        bounds = sorted({bound for span in spans for bound in span})
        covered = _merged(spans)
        self._starts: list[int] = []
        self._names: list[set[bytes]] = []
        for start, end in zip(bounds, bounds[1:], strict=False):
            if _inside(covered, start, end):
                code = data[start:end]
                names = seen.get(code)
                if names is None:
                    names = seen[code] = used_identifiers(code, defined)
                self._starts.append(start)
                self._names.append(names)
        definitions = sorted((row[_START_BYTE], row[_NAME].encode()) for row in rows)
        self._definition_starts = [start for start, _ in definitions]
        self._definition_names = [name for _, name in definitions]

    def used(self, start: int, end: int) -> set[bytes]:
        """The names in the code of ``start:end`` but those it defines itself."""
        first, last = bisect_left(self._starts, start), bisect_left(self._starts, end)
        names = set().union(*self._names[first:last])
        first = bisect_left(self._definition_starts, start)
        last = bisect_left(self._definition_starts, end)
        names.difference_update(self._definition_names[first:last])
        return names


def _merged(spans: list[Span]) -> list[Span]:
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _inside(merged: list[Span], start: int, end: int) -> bool:
    index = bisect_right(merged, (start, float("inf"))) - 1
    return index >= 0 and merged[index][0] <= start and end <= merged[index][1]


def used_identifiers(code: bytes, defined: frozenset[bytes] | None = None) -> set[bytes]:
    """The identifiers in ``code`` outside string literals, comments and the names of
    keyword arguments. ``code`` is whole statements (a symbol's stretch). Given
    ``defined``, keyword arguments are looked for only when one may be named so: the
    others' names are left in (and then count for nothing)."""
    blanked = blank_literals(code)
    keyword_names = _keyword_argument_names(blanked, defined)
    if keyword_names:
        text = bytearray(blanked)
        for start, end in keyword_names:
            text[start:end] = b" " * (end - start)
        blanked = bytes(text)
    return identifiers(blanked)


# A name after "(" or "," and before "=" (not "=="): inside brackets, a keyword argument
# or a parameter's default; outside them, the second target of "a, b = ...". Looked for in
# the reversed code, from each "=" (the name reversed too): the regex engine jumps from one
# "=" to the next, where from each "(" and "," it tried every one (1.7x the time on vLLM).
_NAME_BEFORE_EQUALS_REVERSED = re.compile(rb"=(?<!==)\s*([A-Za-z0-9_]*[A-Za-z_])\s*[(,]")
# "\bdef" with its word boundary after the literal, which the regex engine then jumps to
# (six times as fast on vLLM's changed code).
_SIGNATURE_OPENS = re.compile(
    rb"def(?<![A-Za-z0-9_]def)\s+[A-Za-z_][A-Za-z0-9_]*\s*(?:\[[^\]]*\]\s*)?\(")
_LAMBDA_PARAMETERS = re.compile(rb"lambda\b[^:]*\Z")
_BRACKET = re.compile(rb"[()\[\]{}]")
_LAMBDA_REACH = 300
"""How far before a name a ``lambda`` whose parameter it is may start."""


def _keyword_argument_names(code: bytes, defined: frozenset[bytes] | None) -> list[Span]:
    """The spans of the keyword arguments' names in ``code`` (literals blanked): those of
    a def's or a lambda's parameters are not; given ``defined``, only those it holds."""
    signatures: list[Span] | None = None  # found at the first name inside brackets
    names = []
    depth, counted = 0, 0
    for start, end in _names_before_equals(code, defined):
        depth += _depth_change(code, counted, start)
        counted = start
        if depth <= 0:
            continue
        if signatures is None:
            signatures = [(opened.end(), _closing(code, opened.end()))
                          for opened in _SIGNATURE_OPENS.finditer(code)]
        if not _a_parameter(code, start, signatures):
            names.append((start, end))
    return names


def _names_before_equals(code: bytes, defined: frozenset[bytes] | None) -> list[Span]:
    """The spans of the names after "(" or "," and before "=" in ``code``, in order; given
    ``defined``, of those it holds."""
    size = len(code)
    spans = [(size - found.end(1), size - found.start(1))
             for found in _NAME_BEFORE_EQUALS_REVERSED.finditer(code[::-1])
             if defined is None or found[1][::-1] in defined]
    spans.reverse()
    return spans


def _a_parameter(code: bytes, start: int, signatures: list[Span]) -> bool:
    index = bisect_right(signatures, (start, len(code))) - 1  # the last opened by start
    if index >= 0:
        opened, closed = signatures[index]
        if start < closed and _depth_change(code, opened, start) == 0:
            return True
    return _in_lambda_parameters(code, start)


def _in_lambda_parameters(code: bytes, start: int) -> bool:
    """Whether the name at ``start`` is a lambda's parameter: no colon between the lambda
    and it, nor a bracket left open (``lambda x, size=h(default=1): x``: a call's)."""
    lambda_at = code.rfind(b"lambda", max(0, start - _LAMBDA_REACH), start)
    if lambda_at < 0 or (lambda_at > 0 and code[lambda_at - 1] in WORD_BYTES):
        return False
    return (_LAMBDA_PARAMETERS.match(code, lambda_at, start) is not None
            and _depth_change(code, lambda_at, start) == 0)


def _closing(code: bytes, opened: int) -> int:
    """Where the bracket open before ``opened`` closes (the end of ``code`` if it does not)."""
    depth = 1
    for bracket in _BRACKET.finditer(code, opened):
        depth += 1 if bracket.group() in b"([{" else -1
        if depth == 0:
            return bracket.start()
    return len(code)


def _depth_change(code: bytes, start: int, end: int) -> int:
    """How many more brackets ``code[start:end]`` opens than it closes."""
    opened = code.count(b"(", start, end) + code.count(b"[", start, end) + code.count(
        b"{", start, end)
    return opened - code.count(b")", start, end) - code.count(b"]", start, end) - code.count(
        b"}", start, end)
