"""A `DiffReport` as JSON.

``{"repo", "from", "to", "annotated", "claims_linked", "claims_stored", "counts",
"listed", "packages", "articles", "changed", "moved", "removed", "added", "cosmetic",
"lines"}``: ``claims_linked`` is false before any link, ``claims_stored`` how many claims
the last link stored (none is listed when it is 0);
``counts`` and ``packages`` cover every symbol; ``listed`` counts what each section
lists; each section is a list of symbol objects (see `change_to_dict`); ``lines`` lists
the cited lines that changed where no listed symbol holds them (see `lines_to_dict`).
"""

from __future__ import annotations

import json
from typing import Any

from annotations.diffs.model import (
    LINES,
    ArticleImpact,
    Citation,
    DiffReport,
    LineChange,
    Location,
    Section,
    SymbolChange,
)


def report_to_dict(report: DiffReport) -> dict[str, Any]:
    data: dict[str, Any] = {
        "repo": report.repo,
        "from": report.version_a,
        "to": report.version_b,
        "annotated": report.annotated,
        "claims_linked": report.claims_linked,
        "claims_stored": report.claims_stored,
        "counts": report.counts,
        "listed": report.listed,
        "packages": report.packages,
        "articles": [_article(article) for article in report.articles],
    }
    for section in Section:
        data[section.value] = [change_to_dict(change) for change in report.section(section)]
    data[LINES] = [lines_to_dict(change) for change in report.lines]
    return data


def lines_to_dict(change: LineChange) -> dict[str, Any]:
    """``ref`` (``PATH#Lx-Ly``), ``version`` (the refs' pin), ``path``, ``start_line``,
    ``end_line``, ``url``, ``file_gone`` (no file of that path at B), ``new`` (of a file
    gone, where its lines stand as written at B: ``path``, ``start_line``, ``end_line``,
    ``url``; else null), ``candidates`` (other such places), ``code_went_to`` (of a file
    gone whose lines stand nowhere, the file where the definitions around them went:
    ``path``, ``url``; else null) and ``claims``."""
    return {"ref": change.ref, "version": change.version, "path": change.path,
            "start_line": change.start_line, "end_line": change.end_line, "url": change.url,
            "file_gone": change.file_gone,
            "new": change.new._asdict() if change.new is not None else None,
            "candidates": [place._asdict() for place in change.candidates],
            "code_went_to": change.code_went_to._asdict() if change.code_went_to else None,
            "claims": [_citation(citation) for citation in change.citations]}


def change_to_dict(change: SymbolChange) -> dict[str, Any]:
    """One symbol. Every section has ``ref`` (at A; at B when added), ``kind``,
    ``package``, ``old`` and ``new`` (locations: null when added, or removed) and
    ``claims`` (``article``, ``claim``, ``version``, ``ref``, ``file`` and ``line`` where
    the ref is written, ``quote`` when it has one; and ``used_by``, the ref whose ``uses:``
    names the symbol, when the claim cites it there); then

    * changed: ``kinds``, ``changes`` (one line each), ``nested`` (the nested classes
      whose own changes changed the body: ``class``, its name, and ``changes``, one line
      each), ``started_using``, ``stopped_using`` (sorted, at most `usage.MAX_NAMES`) and
      their ``..._total``;
    * moved: ``how`` (moved, renamed, moved and renamed), ``content`` (unchanged,
      cosmetic, changed), ``score``, ``candidates`` (other targets of an ambiguous move),
      and when the content changed, what a changed symbol has;
    * removed: ``candidates`` (the closest symbols at B), ``score`` (the best one's),
      ``code_went_to`` (the symbols at B where its code stands now: a hint, not a move)
      and ``users_now_use`` (of a symbol claims cite, the classes and functions its users,
      living on at B, name in its place: a hint too).
    """
    data: dict[str, Any] = {
        "ref": change.ref, "kind": change.kind, "package": change.package,
        "old": _location(change.old), "new": _location(change.new),
        "claims": [_citation(citation) for citation in change.citations],
    }
    section = change.section
    if section is Section.MOVED:
        data.update(how=change.how, content=change.content, score=change.score)
    if section in (Section.MOVED, Section.REMOVED):
        data["candidates"] = [_location(location) for location in change.candidates]
    if section is Section.REMOVED:
        data["score"] = change.score
        data["code_went_to"] = [_location(location) for location in change.code_went_to]
        data["users_now_use"] = [_location(location) for location in change.users_now_use]
    if change.usage is not None:
        usage = change.usage
        data.update(
            kinds=list(change.kinds), changes=list(change.changes),
            nested=[{"class": nested.name, "changes": list(nested.changes)}
                    for nested in change.nested],
            started_using=list(usage.started), started_using_total=usage.started_total,
            stopped_using=list(usage.stopped), stopped_using_total=usage.stopped_total,
        )
    return data


def _location(location: Location | None) -> dict[str, Any] | None:
    return None if location is None else location._asdict()


def _citation(citation: Citation) -> dict[str, Any]:
    data = {"article": citation.article, "claim": citation.claim, "version": citation.version,
            "ref": citation.written, "file": citation.file, "line": citation.line}
    if citation.quote is not None:
        data["quote"] = citation.quote
    if citation.used_by is not None:
        data["used_by"] = citation.used_by
    return data


def _article(article: ArticleImpact) -> dict[str, Any]:
    return {
        "article": article.article,
        "title": article.title,
        "claims": [
            {"claim": claim.claim, "text": claim.text, "version": claim.version,
             "file": claim.file, "line": claim.line,
             "symbols": [{"ref": ref, "section": section} for ref, section in claim.symbols]}
            for claim in article.claims
        ],
    }


def render(report: DiffReport) -> str:
    """Indented JSON with each listed symbol on one line: readable, and fast to write for
    tens of thousands of symbols (the indenting encoder is pure Python)."""
    data = report_to_dict(report)
    last = len(data) - 1
    lines = ["{"]
    for index, (key, value) in enumerate(data.items()):
        comma = "," if index < last else ""
        if isinstance(value, list) and value:
            lines += [f"  {_dumps(key)}: [", _one_per_line(key, value), f"  ]{comma}"]
        else:
            lines.append(f"  {_dumps(key)}: {_dumps(value)}{comma}")
    lines.append("}")
    return "\n".join(lines)


def _one_per_line(key: str, items: list[dict[str, Any]]) -> str:
    if key not in _SECTIONS:
        return ",\n".join(f"    {_dumps(item)}" for item in items)
    # A section's items are encoded in one call. Each starts with the key "ref", which no
    # nested object starts with, and a quote inside a string is escaped: so '}, {"ref": '
    # occurs exactly between two items.
    text = _dumps(items)[1:-1]
    return "    " + text.replace('}, {"ref": ', '},\n    {"ref": ')


_SECTIONS = frozenset((*(section.value for section in Section), LINES))
_ENCODER = json.JSONEncoder(ensure_ascii=False, check_circular=False)  # trees, no cycles


def _dumps(value: Any) -> str:
    return _ENCODER.encode(value)
