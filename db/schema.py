"""The SQLite schema, as forward migrations keyed by ``PRAGMA user_version``.

``MIGRATIONS[n]`` takes a database at version ``n`` to ``n + 1``. Never edit a released
migration; append a new one. ``db/SCHEMA.md`` documents the tables.
"""

from __future__ import annotations

_V1 = """
CREATE TABLE repos (
    name TEXT PRIMARY KEY,
    git TEXT,
    pypi TEXT,
    github TEXT
);
CREATE TABLE versions (
    id INTEGER PRIMARY KEY,
    repo TEXT NOT NULL REFERENCES repos(name),
    version TEXT NOT NULL,
    source TEXT NOT NULL,
    commit_sha TEXT,
    wheel_sha256 TEXT,
    indexed_at TEXT NOT NULL,
    file_count INTEGER NOT NULL,
    symbol_count INTEGER NOT NULL,
    new_blobs INTEGER NOT NULL,
    seconds REAL NOT NULL,
    UNIQUE (repo, version)
);
CREATE TABLE blobs (
    id TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    content BLOB,
    parsed INTEGER NOT NULL DEFAULT 0,
    has_errors INTEGER NOT NULL DEFAULT 0,
    decode_errors INTEGER NOT NULL DEFAULT 0,
    skipped TEXT
);
CREATE TABLE files (
    version_id INTEGER NOT NULL REFERENCES versions(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    blob_id TEXT NOT NULL REFERENCES blobs(id),
    PRIMARY KEY (version_id, path)
) WITHOUT ROWID;
CREATE INDEX files_blob ON files(blob_id);
CREATE TABLE symbols (
    id INTEGER PRIMARY KEY,
    blob_id TEXT NOT NULL REFERENCES blobs(id),
    seq INTEGER NOT NULL,
    qualname TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    start_byte INTEGER NOT NULL,
    end_byte INTEGER NOT NULL,
    signature TEXT NOT NULL,
    exact TEXT NOT NULL,
    normalized TEXT NOT NULL,
    shape TEXT
);
CREATE INDEX symbols_blob ON symbols(blob_id, qualname);
CREATE INDEX symbols_name ON symbols(name);
CREATE INDEX symbols_exact ON symbols(exact);
CREATE INDEX symbols_normalized ON symbols(normalized);
CREATE VIEW version_files AS
    SELECT v.repo, v.version, f.path, f.blob_id, b.size, b.has_errors
    FROM files f JOIN versions v ON v.id = f.version_id JOIN blobs b ON b.id = f.blob_id;
CREATE VIEW version_symbols AS
    SELECT v.repo, v.version, f.path, s.qualname, s.kind, s.start_line, s.end_line,
           s.signature, s.exact, s.normalized, s.shape, s.blob_id, s.id AS symbol_id
    FROM symbols s JOIN files f ON f.blob_id = s.blob_id JOIN versions v ON v.id = f.version_id;
CREATE VIEW version_summary AS
    SELECT v.repo, v.version, v.source, coalesce(v.commit_sha, v.wheel_sha256) AS source_id,
           v.file_count, v.symbol_count, v.indexed_at
    FROM versions v ORDER BY v.repo, v.id;
"""

_V2 = """
CREATE TABLE articles (
    path TEXT PRIMARY KEY,
    title TEXT,
    source_file TEXT NOT NULL
);
CREATE TABLE claims (
    id INTEGER PRIMARY KEY,
    article TEXT NOT NULL REFERENCES articles(path) ON DELETE CASCADE,
    claim_id TEXT NOT NULL,
    text TEXT NOT NULL,
    pin TEXT,
    source_file TEXT NOT NULL,
    line INTEGER NOT NULL,
    UNIQUE (article, claim_id)
);
CREATE TABLE claim_refs (
    id INTEGER PRIMARY KEY,
    claim INTEGER NOT NULL REFERENCES claims(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    written TEXT NOT NULL,
    line INTEGER NOT NULL,
    quote TEXT,
    repo TEXT,
    version TEXT,
    resolved TEXT,
    path TEXT,
    qualname TEXT,
    kind TEXT,
    start_line INTEGER,
    end_line INTEGER,
    blob_id TEXT,
    exact TEXT,
    normalized TEXT,
    shape TEXT,
    state TEXT NOT NULL,
    message TEXT
);
CREATE INDEX claim_refs_claim ON claim_refs(claim);
CREATE INDEX claim_refs_qualname ON claim_refs(qualname);
CREATE TABLE claim_uses (
    ref INTEGER NOT NULL REFERENCES claim_refs(id) ON DELETE CASCADE,
    written TEXT NOT NULL,
    resolved TEXT,
    path TEXT,
    qualname TEXT
);
CREATE INDEX claim_uses_ref ON claim_uses(ref);
CREATE TABLE claim_waivers (
    claim INTEGER NOT NULL REFERENCES claims(id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    until TEXT NOT NULL,
    reason TEXT NOT NULL,
    line INTEGER NOT NULL
);
CREATE VIRTUAL TABLE claim_search USING fts5(
    article UNINDEXED, claim_id UNINDEXED, title, text, symbols, tokenize = 'trigram'
);
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE VIEW claim_links AS
    SELECT a.path AS article, a.title, c.claim_id, c.text, c.source_file, r.line,
           r.written, r.resolved, r.repo, r.version, r.path, r.qualname, r.kind,
           r.start_line, r.end_line, r.quote, r.state, r.message
    FROM claim_refs r JOIN claims c ON c.id = r.claim JOIN articles a ON a.path = c.article;
"""

_V3 = """
CREATE TABLE blob_names (
    blob_id TEXT PRIMARY KEY REFERENCES blobs(id),
    names TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE imports (
    blob_id TEXT NOT NULL REFERENCES blobs(id),
    line INTEGER NOT NULL,
    module TEXT NOT NULL,
    name TEXT,
    alias TEXT,
    level INTEGER NOT NULL
);
CREATE INDEX imports_blob ON imports(blob_id);
CREATE INDEX imports_name ON imports(name);
CREATE TABLE match_cache (
    pin INTEGER NOT NULL,
    target INTEGER NOT NULL,
    path TEXT NOT NULL,
    qualname TEXT NOT NULL,
    exact TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    engine TEXT NOT NULL,
    result TEXT NOT NULL,
    PRIMARY KEY (pin, target, path, qualname, exact, start_line, engine)
) WITHOUT ROWID;
"""

# Comparison keys of a definition, so that a diff need not re-normalize its source:
# header_key, the normalized header's digest; body_key, the normalized code after the
# header (a class's without its members). NULL for attributes, and for rows indexed
# before this migration (the matcher then computes them from the source).
_V4 = """
ALTER TABLE symbols ADD COLUMN header_key TEXT;
ALTER TABLE symbols ADD COLUMN body_key TEXT;
"""

# Indexes that no query reads: each one made every symbol or import row of a cold index
# dearer to write (the three together, about a third of the writing time on vLLM).
# A lookup by fingerprint from sqlite-utils or Datasette scans the table instead.
_V5 = """
DROP INDEX symbols_exact;
DROP INDEX symbols_normalized;
DROP INDEX imports_name;
"""

# What extracted each blob's symbols, names and imports (indexer.extractor.extractor_id);
# '' for blobs indexed before it was recorded. ``annotate index`` extracts again the
# blobs whose extractor is not the running one.
_V6 = """
ALTER TABLE blobs ADD COLUMN extractor TEXT NOT NULL DEFAULT '';
CREATE INDEX blobs_extractor ON blobs(extractor);
"""

# A blob's symbols are listed at its .py paths only: the same content kept at another
# path (a .txt copy, a template) defines nothing there. A blob stored unparsed (seen
# first at such a path) that some version has at a .py path is marked for the next
# `annotate index` to parse.
_V7 = """
DROP VIEW version_symbols;
CREATE VIEW version_symbols AS
    SELECT v.repo, v.version, f.path, s.qualname, s.kind, s.start_line, s.end_line,
           s.signature, s.exact, s.normalized, s.shape, s.blob_id, s.id AS symbol_id
    FROM symbols s JOIN files f ON f.blob_id = s.blob_id AND substr(f.path, -3) = '.py'
    JOIN versions v ON v.id = f.version_id;
UPDATE blobs SET extractor = '' WHERE parsed = 0 AND skipped IS NULL
    AND EXISTS (SELECT 1 FROM files f WHERE f.blob_id = blobs.id AND substr(f.path, -3) = '.py');
"""

# Repairs for databases of development builds whose migrations were edited after they ran
# (what the rule above forbids): ``meta`` was added to _V2 and ``match_cache`` to _V3,
# ``blob_names`` was an FTS5 table in an early _V3, ``symbols_qualname`` was dropped from
# _V1, and _V7's marking was added after _V7 ran. Each statement leaves a sound database
# as it is (the plain ``blob_names`` is copied as it stands).
_V8 = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS match_cache (
    pin INTEGER NOT NULL,
    target INTEGER NOT NULL,
    path TEXT NOT NULL,
    qualname TEXT NOT NULL,
    exact TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    engine TEXT NOT NULL,
    result TEXT NOT NULL,
    PRIMARY KEY (pin, target, path, qualname, exact, start_line, engine)
) WITHOUT ROWID;
CREATE TABLE blob_names_v8 (
    blob_id TEXT PRIMARY KEY REFERENCES blobs(id),
    names TEXT NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO blob_names_v8 (blob_id, names) SELECT blob_id, names FROM blob_names;
DROP TABLE blob_names;
ALTER TABLE blob_names_v8 RENAME TO blob_names;
DROP INDEX IF EXISTS symbols_qualname;
UPDATE blobs SET extractor = '' WHERE parsed = 0 AND skipped IS NULL
    AND EXISTS (SELECT 1 FROM files f WHERE f.blob_id = blobs.id AND substr(f.path, -3) = '.py');
"""

# A claim's ``uses:`` targets are cited too (``annotate diff --annotated`` lists a target
# that moved while the claim's symbol stopped naming it). A target's repo and version,
# known before only inside its canonical ``resolved`` (``REPO@VERSION:...``: neither
# part holds a ':' or an '@'), are columns of their own, as a ref's are.
_V9 = """
ALTER TABLE claim_uses ADD COLUMN repo TEXT;
ALTER TABLE claim_uses ADD COLUMN version TEXT;
UPDATE claim_uses SET
    repo = substr(resolved, 1, instr(resolved, '@') - 1),
    version = substr(resolved, instr(resolved, '@') + 1,
                     instr(resolved, ':') - instr(resolved, '@') - 1)
    WHERE instr(resolved, '@') > 1 AND instr(resolved, ':') > instr(resolved, '@');
CREATE VIEW claim_use_links AS
    SELECT a.path AS article, a.title, c.claim_id, c.text, c.source_file, r.line,
           u.written, u.resolved, u.repo, u.version, u.path, u.qualname,
           r.written AS ref_written, r.repo AS ref_repo, r.version AS ref_version,
           r.path AS ref_path, r.qualname AS ref_qualname, r.state
    FROM claim_uses u JOIN claim_refs r ON r.id = u.ref JOIN claims c ON c.id = r.claim
    JOIN articles a ON a.path = c.article;
"""

# What the last link made of each annotation file that loaded (annotations.links.FileLink:
# zlib-compressed JSON), with the digest of what it depends on: a link takes it instead of
# reading and resolving the file again while the digest stands. ``markdown``: whether the
# file was read as a Markdown article (a file both globs select is read as both).
_V10 = """
CREATE TABLE link_files (
    source_file TEXT NOT NULL,
    markdown INTEGER NOT NULL,
    digest TEXT NOT NULL,
    links BLOB NOT NULL,
    PRIMARY KEY (source_file, markdown)
) WITHOUT ROWID;
"""

# The imports of a name, or of a module whole: where a removed symbol's users can be
# (db.references.importing_files; ~8 ms a lookup at vLLM through every import of the
# version without them). The alias index holds only the rows that have one (4% of them).
_V11 = """
CREATE INDEX imports_name ON imports(name, module);
CREATE INDEX imports_alias ON imports(alias) WHERE alias IS NOT NULL;
"""

# The whole-version matches of ``annotate diff`` (db.diff_cache), one row per version
# pair: what they were made from (``identity``: the engine, the versions, their files and
# extractors) and the matches (zlib-compressed JSON). A row of another identity is ignored.
_V12 = """
CREATE TABLE diff_cache (
    a INTEGER NOT NULL,
    b INTEGER NOT NULL,
    identity TEXT NOT NULL,
    matches BLOB NOT NULL,
    PRIMARY KEY (a, b)
);
"""

MIGRATIONS: tuple[str, ...] = (
    _V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8, _V9, _V10, _V11, _V12,
)
SCHEMA_VERSION = len(MIGRATIONS)
