"""What extracted a blob's symbols, names and imports, recorded with each blob.

Kept apart from `indexer.symbols` so that the commands that only read the database can
tell whether it is outdated without loading the parser.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import metadata

EXTRACTION_VERSION = 10
"""Bumped whenever `indexer.symbols.parse_blob` returns something else for some input."""


@lru_cache(maxsize=1)
def extractor_id() -> str:
    """This extraction version and the parser's (a new grammar may parse some code
    differently)."""
    packages = ("tree-sitter", "tree-sitter-python")
    parsers = "; ".join(f"{package} {metadata.version(package)}" for package in packages)
    return f"extraction {EXTRACTION_VERSION}; {parsers}"
