"""What extracted a blob's symbols, names and imports, recorded with each blob.

Kept apart from `indexer.symbols`: the commands that only read the database ask it whether
their index is outdated, and need none of the extraction's code.
"""

from __future__ import annotations

from functools import lru_cache

import tree_sitter
import tree_sitter_python

EXTRACTION_VERSION = 12
"""Bumped whenever `indexer.symbols.parse_blob` returns something else for some input."""


@lru_cache(maxsize=1)
def extractor_id() -> str:
    """This extraction version and the parser's (a new grammar may parse some code
    differently): ``extraction 12; tree-sitter 0.26.1; tree-sitter-python 0.25.0``."""
    language = tree_sitter.Language(tree_sitter_python.language())
    grammar = getattr(language, "semantic_version", None)  # None: a grammar of ABI 14
    parser_version = getattr(tree_sitter, "__version__", None) or _installed("tree-sitter")
    grammar_version = ".".join(map(str, grammar)) if grammar else _installed("tree-sitter-python")
    return (f"extraction {EXTRACTION_VERSION}; tree-sitter {parser_version}; "
            f"tree-sitter-python {grammar_version}")


def _installed(package: str) -> str:
    """``package``'s version, from its metadata: what the parser and its grammar say of
    themselves is read first, since importing `importlib.metadata` took 10 ms of the 0.1 s
    before a cold index could start parsing, with one core of two idle."""
    from importlib import metadata

    return metadata.version(package)
