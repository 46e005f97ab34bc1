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
CREATE INDEX symbols_qualname ON symbols(qualname);
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

MIGRATIONS: tuple[str, ...] = (_V1,)
SCHEMA_VERSION = len(MIGRATIONS)
