"""The default report: one table per article, then a summary line; ANSI colour on request."""

from __future__ import annotations

import unicodedata
from dataclasses import replace

from annotations.errors import one_line
from annotations.reports._common import (
    by_article,
    display_ref,
    has_unwaived_stale,
    location,
    message_beside_ref,
    summary_line,
    truncate_lines,
    verdict,
    waiver_note,
)
from annotations.results import CheckReport, RefResult, Status
from annotations.wording import counted, pinned_at_unindexed

RESET = "\033[0m"
GREEN = "\033[32m"
YELLOW = "\033[33m"
RED = "\033[31m"
BLUE = "\033[34m"
DIM = "\033[2m"
BOLD = "\033[1m"
CYAN = "\033[36m"

STATUS_COLORS: dict[Status, str] = {
    Status.FRESH: GREEN,
    Status.COSMETIC: DIM,
    Status.UNINDEXED: BLUE,
    Status.CHANGED: YELLOW,
    Status.MOVED: YELLOW,
    Status.RELATION_MISSING: RED,
    Status.QUOTE_MISSING: RED,
    Status.REMOVED: RED,
    Status.BROKEN: RED,
}

STATUS_WIDTH = max(len(status.value) for status in Status)
INDENT = "  "
DETAIL_INDENT = "      "


def render(report: CheckReport, *, color: bool = False) -> str:
    """The report as lines of plain text; ANSI colours only when `color` is true."""
    lines: list[str] = []
    if report.target_versions:
        lines += [f"target: {', '.join(one_line(t) for t in report.target_versions)}", ""]
    results, pinned = _advice_once(report)
    for article, shown in by_article(results).items():
        lines += _article_lines(article, shown, color)
        lines.append("")
    lines += pinned
    lines.append(_summary(report, color))
    return "\n".join(lines)


def _advice_once(report: CheckReport) -> tuple[list[RefResult], list[str]]:
    """The results, each ref pinned at a version not indexed yet without the advice to
    index it, and that advice once per version, with how many refs and claims it holds."""
    results, pinned = list(report.results), []
    for _, advice in report.unindexed_pins:
        suffix = f" ({advice})"
        at = [i for i, r in enumerate(results)
              if r.status is Status.UNINDEXED and r.target is None and r.message.endswith(suffix)]
        for i in at:
            results[i] = replace(results[i], message=results[i].message.removesuffix(suffix))
        if at:
            claims = len({(results[i].article, results[i].claim) for i in at})
            pinned.append(one_line(pinned_at_unindexed(results[at[0]].message, len(at), claims,
                                                       advice)))
    return results, pinned


def paint(text: str, code: str, color: bool) -> str:
    return f"{code}{text}{RESET}" if color else text


def _article_lines(article: str, results: list[RefResult], color: bool) -> list[str]:
    claim_width = max(width(one_line(r.claim)) for r in results)
    location_width = max(width(one_line(location(r))) for r in results)
    lines = [paint(one_line(article), BOLD, color)]
    for result in results:
        lines.append(_result_line(result, claim_width, location_width, color))
        lines += _detail_lines(result, color)
    return lines


def width(value: str) -> int:
    """Terminal columns `value` takes: East Asian wide and fullwidth characters take two."""
    if value.isascii():
        return len(value)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in value)


def pad(value: str, columns: int) -> str:
    return value + " " * (columns - width(value))


def _result_line(result: RefResult, claim_width: int, location_width: int, color: bool) -> str:
    status = result.status.value
    cells = [
        paint(status, STATUS_COLORS[result.status], color) + " " * (STATUS_WIDTH - len(status)),
        pad(one_line(result.claim), claim_width),
        pad(one_line(location(result)), location_width),
        one_line(display_ref(result)),
    ]
    if result.changes:
        cells.append("[" + ", ".join(one_line(change) for change in result.changes) + "]")
    message = message_beside_ref(result)
    if message:
        cells.append(one_line(message))
    note = waiver_note(result)
    if note:
        cells.append(f"[{one_line(note)}]")
    if result.failing:
        cells.append("[failing]")
    return INDENT + "  ".join(cells).rstrip()


def _detail_lines(result: RefResult, color: bool) -> list[str]:
    lines = []
    if result.candidates:
        names = ", ".join(one_line(candidate) for candidate in result.candidates)
        lines.append(f"{DETAIL_INDENT}candidates: {names}")
    if result.status is Status.CHANGED and result.diff:
        lines += diff_lines(result.diff, color)
    return lines


def diff_lines(diff: str, color: bool) -> list[str]:
    """The diff's first lines, indented, made safe for a terminal and maybe coloured."""
    shown, more = truncate_lines(diff)
    lines = [DETAIL_INDENT + _paint_diff_line(_clean(line), color) for line in shown]
    if more:
        lines.append(f"{DETAIL_INDENT}... {counted(more, 'more line')}")
    return lines


def _clean(line: str) -> str:
    return one_line(line.expandtabs(4))


def _paint_diff_line(line: str, color: bool) -> str:
    if line.startswith(("+++", "---")):
        return paint(line, BOLD, color)
    if line.startswith("+"):
        return paint(line, GREEN, color)
    if line.startswith("-"):
        return paint(line, RED, color)
    if line.startswith("@@"):
        return paint(line, CYAN, color)
    return line


def _summary(report: CheckReport, color: bool) -> str:
    line = summary_line(report)
    if not color:
        return line
    head, _, rest = line.partition("; ")  # the verdict comes first after the counts
    said = verdict(report)
    code = RED if has_unwaived_stale(report) or report.failing else GREEN
    return f"{head}; {paint(said, code, color)}{rest[len(said):]}"
