"""The objects of a version diff report: plain, immutable, and renderer-agnostic.

A whole-version diff of real vLLM lists tens of thousands of symbols: the per-symbol
objects are named tuples, several times cheaper to create than frozen dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from indexer.config import line_span


class Section(str, Enum):
    """Where a symbol is listed; the order of the members is the order of the report."""

    CHANGED = "changed"
    MOVED = "moved"
    REMOVED = "removed"
    ADDED = "added"
    COSMETIC = "cosmetic"


SECTION_TITLES: dict[Section, str] = {
    Section.CHANGED: "Changed",
    Section.MOVED: "Moved or renamed",
    Section.REMOVED: "Removed",
    Section.ADDED: "Added",
    Section.COSMETIC: "Cosmetic",
}

NOT_LINKED = "No claim is linked yet, so none is shown: run {link} (or {check}) first."
"""What the reports say of claims before any link; ``link`` and ``check`` are the commands,
as code."""

NONE_STORED = ("The last link stored no claim, so none is shown: run {link} to see which "
               "annotation files could not be loaded.")
"""What the reports say of claims after a link that stored none (a link whose files hold
no claim is refused; one whose files failed to load stores none of theirs)."""

COUNT_ORDER = ("unchanged", "cosmetic", "changed", "moved", "removed", "added")
"""The verdicts counted in a summary, in display order."""


class Location(NamedTuple):
    """A symbol at one version, with its GitHub permalink when the repo has one."""

    path: str
    qualname: str
    kind: str
    start_line: int
    end_line: int
    url: str | None = None

    @property
    def ref(self) -> str:
        return f"{self.path}::{self.qualname}"

    @property
    def lines(self) -> str:
        return f"{self.start_line}-{self.end_line}"


class Citation(NamedTuple):
    """One claim ref that cites a listed symbol; or a ``uses:`` target of the ref
    ``used_by`` (the ref as written), whose relation no longer holds. ``file`` is the
    annotation file the ref is written in, at ``line``."""

    article: str
    title: str | None
    claim: str
    text: str
    version: str
    written: str
    line: int
    quote: str | None = None
    used_by: str | None = None
    file: str = ""

    @property
    def where(self) -> str:
        return written_at(self.file, self.line)


def written_at(file: str, line: int) -> str:
    """``FILE:LINE`` of a ref in an annotation file, where its author edits it."""
    return f"{file}:{line}"


LINES = "lines"
"""What a claim cites in a `LineChange`, where a `SymbolChange` has its section."""


class LinePlace(NamedTuple):
    """Lines of a file at one version, with their GitHub permalink when the repo has one."""

    path: str
    start_line: int
    end_line: int
    url: str | None = None

    @property
    def ref(self) -> str:
        return f"{self.path}#{line_span(self.start_line, self.end_line)}"


class FilePlace(NamedTuple):
    """A file at one version, with its GitHub permalink when the repo has one."""

    path: str
    url: str | None = None


class LineChange(NamedTuple):
    """Lines that line refs cite, pinned at ``version`` (A, or where they stood as written
    at A), that no listed symbol holds and that no longer stand as written in their file at
    B: changed there or, ``file_gone``, with no file of that path. Of a file gone, ``new``
    is where they stand as written at B, as ``check`` finds them (its ``moved``), and
    ``candidates`` the other places, when several are about as close; else ``code_went_to``
    the file where the definitions around them went, if any (a module renamed)."""

    version: str
    path: str
    start_line: int
    end_line: int
    file_gone: bool
    url: str | None = None
    citations: tuple[Citation, ...] = ()
    new: LinePlace | None = None
    candidates: tuple[LinePlace, ...] = ()
    code_went_to: FilePlace | None = None

    @property
    def ref(self) -> str:
        return f"{self.path}#{line_span(self.start_line, self.end_line)}"


class NestedClass(NamedTuple):
    """A nested class whose own changes (in full, one line each) changed the body of the
    class around it."""

    name: str
    changes: tuple[str, ...]


class Usage(NamedTuple):
    """Names of definitions a changed symbol started or stopped using (sorted, capped;
    the totals count them all)."""

    started: tuple[str, ...] = ()
    stopped: tuple[str, ...] = ()
    started_total: int = 0
    stopped_total: int = 0


class SymbolChange(NamedTuple):
    """One listed symbol: ``old`` at version A (None if added), ``new`` at B (None if
    removed). For moves, ``how`` is ``moved``, ``renamed`` or ``moved and renamed`` and
    ``content`` how the content compares; ``candidates`` are the other targets of an
    ambiguous move, or the closest symbols of a removed one; ``code_went_to``, of a removed
    one, the symbols at B where its code stands now (`Matcher.code_went_to`), and
    ``users_now_use``, of a removed one that claims cite, the classes and functions its
    users, living on at B, name in its place (`annotations.used_instead`). ``changes``
    say each kind of change in one line, ``changes_in_full`` with the detail the reports
    show (the body's: the ``nested`` classes that changed it, and how)."""

    section: Section
    package: str
    old: Location | None
    new: Location | None
    kinds: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()
    content: str | None = None
    how: str | None = None
    candidates: tuple[Location, ...] = ()
    score: float | None = None
    usage: Usage | None = None
    citations: tuple[Citation, ...] = ()
    old_source: str | None = None
    new_source: str | None = None
    code_went_to: tuple[Location, ...] = ()
    changes_in_full: tuple[str, ...] = ()
    nested: tuple[NestedClass, ...] = ()
    users_now_use: tuple[Location, ...] = ()

    @property
    def location(self) -> Location:
        found = self.old or self.new
        assert found is not None
        return found

    @property
    def ref(self) -> str:
        return self.location.ref

    @property
    def kind(self) -> str:
        return self.location.kind

    @property
    def has_sources(self) -> bool:
        return self.old_source is not None and self.new_source is not None


@dataclass(frozen=True)
class ClaimImpact:
    """A claim that cites listed symbols: ``symbols`` are (ref, section value) pairs;
    ``file`` and ``line`` where the first of its refs that cite them is written."""

    article: str
    claim: str
    text: str
    version: str
    line: int
    symbols: tuple[tuple[str, str], ...]
    file: str = ""

    @property
    def where(self) -> str:
        return written_at(self.file, self.line)


@dataclass(frozen=True)
class ArticleImpact:
    article: str
    title: str | None
    claims: tuple[ClaimImpact, ...]


@dataclass(frozen=True)
class DiffReport:
    """Symbol changes from ``repo``@``version_a`` to ``version_b``.

    ``counts`` and ``packages`` cover every symbol of the two versions (verdicts of A's
    symbols, and B's additions); ``changes`` are the listed symbols: all that are not
    unchanged, or (``annotated``) only those that claims cite; ``lines``, the cited lines
    that changed where no listed symbol holds them. ``diff_limit`` is how many
    side-by-side diffs were asked for; ``with_sources`` how many symbols have them.
    ``claims_linked``: whether a link has run; before the first one, and after one that
    stored no claim (``claims_stored``: how many it stored), ``articles`` is empty
    whatever the annotation files say.
    """

    repo: str
    version_a: str
    version_b: str
    annotated: bool
    counts: dict[str, int]
    packages: dict[str, dict[str, int]]
    changes: tuple[SymbolChange, ...]
    articles: tuple[ArticleImpact, ...] = ()
    diff_limit: int = 0
    with_sources: int = 0
    diffable: int = 0
    lines: tuple[LineChange, ...] = ()
    claims_linked: bool = True
    claims_stored: int = 0

    @property
    def title(self) -> str:
        return f"{self.repo} {self.version_a} → {self.version_b}"

    def section(self, section: Section) -> tuple[SymbolChange, ...]:
        return tuple(change for change in self.changes if change.section is section)

    @property
    def listed(self) -> dict[str, int]:
        """How many symbols each section lists."""
        return {section.value: len(self.section(section)) for section in Section}

    @property
    def claim_count(self) -> int:
        """How many claims `articles` lists: those citing listed symbols or changed lines."""
        return sum(len(article.claims) for article in self.articles)

    @property
    def claims_cite(self) -> str:
        """What the claims of `articles` cite, as the reports' lead says it."""
        cited = {section == LINES for article in self.articles for claim in article.claims
                 for _, section in claim.symbols}
        return " or ".join(_CITED[lines] for lines in sorted(cited))


_CITED = {False: "listed symbols", True: "changed lines"}
