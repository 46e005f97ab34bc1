"""Where a Python source's string literals and comments are, found without a parser.

``LITERAL`` matches one string literal or comment, as one capturing group, so that
``LITERAL.split(source)`` alternates code (even indexes) and literals (odd indexes).
Symbols start and end outside literals, so pieces of a file can be split on their own.
"""

from __future__ import annotations

import re

WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
"""The bytes an identifier is made of (ASCII: the index's names are ASCII)."""
# A string prefix (r, b, f...) stays with the code around it: it is kept either way.
# Unrolled loops ("normal* (special normal*)*"): the same language as one alternation per
# character, about 1.2x faster on vLLM (checked identical on 4,463 real files).
_STRINGS = (
    rb"'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"
    rb'|"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
    rb"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'"
    rb'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
)
# Every alternative of the group starts with a quote or '#', so the regex engine skips, at
# C speed, every byte that cannot start a literal: twice as fast on vLLM as a lookahead
# (?=[#'"]) before a group holding a group, which it tries at every byte. The last
# alternative never matches (NUL, then an empty negative lookahead): it only adds NUL to
# those first bytes, which makes them three runs of bytes (NUL, "#, ') that the engine
# tests with one bitmap per byte, where it tested a range and a byte: a quarter faster.
LITERAL = re.compile(rb"(" + _STRINGS + rb"|#[^\n]*|\x00(?!))", re.DOTALL)
"""One string literal or comment (strings tried first, so a ``#`` in a string is not a
comment)."""


_LONE_CR = re.compile(rb"\r(?!\n)")


def universal_newlines(source: bytes) -> bytes:
    """``source`` with each lone CR made a LF: Python ends a line at a lone CR (its
    universal newlines), tree-sitter and a count of LFs do not. The length is kept, so
    are byte offsets. The indexer parses this text, so lines and spans are read from it
    too (every reader of a blob's content as text)."""
    return _LONE_CR.sub(b"\n", source) if b"\r" in source else source


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` with their ends, split at "\\n" only: the lines Python, git,
    GitHub and the indexer count in a blob's text (`universal_newlines` has made its lone
    CRs LFs; `str.splitlines` also splits at form feeds, U+2028 and others)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return lines + [parts[-1]] if parts[-1] else lines


def blanked_in_place(code: bytes) -> bytes:
    """``code`` with each string literal made a run of ``_`` (an operand) and each comment
    a run of spaces, so that offsets stay."""
    return LITERAL.sub(lambda found: (b" " if found[0][:1] == b"#" else b"_") * len(found[0]),
                       code)


def blank_literals(code: bytes) -> bytes:
    """``code`` with each string literal and comment replaced by a space."""
    return LITERAL.sub(b" ", code)


def literal_ranges(source: bytes, until: int | None = None) -> list[tuple[int, int]]:
    """The (start, end) byte ranges of ``source``'s string literals and comments, those
    that start before ``until`` when it is given."""
    ranges = []
    for match in LITERAL.finditer(source):
        if until is not None and match.start() > until:
            break
        ranges.append(match.span())
    return ranges
