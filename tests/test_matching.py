"""The cross-version symbol matcher, on real indexing of small sources and the fake vLLM."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import fakevllm
import pytest
from inlined_code import SUPPORTS_FP8

from annotations import matching, reports
from annotations.changes import (
    AnnotationChange,
    BasesChange,
    BodyChange,
    ChangeKind,
    MembersChange,
    SignatureChange,
    ValueChange,
    Verdict,
    classify,
    parse_header,
)
from annotations.forking import can_fork
from annotations.matching import (
    HistoryEvent,
    Match,
    Matcher,
    SourceStore,
    SymbolSnapshot,
    diff_versions,
    find_symbol,
    history,
    match_symbol,
    package_of,
)
from db import match_queries as mq
from db.database import Database, open_database
from db.queries import require_version, symbols_in_file
from indexer.config import load_config
from indexer.pipeline import index_version

SIG, BASES, MEMBERS, BODY, VALUE, ANNOTATION = (
    ChangeKind.SIGNATURE, ChangeKind.BASES, ChangeKind.MEMBERS, ChangeKind.BODY,
    ChangeKind.VALUE, ChangeKind.ANNOTATION,
)


# --- helpers --------------------------------------------------------------------------


@dataclass
class Index:
    database: Database
    keys: dict[str, int]

    def symbol(self, version: str, path: str, qualname: str, occurrence: int = 0
               ) -> SymbolSnapshot:
        found = find_symbol(self.database, self.keys[version], path, qualname, occurrence)
        assert found is not None, f"{path}::{qualname} not indexed at {version}"
        return found

    def match(self, old_version: str, new_version: str, path: str, qualname: str,
              occurrence: int = 0) -> Match:
        old = self.symbol(old_version, path, qualname, occurrence)
        return match_symbol(self.database, old, self.keys[new_version], config_name="annotate.toml")


Builder = Callable[[dict[str, dict[str, str]]], Index]
"""Writes each version's files (path -> text) and indexes them, oldest first."""


@pytest.fixture
def build_index(tmp_path: Path) -> Iterator[Builder]:
    """A `Builder` that indexes in ``tmp_path``; the index is closed after the test."""
    opened: list[Database] = []

    def build(versions: dict[str, dict[str, str]]) -> Index:
        config = load_config(tmp_path)
        database = open_database(tmp_path / "i.db")
        opened.append(database)
        keys = {}
        for version, files in versions.items():
            source = tmp_path / "src" / version
            source.mkdir(parents=True)
            for rel, text in files.items():
                path = source / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(textwrap.dedent(text))
            index_version(database, config, "vllm", version, from_path=source, workers=1)
            keys[version] = require_version(database, "vllm", version, config_name="annotate.toml")
        return Index(database, keys)

    yield build
    for database in opened:
        database.close()


def refs(symbols: tuple[SymbolSnapshot, ...]) -> set[str]:
    return {symbol.ref for symbol in symbols}


# --- same place: verdicts and kinds ---------------------------------------------------


@dataclass(frozen=True)
class Case:
    old: str
    new: str
    qualname: str
    verdict: Verdict
    kinds: tuple[ChangeKind, ...] = ()
    explain: str | None = None


SAME_PLACE = {
    "unchanged": Case(
        "def f(a):\n    return a\n", "def f(a):\n    return a\n", "f", Verdict.UNCHANGED,
    ),
    "cosmetic-comment": Case(
        "def f(a):\n    return a\n",
        "def f(a):\n    # the identity\n    return a  # as is\n",
        "f", Verdict.COSMETIC,
    ),
    "cosmetic-docstring": Case(
        'def f(a):\n    """Old words."""\n    return a\n',
        'def f(a):\n    """New words,\n\n    over lines.\n    """\n    return a\n',
        "f", Verdict.COSMETIC,
    ),
    "cosmetic-reformat": Case(
        "def f(alpha, beta):\n    return g(alpha, beta)\n",
        "def f(\n    alpha,\n    beta,\n):\n    return g(\n        alpha, beta\n    )\n",
        "f", Verdict.COSMETIC,
    ),
    "signature-default": Case(
        "def f(a):\n    return a\n", "def f(a, b=1):\n    return a\n", "f",
        Verdict.CHANGED, (SIG,), "signature changed: def f(a) -> def f(a, b=1)",
    ),
    "signature-return": Case(
        "def f(a) -> int:\n    return a\n", "def f(a) -> str:\n    return a\n", "f",
        Verdict.CHANGED, (SIG,), "signature changed: def f(a) -> int -> def f(a) -> str",
    ),
    "signature-decorator": Case(
        "@functools.lru_cache(maxsize=None)\ndef f():\n    return 1\n",
        "@functools.cache\ndef f():\n    return 1\n", "f", Verdict.CHANGED, (SIG,),
        "signature changed: @functools.lru_cache(maxsize=None) def f() -> "
        "@functools.cache def f()",
    ),
    "signature-async": Case(
        "def f():\n    return 1\n", "async def f():\n    return 1\n", "f",
        Verdict.CHANGED, (SIG,),
    ),
    "signature-and-body": Case(
        "def f(a):\n    return a\n", "def f(a, b):\n    return a + b\n", "f",
        Verdict.CHANGED, (SIG, BODY),
    ),
    "signature-docstring-not-body": Case(
        'def f(a):\n    """Old."""\n    return a\n',
        'def f(a, b=0):\n    """New."""\n    return a\n', "f", Verdict.CHANGED, (SIG,),
    ),
    "body": Case(
        "def f(a):\n    return a\n", "def f(a):\n    return -a\n", "f", Verdict.CHANGED,
        (BODY,), "body changed",
    ),
    "bases": Case(
        "class C(Base):\n    x = 1\n", "class C(Other, Base):\n    x = 1\n", "C",
        Verdict.CHANGED, (BASES,), "bases changed: (Base) -> (Other, Base)",
    ),
    "empty-bases-dropped-alone-is-cosmetic": Case(
        "class C():\n    x = 1\n\n    def f(self):\n        return self.x\n",
        "class C:\n    x = 1\n\n    def f(self):\n        return self.x\n", "C",
        Verdict.COSMETIC,
    ),
    "empty-bases-dropped-is-no-bases-change": Case(
        "class C():\n    x = 1\n", "class C:\n    x = 1\n    y = 2\n", "C",
        Verdict.CHANGED, (MEMBERS,), "members changed: added y",
    ),
    "class-decorator": Case(
        "@dataclass\nclass C:\n    x: int = 1\n",
        "@dataclass(frozen=True)\nclass C:\n    x: int = 1\n", "C", Verdict.CHANGED, (SIG,),
    ),
    "member-added": Case(
        "class C:\n    def a(self):\n        return 1\n",
        "class C:\n    def a(self):\n        return 1\n\n    def b(self):\n        return 2\n",
        "C", Verdict.CHANGED, (MEMBERS,), "members changed: added b",
    ),
    "member-removed": Case(
        "class C:\n    x = 1\n    y = 2\n", "class C:\n    x = 1\n", "C", Verdict.CHANGED,
        (MEMBERS,), "members changed: removed y",
    ),
    "member-signature": Case(
        "class C:\n    def a(self):\n        return 1\n",
        "class C:\n    def a(self, flag=False):\n        return 1\n", "C", Verdict.CHANGED,
        (MEMBERS,), "members changed: changed a",
    ),
    "member-body": Case(
        "class C:\n    def a(self):\n        return 1\n",
        "class C:\n    def a(self):\n        return 2\n", "C", Verdict.CHANGED, (BODY,),
    ),
    "member-signature-and-body": Case(
        "class C:\n    def a(self):\n        return 1\n",
        "class C:\n    def a(self, b):\n        return b\n", "C", Verdict.CHANGED,
        (MEMBERS, BODY),
    ),
    "class-level-code": Case(
        "class C:\n    if TYPE_CHECKING:\n        pass\n    x = 1\n",
        "class C:\n    if TYPE_CHECKING:\n        import os\n    x = 1\n", "C",
        Verdict.CHANGED, (BODY,),
    ),
    "class-attribute-in-class": Case(
        "class C:\n    x: float = 0.9\n", "class C:\n    x: float = 0.92\n", "C",
        Verdict.CHANGED, (MEMBERS,), "members changed: changed x",
    ),
    "class-attribute-itself": Case(
        "class C:\n    x: float = 0.9\n", "class C:\n    x: float = 0.92\n", "C.x",
        Verdict.CHANGED, (VALUE,), "value changed: 0.9 -> 0.92",
    ),
    "module-constant": Case(
        "SWAP = 4\n", "SWAP = 8\n", "SWAP", Verdict.CHANGED, (VALUE,),
        "value changed: 4 -> 8",
    ),
    "attribute-annotation": Case(
        "x: int = 1\n", "x: float = 1\n", "x", Verdict.CHANGED, (ANNOTATION,),
        "annotation changed: int -> float",
    ),
    "attribute-annotation-and-value": Case(
        'effort: Literal["low", "high"] | None = None\n',
        'effort: (\n    Literal["minimal", "low", "high", "max"] | None\n) = Field(\n'
        '    default=None,\n)\n', "effort", Verdict.CHANGED, (ANNOTATION, VALUE),
        'annotation changed: Literal["low", "high"] | None -> '
        '(Literal["minimal", "low", "high", "max"] | None)',
    ),
    "attribute-annotation-added": Case(
        "x = 1\n", "x: int = 1\n", "x", Verdict.CHANGED, (ANNOTATION,),
        "annotation added: int",
    ),
    "attribute-annotation-removed-and-value": Case(
        "x: int = 1\n", "x = 2\n", "x", Verdict.CHANGED, (ANNOTATION, VALUE),
        "annotation removed: int",
    ),
    "attribute-annotation-without-a-value": Case(
        "class C:\n    x: int\n", "class C:\n    x: Optional[int]\n", "C.x",
        Verdict.CHANGED, (ANNOTATION,), "annotation changed: int -> Optional[int]",
    ),
    "attribute-annotation-and-value-holding-colons-and-equals": Case(
        'x: Annotated[int, Field(ge=0)] = {"a": 1}\n',
        'x: Annotated[int, Field(ge=1)] = {"a": 1 == 1}\n', "x", Verdict.CHANGED,
        (ANNOTATION, VALUE),
        "annotation changed: Annotated[int, Field(ge=0)] -> Annotated[int, Field(ge=1)]",
    ),
    "attribute-value-added": Case(
        "class C:\n    x: int\n", "class C:\n    x: int = 1\n", "C.x",
        Verdict.CHANGED, (VALUE,), "value added: 1",
    ),
    "attribute-value-removed": Case(
        "class C:\n    x: int = 1\n", "class C:\n    x: int\n", "C.x",
        Verdict.CHANGED, (VALUE,), "value removed: 1",
    ),
    "attribute-targets-alone": Case(
        "x = y = 1\n", "x = 1\n", "x", Verdict.CHANGED, (VALUE,),
        "value changed: x = y = 1 -> x = 1",
    ),
    "class-attribute-annotation-and-value-in-class": Case(
        "class C:\n    x: int = 1\n", "class C:\n    x: float = 2\n", "C",
        Verdict.CHANGED, (MEMBERS,), "members changed: changed x",
    ),
    "return-dedented-out-of-a-loop": Case(
        "def f(xs):\n    for x in xs:\n        g(x)\n        return x\n",
        "def f(xs):\n    for x in xs:\n        g(x)\n    return x\n", "f",
        Verdict.CHANGED, (BODY,),
    ),
    "else-moved-to-the-outer-if-in-a-method": Case(
        "class C:\n    def m(self):\n        if a:\n            if b:\n                c()\n"
        "            else:\n                d()\n",
        "class C:\n    def m(self):\n        if a:\n            if b:\n                c()\n"
        "        else:\n            d()\n", "C.m", Verdict.CHANGED, (BODY,),
    ),
    "two-statements-joined-into-one": Case(
        "def f():\n    x = a\n    (b)\n", "def f():\n    x = a(b)\n", "f",
        Verdict.CHANGED, (BODY,),
    ),
    "one-line-suite-split-and-semicolons-split-are-cosmetic": Case(
        "def f():\n    if a: return 1\n    b = 2; c = 3\n",
        "def f():\n    if a:\n        return 1\n    b = 2\n    c = 3\n", "f",
        Verdict.COSMETIC,
    ),
    "reindented-with-a-docstring-added-is-cosmetic": Case(
        "def f():\n    if a:\n        b()\n    c()\n",
        'def f():\n  """Doc."""\n  if a:\n    b()\n  c()\n', "f", Verdict.COSMETIC,
    ),
    "one-tuple-default-unwrapped": Case(
        "def f(a=(\n    x,\n)):\n    return a\n", "def f(a=(x)):\n    return a\n", "f",
        Verdict.CHANGED, (SIG,),
    ),
    "one-tuple-base-unwrapped": Case(
        "class C(\n    (\n        Base,\n    )\n):\n    x = 1\n",
        "class C((Base)):\n    x = 1\n", "C", Verdict.CHANGED, (BASES,),
    ),
    "one-base-split-joined-beside-a-new-decorator": Case(
        "class C(\n    Base,\n):\n    x = 1\n", "@d\nclass C(Base):\n    x = 1\n", "C",
        Verdict.CHANGED, (SIG,),
    ),
    "one-base-split-joined-beside-a-member-change": Case(
        "class C(\n    Base,\n):\n    x = 1\n", "class C(Base):\n    x = 2\n", "C",
        Verdict.CHANGED, (MEMBERS,),
    ),
    "no-bases-written-as-empty-parentheses-beside-a-member-change": Case(
        "class C():\n    x = 1\n", "class C:\n    x = 2\n", "C", Verdict.CHANGED, (MEMBERS,),
    ),
    "one-tuple-member-default-unwrapped": Case(
        "class C:\n    def a(self, b=(\n        x,\n    )):\n        return 1\n",
        "class C:\n    def a(self, b=(x)):\n        return 1\n", "C", Verdict.CHANGED,
        (MEMBERS,), "members changed: changed a",
    ),
    "generic-type-comma-dropped-beside-a-body-change": Case(
        "def f(a: Optional[\n    int,\n]):\n    return a\n",
        "def f(a: Optional[int]):\n    return -a\n", "f", Verdict.CHANGED, (BODY,),
    ),
    "member-generic-type-comma-dropped-beside-a-body-change": Case(
        "class C:\n    def a(self, b: Optional[\n        int,\n    ]):\n        return 1\n"
        "\n    def c(self):\n        return 1\n",
        "class C:\n    def a(self, b: Optional[int]):\n        return 1\n"
        "\n    def c(self):\n        return 2\n", "C", Verdict.CHANGED, (BODY,),
    ),
    "one-element-list-pattern-split-joined-beside-a-signature-change": Case(
        "def f(p):\n    match p:\n        case [\n            a,\n        ]:\n"
        "            return a\n",
        "def f(p, q=1):\n    match p:\n        case [a]:\n            return a\n", "f",
        Verdict.CHANGED, (SIG,),
    ),
    "one-element-tuple-pattern-unwrapped-beside-a-signature-change": Case(
        "def f(p):\n    match p:\n        case (\n            a,\n        ):\n"
        "            return a\n",
        "def f(p, q=1):\n    match p:\n        case (a):\n            return a\n", "f",
        Verdict.CHANGED, (SIG, BODY),
    ),
    "one-tuple-match-subject-unwrapped-beside-a-signature-change": Case(
        "def f(p):\n    match (\n        p,\n    ):\n        case _:\n            return p\n",
        "def f(p, q=1):\n    match (p):\n        case _:\n            return p\n", "f",
        Verdict.CHANGED, (SIG, BODY),
    ),
    "type-parameter-split-joined-beside-a-body-change": Case(
        "def f[\n    T,\n](a: T):\n    return a\n", "def f[T](a: T):\n    return -a\n", "f",
        Verdict.CHANGED, (BODY,),
    ),
    "class-type-parameter-split-joined-beside-a-member-change": Case(
        "class C[\n    T,\n](Base):\n    x = 1\n", "class C[T](Base):\n    x = 2\n", "C",
        Verdict.CHANGED, (MEMBERS,),
    ),
    "union-type-comma-dropped-beside-a-body-change": Case(
        "def f(a: list[int] | Optional[\n    int,\n]):\n    return a\n",
        "def f(a: list[int] | Optional[int]):\n    return -a\n", "f", Verdict.CHANGED, (BODY,),
    ),
    "one-tuple-returned-unwrapped-with-a-signature-change": Case(
        "def f(a):\n    return (\n        a,\n    )\n", "def f(a, b=1):\n    return (a)\n", "f",
        Verdict.CHANGED, (SIG, BODY),
    ),
    "a-keyword-joined-to-its-operand": Case(
        "def f(a):\n    if not a:\n        return 1\n",
        "def f(a):\n    if nota:\n        return 1\n", "f", Verdict.CHANGED, (BODY,),
    ),
    "decorator-and-parameters": Case(
        "@a\ndef f(x):\n    return x\n", "@b\ndef f(x, y=0):\n    return x\n", "f",
        Verdict.CHANGED, (SIG,), "signature changed: @a def f(x) -> @b def f(x, y=0)",
    ),
    "decorator-and-body": Case(
        "@a\ndef f(x):\n    return x\n", "@b\ndef f(x):\n    return -x\n", "f",
        Verdict.CHANGED, (SIG, BODY), "signature changed: @a def f(x) -> @b def f(x)",
    ),
    "class-decorator-and-bases": Case(
        "@a\nclass C(A):\n    x = 1\n", "@b\nclass C(B):\n    x = 1\n", "C",
        Verdict.CHANGED, (SIG, BASES), "bases changed: (A) -> (B)",
    ),
    "bases-and-members": Case(
        "class C(A):\n    x = 1\n", "class C(B):\n    x = 1\n    y = 2\n", "C",
        Verdict.CHANGED, (BASES, MEMBERS), "members changed: added y",
    ),
    "decorator-bases-members-and-body": Case(
        "@a\nclass C(A):\n    def m(self):\n        return 1\n",
        "@b\nclass C(B):\n    def m(self):\n        return 2\n\n    def n(self):\n"
        "        return 3\n", "C", Verdict.CHANGED, (SIG, BASES, MEMBERS, BODY),
        "members changed: added n",
    ),
    "member-removed-and-another-members-body": Case(
        "class C:\n    x = 1\n\n    def m(self):\n        return 1\n",
        "class C:\n    def m(self):\n        return 2\n", "C", Verdict.CHANGED,
        (MEMBERS, BODY), "members changed: removed x",
    ),
    "nested-class-gains-a-method": Case(
        "class C:\n    class D:\n        def a(self):\n            return 1\n",
        "class C:\n    class D:\n        def a(self):\n            return 1\n\n"
        "        def b(self):\n            return 2\n", "C", Verdict.CHANGED, (BODY,),
    ),
    "nested-class-attribute-value": Case(
        "class C:\n    class Config:\n        extra = 'allow'\n",
        "class C:\n    class Config:\n        extra = 'forbid'\n", "C", Verdict.CHANGED,
        (BODY,),
    ),
    "nested-class-bases-and-a-method-gained": Case(
        "class C:\n    class D(A):\n        x = 1\n",
        "class C:\n    class D(B):\n        x = 1\n        y = 2\n", "C",
        Verdict.CHANGED, (MEMBERS, BODY), "members changed: changed D",
    ),
    "nested-class-attribute-renamed": Case(
        "class C:\n    class D:\n        x = 1\n", "class C:\n    class D:\n        y = 1\n",
        "C", Verdict.CHANGED, (BODY,),
    ),
    "nested-class-method-signature": Case(
        "class C:\n    class D:\n        def a(self):\n            return 1\n",
        "class C:\n    class D:\n        def a(self, b=0):\n            return 1\n", "C",
        Verdict.CHANGED, (BODY,),
    ),
    "class-nested-twice-attribute-value": Case(
        "class C:\n    class D:\n        class E:\n            x = 1\n",
        "class C:\n    class D:\n        class E:\n            x = 2\n", "C",
        Verdict.CHANGED, (BODY,),
    ),
    "method-signature": Case(
        "class C:\n    @property\n    def a(self):\n        return 1\n",
        "class C:\n    @cached_property\n    def a(self):\n        return 1\n", "C.a",
        Verdict.CHANGED, (SIG,),
        "signature changed: @property def a(self) -> @cached_property def a(self)",
    ),
}


@pytest.mark.parametrize("stored_keys", [True, False], ids=["stored-keys", "computed-keys"])
@pytest.mark.parametrize("case", SAME_PLACE.values(), ids=SAME_PLACE.keys())
def test_same_place(build_index: Builder, case: Case, stored_keys: bool) -> None:
    # A trailing constant differs, so the file's blob changes and fingerprints are compared.
    index = build_index({
        "v1": {"m.py": case.old + "\n\nZZ_TRAILER = 1\n"},
        "v2": {"m.py": case.new + "\n\nZZ_TRAILER = 2\n"},
    })
    if not stored_keys:  # as in a database indexed before schema 4: keys from the source
        with index.database.write() as conn:
            conn.execute("UPDATE symbols SET header_key = NULL, body_key = NULL")
    match = index.match("v1", "v2", "m.py", case.qualname)
    assert match.verdict is case.verdict
    assert match.kinds == case.kinds
    assert match.new is not None and match.new.ref == f"m.py::{case.qualname}"
    assert match.via == "same-place"
    if case.explain is not None:
        assert case.explain in match.explain()


NESTED_IN_FULL = {
    "nested-class-gains-a-method": "body changed (nested D: members changed: added b)",
    "nested-class-attribute-value":
        "body changed (nested Config: members changed: changed extra)",
    "nested-class-bases-and-a-method-gained":
        "body changed (nested D: members changed: added y)",
    "nested-class-attribute-renamed":
        "body changed (nested D: members changed: added y; removed x)",
    "nested-class-method-signature": "body changed (nested D: members changed: changed a)",
    "class-nested-twice-attribute-value":
        "body changed (nested D: body changed (nested E: members changed: changed x))",
    "member-removed-and-another-members-body": "body changed",
    "return-dedented-out-of-a-loop": "body changed",
}


@pytest.mark.parametrize("name", NESTED_IN_FULL)
def test_a_body_changed_by_a_nested_class_says_which_and_how(
    build_index: Builder, name: str
) -> None:
    """In full, a class's body change names the nested classes whose own members or body
    changed, and how; ``explain`` (JSON's ``changes``, check's message) says it as before."""
    case = SAME_PLACE[name]
    index = build_index({"v1": {"m.py": case.old + "\n\nZZ_TRAILER = 1\n"},
                                   "v2": {"m.py": case.new + "\n\nZZ_TRAILER = 2\n"}})
    match = index.match("v1", "v2", "m.py", case.qualname)
    body = match.kinds.index(BODY)
    assert match.explain_in_full()[body] == NESTED_IN_FULL[name]
    assert match.explain()[body] == "body changed"
    assert match.explain_in_full()[:body] == match.explain()[:body]


def test_change_objects_explain_themselves() -> None:
    assert SignatureChange("def f(a)", "def f(a, b=1)").explain() == (
        "signature changed: def f(a) -> def f(a, b=1)"
    )
    assert BasesChange("(nn.Module)", "(LinearBase)").explain() == (
        "bases changed: (nn.Module) -> (LinearBase)"
    )
    assert MembersChange(("clone",), ("old",), ("__init__",)).explain() == (
        "members changed: added clone; removed old; changed __init__"
    )
    assert BodyChange().explain() == "body changed"
    assert ValueChange("{\n  'a': 1,\n}", "{'a': 2}").explain() == (
        "value changed: {'a': 1} -> {'a': 2}"
    )
    assert ValueChange("x" * 500, "y").explain().endswith("... -> y")
    assert AnnotationChange("int", "(\n    int | None\n)").explain() == (
        "annotation changed: int -> (int | None)"
    )
    assert AnnotationChange("", "int").explain() == "annotation added: int"
    assert AnnotationChange("int", "").explain() == "annotation removed: int"
    assert {c.kind for c in (SignatureChange("", ""), BasesChange("", ""), MembersChange(),
                             BodyChange(), ValueChange("", ""), AnnotationChange("", ""))
            } == set(ChangeKind)


def test_header_parsing_splits_decorators_parameters_and_return() -> None:
    header = parse_header(
        '@torch.compile(\n    dynamic=True,  # why\n)\n    @staticmethod\n'
        '    async def step(\n        x: "a->b" = (1, 2),\n    ) -> dict[str, int]:'
    )
    assert header.decorators[1] == "@staticmethod"
    assert header.keyword == "async def" and header.name == "step"
    assert header.returns == "dict[str, int]"
    assert header.display() == (
        '@torch.compile(dynamic=True) @staticmethod async def step(x: "a->b" = (1, 2))'
        " -> dict[str, int]"
    )
    assert parse_header("class A(B, metaclass=M):").parameters == "(B, metaclass=M)"


# --- property getter and setter -------------------------------------------------------

PROPERTY_V1 = """\
class Engine:
    @property
    def stats(self) -> bool:
        return self._stats

    @stats.setter
    def stats(self, value: bool) -> None:
        self._stats = value
"""


def test_property_getter_and_setter_are_paired_in_order(build_index: Builder) -> None:
    v2 = PROPERTY_V1.replace("self._stats = value", "self._stats = bool(value)")
    index = build_index({"v1": {"e.py": PROPERTY_V1}, "v2": {"e.py": v2}})
    getter = index.match("v1", "v2", "e.py", "Engine.stats", 0)
    setter = index.match("v1", "v2", "e.py", "Engine.stats", 1)
    assert getter.verdict is Verdict.UNCHANGED and getter.new.occurrence == 0
    assert setter.verdict is Verdict.CHANGED and setter.kinds == (BODY,)
    assert setter.new.occurrence == 1 and "@stats.setter" in setter.new.signature


def test_the_rows_of_a_version_share_each_files_path_blob_and_kinds(build_index: Builder) -> None:
    """sqlite3 made a string of a row's path, blob id and kind for every symbol row of a
    version the matcher loads whole: ~250 bytes a row, ~20 MB of a big collection's check."""
    index = build_index({"v1": {"e.py": PROPERTY_V1}})
    rows = mq.all_symbol_rows(index.database, index.keys["v1"])
    methods = [row for row in rows if row[4] == "method"]
    assert (len(rows), len(methods)) == (3, 2)
    assert {id(row[0]) for row in rows} == {id(rows[0][0])}
    assert {id(row[1]) for row in rows} == {id(rows[0][1])}
    assert methods[0][4] is methods[1][4]


@pytest.mark.parametrize(("v2_files", "loaded"), [
    ({"same.py": "X = 1\n"}, []),
    ({"same.py": "X = 2\n"}, [("same.py", "X")]),
    ({"same.py": "X = 1\n", "copy.py": "X = 1\n"}, [("copy.py", "X")]),
    ({"moved.py": "X = 1\n"}, [("moved.py", "X")]),
], ids=["unchanged-file-left-out", "changed-file", "unchanged-blob-at-a-new-path",
        "file-moved-unchanged"])
def test_the_rows_of_a_version_but_its_unchanged_files_are_those_whose_blob_differs(
    build_index: Builder, v2_files: dict[str, str], loaded: list[tuple[str, str]]
) -> None:
    """B's rows of the files A has unchanged (the same blob at the same path) are not
    matched: the whole diff of vLLM loaded 8,064 such rows of v0.25.0 to drop them."""
    index = build_index({"v1": {"same.py": "X = 1\n"}, "v2": v2_files})
    rows = mq.all_symbol_rows(index.database, index.keys["v2"], unless_same_in=index.keys["v1"])
    assert [(row[0], row[2]) for row in rows] == loaded


def test_members_list_getter_and_setter_together(build_index: Builder) -> None:
    index = build_index({"v1": {"e.py": PROPERTY_V1}})
    members = index.symbol("v1", "e.py", "Engine").members()
    assert [m.occurrence for m in members["stats"]] == [0, 1]


# --- unchanged blob shortcut ----------------------------------------------------------


def test_unchanged_blob_is_unchanged_without_comparing(
    build_index: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"same.py": "def f(a):\n    return a\n", "other.py": "X = 1\n"}
    index = build_index({"v1": files, "v2": {**files, "other.py": "X = 2\n"}})
    old = index.symbol("v1", "same.py", "f")

    def refuse(*args: object) -> None:
        raise AssertionError("fingerprints were compared")

    monkeypatch.setattr(matching, "classify", refuse)
    match = match_symbol(index.database, old, index.keys["v2"], config_name="annotate.toml")
    assert (match.verdict, match.via) == (Verdict.UNCHANGED, "blob")
    assert match.new is not None and match.new.version == "v2"
    assert match.new.ref == old.ref and match.new.source == old.source


def test_same_place_match_does_not_build_the_unmatched_pool(build_index: Builder) -> None:
    index = build_index({
        "v1": {"m.py": "def f(a):\n    return a\n"},
        "v2": {"m.py": "def f(a):\n    return -a\n", "n.py": "def g():\n    pass\n"},
    })
    matcher = Matcher(index.database, index.keys["v1"], index.keys["v2"])
    assert matcher.match(index.symbol("v1", "m.py", "f")).verdict is Verdict.CHANGED
    assert matcher._pool is None


# --- moves ----------------------------------------------------------------------------

ENGINE = '''\
class CacheEngine:
    """Manages the KV cache."""

    def __init__(self, config, num_layers: int) -> None:
        self.config = config
        self.num_layers = num_layers
        self.gpu_cache = self._allocate("cuda")

    def _allocate(self, device: str) -> list:
        shape = (2, self.config.block_size, 8, 128)
        return [torch.empty(shape, device=device) for _ in range(self.num_layers)]

    def swap_in(self, src_to_dst) -> None:
        for i in range(self.num_layers):
            self.gpu_cache[i].index_copy_(0, src_to_dst, self.cpu_cache[i])
'''


def test_moved_unchanged(build_index: Builder) -> None:
    index = build_index({
        "v1": {"vllm/worker/cache_engine.py": '"""Old."""\nimport torch\n\n\n' + ENGINE},
        "v2": {"vllm/v1/worker/cache_engine.py": '"""New."""\nimport torch\n\n\n' + ENGINE},
    })
    match = index.match("v1", "v2", "vllm/worker/cache_engine.py", "CacheEngine")
    assert match.verdict is Verdict.MOVED and match.via == "exact"
    assert match.new.ref == "vllm/v1/worker/cache_engine.py::CacheEngine"
    assert match.content is Verdict.UNCHANGED and not match.content_changed
    assert match.changes == () and match.candidates == ()
    method = index.match("v1", "v2", "vllm/worker/cache_engine.py", "CacheEngine.swap_in")
    assert method.verdict is Verdict.MOVED and method.via == "parent"
    assert method.new.ref == "vllm/v1/worker/cache_engine.py::CacheEngine.swap_in"


def test_moved_and_changed(build_index: Builder) -> None:
    changed = ENGINE.replace("for i in range(self.num_layers):",
                             "for i in range(self.num_layers - 1):")
    index = build_index({
        "v1": {"vllm/worker/cache_engine.py": ENGINE},
        "v2": {"vllm/v1/worker/engine.py": changed},
    })
    match = index.match("v1", "v2", "vllm/worker/cache_engine.py", "CacheEngine")
    assert match.verdict is Verdict.MOVED and match.via == "similarity"
    assert match.new.ref == "vllm/v1/worker/engine.py::CacheEngine"
    assert match.content_changed and match.kinds == (BODY,)
    assert matching.MOVE_THRESHOLD <= match.score <= 1
    method = index.match("v1", "v2", "vllm/worker/cache_engine.py", "CacheEngine.swap_in")
    assert method.verdict is Verdict.MOVED and method.kinds == (BODY,)
    unchanged = index.match("v1", "v2", "vllm/worker/cache_engine.py", "CacheEngine._allocate")
    assert unchanged.verdict is Verdict.MOVED and unchanged.content is Verdict.UNCHANGED


CAPTURE = fakevllm.CAPTURE_TEMPLATE


def test_renamed_function(build_index: Builder) -> None:
    index = build_index({
        "v1": {"g.py": CAPTURE.format(name="capture_graph")},
        "v2": {"g.py": CAPTURE.format(name="capture_cudagraph")},
    })
    match = index.match("v1", "v2", "g.py", "capture_graph")
    assert match.verdict is Verdict.MOVED
    assert match.new.ref == "g.py::capture_cudagraph"
    assert match.content is Verdict.UNCHANGED and match.changes == ()


def test_renamed_function_with_reworded_docstring_is_cosmetic(build_index: Builder) -> None:
    index = build_index({
        "v1": {"g.py": CAPTURE.format(name="capture_graph")},
        "v2": {"g.py": CAPTURE.format(name="capture_cudagraph").replace("one", "a")},
    })
    assert index.match("v1", "v2", "g.py", "capture_graph").content is Verdict.COSMETIC


def test_renamed_trivial_function_is_not_a_move(build_index: Builder) -> None:
    index = build_index({
        "v1": {"g.py": "def supports_a():\n    return True\n"},
        "v2": {"g.py": "def supports_b():\n    return True\n"},
    })
    match = index.match("v1", "v2", "g.py", "supports_a")
    assert match.verdict is Verdict.REMOVED
    assert refs(match.candidates) == {"g.py::supports_b"}


FAKE_FORWARD = """\
def {name}(hidden_states: torch.Tensor, layer_name: str) -> torch.Tensor:
    return torch.empty_like(hidden_states)


direct_register_custom_op("moe_forward", moe_forward, fake_impl={name})
"""


@pytest.mark.parametrize(("old", "new"), [("moe_forward_fake", "_moe_forward_fake"),
                                          ("_moe_forward_fake", "moe_forward_fake")],
                         ids=["made-private", "made-public"])
def test_a_trivial_function_made_private_or_public_is_a_move(
    build_index: Builder, old: str, new: str
) -> None:
    """A leading underscore added or dropped keeps the name: the rename rules, which make a
    short body no evidence (``return True`` resembles every other), do not apply
    (``transformers_moe_forward_fake``, ``_transformers_moe_forward_fake`` at v0.25.0)."""
    index = build_index({"v1": {"g.py": FAKE_FORWARD.format(name=old)},
                                   "v2": {"g.py": FAKE_FORWARD.format(name=new)}})
    match = index.match("v1", "v2", "g.py", old)
    assert (match.verdict, match.new and match.new.ref) == (Verdict.MOVED, f"g.py::{new}")


MODEL = '''\
"""DeepSeek-V4{suffix}."""

from torch import nn


class DeepseekV4ForCausalLM(nn.Module):
    attn_backend: str = "{backend}"
    packed_modules_mapping = {{"gate_up_proj": ["gate_proj", "up_proj"]}}

    def __init__(self, hidden_size: int, vocab_size: int) -> None:
        super().__init__()
        self.norm = RMSNorm(hidden_size)
        self.lm_head = ReplicatedLinear(hidden_size, vocab_size, bias=False)

    def forward(self, hidden_states, residual):
        hidden_states, _ = self.norm(hidden_states, residual)
        return self.lm_head(hidden_states)
'''
PLATFORMS = {"amd": "ROCM_AITER_MLA", "nvidia": "FLASHMLA", "xpu": "XPU_MLA"}
REEXPORT = "from m.ds_nvidia import DeepseekV4ForCausalLM\n\n__all__ = ['DeepseekV4ForCausalLM']\n"


def _split_versions(reexport: bool) -> dict[str, dict[str, str]]:
    copies = {
        f"m/ds_{platform}.py": MODEL.format(suffix=f" ({platform})", backend=backend)
        for platform, backend in PLATFORMS.items()
    }
    if reexport:
        copies["m/ds.py"] = REEXPORT
    return {"v1": {"m/ds.py": MODEL.format(suffix="", backend="auto")}, "v2": copies}


@pytest.mark.parametrize("reexport", [False, True], ids=["split", "split-with-reexport"])
def test_ambiguous_move_lists_the_other_copies(build_index: Builder, reexport: bool) -> None:
    index = build_index(_split_versions(reexport))
    match = index.match("v1", "v2", "m/ds.py", "DeepseekV4ForCausalLM")
    expected = {f"m/ds_{platform}.py::DeepseekV4ForCausalLM" for platform in PLATFORMS}
    assert match.verdict is Verdict.MOVED and match.ambiguous
    assert match.new.path != "m/ds.py"  # the re-export is an import, not a definition
    assert refs((match.new, *match.candidates)) == expected
    assert match.kinds == (MEMBERS,)
    assert "members changed: changed attn_backend" in match.explain()
    member = index.match("v1", "v2", "m/ds.py", "DeepseekV4ForCausalLM.forward")
    assert member.verdict is Verdict.MOVED and member.via == "parent"
    assert member.new.path == match.new.path and len(member.candidates) == 2
    attribute = index.match("v1", "v2", "m/ds.py", "DeepseekV4ForCausalLM.attn_backend")
    assert attribute.verdict is Verdict.MOVED and attribute.kinds == (VALUE,)


def test_a_class_split_into_copies_offers_every_copy(build_index: Builder) -> None:
    """The class moves to its closest copy, and the other copies are its candidates
    however they score (the copy a reader runs need not be the closest text); so are
    their members."""
    method = "    def forward(self, x):\n        y = self.proj(x)\n        return self.act(y) + x\n"
    head = "class MoE:\n    def __init__(self):\n        self.proj = Linear({n})\n\n"
    index = build_index({
        "v1": {"m/moe.py": head.format(n=8) + method},
        "v2": {"m/xpu.py": head.format(n=8) + method,
               "m/cuda.py": head.format(n=16) + "    def extra(self):\n        pass\n\n" + method},
    })
    cls = index.match("v1", "v2", "m/moe.py", "MoE")
    assert (cls.verdict, cls.new.path) == (Verdict.MOVED, "m/xpu.py")
    assert refs(cls.candidates) == {"m/cuda.py::MoE"}  # scores below the ambiguity margin
    member = index.match("v1", "v2", "m/moe.py", "MoE.forward")
    assert (member.verdict, member.via, member.new.path) == (Verdict.MOVED, "parent", "m/xpu.py")
    assert refs(member.candidates) == {"m/cuda.py::MoE.forward"} and member.ambiguous
    init = index.match("v1", "v2", "m/moe.py", "MoE.__init__")
    assert refs(init.candidates) == {"m/cuda.py::MoE.__init__"}  # the other copy's differs


def test_removed_with_closest_candidates(build_index: Builder) -> None:
    index = build_index({"v1": {"a/loader.py": fakevllm.LOAD_WEIGHTS_FROM_FILE},
                                   "v2": {"b/fetch.py": fakevllm.LOAD_WEIGHTS_FROM_URL}})
    match = index.match("v1", "v2", "a/loader.py", "load_weights")
    assert match.verdict is Verdict.REMOVED and match.new is None
    assert refs(match.candidates) == {"b/fetch.py::load_weights"}
    assert matching.CANDIDATE_FLOOR <= match.score < matching.MOVE_THRESHOLD


def test_a_renamed_candidate_in_another_file_needs_the_rename_threshold(
    build_index: Builder
) -> None:
    renamed = KERNEL.format(name="fused_prenorm").replace(
        "return out.view(residual.shape[0], -1)", "return out").replace("mixes", "mx")
    index = build_index({"v1": {"a.py": KERNEL.format(name="mhc_pre")},
                                   "v2": {"b.py": renamed}})
    match = index.match("v1", "v2", "a.py", "mhc_pre")
    assert matching.MOVE_THRESHOLD <= match.score < matching.RENAME_MOVE_THRESHOLD
    assert match.verdict is Verdict.REMOVED
    assert refs(match.candidates) == {"b.py::fused_prenorm"}


def test_removed_without_candidates(build_index: Builder) -> None:
    index = build_index({
        "v1": {"u.py": "def is_neuron():\n    return False\n\n\ndef keep():\n    pass\n"},
        "v2": {"u.py": "def keep():\n    pass\n", "w.py": "class Worker:\n    pass\n"},
    })
    match = index.match("v1", "v2", "u.py", "is_neuron")
    assert (match.verdict, match.candidates, match.score) == (Verdict.REMOVED, (), 0.0)


def test_boilerplate_ties_are_no_evidence_of_a_move(build_index: Builder) -> None:
    logger = "logger = init_logger(__name__)\n"
    new = {f"new/mod{n}.py": logger for n in range(matching.MAX_TIES + 2)}
    index = build_index({"v1": {"gone.py": logger}, "v2": new})
    match = index.match("v1", "v2", "gone.py", "logger")
    assert match.verdict is Verdict.REMOVED
    assert len(match.candidates) == matching.MAX_CLOSEST


def test_class_attribute_only_follows_its_class(build_index: Builder) -> None:
    index = build_index({
        "v1": {"m.py": "class Meta:\n    paged_kv: torch.Tensor\n    dtype: str\n"},
        "v2": {"m.py": "class Meta:\n    out_dtype: torch.Tensor\n    dtype: str\n"},
    })
    match = index.match("v1", "v2", "m.py", "Meta.paged_kv")
    assert match.verdict is Verdict.REMOVED


def test_members_of_a_removed_class_take_no_ambiguous_move(build_index: Builder) -> None:
    method = '''\
        class {name}Info:
            def get_hf_processor(self, **kwargs):
                processor = self.ctx.get_hf_processor(AutoProcessor, **kwargs)
                return processor
        '''
    new = {f"models/{name}.py": method.format(name=name) for name in ("Aya", "Bee", "Cat")}
    index = build_index({"v1": {"models/old.py": method.format(name="Old")},
                                   "v2": new})
    match = index.match("v1", "v2", "models/old.py", "OldInfo.get_hf_processor")
    assert match.verdict is Verdict.REMOVED and len(match.candidates) == 3


def test_unique_name_moved_and_rewritten(build_index: Builder) -> None:
    old = '''\
        class SparseIndexer(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.proj = nn.Linear(dim, dim)

            def forward(self, x):
                return self.proj(x).topk(8)
        '''
    new = '''\
        class SparseIndexer(nn.Module, AttentionLayerBase):
            PREFILL_CHUNK = 4096

            def __init__(self, dim, heads, cache_config):
                super().__init__()
                self.heads = heads
                self.cache = allocate(cache_config, heads)

            def forward(self, q, k, positions):
                scores = fused_score(q, k, self.cache, positions)
                return scores.topk(self.heads)
        '''
    index = build_index({"v1": {"vllm/model_executor/layers/indexer.py": old},
                                   "v2": {"vllm/models/ds/indexer_impl.py": new}})
    match = index.match("v1", "v2", "vllm/model_executor/layers/indexer.py", "SparseIndexer")
    assert match.verdict is Verdict.MOVED and match.content_changed
    assert match.new.ref == "vllm/models/ds/indexer_impl.py::SparseIndexer"
    assert set(match.kinds) == {BASES, MEMBERS, BODY}


CONNECTOR = """\
class {name}(KVConnectorBase):
    def __init__(self, config, role):
        super().__init__(config, role)
        self.engine = create_engine(config.kv_transfer_config, role)
        self.pending = {{}}

    def start_load_kv(self, forward_context, **kwargs):
        for request_id, blocks in self.pending.items():
            self.engine.retrieve(request_id, blocks, forward_context.layers)
        self.pending.clear()
"""
KERNEL = """\
def {name}(residual, fn, scale, base, eps, n_splits):
    mixes = tf32_hc_prenorm_gemm(residual, fn, n_splits)
    out = mhc_pre_big_fuse_tilelang(mixes, scale, base, eps)
    return out.view(residual.shape[0], -1)
"""

DESCRIPTOR = """\
@dataclass(frozen=True)
class {name}:
    index: int
    config: AdapterConfigBase
    policy: StorePolicy = field(default_factory=lambda: StorePolicy(index=0, eager=True))
"""

TRANSFER_MODULE = """\
class {name}{bases}:
    def __init__(self, ctx):
        self.ctx = ctx
        self.pending = {{}}

    def register_kv_cache(self, instance_id, kv_caches, layout):
        self.pending[instance_id] = wrap_kv_caches(kv_caches, layout, self.ctx.device)
        return RegisterResponse(ok=True, num_layers=len(kv_caches))

    def store(self, key, block_ids, event):
        context = self.pending[key.instance_id]
        objects = self.ctx.storage.reserve_write(key, len(block_ids))
        transfer_blocks(context, objects, block_ids, direction=D2H, event=event)

    def retrieve(self, key, block_ids, event):
        context = self.pending[key.instance_id]
        objects = self.ctx.storage.read_prefetched(key, len(block_ids))
        transfer_blocks(context, objects, block_ids, direction=H2D, event=event)

    def close(self):
        for instance_id, context in list(self.pending.items()):
            release_context(context, instance_id, self.ctx.device)
        self.pending.clear()
"""

KDA = """\
class {name}({bases}):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.head_dim = config.head_dim
        self.conv_size = config.short_conv_kernel_size
        self.q_proj = ColumnParallelLinear(config.hidden_size, self.head_dim * 8)
        self.layer_idx = layer_idx

    def get_state_shape(self):
        conv = (self.conv_size - 1, self.head_dim * 8)
        recurrent = (8, self.head_dim, self.head_dim)
        return conv, recurrent

    def _forward(self, hidden_states, positions, output):
        q = self.q_proj(hidden_states)[0]
        state = self.kv_cache[forward_context.virtual_engine]
        chunk_kda(q, state, initial_state=state, cu_seqlens=positions)
        output.copy_(q)
"""


LIVENESS_TRANSFER_MODULE = TRANSFER_MODULE.format(
    name="LMCacheDrivenTransferModule", bases="(InstanceLivenessTarget)").replace(
    "        self.pending = {}\n",
    "        self.pending = {}\n        self.lock = threading.Lock()\n"
    "        self.last_seen = {i: time.monotonic() for i in ctx.instances}\n"
    "        self.reaper = start_reaper(ctx.config.liveness_timeout, self.reap)\n") + "".join(f"""
    def reap_{n}(self, now):
        with self.lock:
            stale = [i for i, seen in self.last_seen.items() if now - seen > {n}]
            for instance_id in stale:
                self.last_seen.pop(instance_id, None)
                self.pending.pop(instance_id, None)
""" for n in range(4))  # 0.57 against TRANSFER_MODULE: under the rename bar

FORWARD = textwrap.indent(KERNEL.format(name="forward"), "    ")
LOGGER = "logger = init_logger(__name__)\n\n\n"
GET_LOGGER = "logger = logging.getLogger(__name__)\n\n\n"
KV_CONFIG = """\
def {name}(vllm_config, groups, available_memory):
    page_size = sum(group.spec.page_size_bytes for group in groups)
    num_blocks = available_memory // page_size
    tensors = [KVCacheTensor(size=page_size * num_blocks, shared_by=groups)]
    return num_blocks, tensors


"""
PACKED_KV_CONFIG = """\
def kv_config_packed(vllm_config, groups, available_memory):
    layouts = [packed_layout(group.spec, vllm_config.cache_config) for group in groups]
    stride = max(layout.stride for layout in layouts)
    num_blocks = available_memory // stride
    return num_blocks, [layout.tensor(num_blocks) for layout in layouts]


"""
KV_CONFIG_CALLER = """\
def get_kv_cache_config(vllm_config, groups, available_memory):
    return kv_config_deepseek_v4(vllm_config, groups, available_memory)
"""
EP_RANK = """
    @property
    def ep_rank(self) -> int:
        return self.{config}parallel_config.ep_rank
"""
KEPT_EP_RANK = {"config.py": "class MoEConfig:" + EP_RANK.format(config="")}
SCALE_RE = '_SCALE_RE = re.compile(r"experts\\.(\\d+)\\.w13_scale")\n\n\n'
EXPERT_MAP = "\n    def supports_expert_map(self):\n        return False\n"
IN_PUT_TASKS = """
    def exists_in_put_tasks(self, key):
        with self.put_lock:
            return key in self.put_tasks
"""
TOKEN_CLASSIFIER_INIT = """
    def __init__(self, *, vllm_config: VllmConfig, prefix: str = ""):
        super().__init__()
        config = vllm_config.model_config.hf_config
        self.head_dtype = vllm_config.model_config.head_dtype
        self.num_labels = config.num_labels
        self.{attr} = {model}(
            vllm_config=vllm_config,
            prefix=maybe_prefix(prefix, "{prefix}"),
        )
        self.{head} = nn.Linear(
            config.hidden_size, config.num_labels, dtype=self.head_dtype
        )

        pooler_config = vllm_config.model_config.pooler_config
        assert pooler_config is not None
        self.pooler = pooler_for_token_classify(pooler_config)
"""
MODERNBERT_INIT = TOKEN_CLASSIFIER_INIT.format(
    attr="model", model="ModernBertModel", prefix="modernbert", head="classifier"
).replace("        self.classifier", "        self.head = ModernBertPredictionHead(config)\n"
          "        self.classifier")
LOAD_WEIGHTS = """
    def load_weights(self, weights):
        params = dict(self.named_parameters())
        for name, tensor in weights:
            if name in params:
                default_weight_loader(params[name], tensor)
        return set(params)
"""
FINALIZE = """
    def finalize_weights(self):
        for layer in self.layers:
            layer.experts.finalize_mega_moe_weights(self.quant_config)
"""
BUILD_PARAMS = """
    def build_tok_params(self, model_config):
        encoder_config = model_config.encoder_config or {}
        return TokenizeParams(max_total_tokens=model_config.max_model_len,
                              do_lower_case=encoder_config.get("do_lower_case", False),
                              add_special_tokens=self.add_special_tokens)
"""
BUILD_PARAMS_GENERAL = """
    def build_tok_params(self, model_config):
        limits = self._token_limits(model_config)
        return self.params_class(**limits, side=self.truncation_side)
"""
INIT_RECORD = """
    def init_record(self, model, layers):
        for layer in model.moe_layers:
            shared = layer.shared_tensors.get(self.record_key)
            if shared is not None:
                self.recorders[layer.index] = shared.clone()
"""
PROPAGATE_SHARED = """
    def propagate_shared(self, model, layers, group):
        for layer in model.moe_layers:
            shared = layer.shared_tensors.get(self.record_key)
            if shared is not None:
                group.broadcast(shared, src=0)
        torch.cuda.synchronize()
"""  # 0.597 against INIT_RECORD: under MOVE_THRESHOLD, over SAME_CLASS_MOVE_THRESHOLD
MAPPER = ('WeightsMapper(orig_to_new_prefix={"model.": "language_model.model.", '
          '"lm_head.": "language_model.lm_head."})')
GET_NAME = """
    @staticmethod
    def get_name():
        return "{name}_MLA"
"""
PHI_LOAD_WEIGHTS = LOAD_WEIGHTS.replace("return set(params)", "return set(params or ())")
MEGA_MOE_CONNECTOR = CONNECTOR.replace(
    "self.engine.retrieve(request_id, blocks, forward_context.layers)",
    "mega_moe.retrieve_async(blocks, stream=current_stream(), layers=None)").replace(
    "create_engine(config.kv_transfer_config, role)",
    "MegaMoEEngine.from_kernel_config(kernel_cfg, device_mesh, rank_mapping)")
LOG_INPUTS = """
    def _log_inputs(self, request_id, inputs, params, lora_request):
        if self.request_logger is None:
            return
        self.request_logger.log_inputs(request_id, inputs, params, lora_request)
"""
RETURN_OR_RAISE = """
    def _return_or_raise(backend, reason):
        if backend is None:
            raise ValueError(f"no backend: {reason} for {kernel} on {platform}")
        return backend
"""

STATE_SHAPE = """\
    def get_state_shape(self):
        conv = (self.conv_size - 1, self.head_dim * 8)
        recurrent = (8, self.head_dim, self.head_dim)
        return conv, recurrent

"""
INIT = KDA[KDA.index("    def __init__"):KDA.index("    def get_state_shape")]
assert STATE_SHAPE in KDA and INIT
KDA_TWO_METHODS = KDA.replace(STATE_SHAPE, "")  # __init__ and _forward
KDA_ONE_METHOD = KDA_TWO_METHODS.replace(INIT, "")  # _forward
WINDOW = """
    @property
    def window(self):
        return self.conv_size * self.head_dim

    @window.setter
    def window(self, value):
        self.conv_size = value // self.head_dim
"""

SPARSE_BACKEND = """\
class {name}({bases}):
{extra}
    @staticmethod
    def get_supported_kernel_block_sizes():
        return [256]

    @staticmethod
    def get_kv_cache_shape(num_blocks, block_size, num_kv_heads, head_size, dtype="auto"):
        if dtype == "fp8_ds_mla":
            return (num_blocks, block_size, 584)
        return (num_blocks, block_size, head_size)
"""
V4_SPARSE_BACKEND = {"a.py": SPARSE_BACKEND.format(name="DeepseekV4FlashMLASparseBackend",
                                                   bases="FlashMLASparseBackend", extra="")}
"""v0.20.0's DeepseekV4FlashMLASparseBackend, whose class moved, renamed and rewritten."""
BACKEND_EXTRAS = """\
    supported_dtypes = [torch.bfloat16]
    supported_kv_cache_dtypes = ["auto", "bfloat16", "fp8_ds_mla", "fp8"]

    @staticmethod
    def get_builder_cls():
        return FlashMLAMetadataBuilder

    @classmethod
    def get_supported_head_sizes(cls):
        return [512]

    @classmethod
    def supports_compute_capability(cls, capability):
        return capability.major in [9, 10]
"""


LATENT_WRAPPER_INIT = """
    def __init__(self, hidden_size, num_heads, compress_ratio, cache_config, prefix):
        super().__init__()
        self.n_local_heads = num_heads
        self.compress_ratio = compress_ratio if compress_ratio is not None else 1
        self.swa_cache_layer = SWACache(window_size=128, cache_config=cache_config)
        self.compressor = None
        if self.compress_ratio > 1:
            self.compressor = DeepseekCompressor(
                compress_ratio=self.compress_ratio,
                hidden_size=hidden_size,
                prefix=f"{prefix}.compressor",
            )
"""
ATTENTION_IMPL = """
    def attention_impl(self, q, kv, positions, output):
        swa_metadata = get_forward_context().attn_metadata[self.swa_cache_layer.prefix]
        fused_qnorm_rope_kv_insert(q, kv, self.swa_cache_layer.kv_cache, positions)
        if self.compressor is not None:
            self.compressor(kv, positions, swa_metadata.slot_mapping)
        output.copy_(flash_mla_sparse(q, self.swa_cache_layer.kv_cache, swa_metadata))
"""
LATENT_WRAPPER = {"a.py": "class LatentAttentionWrapper(PluggableLayer):"
                  + LATENT_WRAPPER_INIT + ATTENTION_IMPL + """
    def forward(self, q, kv, positions):
        output = torch.empty_like(q)
        torch.ops.vllm.deepseek_v4_attention(q, kv, positions, output, self.layer_name)
        return output
""", "model.py": """\
class DeepseekV4Attention(nn.Module):
    def __init__(self, config, cache_config, prefix):
        super().__init__()
        self.head_dim = config.head_dim
        self.fused_wqa_wkv = MergedReplicatedLinear(config.hidden_size, [config.q_lora_rank,
                                                                       self.head_dim])
        self.mla_attn = LatentAttentionWrapper(config.hidden_size, config.num_heads,
                                               config.compress_ratio, cache_config, prefix)
"""}
"""v0.20.0's attention: the model's layer and the wrapper it builds, two classes."""
MERGED_ATTENTION = {"attention.py": """\
class DeepseekV4Attention(nn.Module, AttentionLayerBase):
    def __init__(self, config, cache_config, prefix):
        super().__init__()
        self.head_dim = config.head_dim
        self.fused_wqa_wkv = MergedReplicatedLinear(config.hidden_size, [config.q_lora_rank,
                                                                       self.head_dim])
""" + LATENT_WRAPPER_INIT.split("super().__init__()\n", 1)[1].replace(
    "hidden_size=hidden_size", "hidden_size=config.hidden_size") + ATTENTION_IMPL,
    "layers.py": "".join(f"class Layer{n}:\n    def __init__(self, size):\n"
                         f"        self.size = size * {n}\n\n\n"
                         for n in range(matching.BLOCK_CAP + 1))}
"""v0.25.0's: the wrapper merged into the model's layer, among more new ``__init__`` than
blocking compares."""


PIXELS = '''\
class {name}(TensorSchema):
    """
    Dimensions:
        - bn: Batch size * number of images
        - c: Number of channels ({channels})
        - h: Height
        - w: Width
    """

    type: Literal["pixel_values"] = "pixel_values"
    {field}: Annotated[torch.Tensor, TensorShape("bn", {channels}, "h", "w")]
'''
"""A vision model's input schema, as vLLM's models repeat it (v0.20.0's deleted Tarsier,
the kept PaliGemma, v0.25.0's new OpenVLA)."""
TARSIER_PIXELS = PIXELS.format(name="TarsierImagePixelInputs", field="pixel_values", channels=3)
OPENVLA_PIXELS = PIXELS.format(name="OpenVLAImagePixelInputs", field="data", channels=6)
VIDEO_PIXELS = """\
class VideoPixelInputs(TensorSchema):
    type: Literal["pixel_values_videos"] = "pixel_values_videos"
    pixel_values_videos: Annotated[torch.Tensor, TensorShape("bn", "f", 3, "h", "w")]
    video_grid_thw: Annotated[torch.Tensor, TensorShape("bn", 3)]
"""


ROTATE_PAIRS = """\
def rotate_half(x):
    x = x.reshape(*x.shape[:-1], -1, 2)
    x1, x2 = x.unbind(dim=-1)
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


"""
ROTATE_HALVES = """\
def _rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


"""
TIME_ROTARY = """\
def apply_rotary_time_emb(hidden_states, cos, sin):
    rotated = hidden_states[..., : cos.shape[-1]]
    passthrough = hidden_states[..., cos.shape[-1] :]
    rotated = (rotated * cos) + (rotate_half(rotated) * sin)
    return torch.cat((rotated, passthrough), dim=-1)


class MusicEncoder(nn.Module):
    def forward(self, features):
        return self.layers(features).mean(dim=1)
"""


@dataclass(frozen=True)
class MoveCase:
    """What became of ``old`` (``a.py::qualname`` at v1) at v2: the ref it moved to,
    with the other candidates, or None with the verdict it has at its own place."""

    old: dict[str, str]
    new: dict[str, str]
    qualname: str
    verdict: Verdict
    moved_to: str | None = None
    candidates: frozenset[str] = frozenset()


MOVES = {
    "a-dropped-files-function-is-no-look-alikes-predecessor": MoveCase(  # musicflamingo.py
        {"a.py": ROTATE_PAIRS + TIME_ROTARY},
        {"b.py": "import torch\n\n\n" + ROTATE_HALVES}, "rotate_half", Verdict.REMOVED,
        candidates=frozenset({"b.py::_rotate_half"}),
    ),
    "a-dropped-files-function-renamed-beside-a-sibling-moved": MoveCase(
        {"a.py": ROTATE_PAIRS + TIME_ROTARY},
        {"b.py": ROTATE_HALVES + TIME_ROTARY.replace("rotate_half(", "_rotate_half(")},
        "rotate_half", Verdict.MOVED, "b.py::_rotate_half",
    ),
    "class-left-an-alias-behind": MoveCase(
        {"a.py": CONNECTOR.format(name="MPConnector")},
        {"a.py": CONNECTOR.format(name="MPConnectorUpstream")
         + "\n\nMPConnector = resolve_connector()\n"},
        "MPConnector", Verdict.MOVED, "a.py::MPConnectorUpstream",
    ),
    "class-left-a-factory-behind": MoveCase(
        {"a.py": CONNECTOR.format(name="FusedMoE")},
        {"a.py": "def FusedMoE(config, role):\n    return RoutedExperts(config, role)\n\n\n",
         "b.py": CONNECTOR.format(name="RoutedExperts")},
        "FusedMoE", Verdict.MOVED, "b.py::RoutedExperts",  # blocked on its bases
    ),
    "class-became-an-alias-with-its-code-gone": MoveCase(
        {"a.py": CONNECTOR.format(name="MPConnector")},
        {"a.py": "MPConnector = OtherConnector\n"}, "MPConnector", Verdict.CHANGED,
    ),
    "function-left-an-alias-to-its-rewritten-successor": MoveCase(
        {"a.py": KV_CONFIG.format(name="kv_config_deepseek_v4") + KV_CONFIG_CALLER},
        {"a.py": PACKED_KV_CONFIG + "\n\nkv_config_deepseek_v4 = kv_config_packed\n\n\n"
                 + KV_CONFIG_CALLER},
        "kv_config_deepseek_v4", Verdict.MOVED, "a.py::kv_config_packed",
    ),
    "function-left-an-alias-to-its-rewritten-successor-imported": MoveCase(
        {"a.py": KV_CONFIG.format(name="kv_config_deepseek_v4") + KV_CONFIG_CALLER},
        {"a.py": "from packing import kv_config_packed\n\n"
                 "kv_config_deepseek_v4 = kv_config_packed\n\n\n" + KV_CONFIG_CALLER,
         "packing.py": PACKED_KV_CONFIG},
        "kv_config_deepseek_v4", Verdict.MOVED, "packing.py::kv_config_packed",
    ),
    "function-left-an-alias-to-a-function-it-had-too": MoveCase(
        {"a.py": KV_CONFIG.format(name="kv_config_deepseek_v4") + PACKED_KV_CONFIG},
        {"a.py": PACKED_KV_CONFIG + "\n\nkv_config_deepseek_v4 = kv_config_packed\n"},
        "kv_config_deepseek_v4", Verdict.CHANGED,
    ),
    "method-became-an-alias-of-a-function": MoveCase(
        {"a.py": "class Engine:\n" + textwrap.indent(KERNEL.format(name="init_group"), "    ")},
        {"a.py": "class Engine:\n    init_group = init_group\n",
         "b.py": KERNEL.format(name="init_group")},
        "Engine.init_group", Verdict.MOVED, "b.py::init_group",
    ),
    "function-renamed-with-a-suffix": MoveCase(
        {"a.py": KERNEL.format(name="mhc_pre")},
        {"kernels/tilelang.py": KERNEL.format(name="mhc_pre_tilelang").replace(
            "n_splits):", "n_splits, stream=None):")},  # blocked on neither name nor params
        "mhc_pre", Verdict.MOVED, "kernels/tilelang.py::mhc_pre_tilelang",
    ),
    "class-renamed-with-a-prefix-elsewhere": MoveCase(
        {"a.py": DESCRIPTOR.format(name="AdapterDescriptor")},
        {"utils.py": DESCRIPTOR.format(name="L2AdapterDescriptor")},  # no methods to follow
        "AdapterDescriptor", Verdict.MOVED, "utils.py::L2AdapterDescriptor",
    ),
    "function-renamed-with-a-prefix-elsewhere": MoveCase(
        {"a.py": KERNEL.format(name="fold_unfold")},
        {"b.py": KERNEL.format(name="ranked_fold_unfold").replace("n_splits):", "n):")},
        "fold_unfold", Verdict.MOVED, "b.py::ranked_fold_unfold",
    ),
    "class-followed-by-four-methods-though-it-scores-low": MoveCase(
        {"a.py": TRANSFER_MODULE.format(name="GPUTransferModule", bases="")},
        {"b.py": LIVENESS_TRANSFER_MODULE},
        "GPUTransferModule", Verdict.MOVED, "b.py::LMCacheDrivenTransferModule",
    ),
    "class-left-a-factory-follows-most-of-its-methods-though-it-scores-low": MoveCase(
        {"a.py": TRANSFER_MODULE.format(name="GPUTransferModule", bases="") + FINALIZE},
        {"a.py": "def GPUTransferModule(ctx):\n    return LMCacheDrivenTransferModule(ctx)\n",
         "b.py": LIVENESS_TRANSFER_MODULE, "c.py": "class WeightRunner:\n" + FINALIZE},
        "GPUTransferModule", Verdict.MOVED, "b.py::LMCacheDrivenTransferModule",
    ),
    "class-gone-from-its-file-follows-no-mere-most-of-its-methods-if-it-scores-low": MoveCase(
        {"a.py": TRANSFER_MODULE.format(name="GPUTransferModule", bases="") + FINALIZE
                 + "\n\n" + KERNEL.format(name="serve_tokens")},
        {"a.py": KERNEL.format(name="serve_tokens"),
         "b.py": LIVENESS_TRANSFER_MODULE, "c.py": "class WeightRunner:\n" + FINALIZE},
        "GPUTransferModule", Verdict.REMOVED,
        candidates=frozenset({"b.py::LMCacheDrivenTransferModule"}),  # where most went
    ),
    "function-copied-twice-goes-where-its-file-imports-it-from": MoveCase(
        {"a.py": KERNEL.format(name="normalize_url") + "\n\ndef main(url):\n"
                 "    return normalize_url(url)\n"},
        {"a.py": "from util.net import normalize_url\n\n\ndef main(url):\n"
                 "    return normalize_url(url)\n",
         "util/net.py": KERNEL.format(name="normalize_url"),
         "cmd/_coordinator.py": KERNEL.format(name="normalize_url")},  # first by path
        "normalize_url", Verdict.MOVED, "util/net.py::normalize_url",
    ),
    "function-made-private-elsewhere": MoveCase(
        {"a.py": KERNEL.format(name="stateless_init")},
        {"b.py": KERNEL.format(name="_stateless_init").replace("n_splits):", "n_splits, s):")},
        "stateless_init", Verdict.MOVED, "b.py::_stateless_init",
    ),
    "merged-into-a-function-its-file-kept": MoveCase(
        {"a.py": KERNEL.format(name="get_class_with_compat") + "\n\n" + KERNEL.format(
            name="get_class").replace("residual.shape[0]", "residual.size(0)")},
        {"a.py": KERNEL.format(name="get_class")},
        "get_class_with_compat", Verdict.REMOVED, candidates=frozenset({"a.py::get_class"}),
    ),
    "a-wrapper-sharing-only-bases-is-no-candidate": MoveCase(
        {"a.py": "class DeepseekWrapper(PluggableLayer):\n    q_lora_rank = 1536\n"
                 "    kv_lora_rank = 512\n    softmax_scale = compute_scale(kv_lora_rank)\n"},
        {"b.py": "class DeepseekExperts(PluggableLayer):\n    num_experts = 256\n"
                 "    top_k = 8\n    shared = build_shared(num_experts, top_k)\n"},
        "DeepseekWrapper", Verdict.REMOVED,
    ),
    "trivial-method-of-a-removed-class-follows-no-lookalike": MoveCase(
        {"a.py": "class P2pConnector:\n    def wait_for_layer_load(self, layer_name):\n"
                 '        """Block until the layer is loaded."""\n        return\n'},
        {"b.py": "class StoreConnector:\n    def wait_for_layer_load(self, layer_name):\n"
                 "        return\n"},
        "P2pConnector.wait_for_layer_load", Verdict.REMOVED,
        candidates=frozenset({"b.py::StoreConnector.wait_for_layer_load"}),
    ),
    "class-renamed-elsewhere-follows-its-methods": MoveCase(
        {"a.py": KDA.format(name="KimiDeltaAttention", bases="nn.Module, MambaBase")},
        {"gdn/kimi.py": KDA.format(name="KimiGatedDeltaNetAttention",
                                   bases="GatedDeltaNetAttention")},  # blocked on nothing
        "KimiDeltaAttention", Verdict.MOVED, "gdn/kimi.py::KimiGatedDeltaNetAttention",
    ),
    "class-renamed-elsewhere-follows-its-two-methods": MoveCase(
        {"a.py": KDA_TWO_METHODS.format(name="KimiDeltaAttention", bases="nn.Module, MambaBase")},
        {"gdn/kimi.py": KDA_TWO_METHODS.format(name="KimiGatedDeltaNetAttention",
                                               bases="GatedDeltaNetAttention")},
        "KimiDeltaAttention", Verdict.MOVED, "gdn/kimi.py::KimiGatedDeltaNetAttention",
    ),
    "class-renamed-elsewhere-does-not-follow-its-one-method": MoveCase(
        {"a.py": KDA_ONE_METHOD.format(name="KimiDeltaAttention", bases="nn.Module, MambaBase")},
        {"gdn/kimi.py": KDA_ONE_METHOD.format(name="KimiGatedDeltaNetAttention",
                                              bases="GatedDeltaNetAttention")},
        "KimiDeltaAttention", Verdict.REMOVED,
        candidates=frozenset({"gdn/kimi.py::KimiGatedDeltaNetAttention"}),  # where it went
    ),
    "class-renamed-and-rewritten-elsewhere-follows-its-method-seconded-by-a-short-one": MoveCase(
        V4_SPARSE_BACKEND,
        {"v4/sparse_mla.py": SPARSE_BACKEND.format(
            name="DeepseekV4FlashMLABackend", bases="AttentionBackend", extra=BACKEND_EXTRAS)},
        "DeepseekV4FlashMLASparseBackend", Verdict.MOVED,
        "v4/sparse_mla.py::DeepseekV4FlashMLABackend",
    ),
    "its-short-method-follows-it-there": MoveCase(
        V4_SPARSE_BACKEND,
        {"v4/sparse_mla.py": SPARSE_BACKEND.format(
            name="DeepseekV4FlashMLABackend", bases="AttentionBackend", extra=BACKEND_EXTRAS)},
        "DeepseekV4FlashMLASparseBackend.get_supported_kernel_block_sizes", Verdict.MOVED,
        "v4/sparse_mla.py::DeepseekV4FlashMLABackend.get_supported_kernel_block_sizes",
    ),
    "class-seconded-by-a-short-method-does-not-follow-it-to-a-class-named-unlike-it": MoveCase(
        V4_SPARSE_BACKEND,
        {"v4/sparse_mla.py": SPARSE_BACKEND.format(
            name="TokenspeedBackend", bases="AttentionBackend", extra=BACKEND_EXTRAS)},
        "DeepseekV4FlashMLASparseBackend", Verdict.REMOVED,
        candidates=frozenset({"v4/sparse_mla.py::TokenspeedBackend"}),  # where its method went
    ),
    "class-does-not-follow-stock-code-a-kept-class-has-too-seconded-by-a-short-method": MoveCase(
        {"a.py": SPARSE_BACKEND.format(name="RocmAttentionBackend", bases="AttentionBackend",
                                       extra=""),
         "b.py": SPARSE_BACKEND.format(name="TritonAttentionBackend", bases="AttentionBackend",
                                       extra="")},
        {"b.py": SPARSE_BACKEND.format(name="TritonAttentionBackend", bases="AttentionBackend",
                                       extra=""),
         "c.py": SPARSE_BACKEND.format(name="RocmAiterAttentionBackend", bases="AttentionBackend",
                                       extra=BACKEND_EXTRAS)},
        "RocmAttentionBackend", Verdict.REMOVED,
        candidates=frozenset({"c.py::RocmAiterAttentionBackend"}),
    ),
    "removed-class-does-not-follow-its-methods-to-a-class-named-at-a": MoveCase(
        {"a.py": KDA.format(name="Dots1Model", bases="Dots1Base"),
         "b.py": KDA.format(name="MiMoModel", bases="nn.Module")},  # a copy of Dots1Model
        {"c.py": KDA.format(name="MiMoModel", bases="nn.Module")},
        "Dots1Model", Verdict.REMOVED,
    ),
    "attribute-of-a-removed-class-follows-no-twin-elsewhere": MoveCase(
        {"a.py": "class BlockPool:\n"
                 "    table = build_table(num_blocks, block_size, dtype, device, pin_memory)\n"
                 "    def free(self, blocks):\n        self.free_list.extend(blocks)\n"},
        {"b.py": "class Sampler:\n"
                 "    table = build_table(num_blocks, block_size, dtype, device, pin_memory)\n"
                 "    def sample(self, logits):\n        return logits.argmax(-1)\n"},
        "BlockPool.table", Verdict.REMOVED,
    ),
    "a-lookalike-does-not-take-the-place-of-a-symbol-that-moved-there": MoveCase(
        {"a.py": "class BaiChuanForCausalLM:\n" + FORWARD,
         "b.py": "class MiMoForCausalLM:\n" + FORWARD},
        {"c.py": "class MiMoForCausalLM:\n" + FORWARD},  # b.py was merged into c.py
        "BaiChuanForCausalLM.forward", Verdict.REMOVED,
        candidates=frozenset({"c.py::MiMoForCausalLM.forward"}),
    ),
    "a-lookalike-takes-a-new-copy-of-a-symbol-that-stayed": MoveCase(
        {"a.py": "class BaiChuanForCausalLM:\n" + FORWARD,
         "b.py": "class MiMoForCausalLM:\n" + FORWARD.replace("residual, fn", "fn, residual")},
        {"b.py": "class MiMoForCausalLM:\n" + FORWARD.replace("residual, fn", "fn, residual"),
         "c.py": "class MiMoForCausalLM:\n" + FORWARD},
        "BaiChuanForCausalLM.forward", Verdict.MOVED, "c.py::MiMoForCausalLM.forward",
    ),
    "a-lookalike-takes-a-second-new-place-of-a-name": MoveCase(
        {"a.py": KERNEL.format(name="mhc_post"),
         "b.py": "def mhc_post_tilelang(x):\n    return launch_kernel(x)\n"},
        {"kernels.py": "def mhc_post_tilelang(x):\n    return launch_kernel(x)\n",
         "tilelang.py": KERNEL.format(name="mhc_post_tilelang").replace(
             "n_splits):", "n_splits, stream=None):")},
        "mhc_post", Verdict.MOVED, "tilelang.py::mhc_post_tilelang",
    ),
    "a-rename-in-its-file-takes-a-name-whose-old-holder-it-does-not-resemble": MoveCase(
        {"a.py": KERNEL.format(name="fused_norm_v2"),
         "legacy.py": "def fused_norm(x):\n    return torch.ops.legacy.norm(x)\n"},
        {"a.py": KERNEL.format(name="fused_norm")},  # legacy.py was deleted
        "fused_norm_v2", Verdict.MOVED, "a.py::fused_norm",
    ),
    "a-lookalike-does-not-take-the-place-of-a-symbol-whose-copy-is-no-python": MoveCase(
        {"a.py": "class BaiChuanForCausalLM:\n" + FORWARD,
         "b.py": "class MiMoForCausalLM:\n" + FORWARD},
        {"c.py": "class MiMoForCausalLM:\n" + FORWARD,  # b.py merged into c.py, kept as .txt
         "c.txt": "class MiMoForCausalLM:\n" + FORWARD},
        "BaiChuanForCausalLM.forward", Verdict.REMOVED,
        candidates=frozenset({"c.py::MiMoForCausalLM.forward"}),
    ),
    "a-lookalike-takes-a-name-a-defined-only-as-another-kind": MoveCase(
        {"a.py": KERNEL.format(name="mhc_post"), "b.py": "mhc_post_tilelang = None\n"},
        {"c.py": KERNEL.format(name="mhc_post_tilelang")},
        "mhc_post", Verdict.MOVED, "c.py::mhc_post_tilelang",
    ),
    "a-method-that-left-a-kept-class-takes-no-ambiguous-move": MoveCase(
        {"a.py": "class Experts:\n" + FORWARD + EXPERT_MAP},
        {"a.py": "class Experts:\n" + FORWARD, "b.py": "class CPUExperts:\n" + EXPERT_MAP,
         "c.py": "class HPCExperts:\n" + EXPERT_MAP},
        "Experts.supports_expert_map", Verdict.REMOVED,
        candidates=frozenset({"b.py::CPUExperts.supports_expert_map",
                              "c.py::HPCExperts.supports_expert_map"}),
    ),
    "a-method-that-left-a-kept-class-moves-to-its-one-new-place": MoveCase(
        {"a.py": "class Experts:\n" + FORWARD + EXPERT_MAP},
        {"a.py": "class Experts:\n" + FORWARD, "b.py": "class CPUExperts:\n" + EXPERT_MAP},
        "Experts.supports_expert_map", Verdict.MOVED, "b.py::CPUExperts.supports_expert_map",
    ),
    "a-method-dropped-from-kept-classes-takes-no-lookalike": MoveCase(
        {"a.py": "class OPTModel:\n" + FORWARD + LOAD_WEIGHTS,
         "b.py": "class PhiModel:\n" + FORWARD + LOAD_WEIGHTS},
        {"a.py": "class OPTModel:\n" + FORWARD, "b.py": "class PhiModel:\n" + FORWARD,
         "c.py": "class VisionTower:\n" + LOAD_WEIGHTS},
        "OPTModel.load_weights", Verdict.REMOVED,
        candidates=frozenset({"c.py::VisionTower.load_weights"}),
    ),
    "a-method-dropped-from-kept-classes-of-one-file-takes-no-lookalike": MoveCase(
        {"a.py": "class OPTModel:\n" + FORWARD + LOAD_WEIGHTS
                 + "\n\nclass OPTForCausalLM:\n" + FORWARD + LOAD_WEIGHTS},
        {"a.py": "class OPTModel:\n" + FORWARD + "\n\nclass OPTForCausalLM:\n" + FORWARD,
         "c.py": "class VisionTower:\n" + LOAD_WEIGHTS},
        "OPTModel.load_weights", Verdict.REMOVED,
        candidates=frozenset({"c.py::VisionTower.load_weights"}),
    ),
    "a-namesake-that-moved-with-its-file-does-not-contest-a-move": MoveCase(
        {"a.py": "class OPTModel:\n" + FORWARD + LOAD_WEIGHTS,
         "phi.py": "class PhiModel:\n" + FORWARD + PHI_LOAD_WEIGHTS},
        {"a.py": "class OPTModel:\n" + FORWARD,
         "c.py": "class OPTWeights:\n" + LOAD_WEIGHTS,
         "models/phi.py": "class PhiModel:\n" + FORWARD + PHI_LOAD_WEIGHTS},
        "OPTModel.load_weights", Verdict.MOVED, "c.py::OPTWeights.load_weights",
    ),
    "methods-of-two-files-made-one-function-move-there": MoveCase(
        {"a.py": "class ChatServing:\n" + LOG_INPUTS, "b.py": "class PoolServing:\n" + LOG_INPUTS},
        {"a.py": "class ChatServing:\n    pass\n", "b.py": "class PoolServing:\n    pass\n",
         "utils.py": textwrap.dedent(LOG_INPUTS).lstrip("\n")},
        "ChatServing._log_inputs", Verdict.MOVED, "utils.py::_log_inputs",
    ),
    "a-method-dropped-from-a-kept-class-takes-its-one-lookalike": MoveCase(
        {"a.py": "class OPTModel:\n" + FORWARD + LOAD_WEIGHTS},
        {"a.py": "class OPTModel:\n" + FORWARD,
         "c.py": "class VisionTower:\n" + LOAD_WEIGHTS},
        "OPTModel.load_weights", Verdict.MOVED, "c.py::VisionTower.load_weights",
    ),
    "a-namesake-almost-as-close-contests-a-move": MoveCase(  # 0.854 against 0.88
        {"a.py": "class OPTModel:\n" + FORWARD + LOAD_WEIGHTS,
         "b.py": "class PhiModel:\n" + FORWARD + PHI_LOAD_WEIGHTS},
        {"a.py": "class OPTModel:\n" + FORWARD, "b.py": "class PhiModel:\n" + FORWARD,
         "c.py": "class VisionTower:\n" + LOAD_WEIGHTS},
        "OPTModel.load_weights", Verdict.REMOVED,
        candidates=frozenset({"c.py::VisionTower.load_weights"}),
    ),
    "a-namesake-much-less-close-does-not-contest-a-move": MoveCase(  # 0.748 against 0.88
        {"a.py": "class OPTModel:\n" + FORWARD + LOAD_WEIGHTS,
         "b.py": "class PhiModel:\n" + FORWARD + LOAD_WEIGHTS.replace(
             "default_weight_loader(params[name], tensor)",
             "params[name].weight_loader(params[name], tensor, shard_id=None)")},
        {"a.py": "class OPTModel:\n" + FORWARD, "b.py": "class PhiModel:\n" + FORWARD,
         "c.py": "class VisionTower:\n" + LOAD_WEIGHTS},
        "OPTModel.load_weights", Verdict.MOVED, "c.py::VisionTower.load_weights",
    ),
    "a-deleted-models-method-does-not-move-to-a-new-models-lookalike": MoveCase(
        {"a.py": "class QwenVLModel:\n" + FORWARD,
         "b.py": "class AyaVisionModel:\n" + FORWARD.replace("n_splits)\n", "n_splits, 1)\n")},
        {"c.py": "class MossAudioModel:\n" + FORWARD.replace("return out", "return out.t()")},
        "QwenVLModel.forward", Verdict.REMOVED,
        candidates=frozenset({"c.py::MossAudioModel.forward"}),
    ),
    "a-deleted-classs-method-is-not-contested-by-one-of-a-kept-class": MoveCase(
        {"a.py": "class OPTModel:\n" + LOAD_WEIGHTS,
         "b.py": "class PhiModel:\n" + FORWARD + PHI_LOAD_WEIGHTS},
        {"b.py": "class PhiModel:\n" + FORWARD,
         "c.py": "class VisionTower:\n" + LOAD_WEIGHTS.replace("set(params)", "params")},
        "OPTModel.load_weights", Verdict.MOVED, "c.py::VisionTower.load_weights",
    ),
    "a-deleted-classs-method-kept-verbatim-beside-a-namesake-moves": MoveCase(
        {"a.py": "class ChatServing:\n" + LOG_INPUTS,
         "b.py": "class RenderServing:\n" + LOG_INPUTS},
        {"c.py": "class Renderer:\n" + LOG_INPUTS},
        "ChatServing._log_inputs", Verdict.MOVED, "c.py::Renderer._log_inputs",
    ),
    "a-deleted-classs-method-takes-no-new-copy-of-code-a-kept-class-has-too": MoveCase(
        {"a.py": "class WekaBackend:\n" + IN_PUT_TASKS,
         "b.py": "class GdsBackend:\n" + IN_PUT_TASKS},
        {"b.py": "class GdsBackend:\n" + IN_PUT_TASKS,
         "c.py": "class MaruBackend:\n" + IN_PUT_TASKS},
        "WekaBackend.exists_in_put_tasks", Verdict.REMOVED,
        candidates=frozenset({"c.py::MaruBackend.exists_in_put_tasks"}),
    ),
    "deleted-classs-methods-that-went-together-take-no-copies-of-code-a-kept-class-has": MoveCase(
        {"a.py": "class WekaBackend:\n" + IN_PUT_TASKS + LOAD_WEIGHTS,
         "b.py": "class GdsBackend:\n" + IN_PUT_TASKS + LOAD_WEIGHTS},
        {"b.py": "class GdsBackend:\n" + IN_PUT_TASKS + LOAD_WEIGHTS,
         "c.py": "class MaruBackend(StorageBackend):\n" + INIT_RECORD + IN_PUT_TASKS + FINALIZE
                 + LOAD_WEIGHTS + PROPAGATE_SHARED},
        "WekaBackend.exists_in_put_tasks", Verdict.REMOVED,
        candidates=frozenset({"c.py::MaruBackend.exists_in_put_tasks"}),
    ),
    "a-deleted-classs-method-moves-to-code-a-kept-class-has-unlike-it": MoveCase(
        {"a.py": "class WekaBackend:\n" + IN_PUT_TASKS,
         "b.py": "class GdsBackend:\n" + IN_PUT_TASKS.replace("put_tasks", "pending")},
        {"b.py": "class GdsBackend:\n" + IN_PUT_TASKS.replace("put_tasks", "pending"),
         "c.py": "class MaruBackend:\n" + IN_PUT_TASKS},
        "WekaBackend.exists_in_put_tasks", Verdict.MOVED, "c.py::MaruBackend.exists_in_put_tasks",
    ),
    "a-deleted-classs-method-takes-no-new-copy-a-kept-class-is-about-as-close-to": MoveCase(
        # ErnieForTokenClassification.__init__ (v0.20.0, model deleted) is 0.846 like the
        # new OpenAIPrivacyFilter's, the kept ModernBert's 0.818: no evidence either way
        {"a.py": "class ErnieForTokenClassification:\n" + TOKEN_CLASSIFIER_INIT.format(
            attr="ernie", model="ErnieModel", prefix="ernie", head="classifier"),
         "b.py": "class ModernBertForTokenClassification:\n" + MODERNBERT_INIT},
        {"b.py": "class ModernBertForTokenClassification:\n" + MODERNBERT_INIT,
         "c.py": "class PrivacyFilterForTokenClassification:\n" + TOKEN_CLASSIFIER_INIT.format(
             attr="model", model="PrivacyFilterModel", prefix="model", head="score")},
        "ErnieForTokenClassification.__init__", Verdict.REMOVED,
        candidates=frozenset({"c.py::PrivacyFilterForTokenClassification.__init__"}),
    ),
    "a-method-left-as-a-stub-in-its-class-moves-to-the-subclass-with-its-body": MoveCase(
        {"a.py": "class NixlScheduler:\n" + INIT_RECORD + FINALIZE + LOAD_WEIGHTS},
        {"base.py": "class NixlBaseScheduler:\n" + INIT_RECORD + FINALIZE
                    + "\n    def load_weights(self, weights):\n        raise NotImplementedError\n",
         "pull.py": "class NixlPullScheduler(NixlBaseScheduler):\n" + LOAD_WEIGHTS,
         "push.py": "class NixlPushScheduler(NixlBaseScheduler):\n" + LOAD_WEIGHTS.replace(
             "default_weight_loader(params[name], tensor)", "self.queue.put((name, tensor))")},
        "NixlScheduler.load_weights", Verdict.MOVED, "pull.py::NixlPullScheduler.load_weights",
    ),
    "a-method-left-as-a-stub-does-not-take-a-subclasss-own-method": MoveCase(
        {"a.py": "class NixlScheduler:\n" + INIT_RECORD + FINALIZE + LOAD_WEIGHTS,
         "pull.py": "class NixlPullScheduler(NixlScheduler):\n" + LOAD_WEIGHTS.replace(
             "return set(params)", "return params")},
        {"base.py": "class NixlBaseScheduler:\n" + INIT_RECORD + FINALIZE
                    + "\n    def load_weights(self, weights):\n        raise NotImplementedError\n",
         "nixl/pull.py": "class NixlPullScheduler(NixlBaseScheduler):\n" + LOAD_WEIGHTS},
        "NixlScheduler.load_weights", Verdict.MOVED, "base.py::NixlBaseScheduler.load_weights",
    ),
    "a-method-left-as-a-stub-moves-to-the-subclass-that-imports-its-class": MoveCase(
        {"a.py": "class NixlScheduler:\n" + INIT_RECORD + FINALIZE + LOAD_WEIGHTS},
        {"base.py": "class NixlBaseScheduler:\n" + INIT_RECORD + FINALIZE
                    + "\n    def load_weights(self, weights):\n        raise NotImplementedError\n",
         "other.py": "class NixlBaseScheduler:\n    pass\n",
         "pull.py": "from base import NixlBaseScheduler\n\n\n"
                    "class NixlPullScheduler(NixlBaseScheduler):\n" + LOAD_WEIGHTS},
        "NixlScheduler.load_weights", Verdict.MOVED, "pull.py::NixlPullScheduler.load_weights",
    ),
    "a-method-left-as-a-stub-does-not-move-to-a-subclass-of-another-class-of-its-name": MoveCase(
        {"a.py": "class NixlScheduler:\n" + INIT_RECORD + FINALIZE + LOAD_WEIGHTS},
        {"base.py": "class NixlBaseScheduler:\n" + INIT_RECORD + FINALIZE
                    + "\n    def load_weights(self, weights):\n        raise NotImplementedError\n",
         "other.py": "class NixlBaseScheduler:\n    pass\n",
         "pull.py": "from other import NixlBaseScheduler\n\n\n"
                    "class NixlPullScheduler(NixlBaseScheduler):\n" + LOAD_WEIGHTS},
        "NixlScheduler.load_weights", Verdict.MOVED, "base.py::NixlBaseScheduler.load_weights",
    ),
    "a-method-left-as-a-stub-does-not-move-to-a-subclass-of-a-class-its-file-defines": MoveCase(
        {"a.py": "class NixlScheduler:\n" + INIT_RECORD + FINALIZE + LOAD_WEIGHTS},
        {"base.py": "class NixlBaseScheduler:\n" + INIT_RECORD + FINALIZE
                    + "\n    def load_weights(self, weights):\n        raise NotImplementedError\n",
         "pull.py": "class NixlBaseScheduler:\n    pass\n\n\n"
                    "class NixlPullScheduler(NixlBaseScheduler):\n" + LOAD_WEIGHTS},
        "NixlScheduler.load_weights", Verdict.MOVED, "base.py::NixlBaseScheduler.load_weights",
    ),
    "a-method-left-as-a-stub-does-not-move-to-a-subclass-of-a-library-class": MoveCase(
        {"a.py": "class NixlScheduler:\n" + INIT_RECORD + FINALIZE + LOAD_WEIGHTS},
        {"base.py": "class NixlBaseScheduler:\n" + INIT_RECORD + FINALIZE
                    + "\n    def load_weights(self, weights):\n        raise NotImplementedError\n",
         "pull.py": "from nixl import NixlBaseScheduler\n\n\n"
                    "class NixlPullScheduler(NixlBaseScheduler):\n" + LOAD_WEIGHTS},
        "NixlScheduler.load_weights", Verdict.MOVED, "base.py::NixlBaseScheduler.load_weights",
    ),
    "a-method-rewritten-in-its-moved-class-does-not-go-to-a-lookalike-elsewhere": MoveCase(
        {"a.py": "class NixlScheduler:\n" + INIT_RECORD + FINALIZE + LOAD_WEIGHTS},
        {"base.py": "class NixlBaseScheduler:\n" + INIT_RECORD + FINALIZE
                    + "\n    def load_weights(self, weights):\n        raise NotImplementedError\n",
         "pull.py": "class VisionTower(nn.Module):\n" + LOAD_WEIGHTS},
        "NixlScheduler.load_weights", Verdict.MOVED, "base.py::NixlBaseScheduler.load_weights",
    ),
    "methods-pulled-up-into-a-base-of-their-classes-move-there": MoveCase(
        {"a.py": "class ChatServing:\n" + LOG_INPUTS, "b.py": "class PoolServing:\n" + LOG_INPUTS},
        {"a.py": "class ChatServing(BaseServing):\n    pass\n",
         "b.py": "class PoolServing(BaseServing):\n    pass\n",
         "c.py": "class BaseServing:\n" + LOG_INPUTS},
        "ChatServing._log_inputs", Verdict.MOVED, "c.py::BaseServing._log_inputs",
    ),
    "methods-pulled-up-into-a-base-of-their-base-move-there": MoveCase(
        {"a.py": "class ChatServing(OpenAIServing):\n" + LOG_INPUTS,
         "b.py": "class PoolServing(OpenAIServing):\n" + LOG_INPUTS,
         "s.py": "class OpenAIServing(BaseServing):\n    pass\n"},
        {"a.py": "class ChatServing(OpenAIServing):\n    pass\n",
         "b.py": "class PoolServing(OpenAIServing):\n    pass\n",
         "s.py": "class OpenAIServing(BaseServing):\n    pass\n",
         "c.py": "class BaseServing:\n" + LOG_INPUTS},
        "ChatServing._log_inputs", Verdict.MOVED, "c.py::BaseServing._log_inputs",
    ),
    "a-method-pulled-up-into-a-mixin-its-class-now-inherits-moves-there": MoveCase(
        {"a.py": "class EmbedRequest(BaseRequest):\n" + BUILD_PARAMS},
        {"a.py": "class EmbedRequest(BaseRequest, TokenizeMixin):\n    pass\n",
         "b.py": "class TokenizeMixin:\n" + BUILD_PARAMS_GENERAL,
         "c.py": "class ChatRequest:\n" + BUILD_PARAMS_GENERAL},
        "EmbedRequest.build_tok_params", Verdict.MOVED, "b.py::TokenizeMixin.build_tok_params",
    ),
    "a-method-is-not-pulled-up-into-a-class-its-class-does-not-inherit": MoveCase(
        {"a.py": "class EmbedRequest(BaseRequest):\n" + BUILD_PARAMS},
        {"a.py": "class EmbedRequest(BaseRequest):\n    pass\n",
         "b.py": "class TokenizeMixin:\n" + BUILD_PARAMS_GENERAL},
        "EmbedRequest.build_tok_params", Verdict.REMOVED,
        candidates=frozenset({"b.py::TokenizeMixin.build_tok_params"}),
    ),
    "a-method-is-not-pulled-up-into-another-class-of-its-new-bases-name": MoveCase(
        {"a.py": "class EmbedRequest(BaseRequest):\n" + BUILD_PARAMS},
        {"a.py": "from mixins import TokenizeMixin\n\n\n"
                 "class EmbedRequest(BaseRequest, TokenizeMixin):\n    pass\n",
         "mixins.py": "class TokenizeMixin:\n    pass\n",
         "b.py": "class TokenizeMixin:\n" + BUILD_PARAMS_GENERAL},
        "EmbedRequest.build_tok_params", Verdict.REMOVED,
        candidates=frozenset({"b.py::TokenizeMixin.build_tok_params"}),
    ),
    "a-method-pulled-up-into-the-mixin-its-class-imports-moves-there": MoveCase(
        {"a.py": "class EmbedRequest(BaseRequest):\n" + BUILD_PARAMS},
        {"a.py": "from b import TokenizeMixin\n\n\n"
                 "class EmbedRequest(BaseRequest, TokenizeMixin):\n    pass\n",
         "mixins.py": "class TokenizeMixin:\n    pass\n",
         "b.py": "class TokenizeMixin:\n" + BUILD_PARAMS_GENERAL},
        "EmbedRequest.build_tok_params", Verdict.MOVED, "b.py::TokenizeMixin.build_tok_params",
    ),
    "a-method-pulled-up-into-the-mixin-its-class-imports-under-another-name-moves-there":
    MoveCase(
        {"a.py": "class EmbedRequest(BaseRequest):\n" + BUILD_PARAMS},
        {"a.py": "from b import TokenizeMixin as Tokenizing\n\n\n"
                 "class EmbedRequest(BaseRequest, Tokenizing):\n    pass\n",
         "b.py": "class TokenizeMixin:\n" + BUILD_PARAMS_GENERAL},
        "EmbedRequest.build_tok_params", Verdict.MOVED, "b.py::TokenizeMixin.build_tok_params",
    ),
    "a-method-pulled-up-into-a-nested-mixin-its-class-now-inherits-moves-there": MoveCase(
        {"a.py": "class EmbedRequest(BaseRequest):\n" + BUILD_PARAMS},
        {"a.py": "from b import Mixins\n\n\n"
                 "class EmbedRequest(BaseRequest, Mixins.Tokenize):\n    pass\n",
         "b.py": "class Mixins:\n    class Tokenize:\n"
                 + textwrap.indent(BUILD_PARAMS_GENERAL, "    "),
         "c.py": "class ChatRequest:\n" + BUILD_PARAMS_GENERAL},
        "EmbedRequest.build_tok_params", Verdict.MOVED,
        "b.py::Mixins.Tokenize.build_tok_params",
    ),
    "a-method-pulled-up-into-a-nested-mixin-its-file-defines-moves-there": MoveCase(
        {"a.py": "class EmbedRequest(BaseRequest):\n" + BUILD_PARAMS},
        {"a.py": "class Mixins:\n    class Tokenize:\n"
                 + textwrap.indent(BUILD_PARAMS_GENERAL, "    ")
                 + "\n\nclass EmbedRequest(BaseRequest, Mixins.Tokenize):\n    pass\n",
         "c.py": "class ChatRequest:\n" + BUILD_PARAMS_GENERAL},
        "EmbedRequest.build_tok_params", Verdict.MOVED,
        "a.py::Mixins.Tokenize.build_tok_params",
    ),
    "a-method-pulled-up-into-a-mixin-of-its-class-body-moves-there": MoveCase(
        {"a.py": "class Requests:\n    class Embed(BaseRequest):\n"
                 + textwrap.indent(BUILD_PARAMS, "    ")},
        {"a.py": "class Requests:\n    class Tokenize:\n"
                 + textwrap.indent(BUILD_PARAMS_GENERAL, "    ")
                 + "\n    class Embed(BaseRequest, Tokenize):\n        pass\n",
         "c.py": "class ChatRequest:\n" + BUILD_PARAMS_GENERAL},
        "Requests.Embed.build_tok_params", Verdict.MOVED,
        "a.py::Requests.Tokenize.build_tok_params",
    ),
    "a-method-is-not-pulled-up-into-a-class-its-class-body-defines-after-it": MoveCase(
        {"a.py": "class Requests:\n    class Embed(BaseRequest):\n"
                 + textwrap.indent(BUILD_PARAMS, "    ")},
        {"a.py": "class Requests:\n    class Embed(BaseRequest, Tokenize):\n        pass\n\n"
                 "    class Tokenize:\n" + textwrap.indent(BUILD_PARAMS_GENERAL, "    "),
         "c.py": "class ChatRequest:\n" + BUILD_PARAMS_GENERAL},
        "Requests.Embed.build_tok_params", Verdict.REMOVED,
        candidates=frozenset({"a.py::Requests.Tokenize.build_tok_params",
                              "c.py::ChatRequest.build_tok_params"}),
    ),
    "a-method-is-not-pulled-up-into-a-nested-class-of-another-outer-class": MoveCase(
        {"a.py": "class EmbedRequest(BaseRequest):\n" + BUILD_PARAMS},
        {"a.py": "from mixins import Mixins\n\n\n"
                 "class EmbedRequest(BaseRequest, Mixins.Tokenize):\n    pass\n",
         "mixins.py": "class Mixins:\n    class Tokenize:\n        pass\n",
         "b.py": "class Mixins:\n    class Tokenize:\n"
                 + textwrap.indent(BUILD_PARAMS_GENERAL, "    ")},
        "EmbedRequest.build_tok_params", Verdict.REMOVED,
        candidates=frozenset({"b.py::Mixins.Tokenize.build_tok_params"}),
    ),
    "class-fields-pulled-up-into-a-mixin-their-class-now-inherits-move-there": MoveCase(
        {"a.py": "class ChatRequestMixin(OpenAIBaseModel):\n"
                 "    add_generation_prompt: bool = Field(default=False)\n"},
        {"a.py": "class ChatRequestOptionsMixin(OpenAIBaseModel):\n"
                 "    add_generation_prompt: bool = Field(default=True)\n\n\n"
                 "class ChatRequestMixin(ChatRequestOptionsMixin):\n    pass\n"},
        "ChatRequestMixin.add_generation_prompt", Verdict.MOVED,
        "a.py::ChatRequestOptionsMixin.add_generation_prompt",
    ),
    "class-fields-pushed-down-into-the-one-subclass-that-declares-them-move-there": MoveCase(
        {"a.py": "class StorageAgent:\n    name: str\n    xfer_descs: XferDList\n"},
        {"a.py": "class StorageAgent(ABC):\n    name: str\n\n\n"
                 "class StaticAgent(StorageAgent):\n    xfer_descs: XferDList\n\n\n"
                 "class DynamicAgent(StorageAgent):\n    pool: DescPool\n"},
        "StorageAgent.xfer_descs", Verdict.MOVED, "a.py::StaticAgent.xfer_descs",
    ),
    "a-class-field-two-subclasses-declare-is-not-pushed-down": MoveCase(
        {"a.py": "class StorageAgent:\n    name: str\n    xfer_descs: XferDList\n"},
        {"a.py": "class StorageAgent(ABC):\n    name: str\n\n\n"
                 "class StaticAgent(StorageAgent):\n    xfer_descs: XferDList\n\n\n"
                 "class DynamicAgent(StorageAgent):\n    xfer_descs: XferDList\n"},
        "StorageAgent.xfer_descs", Verdict.REMOVED,
    ),
    "a-class-field-a-kept-subclass-declares-too-is-not-pushed-down": MoveCase(
        {"a.py": "class StorageAgent:\n    name: str\n    xfer_descs: XferDList\n\n\n"
                 "class DynamicAgent(StorageAgent):\n    xfer_descs: XferDList\n"},
        {"a.py": "class StorageAgent(ABC):\n    name: str\n\n\n"
                 "class StaticAgent(StorageAgent):\n    xfer_descs: XferDList\n\n\n"
                 "class DynamicAgent(StorageAgent):\n    xfer_descs: XferDList\n"},
        "StorageAgent.xfer_descs", Verdict.REMOVED,
    ),
    "a-class-field-is-not-pushed-down-into-a-class-that-does-not-inherit-it": MoveCase(
        {"a.py": "class StorageAgent:\n    name: str\n    xfer_descs: XferDList\n"},
        {"a.py": "class StorageAgent(ABC):\n    name: str\n",
         "b.py": "class StaticAgent:\n    xfer_descs: XferDList\n"},
        "StorageAgent.xfer_descs", Verdict.REMOVED,
    ),
    "a-class-field-is-not-pushed-down-under-another-type": MoveCase(
        {"a.py": "class StorageAgent:\n    name: str\n    xfer_descs: XferDList\n"},
        {"a.py": "class StorageAgent(ABC):\n    name: str\n\n\n"
                 "class StaticAgent(StorageAgent):\n    xfer_descs: RegDList\n"},
        "StorageAgent.xfer_descs", Verdict.REMOVED,
    ),
    "a-class-attribute-renamed-in-its-class-with-its-value-moves-to-the-new-name": MoveCase(
        {"a.py": f"class EmbeddingModel(Base):\n    weight_mapper = {MAPPER}\n"},
        {"a.py": f"class EmbeddingModel(Base):\n    hf_to_vllm_mapper = {MAPPER}\n"},
        "EmbeddingModel.weight_mapper", Verdict.MOVED, "a.py::EmbeddingModel.hf_to_vllm_mapper",
    ),
    "a-class-attribute-renamed-in-its-class-and-in-its-value-moves-to-the-new-name": MoveCase(
        {"a.py": f"class ScoreModel(Base):\n    weight_mapper = {MAPPER} | Other.weight_mapper\n"},
        {"a.py": f"class ScoreModel(Base):\n"
                 f"    hf_to_vllm_mapper = {MAPPER} | Other.hf_to_vllm_mapper\n"},
        "ScoreModel.weight_mapper", Verdict.MOVED, "a.py::ScoreModel.hf_to_vllm_mapper",
    ),
    "a-class-attribute-of-a-value-that-says-little-is-not-renamed": MoveCase(
        {"a.py": "class EmbeddingModel(Base):\n    is_pooling = True\n"},
        {"a.py": "class EmbeddingModel(Base):\n    supports_lora = True\n"},
        "EmbeddingModel.is_pooling", Verdict.REMOVED,
    ),
    "a-class-attribute-whose-value-two-new-ones-have-is-not-renamed": MoveCase(
        {"a.py": f"class EmbeddingModel(Base):\n    weight_mapper = {MAPPER}\n"},
        {"a.py": f"class EmbeddingModel(Base):\n    hf_to_vllm_mapper = {MAPPER}\n"
                 f"    lora_mapper = {MAPPER}\n"},
        "EmbeddingModel.weight_mapper", Verdict.REMOVED,
    ),
    "local-functions-of-one-file-hoisted-into-one-move-there": MoveCase(
        {"a.py": "def select_fp4(kernel, platform):\n" + RETURN_OR_RAISE
                 + "    return _return_or_raise(None, 'fp4')\n\n\n"
                 + "def select_fp8(kernel, platform):\n" + RETURN_OR_RAISE
                 + "    return _return_or_raise(None, 'fp8')\n"},
        {"a.py": "def select_fp4(kernel, platform):\n    return _return_or_raise(None, 'fp4')\n"
                 "\n\ndef select_fp8(kernel, platform):\n"
                 "    return _return_or_raise(None, 'fp8')\n\n\n"
                 + textwrap.dedent(RETURN_OR_RAISE).replace("(backend, reason)",
                                                            "(backend, reason, kernel, platform)")},
        "select_fp4.<locals>._return_or_raise", Verdict.MOVED, "a.py::_return_or_raise",
    ),
    "a-member-follows-its-class-not-a-class-tied-with-it": MoveCase(
        {"a.py": CONNECTOR.format(name="SparseBackend") + GET_NAME.format(name="SPARSE")},
        {"a.py": "class _SparseBackendBase:\n" + GET_NAME.format(name="SPARSE") + "\n\n"
                 + CONNECTOR.format(name="SparseTRTBackend"),
         "b.py": CONNECTOR.format(name="FlashSparseBackend") + GET_NAME.format(name="FLASH")},
        "SparseBackend.get_name", Verdict.MOVED, "a.py::_SparseBackendBase.get_name",
    ),
    "a-member-follows-its-class-into-the-copies-that-have-it": MoveCase(
        {"a.py": CONNECTOR.format(name="Model") + FINALIZE},
        {"amd/a.py": CONNECTOR.format(name="Model")} | {
         f"{platform}/a.py": MEGA_MOE_CONNECTOR.format(name="Model") + FINALIZE
         for platform in ("nvidia", "xpu")},
        "Model.finalize_weights", Verdict.MOVED, "nvidia/a.py::Model.finalize_weights",
        candidates=frozenset({"xpu/a.py::Model.finalize_weights"}),
    ),
    "a-member-follows-its-class-into-a-copy-behind-a-class-of-another-name": MoveCase(
        {"a.py": CONNECTOR.format(name="Model") + FINALIZE},
        {"amd/a.py": CONNECTOR.format(name="Model"),
         "nvidia/a.py": MEGA_MOE_CONNECTOR.format(name="Model") + FINALIZE,
         "amd/b.py": CONNECTOR.replace(
             "self.pending.clear()",
             "self.pending.clear()\n        self.stats.record(len(blocks), request_id, "
             "forward_context)").format(name="ModelV2") + FINALIZE},
        "Model.finalize_weights", Verdict.MOVED, "nvidia/a.py::Model.finalize_weights",
    ),
    "a-method-renamed-in-its-class-moves-on-less-evidence": MoveCase(
        {"a.py": "class EplbState:\n" + INIT_RECORD},
        {"a.py": "class EplbState:\n" + PROPAGATE_SHARED},
        "EplbState.init_record", Verdict.MOVED, "a.py::EplbState.propagate_shared",
    ),
    "a-function-renamed-in-its-file-needs-the-usual-evidence": MoveCase(
        {"a.py": textwrap.dedent(INIT_RECORD)}, {"a.py": textwrap.dedent(PROPAGATE_SHARED)},
        "init_record", Verdict.REMOVED, candidates=frozenset({"a.py::propagate_shared"}),
    ),
    "a-local-function-renamed-in-its-function-needs-the-usual-evidence": MoveCase(
        {"a.py": "def setup(model):\n" + textwrap.indent(textwrap.dedent(INIT_RECORD), "    ")
                 + "    return None\n"},
        {"a.py": "def setup(model):\n" + textwrap.indent(textwrap.dedent(PROPAGATE_SHARED),
                                                         "    ") + "    return None\n"},
        "setup.<locals>.init_record", Verdict.REMOVED,
        candidates=frozenset({"a.py::setup.<locals>.propagate_shared"}),
    ),
    "a-module-logger-follows-its-file": MoveCase(
        {"a.py": LOGGER + KERNEL.format(name="serve_tokens")},
        {"serve/a.py": LOGGER + KERNEL.format(name="serve_tokens"), "b.py": LOGGER},
        "logger", Verdict.MOVED, "serve/a.py::logger",
    ),
    "a-module-logger-its-file-dropped-takes-no-lookalike": MoveCase(
        {"a.py": LOGGER + KERNEL.format(name="serve_tokens")},
        {"a.py": KERNEL.format(name="serve_tokens"), "b.py": LOGGER, "c.py": LOGGER},
        "logger", Verdict.REMOVED, candidates=frozenset({"b.py::logger", "c.py::logger"}),
    ),
    "a-member-its-kept-class-dropped-is-no-new-classs-copy-of-code-a-kept-class-has": MoveCase(
        {"a.py": CONNECTOR.format(name="Layer") + EP_RANK.format(config="")} | KEPT_EP_RANK,
        {"a.py": CONNECTOR.format(name="Layer"),
         "lora.py": "class LoRALayer:" + EP_RANK.format(config="moe_config.")}
        | KEPT_EP_RANK,
        "Layer.ep_rank", Verdict.REMOVED, candidates=frozenset({"lora.py::LoRALayer.ep_rank"}),
    ),
    "a-member-its-kept-class-dropped-moves-to-a-new-class-no-kept-class-matches": MoveCase(
        {"a.py": CONNECTOR.format(name="Layer") + EP_RANK.format(config="")},
        {"a.py": CONNECTOR.format(name="Layer"),
         "lora.py": "class LoRALayer:" + EP_RANK.format(config="moe_config.")},
        "Layer.ep_rank", Verdict.MOVED, "lora.py::LoRALayer.ep_rank",
    ),
    "a-module-logger-two-deleted-files-had-is-neithers": MoveCase(
        {"a.py": GET_LOGGER + KERNEL.format(name="serve_tokens"),
         "b.py": GET_LOGGER + KDA.format(name="Attention", bases="nn.Module")},
        {"c.py": GET_LOGGER + CONNECTOR.format(name="MPConnector")},
        "logger", Verdict.REMOVED, candidates=frozenset({"c.py::logger"}),
    ),
    "a-module-logger-of-files-merged-in-one-follows-its-file": MoveCase(
        {"a.py": GET_LOGGER + KERNEL.format(name="serve_tokens"),
         "b.py": GET_LOGGER + KDA.format(name="Attention", bases="nn.Module")},
        {"c.py": GET_LOGGER + KERNEL.format(name="serve_tokens") + "\n\n"
                 + KDA.format(name="Attention", bases="nn.Module")},
        "logger", Verdict.MOVED, "c.py::logger",
    ),
    "a-module-logger-its-kept-file-imports-is-its-own": MoveCase(
        {"a.py": GET_LOGGER + KERNEL.format(name="serve_tokens"),
         "b.py": GET_LOGGER + KDA.format(name="Attention", bases="nn.Module")},
        {"a.py": "from c import logger\n\n\n" + KERNEL.format(name="serve_tokens"),
         "c.py": GET_LOGGER + CONNECTOR.format(name="MPConnector")},
        "logger", Verdict.MOVED, "c.py::logger",
    ),
    "a-module-constant-of-a-file-split-in-copies-lists-each-copy": MoveCase(
        {"a.py": SCALE_RE + KERNEL.format(name="serve_tokens") + "\n\n" + CONNECTOR.format(
            name="MPConnector")},
        {f"{platform}/a.py": SCALE_RE + KERNEL.format(name="serve_tokens") + "\n\n"
         + CONNECTOR.format(name="MPConnector") for platform in ("amd", "nvidia")}
        | {"b.py": SCALE_RE},  # not a copy of the file
        "_SCALE_RE", Verdict.MOVED, "amd/a.py::_SCALE_RE",
        candidates=frozenset({"nvidia/a.py::_SCALE_RE"}),
    ),
    "a-class-of-the-same-name-elsewhere-is-no-copy": MoveCase(
        {"a.py": CONNECTOR.format(name="Config")},
        {"pkg/a.py": CONNECTOR.format(name="Config"),
         "other/b.py": "class Config:\n    def __init__(self, path):\n        self.path = path\n"},
        "Config", Verdict.MOVED, "pkg/a.py::Config",
    ),
    "class-merged-into-another-offers-it": MoveCase(
        LATENT_WRAPPER, MERGED_ATTENTION, "LatentAttentionWrapper", Verdict.REMOVED,
        candidates=frozenset({"attention.py::DeepseekV4Attention"}),
    ),
    "method-of-a-class-merged-into-another-offers-its-namesake-there": MoveCase(
        LATENT_WRAPPER, MERGED_ATTENTION, "LatentAttentionWrapper.__init__", Verdict.REMOVED,
        candidates=frozenset({"attention.py::DeepseekV4Attention.__init__"}),
    ),
    "function-is-no-method-of-another-class-by-name-alone": MoveCase(
        {"a.py": KERNEL.format(name="mhc_pre")},
        {"ops.py": "class AiterOps:\n    @staticmethod\n"
                   + textwrap.indent(KERNEL.format(name="mhc_pre").replace(
                       "mhc_pre_big_fuse_tilelang", "aiter.ops.mhc_pre"), "    "),
         "kernels/tilelang.py": KERNEL.format(name="mhc_pre_tilelang")},
        "mhc_pre", Verdict.MOVED, "kernels/tilelang.py::mhc_pre_tilelang",
    ),
    "class-of-a-deleted-file-as-like-a-kept-class-as-a-new-one-is-removed": MoveCase(
        {"a.py": TARSIER_PIXELS,
         "paligemma.py": PIXELS.format(name="PaliGemmaImagePixelInputs", field="data",
                                       channels=3)},
        {"paligemma.py": PIXELS.format(name="PaliGemmaImagePixelInputs", field="data",
                                       channels=3),
         "openvla.py": OPENVLA_PIXELS},
        "TarsierImagePixelInputs", Verdict.REMOVED,
        candidates=frozenset({"openvla.py::OpenVLAImagePixelInputs"}),
    ),
    "class-of-a-deleted-file-closer-to-a-new-one-than-any-kept-class-is-renamed": MoveCase(
        {"a.py": TARSIER_PIXELS, "video.py": VIDEO_PIXELS},
        {"video.py": VIDEO_PIXELS, "openvla.py": OPENVLA_PIXELS},
        "TarsierImagePixelInputs", Verdict.MOVED, "openvla.py::OpenVLAImagePixelInputs",
    ),
    "class-of-a-kept-file-as-like-a-kept-class-as-a-new-one-is-renamed": MoveCase(
        {"a.py": TARSIER_PIXELS + "\n\ndef kept():\n    return 1\n",
         "paligemma.py": PIXELS.format(name="PaliGemmaImagePixelInputs", field="data",
                                       channels=3)},
        {"a.py": "def kept():\n    return 1\n",
         "paligemma.py": PIXELS.format(name="PaliGemmaImagePixelInputs", field="data",
                                       channels=3),
         "openvla.py": OPENVLA_PIXELS},
        "TarsierImagePixelInputs", Verdict.MOVED, "openvla.py::OpenVLAImagePixelInputs",
    ),
}


@pytest.mark.parametrize("case", MOVES.values(), ids=MOVES.keys())
def test_a_whole_version_diff_matches_each_move_as_check_does(
    build_index: Builder, case: MoveCase
) -> None:
    """The diff loads both versions at once (the unmatched pool); check matches one
    symbol with queries: the same verdicts."""
    index = build_index({"v1": case.old, "v2": case.new})
    alone = {}
    for path in case.old:
        for symbol in symbols_in_file(index.database, index.keys["v1"], path):
            match = index.match("v1", "v2", path, symbol["qualname"])
            alone[match.old.ref] = (match.verdict, match.new, match.candidates)
    diff = diff_versions(index.database, index.keys["v1"], index.keys["v2"])
    together = {m.old.ref: (m.verdict, m.new, m.candidates) for m in diff.matches}
    assert together == {ref: found for ref, found in alone.items()
                        if found[0] is not Verdict.UNCHANGED or ref in together}


@pytest.mark.parametrize("case", MOVES.values(), ids=MOVES.keys())
def test_a_matcher_a_diff_shares_with_check_answers_the_same_whichever_asks_first(
    build_index: Builder, case: MoveCase
) -> None:
    """``diff --annotated`` asks check, with the diff's matcher, whether each cited ref
    still stands: what the matcher finds of a symbol must not depend on what it was asked
    before, the whole diff or other symbols in any order (a class's methods are matched
    with it, `_where_methods_went`, then forgotten)."""
    index = build_index({"v1": case.old, "v2": case.new})
    keys = (index.database, index.keys["v1"], index.keys["v2"])
    symbols = [index.symbol("v1", path, row["qualname"]) for path in case.old
               for row in symbols_in_file(index.database, index.keys["v1"], path)]

    def found(matches: Iterable[Match]) -> list[tuple]:
        return [(m.old.ref, m.verdict, m.new, m.candidates) for m in matches]

    after_a_diff = Matcher(*keys)
    after_a_diff.diff()
    asked = found(map(after_a_diff.match, symbols))
    assert found(map(Matcher(*keys).match, symbols)) == asked
    assert found(map(Matcher(*keys).match, symbols[::-1])) == asked[::-1]


@pytest.mark.parametrize("case", MOVES.values(), ids=MOVES.keys())
@pytest.mark.parametrize("diff_first", [True, False], ids=["diff-first", "symbols-first"])
def test_a_matcher_asked_about_symbols_and_a_whole_diff_answers_the_same_in_either_order(
    build_index: Builder, case: MoveCase, diff_first: bool
) -> None:
    """A matcher asked about single symbols (their match, where a removed one's code
    went) loads files lazily, asking A about files it does not have (the file a symbol
    moved to): a whole diff after them crashed on those (KeyError). Either order gives
    what a fresh matcher gives for each."""
    index = build_index({"v1": case.old, "v2": case.new})
    keys = (index.database, index.keys["v1"], index.keys["v2"])
    symbols = [index.symbol("v1", path, row["qualname"]) for path in case.old
               for row in symbols_in_file(index.database, index.keys["v1"], path)]

    def diffed(matcher: Matcher) -> tuple:
        found = matcher.diff()
        return (found.counts, found.packages, found.added,
                [(m.old.ref, m.verdict, m.new, m.candidates) for m in found.matches])

    def asked(matcher: Matcher) -> list[tuple]:
        return [(m.verdict, m.new, m.candidates, matcher.where_code_went([symbol])
                 if m.verdict is Verdict.REMOVED else ())
                for symbol in symbols for m in [matcher.match(symbol)]]

    both = Matcher(*keys)
    if diff_first:
        assert (diffed(both), asked(both)) == (diffed(Matcher(*keys)), asked(Matcher(*keys)))
    else:
        assert (asked(both), diffed(both)) == (asked(Matcher(*keys)), diffed(Matcher(*keys)))


@pytest.mark.parametrize("case", MOVES.values(), ids=MOVES.keys())
def test_moves(build_index: Builder, case: MoveCase) -> None:
    index = build_index({"v1": case.old, "v2": case.new})
    match = index.match("v1", "v2", "a.py", case.qualname)
    assert match.verdict is case.verdict
    if case.verdict is Verdict.REMOVED:
        assert match.new is None
    elif case.moved_to is None:
        assert match.new is not None and match.new.ref == f"a.py::{case.qualname}"
    else:
        assert match.new.ref == case.moved_to
    assert refs(match.candidates) == case.candidates


FP8_INLINED_IN_A_CLASSMETHOD = """\
class FlashBackend:
    @classmethod
    def supports_dtype(cls, dtype) -> bool:
        if dtype in ("fp8", "fp8_e4m3"):
            if current_platform.is_xpu():
                return True
            return (
                get_flash_attn_version() == 3
                and current_platform.is_device_capability_family(90)
            )
        return dtype in ["auto", "float16", "bfloat16"]
"""
HEAD = """\
def head_reduce(states, weights, scale, bias, eps):
    flat = states.flatten(1).float()
    mixes = F.linear(flat, weights) * torch.rsqrt(flat.square().mean(-1) + eps)
    gates = torch.sigmoid(mixes * scale + bias)
    return torch.sum(gates.unsqueeze(-1) * flat, dim=1)
"""
HEAD_OP = """\
class HeadOp(CustomOp):
    def forward_cuda(self, states, weights, scale, bias, eps):
        flat = states.flatten(1).float()
        mixes = F.linear(flat, weights) * torch.rsqrt(flat.square().mean(-1) + eps)
        return fused_head(flat, mixes)

    def forward_xpu(self, states, weights, scale, bias, eps):
        flat = states.flatten(1).float()
        mixes = F.linear(flat, weights) * torch.rsqrt(flat.square().mean(-1) + eps)
        return xpu_head(flat, mixes)
"""
KEPT = "def keep():\n    return 1\n"
HELD_BEFORE = "def held(states, weights, eps):\n" + HEAD.split(":\n", 1)[1]
HEAD_METHOD = "".join(f"    {line}\n" for line in HEAD.replace("(states", "(self, states")
                      .splitlines())
OLD_HEAD = "class OldHead:\n    size = 1\n\n" + HEAD_METHOD + "".join(
    f"\n    def old_{number}(self, value):\n        return value.reshape(-1, {number}) + 1\n"
    for number in range(4))
NEW_HEAD = "class NewHead(Base):\n    kind = 'x'\n\n" + HEAD_METHOD.replace(
    "return torch", "log(flat)\n        return torch") + "".join(
    f"\n    def new_{number}(self, other):\n        return other.permute({number}, 0).sum()\n"
    for number in range(4))


EPLB_STATE = """\
def {name}(
    self,
    expert_load_view: torch.Tensor,
    logical_to_physical_map: torch.Tensor,
) -> None:
    {body}"""
HC_HEAD = """\
def hc_head(
    hidden_states: torch.Tensor,
    hc_fn: torch.Tensor,
    rms_norm_eps: float,
) -> torch.Tensor:
    return hidden_states.flatten(1).float()
"""
HC_HEAD_OP = """\
class HCHeadOp(CustomOp):
    def forward_native(
        self,
        hidden_states: torch.Tensor,
        hc_fn: torch.Tensor,
        rms_norm_eps: float,
        out: torch.Tensor,
    ) -> None:
        torch.ops.vllm.hc_head_reduce(hidden_states, hc_fn, rms_norm_eps, out)
"""
EPLB_BODY = ("for layer_idx, layer in enumerate(self.moe_layers):\n"
             "        layer.experts.set_eplb_state(layer_idx, expert_load_view)\n")


REMAP_NAMES = """\
def remap_names(names, renames):
    for old_pattern, new_pattern in renames:
        for name in names:
            if old_pattern in name:
                name = name.replace(old_pattern, new_pattern)
"""
MTP_MODEL = """\
class MTPModel:
    def load_weights(self, weights):
        def _remap_weight_name(name):
            for old_pattern, new_pattern in self.renames:
                if old_pattern in name:
                    name = name.replace(old_pattern, new_pattern)
            return name

        return self.loader.load((_remap_weight_name(name), tensor) for name, tensor in weights)
"""


@dataclass(frozen=True)
class WentCase:
    """Where the code of ``a.py::qualname``, removed at v2, went, if anywhere."""

    old: dict[str, str]
    new: dict[str, str]
    qualname: str
    went_to: tuple[str, ...] = ()


WENT_TO = {
    "function-inlined-into-a-method": WentCase(
        {"a.py": SUPPORTS_FP8 + KEPT, "b.py": "class FlashBackend:\n    pass\n"},
        {"a.py": KEPT, "b.py": FP8_INLINED_IN_A_CLASSMETHOD}, "supports_fp8",
        ("b.py::FlashBackend.supports_dtype",),
    ),
    "function-became-methods-of-a-class": WentCase(
        {"a.py": HEAD + KEPT}, {"a.py": KEPT, "ops.py": HEAD_OP}, "head_reduce",
        ("ops.py::HeadOp",),
    ),
    "function-copied-into-per-platform-files": WentCase(
        {"a.py": HEAD + KEPT},
        {"a.py": KEPT, "amd/ops.py": HEAD_OP.replace("HeadOp", "AmdHeadOp"),
         "xpu/ops.py": HEAD_OP.replace("HeadOp", "XpuHeadOp")},
        "head_reduce", ("amd/ops.py::AmdHeadOp", "xpu/ops.py::XpuHeadOp"),
    ),
    "lines-a-definition-held-before-say-nothing": WentCase(
        {"a.py": HEAD + KEPT, "b.py": HELD_BEFORE},
        {"a.py": KEPT, "b.py": HELD_BEFORE.replace("    return", "    log(flat)\n    return")},
        "head_reduce",
    ),
    "lines-a-definition-held-before-its-file-moved-say-nothing": WentCase(
        {"a.py": HEAD + KEPT, "b.py": HELD_BEFORE},
        {"a.py": KEPT, "c.py": HELD_BEFORE.replace("    return", "    log(flat)\n    return")},
        "head_reduce",
    ),
    "lines-a-definition-held-before-it-was-renamed-say-nothing": WentCase(
        {"a.py": HEAD + KEPT, "b.py": HELD_BEFORE},
        {"a.py": KEPT, "b.py": HELD_BEFORE.replace("def held", "def kept_held")},
        "head_reduce",
    ),
    "lines-a-method-held-before-as-a-function-say-nothing-of-its-new-class": WentCase(
        {"a.py": HEAD + KEPT, "b.py": HELD_BEFORE},
        {"a.py": KEPT, "b.py": "class Holder:\n" + "".join(
            f"    {line}\n" for line in HELD_BEFORE.replace("(states", "(self, states")
            .splitlines())},
        "head_reduce",
    ),
    "a-class-whose-method-moved-into-a-new-one-in-its-file-went-there": WentCase(
        {"a.py": OLD_HEAD + KEPT}, {"a.py": KEPT + "\n\n" + NEW_HEAD}, "OldHead",
        ("a.py::NewHead.head_reduce",),
    ),
    "lines-a-class-held-before-it-was-split-in-copies-say-nothing-of-its-copies": WentCase(
        {"a.py": REMAP_NAMES + KEPT, "mtp.py": MTP_MODEL},
        {"a.py": KEPT,
         **{f"{platform}/mtp.py": MTP_MODEL for platform in ("amd", "nvidia", "xpu")}},
        "remap_names",
    ),
    "boilerplate-lines-say-nothing": WentCase(
        {"a.py": HEAD + KEPT},
        {"a.py": KEPT, **{f"m{number}.py": HEAD_OP for number in range(6)}}, "head_reduce",
    ),
    "two-lines-of-many-are-no-evidence": WentCase(
        {"a.py": HEAD.replace("    return", "    gates = gates.clamp(min=0.01, max=0.99)\n"
                              "    bias = bias.to(states.dtype)\n"
                              "    scale = scale.to(states.dtype)\n"
                              "    weights = weights.to(states.device)\n"
                              "    flat = flat.contiguous().clone()\n    return") + KEPT},
        {"a.py": KEPT, "ops.py": HEAD_OP.split("\n\n")[0]}, "head_reduce",
    ),
    "one-line-says-where-only-in-a-definition-of-its-name": WentCase(
        {"a.py": "def prompt_text(server, prompt):\n"
                 "    return server.extract_components(prompt).text\n\n\n" + KEPT},
        {"a.py": KEPT, "b.py": "def render(server, prompt, extra):\n    log(extra)\n"
                               "    return server.extract_components(prompt).text\n"},
        "prompt_text",
    ),
    "places-holding-different-lines-need-three-each": WentCase(
        {"a.py": "def ensure(self, index):\n"
                 "    while len(self.streamed_args) <= index:\n"
                 "        self.streamed_args.append('')\n"
                 "    while len(self.prev_tool_calls) <= index:\n"
                 "        self.prev_tool_calls.append({})\n\n\n" + KEPT},
        {"a.py": KEPT,
         "b.py": "def grow(self, index):\n    while len(self.streamed_args) <= index:\n"
                 "        self.streamed_args.append('')\n    return index\n",
         "c.py": "def extend(self, index):\n    while len(self.prev_tool_calls) <= index:\n"
                 "        self.prev_tool_calls.append({})\n    return index\n"},
        "ensure",
    ),
    "short-lines-say-nothing": WentCase(
        {"a.py": "def is_tpu():\n    x = None\n    return x\n\n\n" + KEPT},
        {"a.py": KEPT, "b.py": "def tpu():\n    x = None\n    return x\n"}, "is_tpu",
    ),
    "lines-many-files-held-before-are-boilerplate-though-gone-from-them": WentCase(
        {"a.py": HEAD + KEPT,
         **{f"m{number}.py": HEAD.replace("head_reduce", f"head_{number}") for number in range(6)}},
        {"a.py": KEPT, "ops.py": HEAD_OP,
         **{f"m{number}.py": f"def head_{number}(states):\n    return HeadOp()(states)\n"
            for number in range(6)}},
        "head_reduce",
    ),
    "its-parameters-say-nothing": WentCase(
        {"a.py": EPLB_STATE.format(name="set_eplb_state", body=EPLB_BODY) + KEPT},
        {"a.py": KEPT, "b.py": EPLB_STATE.format(name="set_layer_state",
                                                 body="self.view = expert_load_view\n")},
        "set_eplb_state",
    ),
    "its-parameters-say-nothing-but-its-body-does": WentCase(
        {"a.py": EPLB_STATE.format(name="set_eplb_state", body=EPLB_BODY) + KEPT},
        {"a.py": KEPT, "b.py": EPLB_STATE.format(name="set_layer_state", body=EPLB_BODY + "".join(
            f"    self.runners[{number}].sync(logical_to_physical_map, {number} + 1)\n"
            for number in range(6)))},
        "set_eplb_state", ("b.py::set_layer_state",),
    ),
    "three-of-its-parameters-say-where": WentCase(
        {"a.py": HC_HEAD + KEPT}, {"a.py": KEPT, "mhc.py": HC_HEAD_OP}, "hc_head",
        ("mhc.py::HCHeadOp.forward_native",),
    ),
    "an-attributes-one-line-says-where-only-in-its-file": WentCase(
        {"a.py": "class MoeBackend(Enum):\n    CUTLASS = 'CUTLASS'\n    TRTLLM = 'TRTLLM'\n"},
        {"a.py": "class MoeBackend(Enum):\n    TRTLLM = 'TRTLLM'\n",
         "b.py": "class W4A8Backend(Enum):\n    CUTLASS = 'CUTLASS'\n    MARLIN = 'MARLIN'\n"},
        "MoeBackend.CUTLASS",
    ),
    "an-attributes-one-line-in-a-class-holding-another-of-its-class-went-there": WentCase(
        {"a.py": "class SparseMeta:\n    block_table: torch.Tensor\n"
                 "    c128a_topk_lens: torch.Tensor | None = None\n"
                 "    c128a_topk_indices: torch.Tensor | None = None\n"},
        {"a.py": "class SparseMeta:\n    block_table: torch.Tensor\n",
         "b.py": "class V4Meta(Meta):\n    slot_mapping: torch.Tensor\n"
                 "    c128a_topk_lens: torch.Tensor | None = None\n"
                 "    c128a_topk_indices: torch.Tensor | None = None\n"},
        "SparseMeta.c128a_topk_lens", ("b.py::V4Meta.c128a_topk_lens",),
    ),
    "an-attributes-one-line-in-another-class-of-its-file-went-there": WentCase(
        {"a.py": "class ReqMeta:\n    req_id: str\n    filename: str\n    new_req: bool\n"},
        {"a.py": "class ReqMeta:\n    req_id: str\n    new_req: bool\n\n\n"
                 "class PendingSave:\n    filename: str\n    block_ids: list[int]\n"},
        "ReqMeta.filename", ("a.py::PendingSave.filename",),
    ),
}


@pytest.mark.parametrize("case", WENT_TO.values(), ids=WENT_TO.keys())
def test_where_a_removed_symbols_code_went(build_index: Builder, case: WentCase) -> None:
    index = build_index({"v1": case.old, "v2": case.new})
    matcher = Matcher(index.database, index.keys["v1"], index.keys["v2"])
    old = index.symbol("v1", "a.py", case.qualname)
    assert matcher.match(old).verdict is Verdict.REMOVED
    [went] = matcher.where_code_went([old])
    assert tuple(symbol.ref for symbol in went) == case.went_to


@pytest.mark.parametrize("case", WENT_TO.values(), ids=WENT_TO.keys())
def test_a_history_ends_where_the_removed_symbols_code_went(
    build_index: Builder, case: WentCase
) -> None:
    index = build_index({"v1": case.old, "v2": case.new})
    old = index.symbol("v1", "a.py", case.qualname)
    *_, last = history(index.database, "vllm", old, list(index.keys.items()))
    assert (last.version, last.event, last.symbol) == ("v2", HistoryEvent.REMOVED, None)
    assert tuple(symbol.ref for symbol in last.code_went_to) == case.went_to


@pytest.mark.parametrize("case", WENT_TO.values(), ids=WENT_TO.keys())
def test_where_the_code_of_all_removed_symbols_went_is_where_each_ones_went(
    build_index: Builder, case: WentCase
) -> None:
    """`Matcher.where_code_went`, asked about every removed symbol at once (a whole-version
    diff, a check), finds for each the places it finds of each alone."""
    index = build_index({"v1": case.old, "v2": case.new})
    keys = (index.database, index.keys["v1"], index.keys["v2"])
    each = Matcher(*keys)
    removed = [match.old for match in each.diff().matches if match.verdict is Verdict.REMOVED]
    assert case.qualname in {old.qualname for old in removed}
    at_once = Matcher(*keys).where_code_went(removed)
    assert [tuple(symbol.ref for symbol in went) for went in at_once] == [
        tuple(symbol.ref for symbol in each.where_code_went([old])[0]) for old in removed]


@pytest.mark.parametrize(("room", "read_again"), [
    pytest.param(12, [], id="room-for-both"),
    pytest.param(11, ["b.py"], id="room-for-one"),
])
def test_blobs_read_in_bulk_are_kept_while_there_is_room(
    build_index: Builder, monkeypatch: pytest.MonkeyPatch, room: int, read_again: list[str]
) -> None:
    """A diff reads the changed files in bulk for their usage, again for where removed
    code went, and one by one for symbols' sources (1,423 blobs of vLLM v0.20.0 ->
    v0.25.0 decompressed twice): ``contents`` keeps them for ``content``, evicting none."""
    index = build_index({"v1": {"a.py": "A = 1\n", "b.py": "B = 2\n"}})
    blobs = dict(index.database.conn.execute(
        "SELECT path, blob_id FROM files WHERE version_id = ?", (index.keys["v1"],)))
    read: list[str] = []
    real = mq.blob_contents

    def recorded(database: Database, blob_ids: Iterable[str]) -> dict[str, bytes]:
        wanted = list(blob_ids)
        read.extend(path for path, blob in sorted(blobs.items()) if blob in wanted)
        return real(database, wanted)

    monkeypatch.setattr(mq, "blob_contents", recorded)
    store = SourceStore(index.database, max_bytes=room)
    assert store.contents([blobs["a.py"], blobs["b.py"]]) == {
        blobs["a.py"]: b"A = 1\n", blobs["b.py"]: b"B = 2\n"}
    assert [store.content(blobs[path]) for path in ("a.py", "b.py")] == [b"A = 1\n",
                                                                          b"B = 2\n"]
    assert read == ["a.py", "b.py", *read_again]


@pytest.mark.parametrize(("room", "reads", "read_from_the_index"), [
    pytest.param(300, "abcab", "abc", id="room-for-all-read-once"),
    pytest.param(250, "abca", "abca", id="the-oldest-forgotten-first"),
    pytest.param(250, "abcc", "abc", id="the-newest-kept"),
    pytest.param(250, "aba", "ab", id="room-for-two-of-100-bytes"),
    pytest.param(250, "abdab", "abd", id="a-file-larger-than-the-room-evicts-nothing"),
    pytest.param(99, "aa", "aa", id="a-file-larger-than-the-room-never-kept"),
])
def test_the_contents_kept_are_bounded_in_bytes(
    build_index: Builder, monkeypatch: pytest.MonkeyPatch, room: int, reads: str,
    read_from_the_index: str
) -> None:
    """A diff's store kept 4,096 files whatever their size: of large files (generated
    tables, vendored code), far more than the memory meant for them. It keeps contents
    up to ``max_bytes`` in all, forgetting the oldest first."""
    files = {f"{name}.py": f"{name.upper()} = '{'x' * (size - 7)}'\n"
             for name, size in (("a", 100), ("b", 100), ("c", 100), ("d", 300))}
    assert [len(text) for text in files.values()] == [100, 100, 100, 300]
    index = build_index({"v1": files})
    blobs = dict(index.database.conn.execute(
        "SELECT blob_id, path FROM files WHERE version_id = ?", (index.keys["v1"],)))
    read: list[str] = []
    real = mq.blob_contents

    def recorded(database: Database, blob_ids: Iterable[str]) -> dict[str, bytes]:
        wanted = list(blob_ids)
        read.extend(blobs[blob][0] for blob in wanted)
        return real(database, wanted)

    monkeypatch.setattr(mq, "blob_contents", recorded)
    store = SourceStore(index.database, max_bytes=room)
    by_name = {path[0]: blob for blob, path in blobs.items()}
    assert [store.content(by_name[name]) for name in reads] == [
        files[f"{name}.py"].encode() for name in reads]
    assert "".join(read) == read_from_the_index


def test_a_line_index_places_and_counts_the_lines_it_is_asked_about_alone() -> None:
    """An index of the lines some removed symbols ask about keeps those alone (one of
    every line of B's changed files cost a second of CPU at vLLM v0.20.0 -> v0.25.0): the
    places of those taken, and whether each is boilerplate, held by more than
    ``MAX_FILES`` files, counted at both versions, taken or not."""
    from annotations.code_lines import LinePlaces

    shared, taken = "flat = states.flatten(1).float()", "mixes = F.linear(flat, weights)"
    gone = "scale = quant_config.get_cache_scale(name)"
    files = [(f"m{number}.py", f"{shared}\n{taken}\nnot_taken_{number} = untouched()\n",
              b"\x01\x01\x00", f"{gone}\n" if number < 5 else "") for number in range(6)]
    files.append(("solo.py", f"{taken}\nsolo_taken = only_here(1)\n{gone}\n", b"\x01\x01\x01",
                  ""))
    solo = "solo_taken = only_here(1)"
    asked = [shared, taken, "not_taken_1 = untouched()", solo, gone]
    some = LinePlaces(files, frozenset(asked))
    assert {line for held in vars(some).values() for line in held} <= set(asked)
    assert [some.places(line) for line in asked] == [[], [], [], [("solo.py", 2)], []]
    assert some.distinctive("\n".join(asked)) == ["not_taken_1 = untouched()", solo]


@pytest.mark.parametrize("class_first", [True, False], ids=["class-first", "method-first"])
def test_a_method_of_a_class_left_as_a_factory_is_matched_as_a_member(
    build_index: Builder, class_first: bool
) -> None:
    """Searching where the class went matches its methods as if it was removed; when it
    stays (changed) at its place, they are matched again as its members."""
    index = build_index({
        "v1": {"a.py": "class FusedMoE:\n    def tp_size(self):\n        return self.tp\n"},
        "v2": {"a.py": "def FusedMoE():\n    return None\n",
               "b.py": "class Experts:\n    def tp_size(self):\n        return self.tp\n"},
    })
    matcher = Matcher(index.database, index.keys["v1"], index.keys["v2"])
    cls, method = (index.symbol("v1", "a.py", name) for name in ("FusedMoE", "FusedMoE.tp_size"))
    if class_first:
        assert matcher.match(cls).verdict is Verdict.CHANGED
    match = matcher.match(method)
    assert (match.verdict, match.new.ref) == (Verdict.MOVED, "b.py::Experts.tp_size")
    assert matcher.match(cls).verdict is Verdict.CHANGED


@pytest.mark.parametrize("factory_first", [True, False], ids=["factory-first", "alone"])
def test_a_method_of_a_class_left_as_a_factory_contests_no_deleted_classs_method(
    build_index: Builder, factory_first: bool
) -> None:
    """While its class is searched for, the method of a class whose place now holds a
    function is matched as an orphan; it is a member of a class that lives on, whatever
    was matched first, so the deleted model's ``forward`` keeps its move."""
    index = build_index({
        "v1": {"a.py": "class QwenVLModel:\n" + FORWARD,
               "b.py": "class AyaVisionModel:\n" + FORWARD.replace("n_splits)\n",
                                                                  "n_splits, 1)\n")},
        "v2": {"a.py": "def QwenVLModel(config):\n    return build_model(config)\n",
               "c.py": "class MossAudioModel:\n" + FORWARD.replace("return out",
                                                                   "return out.t()")},
    })
    matcher = Matcher(index.database, index.keys["v1"], index.keys["v2"])
    if factory_first:
        assert matcher.match(index.symbol("v1", "a.py", "QwenVLModel")).verdict is (
            Verdict.CHANGED)
    match = matcher.match(index.symbol("v1", "b.py", "AyaVisionModel.forward"))
    assert (match.verdict, match.new.ref) == (Verdict.MOVED, "c.py::MossAudioModel.forward")


@pytest.mark.parametrize("class_first", [True, False], ids=["class-first", "method-first"])
def test_the_methods_of_a_class_that_followed_them_are_matched_as_its_members(
    build_index: Builder, class_first: bool
) -> None:
    """Searching where a renamed class went matches its methods as orphans; once it follows
    them, they are matched again as its members, a property's setter (the second definition
    of its name) too, whichever is matched first."""
    index = build_index({
        "v1": {"a.py": KDA.format(name="KimiDeltaAttention", bases="nn.Module, MambaBase")
               + WINDOW},
        "v2": {"gdn/kimi.py": KDA.format(name="KimiGatedDeltaNetAttention",
                                         bases="GatedDeltaNetAttention") + WINDOW},
    })
    matcher = Matcher(index.database, index.keys["v1"], index.keys["v2"])
    cls = index.symbol("v1", "a.py", "KimiDeltaAttention")
    methods = [index.symbol("v1", "a.py", qualname, occurrence) for qualname, occurrence in (
        ("KimiDeltaAttention.__init__", 0), ("KimiDeltaAttention.window", 0),
        ("KimiDeltaAttention.window", 1))]
    if class_first:
        assert matcher.match(cls).verdict is Verdict.MOVED
    matches = [matcher.match(method) for method in methods]
    moved = matcher.match(cls)
    assert (moved.verdict, moved.new.ref, moved.via) == (
        Verdict.MOVED, "gdn/kimi.py::KimiGatedDeltaNetAttention", "methods")
    assert [(m.verdict, m.new and m.new.ref, m.new and m.new.occurrence, m.via, m.score)
            for m in matches] == [
        (Verdict.MOVED, f"gdn/kimi.py::KimiGatedDeltaNetAttention.{name}", occurrence,
         "parent", moved.score)
        for name, occurrence in (("__init__", 0), ("window", 0), ("window", 1))]


def test_a_file_moved_among_same_named_files_prefers_the_deepest_shared_path(
    build_index: Builder
) -> None:
    """serve/sleep/api_router.py -> serve/dev/sleep/api_router.py, not the alphabetically
    first dev/cache/api_router.py: still an ambiguous move (the copies are identical)."""
    router = KERNEL.format(name="attach_router")
    index = build_index({
        "v1": {"serve/sleep/api_router.py": router},
        "v2": {f"serve/dev/{name}/api_router.py": router for name in ("cache", "sleep")},
    })
    match = index.match("v1", "v2", "serve/sleep/api_router.py", "attach_router")
    assert match.new.ref == "serve/dev/sleep/api_router.py::attach_router"
    assert refs(match.candidates) == {"serve/dev/cache/api_router.py::attach_router"}


def test_classify_directly_on_snapshots(build_index: Builder) -> None:
    index = build_index({"v1": {"a.py": "def f(a):\n    return a\n"},
                                   "v2": {"b.py": "def f(a, b=2):\n    return a\n"}})
    old, new = index.symbol("v1", "a.py", "f"), index.symbol("v2", "b.py", "f")
    verdict, changes = classify(old, new)
    assert verdict is Verdict.CHANGED
    assert changes == (SignatureChange("def f(a)", "def f(a, b=2)", ("parameters",)),)


# (old, new, the signature's parts that changed): a part keyed in its def line, whose
# parameter list and generic types are no tuples, as the tree reads them.
SIGNATURE_PARTS = {
    "returns-type-comma-dropped-beside-a-new-parameter": (
        "def f(a) -> Optional[\n    int,\n]:\n    return a\n",
        "def f(a, b=2) -> Optional[int]:\n    return a\n", ("parameters",)),
    "one-parameter-split-beside-a-new-return-type": (
        "def f(\n    a,\n) -> int:\n    return a\n",
        "def f(a) -> str:\n    return a\n", ("returns",)),
    "one-tuple-default-unwrapped-beside-a-new-return-type": (
        "def f(a=(\n    1,\n)) -> int:\n    return a\n",
        "def f(a=(1)) -> str:\n    return a\n", ("parameters", "returns")),
}


@pytest.mark.parametrize(("old", "new", "parts"), SIGNATURE_PARTS.values(),
                         ids=SIGNATURE_PARTS.keys())
def test_signature_parts_changed(
    build_index: Builder, old: str, new: str, parts: tuple[str, ...]
) -> None:
    index = build_index({"v1": {"a.py": old}, "v2": {"a.py": new}})
    _, changes = classify(index.symbol("v1", "a.py", "f"), index.symbol("v2", "a.py", "f"))
    (change,) = changes
    assert isinstance(change, SignatureChange) and change.parts == parts


# --- history --------------------------------------------------------------------------

STEP = "def step(batch):\n    return [run(item) for item in batch]\n"


def test_history_follows_moves_until_removed(build_index: Builder) -> None:
    index = build_index({
        "v1": {"a.py": STEP, "z.py": "Z = 1\n"},
        "v2": {"a.py": STEP, "z.py": "Z = 2\n"},
        "v3": {"b/a.py": STEP},
        "v4": {"b/a.py": STEP.replace("# ", "").replace("batch]", "batch if item]")},
        "v5": {"b/a.py": "X = 1\n"},
    })
    versions = list(index.keys.items())
    steps = history(index.database, "vllm", index.symbol("v3", "b/a.py", "step"), versions)
    assert [(s.version, s.event) for s in steps] == [
        ("v1", HistoryEvent.INTRODUCED), ("v2", HistoryEvent.UNCHANGED),
        ("v3", HistoryEvent.MOVED), ("v4", HistoryEvent.CHANGED),
        ("v5", HistoryEvent.REMOVED),
    ]
    assert steps[0].symbol.ref == "a.py::step" and steps[2].symbol.ref == "b/a.py::step"
    assert steps[3].changes == (BodyChange(),) and steps[4].symbol is None


def test_history_starts_where_the_symbol_appears(build_index: Builder) -> None:
    index = build_index({"v1": {"a.py": "X = 1\n"},
                                   "v2": {"a.py": "X = 1\n" + STEP}})
    versions = list(index.keys.items())
    steps = history(index.database, "vllm", index.symbol("v2", "a.py", "step"), versions)
    assert [(s.version, s.event) for s in steps] == [("v2", HistoryEvent.INTRODUCED)]


def test_history_rejects_an_unlisted_version(build_index: Builder) -> None:
    index = build_index({"v1": {"a.py": STEP}})
    with pytest.raises(ValueError, match="not among"):
        history(index.database, "vllm", index.symbol("v1", "a.py", "step"), [])


@pytest.mark.parametrize(("old", "new", "score"), [
    pytest.param("m/a.py", "m/a.py", 1.0, id="same-file"),
    pytest.param("a.py", "m/a.py", 0.6, id="same-name-no-shared-folder"),
    pytest.param("x/sleep/r.py", "y/sleep/r.py", 0.65, id="same-name-one-shared-folder"),
    pytest.param("a/b/c/d/r.py", "z/b/c/d/r.py", 0.75, id="same-name-three-shared-folders"),
    pytest.param("p/a/b/c/r.py", "q/p/a/b/c/r.py", 0.75, id="same-name-shared-folders-capped"),
    pytest.param("m/a.py", "m/b.py", 0.4, id="same-folder"),
    pytest.param("vllm/v1/core/a.py", "vllm/v1/worker/b.py", 0.2, id="same-package"),
    pytest.param("vllm/v1/core/a.py", "lmcache/b.py", 0.0, id="unrelated"),
])
def test_path_similarity(old: str, new: str, score: float) -> None:
    assert matching._path_similarity(old, new) == pytest.approx(score)


def test_package_of() -> None:
    assert package_of("vllm/v1/core/sched/scheduler.py") == "vllm/v1"
    assert package_of("vllm/utils.py") == "vllm"
    assert package_of("setup.py") == "."


# --- the fake vLLM corpus -------------------------------------------------------------


@pytest.fixture(scope="module")
def fake_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    root = tmp_path_factory.mktemp("fake_index")
    config = load_config(root)
    database = open_database(root / "i.db")
    keys = {}
    for tag in fakevllm.TAGS:
        source = root / tag
        fakevllm.write_snapshot(source, fakevllm.VERSIONS[tag])
        index_version(database, config, "vllm", tag, from_path=source, workers=1)
        keys[tag] = require_version(database, "vllm", tag, config_name="annotate.toml")
    yield Index(database, keys)
    database.close()


@pytest.fixture(scope="module")
def fake_diffs(fake_index: Index) -> dict[tuple[str, str], matching.VersionDiff]:
    tags = fakevllm.TAGS
    return {
        (a, b): diff_versions(fake_index.database, fake_index.keys[a], fake_index.keys[b])
        for a, b in zip(tags, tags[1:], strict=False)
    }


@pytest.mark.skipif(not can_fork(), reason="needs os.fork")
@pytest.mark.parametrize("tags", [("v0.1.0", "v0.2.0"), ("v0.2.0", "v0.3.0")],
                         ids=["v0.1-v0.2", "v0.2-v0.3"])
def test_the_caller_of_a_forked_diff_does_not_match_again_what_its_workers_matched(
    tags: tuple[str, str], fake_index: Index, forks: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where a removed symbol's code went asks, in the caller, where symbols gone from
    their place went: at vLLM v0.20.0 -> v0.25.0, 350 that its workers had matched were
    matched again."""
    monkeypatch.setattr(matching, "PARALLEL_MIN_SYMBOLS", 0)
    matcher = Matcher(fake_index.database, *(fake_index.keys[tag] for tag in tags))
    found = matcher.diff(workers=3)
    assert forks, "the diff did not fork"
    matched_again: list[str] = []
    match_one = Matcher._match

    def recorded(self: Matcher, old: SymbolSnapshot) -> Match:
        matched_again.append(old.ref)
        return match_one(self, old)

    monkeypatch.setattr(Matcher, "_match", recorded)
    assert [matcher.match(match.old) for match in found.matches] == list(found.matches)
    assert matched_again == []


# Expected verdict, content verdict (for moves), kinds, for every fakevllm.CASES entry.
EXPECTED: dict[str, tuple[str, Verdict | None, tuple[ChangeKind, ...]]] = {
    "moved": ("moved", Verdict.UNCHANGED, ()),
    "moved_and_changed": ("moved", Verdict.CHANGED, (MEMBERS, BODY)),
    "renamed": ("moved", Verdict.UNCHANGED, ()),
    "signature_changed": ("changed", Verdict.CHANGED, (SIG,)),
    "body_changed": ("changed", Verdict.CHANGED, (BODY,)),
    "decorator_changed": ("changed", Verdict.CHANGED, (SIG,)),
    "bases_changed": ("changed", Verdict.CHANGED, (BASES,)),
    "member_added": ("changed", Verdict.CHANGED, (MEMBERS,)),
    "added": ("added", None, ()),
    "formatting_only": ("cosmetic", Verdict.COSMETIC, ()),
    "attribute_value_changed": ("changed", Verdict.CHANGED, (VALUE,)),
    "constant_value_changed": ("changed", Verdict.CHANGED, (VALUE,)),
    "removed": ("removed", None, ()),
    "ambiguous_move": ("moved", Verdict.CHANGED, (MEMBERS,)),
}


def test_expectations_cover_every_case() -> None:
    assert set(EXPECTED) == set(fakevllm.CASES)


@pytest.mark.parametrize("name", sorted(fakevllm.CASES))
def test_fake_vllm_case_in_version_diff(
    name: str, fake_diffs: dict[tuple[str, str], matching.VersionDiff]
) -> None:
    case = fakevllm.CASES[name]
    verdict, content, kinds = EXPECTED[name]
    diff = fake_diffs[(case.old_tag, case.new_tag)]
    expected_new = {f"{path}::{qualname}" for path, qualname in case.new}
    if case.old is None:
        assert expected_new <= refs(diff.added)
        return
    old_ref = "::".join(case.old)
    found = [match for match in diff.matches if match.old.ref == old_ref]
    assert len(found) == 1, f"{old_ref} missing from the diff's non-unchanged matches"
    match = found[0]
    assert match.verdict.value == verdict
    assert match.content is content
    assert match.kinds == kinds
    if match.new is None:
        assert not expected_new
    else:
        assert refs((match.new, *match.candidates)) == expected_new
        assert match.new.ref not in refs(diff.added)


def test_fake_vllm_decorator_change_names_the_decorators(fake_index: Index) -> None:
    match = fake_index.match("v0.1.0", "v0.2.0", "vllm/utils.py", "get_cpu_memory")
    (change,) = match.changes
    assert isinstance(change, SignatureChange) and change.parts == ("decorators",)


@pytest.mark.parametrize("name", sorted(fakevllm.FEATURES))
@pytest.mark.parametrize("tags", [("v0.1.0", "v0.2.0"), ("v0.2.0", "v0.3.0")],
                         ids=["v0.1-v0.2", "v0.2-v0.3"])
def test_fake_vllm_features_stay_unchanged(
    name: str, tags: tuple[str, str], fake_index: Index
) -> None:
    path, qualname = fakevllm.FEATURES[name]
    occurrences = 2 if name == "property_getter_setter" else 1
    for occurrence in range(occurrences):
        match = fake_index.match(*tags, path, qualname, occurrence)
        assert match.verdict is Verdict.UNCHANGED
        assert match.new.ref == f"{path}::{qualname}"
        assert match.new.occurrence == occurrence


def test_fake_vllm_diff_counts_and_packages(
    fake_diffs: dict[tuple[str, str], matching.VersionDiff]
) -> None:
    diff = fake_diffs[("v0.2.0", "v0.3.0")]
    counts = diff.counts
    assert counts["changed"] == counts["removed"] == counts["cosmetic"] == 0
    assert counts["moved"] == len(diff.having(Verdict.MOVED)) > 0
    # The nvidia and xpu copies are candidates of the ambiguous move, not additions.
    assert refs(diff.added) == {"vllm/model_executor/models/deepseek_v4.py::__all__"}
    assert diff.packages["vllm/model_executor"]["moved"] == 6
    assert sum(counts.values()) == sum(sum(c.values()) for c in diff.packages.values())


def test_a_verdict_does_not_depend_on_what_the_matcher_matched_before(build_index: Builder) -> None:
    """check reuses one matcher for its claims: a file that B has unchanged, read while
    matching one symbol (``Mover``'s copies), is no evidence against the next one."""
    index = build_index({
        "v1": {"a.py": "class OPTModel:\n" + FORWARD + LOAD_WEIGHTS,
               "m.py": CONNECTOR.format(name="Mover"),
               "u.py": "class Mover:\n    pass\n\n\nclass PhiModel:\n" + FORWARD
                       + PHI_LOAD_WEIGHTS},
        "v2": {"a.py": "class OPTModel:\n" + FORWARD,
               "c.py": "class OPTWeights:\n" + LOAD_WEIGHTS,
               "n.py": CONNECTOR.format(name="Mover"),
               "u.py": "class Mover:\n    pass\n\n\nclass PhiModel:\n" + FORWARD
                       + PHI_LOAD_WEIGHTS},
    })
    load_weights = index.symbol("v1", "a.py", "OPTModel.load_weights")
    alone = Matcher(index.database, index.keys["v1"], index.keys["v2"]).match(load_weights)
    shared = Matcher(index.database, index.keys["v1"], index.keys["v2"])
    shared.match(index.symbol("v1", "m.py", "Mover"))
    after = shared.match(load_weights)
    assert (alone.verdict, alone.new.ref) == (Verdict.MOVED, "c.py::OPTWeights.load_weights")
    assert (after.verdict, after.new, after.candidates) == (
        alone.verdict, alone.new, alone.candidates)


def test_a_file_that_did_not_change_is_counted_once_when_matching_read_it(
    build_index: Builder
) -> None:
    """The diff counts the symbols of files that B has unchanged without loading them;
    one a rule reads while matching (a base's file) is not counted again."""
    base = "class Base:\n    def setup(self):\n        return self.config\n"
    index = build_index({"v1": {"base.py": base, "a.py": KERNEL.format(name="f")},
                                   "v2": {"base.py": base, "a.py": KERNEL.format(name="g")}})
    matcher = Matcher(index.database, index.keys["v1"], index.keys["v2"])
    matcher.pool()
    assert matcher.a.has("base.py", "Base.setup")  # as a rule may, before the diff counts
    assert matcher.diff().counts == {"unchanged": 2, "cosmetic": 0, "changed": 0,
                                     "moved": 1, "removed": 0, "added": 0}


def test_fake_vllm_history_of_the_scheduler(fake_index: Index) -> None:
    symbol = fake_index.symbol("v0.2.0", "vllm/core/scheduler.py", "Scheduler")
    steps = history(fake_index.database, "vllm", symbol, list(fake_index.keys.items()))
    assert [(s.version, s.event) for s in steps] == [
        ("v0.1.0", HistoryEvent.INTRODUCED), ("v0.2.0", HistoryEvent.UNCHANGED),
        ("v0.3.0", HistoryEvent.MOVED),
    ]
    assert steps[-1].symbol.ref == "vllm/v1/core/sched/scheduler.py::Scheduler"
    assert steps[-1].match.content_changed



@pytest.mark.parametrize("module", [matching, reports], ids=["matching", "reports"])
def test_a_module_exports_only_what_it_defines(module: ModuleType) -> None:
    """A name in ``__all__`` that another module defines is one object under two import
    paths."""
    own = module.__name__
    borrowed = [name for name in module.__all__
                if getattr(getattr(module, name), "__module__", own) != own]
    assert borrowed == []
