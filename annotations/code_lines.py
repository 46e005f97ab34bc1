"""Where a removed symbol's code went: the definitions of the newer version that its
distinctive lines now stand in (``flash_attn_supports_fp8``, inlined into
``FlashAttentionBackend.supports_kv_cache_dtype``).

A line is compared as its text without the white space around it (its indentation). It
is distinctive when it is code (no comment, decorator, ``def`` or ``class`` line), has at
least ``MIN_LINE_TEXT`` characters (``return None``, ``pass`` and brackets are not), and
the newer version's changed files hold it in at most ``MAX_FILES`` files
(``super().__init__()`` is everywhere).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from itertools import compress
from operator import and_

MIN_LINE_TEXT = 12
"""Characters of a distinctive line: ``return None`` is not one."""
MAX_FILES = 5
"""A line standing in more of the newer version's changed files than this is boilerplate."""
MIN_SHARE = 1 / 4
"""The share of a removed symbol's distinctive lines that the definition its code went to
must hold (and at least two of them, when it has two or more)."""
MIN_LINES_APART = 3
"""Lines that each of several places must hold when they hold different ones (two
parsers that each took two lines of a third say nothing of where it went)."""
MAX_PLACES = 3
"""How many definitions a removed symbol's code is said to have gone to, at most."""


def normalized_lines(text: str) -> list[str]:
    """Each line of ``text`` without the white space around it."""
    return list(map(str.strip, text.splitlines()))


_NAMING = ("#", "@", "def ", "async def ", "class ")
"""How lines begin that name code rather than are it: comments, decorators, headers."""


def may_be_distinctive(line: str) -> bool:
    """Whether a normalized line is code, long enough to be distinctive."""
    return len(line) >= MIN_LINE_TEXT and not line.startswith(_NAMING)


class LinePlaces:
    """Where each line of some files that may be distinctive stands, as (path, line
    number): of each file (path, text, which of its lines to take, from line 1), the lines
    taken; and how many of the files hold each line, taken or not."""

    def __init__(self, files: Iterable[tuple[str, str, bytes]]) -> None:
        self._places: dict[str, list[tuple[str, int]]] = defaultdict(list)
        self._files: Counter[str] = Counter()  # how many files hold each line
        for path, text, taken in files:
            lines = normalized_lines(text)
            long_enough = list(map(MIN_LINE_TEXT.__le__, map(len, lines)))  # C loops: a
            self._files.update(set(compress(lines, long_enough)))  # file has many lines
            for number, line in compress(enumerate(lines, start=1),
                                         map(and_, taken, long_enough)):
                if not line.startswith(_NAMING):
                    self._places[line].append((path, number))

    def distinctive(self, text: str) -> list[str]:
        """The lines of ``text`` that may be distinctive and are no boilerplate (found
        nowhere counts), normalized, once each."""
        return [line for line in dict.fromkeys(normalized_lines(text))
                if may_be_distinctive(line) and not self._boilerplate(line)]

    def places(self, line: str) -> list[tuple[str, int]]:
        """The places of a distinctive line (none for boilerplate)."""
        return [] if self._boilerplate(line) else self._places.get(line, [])

    def _boilerplate(self, line: str) -> bool:
        return self._files[line] > MAX_FILES


def evidence_bar(distinctive: int) -> float:
    """How many of a removed symbol's ``distinctive`` lines a definition must hold for its
    code to have gone there."""
    return max(min(2, distinctive), distinctive * MIN_SHARE)
