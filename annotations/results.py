"""What ``annotate check`` finds: one result per ref of every claim, and a summary."""

from __future__ import annotations

import posixpath
from collections import Counter
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TypedDict

from annotations.wording import counted, of_count


class Summary(TypedDict):
    """A report's figures, as the JSON and SARIF reports give them."""

    refs: int
    claims: int
    articles: int
    counts: dict[str, int]
    waived: int
    failing: int
    targets: list[str]
    unindexed_targets: list[str]


class Status(str, Enum):
    """A ref's state at the target version, from best to worst."""

    FRESH = "fresh"
    COSMETIC = "cosmetic"
    UNINDEXED = "unindexed"
    CHANGED = "changed"
    MOVED = "moved"
    RELATION_MISSING = "relation-missing"
    QUOTE_MISSING = "quote-missing"
    REMOVED = "removed"
    BROKEN = "broken"

    @property
    def severity(self) -> int:
        return list(Status).index(self)

    @property
    def stale(self) -> bool:
        return self not in (Status.FRESH, Status.COSMETIC, Status.UNINDEXED)


@dataclass(frozen=True)
class RefResult:
    """One ref of one claim, compared between its pin and the target version."""

    article: str
    claim: str
    claim_text: str
    file: str
    line: int
    ref: str
    resolved: str | None
    target: str | None
    status: Status
    message: str
    changes: tuple[str, ...] = ()
    new_ref: str | None = None
    candidates: tuple[str, ...] = ()
    diff: str | None = None
    old_url: str | None = None
    new_url: str | None = None
    candidate_urls: tuple[str | None, ...] = ()
    """The permalink of each of ``candidates``, in their order (None where there is none)."""
    code_went_to: tuple[str, ...] = ()
    """Of a removed symbol, the places at the target where its code stands now (a hint):
    ``REPO@VERSION:PATH::QUALNAME``; of lines of a gone file, ``REPO@VERSION:PATH``, the
    file where the code around them went."""
    code_went_to_urls: tuple[str | None, ...] = ()
    """The permalink of each of ``code_went_to``, in their order (a file's without lines;
    None where there is none)."""
    users_now_use: tuple[str, ...] = ()
    """Of a removed module-level symbol, the classes and functions its users at the pin,
    living on at the target, name in the lines that replaced those naming it
    (``REPO@VERSION:PATH::QUALNAME``): a hint."""
    alias: str | None = None
    """Of a moved module-level symbol, the line of its file at the target that still binds
    its old name to its new place (``REPO@VERSION:PATH#Lx``): an alias kept for callers."""
    alias_url: str | None = None
    waived_until: str | None = None
    waiver_reason: str | None = None
    waiver_expired: bool = False
    failing: bool = False


@dataclass(frozen=True)
class InputError:
    """An annotation file that could not be read, where and why: its claims are not checked."""

    file: str
    line: int | None
    message: str


@dataclass(frozen=True)
class UncheckedTarget:
    """A target version not in the index: ``refs`` refs of its repo were checked against
    nothing; ``advice`` says how to index it."""

    target: str
    refs: int
    advice: str

    @property
    def error(self) -> str:
        """``target vllm@v3 is not indexed, so 5 refs were not checked; run '...'``."""
        refs = f"{counted(self.refs, 'ref')} {of_count(self.refs, 'was', 'were')}"
        return f"target {self.target} is not indexed, so {refs} not checked; {self.advice}"


@dataclass(frozen=True)
class CheckReport:
    results: tuple[RefResult, ...]
    target_versions: tuple[str, ...] = ()
    fail_on: tuple[str, ...] = field(default_factory=tuple)
    input_errors: tuple[InputError, ...] = ()
    unindexed_targets: tuple[str, ...] = ()
    unchecked_targets: tuple[UncheckedTarget, ...] = ()
    """Of `unindexed_targets`, each with how many refs were left unchecked and how to
    index it: an error of the run, not a status of refs."""
    unindexed_pins: tuple[tuple[str, str], ...] = ()
    """The versions refs are pinned at that are configured but not indexed yet, each with
    what to do about it."""

    @property
    def unreadable_files(self) -> frozenset[str]:
        return frozenset(error.file for error in self.input_errors)

    def with_input_errors(self, errors: tuple[InputError, ...]) -> CheckReport:
        """This report with the files that could not be read: their last stored claims,
        which the file no longer says, are dropped from the results."""
        report = replace(self, input_errors=self.input_errors + errors)
        unreadable = report.unreadable_files
        kept = tuple(result for result in self.results if result.file not in unreadable)
        return replace(report, results=kept)

    def with_files_under(self, folder: str) -> CheckReport:
        """This report with its files' paths (relative to the project's folder) made
        relative to the folder above that ``folder`` names: code scanning and workflow
        commands read paths from the repository's root."""
        if not folder:
            return self

        def moved(path: str) -> str:
            return path if posixpath.isabs(path) else posixpath.normpath(f"{folder}/{path}")

        return replace(
            self,
            results=tuple(replace(result, file=moved(result.file)) for result in self.results),
            input_errors=tuple(replace(error, file=moved(error.file))
                               for error in self.input_errors),
        )

    @property
    def counts(self) -> dict[str, int]:
        counted = Counter(result.status.value for result in self.results)
        return {status.value: counted.get(status.value, 0) for status in Status}

    @property
    def failing(self) -> bool:
        return any(result.failing for result in self.results)

    @property
    def failing_refs(self) -> int:
        return sum(1 for result in self.results if result.failing)

    def claim_statuses(self) -> dict[tuple[str, str], Status]:
        """Each (article, claim)'s status, its worst ref's, in the order of the results."""
        worst: dict[tuple[str, str], Status] = {}
        for result in self.results:
            key = (result.article, result.claim)
            if key not in worst or result.status.severity > worst[key].severity:
                worst[key] = result.status
        return worst

    def summary(self) -> Summary:
        return {
            "refs": len(self.results),
            "claims": len({(r.article, r.claim) for r in self.results}),
            "articles": len({r.article for r in self.results}),
            "counts": self.counts,
            "waived": sum(1 for r in self.results if r.waived_until and not r.waiver_expired),
            "failing": self.failing_refs,
            "targets": list(self.target_versions),
            "unindexed_targets": list(self.unindexed_targets),
        }
