"""``annotate ARGS`` that says when it goes for the index database's write lock.

Usage: ``python announced_write.py READY_FD ARGS...``. It is the console script's
``annotate_cli.main()``, except that each `Database.write` first writes a byte to
READY_FD. A test that holds the lock thus knows, however loaded the machine is, when a
run has come to wait for it (a migration: once it has read the old schema), and need
not sleep for it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager

import annotate_cli
from db.database import Database


def main() -> None:
    ready = int(sys.argv[1])
    write = Database.write

    def announced_write(database: Database, wait: bool = True
                        ) -> AbstractContextManager[Iterator]:
        os.write(ready, b"w")
        return write(database, wait)

    Database.write = announced_write  # type: ignore[method-assign,assignment]
    sys.argv = ["annotate", *sys.argv[2:]]
    annotate_cli.main()


if __name__ == "__main__":
    main()
