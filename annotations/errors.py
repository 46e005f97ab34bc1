"""Errors of the annotations package; each renders as one line `FILE:LINE: message (hint: ...)`."""

from __future__ import annotations

import copy
import re
import unicodedata

_LINE_BREAKING = frozenset({"Cc", "Zl", "Zp"})
LINE_BREAKING_CHARACTER = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""A character of those categories, found in C: asking unicodedata of every character
of every cell was a third of a text report of 35,000 refs."""


def one_line(text: str) -> str:
    """Escape control characters and line/paragraph separators so `text` stays on one line."""
    if LINE_BREAKING_CHARACTER.search(text) is None:
        return text
    return "".join(_escape_char(ch) for ch in text)


def _escape_char(ch: str) -> str:
    if unicodedata.category(ch) not in _LINE_BREAKING:
        return ch
    return ch.encode("unicode_escape").decode("ascii")


class AnnotationError(Exception):
    """A problem in annotation input the user can fix, located at `file`:`line` when known."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.hint = hint

    @property
    def explained(self) -> str:
        """The message and its hint, without the location."""
        return f"{self.message} (hint: {self.hint})" if self.hint else self.message

    def __str__(self) -> str:
        where = ":".join(part for part in (self.file, _str_or_none(self.line)) if part)
        return one_line(f"{where}: {self.explained}" if where else self.explained)

    def located(self, file: str | None = None, line: int | None = None) -> AnnotationError:
        """A copy of this error (same class) with `file` and/or `line` replaced when given."""
        moved = copy.copy(self)
        if file is not None:
            moved.file = file
        if line is not None:
            moved.line = line
        return moved


def _str_or_none(value: int | None) -> str | None:
    return None if value is None else str(value)


class RefSyntaxError(AnnotationError):
    """A reference string does not follow the reference grammar (see annotations.refs)."""


class AnnotationFileError(AnnotationError):
    """An annotation YAML file or a Markdown article has invalid content or cannot be read."""
