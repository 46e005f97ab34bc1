"""Reads and writes of articles, claims and their links to symbols."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from db.database import Database
from db.errors import BadSearchText, QueryTooLarge
from db.queries import folder_bounds, inserted_id, is_named, like_escape, module_name

CLAIM_SEARCH_TABLE = """\
CREATE VIRTUAL TABLE claim_search USING fts5(
    article UNINDEXED, claim_id UNINDEXED, title, text, symbols, tokenize = 'trigram'
)"""
"""How migration 2 creates ``claim_search``, made again empty by `replace_articles`."""
REF_COLUMNS = (
    "claim", "seq", "written", "line", "quote", "repo", "version", "resolved", "path",
    "qualname", "kind", "start_line", "end_line", "blob_id", "exact", "normalized", "shape",
    "state", "message",
)


@dataclass(frozen=True)
class ClaimRow:
    article: str
    claim_id: str
    text: str
    pin: str | None
    source_file: str
    line: int
    refs: Sequence[dict] = ()
    waivers: Sequence[dict] = ()
    symbols: str = ""


@dataclass
class FileLinkCache:
    """What a link keeps of the stored ``link_files``: the files in ``kept`` (a key is a
    file's path and whether it was read as Markdown), those of ``written`` with their new
    digest and links; every other file's row goes."""

    kept: set[tuple[str, bool]] = field(default_factory=set)
    written: dict[tuple[str, bool], tuple[str, bytes]] = field(default_factory=dict)


@dataclass(frozen=True)
class ArticleRow:
    path: str
    title: str | None
    source_file: str
    claims: Sequence[ClaimRow] = field(default_factory=tuple)


def replace_articles(
    database: Database,
    articles: Sequence[ArticleRow],
    keep_sources: Iterable[str],
    signature: str | None = None,
    cache: FileLinkCache | None = None,
) -> None:
    """Replace every stored claim, except those read from ``keep_sources`` (files that
    failed to load this time keep what they had), in one transaction.

    An article's claims may come from several files; an article goes when none of its
    claims is left and its own file is not kept. ``signature`` records what was linked
    (see `annotations.links.link_if_changed`); None forgets it. ``cache``, when given,
    updates ``link_files``.
    """
    kept = list(dict.fromkeys(keep_sources))
    marks = ",".join("?" * len(kept))
    not_kept = f"source_file NOT IN ({marks})" if kept else "1"
    with database.write() as conn:
        _record_signature(conn, signature)
        conn.execute(f"DELETE FROM claims WHERE {not_kept}", kept)
        conn.execute(
            f"DELETE FROM articles WHERE {not_kept}"
            " AND path NOT IN (SELECT article FROM claims)",
            kept,
        )
        if kept:
            conn.execute(
                "DELETE FROM claim_search WHERE NOT EXISTS (SELECT 1 FROM claims c WHERE"
                " c.article = claim_search.article AND c.claim_id = claim_search.claim_id)"
            )
        else:  # FTS5 deletes row by row: half a second for 15,000 claims
            conn.execute("DROP TABLE claim_search")
            conn.execute(CLAIM_SEARCH_TABLE)
        for article in articles:
            _insert_article(conn, article, replacing=bool(kept))
        if cache is not None:
            _update_file_links(conn, cache)


def keep_articles(
    database: Database, signature: str | None, cache: FileLinkCache,
    digests: dict[tuple[str, bool], str],
) -> bool:
    """What `replace_articles` does when the claims it would write are those stored, row
    for row: record the ``signature`` and update ``link_files``, leaving the claims; False,
    writing nothing, when the stored links are no longer those of ``digests`` (another
    link wrote its own since they were read)."""
    with database.write() as conn:
        if _digests(conn) != digests:
            return False
        _record_signature(conn, signature)
        _update_file_links(conn, cache)
    return True


def _record_signature(conn: sqlite3.Connection, signature: str | None) -> None:
    """Record what was linked (``signature``), or forget it (None)."""
    conn.execute("DELETE FROM meta WHERE key = 'link_signature'")
    if signature is not None:
        conn.execute("INSERT INTO meta VALUES ('link_signature', ?)", (signature,))


def claim_order(database: Database) -> list[tuple[str, str, str]]:
    """The stored claims' (article, claim id, source file), in the order of their ids."""
    return [tuple(row) for row in database.conn.execute(
        "SELECT article, claim_id, source_file FROM claims ORDER BY id")]


def _update_file_links(conn: sqlite3.Connection, cache: FileLinkCache) -> None:
    stored = {(file, bool(markdown)) for file, markdown in
              conn.execute("SELECT source_file, markdown FROM link_files")}
    conn.executemany("DELETE FROM link_files WHERE source_file = ? AND markdown = ?",
                     sorted(stored - cache.kept))
    conn.executemany(
        "INSERT OR REPLACE INTO link_files (source_file, markdown, digest, links)"
        " VALUES (?, ?, ?, ?)",
        ((file, markdown, digest, links)
         for (file, markdown), (digest, links) in sorted(cache.written.items())),
    )


def file_link_digests(database: Database) -> dict[tuple[str, bool], str]:
    """The digest of each file's stored links (see `replace_articles`)."""
    return _digests(database.conn)


def _digests(conn: sqlite3.Connection) -> dict[tuple[str, bool], str]:
    rows = conn.execute("SELECT source_file, markdown, digest FROM link_files")
    return {(file, bool(markdown)): digest for file, markdown, digest in rows}


def file_link(database: Database, key: tuple[str, bool], digest: str) -> bytes | None:
    """The stored links of the file ``key`` names (its path, whether it is Markdown) while
    they are those of ``digest``: another link may have replaced or removed them since
    `file_link_digests` was read."""
    row = database.conn.execute(
        "SELECT links FROM link_files WHERE source_file = ? AND markdown = ? AND digest = ?",
        (*key, digest)).fetchone()
    return None if row is None else row[0]


def _insert_article(conn: sqlite3.Connection, article: ArticleRow, replacing: bool) -> None:
    """Insert ``article`` and its claims; ``replacing`` claims kept from a file that failed
    to load when there are any."""
    conn.execute(
        "INSERT INTO articles (path, title, source_file) VALUES (?, ?, ?) ON CONFLICT (path)"
        " DO UPDATE SET title = excluded.title, source_file = excluded.source_file",
        (article.path, article.title, article.source_file),
    )
    for claim in article.claims:
        # A claim kept from a file that failed to load gives way to one loaded now.
        key = (article.path, claim.claim_id)
        if replacing and conn.execute(
                "DELETE FROM claims WHERE article = ? AND claim_id = ?", key).rowcount:
            # a scan of the search table (it has no index on these): only when one was kept
            conn.execute("DELETE FROM claim_search WHERE article = ? AND claim_id = ?", key)
        claim_key = inserted_id(conn.execute(
            "INSERT INTO claims (article, claim_id, text, pin, source_file, line)"
            " VALUES (?,?,?,?,?,?)",
            (article.path, claim.claim_id, claim.text, claim.pin, claim.source_file, claim.line),
        ))
        for ref in claim.refs:
            _insert_ref(conn, claim_key, ref)
        conn.executemany(
            "INSERT INTO claim_waivers (claim, status, until, reason, line) VALUES (?,?,?,?,?)",
            ((claim_key, w["status"], w["until"], w["reason"], w["line"]) for w in claim.waivers),
        )
        conn.execute(
            "INSERT INTO claim_search (article, claim_id, title, text, symbols)"
            " VALUES (?,?,?,?,?)",
            (article.path, claim.claim_id, article.title or "", claim.text, claim.symbols),
        )


def _insert_ref(conn: sqlite3.Connection, claim_key: int, ref: dict) -> None:
    values = {**ref, "claim": claim_key}
    marks = ",".join("?" * len(REF_COLUMNS))
    ref_key = conn.execute(
        f"INSERT INTO claim_refs ({', '.join(REF_COLUMNS)}) VALUES ({marks})",
        [values.get(column) for column in REF_COLUMNS],
    ).lastrowid
    conn.executemany(
        "INSERT INTO claim_uses (ref, written, resolved, repo, version, path, qualname)"
        " VALUES (?,?,?,?,?,?,?)",
        (
            (ref_key, use["written"], use.get("resolved"), use.get("repo"), use.get("version"),
             use.get("path"), use.get("qualname"))
            for use in ref.get("uses", ())
        ),
    )


def link_signature(database: Database) -> str | None:
    row = database.conn.execute("SELECT value FROM meta WHERE key = 'link_signature'").fetchone()
    return row[0] if row else None


def has_claims(database: Database) -> bool:
    """Whether any claim is stored (the last link found some)."""
    return database.conn.execute("SELECT 1 FROM claims LIMIT 1").fetchone() is not None


def claim_count(database: Database) -> int:
    return database.conn.execute("SELECT count(*) FROM claims").fetchone()[0]


def was_linked(database: Database) -> bool:
    """Whether a link has run: its signature is recorded, or claims are stored (`annotate
    index` forgets the signature when it parses blobs again, and keeps the claims)."""
    return link_signature(database) is not None or has_claims(database)


def index_state(database: Database) -> str:
    """Changes whenever a version is added to or removed from the index, or indexed again."""
    rows = database.conn.execute(
        "SELECT id, repo, version, indexed_at, coalesce(commit_sha, wheel_sha256, '')"
        " FROM versions ORDER BY id")
    return ";".join(f"{key}:{repo}@{version}:{at}:{source}"
                    for key, repo, version, at, source in rows)


def links_in_lines(
    database: Database, path: str, start: int | None, end: int | None,
    version: str | None = None, repo: str | None = None,
) -> list[dict]:
    """Stored refs into ``path`` whose lines overlap ``start``-``end`` (the whole file when
    ``start`` is None), at ``version`` and in ``repo`` when they are given."""
    rows = database.query(
        "SELECT * FROM claim_links WHERE path = :path"
        " AND (:version IS NULL OR version = :version) AND (:repo IS NULL OR repo = :repo)"
        " AND (:start IS NULL OR (start_line <= :end AND end_line >= :start))"
        " ORDER BY start_line, qualname, article, claim_id",
        {"path": path, "version": version, "repo": repo, "start": start,
         "end": end if end is not None else start},
    )
    return list(rows)


def links_under(database: Database, folder: str) -> list[dict]:
    """Stored refs into the files of ``folder`` (and the folders below it), by path."""
    rows = database.query(
        "SELECT * FROM claim_links WHERE path >= ? AND path < ? ORDER BY path, start_line",
        folder_bounds(folder),
    )
    return list(rows)


def links_to(database: Database, qualname: str, path: str | None = None) -> list[dict]:
    """Stored refs whose qualname is ``qualname`` or ends with ``.qualname``, or whose
    dotted name (module, then qualname) is ``qualname``."""
    last = qualname.rsplit(".", 1)[-1]
    rows = database.query(
        "SELECT * FROM claim_links WHERE qualname IN (?, ?) OR qualname LIKE ? ESCAPE '\\'"
        " ORDER BY path, qualname, article, claim_id",
        (qualname, last, "%." + like_escape(last)),
    )
    return [row for row in rows if names(row["path"], row["qualname"], qualname, path)]


def uses_to(database: Database, qualname: str, path: str | None = None) -> list[dict]:
    """The ``uses:`` targets that name ``qualname`` as `links_to` reads it, each a row as
    `links_to` gives, with ``uses_of``, the ref written above it."""
    last = qualname.rsplit(".", 1)[-1]
    rows = database.query(
        "SELECT article, title, claim_id, text, source_file, line, written, resolved, repo,"
        " version, path, qualname, NULL AS kind, NULL AS start_line, NULL AS end_line,"
        " NULL AS quote, 'linked' AS state, NULL AS message, ref_written AS uses_of"
        " FROM claim_use_links WHERE qualname IN (?, ?) OR qualname LIKE ? ESCAPE '\\'"
        " ORDER BY path, qualname, article, claim_id",
        (qualname, last, "%." + like_escape(last)),
    )
    return [row for row in rows if names(row["path"], row["qualname"], qualname, path)]


def links_to_members(database: Database, qualname: str, path: str | None = None) -> list[dict]:
    """Stored refs to the members of what ``qualname`` names, as `links_to` reads it
    (``KimiDeltaAttention.forward``, ``Outer.Inner.f`` for ``KimiDeltaAttention``)."""
    last = qualname.rsplit(".", 1)[-1]
    rows = database.query(
        "SELECT * FROM claim_links WHERE qualname LIKE ? ESCAPE '\\'"
        " ORDER BY path, qualname, article, claim_id",
        ("%" + like_escape(last) + ".%",),
    )
    return [row for row in rows if any(
        names(row["path"], owner, qualname, path) for owner in _owners(row["qualname"]))]


def _owners(qualname: str) -> list[str]:
    """The classes (or functions) ``qualname`` is defined in: ``A``, ``A.B`` of ``A.B.c``."""
    parts = qualname.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


def names(path: str, qualname: str, wanted: str, wanted_path: str | None = None) -> bool:
    """Whether ``wanted`` (a qualname, the end of one, or a dotted name) names the symbol
    ``qualname`` of ``path`` (in ``wanted_path``, when given)."""
    return (is_named(qualname, wanted) or _dotted_name(path, qualname) == wanted) and (
        wanted_path is None or path == wanted_path)


def unindexed_links(database: Database) -> list[dict]:
    """The stored refs pinned at a version not indexed: never resolved, they hold only the
    ref as written."""
    return list(database.query("SELECT * FROM claim_links WHERE state = 'unindexed'"
                               " ORDER BY article, claim_id, line"))


def all_links(database: Database) -> list[dict]:
    """Every stored ref, in the order of ``claim_links``."""
    return list(database.query("SELECT * FROM claim_links"))


def _dotted_name(path: str, qualname: str) -> str | None:
    """``a/b.py`` or ``a/b/__init__.py`` with ``C.f`` is ``a.b.C.f``; None for other files."""
    if not path.endswith(".py"):
        return None
    return f"{module_name(path)}.{qualname}"


def linked_versions(database: Database) -> list[tuple[str, str]]:
    """The (repo, version) pairs that linked refs are pinned at."""
    return [tuple(row) for row in database.conn.execute(
        "SELECT DISTINCT repo, version FROM claim_refs WHERE state = 'linked'"
        " ORDER BY repo, version")]


def linked_ref_keys(database: Database) -> Iterator[tuple[str, str, str, str, str, int, str]]:
    """(repo, version, path, qualname or '', exact, start_line, source file) of every
    linked ref: what its comparison is stored under (`annotations.comparison`), without
    the 25 columns of `all_refs`."""
    return database.conn.execute(
        "SELECT r.repo, r.version, r.path, coalesce(r.qualname, ''), r.exact, r.start_line,"
        " c.source_file FROM claim_refs r JOIN claims c ON c.id = r.claim"
        " WHERE r.state = 'linked'"
    )


def links_of_article(database: Database, article: str) -> list[dict]:
    return list(
        database.query(
            "SELECT * FROM claim_links WHERE article = ? OR source_file = ?"
            " ORDER BY source_file != article, source_file, line, claim_id",
            (article, article),
        )
    )


def all_refs(database: Database) -> Iterator[dict]:
    """Every stored ref with its claim, for check, read as it is asked for: a check keeps
    only the result of each, not its 25 columns (66 MB of a 34,979-ref collection). By
    article, then by file, a Markdown article's own first, then as written. ``has_uses``:
    whether the ref has ``uses:`` targets (`uses_of`), which 1% of a collection's refs
    have: asked of each ref, the empty answers took ~0.1 s of a no-op check of 35,000."""
    return database.query(
        "SELECT r.*, c.claim_id, c.text AS claim_text, c.article, c.source_file, c.id AS"
        " claim_key, EXISTS (SELECT 1 FROM claim_uses u WHERE u.ref = r.id) AS has_uses"
        " FROM claim_refs r JOIN claims c ON c.id = r.claim"
        " ORDER BY c.article, c.source_file != c.article, c.source_file, c.line, r.seq"
    )


def uses_of(database: Database, ref_key: int) -> list[dict]:
    return list(database.query("SELECT * FROM claim_uses WHERE ref = ?", (ref_key,)))


def waivers(database: Database) -> dict[int, list[dict]]:
    found: dict[int, list[dict]] = {}
    for row in database.query("SELECT * FROM claim_waivers"):
        found.setdefault(row["claim"], []).append(row)
    return found


MAX_SEARCH_TERMS = 100
_TERM = re.compile(r'"([^"]+)"|(\S+)')
"""A search term: a "phrase in double quotes", or a word."""


def check_search_text(text: str) -> None:
    """Refuse, as `BadSearchText`, a search ``text`` that asks for nothing (blank, or
    phrases of nothing: '""'), or whose quotes make no phrase: a " that opens none that
    is closed, a phrase of nothing, or of white space alone, which every claim has."""
    phrases = re.findall(r'"([^"]*)"', text)
    if text.count('"') % 2:
        raise BadSearchText('a " opens a phrase that is not closed: close it '
                            '(\'"prefix caching"\') or drop it')
    if "" in phrases:
        raise BadSearchText('a "quoted phrase" is empty: put words in it or drop it')
    if any(phrase.isspace() for phrase in phrases):
        raise BadSearchText('a "quoted phrase" holds only white space, which every claim '
                            "has: put words in it or drop it")
    if not text.strip():
        raise BadSearchText("the search text is empty")


def search(database: Database, text: str, limit: int = 50) -> list[dict]:
    """Claims whose text, article title or cited symbols contain every term of ``text``
    (in any order and place): its words, and its "phrases in double quotes".

    FTS5's trigram tokenizer needs three characters; a shorter word (two Chinese
    characters, say) is found by a substring scan of the claims the others matched.
    A text that searches for nothing is `BadSearchText` (`check_search_text`).
    """
    check_search_text(text)
    words = list(dict.fromkeys(phrase or word for phrase, word in _TERM.findall(text))) or [text]
    if len(words) > MAX_SEARCH_TERMS:
        raise QueryTooLarge(f"the search has {len(words)} different words or phrases (at most "
                            f"{MAX_SEARCH_TERMS})", "search for the few that matter")
    long_words = [word for word in words if len(word) >= 3]
    conditions, params = [], []
    if long_words:
        conditions.append("claim_search MATCH ?")
        params.append(" AND ".join('"' + word.replace('"', '""') + '"' for word in long_words))
    for word in (word for word in words if len(word) < 3):
        conditions.append("(text LIKE ? ESCAPE '\\' OR title LIKE ? ESCAPE '\\'"
                          " OR symbols LIKE ? ESCAPE '\\')")
        params += ["%" + like_escape(word) + "%"] * 3
    order = " ORDER BY rank" if long_words else ""
    sql = (f"SELECT article, claim_id, title, text, symbols FROM claim_search"
           f" WHERE {' AND '.join(conditions)}{order} LIMIT ?")
    return list(database.query(sql, (*params, limit)))


def refs_of_claims(
    database: Database, claims: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], list[dict]]:
    """The refs of each claim (``(article, claim_id)``) that has any, in the order written:
    ``ref`` as written, ``resolved`` at its pin (None when it did not resolve) and
    ``state``, as `links` JSON names them. One query, for any number of claims."""
    refs: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in database.query(
        "SELECT c.article, c.claim_id, r.written AS ref, r.resolved, r.state"
        " FROM claim_refs r JOIN claims c ON c.id = r.claim"
        " WHERE (c.article, c.claim_id) IN"
        " (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))"
        " ORDER BY r.claim, r.seq",
        (json.dumps(list(claims)),),
    ):
        refs[(row.pop("article"), row.pop("claim_id"))].append(row)
    return refs
