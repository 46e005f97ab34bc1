"""What a changed symbol started or stopped using.

A symbol *uses* a name when the name occurs in its code (strings and comments excluded:
`indexer.references.code_identifiers`) and names a definition of the version: at least
one symbol of that name exists there. Names the symbol defines itself (its own name, its
members, its local functions and classes) and Python keywords do not count. ``started``
= names its code uses at B but not at A (definitions of B); ``stopped`` = the reverse
(definitions of A).

Built for whole-version diffs: each blob is decompressed once by the caller, each stretch
of a blob is tokenized once (a class and its methods share their text), and the defined
names of both versions come from the rows the matcher loaded anyway.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from annotations.diffs.model import Usage
from db.match_queries import MATCH_COLUMNS
from indexer.references import KEYWORDS, code_identifiers

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
    tokens = _tokenize(pairs, contents, rows)
    defined_a, defined_b = (_encoded(names) for names in defined())
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
    rows: Callable[[str], Sequence[tuple]],
) -> dict[str, _BlobNames]:
    spans: dict[str, list[Span]] = defaultdict(list)
    for pair in pairs:
        for symbol in pair:
            spans[symbol.blob_id].append((symbol.start_byte, symbol.end_byte))
    seen: dict[bytes, set[bytes]] = {}  # a stretch unchanged between A and B: tokenized once
    return {
        blob_id: _BlobNames(contents.get(blob_id, b""), blob_spans, rows(blob_id), seen)
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
        seen: dict[bytes, set[bytes]],
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
                    names = seen[code] = code_identifiers(code)
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
