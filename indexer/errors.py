"""Errors the indexer raises; the CLI turns each into a one-line message."""

from __future__ import annotations


class IndexerError(Exception):
    """Base class: a problem the user can fix, with what to do next."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        flat = " ".join(self.message.split())
        return f"{flat}; {self.hint}" if self.hint else flat


class ConfigError(IndexerError):
    """annotate.toml (or [tool.annotate]) is invalid, or names something unknown."""


class SourceError(IndexerError):
    """A version's files could not be fetched or read."""


class VersionNotFound(SourceError):
    """No configured source has the version."""


class SameWheel(SourceError):
    """PyPI gave, for a version name not configured, the wheel of a version already indexed
    under another name (``vllm@0.20.0`` for ``vllm@v0.20.0``)."""


class NotATag(IndexerError):
    """A version to index named as PyPI numbers it (``vllm@0.20.0``), where the repo's
    GitHub tags are ``v0.20.0``."""
