"""``difflib.get_close_matches``, without scoring candidates that cannot make the top n.

A "did you mean" over a version's ~2,000 paths, which share long prefixes, scored every
one of them with ``SequenceMatcher.ratio`` (~60 ms a broken ref). ``quick_ratio`` bounds
``ratio`` from above, so candidates taken in decreasing bound order can stop as soon as
the bound falls below the n-th best score found: same answer, ties included.
"""

from __future__ import annotations

import difflib
import heapq
from collections.abc import Iterable, Sequence


def close_matches(word: str, candidates: Iterable[str], n: int = 3,
                  cutoff: float = 0.6) -> list[str]:
    """The best ``n`` of ``candidates`` that score at least ``cutoff`` against ``word``,
    best first: exactly what ``difflib.get_close_matches`` answers."""
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(word)
    bounded = []
    for candidate in candidates:
        matcher.set_seq1(candidate)
        if matcher.real_quick_ratio() >= cutoff and (bound := matcher.quick_ratio()) >= cutoff:
            bounded.append((bound, candidate))
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
