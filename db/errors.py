"""Errors of the database layer; the CLI turns each into a one-line message."""

from __future__ import annotations


class DatabaseError(Exception):
    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}; {self.hint}" if self.hint else self.message


class NotADatabase(DatabaseError):
    """The file exists but is not an SQLite database."""


class SchemaTooNew(DatabaseError):
    """The database was written by a newer annotate."""


class MissingIndex(DatabaseError):
    """The database (or a version in it) does not exist yet."""


class DatabaseBusy(DatabaseError):
    """Another process held the write lock for too long."""


class QueryTooLarge(DatabaseError):
    """A search with more terms than SQLite's expressions hold."""


class BadSearchText(DatabaseError):
    """A search text that searches for nothing, or whose quotes make no phrase."""
