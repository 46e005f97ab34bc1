"""Counted nouns for messages and reports: ``1 claim``, ``2 claims``."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, in the plural (``noun + "s"`` unless given) unless it is 1."""
    return f"{count} {of_count(count, noun, plural)}"


def of_count(count: int, noun: str, plural: str | None = None) -> str:
    """``noun`` as ``count`` of it is written: in the plural unless ``count`` is 1."""
    return noun if count == 1 else plural or noun + "s"


def pinned_at_unindexed(message: str, refs: int, claims: int, hint: str) -> str:
    """One line for every ref pinned at a version that is not indexed: ``vllm@v0.23.1rc0
    is not indexed (11 refs of 5 claims pin it); run 'annotate index vllm@v0.23.1rc0'``."""
    pin = "pins" if refs == 1 else "pin"
    return f"{message} ({counted(refs, 'ref')} of {counted(claims, 'claim')} {pin} it); {hint}"
