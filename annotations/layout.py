"""Where a definition's statements start and how deep they nest: what its line breaks and
indentation say.

The normalized fingerprint drops all white space (`indexer.fingerprints`), so two
definitions can share it while their statements nest differently: ``return x`` dedented
out of a loop, an ``else`` moved to the outer ``if``, ``f`` and ``(x)`` on two lines joined
into ``f(x)``. ``changes.classify`` calls such a pair cosmetic only when their layouts are
equal. Kept apart from indexing, which would pay for it on every blob: only pairs whose
fingerprints are equal and whose text is not are compared.

A layout is one ``(depth, words)`` per statement: its block depth, and its tokens, each a
keyword or operator as written, else its type (so a renamed target is the same layout),
which tells ``not a`` from ``nota``; a trailing comma before a closing bracket is left
out, as the fingerprint leaves out a split one, and so is a class's empty ``()``. A
compound statement's body on its own line or after its colon, and statements apart on
two lines or joined by ``;``, are the same layout; a statement that is only string
literals (a docstring) is left out, as the fingerprint leaves it out.
"""

from __future__ import annotations

import io
import keyword
import tokenize
from functools import lru_cache
from itertools import pairwise

Layout = tuple[tuple[int, str], ...]

_COMPOUND = frozenset({"if", "elif", "else", "for", "while", "with", "try", "except",
                       "finally", "def", "class", "async", "match", "case"})
_OPENING, _CLOSING = frozenset("([{"), frozenset(")]}")
_SKIPPED = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER})


def same_layout(old_source: str, new_source: str) -> bool:
    """Whether two definitions' statements start and nest alike (true when either cannot
    be tokenized: the fingerprints, which found them equal, have the last word)."""
    old, new = layout(old_source), layout(new_source)
    return old is None or new is None or old == new


@lru_cache(maxsize=4096)
def layout(source: str) -> Layout | None:
    """The statements of ``source`` as ``(depth, words)``, or None when Python's tokenizer
    refuses it (a syntax error tree-sitter recovered from)."""
    try:
        # newline=None: a lone \r ends a line, as it does for Python
        lines = io.StringIO(source, newline=None).readline
        tokens = list(tokenize.generate_tokens(lines))
    except (tokenize.TokenError, SyntaxError):
        return None
    return _undecorated(_statements(tokens))


def _statements(tokens: list[tokenize.TokenInfo]) -> list[tuple[int, str]]:
    statements: list[tuple[int, str]] = []
    line: list[tokenize.TokenInfo] = []
    depth = brackets = lambdas = 0  # lambdas: those of the line whose colon is to come
    opened_body = False  # the line's compound header has met its colon: a body follows

    def end_line() -> None:
        nonlocal line
        if line and not all(map(is_text_literal, line)):
            statements.append((depth, _words(line)))
        line = []

    for token in tokens:
        if token.type in _SKIPPED:
            continue
        # not an f-string's text, whatever it holds (f"({x}:" on Python 3.12+)
        operator = token.string if token.type == tokenize.OP else None
        if token.type == tokenize.INDENT:
            depth += 1
        elif token.type == tokenize.DEDENT:
            depth -= 1
        elif token.type == tokenize.NEWLINE or (operator == ";" and brackets == 0):
            end_line()
            if token.type == tokenize.NEWLINE and opened_body:
                depth, opened_body = depth - 1, False
        else:
            brackets += (operator in _OPENING) - (operator in _CLOSING)
            line.append(token)
            if brackets or token.type != tokenize.NAME and operator != ":":
                continue
            if token.string == "lambda":
                lambdas += 1
            elif operator == ":" and lambdas:
                lambdas -= 1
            elif operator == ":" and not opened_body and _is_header(line):
                end_line()
                depth, opened_body = depth + 1, True
    end_line()
    return statements


def _undecorated(statements: list[tuple[int, str]]) -> Layout:
    """``statements`` at the depths they have under their decorators: a span starts at its
    first decorator, after the indentation of its line, which the tokenizer sees as the
    ``def`` line's indentation, one level in."""
    decorators = 0
    while decorators < len(statements) and statements[decorators][1].startswith("@"):
        decorators += 1
    if not decorators or decorators == len(statements):
        return tuple(statements)
    base = statements[decorators][0]
    return tuple((0, head) for _, head in statements[:decorators]) + tuple(
        (depth - base, head) for depth, head in statements[decorators:]
    )


def is_text_literal(token: tokenize.TokenInfo) -> bool:
    """Whether ``token`` is a literal that does nothing as a statement: not an f-string,
    which Python evaluates (a STRING token before 3.12, FSTRING_START tokens after)."""
    return token.type == tokenize.STRING and "f" not in (
        token.string[:token.string.find(token.string[-1])].lower())


def _is_header(line: list[tokenize.TokenInfo]) -> bool:
    """Whether the colon that ends ``line`` ends a compound statement's header (not an
    annotation's: ``case: int = 1`` names a variable)."""
    return line[0].string in _COMPOUND and (
        line[0].string not in ("match", "case") or len(line) > 2
    )


def _words(line: list[tokenize.TokenInfo]) -> str:
    """The statement's tokens, space-separated: the first a keyword when it is used as one
    (a soft keyword too), every other a keyword or operator, else its token type."""
    head = line[0]
    used_as_keyword = head.type == tokenize.NAME and _soft_keyword_used(line)
    words = [head.string if used_as_keyword else _word(head)]
    for token, after in pairwise([*line[1:], None]):
        trailing_comma = token is not None and token.string == "," and (
            after is not None and after.string in _CLOSING)
        if token is not None and not trailing_comma:
            words.append(_word(token))
    if words[0] == "class" and words[2:4] == ["(", ")"]:
        del words[2:4]  # ``class C():`` is ``class C:``
    return " ".join(words)


def _word(token: tokenize.TokenInfo) -> str:
    if token.type == tokenize.OP or (
        token.type == tokenize.NAME and keyword.iskeyword(token.string)
    ):
        return token.string
    return tokenize.tok_name[token.type]


def _soft_keyword_used(line: list[tokenize.TokenInfo]) -> bool:
    """Whether ``line`` starts with a soft keyword used as one (``match x:``, ``type X =
    int``), not as a name (``match = m``, ``type: str``: a renamed target is the same)."""
    return keyword.issoftkeyword(line[0].string) and len(line) > 1 and (
        line[1].type in (tokenize.NAME, tokenize.NUMBER, tokenize.STRING))
