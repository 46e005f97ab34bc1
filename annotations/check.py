"""``annotate check``: compare every linked ref at its pin with its repo's target version.

Statuses are those of `annotations.results.Status`; a claim's status is its worst ref's.
A ``quote`` that still stands in the target symbol keeps a changed symbol's claim valid
(reported ``fresh`` with a note): the quote is the evidence the author chose.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from annotations.comparison import (
    Comparison,
    MadeComparison,
    SymbolComparer,
    compare_lines,
    places_instead,
    symbol_diff,
)
from annotations.errors import AnnotationError
from annotations.forking import balanced, can_fork, fork_map
from annotations.links import AnnotationFiles, link_if_changed
from annotations.model import Waiver, governing_waiver
from annotations.quotes import quote_holds, quote_stands
from annotations.refs import RefForm, parse_ref
from annotations.resolve import (
    Resolved,
    ResolveError,
    Resolver,
    UnindexedVersion,
    linked_text,
)
from annotations.results import CheckReport, InputError, RefResult, Status, UncheckedTarget
from annotations.used_instead import UsersInstead
from db import claims as claim_store
from db.database import Database
from db.queries import is_python_path
from indexer.config import ProjectConfig, RepoConfig


@dataclass(frozen=True)
class CheckOptions:
    against: dict[str, str]
    today: datetime.date
    fail_on: tuple[str, ...]
    source_files: frozenset[str] | None = None  # only the refs written in these files
    workers: int = 1
    """Processes that compare refs at once, each its version pairs (`_compare_ahead`)."""


@dataclass(frozen=True)
class LinkedCheck:
    """A check of the links brought up to date (`check_linked`)."""

    report: CheckReport
    """With the annotation files that could not be read as its input errors: their claims
    are not checked (their old links' lines may no longer be theirs)."""
    unreadable: list[AnnotationError]
    """Why each of those files could not be read (a ref that does not resolve is a result,
    not one of these)."""
    split: list[AnnotationError]
    """The link's `LinkOutcome.split`: an article's claims read as two articles', or left
    unread; said by check too, which CI runs instead of link."""


def check_linked(
    database: Database, config: ProjectConfig, options: CheckOptions,
    files: AnnotationFiles | None = None, *, relink: bool = True,
) -> LinkedCheck:
    """Link ``files`` (default the config's `annotation_files`) again where they changed,
    unless not ``relink``, then `check_all`."""
    outcome = link_if_changed(database, config, files=files) if relink else None
    report = check_all(database, config, options)
    if outcome is None:
        return LinkedCheck(report, [], [])
    unreadable = [error for error in outcome.errors if not isinstance(error, ResolveError)]
    inputs = tuple(InputError(error.file or "", error.line, error.explained)
                   for error in unreadable)
    return LinkedCheck(report.with_input_errors(inputs), unreadable, outcome.split)


def check_all(database: Database, config: ProjectConfig, options: CheckOptions) -> CheckReport:
    """Check every stored ref (run `annotations.links.link_if_changed` first)."""
    resolver = Resolver(database, config)
    comparer = SymbolComparer(resolver)
    waivers = claim_store.waivers(database)
    results: dict[int, RefResult] = {}  # by the ref's position among those checked
    repos: set[str | None] = set()
    pins: dict[str, str] = {}  # their advice, in their first order
    unchecked: Counter[str | None] = Counter()  # the unindexed refs of each repo
    _compare_ahead(comparer, config, options)
    for position, row, result in _ref_results(comparer, config, options,
                                              _selected_refs(database, options)):
        results[position] = _apply_waivers(result, waivers.get(row["claim_key"], ()), options)
        repos.add(row["repo"])
        if result.status is Status.UNINDEXED:
            unchecked[_repo_of(config, row)] += 1
        if row["state"] == "unindexed" and (pin := _unindexed_pin(config, row)):
            pins.setdefault(pin, resolver.index_advice(pin, config.file_name))
    comparer.save()
    targets = _targets(config, options, repos)
    missing = _unindexed(resolver, targets, unchecked)
    ordered = tuple(results[position] for position in range(len(results)))
    return CheckReport(ordered, targets, options.fail_on,
                       unindexed_targets=tuple(target.target for target in missing),
                       unchecked_targets=missing, unindexed_pins=tuple(pins.items()))


def _compare_ahead(
    comparer: SymbolComparer, config: ProjectConfig, options: CheckOptions
) -> None:
    """Compare the refs of the version pairs that have refs not compared yet, in up to
    ``options.workers`` processes at once, each the refs of its pairs, and hand what they
    made to ``comparer``, from which `check_all` then reads every comparison. A pair's
    first comparison loads both versions' symbols and finds where every changed one went
    (~1 s a pair at vLLM v0.20.0 -> v0.25.0), which only the pair's own refs need: a
    collection pinned at several versions paid it once per pair, one pair after another.
    Each process compares its refs as `check_all` does, in the same order, with a
    comparer of its own: what a comparison says depends only on its pair, so the results
    are those that one process makes."""
    if options.workers < 2 or not can_fork():
        return
    database = comparer.resolver.database
    pair_of = _pair_finder(comparer.resolver, config, options)
    pairs = {pair_of(repo, version) for repo, version in claim_store.linked_versions(database)}
    if len(pairs - {None}) < 2:
        return  # one pair at most to compare: not worth reading every ref to find out
    pending = _pending_pairs(comparer, options, pair_of)
    if len(pending) < 2:
        return
    made = fork_map(functools.partial(_comparisons, database, config, options),
                    balanced([[pair] for pair in pending], options.workers),
                    in_child=database.reconnect_in_child)
    for part in made:
        comparer.adopt(part)


def _pending_pairs(
    comparer: SymbolComparer, options: CheckOptions,
    pair_of: Callable[[str, str], tuple[int, int] | None],
) -> list[tuple[int, int]]:
    """The version pairs (pin, target keys) that have a ref whose comparison is not
    made yet, in the order of their first refs; read from the refs' keys alone (a ref
    outside its target's wheel, which is not compared, may count)."""
    pending: dict[tuple[int, int], None] = {}
    for ref in claim_store.linked_ref_keys(comparer.resolver.database):
        repo, version, path, qualname, exact, start_line, source_file = ref
        if options.source_files is not None and source_file not in options.source_files:
            continue
        pair = pair_of(repo, version)
        if pair is not None and pair not in pending and not comparer.is_stored(
                pair, path, qualname, exact, start_line):
            pending[pair] = None
    return list(pending)


def _pair_finder(
    resolver: Resolver, config: ProjectConfig, options: CheckOptions
) -> Callable[[str, str], tuple[int, int] | None]:
    """The version pair (the keys of ``repo@version`` and of its target) of refs pinned
    at ``repo@version``, each found once; None when either is not indexed, or when the
    pin is the target: such refs are compared at once (the same blob), where they are."""
    found: dict[tuple[str, str], tuple[int, int] | None] = {}

    def pair_of(repo: str, version: str) -> tuple[int, int] | None:
        if (repo, version) not in found:
            found[repo, version] = version_pair(repo, version)
        return found[repo, version]

    def version_pair(repo: str, version: str) -> tuple[int, int] | None:
        target = target_of(config, options, repo)
        try:
            pair = (resolver.version_key(repo, version),
                    resolver.version_key(repo, target)) if target else None
        except UnindexedVersion:
            return None
        return pair if pair is not None and pair[0] != pair[1] else None

    return pair_of


def _comparisons(
    database: Database, config: ProjectConfig, options: CheckOptions,
    pairs: list[tuple[int, int]],
) -> list[MadeComparison]:
    """The comparisons `check_all` makes of the refs of the version ``pairs``, by a
    comparer of their own."""
    comparer = SymbolComparer(Resolver(database, config))
    pair_of = _pair_finder(comparer.resolver, config, options)
    rows = (row for row in _selected_refs(database, options)
            if row["state"] == "linked" and pair_of(row["repo"], row["version"]) in pairs)
    for _ in _ref_results(comparer, config, options, rows):
        pass
    return comparer.made()


def _ref_results(
    comparer: SymbolComparer, config: ProjectConfig, options: CheckOptions,
    rows: Iterable[dict],
) -> Iterator[tuple[int, dict, RefResult]]:
    """Each of ``rows`` with its position among them and its result, its waivers not
    looked at. The refs to removed symbols come last: where their code went is found for
    all of them at once, once every other ref was compared."""
    removed: list[tuple[int, dict]] = []
    for position, row in enumerate(rows):
        result = _check_ref(comparer, config, options, row, where_code_went=False)
        if result.status is Status.REMOVED:
            removed.append((position, row))
        else:
            yield position, row, result
    for position, row in removed:
        yield position, row, _check_ref(comparer, config, options, row)


def _selected_refs(database: Database, options: CheckOptions) -> Iterator[dict]:
    """The stored refs to check: those written in ``options.source_files``, if given."""
    return (row for row in claim_store.all_refs(database)
            if options.source_files is None or row["source_file"] in options.source_files)


def _unindexed(
    resolver: Resolver, targets: tuple[str, ...], unchecked: Counter[str | None]
) -> tuple[UncheckedTarget, ...]:
    """The targets not in the index, each with how many refs of its repo (``unchecked``:
    the unindexed refs of each) were compared with nothing, and how to index it."""
    missing = []
    for target in targets:
        repo, _, version = target.partition("@")
        try:
            resolver.version_key(repo, version)
        except UnindexedVersion as error:
            missing.append(UncheckedTarget(target, unchecked[repo], error.hint or
                                           f"run 'annotate index {target}'"))
    return tuple(missing)


def _targets(config: ProjectConfig, options: CheckOptions, repos: set[str | None]) -> tuple:
    """The target of every repo a ref names, also when none of its refs could be compared
    (all unindexed, say): ``fix --bump`` pins claims there."""
    named = (repo for repo in repos if repo is not None and repo in config.repos)
    targets = {f"{repo}@{target}" for repo in named
               if (target := target_of(config, options, repo)) is not None}
    return tuple(sorted(targets))


def target_of(config: ProjectConfig, options: CheckOptions, repo: str) -> str | None:
    return options.against.get(repo) or config.repo(repo).target_version


def moved_refs(database: Database, config: ProjectConfig, options: CheckOptions, *,
               lines: bool = True) -> list[RefResult]:
    """The stored refs that `check_all` finds ``moved``, each with only what tells where
    to (``new_ref``, ``candidates``): no quote, relation, diff or waiver of any ref is
    looked at (``links SYMBOL`` asks which refs moved to SYMBOL). Without ``lines``, the
    refs that cite lines, not a symbol, are left out uncompared: lines move to lines.
    The comparisons it makes are stored, so where removed symbols' code went is found
    before they are: the next check reads them back (on the catalogue's unchecked index,
    links 2.7 s user CPU and check 0.4 s after it; not stored, 1.6 s and 2.6 s)."""
    comparer = SymbolComparer(Resolver(database, config))
    moved = []
    for row in claim_store.all_refs(database):
        if not lines and row["qualname"] is None:
            continue
        compared = _compared(comparer, config, options, row, where_code_went=False)
        if isinstance(compared, RefResult):
            continue
        target, _, comparison = compared
        if comparison.status is Status.MOVED and comparison.new is not None:
            moved.append(_result(row, target, Status.MOVED, comparison.message,
                                 new_ref=comparison.new.canonical,
                                 candidates=comparison.candidates))
    comparer.save()
    return moved


RefKey = tuple[str, str, str, str | None, int]
"""A stored ref: its article, claim id, ref as written, pin and line."""


def fresh_refs(
    comparer: SymbolComparer, config: ProjectConfig, target: tuple[str, str],
    refs: set[RefKey],
) -> set[RefKey]:
    """Those of the stored ``refs`` that `check_all` calls ``fresh`` against ``target``
    (repo, version), their waivers not looked at: ``diff --annotated`` lists the others.
    ``comparer`` need not say where a removed symbol's code went."""
    if not refs:
        return set()
    repo, version = target
    options = CheckOptions(against={repo: version}, today=datetime.date.today(), fail_on=())
    fresh = set()
    for row in claim_store.all_refs(comparer.resolver.database):
        key = (row["article"], row["claim_id"], row["written"], row["version"], row["line"])
        if key in refs and _check_ref(comparer, config, options, row).status is Status.FRESH:
            fresh.add(key)
    return fresh


def _result(
    row: dict, target: str | None, status: Status, message: str, **found: Any
) -> RefResult:
    """The result of the stored ref ``row``, made once with all that was found of it
    (``found``: `RefResult`'s other fields): a `RefResult` of 26 fields takes ~6 µs to copy,
    and a check of 35,000 refs made three or four of each."""
    return RefResult(
        article=row["article"], claim=row["claim_id"], claim_text=row["claim_text"],
        file=row["source_file"], line=row["line"], ref=row["written"],
        resolved=row["resolved"], target=target, status=status, message=message, **found,
    )


def _check_ref(
    comparer: SymbolComparer, config: ProjectConfig, options: CheckOptions, row: dict,
    *, where_code_went: bool = True,
) -> RefResult:
    """The ref's result; without ``where_code_went``, a removed symbol's may not say yet
    where its code went (`_compared`)."""
    compared = _compared(comparer, config, options, row, where_code_went=where_code_went)
    if isinstance(compared, RefResult):
        return compared
    target, pinned, comparison = compared
    return _finish(comparer, config, target, row, pinned, comparison)


def _compared(
    comparer: SymbolComparer, config: ProjectConfig, options: CheckOptions, row: dict,
    *, where_code_went: bool = True,
) -> RefResult | tuple[str, Resolved, Comparison]:
    """The ref's comparison with its target (the target, the pinned symbol and the
    comparison), or its result when it cannot be compared. Without ``where_code_went``,
    a removed symbol's comparison may not say yet where its code went
    (`SymbolComparer.compare`)."""
    comparable = _comparable(comparer.resolver, config, options, row)
    if isinstance(comparable, RefResult):
        return comparable
    pinned, target_key = comparable.pinned, comparable.target_key
    if pinned.qualname is None:
        comparison = compare_lines(comparer, pinned, target_key)
    else:
        comparison = _as_named(comparer.resolver, row, comparable.version, comparer.compare(
            pinned, target_key, where_code_went=where_code_went))
    return comparable.target, pinned, comparison


class _Comparable(NamedTuple):
    """A ref that is compared: its target (``REPO@VERSION``, its version and key) and its
    pinned symbol or lines."""

    target: str
    version: str
    target_key: int
    pinned: Resolved


def _comparable(
    resolver: Resolver, config: ProjectConfig, options: CheckOptions, row: dict
) -> RefResult | _Comparable:
    """What the ref is compared with, or its result when it cannot be compared."""
    if row["state"] == "broken":
        return _result(row, None, Status.BROKEN, row["message"] or "")
    if row["state"] == "unindexed":
        return _result(row, None, Status.UNINDEXED, _unindexed_message(resolver, config, row))
    version = target_of(config, options, row["repo"])
    if version is None:
        return _result(row, None, Status.UNINDEXED,
                       f"no target version is configured for {row['repo']}")
    target = f"{row['repo']}@{version}"
    try:
        target_key = resolver.version_key(row["repo"], version)
    except UnindexedVersion as error:
        return _result(row, target, Status.UNINDEXED, f"target {error.message} ({error.hint})")
    pinned = _pinned(resolver, row)
    if resolver.outside_wheel(target_key, pinned.path):
        return _result(row, target, Status.UNINDEXED,
                       f"{pinned.path} is not in {target}, which was indexed from its PyPI "
                       f"wheel (its package's Python files only); index {target} from git to "
                       "check this ref")
    return _Comparable(target, version, target_key, pinned)


def _as_named(resolver: Resolver, row: dict, version: str, comparison: Comparison) -> Comparison:
    """A move is no change to a ref written as a name (``vllm.config.CacheConfig``, or a
    qualname) that still names the same symbol at the target: the package re-exports it
    from its new module. It is then fresh, or changed when its code changed."""
    new = comparison.new
    if comparison.status is not Status.MOVED or new is None or comparison.candidates:
        return comparison
    ref = parse_ref(row["written"])
    if ref.form is not RefForm.DOTTED:
        return comparison
    try:
        named = resolver.resolve(dataclasses.replace(ref, repo=row["repo"], version=version))
    except ResolveError:
        return comparison
    if (named.path, named.qualname) != (new.path, new.qualname):
        return comparison
    where = f"{row['written']} still names it at {new.pin}, now in {new.path}"
    if not comparison.changes:
        return Comparison(Status.FRESH, where, new)
    return Comparison(Status.CHANGED, f"{where}; {comparison.message}", new,
                      comparison.changes, diff=symbol_diff(resolver, _pinned(resolver, row),
                                                           new))


def _unindexed_message(resolver: Resolver, config: ProjectConfig, row: dict) -> str:
    """The link's message, with the ``annotate index`` that would index the ref's pin."""
    message = row["message"] or ""
    pin = _unindexed_pin(config, row)
    if pin is None or "annotate index" in message:
        return message
    return f"{message} ({resolver.index_advice(pin, config.file_name)})"


def _unindexed_pin(config: ProjectConfig, row: dict) -> str | None:
    """``REPO@VERSION`` of an unindexed ref's pin, or None when its repo is not known."""
    repo = _repo_of(config, row)
    return f"{repo}@{row['version']}" if repo and row["version"] else None


def _repo_of(config: ProjectConfig, row: dict) -> str | None:
    """The configured repo a stored ref names, or None when it names none."""
    if row["repo"] is not None:
        return row["repo"]
    github = config.repo_for_github(parse_ref(row["written"]).github or "")  # a permalink's
    return github.name if github else None


def _pinned(resolver: Resolver, row: dict) -> Resolved:
    key = resolver.version_key(row["repo"], row["version"])
    return Resolved(
        repo=row["repo"], version=row["version"], version_key=key, path=row["path"],
        blob_id=row["blob_id"], start_line=row["start_line"], end_line=row["end_line"],
        exact=row["exact"], normalized=row["normalized"], qualname=row["qualname"],
        kind=row["kind"], shape=row["shape"],
    )


def _finish(
    comparer: SymbolComparer,
    config: ProjectConfig,
    target: str,
    row: dict,
    pinned: Resolved,
    comparison: Comparison,
) -> RefResult:
    """The result of the ref ``row``, whose ``pinned`` symbol compared with ``target``
    as ``comparison`` says, once its quote, linked lines and ``uses:`` are looked at."""
    resolver = comparer.resolver
    new = comparison.new
    status, message = _relation_checked(comparer, row, comparison)
    status, message = _text_checked(resolver, row, pinned, comparison, status, message)
    repo = config.repo(pinned.repo)
    alias: tuple[str, str | None] | None = None
    if status is Status.MOVED:
        alias, clauses = _moved_clauses(resolver, repo, row, pinned, comparison)
        message += clauses
    instead: UsersInstead = ()
    if status is Status.REMOVED:
        instead = comparison.users_instead
        message += _removed_clauses(resolver, row, pinned, comparison)
    return _result(
        row,
        target,
        status,
        message,
        changes=comparison.changes,
        new_ref=new.canonical if comparison.status is Status.MOVED and new else None,
        candidates=comparison.candidates,
        diff=comparison.diff,
        old_url=repo.permalink(pinned.version, pinned.path, pinned.start_line, pinned.end_line),
        new_url=repo.permalink(new.version, new.path, new.start_line, new.end_line)
        if new else None,
        candidate_urls=tuple(_permalink_of(resolver, config, candidate)
                             for candidate in comparison.candidates),
        code_went_to=comparison.code_went_to,
        code_went_to_urls=tuple(_place_permalink(resolver, config, place)
                                for place in comparison.code_went_to),
        users_now_use=places_instead(instead),
        alias=alias[0] if alias else None,
        alias_url=alias[1] if alias else None,
    )


def _relation_checked(
    comparer: SymbolComparer, row: dict, comparison: Comparison
) -> tuple[Status, str]:
    """The comparison's status and message; relation-missing when a ``uses:`` target's
    name no longer occurs in the symbol at the target."""
    status, message, new = comparison.status, comparison.message, comparison.new
    if status not in _RELATION_CHECKED or new is None:
        return status, message
    missing = _missing_relations(comparer.resolver, row, new)
    if not missing:
        return status, message
    return Status.RELATION_MISSING, f"{new.canonical} no longer refers to " + ", ".join(
        _missing_use(comparer, use, new) for use in missing)


def _text_checked(
    resolver: Resolver, row: dict, pinned: Resolved, comparison: Comparison,
    status: Status, message: str,
) -> tuple[Status, str]:
    """``status`` and ``message`` once the ref's quote, else its linked lines, are looked
    for at the target: a changed symbol whose quote (or linked lines) still stands is
    fresh; a quote that no longer stands is quote-missing."""
    new = comparison.new
    changes = ", ".join(comparison.changes)
    if row["quote"] and new is not None and status is not Status.REMOVED:
        if not _holds(resolver, row["quote"], pinned, new):
            return Status.QUOTE_MISSING, _quote_missing(resolver, row["quote"], pinned, new,
                                                        comparison.candidates)
        if status is Status.CHANGED:
            return Status.FRESH, f"changed ({changes}), but the quote still stands"
        return status, message
    if status is not Status.CHANGED:
        return status, message
    linked = _linked_lines(resolver, row, pinned)
    if linked is None:
        return status, message
    if new is not None and _holds(resolver, linked, pinned, new):
        return Status.FRESH, f"changed ({changes}), but the linked lines still stand"
    return status, message + "; the linked lines no longer stand"


def _moved_clauses(
    resolver: Resolver, repo: RepoConfig, row: dict, pinned: Resolved, comparison: Comparison
) -> tuple[tuple[str, str | None] | None, str]:
    """What a moved symbol's message adds: whether the evidence stands at its new place
    (when it changed), and the old name its file keeps, whose ref and permalink come
    first (None when it keeps none)."""
    new = comparison.new
    clauses = _evidence_at_new_place(resolver, row, pinned, new) if comparison.changes else ""
    kept = _old_name_kept(resolver, pinned, new)
    if new is None or kept is None:
        return None, clauses
    aliased, alias_line = kept
    alias = f"{new.pin}:{pinned.path}#L{alias_line}"
    alias_url = repo.permalink(new.version, pinned.path, alias_line, alias_line)
    return (alias, alias_url), clauses + _alias_clause(pinned, new, aliased, alias)


def _removed_clauses(
    resolver: Resolver, row: dict, pinned: Resolved, comparison: Comparison
) -> str:
    """What a removed symbol's message adds: where its quote stands now, and what its
    users refer to where they referred to it."""
    clauses = ""
    if row["quote"]:
        clauses += _quote_among(resolver, row["quote"], pinned, _symbol_places(comparison))
    if comparison.users_instead:
        clauses += f"; its users at {pinned.pin} no longer refer to it: " + ", ".join(
            f"{user} names {', '.join(place.rpartition('::')[2] for place in places)} where it did"
            for user, places in comparison.users_instead)
    return clauses


def _alias_clause(pinned: Resolved, new: Resolved, aliased: str, alias: str) -> str:
    """What the message says of an old name its file keeps at ``alias``
    (``REPO@VERSION:PATH#Lx``), bound to ``aliased`` (``PATH::QUALNAME``), the moved
    symbol's new place or another."""
    where = f"; {pinned.qualname} still stands at {alias}, "
    if aliased == f"{new.path}::{new.qualname}":
        return where + "an alias of it: code that uses the old name still works"
    return where + f"an alias of {new.pin}:{aliased}: code that uses the old name gets that"


def _old_name_kept(
    resolver: Resolver, pinned: Resolved, new: Resolved | None
) -> tuple[str, int] | None:
    """What a moved module-level symbol's file at the target binds its old name to, and on
    which line, if it does: an alias kept for callers, of the new place
    (``_get_kv_cache_config_deepseek_v4 = _get_kv_cache_config_packed``, ``from .x import
    new as old``) or of another (``NixlConnector = NixlPullConnector``, where its base
    ``NixlBaseConnector`` holds most of its code)."""
    if new is None or not pinned.qualname or "." in pinned.qualname:
        return None
    return resolver.alias_of(new.version_key, pinned.path, pinned.qualname)


def _permalink_of(resolver: Resolver, config: ProjectConfig, ref: str) -> str | None:
    """The GitHub permalink of a candidate (a canonical ref at the target), if it resolves."""
    place = _candidate_place(resolver, ref)
    if place is None:
        return None
    return config.repo(place.repo).permalink(place.version, place.path, place.start_line,
                                             place.end_line)


def _place_permalink(resolver: Resolver, config: ProjectConfig, place: str) -> str | None:
    """The permalink of a place where a removed ref's code went: a symbol's (as a
    candidate's), or a file's (``REPO@VERSION:PATH``), without lines."""
    if "::" in place:
        return _permalink_of(resolver, config, place)
    pin, _, path = place.partition(":")
    repo, _, version = pin.partition("@")
    url = config.repo(repo).permalink(version, path, 1, 1)
    return url and url.partition("#")[0]


def _candidate_place(resolver: Resolver, ref: str) -> Resolved | None:
    """Where a candidate (a canonical ref at the target) is, if it resolves."""
    try:
        return resolver.resolve(parse_ref(ref))
    except AnnotationError:
        return None


def _holds(resolver: Resolver, quote: str, pinned: Resolved, new: Resolved) -> bool:
    """Whether ``quote`` (or a permalink's linked lines) stands in ``new`` as it stood in
    ``pinned``: in code when it was code."""
    target = resolver.text_of(new)
    if not is_python_path(new.path):  # no Python comments: a kernel's "#define" is code
        return quote_stands(quote, target)
    if new.qualname is not None and new.exact == pinned.exact:  # lines keep the pin's hash
        return quote_stands(quote, target)  # the text the quote was written of
    return quote_holds(quote, target, lambda: resolver.text_of(pinned))


def _quote_missing(
    resolver: Resolver, quote: str, pinned: Resolved, new: Resolved, candidates: Iterable[str]
) -> str:
    message = f"the quote '{quote}' no longer stands in {new.canonical}"
    if quote_stands(quote, resolver.text_of(new)):
        message += "; it stands there only in a comment or docstring"
    elsewhere = _quote_elsewhere(resolver, quote, pinned, new, candidates)
    if elsewhere:
        message += f"; it stands in {', '.join(elsewhere)}"
    return message


_ELSEWHERE_NAMED = 3


def _quote_elsewhere(
    resolver: Resolver, quote: str, pinned: Resolved, new: Resolved, candidates: Iterable[str]
) -> tuple[str, ...]:
    """The innermost definitions that ``quote`` stands in as it stood, in the file of the
    symbol it no longer stands in, then in its candidates' files: where the code it quotes
    went (``BlockRemoved(``, made at vLLM v0.25.0 by a helper the method calls)."""
    files: dict[str, Resolved] = {}
    for place in (new, *filter(None, (_candidate_place(resolver, c) for c in candidates))):
        files.setdefault(place.path, place)
    holding = [definition for place in files.values()
               for definition in resolver.definitions(place)
               if _holds(resolver, quote, pinned, definition)]
    innermost = [outer for outer in holding
                 if not any(_encloses(outer, inner) for inner in holding)]
    return tuple(definition.canonical for definition in innermost[:_ELSEWHERE_NAMED])


def _encloses(outer: Resolved, inner: Resolved) -> bool:
    """Whether ``inner`` is another definition inside ``outer`` (a method of its class)."""
    return (outer.path == inner.path and outer.start_line <= inner.start_line
            and inner.end_line <= outer.end_line
            and (outer.start_line, outer.end_line) != (inner.start_line, inner.end_line))


def _symbol_places(comparison: Comparison) -> tuple[str, ...]:
    """A removed ref's candidates, then the definitions its code went to that are not
    among them (a file its lines went to is no definition to quote)."""
    went = (place for place in comparison.code_went_to if "::" in place)
    return tuple(dict.fromkeys((*comparison.candidates, *went)))


def _quote_among(
    resolver: Resolver, quote: str, pinned: Resolved, places: Iterable[str]
) -> str:
    """Which place of a removed ref (a candidate, or where its code went) its quote stands
    in, if one: the code it quotes lives on there (a class merged into another,
    ``DeepseekV4Attention.__init__`` that holds the wrapper's ``if self.compress_ratio >
    1:``; a function inlined into a method)."""
    for candidate in places:
        place = _candidate_place(resolver, candidate)
        if place is not None and _holds(resolver, quote, pinned, place):
            return f"; the quote stands in {candidate}"
    return ""


def _linked_lines(resolver: Resolver, row: dict, pinned: Resolved) -> str | None:
    """The lines a permalink links inside its symbol; None for any other ref."""
    return linked_text(row["written"], pinned.start_line, pinned.end_line, lambda: (
        resolver.source_lines(pinned.blob_id)[pinned.start_line - 1:pinned.end_line]))


def _evidence_at_new_place(
    resolver: Resolver, row: dict, pinned: Resolved, new: Resolved | None
) -> str:
    """For a symbol that moved and changed: whether the author's evidence (the quote, or
    the lines a permalink links) stands at its new place, which tells a rewrite of the
    ref from a re-reading of the claim."""
    if row["quote"]:  # a quote that no longer stands made the ref quote-missing
        return "; the quote still stands there"
    linked = _linked_lines(resolver, row, pinned)
    if linked is None or new is None:
        return ""
    if _holds(resolver, linked, pinned, new):
        return "; the linked lines still stand there"
    return "; the linked lines no longer stand there"


_RELATION_CHECKED = (Status.FRESH, Status.COSMETIC, Status.CHANGED, Status.MOVED)


def _missing_relations(resolver: Resolver, row: dict, new: Resolved | None) -> list[str]:
    """The ``uses:`` targets whose name no longer occurs in the target symbol's code."""
    if new is None or not row["has_uses"]:
        return []
    uses = claim_store.uses_of(resolver.database, row["id"])
    if not uses:
        return []
    return resolver.unnamed_uses_in(new, uses)


def _missing_use(comparer: SymbolComparer, use: str, new: Resolved) -> str:
    """A ``uses:`` target the symbol no longer names; when it refers to where that target
    moved (a class renamed), says so: its ``uses:`` is to be written anew."""
    successor = _successor(comparer, use, new)
    if successor is None or comparer.resolver.unnamed_uses_in(
            new, [{"written": successor.canonical, "qualname": successor.qualname}]):
        return use
    return (f"{use}, but it refers to {successor.canonical}, where that moved (write that in "
            "its uses:)")


def _successor(comparer: SymbolComparer, use: str, new: Resolved) -> Resolved | None:
    """Where a ``uses:`` target of ``new``'s repo moved at ``new``'s version, when it moved
    to one place (a target in another repo is not sought in this one)."""
    try:
        old = comparer.resolver.resolve(parse_ref(use))
    except AnnotationError:  # not a symbol ref, or its version is gone from the index
        return None
    if old.qualname is None or old.repo != new.repo:
        return None
    moved = comparer.compare(old, new.version_key, where_code_went=False)
    return moved.new if moved.status is Status.MOVED and not moved.candidates else None


def _apply_waivers(result: RefResult, rows: Iterable[dict], options: CheckOptions) -> RefResult:
    failing = result.status.value in options.fail_on
    waivers = (Waiver(row["status"], datetime.date.fromisoformat(row["until"]),
                      row["reason"], row["line"]) for row in rows)
    waiver = governing_waiver(waivers, result.status.value)
    if waiver is None:
        return result if failing == result.failing else replace(result, failing=failing)
    expired = not waiver.in_force(options.today)
    return replace(
        result, waived_until=waiver.until.isoformat(), waiver_reason=waiver.reason,
        waiver_expired=expired, failing=failing and expired,
    )


