"""``annotate ARGS`` whose index write holds still once it has spilled pages into the WAL.

Usage: ``python held_index.py READY_FD RESUME_FD ARGS...``. It is the console script's
``annotate_cli.main()``, except that once the write transaction of the version being
indexed has put more than `SPILLED` bytes into the ``-wal`` file, it writes a byte to
READY_FD and waits, inside that transaction, for a byte on RESUME_FD. The first version
of a new index, written with a rollback journal, keeps its pages in memory until its
commit (`db.database.Database.write`): it is held once `HELD_AFTER` blobs are written.
A signal the CLI handles (Ctrl-C, SIGTERM) is raised there, as anywhere else in the
write; an ignored one changes nothing. A test can thus signal a run mid-write however
loaded the machine is.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import annotate_cli
from db import database as database_module
from db import queries
from db.database import Database

SPILLED = 256 * 1024
"""Bytes in the -wal file that show the transaction's pages going to disk (SQLite's page
cache, 2 MB, has overflowed): well before its commit, for a version of some thousand files."""
HELD_AFTER = 1000


def _holding(blobs: Iterable[queries.BlobRow], database: Database, ready: int, resume: int
             ) -> Iterator[queries.BlobRow]:
    wal = database.path.with_name(database.path.name + "-wal")
    held = False
    for count, blob in enumerate(blobs, 1):
        yield blob
        if not held and _mid_write(database, wal, count):
            held = True
            os.write(ready, b"w")
            os.read(resume, 1)


def _mid_write(database: Database, wal: Path, blobs_written: int) -> bool:
    if database._in_rollback_mode():
        return blobs_written >= HELD_AFTER
    return _size(wal) > SPILLED


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def main() -> None:
    ready, resume = int(sys.argv[1]), int(sys.argv[2])
    write_version = queries.write_version

    def holding_write(
        database: Database, repo_row: dict, version: queries.VersionRow,
        files: Sequence[tuple[str, str]], blobs: Iterable[queries.BlobRow], **options: Any,
    ) -> queries.Stored | None:
        return write_version(database, repo_row, version, files,
                             _holding(blobs, database, ready, resume), **options)

    queries.write_version = holding_write
    # SQLite's default cache: the version's pages spill into the WAL well before its commit
    database_module.BULK_CACHE_KIB = 2000
    sys.argv = ["annotate", *sys.argv[3:]]
    annotate_cli.main()


if __name__ == "__main__":
    main()
