"""Counted nouns for messages and reports: ``1 claim``, ``2 claims``."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, in the plural (``noun + "s"`` unless given) unless it is 1."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
