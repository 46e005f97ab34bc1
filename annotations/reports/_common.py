"""Helpers shared by the report formats: waivers, severity, grouping and the summary line."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from annotations.results import CheckReport, InputError, RefResult, Status
from annotations.wording import counted
from indexer.literals import split_lines

Level = Literal["error", "warning", "notice"]

MAX_DIFF_LINES = 20
"""Diff lines shown per changed ref before a ``... N more lines`` marker."""

SUMMARY_ORDER: tuple[Status, ...] = (
    Status.FRESH,
    Status.COSMETIC,
    Status.CHANGED,
    Status.MOVED,
    Status.REMOVED,
    Status.QUOTE_MISSING,
    Status.RELATION_MISSING,
    Status.BROKEN,
    Status.UNINDEXED,
)
"""The order statuses are counted in by the summary line and the Markdown table."""

STATUS_HELP: dict[Status, tuple[str, str]] = {
    Status.FRESH: (
        "The ref is unchanged at the target version.",
        "Nothing to do: the code the claim points at is the same at the target version.",
    ),
    Status.COSMETIC: (
        "The ref changed only cosmetically (formatting, comments, docstrings).",
        "The claim most likely still holds; re-pin it to the target version when convenient.",
    ),
    Status.UNINDEXED: (
        "The ref's pinned or target version is not indexed.",
        "Index the missing version (`annotate index`) so the ref can be compared.",
    ),
    Status.CHANGED: (
        "The code the ref points at changed in substance.",
        "Read the diff, update the claim if it no longer holds, then re-pin the ref.",
    ),
    Status.MOVED: (
        "The symbol moved to another file or name.",
        "Rewrite the ref to its new location (the result's new_ref) and re-check the claim.",
    ),
    Status.RELATION_MISSING: (
        "A relation the claim relies on (its `uses:` refs) no longer holds.",
        "Check whether the code still uses the listed symbols and update the claim.",
    ),
    Status.QUOTE_MISSING: (
        "The quoted text is no longer found in the ref's code.",
        "Update the quote to the current code, or the claim if its meaning changed.",
    ),
    Status.REMOVED: (
        "The symbol no longer exists at the target version.",
        "Point the ref at a replacement (see the candidates) or retire the claim.",
    ),
    Status.BROKEN: (
        "The ref cannot be resolved even at its pinned version.",
        "Fix the ref: its path, symbol or line range does not exist where it is pinned.",
    ),
}
"""Per status: a one-sentence description and the advice shown as help."""


def is_waived(result: RefResult) -> bool:
    """Whether an unexpired waiver accepts the result's status."""
    return bool(result.waived_until) and not result.waiver_expired


def needs_attention(result: RefResult) -> bool:
    """Whether the result is stale and no active waiver accepts it."""
    return result.status.stale and not is_waived(result)


def level(result: RefResult) -> Level | None:
    """How loudly to report a result; None for results that need no mention."""
    if result.failing:
        return "error"
    if is_waived(result):
        return "notice"
    if result.status.stale:
        return "warning"
    if result.status is Status.UNINDEXED:
        return "notice"
    return None


def waiver_note(result: RefResult) -> str | None:
    """``waived until DATE (reason)``, ``waiver expired DATE``, or None without a waiver."""
    if not result.waived_until:
        return None
    if result.waiver_expired:
        return f"waiver expired {result.waived_until}"
    reason = f" ({result.waiver_reason})" if result.waiver_reason else ""
    return f"waived until {result.waived_until}{reason}"


def display_ref(result: RefResult) -> str:
    """The ref as written, with ``-> new_ref`` when it has one."""
    if result.new_ref:
        return f"{result.ref} -> {result.new_ref}"
    return result.ref


def message_beside_ref(result: RefResult) -> str:
    """The message without a leading ``moved to NEW_REF``, which `display_ref` already shows."""
    lead = f"moved to {result.new_ref}"
    if result.new_ref and result.message.startswith(lead):
        return result.message.removeprefix(lead).lstrip("; ")
    return result.message


def location(item: RefResult | InputError) -> str:
    """``file:line`` of the annotation, or just the file when the line is unknown."""
    return f"{item.file}:{item.line}" if item.line and item.line > 0 else item.file


def by_article(results: Iterable[RefResult]) -> dict[str, list[RefResult]]:
    """Results grouped by article, articles and results in their first-seen order."""
    groups: dict[str, list[RefResult]] = {}
    for result in results:
        groups.setdefault(result.article, []).append(result)
    return groups


def truncate_lines(text: str, limit: int = MAX_DIFF_LINES) -> tuple[list[str], int]:
    """The first `limit` lines of `text` and how many more were cut."""
    lines = [line.removesuffix("\n") for line in split_lines(text)]
    return lines[:limit], max(0, len(lines) - limit)


def has_unwaived_stale(report: CheckReport) -> bool:
    return any(needs_attention(result) for result in report.results)


def summary_line(report: CheckReport) -> str:
    """``N claims, M refs: 250 fresh, 3 cosmetic, ... (11 waived); stale``."""
    summary = report.summary()
    counts = report.counts
    parts = ", ".join(f"{counts[status.value]} {status.value}" for status in SUMMARY_ORDER)
    waived = summary["waived"]
    waived_text = f" ({waived} waived)" if waived else ""
    head = f"{counted(summary['claims'], 'claim')}, {counted(summary['refs'], 'ref')}"
    notes = "".join(f"; {note}" for note in (unreadable_note(report),
                                              unindexed_target_note(report)) if note)
    return f"{head}: {parts}{waived_text}; {verdict(report)}{notes}"


def verdict(report: CheckReport) -> str:
    """``stale``, ``nothing stale``, or, when ``fail_on`` holds a status that is not stale
    (``unindexed``, say) and the run fails on it, ``nothing stale, but 3 refs failing``;
    ``not checked`` when nothing is stale but a target is not indexed (the run's error);
    ``nothing stale in the files read`` when an annotation file could not be read (the
    Markdown summary's words: what that file claims is not known)."""
    if has_unwaived_stale(report):
        return "stale"
    if report.unchecked_targets:
        return "not checked"
    if report.failing:
        return f"nothing stale, but {counted(report.failing_refs, 'ref')} failing (fail_on)"
    return "nothing stale in the files read" if report.input_errors else "nothing stale"


def unindexed_target_note(report: CheckReport) -> str:
    """``target vllm@v0.52.0 is not indexed: ...``, or nothing."""
    if not report.unindexed_targets:
        return ""
    targets = report.unindexed_targets
    runs = " ".join(targets)
    one = len(targets) == 1
    return (f"target{'' if one else 's'} {', '.join(targets)} {'is' if one else 'are'} not "
            f"indexed, so {'its' if one else 'their'} refs were compared with nothing: run "
            f"'annotate index {runs}'")


def unreadable_note(report: CheckReport) -> str:
    """``2 annotation files could not be read (not checked)``, or nothing."""
    files = len(report.unreadable_files)
    if not files:
        return ""
    return f"{counted(files, 'annotation file')} could not be read (not checked)"
