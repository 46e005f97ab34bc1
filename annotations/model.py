"""Claims read from annotation files and Markdown articles."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from annotations.errors import AnnotationError
from annotations.refs import Ref

WAIVABLE_STATUSES: tuple[str, ...] = (
    "changed",
    "moved",
    "removed",
    "quote-missing",
    "broken",
    "relation-missing",
    "unindexed",
)
"""Statuses a claim's waiver may accept until its date."""


@dataclass(frozen=True)
class RefEntry:
    """One ref of a claim: `text` as written, `ref` parsed (and pinned by the claim's `at`).

    `uses` holds the canonical text of each ref listed under ``uses:``, pinned like `ref`.
    `line` is the 1-based line of the ref in its source file. `unreadable` is why a
    permalink in an article's body could not be read (its `ref` then names nothing): it
    is a broken claim, not an error that hides the article's other claims.
    """

    text: str
    ref: Ref
    line: int
    quote: str | None = None
    uses: tuple[str, ...] = ()
    unreadable: AnnotationError | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Waiver:
    """Accept `status` for a claim until (and including) the date `until`."""

    status: str
    until: datetime.date
    reason: str
    line: int

    def in_force(self, today: datetime.date) -> bool:
        return today <= self.until


def governing_waiver(waivers: Iterable[Waiver], status: str) -> Waiver | None:
    """The waiver that decides whether ``status`` is accepted: the latest of those for it
    (a renewed waiver counts, an older one beside it does not)."""
    return max((waiver for waiver in waivers if waiver.status == status),
               key=lambda waiver: waiver.until, default=None)


@dataclass(frozen=True)
class Claim:
    """One statement of an article and the source refs backing it.

    `at` is the claim's effective default pin (its own ``at`` or else its file's), or None.
    `line` is the 1-based line of the claim in `source_file`, `at_line` that of the ``at:``
    that pins it (its own or its file's). `body_link`: the claim is a
    permalink in a Markdown article's body, not one its author wrote as a claim.
    """

    article: str
    claim_id: str
    text: str
    at: str | None
    refs: tuple[RefEntry, ...]
    waivers: tuple[Waiver, ...]
    source_file: str
    line: int
    body_link: bool = False
    at_line: int | None = None  # the line of the ``at:`` that gave the claim its pin


@dataclass(frozen=True)
class Article:
    """An article (path or URL) and its claims, read from `source_file`."""

    path: str
    title: str | None
    source_file: str
    claims: tuple[Claim, ...]


@dataclass
class RepoFilter:
    """Which GitHub repos' permalinks in a Markdown body are claims (an article on vLLM
    links to transformers too); how many links into each other repo were left out."""

    tracks: Callable[[str], bool]
    skipped: dict[str, int] = field(default_factory=dict)

    def keeps(self, github: str) -> bool:
        if self.tracks(github):
            return True
        self.skipped[github] = self.skipped.get(github, 0) + 1
        return False


@dataclass
class LoadResult:
    """Articles that loaded without error, and every error of the files that did not;
    ``untracked``: `RepoFilter.skipped` when one was given."""

    articles: list[Article] = field(default_factory=list)
    errors: list[AnnotationError] = field(default_factory=list)
    untracked: dict[str, int] = field(default_factory=dict)
