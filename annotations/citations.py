"""Which stored claims cite a symbol: ``annotate links SYMBOL``."""

from __future__ import annotations

import datetime
import posixpath
from collections.abc import Callable, Iterable

from annotations.errors import RefSyntaxError
from annotations.refs import Ref, RefForm, parse_ref
from annotations.resolve import (
    ResolveError,
    Resolver,
    linked_lines,
    module_files,
    permalink_repo,
)
from annotations.results import RefResult
from db import claims as claim_store
from db.database import Database
from db.queries import is_indexed_path
from indexer.config import ProjectConfig
from indexer.references import python_name


def links_citing(database: Database, config: ProjectConfig, symbol: str) -> list[dict]:
    """The stored links to ``symbol``: ``PATH::QUALNAME``, lines (``PATH#Lx-Ly`` or a
    permalink), a qualname or short name, or a dotted name, which also finds the claims
    citing what it names through its module's imports (``vllm.config.CacheConfig`` is
    ``vllm/config/cache.py::CacheConfig``) at the versions the links are pinned at, or a
    file's path: every ref into that file (its symbols and lines), at each ref's pin.
    Then the refs pinned at a version not indexed that name it as written
    (`_unindexed_citing`). A name is read as Python reads it (`as_python_reads`)."""
    symbol = as_python_reads(symbol)
    path = file_path(symbol) if is_file_path(database, symbol) else None
    return [*_linked_citing(database, config, symbol, path),
            *_unindexed_citing(database, symbol, path)]


def as_python_reads(symbol: str) -> str:
    """``symbol`` NFKC-normalized (`python_name`) when it is a name or a dotted name: ``µ``
    (the micro sign) is cited as ``μ`` (mu). A path or a ref is left as written: a path is
    not a name, and a ref's names are read so as it is parsed."""
    return symbol if any(mark in symbol for mark in "/:@#") else python_name(symbol)


def _linked_citing(
    database: Database, config: ProjectConfig, symbol: str, path: str | None
) -> list[dict]:
    """The links to ``symbol``, or into the file at ``path`` when it is a file's path."""
    if path is not None:
        return claim_store.links_in_lines(database, path, None, None)
    if _is_ref(symbol):
        ref = parse_ref(symbol)
        repo = _repo_of(config, ref)
        if repo and ref.version:  # a version not indexed has no links to list
            config.require_version(database, repo, ref.version)
        if ref.form is RefForm.SYMBOL:
            return [*claim_store.links_to(database, ref.qualname or "", ref.path),
                    *claim_store.uses_to(database, ref.qualname or "", ref.path)]
        if ref.form in (RefForm.LINES, RefForm.PERMALINK) and ref.path:
            rows = claim_store.links_in_lines(database, ref.path, ref.start_line,
                                              ref.end_line, ref.version, repo)
            return [row for row in rows if ref.start_line is None
                    or _links_into(row, ref.start_line, ref.end_line or ref.start_line)]
    if "." in symbol:
        parse_ref(symbol)  # a malformed dotted name names nothing: 'vllm.sampling_params.'
    return [*_by_name_and_definitions(database, config, symbol, claim_store.links_to),
            *_by_name_and_definitions(database, config, symbol, claim_store.uses_to)]


def _unindexed_citing(database: Database, symbol: str, path: str | None) -> list[dict]:
    """The stored refs pinned at a version not indexed, never resolved, whose text names
    ``symbol`` (a file's path, ``path``; a symbol, as ``PATH::QUALNAME``, a qualname or its
    dotted name), each row with the path, qualname and lines written: all such a version
    tells. A ref written as a dotted name names no file to tell: none of them."""
    wanted = _written_as(symbol, path)
    return [] if wanted is None else _unindexed_naming(database, wanted)


def links_in_folder(database: Database, folder: str) -> list[dict]:
    """The stored refs into the files of ``folder`` (and the folders below it): linked, and
    pinned at a version not indexed by a path written there (as `links_citing` lists a
    file's)."""
    inside = folder.rstrip("/") + "/"
    return [*claim_store.links_under(database, folder),
            *_unindexed_naming(database, lambda ref: (ref.path or "").startswith(inside))]


def _unindexed_naming(database: Database, wanted: Callable[[Ref], bool]) -> list[dict]:
    """The stored refs pinned at a version not indexed whose ref as written has a path and
    is ``wanted``, each row with the path, qualname and lines written."""
    found = []
    for row in claim_store.unindexed_links(database):
        try:
            ref = parse_ref(row["written"])
        except RefSyntaxError:  # stored as written; not expected
            continue
        if ref.path is not None and wanted(ref):
            found.append({**row, "path": ref.path, "qualname": ref.qualname,
                          "start_line": ref.start_line,
                          "end_line": ref.end_line or ref.start_line})
    return found


def _written_as(symbol: str, path: str | None) -> Callable[[Ref], bool] | None:
    """Whether a written ref names ``symbol`` (the file at ``path`` when it is a file's
    path), as `links_citing` reads it; None for lines, which a version not indexed cannot
    hold."""
    if path is not None:
        return lambda written: written.path == path
    if _is_ref(symbol):
        ref = parse_ref(symbol)
        if ref.form is not RefForm.SYMBOL:
            return None
        return lambda written: written.qualname is not None and claim_store.names(
            written.path or "", written.qualname, ref.qualname or "", ref.path)
    return lambda written: written.qualname is not None and claim_store.names(
        written.path or "", written.qualname, symbol)


def _is_ref(symbol: str) -> bool:
    """Whether ``symbol`` is written as a ref: pinned, ``PATH::QUALNAME``, lines or a
    permalink, not a name or a dotted name."""
    return "@" in symbol or names_its_place(symbol)


def names_its_place(symbol: str) -> bool:
    """Whether ``symbol`` is written with its file: ``PATH::QUALNAME``, lines or a
    permalink (not a name or a dotted name, pinned or not)."""
    return "::" in symbol or "#L" in symbol or symbol.startswith("https://")


def is_file_path(database: Database, symbol: str) -> bool:
    """Whether ``symbol`` is a repo file's path (``vllm/config/cache.py``), not a ref: a
    top-level file's (``setup.py``) when an indexed version has it, a dotted name if not."""
    return written_as_a_file(symbol) and ("/" in symbol or is_indexed_path(database, symbol))


def written_as_a_file(symbol: str) -> bool:
    """Whether ``symbol`` is written as a file's path: with a folder, or a name ending in
    ``.py`` (``setup.py``, which `is_file_path` reads as a dotted name when no indexed
    version has that file), not as a ref."""
    return not _is_ref(symbol) and ("/" in symbol or symbol.endswith(".py"))


def file_path(symbol: str) -> str:
    """A file's path as the index stores it: ``vllm//config/./cache.py`` is
    ``vllm/config/cache.py``; a path out of the repository's root is an error."""
    path = posixpath.normpath(symbol)
    if path.startswith("/") or path == ".." or path.startswith("../"):
        raise RefSyntaxError(f"path '{symbol}' leads out of the repository: give it relative "
                             "to the repository's root (vllm/config/cache.py)")
    return path


def _repo_of(config: ProjectConfig, ref: Ref) -> str | None:
    """The ref's repo; a permalink's is the configured repo of its GitHub repository."""
    if ref.form is not RefForm.PERMALINK:
        return ref.repo
    return permalink_repo(config, ref.github or "")


def member_links(database: Database, config: ProjectConfig, symbol: str) -> list[dict]:
    """The stored links to members of ``symbol`` (read as `links_citing` reads it): a
    claim about ``SpeculativeConfig.use_eagle`` for ``SpeculativeConfig``. Lines have none."""
    if _is_ref(symbol):
        ref = parse_ref(symbol)
        if ref.form is RefForm.SYMBOL:
            return claim_store.links_to_members(database, ref.qualname or "", ref.path)
        if ref.form is not RefForm.DOTTED:
            return []
    return (_by_name_and_definitions(database, config, symbol, claim_store.links_to_members)
            or _module_links(symbol, database))


def _module_links(symbol: str, database: Database) -> list[dict]:
    """The stored refs to the symbols of the module a dotted name names
    (``vllm.config.cache``): a module's members."""
    ref = _dotted_ref(symbol)
    if ref is None:
        return []
    return [row for path in module_files(ref.dotted or "")
            for row in claim_store.links_in_lines(database, path, None, None, ref.version, ref.repo)
            if row["qualname"]]


def _dotted_ref(symbol: str) -> Ref | None:
    """``symbol`` parsed, when it is a dotted name with a module part (``vllm.config.X``);
    else None."""
    try:
        ref = parse_ref(symbol)
    except RefSyntaxError:
        return None
    return ref if ref.form is RefForm.DOTTED and "." in (ref.dotted or "") else None


def _by_name_and_definitions(
    database: Database, config: ProjectConfig, symbol: str,
    links: Callable[..., list[dict]],
) -> list[dict]:
    """``links(database, qualname[, path])`` of ``symbol`` read as a qualname, then of each
    definition it names through imports (`_defined_as`), each link once."""
    rows = links(database, symbol.rsplit(":", 1)[-1])
    seen = {link_key(row) for row in rows}
    for path, qualname in sorted(_defined_as(database, config, symbol)):
        for row in links(database, qualname, path):
            if link_key(row) not in seen:
                seen.add(link_key(row))
                rows.append(row)
    return rows


def links_moved_here(
    database: Database, config: ProjectConfig, symbol: str, listed: Iterable[dict]
) -> list[dict]:
    """`links_moved_to` ``symbol`` by a check of the stored links (the annotation files
    are not read again), but those ``listed``. Lines move to lines, never to a symbol:
    their refs are not compared."""
    from annotations.check import CheckOptions, moved_refs  # loaded by `links SYMBOL` alone

    symbol = as_python_reads(symbol)
    if not follows_moves(database, symbol):
        return []
    options = CheckOptions({}, datetime.date.today(), config.fail_on)
    moved = links_moved_to(database, config, symbol,
                           moved_refs(database, config, options, lines=False))
    seen = {link_key(row) for row in listed}
    return [row for row in moved if link_key(row) not in seen]


def links_moved_to(
    database: Database, config: ProjectConfig, symbol: str, results: Iterable[RefResult]
) -> list[dict]:
    """The stored links whose symbol moved to ``symbol`` (read as `links_citing` reads
    it) at their repo's target version, by the check ``results``: a claim about
    ``KimiDeltaAttention`` pinned at v0.20.0 cites ``KimiGatedDeltaNetAttention`` once
    v0.25.0 is the target. Each row is the link's, with ``moved_to`` the canonical ref of
    the place it moved to. A move that is ambiguous (a class split into per-platform
    copies) counts for each of its places, ``moved_among`` listing the others. Lines name
    no symbol to follow: none for them."""
    wanted = _wanted(database, config, symbol)
    if wanted is None:
        return []
    stored: dict[tuple, dict] | None = None  # read once a result moved to ``symbol``
    found = []
    for result in results:
        places = (result.new_ref, *result.candidates) if result.new_ref is not None else ()
        place = next((place for place in places if _names_wanted(place, wanted)), None)
        if place is None:
            continue
        if stored is None:
            stored = {link_key(row): row for row in claim_store.all_links(database)}
        row = stored.get(result_key(result))
        if row is not None:
            others = [other for other in places if other != place]
            found.append({**row, "moved_to": place,
                          **({"moved_among": others} if others else {})})
    return found


def _names_wanted(place: str, wanted: Callable[[str, str], bool]) -> bool:
    """Whether the ref ``place`` names a symbol that is ``wanted``: lines name none."""
    new = parse_ref(place)
    return new.qualname is not None and wanted(new.path or "", new.qualname)


def _wanted(
    database: Database, config: ProjectConfig, symbol: str
) -> Callable[[str, str], bool] | None:
    """Whether a (path, qualname) is ``symbol``; None for lines."""
    if not follows_moves(database, symbol):
        return None
    try:
        ref: Ref | None = parse_ref(symbol)
    except RefSyntaxError:
        ref = None
    if ref is not None and ref.form is RefForm.SYMBOL:
        return lambda path, qualname: claim_store.names(
            path, qualname, ref.qualname or "", ref.path)
    short = symbol.rsplit(":", 1)[-1]
    targets = [(name, version) for name, repo in config.repos.items()
               if (version := repo.target_version)]
    defined = _defined_as(database, config, symbol, targets)
    return lambda path, qualname: (
        claim_store.names(path, qualname, short) or (path, qualname) in defined)


def _links_into(row: dict, start: int, end: int) -> bool:
    """Whether a stored ref cites lines ``start``-``end``: a permalink by the lines it
    links (not all of the symbol they fall in), any other ref by what it resolved to."""
    first, last = linked_lines(row["written"], row["start_line"], row["end_line"]) or (
        row["start_line"], row["end_line"])
    return first <= end and start <= last


def follows_moves(database: Database, symbol: str) -> bool:
    """Whether `links_moved_to` may find links for ``symbol`` (lines and files name no
    symbol)."""
    if is_file_path(database, symbol):
        return False
    try:
        form = parse_ref(symbol).form
    except RefSyntaxError:
        return True
    return form not in (RefForm.LINES, RefForm.PERMALINK)


def link_key(row: dict) -> tuple:
    """What tells one stored ref from another: its file, line, claim and text."""
    return row["source_file"], row["line"], row["claim_id"], row["written"]


def result_key(result: RefResult) -> tuple:
    """`link_key` of the stored ref a check ``result`` is of."""
    return result.file, result.line, result.claim, result.ref


def links_with_status(rows: Iterable[dict], results: Iterable[RefResult]) -> list[dict]:
    """Each stored link of ``rows`` with ``status``, its check result's (None when
    ``results`` has none for it)."""
    status = {result_key(result): result.status.value for result in results}
    return [{**row, "status": status.get(link_key(row))} for row in rows]


def _defined_as(
    database: Database, config: ProjectConfig, symbol: str,
    more_pins: Iterable[tuple[str, str]] = (),
) -> set[tuple[str, str]]:
    """The (path, qualname) a dotted name resolves to at its own pin, or else at each
    version some stored link is pinned at (and at ``more_pins``)."""
    ref = _dotted_ref(symbol)
    if ref is None:
        return set()
    if ref.repo is not None and ref.version is not None:  # pinned
        pins = [(ref.repo, ref.version)]
    else:
        pins = list(dict.fromkeys([*claim_store.linked_versions(database), *more_pins]))
    resolver = Resolver(database, config)
    found = set()
    for repo, version in pins:
        try:
            resolved = resolver.resolve(ref.with_pin(repo, version))
        except ResolveError:
            continue
        if resolved.qualname is not None:
            found.add((resolved.path, resolved.qualname))
    return found
