"""Whether a ref's ``quote`` stands in a symbol's text: the evidence its author chose.

A quote stands where it occurs, white space runs counting as one space, and not as a
piece of a longer name or number (`quote_stands`). At the target, it must also stand as
it stood at the pin (`quote_holds`): a quote of code (outside comments and docstrings; a
string literal in code is code) stands only in code, so ``default=0.92`` kept only in a
comment ``# default=0.92 was too high`` no longer stands; a quote of a comment or
docstring may stand in either. A docstring is any statement of string literals only
(a module's, class's or function's, or an attribute's below it).

Comments and string literals are found as the indexer finds them (`indexer.literals`);
Python's tokenizer tells whether a literal that starts a statement is all of it (a
docstring). Text that is not whole Python (a string or bracket it opens and does not
close, or the other way round: lines cut from inside one), or whose statement the
tokenizer refuses, is taken as before comments were told apart: an occurrence anywhere.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable, Iterator

from annotations.layout import is_text_literal
from indexer.literals import LITERAL

Span = tuple[int, int]

# `indexer.literals.LITERAL` for text: a string literal (its prefix left out) or comment.
_LITERAL = re.compile(LITERAL.pattern.decode(), re.DOTALL)
_BRACKETS = (("(", ")"), ("[", "]"), ("{", "}"))


def quote_stands(quote: str, text: str) -> bool:
    """Whether ``quote`` occurs in ``text``, white space runs counting as one space, and
    not as a piece of a longer name or number: ``"default": 25`` does not stand in
    ``"default": 256``, nor ``= 0`` in ``= 0.9``."""
    wanted, haystack = " ".join(quote.split()), " ".join(text.split())
    found = haystack.find(wanted)
    while found >= 0:
        if not _cuts_a_token(haystack, found, found + len(wanted)):
            return True
        found = haystack.find(wanted, found + 1)
    return False


def quote_holds(quote: str, target: str, pinned: Callable[[], str]) -> bool:
    """Whether ``quote`` stands in the Python text ``target`` as it stood in the text it
    was written of, which ``pinned`` reads (only when the quote stands in ``target`` in
    comments or docstrings alone): in code, when it stood in code there; else anywhere."""
    if not quote_stands(quote, target):
        return False
    if _in_code(quote, target) is not False or not _whole(target):
        return True
    text = pinned()
    return _in_code(quote, text) is not True or not _whole(text)


def _in_code(quote: str, text: str) -> bool | None:
    """Whether an occurrence of ``quote`` in ``text`` holds code; None when none is
    found, or the tokenizer refuses a statement it needs to read."""
    verdicts = []
    for span in _occurrences(quote, text):
        holds = _holds_code(text, span)
        if holds:
            return True
        verdicts.append(holds)
    return None if not verdicts or None in verdicts else False


def _occurrences(quote: str, text: str) -> Iterator[Span]:
    """Where ``quote`` stands in ``text`` as `quote_stands` finds it, as spans of
    ``text`` itself: its words in order, white space between them."""
    first, *rest = quote.split() or [""]
    found = text.find(first)
    while found >= 0 and first:
        end = _words_from(text, found + len(first), rest)
        if end is not None and not _cuts_a_token(text, found, end):
            yield found, end
        found = text.find(first, found + 1)


def _words_from(text: str, at: int, words: list[str]) -> int | None:
    """Where ``words`` end when they follow ``at`` in ``text``, each after white space
    (what `str.split` splits at); None when they do not."""
    for word in words:
        spaces = at
        while at < len(text) and text[at].isspace():
            at += 1
        if at == spaces or not text.startswith(word, at):
            return None
        at += len(word)
    return at


def _holds_code(text: str, span: Span) -> bool | None:
    """Whether ``text[span]`` has a character that is not white space outside the
    comments and docstrings of ``text``; None when the tokenizer refuses a statement
    it needs to read."""
    start, end = span
    for literal in _LITERAL.finditer(text):
        if literal.start() >= end:
            break
        if literal.end() <= start:
            continue
        if literal.start() > start and text[start:literal.start()].strip():
            return True  # code before the literal
        documentation = literal[0].startswith("#") or _is_docstring(text, literal.span())
        if documentation is None:
            return None
        if not documentation:
            return True  # a string literal in code
        start = max(start, literal.end())
    return start < end and bool(text[start:end].strip())


def _is_docstring(text: str, literal: Span) -> bool | None:
    """Whether the string literal at ``literal`` is a statement of string literals only;
    None when the tokenizer refuses the statement."""
    line = text.rfind("\n", 0, literal[0]) + 1
    while line and text[:line - 1].endswith("\\"):  # the line goes on from the one before
        line = text.rfind("\n", 0, line - 1) + 1
    if not _whole(text[:line]):
        return False  # the line starts in a string or inside brackets: an operand
    return _statement_is_literals(text[line:], literal[0] - line)


def _statement_is_literals(source: str, offset: int) -> bool | None:
    """Whether the statement that holds the literal at ``offset`` of ``source``, which
    starts with a statement, is one of string literals only, as Python's tokenizer reads
    it; None when the tokenizer refuses it."""
    starts = [0]
    statement: list[tokenize.TokenInfo] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.ERRORTOKEN and token.string.strip():
                return None  # a quote that opens no string (Python < 3.12 goes on past it)
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER) and statement:
                if _offset(source, starts, statement[-1].end) > offset:
                    return all(map(is_text_literal, statement))
                statement = []
            elif token.type not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT,
                                    tokenize.DEDENT):
                statement.append(token)
    except (tokenize.TokenError, SyntaxError):
        return None
    return None


def _offset(source: str, starts: list[int], position: tuple[int, int]) -> int:
    """The offset in ``source`` of a tokenizer's (row, column), ``starts`` holding the
    offsets of the lines read so far."""
    row, column = position
    while len(starts) < row:
        starts.append(source.index("\n", starts[-1]) + 1)
    return starts[row - 1] + column


def _whole(text: str) -> bool:
    """Whether ``text`` closes every string and bracket it opens, and opens every one it
    closes (not lines cut from inside one), as whole Python does."""
    code = _LITERAL.sub(" ", text)
    return "'" not in code and '"' not in code and all(
        code.count(opening) == code.count(closing) for opening, closing in _BRACKETS)


def _cuts_a_token(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` begins or ends inside a name or a number."""
    if start < end and start > 0 and _is_word(text[start]) and _is_word(text[start - 1]):
        return True
    if start < end < len(text) and _is_word(text[end - 1]):
        return _is_word(text[end]) or (
            text[end - 1].isdigit() and text[end] == "." and text[end + 1:end + 2].isdigit()
        )
    return False


def _is_word(character: str) -> bool:
    return character.isalnum() or character == "_"
