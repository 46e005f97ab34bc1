"""Build a `DiffReport` from the matcher's whole-version diff.

A whole-version diff of real vLLM lists tens of thousands of symbols, so each one becomes
a `SymbolChange` once, with everything it needs: where it is, who cites it, what it
started or stopped using (content changes only) and, for the few shown side by side,
its source at both versions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TypedDict

from annotations.changes import BodyChange, Verdict
from annotations.check import RefKey, fresh_refs
from annotations.comparison import (
    SymbolComparer,
    compare_lines,
    places_instead,
    successor_file,
)
from annotations.diffs.citations import (
    LineTexts,
    broken_uses,
    citations_of,
    cite,
    cited_refs,
    impacts,
    uncited_lines,
    without_standing_lines,
)
from annotations.diffs.model import (
    Citation,
    DiffReport,
    FilePlace,
    LineChange,
    LinePlace,
    Location,
    NestedClass,
    Section,
    SymbolChange,
    Usage,
)
from annotations.diffs.usage import usage_changes
from annotations.errors import RefSyntaxError
from annotations.forking import balanced, fork_map_beside
from annotations.matching import Match, Matcher, SymbolSnapshot, package_of
from annotations.refs import Ref, RefForm, parse_ref
from annotations.resolve import ResolveError, Resolver
from annotations.results import Status
from db import claims as claim_store
from db.database import Database
from indexer.config import ProjectConfig, RepoConfig

_Went = dict[int, tuple[SymbolSnapshot, ...]]
"""Where the code of removed symbols went, by their index in the report's items."""

PARALLEL_MIN_PAIRS = 500
"""Fewer changed symbols than this: their usage is computed without forking."""

_SECTIONS = {
    Verdict.CHANGED: Section.CHANGED,
    Verdict.MOVED: Section.MOVED,
    Verdict.REMOVED: Section.REMOVED,
    Verdict.COSMETIC: Section.COSMETIC,
}
_ORDER = {section: index for index, section in enumerate(Section)}
_DIFFABLE = (Section.CHANGED, Section.MOVED, Section.COSMETIC)


class _Attached(TypedDict):
    """What a listed symbol carries besides its match."""

    citations: tuple[Citation, ...]
    usage: Usage | None
    old_source: str | None
    new_source: str | None


@dataclass(slots=True)
class _Item:
    """A listed symbol while the report is built: the match of A's symbol, or B's
    added symbol; what is found out about it is filled in stage by stage."""

    section: Section
    old: Location | None
    new: Location | None
    match: Match | None
    added: SymbolSnapshot | None = None
    citations: tuple[Citation, ...] = ()
    usage: Usage | None = None
    sources: tuple[str, str] | None = None

    @property
    def content_changed(self) -> bool:
        return self.section is Section.CHANGED or (
            self.section is Section.MOVED and self.match is not None
            and self.match.content is Verdict.CHANGED
        )

    @property
    def diffable(self) -> bool:
        return self.section in _DIFFABLE and self.new is not None and (
            self.match is None or self.match.content is not Verdict.UNCHANGED
        )

    def order(self) -> tuple:
        location = self.old or self.new
        assert location is not None
        return (_ORDER[self.section], location.path, location.start_line, location.qualname)


def build_report(
    database: Database, config: ProjectConfig, repo: str, version_a: str, version_b: str,
    *, annotated: bool = False, diff_limit: int = 0, workers: int = 1,
) -> DiffReport:
    """Every symbol change from ``repo``@``version_a`` to ``version_b``.

    ``annotated`` keeps only the symbols claims cite; ``diff_limit`` symbols (cited ones
    first) carry their source at both versions, for side-by-side diffs; ``workers``
    processes match the symbols.
    """
    repo_config = config.repo(repo)
    key_a, key_b = (config.require_version(database, repo, version)
                    for version in (version_a, version_b))
    matcher = Matcher(database, key_a, key_b)
    diff = matcher.diff(workers)
    items = _items(diff.matches, diff.added, repo_config)
    texts = LineTexts(matcher.store, repo)
    rows = without_standing_lines(cited_refs(database, repo), texts, key_b)
    uses = broken_uses(database, matcher, diff.matches, repo)
    before = partial(config.comes_before, repo)
    found = cite([*rows, *(use for use in uses if use["repo"] == repo)],
                 [(item.old, item.new) for item in items], version_a, version_b, before)
    lines = _line_changes(
        uncited_lines(rows, found, texts, version_a, version_b, key_a, before),
        matcher, repo_config)
    comparer = SymbolComparer(Resolver(database, config), where_code_went=False)
    comparer.share(matcher)  # check's answers, with the symbols the diff loaded and matched
    if any(change.file_gone for change in lines):
        lines = _where_lines_went(lines, comparer, repo_config, (key_b, version_b))
    fresh = _fresh_at_b(comparer, config, (repo, version_b),
                        [*(c for citations in found for c in citations),
                         *(c for change in lines for c in change.citations)])
    for item, citations in zip(items, found, strict=True):
        item.citations = _stale(citations, fresh)
    lines = tuple(line for line in (change._replace(citations=_stale(change.citations, fresh))
                                    for change in lines) if line.citations)
    if annotated:
        items = [item for item in items if item.citations]
    items.sort(key=_Item.order)
    went = _add_usage_and_sources(matcher, items, diff_limit, workers)
    instead = _users_now_use(comparer, items, (key_a, key_b))
    changes = tuple(_change(item, repo_config, went.get(index, ()), instead.get(index, ()))
                    for index, item in enumerate(items))
    matcher.store.clear()
    return DiffReport(
        repo, version_a, version_b, annotated, diff.counts, diff.packages, changes,
        impacts(changes, lines), diff_limit, sum(item.sources is not None for item in items),
        sum(item.diffable for item in items), lines, claim_store.was_linked(database),
        claim_store.claim_count(database),
    )


def _line_changes(rows: list[dict], matcher: Matcher, repo: RepoConfig) -> tuple:
    """`LineChange`s of the line refs ``rows``, one per pinned range, in file order."""
    ranges: dict[tuple[str, str, int, int], list[dict]] = {}
    for row in rows:
        key = (row["path"], row["version"], row["start_line"], row["end_line"])
        ranges.setdefault(key, []).append(row)
    return tuple(
        LineChange(version, path, start, end, matcher.b.blob(path) is None,
                   repo.permalink(version, path, start, end), citations_of(cited))
        for (path, version, start, end), cited in sorted(ranges.items())
    )


def _where_lines_went(
    lines: tuple[LineChange, ...], comparer: SymbolComparer, repo: RepoConfig,
    b: tuple[int, str],
) -> tuple[LineChange, ...]:
    """``lines``, those whose file is gone with where their text stands at B, as ``check``
    finds them (with their definition, in a file of its folder or name, or where the
    definitions around them went): the ref must be rewritten, as a moved symbol's. Lines
    found nowhere get the file where the definitions around them went, if any. ``b`` is
    B's version key and name."""
    return tuple(_moved_place(change, comparer, repo, b) if change.file_gone else change
                 for change in lines)


def _moved_place(
    change: LineChange, comparer: SymbolComparer, repo: RepoConfig, b: tuple[int, str]
) -> LineChange:
    key_b, version_b = b
    ref = Ref(repo.name, change.version, RefForm.LINES, path=change.path,
              start_line=change.start_line, end_line=change.end_line)
    try:
        pinned = comparer.resolver.resolve(ref)
        comparison = compare_lines(comparer, pinned, key_b)
    except ResolveError:
        return change
    if comparison.status is not Status.MOVED or comparison.new is None:
        went = successor_file(comparer, pinned, key_b)
        return change._replace(code_went_to=_file(repo, version_b, went)) if went else change
    version, new = comparison.new.version, comparison.new
    others = [parse_ref(other) for other in comparison.candidates]
    places = [(new.path, new.start_line, new.end_line),
              *((other.path or "", other.start_line or 0, other.end_line or 0)
                for other in others)]
    first, *candidates = (LinePlace(path, start, end, repo.permalink(version, path, start, end))
                          for path, start, end in places)
    return change._replace(new=first, candidates=tuple(candidates))


def _file(repo: RepoConfig, version: str, path: str) -> FilePlace:
    url = repo.permalink(version, path, 1, 1)
    return FilePlace(path, url and url.partition("#")[0])


def _fresh_at_b(
    comparer: SymbolComparer, config: ProjectConfig, b: tuple[str, str], cited: list[Citation]
) -> set[RefKey]:
    """The refs of ``cited`` that ``check`` against ``b`` calls fresh: a quote, or a
    permalink's linked lines, that still stand (in the changed symbol, or in lines no
    symbol holds), a name the package still exports; not a ref cited in its ``uses:``."""
    return fresh_refs(comparer, config, b, {_key(c) for c in cited if not c.used_by})


def _stale(citations: tuple[Citation, ...], fresh: set[RefKey]) -> tuple[Citation, ...]:
    return tuple(c for c in citations if c.used_by or _key(c) not in fresh)


def _key(citation: Citation) -> RefKey:
    return (citation.article, citation.claim, citation.written, citation.version,
            citation.line)


# --- listed symbols -------------------------------------------------------------------


def _items(
    matches: tuple[Match, ...], added: tuple[SymbolSnapshot, ...], repo: RepoConfig
) -> list[_Item]:
    items = [
        _Item(_SECTIONS[match.verdict], _location(match.old, repo),
              _location(match.new, repo) if match.new is not None else None, match)
        for match in matches
    ]
    items += [_Item(Section.ADDED, None, _location(symbol, repo), None, symbol)
              for symbol in added]
    return items


def _location(symbol: SymbolSnapshot, repo: RepoConfig) -> Location:
    url = repo.permalink(symbol.version, symbol.path, symbol.start_line, symbol.end_line)
    return Location(symbol.path, symbol.qualname, symbol.kind, symbol.start_line,
                    symbol.end_line, url)


def _where_removed_code_went(matcher: Matcher, items: list[_Item]) -> _Went:
    """Where the code of each removed symbol of ``items`` went, by its index, all found
    at once (`Matcher.where_code_went`)."""
    removed = _removed_symbols(items)
    return dict(zip(removed, matcher.where_code_went(list(removed.values())), strict=True))


def _removed_symbols(items: list[_Item]) -> dict[int, SymbolSnapshot]:
    """The removed symbols of ``items``, by their index."""
    return {index: item.match.old for index, item in enumerate(items)
            if item.match is not None and item.match.verdict is Verdict.REMOVED}


def _users_now_use(
    comparer: SymbolComparer, items: list[_Item], pair: tuple[int, int]
) -> dict[int, tuple[Location, ...]]:
    """Of each removed symbol that claims cite, by its index in ``items``, the classes and
    functions its users at A, living on at B, name in its place (check's
    ``users_now_use``): asked of the cited ones alone, for each ask reads their users."""
    found = {}
    for index, old in _removed_symbols(items).items():
        if not items[index].citations:
            continue
        found[index] = tuple(
            location for place in places_instead(comparer.users_instead(old, pair))
            if (location := _resolved_location(comparer.resolver, place)))
    return found


def _resolved_location(resolver: Resolver, canonical: str) -> Location | None:
    """The symbol a canonical ref (``REPO@VERSION:PATH::QUALNAME``) names, as a `Location`;
    None for a ref that does not name one (a path no ref can name, ``a::b.py``: a hint
    less, as check's users of such a file are)."""
    try:
        resolved = resolver.resolve(parse_ref(canonical))
    except (RefSyntaxError, ResolveError):
        return None
    if resolved.qualname is None or resolved.kind is None:
        return None
    url = resolver.config.repo(resolved.repo).permalink(
        resolved.version, resolved.path, resolved.start_line, resolved.end_line)
    return Location(resolved.path, resolved.qualname, resolved.kind, resolved.start_line,
                    resolved.end_line, url)


def _change(
    item: _Item, repo: RepoConfig, went: tuple[SymbolSnapshot, ...],
    users_now_use: tuple[Location, ...] = (),
) -> SymbolChange:
    match = item.match
    sources = item.sources or (None, None)
    common: _Attached = {
        "citations": item.citations, "usage": item.usage, "old_source": sources[0],
        "new_source": sources[1],
    }
    if match is None:  # added
        assert item.added is not None
        return SymbolChange(item.section, package_of(item.added.path), None, item.new, **common)
    return SymbolChange(
        item.section, package_of(match.old.path), item.old, item.new,
        kinds=tuple(kind.value for kind in match.kinds), changes=match.explain(),
        changes_in_full=match.explain_in_full(), nested=_nested(match),
        content=match.content.value if match.content else None,
        how=_how(match) if match.verdict is Verdict.MOVED else None,
        candidates=tuple(_location(symbol, repo) for symbol in match.candidates),
        score=match.score if match.verdict is Verdict.MOVED or match.candidates else None,
        code_went_to=tuple(_location(symbol, repo) for symbol in went),
        users_now_use=users_now_use,
        **common,
    )


def _nested(match: Match) -> tuple[NestedClass, ...]:
    """The nested classes whose changes changed the body of ``match``'s class."""
    return tuple(NestedClass(nested.name, tuple(change.in_full() for change in nested.changes))
                 for change in match.changes if isinstance(change, BodyChange)
                 for nested in change.nested)


def _how(match: Match) -> str:
    new = match.new
    assert new is not None
    renamed = new.name != match.old.name
    moved = new.path != match.old.path or new.parent != match.old.parent
    if renamed and moved:
        return "moved and renamed"
    return "renamed" if renamed else "moved"


# --- usage and sources ----------------------------------------------------------------


def _add_usage_and_sources(
    matcher: Matcher, items: list[_Item], diff_limit: int, workers: int
) -> _Went:
    """Fill in the usage of the items whose content changed and the sources of those
    shown side by side; return where the code of the removed ones went
    (`_where_removed_code_went`), found while forked processes find the usage."""
    used = [item for item in items if item.content_changed]
    shown = _diff_choice(items, diff_limit)
    contents = matcher.store.contents(
        symbol.blob_id for item in (*used, *shown) for symbol in _pair(item)
    )
    went, usages = _usages(matcher, [_pair(item) for item in used], contents, workers,
                           partial(_where_removed_code_went, matcher, items))
    for item, usage in zip(used, usages, strict=True):
        item.usage = usage
    for item in shown:
        old, new = _pair(item)
        item.sources = (_lines_of(old, contents), _lines_of(new, contents))
    return went


def _usages(
    matcher: Matcher, pairs: list[tuple[SymbolSnapshot, SymbolSnapshot]],
    contents: dict[str, bytes], workers: int, meanwhile: Callable[[], _Went],
) -> tuple[_Went, list[Usage]]:
    """``meanwhile()`` and the `usage_changes` of the pairs, these split by file over up
    to ``workers`` forked processes while this one computes ``meanwhile()`` (all here
    with one worker, or few pairs)."""
    if not pairs:
        return meanwhile(), []
    defined = matcher.defined_names()
    per_file: dict[str, list[int]] = {}  # a file's pairs together: its code is tokenized once
    for index, (old, _new) in enumerate(pairs):
        per_file.setdefault(old.path, []).append(index)
    parts = balanced(list(per_file.values()),
                     workers if len(pairs) >= PARALLEL_MIN_PAIRS else 1)

    def usages_of(part: list[int]) -> list[Usage]:
        return usage_changes([pairs[index] for index in part], contents, lambda: defined,
                             matcher.store.blob_rows)

    if len(parts) < 2:
        results = [usages_of(part) for part in parts]
        other = meanwhile()
    else:
        other, results = fork_map_beside(usages_of, parts, meanwhile,
                                         in_child=matcher.database.reconnect_in_child)
    found: dict[int, Usage] = {}
    for part, usages in zip(parts, results, strict=True):
        found.update(zip(part, usages, strict=True))
    return other, [found[index] for index in range(len(pairs))]


def _pair(item: _Item) -> tuple[SymbolSnapshot, SymbolSnapshot]:
    assert item.match is not None and item.match.new is not None
    return item.match.old, item.match.new


def _diff_choice(items: list[_Item], limit: int) -> list[_Item]:
    """The symbols shown side by side: cited ones first, then in report order."""
    if limit <= 0:
        return []
    diffable = [item for item in items if item.diffable and item.match is not None]
    diffable.sort(key=lambda item: not item.citations)  # stable: report order within
    return diffable[:limit]


def _lines_of(symbol: SymbolSnapshot, contents: dict[str, bytes]) -> str:
    """The whole lines a symbol spans (a method's indentation included)."""
    data = contents.get(symbol.blob_id, b"")
    start = data.rfind(b"\n", 0, symbol.start_byte) + 1
    end = data.find(b"\n", symbol.end_byte)
    return data[start:end if end >= 0 else len(data)].decode("utf-8", "replace")
