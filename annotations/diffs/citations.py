"""Which claims cite the symbols of a version diff.

A stored claim ref of the diff's repo that holds at its pin (one broken there, ``check``'s
``broken``, was made so by no change) and is not pinned at B or past it (a claim written
against B's code is not made stale by the changes that led to B) cites a listed symbol when

* it names a symbol (``path::qualname``) that is the listed symbol's location at A or
  at B, whatever other version the ref is pinned at; or
* it names lines pinned at A of the symbol's file at A that overlap the symbol; of
  nested symbols (a class and its method) only the innermost are cited.

A ``uses:`` target of a ref of the same repo cites its listed symbol as a ref would,
when the relation no longer holds at B: the ref's symbol there (at its new place, when it
moved) no longer names the target, or is gone (``check`` reports the claim
``relation-missing`` or ``removed``). A target in another repo has no listed symbol to
cite, but its relation breaks the same way. When neither the target nor the ref's symbol is
listed (the ref's method is unchanged, and so is the target, but its class's bases, which
``super()`` names, changed), the ref cites the listed class around its symbol.

A line ref whose lines no listed symbol holds (a module's imports, a file that defines
nothing) and that changed from A to B is listed on its own (`uncited_lines`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from annotations.changes import Verdict
from annotations.comparison import places_of
from annotations.diffs.model import (
    LINES,
    ArticleImpact,
    Citation,
    ClaimImpact,
    LineChange,
    Location,
    SymbolChange,
)
from annotations.matching import Match, Matcher, SourceStore, SymbolSnapshot
from annotations.resolve import unnamed_uses
from db import queries
from db.database import Database
from indexer.literals import split_lines

Before = Callable[[str, str], bool]
"""Whether a version of the diff's repo comes before another (`written_past`)."""

_SQL = (
    "SELECT article, title, claim_id, text, source_file, version, written, line, path,"
    " qualname, start_line, end_line, quote FROM claim_links WHERE repo = ? AND path IS NOT NULL"
    " AND state = 'linked' ORDER BY article, line, claim_id"
)


def cited_refs(database: Database, repo: str) -> list[dict]:
    """Every claim ref of ``repo`` that holds at its pin (rows of the ``claim_links``
    view): a ref broken there (``check``: broken), its ``uses:`` wrong from the start,
    was not broken by a change and cites nothing."""
    return list(database.query(_SQL, (repo,)))


_USES_SQL = (
    "SELECT article, title, claim_id, text, source_file, repo, version, written, resolved,"
    " line, path,"
    " qualname, NULL AS start_line, NULL AS end_line, NULL AS quote, ref_written, ref_version,"
    " ref_path, ref_qualname FROM claim_use_links WHERE ref_repo = ?"
    " AND qualname IS NOT NULL AND ref_qualname IS NOT NULL AND state = 'linked'"
    " ORDER BY article, line, claim_id"
)


def broken_uses(
    database: Database, matcher: Matcher, matches: Iterable[Match], repo: str
) -> list[dict]:
    """The ``uses:`` targets (rows of ``claim_use_links``) of ``repo``'s symbol refs whose
    relation does not hold at the matcher's version B, in ``repo`` or in another; not
    those of a ref broken at its pin (a relation that never held)."""
    rows = list(database.query(_USES_SQL, (repo,)))
    if not rows:
        return []
    gone = {(match.old.path, match.old.qualname): match.new for match in matches
            if match.verdict in (Verdict.MOVED, Verdict.REMOVED)}

    def at_b(row: dict) -> SymbolSnapshot | None:
        place = (row["ref_path"], row["ref_qualname"])
        if row["ref_version"] != matcher.b.version and place in gone:
            return gone[place]
        return matcher.b.lookup(*place)

    return [row for row in rows if not _names_use(matcher, at_b(row), row)]


def _names_use(matcher: Matcher, symbol: SymbolSnapshot | None, use: dict) -> bool:
    if symbol is None:
        return False
    parent = matcher.b.lookup(symbol.path, symbol.parent) if symbol.parent else None
    header = parent.signature if parent is not None and parent.kind == "class" else ""
    return not unnamed_uses(symbol.source, [use], header)


class LineTexts:
    """The text of line refs' lines at their pins, and where it stands."""

    def __init__(self, store: SourceStore, repo: str) -> None:
        self.store, self.repo = store, repo
        self._pins: dict[str, int | None] = {}

    def stands(self, row: dict, key: int | None) -> bool:
        """Whether the row's lines stand as written in version ``key``'s file of its path."""
        old, new = self._text(self._pin(row["version"]), row["path"]), self._text(key, row["path"])
        if old is None or new is None:
            return False
        wanted = "".join(split_lines(old)[row["start_line"] - 1:row["end_line"]])
        return bool(wanted) and bool(places_of(wanted, new))

    def _pin(self, version: str) -> int | None:
        if version not in self._pins:
            self._pins[version] = queries.version_id(self.store.database, self.repo, version)
        return self._pins[version]

    def _text(self, key: int | None, path: str) -> str | None:
        blob_id = queries.file_blob(self.store.database, key, path) if key is not None else None
        return self.store.content(blob_id).decode("utf-8", "replace") if blob_id else None


def without_standing_lines(rows: list[dict], texts: LineTexts, key_b: int) -> list[dict]:
    """``rows`` but for the line refs whose lines stand as written in version ``key_b``'s
    file (``check`` calls them fresh or moved: no change up to B touched them)."""
    return [row for row in rows if row["qualname"] is not None or not texts.stands(row, key_b)]


def uncited_lines(
    rows: Sequence[dict], cited: Sequence[tuple[Citation, ...]], texts: LineTexts,
    version_a: str, version_b: str, key_a: int, before: Before,
) -> list[dict]:
    """The line refs of ``rows`` (`without_standing_lines`'s) that no listed symbol cites
    (lines no definition holds, a module's imports, a file of another language) and whose
    lines stand as written at A: they changed from A to B. Not those pinned at B or beyond
    (`written_past`)."""
    keys = {(c.article, c.claim, c.written, c.version, c.line) for found in cited for c in found}
    return [row for row in rows if row["qualname"] is None
            and not written_past(row["version"], version_a, version_b, before)
            and (row["article"], row["claim_id"], row["written"], row["version"], row["line"])
            not in keys and (row["version"] == version_a or texts.stands(row, key_a))]


Pair = tuple[Location | None, Location | None]


def written_past(pin: str, version_a: str, version_b: str, before: Before) -> bool:
    """Whether a claim pinned at ``pin`` was written against B, or a version beyond B seen
    from A (v0.25.0, of a diff from v0.20.0 to v0.23.0): its code had the changes from A
    to B already. ``before`` orders the versions (`ProjectConfig.comes_before`: a name
    that is not a version number by its place in the configured versions)."""
    if pin == version_b:
        return True
    if before(version_a, version_b):
        return before(version_b, pin)
    return before(version_b, version_a) and before(pin, version_b)


def cite(
    rows: Sequence[dict], changes: Sequence[Pair], version_a: str, version_b: str,
    before: Before,
) -> list[tuple[Citation, ...]]:
    """The citations of each listed symbol, given as its (location at A, location at B)
    (one of them None when it was added or removed), in the order of ``changes``; none of
    a claim pinned at B or past it (`written_past`, by ``before``)."""
    by_symbol: dict[tuple[str, str], list[dict]] = defaultdict(list)
    by_lines: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows:
        pin = row.get("ref_version", row["version"])  # a uses: target's, its ref's
        if written_past(pin, version_a, version_b, before):
            continue
        if row["qualname"] is not None:
            by_symbol[(row["path"], row["qualname"])].append(row)
        else:
            by_lines[(row["version"], row["path"])].append(row)
    found: list[list[dict]] = [
        [row for location in _locations(change) for row in by_symbol.get(location, ())]
        for change in changes
    ]
    for index, row in _innermost(_line_hits(by_lines, changes, version_a)):
        found[index].append(row)
    for index, row in _through_their_class(rows, changes, version_a, version_b, before):
        found[index].append(row)
    return [citations_of(rows_found) for rows_found in found]


def _through_their_class(
    rows: Sequence[dict], changes: Sequence[Pair], version_a: str, version_b: str,
    before: Before,
) -> Iterable[tuple[int, dict]]:
    """(change index, the ref's row) of each broken ``uses:`` row whose target and ref's
    symbol are not listed, but a class around the ref's symbol is: the bases it changed
    are what broke the relation."""
    listed = {location: index for index, change in enumerate(changes)
              for location in _locations(change)}
    for row in rows:
        if ("ref_qualname" not in row
                or written_past(row["ref_version"], version_a, version_b, before)
                or row["qualname"] is None or (row["path"], row["qualname"]) in listed
                or (row["ref_path"], row["ref_qualname"]) in listed):
            continue
        parts = row["ref_qualname"].split(".")
        classes = (".".join(parts[:end]) for end in range(len(parts) - 1, 0, -1))
        index = next((listed[place] for name in classes
                      if (place := (row["ref_path"], name)) in listed), None)
        if index is not None:
            yield index, {**row, "written": row["ref_written"], "version": row["ref_version"],
                          "path": row["ref_path"], "qualname": row["ref_qualname"],
                          "ref_written": None}


def _locations(change: Pair) -> list[tuple[str, str]]:
    return list(dict.fromkeys(
        (location.path, location.qualname) for location in change if location is not None
    ))


def _line_hits(
    by_lines: dict[tuple[str, str], list[dict]], changes: Sequence[Pair], version_a: str
) -> list[tuple[int, dict, Location]]:
    """(change index, row, the symbol at A it overlaps) of every line ref overlap."""
    if not by_lines:
        return []
    hits = []
    for index, (old, _new) in enumerate(changes):
        if old is None:
            continue
        for row in by_lines.get((version_a, old.path), ()):
            if row["start_line"] <= old.end_line and old.start_line <= row["end_line"]:
                hits.append((index, row, old))
    return hits


def _innermost(hits: list[tuple[int, dict, Location]]) -> Iterable[tuple[int, dict]]:
    per_row: dict[int, list[tuple[int, Location]]] = defaultdict(list)
    rows = {}
    for index, row, location in hits:
        per_row[id(row)].append((index, location))
        rows[id(row)] = row
    for key, found in per_row.items():
        for index, location in found:
            if not any(_contains(location, other) for _, other in found if other != location):
                yield index, rows[key]


def _contains(outer: Location, inner: Location) -> bool:
    return (
        outer.path == inner.path
        and outer.start_line <= inner.start_line
        and inner.end_line <= outer.end_line
    )


def citations_of(rows: Iterable[dict]) -> tuple[Citation, ...]:
    """The rows as citations, by article, line and claim; a ref cited twice, once."""
    unique = {
        (row["article"], row["claim_id"], row["written"], row["version"], row["line"]): row
        for row in rows
    }
    return tuple(
        Citation(row["article"], row["title"], row["claim_id"], row["text"], row["version"],
                 row["written"], row["line"], row["quote"], row.get("ref_written"),
                 row["source_file"])
        for row in sorted(unique.values(), key=lambda r: (r["article"], r["line"], r["claim_id"]))
    )


def impacts(
    changes: Iterable[SymbolChange], lines: Iterable[LineChange] = ()
) -> tuple[ArticleImpact, ...]:
    """The articles and claims that cite listed symbols or lines, by article path then
    line."""
    claims: dict[tuple[str, str], dict] = {}
    cited = [*((change.ref, change.section.value, change.citations) for change in changes),
             *((change.ref, LINES, change.citations) for change in lines)]
    for ref, section, citations in cited:
        for citation in citations:
            entry = claims.setdefault((citation.article, citation.claim), {
                "citation": citation, "symbols": {}, "first": citation,
            })
            if citation.line < entry["first"].line:
                entry["first"] = citation
            entry["symbols"][(ref, section)] = None
    articles: dict[str, list[ClaimImpact]] = defaultdict(list)
    titles: dict[str, str | None] = {}
    for (article, claim), entry in claims.items():
        citation, first = entry["citation"], entry["first"]
        titles[article] = citation.title
        articles[article].append(ClaimImpact(article, claim, citation.text, citation.version,
                                             first.line, tuple(entry["symbols"]), first.file))
    return tuple(
        ArticleImpact(article, titles[article],
                      tuple(sorted(found, key=lambda c: (c.line, c.claim))))
        for article, found in sorted(articles.items())
    )
