"""Where a removed symbol's code went: the definitions of the newer version that its
distinctive lines now stand in (``flash_attn_supports_fp8``, inlined into
``FlashAttentionBackend.supports_kv_cache_dtype``).

A line is compared as its text without the white space around it (its indentation). It
is distinctive when it is code (no comment, decorator, ``def`` or ``class`` line), has at
least ``MIN_LINE_TEXT`` characters (``return None``, ``pass`` and brackets are not), and
the changed files of both versions hold it in at most ``MAX_FILES`` files
(``super().__init__()`` is everywhere; a model's stock weight-loading lines stood in 43
files of vLLM v0.20.0 and one of v0.25.0, the others now calling a helper).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from itertools import compress

from indexer.literals import split_lines

MIN_LINE_TEXT = 12
"""Characters of a distinctive line: ``return None`` is not one."""
MAX_FILES = 5
"""A line standing in more of the changed files (at either version) than this is
boilerplate."""
MIN_SHARE = 1 / 4
"""The share of a removed symbol's distinctive lines that the definition its code went to
must hold (and at least two of them, when it has two or more)."""
MIN_LINES_APART = 3
"""Lines that each of several places must hold when they hold different ones (two
parsers that each took two lines of a third say nothing of where it went)."""
MIN_HEADER_LINES = 3
"""Lines of a removed definition's header (its parameters, one a line) that a place must
hold when it holds none of its body: a pattern class holding ``a_scale: torch.Tensor,``
and ``b_scale: torch.Tensor,`` says nothing of where an einsum's code went; a fake op's
24 parameters, or ``hc_fn``, ``rms_norm_eps`` and ``hc_eps`` of ``HCHeadOp``, do."""
MAX_PLACES = 3
"""How many definitions a removed symbol's code is said to have gone to, at most."""


def normalized_lines(text: str) -> list[str]:
    """Each line of ``text`` without the white space around it."""
    return list(map(str.strip, split_lines(text)))


_NAMING = ("#", "@", "def ", "async def ", "class ")
"""How lines begin that name code rather than are it: comments, decorators, headers."""


def may_be_distinctive(line: str) -> bool:
    """Whether a normalized line is code, long enough to be distinctive."""
    return len(line) >= MIN_LINE_TEXT and not line.startswith(_NAMING)


class LinePlaces:
    """Where each of the ``wanted`` lines (those some removed symbols ask about) that may
    be distinctive stands in some files, as (path, line number): of each file (path, text,
    which of its lines to take, from line 1, and its text at the older version, empty when
    it is new), the lines taken; and which of them more than ``MAX_FILES`` of the files
    hold, taken or not, at either version (boilerplate). It may be asked about no other
    line: an index of every line of a version's changed files (290,358 of vLLM v0.20.0 ->
    v0.25.0) cost a second of CPU to build."""

    def __init__(self, files: Iterable[tuple[str, str, bytes, str]],
                 wanted: frozenset[str]) -> None:
        places: dict[str, list[tuple[str, int]]] = defaultdict(list)
        files_holding: Counter[str] = Counter()  # how many files hold each line
        wanted = frozenset(filter(may_be_distinctive, wanted))
        for path, text, taken, former in files:
            lines = normalized_lines(text)
            held, placed = _wanted_lines(lines, taken, former, wanted)
            files_holding.update(held)
            for number, line in placed:
                places[line].append((path, number))
        self._wanted = wanted
        self._boilerplate = frozenset(
            line for line, count in files_holding.items() if count > MAX_FILES)
        self._places = {line: found for line, found in places.items()
                        if line not in self._boilerplate}

    def distinctive(self, text: str) -> list[str]:
        """The lines of ``text`` that may be distinctive and are no boilerplate (found
        nowhere counts), normalized, once each."""
        lines = [line for line in dict.fromkeys(normalized_lines(text))
                 if may_be_distinctive(line)]
        assert self._wanted.issuperset(lines), "a line not indexed"
        return [line for line in lines if line not in self._boilerplate]

    def places(self, line: str) -> list[tuple[str, int]]:
        """The places of a distinctive line (none for boilerplate)."""
        return self._places.get(line, [])


def _wanted_lines(
    lines: list[str], taken: bytes, former: str, wanted: frozenset[str]
) -> tuple[Iterable[str], Iterable[tuple[int, str]]]:
    """The ``wanted`` lines a file's ``lines`` or ``former`` text holds (to be counted),
    and the (number, line) of those of ``lines`` taken."""
    held = wanted.intersection(lines)
    placed = compress(enumerate(lines, start=1), taken) if held else ()
    return (held.union(wanted.intersection(normalized_lines(former))),
            ((number, line) for number, line in placed if line in held))


def evidence_bar(distinctive: int) -> float:
    """How many of a removed symbol's ``distinctive`` lines a definition must hold for its
    code to have gone there."""
    return max(min(2, distinctive), distinctive * MIN_SHARE)
