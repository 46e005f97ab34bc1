"""A `DiffReport` as Markdown (GitHub flavoured).

Everything from code, claims and paths is escaped with `annotations.reports.markdown`'s
``text``/``code``: HTML-escaped and Markdown punctuation backslash-escaped, so it renders
literally and cannot break a table. Every listed symbol, move target, candidate and line
range links to its GitHub permalink at its version (when the repo has a GitHub name), as
an ``<a href>`` whose URL is HTML-escaped with its ``|`` percent-encoded.
"""

from __future__ import annotations

from annotations.diffs.model import (
    COUNT_ORDER,
    NONE_STORED,
    NOT_LINKED,
    SECTION_TITLES,
    ArticleImpact,
    Citation,
    DiffReport,
    LineChange,
    Location,
    Section,
    SymbolChange,
)
from annotations.reports.markdown import code, linked, text, version_links
from annotations.wording import counted, of_count

_COLUMNS: dict[Section, tuple[str, ...]] = {
    Section.CHANGED: ("Symbol", "Kind", "Changes", "Started using", "Stopped using"),
    Section.MOVED: ("Symbol", "Kind", "To", "How", "Content"),
    Section.REMOVED: ("Symbol", "Kind", "Closest at the new version", "Its code went to"),
    Section.ADDED: ("Symbol", "Kind"),
    Section.COSMETIC: ("Symbol", "Kind"),
}


def render(report: DiffReport) -> str:
    parts = [f"# {text(report.title)}", _intro(report)]
    if report.annotated:
        parts += [_articles(report), _summary(report)]
    else:
        parts += [_summary(report), _articles(report)]
    parts += [_section(report, section) for section in Section]
    if report.lines:
        parts.append(_lines(report))
    return "\n\n".join(parts) + "\n"


def _intro(report: DiffReport) -> str:
    listed = sum(report.listed.values())
    compared = sum(report.counts.values()) - report.counts.get("added", 0)
    line = f"{compared} symbols of {code(report.version_a)} compared with {code(report.version_b)}"
    lines = (f", and {counted(len(report.lines), 'cited line range')} that changed"
             if report.lines else "")
    if report.annotated:
        return (f"{line}; only the {counted(listed, 'changed symbol')} that claims "
                f"cite{lines} {of_count(listed + len(report.lines), 'is', 'are')} listed.")
    return f"{line}; {listed} are listed (all but the unchanged ones){lines}."


def _summary(report: DiffReport) -> str:
    rows = ["## Summary", "", "| Verdict | Symbols | Listed |", "| --- | ---: | ---: |"]
    listed = report.listed
    rows += [
        f"| {verdict} | {report.counts.get(verdict, 0)} | {listed.get(verdict, '')} |"
        for verdict in COUNT_ORDER
    ]
    rows += ["", "### By package", "", _package_table(report)]
    return "\n".join(rows)


def _package_table(report: DiffReport) -> str:
    verdicts = COUNT_ORDER[1:]
    rows = ["| Package | " + " | ".join(verdicts) + " |",
            "| --- |" + " ---: |" * len(verdicts)]
    for package, counts in report.packages.items():
        if any(counts.get(verdict) for verdict in verdicts):
            cells = " | ".join(str(counts.get(verdict, 0)) for verdict in verdicts)
            rows.append(f"| {code(package)} | {cells} |")
    return "\n".join(rows)


def _articles(report: DiffReport) -> str:
    commands = {"link": code("annotate link"), "check": code("annotate check")}
    if not report.claims_linked:
        return f"## Affected articles\n\n{NOT_LINKED.format(**commands)}"
    if not report.claims_stored:
        return f"## Affected articles\n\n{NONE_STORED.format(**commands)}"
    if not report.articles:
        return "## Affected articles\n\nNo claim cites a listed symbol."
    count = report.claim_count
    head = (f"## Affected articles\n\n{counted(count, 'claim')} in "
            f"{counted(len(report.articles), 'article')} "
            f"{'cites' if count == 1 else 'cite'} {report.claims_cite}.")
    return "\n\n".join([head, *(_article(article) for article in report.articles)])


def _article(article: ArticleImpact) -> str:
    title = f" — {text(article.title)}" if article.title else ""
    lines = [f"### {text(article.article, newline=' ')}{title}", ""]
    for claim in article.claims:
        cited = ", ".join(f"{code(ref)} ({section})" for ref, section in claim.symbols)
        lines.append(f"- {code(claim.claim)} @{text(claim.version)} in {text(claim.where)}: "
                     f"{text(claim.text)}<br>cites {cited}")
    return "\n".join(lines)


def _section(report: DiffReport, section: Section) -> str:
    changes = report.section(section)
    head = f"## {SECTION_TITLES[section]} ({len(changes)})"
    if not changes:
        return f"{head}\n\nNone."
    columns = _COLUMNS[section]
    rows = [head, "", "| " + " | ".join(columns) + " |",
            "|" + " --- |" * len(columns)]
    rows += ["| " + " | ".join(_cells(change, report)) + " |" for change in changes]
    return "\n".join(rows)


def _lines(report: DiffReport) -> str:
    rows = [f"## Changed lines ({len(report.lines)})", "",
            f"Lines that line refs cite, that no listed symbol holds, and that no longer "
            f"stand as written in their file at {code(report.version_b)}.", "",
            "| Lines | Pinned at | At the new version |", "| --- | --- | --- |"]
    for change in report.lines:
        rows.append(f"| {linked(code(change.ref), change.url)}<br>"
                    f"cited by {_cited_by(change.citations)} "
                    f"| {text(change.version)} "
                    f"| {_lines_at_b(change)} |")
    return "\n".join(rows)


def _lines_at_b(change: LineChange) -> str:
    if change.new is not None:
        cell = f"file gone; moved to {linked(code(change.new.ref), change.new.url)}"
        if change.candidates:
            cell += "<br>or " + ", ".join(linked(code(place.ref), place.url)
                                          for place in change.candidates)
        return cell
    if change.code_went_to is not None:
        went = change.code_went_to
        return f"file gone; its code went to {linked(code(went.path), went.url)}"
    return "file gone" if change.file_gone else "changed"


def _cells(change: SymbolChange, report: DiffReport) -> list[str]:
    cells = [_symbol(change, report), text(change.kind)]
    section = change.section
    if section is Section.CHANGED:
        cells += [_changes(change), *_usage(change)]
    elif section is Section.MOVED:
        cells += [_targets(change), text(change.how or ""), _content(change)]
    elif section is Section.REMOVED:
        closest, went = (_places(places) for places in (change.candidates, change.code_went_to))
        if change.users_now_use:
            went = "<br>".join(filter(None, [
                went, f"its users now use {_places(change.users_now_use)}"]))
        cells += [closest, went]
    return cells


def _places(places: tuple[Location, ...]) -> str:
    return ", ".join(linked(code(location.ref), location.url) for location in places)


def _symbol(change: SymbolChange, report: DiffReport) -> str:
    cell = code(change.ref)
    places = [(report.version_a, change.old), (report.version_b, change.new)]
    links = version_links((version, location.url) for version, location in places
                          if location is not None)
    if links:
        cell += f"<br>{links}"
    if change.citations:
        cell += f"<br>cited by {_cited_by(change.citations)}"
    return cell


def _cited_by(citations: tuple[Citation, ...]) -> str:
    """Each citing ref's claim, with where the ref is written and what it quotes: two refs
    of one claim to one symbol are told apart."""
    return ", ".join(f"{code(f'{c.article}#{c.claim}')} ({_where(c)})" for c in citations)


def _where(citation: Citation) -> str:
    where = text(citation.where)
    if citation.used_by:
        return f"{where}, in its uses:"
    if citation.quote is not None:
        return f"{where}, quote {code(citation.quote)}"
    return where


def _changes(change: SymbolChange) -> str:
    return "<br>".join(text(line) for line in change.changes_in_full)


def _usage(change: SymbolChange) -> list[str]:
    usage = change.usage
    if usage is None:
        return ["", ""]
    return [_names(usage.started, usage.started_total), _names(usage.stopped, usage.stopped_total)]


def _names(names: tuple[str, ...], total: int) -> str:
    cell = ", ".join(code(name) for name in names)
    more = total - len(names)
    return f"{cell} (+{more} more)" if more > 0 else cell


def _targets(change: SymbolChange) -> str:
    cell = linked(code(change.new.ref), change.new.url) if change.new else ""
    if change.candidates:
        others = ", ".join(linked(code(location.ref), location.url)
                           for location in change.candidates)
        cell += f"<br>or {others}"
    return cell


def _content(change: SymbolChange) -> str:
    content = text(change.content or "")
    if change.kinds:
        content += f" ({text(', '.join(change.kinds))})"
    if change.usage is not None and (change.usage.started or change.usage.stopped):
        started, stopped = _usage(change)
        content += f"<br>started using {started or '—'}; stopped using {stopped or '—'}"
    return content
