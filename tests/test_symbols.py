"""The symbol index against Python's own ``ast``: every fixture tag, and tricky snippets."""

from __future__ import annotations

import collections
import re
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import fakevllm as fv
import pytest
from ast_reference import reference_for_tree, reference_symbols
from fakevllm import FakeRepo
from hypothesis import given, settings
from hypothesis import strategies as st

from db.database import Database, open_database
from indexer import symbols as symbols_module
from indexer.symbols import parse_blob

TAG_PARAMS = [pytest.param(tag, id=tag) for tag in fv.TAGS]


# ------------------------------------------------------------------------------ helpers


@pytest.fixture(scope="module")
def indexed(indexed_fakes: Path) -> Path:
    """The shared database of every fake tag, fetched from git (read it, never write)."""
    return indexed_fakes / ".annotate" / "index.db"


@pytest.fixture
def db(indexed: Path) -> Iterator[Database]:
    with open_database(indexed, create=False) as database:
        yield database


def _stored(db: Database, tag: str) -> list[tuple[str, str, str, int, int]]:
    """(path, qualname, kind, start, end) of every stored symbol of ``tag``, duplicates kept."""
    rows = db.conn.execute(
        "SELECT path, qualname, kind, start_line, end_line FROM version_symbols"
        " WHERE repo = 'vllm' AND version = ?",
        (tag,),
    )
    return [tuple(row) for row in rows]


def _checkout(repo: FakeRepo, tag: str, dest: Path) -> Path:
    """The tree of ``tag`` as ``git archive`` writes it (symlinks included)."""
    dest.mkdir()
    archive = subprocess.run(
        ["git", "archive", "--format=tar", tag], cwd=repo.path, env=fv.git_env(),
        capture_output=True, check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def _symbols(source: str | bytes) -> list[tuple[str, str, int, int]]:
    data = source.encode() if isinstance(source, str) else source
    return sorted(
        (s.qualname, s.kind.value, s.start_line, s.end_line)
        for s in parse_blob("x", data).symbols
    )


def _blob_flags(db: Database, tag: str, path: str) -> tuple[int, int, int, bytes | None]:
    return db.conn.execute(
        "SELECT b.parsed, b.has_errors, b.decode_errors, b.content FROM version_files vf"
        " JOIN blobs b ON b.id = vf.blob_id WHERE vf.version = ? AND vf.path = ?",
        (tag, path),
    ).fetchone()


# ------------------------------------------------------------------------------ fixture tags


@pytest.mark.parametrize("tag", TAG_PARAMS)
def test_every_valid_file_matches_the_ast_reference(
    db: Database, fake_vllm: FakeRepo, tag: str, tmp_path: Path
) -> None:
    tree = _checkout(fake_vllm, tag, tmp_path / "tree")
    reference, skipped = reference_for_tree(tree)
    assert skipped == sorted([fv.SYNTAX_ERROR_FILE, fv.NON_UTF8_FILE])
    stored = {row for row in _stored(db, tag) if row[0] not in skipped}
    assert stored == reference
    assert {row[0] for row in reference} <= set(fv.python_files(tag))


@pytest.mark.parametrize("tag", TAG_PARAMS)
def test_duplicates_are_kept_like_the_reference(db: Database, tag: str) -> None:
    files = fv.python_files(tag)
    expected = collections.Counter(
        (path, *symbol)
        for path, data in files.items()
        if path not in (fv.SYNTAX_ERROR_FILE, fv.NON_UTF8_FILE)
        for symbol in reference_symbols(data.decode())
    )
    stored = collections.Counter(
        row for row in _stored(db, tag) if row[0] not in (fv.SYNTAX_ERROR_FILE, fv.NON_UTF8_FILE)
    )
    assert stored == expected


@pytest.mark.parametrize("tag", TAG_PARAMS)
def test_property_setter_is_stored_twice(db: Database, tag: str) -> None:
    path, qualname = fv.FEATURES["property_getter_setter"]
    lines = fv.python_files(tag)[path].decode().splitlines()
    getter = lines.index("    @property") + 1
    setter = lines.index("    @log_stats.setter") + 1
    rows = sorted(row for row in _stored(db, tag) if row[:2] == (path, qualname))
    assert rows == [
        (path, qualname, "method", getter, getter + 2),
        (path, qualname, "method", setter, setter + 2),
    ]


@pytest.mark.parametrize("tag", TAG_PARAMS)
def test_syntax_error_file_keeps_the_recovered_defs(db: Database, tag: str) -> None:
    stored = {row[1:] for row in _stored(db, tag) if row[0] == fv.SYNTAX_ERROR_FILE}
    assert stored == {
        ("load_weights_before", "function", 4, 5),
        ("load_weights_after", "function", 12, 13),
    }
    parsed, has_errors, decode_errors, _ = _blob_flags(db, tag, fv.SYNTAX_ERROR_FILE)
    assert (parsed, has_errors, decode_errors) == (1, 1, 0)


@pytest.mark.parametrize("tag", TAG_PARAMS)
def test_non_utf8_file_keeps_its_def(db: Database, tag: str) -> None:
    stored = {row[1:] for row in _stored(db, tag) if row[0] == fv.NON_UTF8_FILE}
    assert stored == {("get_tokenizer_name", "function", 4, 5)}
    parsed, has_errors, decode_errors, content = _blob_flags(db, tag, fv.NON_UTF8_FILE)
    assert (parsed, has_errors, decode_errors) == (1, 0, 1)
    assert zlib.decompress(content) == fv.TOKENIZER_LATIN1


def test_only_the_broken_files_are_flagged(db: Database) -> None:
    flagged = db.conn.execute(
        "SELECT DISTINCT vf.path, b.has_errors, b.decode_errors FROM version_files vf"
        " JOIN blobs b ON b.id = vf.blob_id WHERE b.has_errors OR b.decode_errors"
        " ORDER BY vf.path"
    ).fetchall()
    assert flagged == [(fv.SYNTAX_ERROR_FILE, 1, 0), (fv.NON_UTF8_FILE, 0, 1)]


@pytest.mark.parametrize("tag", TAG_PARAMS)
def test_empty_file_is_a_parsed_file_without_symbols(db: Database, tag: str) -> None:
    parsed, has_errors, decode_errors, content = _blob_flags(db, tag, fv.EMPTY_FILE)
    assert (parsed, has_errors, decode_errors, zlib.decompress(content)) == (1, 0, 0, b"")
    assert [row for row in _stored(db, tag) if row[0] == fv.EMPTY_FILE] == []


NESTING = 600
"""Blocks nested deeper than the interpreter's recursion limit lets a recursive walk go
(Python itself refuses past 100 levels, but a file in a repo is read, not run)."""


@pytest.mark.parametrize("header", [
    pytest.param("if x:", id="if"),
    pytest.param("for a in b:", id="for"),
    pytest.param("while x:", id="while"),
    pytest.param("with c:", id="with"),
])
def test_blocks_nested_deeper_than_the_recursion_limit_keep_their_definitions(
    header: str
) -> None:
    nested = "".join(" " * depth + header + "\n" for depth in range(NESTING))
    inner = " " * NESTING
    source = (f"{nested}{inner}LIMIT = 1\n{inner}class Engine:\n{inner} def step(self):\n"
              f"{inner}  pass\n").encode()
    parsed = parse_blob("blob", source)
    assert [(s.qualname, s.kind.value, s.start_line) for s in parsed.symbols] == [
        ("LIMIT", "attribute", NESTING + 1), ("Engine", "class", NESTING + 2),
        ("Engine.step", "method", NESTING + 3)]


@pytest.mark.parametrize("tag", TAG_PARAMS)
def test_files_are_the_regular_files_symlinks_excluded(db: Database, tag: str) -> None:
    paths = {
        row[0] for row in db.conn.execute(
            "SELECT path FROM version_files WHERE version = ?", (tag,)
        )
    }
    assert paths == set(fv.regular_files(fv.VERSIONS[tag]))
    assert fv.SYMLINK_FILE not in paths


@pytest.mark.parametrize("path", [pytest.param(p, id=p) for p in fv.NON_PYTHON_FILES])
def test_non_python_files_keep_content_but_have_no_symbols(db: Database, path: str) -> None:
    for tag in fv.TAGS:
        parsed, has_errors, _, content = _blob_flags(db, tag, path)
        assert (parsed, has_errors) == (0, 0)
        assert zlib.decompress(content) == fv.content_bytes(fv.VERSIONS[tag][path])
        assert [row for row in _stored(db, tag) if row[0] == path] == []


SIGNATURES = [
    pytest.param(
        "v0.1.0", *fv.FEATURES["multi_decorator"],
        "@torch.compile(dynamic=True)\n@torch.no_grad()\ndef fused_add_rms_norm(\n"
        "    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6\n"
        ") -> tuple[torch.Tensor, torch.Tensor]:",
        id="decorators-included",
    ),
    pytest.param(
        "v0.1.0", *fv.FEATURES["classmethod"],
        "@classmethod\n    def from_engine_args(cls, engine_args) -> \"LLMEngine\":",
        id="classmethod",
    ),
    pytest.param(
        "v0.1.0", *fv.FEATURES["async_method"],
        "async def generate(self, request_id: str, prompt: str, params)"
        " -> AsyncIterator[str]:",
        id="async-method",
    ),
    pytest.param(
        "v0.2.0", *fv.CASES["bases_changed"].new[0],
        "class ColumnParallelLinear(LinearBase):", id="class-bases",
    ),
    pytest.param(
        "v0.1.0", *fv.CASES["attribute_value_changed"].old, "0.9", id="annotated-attribute-value",
    ),
    pytest.param(
        "v0.2.0", *fv.CASES["constant_value_changed"].new[0], "8", id="module-constant-value",
    ),
    pytest.param(
        "v0.1.0", *fv.FEATURES["reexport_module"],
        '["AsyncEngine", "CacheConfig", "LLMEngine", "SamplingParams"]', id="list-value",
    ),
    pytest.param(
        "v0.2.0", f"{fv.DEEPSEEK_DIR}/deepseek_v4.py",
        "DeepseekV4ForCausalLM.packed_modules_mapping",
        '{"gate_up_proj": ["gate_proj", "up_proj"]}', id="dict-value",
    ),
    pytest.param(
        "v0.1.0", *fv.FEATURES["class_attr_in_try"],
        "torch.cuda.get_device_capability() >= (8, 9)", id="first-of-two-values",
    ),
]


@pytest.mark.parametrize(("tag", "path", "qualname", "signature"), SIGNATURES)
def test_signature_text(db: Database, tag: str, path: str, qualname: str, signature: str) -> None:
    rows = db.conn.execute(
        "SELECT signature FROM version_symbols WHERE version = ? AND path = ? AND qualname = ?"
        " ORDER BY start_line",
        (tag, path, qualname),
    ).fetchall()
    assert rows[0][0] == signature


# ------------------------------------------------------------------------------ snippets

SNIPPETS = [
    pytest.param("def f():\n    return 1\n", id="function"),
    pytest.param("async def f():\n    await g()\n", id="async-function"),
    pytest.param("class A:\n    class B:\n        def m(self): pass\n", id="nested-class"),
    pytest.param(
        "def outer():\n    class Local:\n        def m(self):\n            def deep(): pass\n",
        id="class-in-function",
    ),
    pytest.param(
        "class A:\n    def m(self):\n        class Inner:\n            x = 1\n        y = 2\n",
        id="class-in-method-and-local-assignment",
    ),
    pytest.param(
        "class A:\n    if X:\n        def m(self): pass\n    else:\n        def m(self): pass\n",
        id="conditional-methods",
    ),
    pytest.param(
        "class A:\n    match K:\n        case 1:\n            kind = 'one'\n        case _:\n"
        "            kind = 'other'\n",
        id="attributes-in-match",
    ),
    pytest.param(
        "class A:\n    with ctx:\n        for i in y:\n            while z:\n"
        "                a = 1\n",
        id="attributes-in-nested-blocks",
    ),
    pytest.param(
        "try:\n    import x\nexcept ImportError:\n    x = None\nelse:\n    y = 1\n"
        "finally:\n    z = 2\n",
        id="module-attributes-in-try",
    ),
    pytest.param("a = b = c = 1\n", id="chained-assignment"),
    pytest.param("a, b = 1, 2\nc.d = 3\ne[0] = 4\nf += 5\n", id="non-name-targets"),
    pytest.param("x: int\ny: int = 1\n", id="annotations-with-and-without-value"),
    pytest.param("(pars): bool = True\n(q) = 1\n((w)) = 2\n", id="parenthesized-target"),
    pytest.param("f = lambda: 1\ng = (lambda: (yield))\n", id="lambda-is-an-attribute"),
    pytest.param(
        "@a\n@b.c(1)\nclass K(Base, metaclass=M):\n    @property\n    def p(self): ...\n",
        id="decorated-class",
    ),
    pytest.param(
        "def f():\n    x = 1\n    # trailing comment\n\n# module comment\n", id="trailing-comments",
    ),
    pytest.param(
        "def f():\n    assert g(x) \\\n        # comment after a continuation\n",
        id="continuation-then-comment",
    ),
    pytest.param(
        "def f():\n    return '''\n# not a comment\n'''\n", id="string-line-starting-with-hash",
    ),
    pytest.param(
        "class A:\n    def m(self):\n        pass\n    # end of class\nx = 1\n",
        id="comment-after-method",
    ),
    pytest.param(
        "class A:\n    '''doc'''\n    x = 1; y = 2\n", id="semicolon-statements",
    ),
    pytest.param(
        "def f(a,\n      b):\n    return (a +\n            b)\n", id="multiline-everything",
    ),
    pytest.param(
        "if TYPE_CHECKING:\n    def f() -> int: ...\nelse:\n    def f() -> int:\n"
        "        return 1\n",
        id="conditional-functions",
    ),
    pytest.param("\ufeffdef f(): pass\n", id="utf8-bom"),
    pytest.param("def f(): pass\r\nclass C:\r\n    x = 1\r\n", id="crlf-line-ends"),
    pytest.param("", id="empty"),
    pytest.param("# only a comment\n", id="only-a-comment"),
    pytest.param("def 函数():\n    变量 = 1\nclass 类:\n    属性 = 2\n", id="non-ascii-names"),
    pytest.param("\u00b5 = 1\nclass T:\n    \u00b5 = 2\n    def \ufb01x(self): pass\n",
                 id="names-nfkc-normalized-as-python-reads-them"),
]


@pytest.mark.parametrize("source", SNIPPETS)
def test_snippet_matches_the_ast_reference(source: str) -> None:
    parsed = parse_blob("x", source.encode())
    assert not parsed.has_errors
    assert _symbols(source) == sorted(reference_symbols(source.removeprefix("\ufeff")))


# Valid Python that tree-sitter-python rejects: a starred item that is no name, attribute,
# subscript or call in a bare expression list or a subscript (``return a, *(b)``).
REJECTED_BY_THE_PARSER = [
    pytest.param("X = 1\nx = a, *(b)\nY = 2\n\ndef g():\n    pass\n",
                 id="module-assignment"),
    pytest.param("x = a, *-b\nY = 2\n", id="module-assignment-first"),
    pytest.param("class C:\n    x = a, *(b)\n    y = 2\n\n    def m(self):\n        pass\n",
                 id="class-attribute"),
    pytest.param("class C:\n    y = 2\n    x = a, *[1, 2]\n\nclass D:\n    pass\n",
                 id="last-class-attribute"),
    pytest.param("if a:\n    x = a, *(b) + c\n    Q = 1\nelse:\n    Q = 2\n",
                 id="module-assignment-in-if"),
    pytest.param("for x in *(a), b:\n    y = 1\nZ = 2\n", id="module-for"),
    pytest.param("class C:\n    try:\n        x = a, *(yield)\n    except E:\n        z = 1\n"
                 "    def m(self):\n        pass\n", id="class-attribute-in-try"),
    pytest.param("def f(): return a, *(b)\ndef g(): pass\n", id="one-line-function"),
    pytest.param("def f(a):\n    return dq, *((None,) * 20)\n\nT = x[a, *'bc']\n",
                 id="function-then-subscript",
                 marks=pytest.mark.skipif(sys.version_info < (3, 11),
                                          reason="a star in a subscript is Python 3.11 syntax")),
    pytest.param("class C:\n    def f(self):\n        yield a, *{1}\n\n    def g(self):\n"
                 "        return 3\n", id="method-middle"),
    pytest.param("def f(a, *, b, **c):\n    return a * (b)\n\nfrom m import *\nX = a, *(b)\n"
                 "Y = g(*(a), **(c)) ** (3)\nZ = lambda *, k: k\n",
                 id="other-stars-kept"),
    # an attribute's dot ending a line in brackets, its name on a line indented less
    pytest.param("class A:\n    def f(self):\n        (bar.\n    baz)\n\n    def g(self):\n"
                 "        pass\n", id="dot-then-dedented-name"),
    pytest.param("class T:\n    def m(self):\n        def f():\n            (bar.\n        baz(\n"
                 "        ))\n        return f\n\nclass U:\n    x = 1\n",
                 id="dot-then-dedented-call"),
    pytest.param("class A:\n    def f(self):\n        (bar.\n    baz)\n        y = (1.\n"
                 "    if c else 2)\n        z = (a1.  \n    b)\n    def g(self): ...\n",
                 id="dot-after-a-number-or-a-name-with-digits"),
]


@pytest.mark.parametrize("source", REJECTED_BY_THE_PARSER)
def test_valid_source_the_parser_rejects_keeps_the_ast_symbols(source: str) -> None:
    """Such a file is marked (tree-sitter read an error), yet its definitions are Python's."""
    assert parse_blob("x", source.encode()).has_errors
    assert _symbols(source) == sorted(reference_symbols(source))


@pytest.mark.parametrize(("source", "repaired"), [
    pytest.param(b"(bar.\n    baz)", b"(bar\n    .baz)", id="attribute"),
    pytest.param(b"(f().\r\n  g)", b"(f()\r\n  .g)", id="after-a-call-crlf"),
    pytest.param(b"('s'.  \n x)", b"('s'  \n .x)", id="after-a-string-then-spaces"),
    pytest.param(b"(a.b1.\n c)", b"(a.b1\n .c)", id="after-a-name-with-digits"),
    pytest.param(b"(1.\n if c else 2)", b"(1.\n if c else 2)", id="a-number-kept"),
    pytest.param(b"(...\n or x)", b"(...\n or x)", id="an-ellipsis-kept"),
    pytest.param(b"(a.\n 1)", b"(a.\n 1)", id="before-a-digit-kept"),
    pytest.param(b"x = a.\nb = 1", b"x = a.\nb = 1", id="outside-brackets-kept"),
    pytest.param(b"(x)\ny = a.\nb = [c.\n d]", b"(x)\ny = a.\nb = [c\n .d]",
                 id="after-closed-brackets-kept-in-open-ones-moved"),
    pytest.param(b"# see a.\nx = 1", b"# see a.\nx = 1", id="in-a-comment-kept"),
    pytest.param(b'"""a.\nb"""', b'"""a.\nb"""', id="in-a-string-kept"),
])
def test_a_dot_that_ends_a_line_moves_after_the_line_break(source: bytes, repaired: bytes) -> None:
    """Only the tree of a file with errors is read from the repaired copy, whose offsets
    and line breaks are the source's."""
    assert symbols_module._rejoined(source) == repaired
    assert len(repaired) == len(source)


@pytest.mark.parametrize("ending", ["\r", "\r\n"], ids=["cr", "crlf"])
@pytest.mark.parametrize("source", SNIPPETS)
def test_snippet_with_other_line_ends_matches_the_ast_reference(source: str, ending: str) -> None:
    source = source.replace("\n", ending)
    assert not parse_blob("x", source.encode()).has_errors
    assert _symbols(source) == sorted(reference_symbols(source.removeprefix("\ufeff")))


@pytest.mark.parametrize(
    ("source", "imports"),
    [
        pytest.param("def f(): pass\rclass C:\r    def m(self):\r        pass\r\r    x = 1\r",
                     set(), id="cr-only"),
        pytest.param("x = 1\r\ndef f(): pass\rclass C:\n    y = 2\r\n    def m(self):\r"
                     "        pass\n", set(), id="mixed"),
        pytest.param('import os\rfrom a import b\rdef g():\r    """doc\r    """\r    pass\r',
                     {(1, "os"), (2, "a")}, id="cr-imports"),
    ],
)
def test_a_lone_carriage_return_ends_a_line_as_in_python(source: str, imports: set) -> None:
    parsed = parse_blob("x", source.encode())
    assert not parsed.has_errors
    assert _symbols(source) == sorted(reference_symbols(source))
    assert {row[:2] for row in parsed.imports} == imports


def test_a_lone_carriage_return_changes_the_exact_fingerprint_only() -> None:
    lf, cr = (parse_blob("x", f"def f():{end}    return 1{end}".encode()).symbols[0]
              for end in ("\n", "\r"))
    assert (lf.start_line, lf.end_line) == (cr.start_line, cr.end_line) == (1, 2)
    assert lf.signature == cr.signature
    assert lf.normalized == cr.normalized and lf.exact != cr.exact


# Where a definition or an import may start, as one regex: at the start of a line or after
# a ``;`` or ``:`` (`universal_newlines` makes lone CRs LFs first). The indexer's faster
# search (keyword first, then what precedes it on its line) is checked against it.
_STATEMENT_START_REFERENCE = re.compile(
    rb"(?:^|(?<=[;:]))(?:\xef\xbb\xbf)?[ \t\f]*(?:async[ \t]+)?"
    rb"(def|class|import|from)[ \t\\(.]",
    re.M,
)
_LINE_PIECES = [b"def", b"class", b"import", b"from", b"async", b"un", b"x", b"(", b".",
                b"\\", b" ", b"\t", b"\f", b"\n", b"\r", b"\r\n", b"\xef\xbb\xbf", b"#", b"'",
                b";", b":"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_LINE_PIECES), max_size=30).map(b"".join))
def test_statement_keywords_are_those_the_reference_regex_finds(source: bytes) -> None:
    source = symbols_module.universal_newlines(source)
    expected = [match.start(1) for match in _STATEMENT_START_REFERENCE.finditer(source)]
    assert list(symbols_module._statement_keywords(source)) == expected


@pytest.mark.parametrize(
    ("source", "imports"),
    [
        pytest.param(b"x = 1; import os\n", [(1, "os", None, None, 0)], id="after-semicolon"),
        pytest.param(b"try: import yaml\nexcept ImportError: yaml = None\n",
                     [(1, "yaml", None, None, 0)], id="after-try-colon"),
        pytest.param(b"if TYPE_CHECKING: from a.b import C as D\n",
                     [(1, "a.b", "C", "D", 0)], id="after-if-colon"),
        pytest.param(b"if x:\n    pass\nelse: from . import y\n", [(3, "", "y", None, 1)],
                     id="after-else-colon"),
        pytest.param(b"s = 'a: import b'; t = {1: 2}  # c: import d\n", [], id="in-literals"),
    ],
)
def test_an_import_after_a_semicolon_or_colon_is_recorded(
    source: bytes, imports: list[tuple]
) -> None:
    parsed = parse_blob("x", source)
    assert not parsed.has_errors
    assert list(parsed.imports) == imports


@pytest.mark.parametrize("tag", TAG_PARAMS)
def test_fixture_files_match_the_reference_through_parse_blob(tag: str) -> None:
    for path, data in fv.python_files(tag).items():
        if path in (fv.SYNTAX_ERROR_FILE, fv.NON_UTF8_FILE):
            continue
        assert _symbols(data) == sorted(reference_symbols(data.decode())), path


def test_symbols_are_in_source_order_and_bytes_agree_with_lines() -> None:
    source = fv.LLM_ENGINE_V1.encode()
    parsed = parse_blob("x", source)
    order = [(s.start_byte, -s.end_byte) for s in parsed.symbols]
    assert order == sorted(order)
    for symbol in parsed.symbols:
        assert source[:symbol.start_byte].count(b"\n") + 1 == symbol.start_line
        assert source[:symbol.end_byte].count(b"\n") + 1 == symbol.end_line
        text = source[symbol.start_byte:symbol.end_byte]
        assert text.strip() == text


def test_chained_assignment_signature_is_the_final_value() -> None:
    parsed = parse_blob("x", b"a = b = compute(1)\n")
    assert [(s.qualname, s.signature) for s in parsed.symbols] == [
        ("a", "compute(1)"), ("b", "compute(1)"),
    ]


@pytest.mark.parametrize(("source", "signature"), [
    pytest.param(b"def f(x):  # why\n    return x\n", "def f(x):", id="comment-after-colon"),
    pytest.param(b"def f(x):\n    # convert first\n    return x\n", "def f(x):",
                 id="comment-before-the-body"),
    pytest.param(b"class C(Base):  # a\n    # b\n    x = 1\n", "class C(Base):", id="class"),
    pytest.param(b"@cache  # memo\ndef f(\n    x,  # the input\n):\n    return x\n",
                 "@cache  # memo\ndef f(\n    x,  # the input\n):", id="comments-inside-stay"),
])
def test_a_signature_ends_at_its_headers_colon(source: bytes, signature: str) -> None:
    assert parse_blob("x", source).symbols[0].signature == signature


def test_annotation_without_value_has_an_empty_signature() -> None:
    parsed = parse_blob("x", b"class C:\n    x: int\n")
    assert [(s.qualname, s.kind.value, s.signature) for s in parsed.symbols] == [
        ("C", "class", "class C:"), ("C.x", "attribute", ""),
    ]


def test_too_large_blob_is_skipped_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(symbols_module, "MAX_PARSE_BYTES", 10)
    parsed = parse_blob("x", b"def f():\n    pass\n")
    assert (parsed.symbols, parsed.skipped) == ((), "larger than 10 bytes")
