"""Fingerprints: exact, normalized (comments, docstrings, layout ignored) and class shape."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import fakevllm as fv
import pytest
from fakeproject import stored_fingerprints
from hypothesis import given, settings
from hypothesis import strategies as st

from db.database import open_database
from indexer.fingerprints import denoise, digest, normalize
from indexer.literals import LITERAL
from indexer.models import Symbol
from indexer.symbols import parse_blob


def _symbol(source: str, qualname: str) -> Symbol:
    parsed = parse_blob("x", source.encode())
    assert not parsed.has_errors, source
    (found,) = [s for s in parsed.symbols if s.qualname == qualname]
    return found


FUNCTION = """\
@cache
def f(a, b=1):
    \"\"\"Add them.\"\"\"
    # sum
    total = a + b
    return total
"""

CLASS = """\
class C(Base):
    \"\"\"A class.\"\"\"

    limit = 3

    def m(self, x):
        return x + 1

    def n(self):
        return "n"
"""

# (old, new, qualname, same_exact, same_normalized, same_shape); same_shape None: no shape.
CASES = [
    pytest.param(FUNCTION, FUNCTION, "f", True, True, None, id="identical"),
    pytest.param(
        FUNCTION, FUNCTION.replace("# sum", "# the total, computed"), "f", False, True, None,
        id="comment-change",
    ),
    pytest.param(
        FUNCTION, FUNCTION.replace("    # sum\n", ""),
        "f", False, True, None, id="comment-removed",
    ),
    pytest.param(
        FUNCTION, FUNCTION.replace("total = a + b", "total = a + b  # inline"), "f",
        False, True, None, id="inline-comment-added",
    ),
    pytest.param(
        FUNCTION, FUNCTION.replace('"""Add them."""', '"""Add a and b.\n\n    Really.\n    """'),
        "f", False, True, None, id="docstring-change",
    ),
    pytest.param(
        FUNCTION, FUNCTION.replace('    """Add them."""\n', ""), "f", False, True, None,
        id="docstring-removed",
    ),
    pytest.param(
        'def f():\n    # c\n    """doc one"""\n    return 1\n',
        'def f():\n    # c\n    """doc two"""\n    return 1\n',
        "f", False, True, None, id="docstring-after-a-comment-change",
    ),
    pytest.param(
        'def f():\n    "doc" "one"\n    return 1\n', 'def f():\n    "doc" "two"\n    return 1\n',
        "f", False, True, None, id="concatenated-docstring-change",
    ),
    pytest.param(
        "def f():\n    f'{a}'\n    return 1\n", "def f():\n    f'{b}'\n    return 1\n",
        "f", False, False, None, id="leading-f-string-statement-change",
    ),
    pytest.param(
        "def f():\n    'doc' f'{a}'\n    return 1\n", "def f():\n    'doc' f'{b}'\n    return 1\n",
        "f", False, False, None, id="leading-concatenated-f-string-change",
    ),
    pytest.param(
        "def f():\n    b'a'\n    return 1\n", "def f():\n    b'b'\n    return 1\n",
        "f", False, False, None, id="leading-bytes-statement-change",
    ),
    pytest.param(
        'def f():\n    """Match \\d."""\n    return 1\n',
        'def f():\n    r"""Match \\d."""\n    return 1\n',
        "f", False, True, None, id="docstring-made-raw",
    ),
    pytest.param(
        "class C:\n    u'doc' 'more'\n    x = 1\n", "class C:\n    'doc'\n    x = 1\n",
        "C", False, True, True, id="prefixed-concatenated-class-docstring-change",
    ),
    pytest.param(
        FUNCTION, FUNCTION.replace("def f(a, b=1):", "def f(\n    a,\n    b=1,\n):"),
        "f", False, True, None, id="args-split-with-magic-trailing-comma",
    ),
    pytest.param(
        FUNCTION, FUNCTION.replace("# sum\n", "# sum\n\n\n"), "f", False, True, None,
        id="extra-blank-lines",
    ),
    pytest.param(
        "x = (\n    1,\n)\n", "x = (\n    1\n)\n", "x", False, False, None,
        id="one-element-tuple-loses-its-comma",
    ),
    pytest.param(
        "x = t[\n    a,  # one\n]\n", "x = t[\n    a\n]\n", "x", False, False, None,
        id="one-element-subscript-tuple-loses-its-comma",
    ),
    pytest.param(
        "x = (\n    1,\n    2,\n)\n", "x = (1, 2)\n", "x", False, True, None,
        id="two-element-tuple-joined",
    ),
    pytest.param(
        "x = f(\n    a,\n)\n", "x = f(a)\n", "x", False, True, None,
        id="one-argument-call-joined",
    ),
    pytest.param(
        "x = [\n    a,\n]\n", "x = [a]\n", "x", False, True, None,
        id="one-element-list-joined",
    ),
    pytest.param(
        "def f():\n    with (\n        open(x) as g,\n    ):\n        pass\n",
        "def f():\n    with (\n        open(x) as g\n    ):\n        pass\n", "f", False, True,
        None, id="parenthesized-with-item-loses-its-trailing-comma",
    ),
    pytest.param(
        "def f(\n    a,\n    b,  # why\n):\n    pass\n",
        "def f(\n    a,\n    b,\n):\n    pass\n",
        "f", False, True, None, id="comment-after-a-magic-trailing-comma-removed",
    ),
    pytest.param(
        "x = [\n    1,\n    2,\n]\n", "x = [\n    1,\n    2,\n    # 3,\n]\n",
        "x", False, True, None, id="comment-line-before-the-closing-bracket-added",
    ),
    pytest.param(
        "x = [\n    1,\n    2,  # two\n]\n", "x = [1, 2]\n",
        "x", False, True, None, id="commented-split-list-joined",
    ),
    pytest.param(
        "x = (\n    a,  # (see b)\n    b\n)\n", "x = (\n    ab  # (see b)\n)\n",
        "x", False, False, None, id="comma-before-a-comment-with-a-bracket-is-kept",
    ),
    pytest.param(
        "x = [\n    1,  # one\n    2\n]\n", "x = [\n    1,  # one\n    2, 3\n]\n",
        "x", False, False, None, id="element-added-after-a-commented-comma",
    ),
    pytest.param(
        FUNCTION, FUNCTION.replace("total = a + b", "total = a + \\\n        b"), "f",
        False, True, None, id="line-continuation",
    ),
    pytest.param(
        FUNCTION, FUNCTION.replace("total = a + b", "total = (\n        a + b\n    )"),
        "f", False, False, None, id="added-parentheses-are-not-normalized",
    ),
    pytest.param(
        FUNCTION, FUNCTION.replace("total = a + b", "total = a - b"), "f", False, False, None,
        id="body-change",
    ),
    # All white space goes, so these keep the fingerprint: `changes.classify` tells them
    # apart by their layout (tests/test_layout.py, the same-place cases of test_matching).
    pytest.param(
        "def f():\n    if a:\n        b()\n        c()\n",
        "def f():\n    if a:\n        b()\n    c()\n",
        "f", False, True, None, id="statement-moved-out-of-its-block",
    ),
    pytest.param(
        "def f(xs):\n    for x in xs:\n        g(x)\n        return x\n",
        "def f(xs):\n    for x in xs:\n        g(x)\n    return x\n",
        "f", False, True, None, id="return-moved-out-of-a-loop",
    ),
    pytest.param(
        "def f():\n    if a:\n        if b:\n            c()\n        else:\n            d()\n",
        "def f():\n    if a:\n        if b:\n            c()\n    else:\n        d()\n",
        "f", False, True, None, id="else-moved-to-the-outer-if",
    ),
    pytest.param(
        "def f():\n    x = a\n    (b)\n", "def f():\n    x = a(b)\n",
        "f", False, True, None, id="two-statements-joined-into-one",
    ),
    pytest.param(
        "def f():\n    if a:\n        b()\n    c()\n", "def f():\n  if a:\n    b()\n  c()\n",
        "f", False, True, None, id="indented-by-two-spaces-instead-of-four",
    ),
    pytest.param(
        "def f():\n    if a: return 1\n    return 2\n",
        "def f():\n    if a:\n        return 1\n    return 2\n",
        "f", False, True, None, id="one-line-suite-split",
    ),
    pytest.param(
        "def f():\n    a = 1; b = 2\n", "def f():\n    a = 1\n    b = 2\n",
        "f", False, True, None, id="semicolon-statements-split",
    ),
    pytest.param(
        "def f():\n    if a:\n        b()\n        # later\n    c()\n",
        "def f():\n    if a:\n        b()\n    c()\n",
        "f", False, True, None, id="comment-at-the-end-of-a-block-removed",
    ),
    pytest.param(
        FUNCTION, FUNCTION.replace("b=1", "b=2"), "f", False, False, None,
        id="signature-change",
    ),
    pytest.param(
        FUNCTION, FUNCTION.replace("@cache", "@lru_cache(maxsize=None)"), "f", False, False, None,
        id="decorator-change",
    ),
    pytest.param(
        FUNCTION, FUNCTION.replace("@cache\n", ""), "f", False, False, None,
        id="decorator-removed",
    ),
    pytest.param(
        "x = 'a # b'\n", "x = 'a # c'\n", "x", False, False, None,
        id="string-with-hash-content-change",
    ),
    pytest.param(
        'def f():\n    return "# a"  # note\n', 'def f():\n    return "# b"  # note\n', "f",
        False, False, None, id="string-starting-with-hash",
    ),
    pytest.param(
        "def f():\n    return 'it''s'  # it's\n", "def f():\n    return 'it''s'  # its\n", "f",
        False, True, None, id="quote-inside-comment",
    ),
    pytest.param(
        "x = 'a b'\n", "x = 'a  b'\n", "x", False, False, None, id="white-space-inside-string",
    ),
    pytest.param(
        "x = '''a\n# b'''\n", "x = '''a\n# c'''\n", "x", False, False, None,
        id="hash-line-inside-triple-quoted-string",
    ),
    pytest.param(
        "x = 1\n", "x = 2\n", "x", False, False, None, id="attribute-value-change",
    ),
    pytest.param(
        CLASS, CLASS.replace("return x + 1", "return x + 2"), "C", False, False, True,
        id="class-method-body-change",
    ),
    pytest.param(
        CLASS, CLASS.replace("return x + 1", "return x + 1  # plus one"), "C", False, True, True,
        id="class-method-comment-change",
    ),
    pytest.param(
        CLASS, CLASS.replace('"""A class."""', '"""A better class."""'), "C", False, True, True,
        id="class-docstring-change",
    ),
    pytest.param(
        CLASS, CLASS.replace("def m(self, x):", "def m(\n        self,\n        x,\n    ):"),
        "C", False, True, True, id="class-method-args-split",
    ),
    pytest.param(
        CLASS, CLASS + "\n    def o(self):\n        pass\n", "C", False, False, False,
        id="class-gains-a-method",
    ),
    pytest.param(
        CLASS, CLASS.replace("\n    def n(self):\n        return \"n\"\n", ""), "C",
        False, False, False, id="class-loses-a-method",
    ),
    pytest.param(
        CLASS, CLASS.replace("def m(self, x):", "def m(self, x, y=0):"), "C", False, False, False,
        id="class-method-signature-change",
    ),
    pytest.param(
        CLASS, CLASS.replace("class C(Base):", "class C(Base, Mixin):"), "C", False, False, False,
        id="class-base-change",
    ),
    pytest.param(
        CLASS, CLASS.replace("limit = 3", "limit = 3\n    extra = 4"), "C", False, False, False,
        id="class-gains-an-attribute",
    ),
    pytest.param(
        CLASS, CLASS.replace("def m(", "def renamed("), "C", False, False, False,
        id="class-method-renamed",
    ),
    pytest.param(
        CLASS, "\n\n" + CLASS, "C", True, True, True, id="class-moved-down",
    ),
    pytest.param(
        CLASS,
        CLASS.replace(
            '    def m(self, x):\n        return x + 1\n\n    def n(self):\n        return "n"\n',
            '    def n(self):\n        return "n"\n\n    def m(self, x):\n        return x + 1\n',
        ),
        "C", False, False, True, id="class-methods-reordered",
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "qualname", "same_exact", "same_normalized", "same_shape"), CASES
)
def test_fingerprints(
    old: str, new: str, qualname: str, same_exact: bool, same_normalized: bool,
    same_shape: bool | None,
) -> None:
    if not same_exact:
        assert old != new, "the case's edit did not apply"
    before, after = _symbol(old, qualname), _symbol(new, qualname)
    assert (before.exact == after.exact) is same_exact
    assert (before.normalized == after.normalized) is same_normalized
    if same_shape is None:
        assert before.shape is after.shape is None
    else:
        assert before.shape is not None and after.shape is not None
        assert (before.shape == after.shape) is same_shape


KEYED_CLASS = """\
class C(Base):
    limit = 3
    register(limit)

    def m(self, x):
        if x:
            x += 1
        return x
"""

# (old, new, qualname, same_header_key, same_body_key)
KEY_CASES = [
    pytest.param(
        "def f():\n    return 1\n", 'def f():\n    """Doc."""\n    return 1\n', "f", True, True,
        id="docstring-added",
    ),
    pytest.param(
        "def f():\n    if a:\n        b()\n        c()\n",
        "def f():\n    if a:\n        b()\n    c()\n", "f", True, True,
        id="statement-moved-out-of-its-block",
    ),
    pytest.param(
        KEYED_CLASS, KEYED_CLASS + "\n    def n(self):\n        pass\n", "C", True, True,
        id="class-gains-a-method",
    ),
    pytest.param(
        KEYED_CLASS, KEYED_CLASS.replace("    limit = 3\n", ""), "C", True, True,
        id="class-loses-the-attribute-before-a-call",
    ),
    pytest.param(
        KEYED_CLASS, KEYED_CLASS.replace("        if x:\n            x += 1\n", ""), "C",
        True, True, id="method-loses-a-block",
    ),
    pytest.param(
        KEYED_CLASS, KEYED_CLASS.replace("    register(limit)\n", ""), "C", True, False,
        id="class-loses-a-call",
    ),
]


@pytest.mark.parametrize(("old", "new", "qualname", "same_header", "same_body"), KEY_CASES)
def test_header_and_body_keys(
    old: str, new: str, qualname: str, same_header: bool, same_body: bool
) -> None:
    """A class's body key is its code outside its members: theirs never reaches it."""
    before, after = _symbol(old, qualname), _symbol(new, qualname)
    assert (before.header_key == after.header_key) is same_header
    assert (before.body_key == after.body_key) is same_body


def test_method_fingerprints_ignore_their_class() -> None:
    """A method's fingerprints cover its own span only."""
    before = _symbol(CLASS, "C.m")
    after = _symbol(CLASS.replace('return "n"', 'return "N"'), "C.m")
    assert (before.exact, before.normalized) == (after.exact, after.normalized)


def test_attribute_fingerprint_ignores_a_trailing_comment() -> None:
    assert _symbol("x = 1  # one\n", "x").normalized == _symbol("x = 1\n", "x").normalized


NORMALIZE = [
    pytest.param(b"a = 1  # c\n", b"a=1", id="comment"),
    pytest.param(b"f(\n    a,\n    b,\n)\n", b"f(a,b)", id="magic-trailing-comma"),
    pytest.param(b"f(a, b,)\n", b"f(a,b,)", id="same-line-trailing-comma-kept"),
    pytest.param(b"x = [\n    1,\n]\n", b"x=[1]", id="list-trailing-comma"),
    pytest.param(b"x = a + \\\n    b\n", b"x=a+b", id="continuation"),
    pytest.param(b"s = 'a  #  b'\n", b"s='a  #  b'", id="string-kept-verbatim"),
    pytest.param(b's = r"\\d+ # x"\n', b's=r"\\d+ # x"', id="raw-string-with-hash"),
    pytest.param(b"s = '''\n  # x\n'''\n", b"s='''\n  # x\n'''", id="triple-quoted"),
    pytest.param(b"s = 'it\\'s'  # it's\n", b"s='it\\'s'", id="escaped-quote"),
    pytest.param(b"", b"", id="empty"),
    pytest.param(b"x = (\n    a,\n)\n", b"x=(a,)", id="one-tuple-comma-kept"),
    pytest.param(b"x = (\n    a,  # why\n)\n", b"x=(a,)", id="one-tuple-comma-kept-before-comment"),
    pytest.param(b"def f(a=(\n    'x',\n)):\n", b"deff(a=('x',)):", id="one-tuple-default"),
    pytest.param(b"return (\n    f(a, b),\n)\n", b"return(f(a,b),)", id="one-tuple-after-keyword"),
    pytest.param(b"t[\n    a,\n]\n", b"t[a,]", id="one-element-subscript-kept"),
    pytest.param(b"x = (\n    a,\n    b,\n)\n", b"x=(a,b)", id="two-tuple-comma-dropped"),
    pytest.param(b"f(\n    (a, b),\n)\n", b"f((a,b))", id="call-of-one-comma-dropped"),
    pytest.param(b"x = [\n    (a),\n]\n", b"x=[(a)]", id="one-list-comma-dropped"),
    pytest.param(b"from m import (\n    a,\n)\n", b"frommimport(a)", id="import-comma-dropped"),
    pytest.param(b"with (\n    a as b,\n):\n", b"with(aasb):", id="with-items-comma-dropped"),
    pytest.param(b"s = '(' + f(\n    ')',\n)\n", b"s='('+f(')')", id="brackets-in-strings-ignored"),
    # A bare name's [...] in an annotation is a generic type: the tree drops its comma.
    pytest.param(b"def f(a: Optional[\n    int,\n]):\n", b"deff(a:Optional[int]):",
                 id="parameter-type-comma-dropped"),
    pytest.param(b"def f(*a: Optional[\n    int,\n]):\n", b"deff(*a:Optional[int]):",
                 id="star-parameter-type-comma-dropped"),
    pytest.param(b"def f() -> tuple[\n    int,\n]:\n", b"deff()->tuple[int]:",
                 id="return-type-comma-dropped"),
    pytest.param(b"self.x: dict[str, Optional[\n    int,\n]] = {}\n",
                 b"self.x:dict[str,Optional[int]]={}", id="nested-target-type-comma-dropped"),
    pytest.param(b"x: typing.Optional[\n    int,\n]\n", b"x:typing.Optional[int,]",
                 id="dotted-type-subscript-comma-kept"),
    pytest.param(b"d = {a: t[\n    x,\n]}\n", b"d={a:t[x,]}", id="dict-value-subscript-comma-kept"),
    pytest.param(b"if a: t[\n    x,\n]\n", b"ifa:t[x,]", id="subscript-after-header-comma-kept"),
    pytest.param(b"def f(a=lambda: t[\n    x,\n]):\n", b"deff(a=lambda:t[x,]):",
                 id="lambda-default-subscript-comma-kept"),
    # match and case are keywords where they start a statement that ends in a block's ':'
    pytest.param(b"match p:\n    case [\n        a,\n    ]:\n        pass\n",
                 b"matchp:case[a]:pass", id="one-element-list-pattern-comma-dropped"),
    pytest.param(b"match p:\n    case (\n        a,\n    ) if a:\n        pass\n",
                 b"matchp:case(a,)ifa:pass", id="one-element-tuple-pattern-comma-kept"),
    pytest.param(b"match (\n    a,\n):\n    case _:\n        pass\n",
                 b"match(a,):case_:pass", id="one-tuple-match-subject-comma-kept"),
    pytest.param(b"match [\n    a,\n]:\n    case _:\n        pass\n",
                 b"match[a]:case_:pass", id="one-element-list-match-subject-comma-dropped"),
    pytest.param(b"match(\n    a,\n).group(1)\n", b"match(a).group(1)",
                 id="call-of-a-function-named-match-comma-dropped"),
    pytest.param(b"case[\n    a,\n] = 1\n", b"case[a,]=1",
                 id="subscript-of-a-variable-named-case-comma-kept"),
    # PEP 695 type parameters are no subscript; a type alias's value is a type
    pytest.param(b"def f[\n    T,\n](a): pass\n", b"deff[T](a):pass",
                 id="function-type-parameter-comma-dropped"),
    pytest.param(b"async def f[\n    T,\n](a): pass\n", b"asyncdeff[T](a):pass",
                 id="coroutine-type-parameter-comma-dropped"),
    pytest.param(b"class C[\n    T,\n](Base):\n    pass\n", b"classC[T](Base):pass",
                 id="class-type-parameter-comma-dropped"),
    pytest.param(b"def f[T](a: t[\n    T,\n]): pass\n", b"deff[T](a:t[T]):pass",
                 id="parameter-type-after-type-parameters-comma-dropped"),
    pytest.param(b"type A[\n    T,\n] = list[T]\n", b"typeA[T]=list[T]",
                 id="type-alias-parameter-comma-dropped"),
    pytest.param(b"type A[T] = dict[str, t[\n    T,\n]]\n", b"typeA[T]=dict[str,t[T]]",
                 id="type-alias-value-type-comma-dropped"),
    pytest.param(b"type A = typing.T[\n    x,\n]\n", b"typeA=typing.T[x,]",
                 id="type-alias-value-dotted-subscript-comma-kept"),
    pytest.param(b"type[\n    x,\n]\n", b"type[x,]", id="subscript-of-type-comma-kept"),
    # a union is a type when its first member is a generic type, else an expression
    pytest.param(b"x: list[int] | Optional[\n    int,\n]\n", b"x:list[int]|Optional[int]",
                 id="union-of-generic-types-comma-dropped"),
    pytest.param(b"x: int | Optional[\n    int,\n]\n", b"x:int|Optional[int,]",
                 id="union-after-a-name-subscript-comma-kept"),
]


@pytest.mark.parametrize(("code", "expected"), NORMALIZE)
def test_normalize(code: bytes, expected: bytes) -> None:
    assert normalize(code) == expected


@pytest.mark.parametrize("code", [param.values[0] for param in NORMALIZE],
                         ids=[param.id for param in NORMALIZE])
def test_normalize_drops_the_split_commas_the_tree_drops(code: bytes) -> None:
    """The text comparison keys (`normalize`) read a split comma as the indexer's tree does:
    the code as a function's body has the function's normalized fingerprint."""
    body = code.decode() or "pass\n"
    if body.rstrip().endswith(":"):
        body += "    pass\n"  # a header's block
    source = "def f():\n" + textwrap.indent(body, "    ")
    assert _symbol(source, "f").normalized == digest(normalize(source.encode()))


# ------------------------------------------------------------------------------ fixture cases


@pytest.fixture(scope="module")
def indexed(indexed_fakes: Path) -> Path:
    """The shared database of every fake tag, fetched from git (read it, never write)."""
    return indexed_fakes / ".annotate" / "index.db"


# (case, same_exact, same_normalized, same_shape)
FIXTURE_CASES = [
    pytest.param("moved", True, True, True, id="moved"),
    pytest.param("moved_and_changed", False, False, False, id="moved-and-changed"),
    pytest.param("signature_changed", False, False, None, id="signature-changed"),
    pytest.param("body_changed", False, False, None, id="body-changed"),
    pytest.param("decorator_changed", False, False, None, id="decorator-changed"),
    pytest.param("bases_changed", False, False, False, id="bases-changed"),
    pytest.param("member_added", False, False, False, id="member-added"),
    pytest.param("formatting_only", False, True, None, id="formatting-only"),
    pytest.param("attribute_value_changed", False, False, None, id="attribute-value-changed"),
    pytest.param("constant_value_changed", False, False, None, id="constant-value-changed"),
]


@pytest.mark.parametrize(("case", "same_exact", "same_normalized", "same_shape"), FIXTURE_CASES)
def test_fixture_change_cases(
    indexed: Path, case: str, same_exact: bool, same_normalized: bool, same_shape: bool | None
) -> None:
    change = fv.CASES[case]
    assert change.old is not None
    with open_database(indexed, create=False) as database:
        old = stored_fingerprints(database, change.old_tag, *change.old)
        new = stored_fingerprints(database, change.new_tag, *change.new[0])
    assert (old[0] == new[0], old[1] == new[1]) == (same_exact, same_normalized)
    assert (None if old[2] is None else old[2] == new[2]) == same_shape


def test_unchanged_symbols_keep_every_fingerprint(indexed: Path) -> None:
    ref = fv.FEATURES["class_in_function"]
    with open_database(indexed, create=False) as database:
        rows = {stored_fingerprints(database, tag, *ref) for tag in fv.TAGS}
    assert len(rows) == 1


def test_ambiguous_move_copies_share_shape_only_with_each_other(indexed: Path) -> None:
    change = fv.CASES["ambiguous_move"]
    with open_database(indexed, create=False) as database:
        old = stored_fingerprints(database, change.old_tag, *change.old)
        copies = [stored_fingerprints(database, change.new_tag, *ref) for ref in change.new]
    assert all(copy[0] != old[0] and copy[1] != old[1] for copy in copies)
    assert len({copy[1] for copy in copies}) == 3


# What normalization drops, as the one regex it was first written as.
ONE_PASS_NOISE = re.compile(rb",(?=[ \t]*\r?\n\s*[)\]}])|\\\r?\n|\s+|;")


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([b",", b"\\", b"\r", b"\n", b" ", b"\t", b"\x0b", b"\x0c",
                                 b")", b"]", b"}", b"a", b"#", b"'", b";"]),
                max_size=40).map(b"".join))
def test_denoise_is_the_noise_pattern_removed(code: bytes) -> None:
    assert denoise(code) == ONE_PASS_NOISE.sub(b"", code)


# A string literal or comment, as LITERAL was first written: one alternation per character.
ONE_ALTERNATION_LITERAL = re.compile(
    rb"('''(?:\\.|(?!''')[^\\])*'''"
    rb'|"""(?:\\.|(?!""")[^\\])*"""'
    rb"|'(?:\\.|[^'\\\n])*'"
    rb'|"(?:\\.|[^"\\\n])*"'
    rb"|#[^\n]*)",
    re.DOTALL,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([b"'", b'"', b"'''", b'"""', b"#", b"\\", b"\n", b"\\\n",
                                 b"\\'", b'\\"', b"a", b" ", b"\x00"]),
                max_size=40).map(b"".join))
def test_literal_is_the_one_alternation_pattern(code: bytes) -> None:
    assert LITERAL.split(code) == ONE_ALTERNATION_LITERAL.split(code)
