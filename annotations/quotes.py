"""Whether a ref's ``quote`` stands in a symbol's text: the evidence its author chose."""

from __future__ import annotations


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
