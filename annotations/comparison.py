"""One ref at its pin against the target version, as a check status.

Symbols go through the cross-version matcher (`annotations.matching`); line ranges are
tracked by their text.
"""

from __future__ import annotations

import difflib
import itertools
import json
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

from annotations.resolve import Resolved, ResolveError, Resolver
from annotations.results import Status
from db import queries
from db.match_queries import version_label
from indexer.fingerprints import digest
from indexer.literals import split_lines

if TYPE_CHECKING:  # the matcher is imported when a comparison is not in the cache
    from annotations.matching import Match, Matcher, SourceStore, SymbolSnapshot
    from annotations.used_instead import UsersInstead

DIFF_CONTEXT_LINES = 2
ENGINE = "matcher-75"  # bump when matching, line comparisons or what is stored of them
# (diffs, hints) change: old cache rows are ignored


def places_instead(users: UsersInstead) -> tuple[str, ...]:
    """Every place that the users of a removed symbol name in its place, once each, in the
    users' order: what check's and the diff's ``users_now_use`` list."""
    return tuple(dict.fromkeys(place for _, places in users for place in places))


@dataclass(frozen=True)
class Comparison:
    status: Status
    message: str
    new: Resolved | None = None
    changes: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ()
    diff: str | None = None
    # Of a removed symbol, the places at the target where its code stands now
    # (Matcher.where_code_went); of lines of a gone file, the file where the code around
    # them went (successor_file): TARGET:REF each, as check's JSON gives them
    code_went_to: tuple[str, ...] = ()
    # Of a removed module-level symbol, what its users name instead (`used_instead`)
    users_instead: UsersInstead = ()

    def encode(self) -> str:
        return json.dumps({
            "status": self.status.value, "message": self.message,
            "new": asdict(self.new) if self.new else None, "changes": list(self.changes),
            "candidates": list(self.candidates), "diff": self.diff,
            "code_went_to": list(self.code_went_to),
            "users_instead": [[user, list(places)] for user, places in self.users_instead],
        })

    @classmethod
    def decode(cls, text: str) -> Comparison:
        data = json.loads(text)
        return cls(
            Status(data["status"]), data["message"],
            Resolved(**data["new"]) if data["new"] else None,
            tuple(data["changes"]), tuple(data["candidates"]), data["diff"],
            tuple(data["code_went_to"]),
            tuple((user, tuple(places)) for user, places in data["users_instead"]),
        )


def symbol_diff(resolver: Resolver, old: Resolved, new: Resolved) -> str:
    """A short unified diff of a symbol between two versions."""
    before = split_lines(resolver.text_of(old))
    after = split_lines(resolver.text_of(new))
    lines = difflib.unified_diff(
        before, after, fromfile=old.canonical, tofile=new.canonical, n=DIFF_CONTEXT_LINES
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def compare_lines(comparer: SymbolComparer, pinned: Resolved, target_key: int) -> Comparison:
    """Find the pinned lines' text in the same file at the target version (stored, as the
    comparisons of symbols are)."""
    return comparer.stored(pinned, target_key, partial(_compare_lines, comparer))


def _compare_lines(comparer: SymbolComparer, pinned: Resolved, target_key: int) -> Comparison:
    resolver = comparer.resolver
    target = _target_pin(resolver, target_key)
    blob_id = queries.file_blob(resolver.database, target_key, pinned.path)
    if blob_id is None:
        return _lines_elsewhere(comparer, pinned, target_key, target)
    old = resolver.text_of(pinned)
    new_text = resolver.source(blob_id)
    if blob_id == pinned.blob_id:
        return Comparison(Status.FRESH, "file unchanged", _moved_lines(pinned, target_key,
                                                                         blob_id, target, 0))
    places = places_of(old, new_text)
    if not places:
        return _changed_lines(comparer, pinned, target_key, blob_id, target)
    found = places[0] if len(places) == 1 else _own_place(
        split_lines(resolver.source(pinned.blob_id)), split_lines(new_text), pinned, places)
    if found is None:  # the same lines stand at several places, none more its own
        return _ambiguous_lines(pinned, target_key, blob_id, target, places)
    shift = found - pinned.start_line
    new = _moved_lines(pinned, target_key, blob_id, target, shift)
    if shift == 0:
        return Comparison(Status.FRESH, "lines unchanged", new)
    return Comparison(Status.MOVED, f"the lines moved by {shift:+d}", new)


def _changed_lines(
    comparer: SymbolComparer, pinned: Resolved, target_key: int, blob_id: str, target: str
) -> Comparison:
    """Lines that no longer stand: diffed as the definition holding them, with where it is at
    the target when it moved (lines above it came or went), else as the same lines there."""
    message = (f"lines {pinned.start_line}-{pinned.end_line} of {pinned.path} no longer "
               f"stand as written at {target}")
    holder = _holder(comparer.resolver, pinned)
    new = (comparer.compare(holder, target_key, where_code_went=False).new
           if holder is not None else None)
    if holder is None or new is None:
        new = _moved_lines(pinned, target_key, blob_id, target, 0)
        return Comparison(Status.CHANGED, message, new, ("body",), (),
                          symbol_diff(comparer.resolver, pinned, new))
    if new.path != pinned.path:
        went = _with_their_definition(comparer, pinned, holder, new, target)
        if went is not None:
            return replace(went, message=f"{pinned.path} no longer holds them; {went.message}")
    diff = symbol_diff(comparer.resolver, holder, new)
    if (new.path, new.start_line) == (pinned.path, holder.start_line):
        new = _moved_lines(pinned, target_key, blob_id, target, 0)  # their definition stayed
    return Comparison(Status.CHANGED, f"{message} ({holder.qualname} holds them)", new,
                      ("body",), (), diff)


def _with_their_definition(
    comparer: SymbolComparer, pinned: Resolved, holder: Resolved, new: Resolved, target: str
) -> Comparison | None:
    """The pinned lines moved with ``holder``, the definition holding them, to its place
    ``new`` at the target, when they stand there as written, once."""
    inside = [place for place in places_of(comparer.resolver.text_of(pinned),
                                           comparer.resolver.source(new.blob_id))
              if new.start_line <= place <= new.end_line]
    if len(inside) != 1:
        return None
    moved = _moved_lines(pinned, new.version_key, new.blob_id, target,
                         inside[0] - pinned.start_line, new.path)
    return Comparison(Status.MOVED, f"they stand in {holder.qualname} at "
                                    f"{moved.path}#L{moved.start_line}", moved)


def _holder(resolver: Resolver, pinned: Resolved) -> Resolved | None:
    """The innermost definition that holds all the pinned lines, if any."""
    return min(_holding(resolver.definitions(pinned), pinned),
               key=lambda d: d.end_line - d.start_line, default=None)


def _holding(definitions: list[Resolved], pinned: Resolved) -> list[Resolved]:
    """The ``definitions`` that hold all the pinned lines."""
    return [d for d in definitions
            if d.start_line <= pinned.start_line and d.end_line >= pinned.end_line]


MAX_PLACES = 5
"""More places than this where a gone file's lines stand: boilerplate, not a move."""
MIN_TEXT_TO_FOLLOW = 30
"""Characters (white space aside) that lines need before they are looked for in other
files: a lone ``return x`` stands in many."""


def _lines_elsewhere(
    comparer: SymbolComparer, pinned: Resolved, target_key: int, target: str
) -> Comparison:
    """The pinned lines of a file that is gone, found in the definition holding them at its
    place at the target, else in a file of its folder or of its name there (``abstract.py``
    merged into ``base.py``), or in a file where the definitions around them went
    (``layers/kda.py`` into ``layers/mamba/gdn/kimi.py``)."""
    resolver = comparer.resolver
    gone = f"{pinned.path} does not exist at {target}"
    holder = _holder(resolver, pinned)
    new = (comparer.compare(holder, target_key, where_code_went=False).new
           if holder is not None else None)
    went = (_with_their_definition(comparer, pinned, holder, new, target)
            if holder is not None and new is not None else None)
    if went is not None:  # however short their text: their definition is the evidence
        return replace(went, message=f"{gone}; {went.message}")
    old = resolver.text_of(pinned)
    if len("".join(old.split())) < MIN_TEXT_TO_FOLLOW:
        return _in_successor_file(comparer, pinned, target_key, target, gone)
    places = (
        (path, blob_id, place)
        for path, blob_id, text in _candidate_files(comparer, pinned, target_key)
        for place in places_of(old, text)
    )
    found = [
        _moved_lines(pinned, target_key, blob_id, target, place - pinned.start_line, path)
        for path, blob_id, place in itertools.islice(places, MAX_PLACES + 1)
    ]
    if not found:
        return _in_successor_file(comparer, pinned, target_key, target, gone)
    if len(found) > MAX_PLACES:  # a licence header, an import: no evidence of a move
        return Comparison(Status.REMOVED, f"{gone}; its lines stand at more than {MAX_PLACES}"
                                          " places in files of its folder or name, or "
                                          "where its code went: no evidence of where they "
                                          "went")
    listed = ", ".join(f"{new.path}#L{new.start_line}" for new in found)
    if len(found) > 1:
        return Comparison(Status.MOVED, f"{gone}; its lines stand at {len(found)} places "
                          f"({listed})", found[0],
                          candidates=tuple(new.canonical for new in found[1:]))
    return Comparison(Status.MOVED, f"{gone}; its lines stand in {listed}", found[0])


def _in_successor_file(
    comparer: SymbolComparer, pinned: Resolved, target_key: int, target: str, gone: str
) -> Comparison:
    """Lines of a gone file found in no file searched (or too short to search for): in
    the file where the definitions around them went (a module renamed), when they stand
    there once; else removed, naming that file."""
    went = successor_file(comparer, pinned, target_key)
    if went is None:
        return Comparison(Status.REMOVED, gone)
    resolver = comparer.resolver
    stored = next(_file_texts(resolver, target_key, [went]), None)
    places = places_of(resolver.text_of(pinned), stored[2]) if stored is not None else []
    if stored is not None and len(places) == 1:
        moved = _moved_lines(pinned, target_key, stored[1], target, places[0] - pinned.start_line,
                             went)
        return Comparison(Status.MOVED, f"{gone}; its lines stand in {went}#L{moved.start_line},"
                                        " where its code went", moved)
    unsaid = "" if places else ", where these lines do not stand as written"
    return Comparison(Status.REMOVED, f"{gone}; its code went to {went}{unsaid}",
                      code_went_to=(f"{target}:{went}",))


def successor_file(comparer: SymbolComparer, pinned: Resolved, target_key: int) -> str | None:
    """Of lines whose file is gone at the target, the target's file where the definitions
    around them went (the one holding them first), else the file it was renamed to (a file
    with no definitions: a kernel, a Markdown page), if any."""
    went = next(iter(_successor_paths(comparer, pinned, target_key)), None)
    return went or comparer.renamed_to(pinned, target_key)


RENAME_SIMILARITY = 0.5
"""The share of a gone file's bytes, in whole lines, that a file added at the target must
have too (of the larger one's) to be taken for it renamed: git's default rename score."""


def _renamed_to(resolver: Resolver, pinned: Resolved, target_key: int) -> str | None:
    """The file added at the target, of the gone file's name or near its folder, that is
    the most like it, when at least `RENAME_SIMILARITY` alike and no other is as alike."""
    try:
        old = _line_bytes(resolver.source(pinned.blob_id))
    except ResolveError:  # a file over 1 MiB: its content is not stored
        return None
    added = resolver.paths(target_key) - resolver.paths(pinned.version_key)
    near = sorted(path for path in added if _near(pinned.path, path))
    scores = {path: _similarity(old, _line_bytes(text))
              for path, _, text in _file_texts(resolver, target_key, near)}
    best = max(scores.values(), default=0.0)
    alike = [path for path, score in scores.items() if score == best]
    return alike[0] if best >= RENAME_SIMILARITY and len(alike) == 1 else None


def _near(old: str, new: str) -> bool:
    """Whether ``new`` is where ``old`` may have been renamed to: of its name anywhere, or in
    its folder, the folder above it or a folder in it."""
    old_folder, _, old_name = old.rpartition("/")
    new_folder, _, new_name = new.rpartition("/")
    return (new_name == old_name or new_folder == old_folder
            or new_folder == old_folder.rpartition("/")[0]
            or new_folder.rpartition("/")[0] == old_folder)


def _line_bytes(text: str) -> Counter[str]:
    return Counter(split_lines(text))


def _similarity(old: Counter[str], new: Counter[str]) -> float:
    """The bytes of the lines two texts share over the larger text's bytes."""
    shared = sum(len(line) * count for line, count in (old & new).items())
    larger = max(sum(len(line) * count for line, count in text.items()) for text in (old, new))
    return shared / larger if larger else 0.0


def _candidate_files(
    comparer: SymbolComparer, pinned: Resolved, target_key: int
) -> Iterator[tuple[str, str, str]]:
    """(path, blob, text) of the target's files in the pinned file's folder or named like
    it, then of those where the definitions around the pinned lines went."""
    resolver = comparer.resolver
    folder, _, name = pinned.path.rpartition("/")
    siblings = [other for other in sorted(resolver.paths(target_key))
                if other.rpartition("/")[0] == folder or other.rpartition("/")[2] == name]
    successors = [path for path in _successor_paths(comparer, pinned, target_key)
                  if path not in siblings]
    yield from _file_texts(resolver, target_key, siblings + successors)


def _file_texts(
    resolver: Resolver, key: int, paths: list[str]
) -> Iterator[tuple[str, str, str]]:
    """(path, blob, text) of each of ``paths`` at version ``key`` whose content is stored."""
    for path in paths:
        blob_id = queries.file_blob(resolver.database, key, path)
        if blob_id is None:
            continue
        try:
            text = resolver.source(blob_id)
        except ResolveError:  # a file over 1 MiB: its content is not stored
            continue
        yield path, blob_id, text


def _successor_paths(
    comparer: SymbolComparer, pinned: Resolved, target_key: int
) -> list[str]:
    """The target files where the definitions around the pinned lines went: those that
    hold them, and the nearest top-level ones above and below."""
    definitions = comparer.file_definitions(pinned)
    around = _holding(definitions.all, pinned)
    above = [d for d in definitions.top_level if d.end_line < pinned.start_line][-1:]
    below = [d for d in definitions.top_level if d.start_line > pinned.end_line][:1]
    paths = (comparer.compare(d, target_key, where_code_went=False).new
             for d in around + above + below)
    return list(dict.fromkeys(new.path for new in paths if new is not None))


def places_of(wanted: str, text: str) -> list[int]:
    """The first line of every place where ``wanted`` stands as whole lines in ``text``
    (text inside a line does not count)."""
    places, line, counted = [], 1, 0
    position = text.find(wanted)
    while position >= 0:
        end = position + len(wanted)
        whole = wanted.endswith("\n") or end == len(text) or text[end] == "\n"
        if (position == 0 or text[position - 1] == "\n") and whole:
            line += text.count("\n", counted, position)
            counted = position
            places.append(line)
        position = text.find(wanted, position + 1)
    return places


CONTEXT_LINES = 20
"""Lines above and below a line range that tell apart the places where its text stands."""


def _own_place(
    old_lines: list[str], new_lines: list[str], pinned: Resolved, places: list[int]
) -> int | None:
    """Of the places where the pinned lines stand in the new file, the one whose
    surroundings (the non-blank lines above and below) share the most lines with the
    pinned lines' own; None when several share as many. Linear in the places."""
    size = pinned.end_line - pinned.start_line + 1
    above = _context(old_lines, pinned.start_line - 1 - CONTEXT_LINES, pinned.start_line - 1)
    below = _context(old_lines, pinned.end_line, pinned.end_line + CONTEXT_LINES)
    scores = {}
    for place in places:
        new_above = _context(new_lines, place - 1 - CONTEXT_LINES, place - 1)
        new_below = _context(new_lines, place - 1 + size, place - 1 + size + CONTEXT_LINES)
        scores[place] = (above & new_above).total() + (below & new_below).total()
    best = max(scores.values())
    winners = [place for place, score in scores.items() if score == best]
    return winners[0] if len(winners) == 1 else None


def _context(lines: list[str], start: int, end: int) -> Counter[str]:
    return Counter(line.strip() for line in lines[max(start, 0):end] if line.strip())


def _ambiguous_lines(
    pinned: Resolved, target_key: int, blob_id: str, target: str, places: list[int]
) -> Comparison:
    """The lines stand elsewhere, more than once: the nearest, with the others as
    candidates (``fix`` leaves such a ref for its author to choose)."""
    nearest = min(places, key=lambda place: abs(place - pinned.start_line))
    moved = [_moved_lines(pinned, target_key, blob_id, target, place - pinned.start_line)
             for place in sorted(places, key=lambda place: place != nearest)]
    listed = ", ".join(f"L{new.start_line}" for new in moved)
    return Comparison(Status.MOVED, f"the lines stand at {len(places)} places at {target} "
                      f"({listed}), none more than another where they stood", moved[0],
                      candidates=tuple(new.canonical for new in moved[1:]))


def _moved_lines(
    pinned: Resolved, target_key: int, blob_id: str, target: str, shift: int,
    path: str | None = None,
) -> Resolved:
    repo, _, version = target.partition("@")
    return Resolved(
        repo=repo, version=version, version_key=target_key, path=path or pinned.path,
        blob_id=blob_id,
        start_line=pinned.start_line + shift, end_line=pinned.end_line + shift,
        exact=pinned.exact, normalized=digest(b""),
    )


def _target_pin(resolver: Resolver, target_key: int) -> str:
    repo, version = version_label(resolver.database, target_key) or ("", "")
    return f"{repo}@{version}"


@dataclass(frozen=True)
class FileDefinitions:
    """Every definition of a file at a version, in source order, and its top-level ones."""

    all: list[Resolved]
    top_level: list[Resolved]


MadeComparison = tuple[tuple[int, int], tuple, str]
"""A comparison a `SymbolComparer` made: its version pair (pin, target keys), its key
among the pair's (`_cache_key`) and its JSON text (`Comparison.encode`)."""


class SymbolComparer:
    """Compares pinned symbols with target versions; one `Matcher` per version pair, so
    the unmatched pool of a pair is built at most once per run.

    Indexed versions never change, so neither does a comparison between two of them:
    results are stored in ``match_cache`` (`save`) and read back by later runs.
    Where a removed symbol's code went is found for every removed symbol of a version pair
    compared so far at once (`Matcher.where_code_went`: one index of their lines), when a
    caller first asks for it, or before `save`. Without ``where_code_went`` (for a caller
    that reads statuses alone), it is never found, and no comparison is stored.
    """

    def __init__(self, resolver: Resolver, *, where_code_went: bool = True) -> None:
        self.resolver = resolver
        self._where_code_went = where_code_went
        self._store: SourceStore | None = None
        self._matchers: dict[tuple[int, int], Matcher] = {}
        # Per version pair: a comparison, or its JSON text as stored until it is asked for
        self._cache: dict[tuple[int, int], dict[tuple, Comparison | str]] = {}
        self._new_rows: list[tuple[tuple[int, int], tuple]] = []  # (pair, key) to store
        # Per version pair: the removed symbols not yet told where their code went, by key
        self._unplaced: dict[tuple[int, int], dict[tuple, SymbolSnapshot]] = {}
        self._renames: dict[tuple[int, str, int], str | None] = {}
        self._file_definitions: dict[tuple[int, str], FileDefinitions] = {}

    def file_definitions(self, pinned: Resolved) -> FileDefinitions:
        """The definitions of ``pinned``'s file, read once per file and version: a check or
        diff asks where those around each line ref into a gone file went, up to three times
        for each ref (`_successor_paths`), and where each went is compared once per pair."""
        key = (pinned.version_key, pinned.path)
        if key not in self._file_definitions:
            found = self.resolver.definitions(pinned)
            self._file_definitions[key] = FileDefinitions(
                found, [d for d in found if d.qualname and "." not in d.qualname])
        return self._file_definitions[key]

    def renamed_to(self, pinned: Resolved, target_key: int) -> str | None:
        """`_renamed_to`, once per gone file and version pair: a diff asks it twice for each
        line ref into the file, and it compares the file with every file added near it."""
        key = (pinned.version_key, pinned.path, target_key)
        if key not in self._renames:
            self._renames[key] = _renamed_to(self.resolver, pinned, target_key)
        return self._renames[key]

    def share(self, matcher: Matcher) -> None:
        """Compare with ``matcher`` (a whole-version diff's) between its two versions: it has
        loaded both, and matched every symbol that changed (a match does not depend on what
        the matcher was asked before)."""
        self._matchers[(matcher.a.key, matcher.b.key)] = matcher

    def compare(self, pinned: Resolved, target_key: int, *, where_code_went: bool = True
                ) -> Comparison:
        """``pinned`` against ``target_key``. Without ``where_code_went`` (a caller that
        reads the status and new place alone), a removed symbol's comparison may not say
        yet where its code went: that is found later, with the others of the pair."""
        comparison = self.stored(pinned, target_key, self._compare)
        pair, key = (pinned.version_key, target_key), _cache_key(pinned)
        if where_code_went and key in self._unplaced.get(pair, {}):
            self._place_removed(pair)
            return self._comparison(pair, key)
        return comparison

    def stored(self, pinned: Resolved, target_key: int,
               compare: Callable[[Resolved, int], Comparison]) -> Comparison:
        """``compare(pinned, target_key)``, made once: read back when this run or one before
        made it. Lines are stored with an empty qualname: their text (``exact``) and first
        line fix their last."""
        pair = (pinned.version_key, target_key)
        cache, key = self._pair_cache(pair), _cache_key(pinned)
        known = cache.get(key)
        if isinstance(known, str):  # a symbol cited twice is decoded once
            known = cache[key] = Comparison.decode(known)
        if known is not None:
            return known
        comparison = compare(pinned, target_key)
        cache[key] = comparison  # and compared once
        if self._where_code_went:
            self._new_rows.append((pair, key))
        return comparison

    def is_stored(self, pair: tuple[int, int], path: str, qualname: str, exact: str,
                  start_line: int) -> bool:
        """Whether the comparison of the symbol (or lines, qualname '') pinned at
        ``path``, ``exact`` and ``start_line`` in the pair's pin version with its target
        is made already: stored by a run before, or made or adopted by this one."""
        return comparison_key(path, qualname, exact, start_line) in self._pair_cache(pair)

    def _pair_cache(self, pair: tuple[int, int]) -> dict[tuple, Comparison | str]:
        if pair not in self._cache:
            self._cache[pair] = {**queries.cached_matches(self.resolver.database, *pair, ENGINE)}
        return self._cache[pair]

    def made(self) -> list[MadeComparison]:
        """The comparisons this comparer made and has not handed over yet (to `save`, or
        to another comparer's `adopt`), with where the code of its removed symbols went."""
        while self._unplaced:
            self._place_removed(next(iter(self._unplaced)))
        made = [(pair, key, self._comparison(pair, key).encode()) for pair, key in self._new_rows]
        self._new_rows = []
        return made

    def adopt(self, made: Iterable[MadeComparison]) -> None:
        """Take the comparisons another comparer made (in a forked process) as made here:
        read back when asked, and stored by `save`."""
        for pair, key, text in made:
            cache = self._pair_cache(pair)
            if key not in cache:
                cache[key] = Comparison.decode(text)
                self._new_rows.append((pair, key))

    def save(self) -> None:
        """Store what this run computed (skipped when another process is writing), with
        where the code of its removed symbols went."""
        queries.store_matches(self.resolver.database, ENGINE, [
            (*pair, *key, text) for pair, key, text in self.made()])

    def _comparison(self, pair: tuple[int, int], key: tuple) -> Comparison:
        """A comparison this run made."""
        made = self._cache[pair][key]
        assert isinstance(made, Comparison)
        return made

    def _place_removed(self, pair: tuple[int, int]) -> None:
        """Where the code of every removed symbol of ``pair`` compared so far went, and
        what their users name instead, in their comparisons. Users that are removed too
        (compared as their users are found) are placed with them: `where_code_went` is
        asked once, for it reads B's changed files each time (0.4 s at vLLM v0.20.0 ->
        v0.25.0)."""
        removed: dict[tuple, SymbolSnapshot] = {}
        users_instead: dict[tuple, UsersInstead] = {}
        while self._unplaced.get(pair):
            for key, old in self._unplaced.pop(pair).items():
                removed[key] = old
                users_instead[key] = self.users_instead(old, pair)
        matcher = self._matchers[pair]
        target = _target_pin(self.resolver, pair[1])
        places = matcher.where_code_went(list(removed.values()))
        for (key, old), went in zip(removed.items(), places, strict=True):
            self._cache[pair][key] = replace(
                _comparison(matcher.match(old), target, pair[1], went),
                users_instead=users_instead[key])

    def users_instead(self, removed: SymbolSnapshot, pair: tuple[int, int]) -> UsersInstead:
        """What the users of ``removed``, a symbol of the first version of ``pair`` (keys)
        that the second no longer has, name in its place there
        (`annotations.used_instead`)."""
        from annotations.used_instead import used_instead

        pinned = _resolved(removed, _target_pin(self.resolver, pair[0]), pair[0])
        return used_instead(self.resolver, pinned, lambda user: self.compare(
            user, pair[1], where_code_went=False).new)

    @property
    def store(self) -> SourceStore:
        from annotations.matching import SourceStore

        if self._store is None:
            self._store = SourceStore(self.resolver.database)
            # Its member snapshots point back at it: cleared, it goes with this comparer,
            # not at the next garbage collection.
            weakref.finalize(self, self._store.clear)
        return self._store

    def _compare(self, pinned: Resolved, target_key: int) -> Comparison:
        from annotations.changes import Verdict

        matcher = self._matcher(pinned.version_key, target_key)
        old = self._pinned_symbol(pinned, matcher)
        if old is None:
            return Comparison(Status.BROKEN, f"{pinned.canonical} is no longer in the index")
        match = matcher.match(old)
        if self._where_code_went and match.verdict is Verdict.REMOVED:
            self._unplaced.setdefault((pinned.version_key, target_key), {})[
                _cache_key(pinned)] = old
        comparison = _comparison(match, _target_pin(self.resolver, target_key), target_key,
                                 ())
        if comparison.status is Status.CHANGED and comparison.new is not None:
            return replace(comparison, diff=symbol_diff(self.resolver, pinned, comparison.new))
        return comparison

    def _pinned_symbol(self, pinned: Resolved, matcher: Matcher) -> SymbolSnapshot | None:
        """The pinned definition: of a qualname defined twice in a file (a property's getter
        and setter), the one starting on the pinned line (a permalink may cite either).
        Read from the matcher's rows of its file, which it reads once, unless the target
        is the pin's own version: that matcher reads no rows, and would keep them."""
        from annotations.matching import find_definition

        if pinned.version_key != matcher.b.key:
            return matcher.definition(pinned.path, pinned.qualname or "", pinned.start_line)
        return find_definition(self.resolver.database, pinned.version_key, pinned.path,
                               pinned.qualname or "", pinned.start_line, self.store)

    def _matcher(self, pin_key: int, target_key: int) -> Matcher:
        from annotations.matching import Matcher

        key = (pin_key, target_key)
        if key not in self._matchers:
            self._matchers[key] = Matcher(self.resolver.database, pin_key, target_key,
                                          self.store)
        return self._matchers[key]


def _cache_key(pinned: Resolved) -> tuple[str, str, str, int]:
    """A comparison's key among its version pair's: lines have an empty qualname."""
    return comparison_key(pinned.path, pinned.qualname or "", pinned.exact, pinned.start_line)


def comparison_key(path: str, qualname: str, exact: str, start_line: int
                   ) -> tuple[str, str, str, int]:
    """What a comparison is stored under among its version pair's (``match_cache``'s
    columns): the pinned path, qualname ('' for lines), text's fingerprint and first line."""
    return (path, qualname, exact, start_line)


def _comparison(
    match: Match, target: str, target_key: int, went: tuple[SymbolSnapshot, ...]
) -> Comparison:
    """``match`` as a check status; ``went``, where a removed symbol's code went."""
    from annotations.changes import Verdict

    verdict = match.verdict
    new = _resolved(match.new, target, target_key) if match.new is not None else None
    kinds = tuple(kind.value for kind in match.kinds)
    explained = "; ".join(match.explain())
    candidates = tuple(f"{target}:{c.ref}" for c in match.candidates)
    if verdict is Verdict.UNCHANGED:
        return Comparison(Status.FRESH, "unchanged", new)
    if verdict is Verdict.COSMETIC:
        return Comparison(Status.COSMETIC, "only comments, docstrings or formatting changed",
                          new)
    if verdict is Verdict.CHANGED:
        return Comparison(Status.CHANGED, explained or "changed", new, kinds)
    if verdict is Verdict.MOVED and new is not None:
        content = f"; {explained}" if match.content_changed and explained else ""
        also = " (several candidates: see candidates)" if match.ambiguous else ""
        return Comparison(Status.MOVED, f"moved to {new.canonical}{also}{content}", new,
                          kinds if match.content_changed else (), candidates)
    closest = f"; closest: {', '.join(candidates)}" if candidates else ""
    places = tuple(f"{target}:{symbol.ref}" for symbol in went)
    went_to = f"; its code went to {', '.join(places)}" if places else ""
    return Comparison(Status.REMOVED, f"{match.old.ref} not found at {target}{closest}{went_to}",
                      None, (), candidates, code_went_to=places)


def _resolved(symbol: SymbolSnapshot, target: str, target_key: int) -> Resolved:
    repo, _, version = target.partition("@")
    return Resolved(
        repo=repo, version=version, version_key=target_key, path=symbol.path,
        blob_id=symbol.blob_id, start_line=symbol.start_line, end_line=symbol.end_line,
        exact=symbol.exact, normalized=symbol.normalized, qualname=symbol.qualname,
        kind=symbol.kind, shape=symbol.shape, start_byte=symbol.start_byte,
        end_byte=symbol.end_byte,
    )
