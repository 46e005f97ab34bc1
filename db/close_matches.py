"""``difflib.get_close_matches``, without scoring candidates that cannot make the top n.

A "did you mean" over a version's ~2,000 paths, which share long prefixes, scored every
one of them with ``SequenceMatcher.ratio`` (~60 ms a broken ref). ``quick_ratio`` bounds
``ratio`` from above, so candidates taken in decreasing bound order can stop as soon as
the bound falls below the n-th best score found: same answer, ties included.

The bounds come from the characters of each candidate, counted once (`CloseCandidates`):
a word's are then summed a character at a time, for every candidate at once. A list of
candidates asked about once costs as much as difflib's ``quick_ratio`` on each (8 ms for
vLLM's 1,723 paths); one asked about many times (a version's paths, for every broken path
of a collection's refs) is counted once, and each word costs 3 ms.
"""

from __future__ import annotations

import difflib
import heapq
from collections import Counter
from collections.abc import Iterable, Sequence


def close_matches(word: str, candidates: Iterable[str], n: int = 3,
                  cutoff: float = 0.6) -> list[str]:
    """The best ``n`` of ``candidates`` that score at least ``cutoff`` against ``word``,
    best first: exactly what ``difflib.get_close_matches`` answers."""
    return CloseCandidates(candidates).close(word, n, cutoff)


class CloseCandidates:
    """Candidates whose characters are counted once, for `close` to score word after word."""

    def __init__(self, candidates: Iterable[str]) -> None:
        self._candidates = list(candidates)
        self._lengths = [len(candidate) for candidate in self._candidates]
        self._columns: dict[str, list[int]] = {}  # a character's count in each candidate
        for position, candidate in enumerate(self._candidates):
            for character, count in Counter(candidate).items():
                column = self._columns.get(character)
                if column is None:
                    column = self._columns[character] = [0] * len(self._candidates)
                column[position] = count

    def close(self, word: str, n: int = 3, cutoff: float = 0.6) -> list[str]:
        """The best ``n`` of the candidates that score at least ``cutoff`` against
        ``word``, best first: exactly what ``difflib.get_close_matches`` answers."""
        matcher = difflib.SequenceMatcher()
        matcher.set_seq2(word)
        return _best(matcher, self._bounded(word, cutoff), n, cutoff)

    def _bounded(self, word: str, cutoff: float) -> list[tuple[float, str]]:
        """(quick_ratio, candidate) of the candidates whose ``quick_ratio`` against
        ``word`` reaches ``cutoff``: the same floats, for ``quick_ratio`` counts, over the
        characters, the fewer of a character's occurrences in the candidate and in the
        word. (``real_quick_ratio``, which difflib asks first, is never below it.)"""
        matches = [0] * len(self._candidates)
        for character, in_word in Counter(word).items():
            column = self._columns.get(character)
            if column is not None:
                matches = [found + (count if count < in_word else in_word)
                           for found, count in zip(matches, column, strict=True)]
        size = len(word)
        bounded = []
        for candidate, length, found in zip(self._candidates, self._lengths, matches,
                                            strict=True):
            if (bound := _ratio(found, length + size)) >= cutoff:
                bounded.append((bound, candidate))
        return bounded


def _ratio(matches: int, length: int) -> float:
    """``difflib``'s ratio of ``matches`` in sequences of ``length`` elements in all."""
    return 2.0 * matches / length if length else 1.0


def _best(matcher: difflib.SequenceMatcher, bounded: list[tuple[float, str]], n: int,
          cutoff: float) -> list[str]:
    """The ``n`` best candidates by ``ratio`` against the matcher's word, of those
    ``bounded`` by their ``quick_ratio``, scoring only those that may make the top ``n``."""
    bounded.sort(reverse=True)
    best: list[tuple[float, str]] = []  # a min-heap of the n best (score, candidate) so far
    for bound, candidate in bounded:
        if len(best) == n and bound < best[0][0]:
            break
        matcher.set_seq1(candidate)
        score = matcher.ratio()
        if score < cutoff:
            continue
        if len(best) < n:
            heapq.heappush(best, (score, candidate))
        else:
            heapq.heappushpop(best, (score, candidate))
    return [candidate for _, candidate in sorted(best, reverse=True)]


def did_you_mean(options: Sequence[str]) -> str:
    """The hint of a name that is most likely a misspelling of one of ``options``, each
    quoted, best first: ``did you mean 'vllm/utils.py' or 'vllm/__init__.py'?``."""
    return f"did you mean {either(options)}?"


def either(options: Sequence[str]) -> str:
    """``options``, each quoted, joined as alternatives: ``'a', 'b' or 'c'``."""
    quoted = [f"'{option}'" for option in options]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
