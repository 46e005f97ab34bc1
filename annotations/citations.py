"""Which stored claims cite a symbol: ``annotate links SYMBOL``."""

from __future__ import annotations

from annotations.errors import RefSyntaxError
from annotations.refs import RefForm, parse_ref
from annotations.resolve import ResolveError, Resolver, linked_lines
from db import claims as claim_store
from db.database import Database
from db.queries import require_version
from indexer.config import ProjectConfig


def links_citing(database: Database, config: ProjectConfig, symbol: str) -> list[dict]:
    """The stored links to ``symbol``: ``PATH::QUALNAME``, lines (``PATH#Lx-Ly`` or a
    permalink), a qualname or short name, or a dotted name, which also finds the claims
    citing what it names through its module's imports (``vllm.config.CacheConfig`` is
    ``vllm/config/cache.py::CacheConfig``) at the versions the links are pinned at."""
    if "@" in symbol or "::" in symbol or "#L" in symbol or symbol.startswith("https://"):
        ref = parse_ref(symbol)
        if ref.repo and ref.version:  # a version not indexed has no links to list
            require_version(database, ref.repo, ref.version)
        if ref.form is RefForm.SYMBOL:
            return claim_store.links_to(database, ref.qualname or "", ref.path)
        if ref.form in (RefForm.LINES, RefForm.PERMALINK) and ref.path:
            rows = claim_store.links_in_lines(database, ref.path, ref.start_line,
                                              ref.end_line, ref.version, ref.repo)
            return [row for row in rows if ref.start_line is None
                    or _links_into(row, ref.start_line, ref.end_line or ref.start_line)]
    rows = claim_store.links_to(database, symbol.rsplit(":", 1)[-1])
    seen = {_key(row) for row in rows}
    for path, qualname in sorted(_defined_as(database, config, symbol)):
        for row in claim_store.links_to(database, qualname, path):
            if _key(row) not in seen:
                seen.add(_key(row))
                rows.append(row)
    return rows


def _links_into(row: dict, start: int, end: int) -> bool:
    """Whether a stored ref cites lines ``start``-``end``: a permalink by the lines it
    links (not all of the symbol they fall in), any other ref by what it resolved to."""
    first, last = linked_lines(row["written"], row["start_line"], row["end_line"]) or (
        row["start_line"], row["end_line"])
    return first <= end and start <= last


def _key(row: dict) -> tuple:
    return row["source_file"], row["line"], row["claim_id"], row["written"]


def _defined_as(database: Database, config: ProjectConfig, symbol: str) -> set[tuple[str, str]]:
    """The (path, qualname) a dotted name resolves to at its own pin, or else at each
    version some stored link is pinned at."""
    try:
        ref = parse_ref(symbol)
    except RefSyntaxError:
        return set()
    if ref.form is not RefForm.DOTTED or "." not in (ref.dotted or ""):
        return set()
    pins = [(ref.repo, ref.version)] if ref.pinned else claim_store.linked_versions(database)
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
