"""A Markdown report for a GitHub job summary or PR comment.

Text from annotations and code is escaped (`text`): HTML-escaped so it cannot inject tags,
Markdown punctuation backslash-escaped so it cannot format, link or break a table cell, the
``:`` of ``://`` and the ``.`` of ``www.`` written as entities so GitHub does not autolink a
URL (its autolinks would keep the backslashes), and newlines turned into ``<br>``. Diffs go
into fenced blocks whose fence is longer than any backtick run in the diff, so no diff line
can close them. Each ref links to its GitHub permalinks at its pin and at the target
(`linked`, `version_links`, which the diff's Markdown report uses too).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from annotations.reports._common import (
    SUMMARY_ORDER,
    by_article,
    has_unwaived_stale,
    location,
    needs_attention,
    truncate_lines,
    unindexed_target_note,
    unreadable_note,
    waiver_note,
)
from annotations.results import CheckReport, RefResult, Status
from annotations.wording import counted

HEADING = "## annotate check"
COLUMNS = ("Status", "Claim", "Ref", "New ref / candidates", "Changes", "Message")

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~#$])")
_LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f]")
_BACKTICK_RUN = re.compile("`+")
# What starts one of GitHub's autolinks, which would take the backslash escapes into the URL.
_AUTOLINK = re.compile(r"(:)(?=//)|(?<![0-9A-Za-z])(www)(\.)", re.IGNORECASE)


def text(value: str, *, newline: str = "<br>") -> str:
    """`value` safe inside a table cell or heading: it renders literally, on one line."""
    value = _CONTROL.sub(" ", value)
    value = _MARKDOWN_SPECIAL.sub(r"\\\1", value)
    value = html.escape(value, quote=False)
    value = _AUTOLINK.sub(_entity, value)
    return _LINE_BREAK.sub(newline, value)


def _entity(match: re.Match[str]) -> str:
    """``&#58;`` for the ``:`` of ``://``, ``www&#46;`` for ``www.``: shown alike, not linked."""
    if match.group(1):
        return "&#58;"
    return f"{match.group(2)}&#46;"


def code(value: str) -> str:
    """`value` in a monospace ``<code>`` element, escaped like `text`."""
    return f"<code>{text(value, newline=' ')}</code>"


def linked(label: str, url: str | None) -> str:
    """``label`` as a link to ``url``, when there is one: an ``<a href>`` whose URL is
    HTML-escaped with its ``|`` percent-encoded, so it cannot break a table."""
    if not url:
        return label
    return f'<a href="{html.escape(url.replace("|", "%7C"), quote=True)}">{label}</a>'


def version_links(places: Iterable[tuple[str, str | None]]) -> str:
    """``at A · at B``, each version linked to its place there; those with no URL left out."""
    return " · ".join(linked(f"at {text(version)}", url) for version, url in places if url)


def fence_for(block: str) -> str:
    """A backtick fence longer than every backtick run in `block` (at least three)."""
    longest = max((len(run) for run in _BACKTICK_RUN.findall(block)), default=0)
    return "`" * max(3, longest + 1)


def render(report: CheckReport) -> str:
    """Heading, verdict, a table of counts, then a table per article of its non-fresh refs."""
    parts = [HEADING, _verdict(report), *_unread_files(report), *_unindexed_targets(report),
             _summary_table(report)]
    groups = {
        article: rows
        for article, results in by_article(report.results).items()
        if (rows := [r for r in results if r.status is not Status.FRESH or r.failing])
    }
    if not groups:
        parts.append("All refs are fresh.")
    budget = MAX_BYTES - _size(parts) - _CUT_NOTE_BYTES
    sections = [_article_section(article, results) for article, results in groups.items()]
    if _size(sections) > budget:  # every article's table before any article's diffs
        sections = [_article_section(article, results, diffs=False)
                    for article, results in groups.items()]
    for shown, section in enumerate(sections):
        budget -= _size([section])
        if budget < 0:
            parts.append(_cut_note(list(groups.values())[shown:]))
            break
        parts.append(section)
    return "\n\n".join(parts)


MAX_BYTES = 1_000_000
"""What the report may take: GitHub refuses a job summary over 1 MiB."""
_CUT_NOTE_BYTES = 400


def _size(parts: list[str]) -> int:
    return sum(len(part.encode("utf-8")) + 2 for part in parts)


def _cut_note(left: list[list[RefResult]]) -> str:
    refs = sum(len(results) for results in left)
    return (f"*{counted(len(left), 'more article')} ({counted(refs, 'ref')}) not shown: the "
            "report is cut to fit GitHub's 1 MiB job summary; run `annotate check` for all.*")


def _verdict(report: CheckReport) -> str:
    summary = report.summary()
    head = (f"**{counted(summary['claims'], 'claim')}, {counted(summary['refs'], 'ref')}** in "
            f"{counted(summary['articles'], 'article')}")
    if report.target_versions:
        head += " against " + ", ".join(code(t) for t in report.target_versions)
    if has_unwaived_stale(report):  # in the order of `_common.verdict`
        attention = sum(1 for r in report.results if needs_attention(r))
        noun = "ref needs" if attention == 1 else "refs need"
        return f"{head}. **Stale:** {attention} {noun} attention."
    if report.failing:
        failing = report.failing_refs
        noun = "ref has" if failing == 1 else "refs have"
        return f"{head}. **Failing:** {failing} {noun} a status in fail\\_on."
    read = " in the files read" if report.input_errors else ""
    return f"{head}. **Nothing stale{read}.**"


def _unread_files(report: CheckReport) -> list[str]:
    if not report.input_errors:
        return []
    items = [f"- {code(location(error))}: {text(error.message)}"
             for error in report.input_errors]
    head = (f"**{unreadable_note(report).capitalize()}**: fix "
            f"{'it' if len(report.unreadable_files) == 1 else 'them'} and check again.")
    return [head, "\n".join(items)]


def _unindexed_targets(report: CheckReport) -> list[str]:
    note = unindexed_target_note(report)
    return [f"**Error**: {text(note)}."] if note else []


def _summary_table(report: CheckReport) -> str:
    counts = report.counts
    summary = report.summary()
    rows = ["| Status | Refs |", "| --- | ---: |"]
    rows += [f"| {status.value} | {counts[status.value]} |" for status in SUMMARY_ORDER]
    rows += [f"| waived | {summary['waived']} |", f"| failing | {summary['failing']} |"]
    return "\n".join(rows)


def _article_section(article: str, results: list[RefResult], diffs: bool = True) -> str:
    rows = [
        "| " + " | ".join(COLUMNS) + " |",
        "| " + " | ".join("---" for _ in COLUMNS) + " |",
    ]
    rows += [_row(result) for result in results]
    parts = [f"### {text(article, newline=' ')}", "\n".join(rows)]
    changed = [r for r in results if r.status is Status.CHANGED and r.diff] if diffs else []
    if changed:
        parts.append(_diff_details(changed))
    return "\n\n".join(parts)


def _row(result: RefResult) -> str:
    cells = (
        _badge(result),
        f"{code(result.claim)}<br>{text(location(result))}",
        _ref_cell(result),
        _new_ref_cell(result),
        text(", ".join(result.changes)),
        _message_cell(result),
    )
    return "| " + " | ".join(cells) + " |"


def _badge(result: RefResult) -> str:
    badge = f"<kbd>{result.status.value}</kbd>"
    if result.failing:
        badge += " **failing**"
    note = waiver_note(result)
    return f"{badge}<br>{text(note)}" if note else badge


def _ref_cell(result: RefResult) -> str:
    """The ref as written, with links to its place at its pin and at the target."""
    pin = result.resolved.split(":", 1)[0] if result.resolved else ""
    places = [(pin.partition("@")[2], result.old_url),
              ((result.target or "").partition("@")[2], result.new_url)]
    links = version_links(places)
    return f"{code(result.ref)}<br>{links}" if links else code(result.ref)


def _new_ref_cell(result: RefResult) -> str:
    refs = [linked(code(result.new_ref), result.new_url)] if result.new_ref else []
    if result.candidates:
        urls = result.candidate_urls or (None,) * len(result.candidates)
        refs.append("candidates: " + ", ".join(linked(code(candidate), url) for candidate, url
                                               in zip(result.candidates, urls, strict=True)))
    return "<br>".join(refs)


def _message_cell(result: RefResult) -> str:
    message = text(result.message)
    if result.claim_text:
        claim = f"<sub>{text(result.claim_text)}</sub>"
        message = f"{message}<br>{claim}" if message else claim
    return message


def _diff_details(results: list[RefResult]) -> str:
    noun = "ref" if len(results) == 1 else "refs"
    parts = [f"<details><summary>Diffs of {len(results)} changed {noun}</summary>"]
    parts += [_diff_block(result) for result in results]
    parts.append("</details>")
    return "\n\n".join(parts)


def _diff_block(result: RefResult) -> str:
    shown, more = truncate_lines(result.diff or "")
    body = "\n".join(_CONTROL.sub(" ", line.expandtabs(4)) for line in shown)
    if more:
        body += f"\n... {counted(more, 'more line')}"
    fence = fence_for(body)
    title = f"{code(result.claim)} {code(result.ref)} ({text(location(result))})"
    return f"{title}\n\n{fence}diff\n{body}\n{fence}"
