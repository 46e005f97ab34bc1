"""Table tests pinning the conventions of the ``ast`` reference extractor."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest
from ast_reference import reference_for_tree, reference_symbols

CASES: list[tuple[str, str, list[tuple[str, str, int, int]]]] = [
    ("empty-module", "", []),
    ("module-function", "def f():\n    pass\n", [("f", "function", 1, 2)]),
    ("async-function", "async def f():\n    await g()\n", [("f", "function", 1, 2)]),
    (
        "class-with-methods",
        """
        class A:
            def m(self):
                pass

            async def am(self):
                pass
        """,
        [
            ("A", "class", 1, 6),
            ("A.m", "method", 2, 3),
            ("A.am", "method", 5, 6),
        ],
    ),
    (
        "nested-function",
        """
        def outer():
            def inner():
                def innermost():
                    pass
            return inner
        """,
        [
            ("outer", "function", 1, 5),
            ("outer.<locals>.inner", "function", 2, 4),
            ("outer.<locals>.inner.<locals>.innermost", "function", 3, 4),
        ],
    ),
    (
        "class-in-function",
        """
        def f():
            class C:
                x = 1

                def m(self):
                    y = 2
            return C
        """,
        [
            ("f", "function", 1, 7),
            ("f.<locals>.C", "class", 2, 6),
            ("f.<locals>.C.x", "attribute", 3, 3),
            ("f.<locals>.C.m", "method", 5, 6),
        ],
    ),
    (
        "function-in-method",
        """
        class A:
            def m(self):
                def helper():
                    pass
        """,
        [
            ("A", "class", 1, 4),
            ("A.m", "method", 2, 4),
            ("A.m.<locals>.helper", "function", 3, 4),
        ],
    ),
    (
        "nested-class",
        """
        class Outer:
            class Inner:
                z: int = 0

                def m(self):
                    pass
        """,
        [
            ("Outer", "class", 1, 6),
            ("Outer.Inner", "class", 2, 6),
            ("Outer.Inner.z", "attribute", 3, 3),
            ("Outer.Inner.m", "method", 5, 6),
        ],
    ),
    (
        "decorated-function-starts-at-first-decorator",
        """
        @a
        @b(1)
        def f():
            pass
        """,
        [("f", "function", 1, 4)],
    ),
    (
        "decorated-class-and-method",
        """
        @dataclass
        class A:
            @staticmethod
            def s():
                pass
        """,
        [("A", "class", 1, 5), ("A.s", "method", 3, 5)],
    ),
    (
        "property-getter-and-setter-both-kept",
        """
        class A:
            @property
            def v(self):
                return 1

            @v.setter
            def v(self, value):
                pass
        """,
        [
            ("A", "class", 1, 8),
            ("A.v", "method", 2, 4),
            ("A.v", "method", 6, 8),
        ],
    ),
    (
        "conditional-defs-both-kept",
        """
        if TYPE_CHECKING:
            def f() -> int: ...
        else:
            def f():
                return 1
        """,
        [("f", "function", 2, 2), ("f", "function", 4, 5)],
    ),
    (
        "method-in-class-level-blocks",
        """
        class A:
            if X:
                def a(self): ...
            elif Y:
                def b(self): ...
            else:
                def c(self): ...
            try:
                def d(self): ...
            except E:
                def e(self): ...
            else:
                def f(self): ...
            finally:
                def g(self): ...
        """,
        [
            ("A", "class", 1, 15),
            ("A.a", "method", 3, 3),
            ("A.b", "method", 5, 5),
            ("A.c", "method", 7, 7),
            ("A.d", "method", 9, 9),
            ("A.e", "method", 11, 11),
            ("A.f", "method", 13, 13),
            ("A.g", "method", 15, 15),
        ],
    ),
    (
        "method-in-class-level-loops-and-with",
        """
        class A:
            with ctx:
                def w(self): ...
            for i in range(2):
                def fo(self): ...
            else:
                def fe(self): ...
            while cond:
                def wh(self): ...
            else:
                def we(self): ...
        """,
        [
            ("A", "class", 1, 11),
            ("A.w", "method", 3, 3),
            ("A.fo", "method", 5, 5),
            ("A.fe", "method", 7, 7),
            ("A.wh", "method", 9, 9),
            ("A.we", "method", 11, 11),
        ],
    ),
    (
        "method-in-deeply-nested-blocks",
        """
        class A:
            if X:
                try:
                    with ctx:
                        def deep(self): ...
                except E:
                    pass
        """,
        [("A", "class", 1, 7), ("A.deep", "method", 5, 5)],
    ),
    (
        "method-and-attribute-in-class-level-try-star",
        """
        class A:
            try:
                x = 1
            except* ValueError:
                def m(self): ...
        """,
        [("A", "class", 1, 5), ("A.x", "attribute", 3, 3), ("A.m", "method", 5, 5)],
    ),
    (
        "function-in-module-level-blocks",
        """
        try:
            def a(): ...
        except ImportError:
            def a(): ...
        with ctx:
            def b(): ...
        for i in x:
            def c(): ...
        """,
        [
            ("a", "function", 2, 2),
            ("a", "function", 4, 4),
            ("b", "function", 6, 6),
            ("c", "function", 8, 8),
        ],
    ),
    (
        "function-in-block-inside-function",
        """
        def f():
            if X:
                def g(): ...
            for i in y:
                class C: ...
        """,
        [
            ("f", "function", 1, 5),
            ("f.<locals>.g", "function", 3, 3),
            ("f.<locals>.C", "class", 5, 5),
        ],
    ),
    (
        "match-case-at-module-level",
        """
        match sys.platform:
            case "linux":
                def f(): ...
                X = 1
            case _:
                def f(): ...
                X = 2
        """,
        [
            ("f", "function", 3, 3),
            ("X", "attribute", 4, 4),
            ("f", "function", 6, 6),
            ("X", "attribute", 7, 7),
        ],
    ),
    (
        "match-case-in-class",
        """
        class A:
            match K:
                case 1:
                    def m(self): ...
                    y = 1
        """,
        [
            ("A", "class", 1, 5),
            ("A.m", "method", 4, 4),
            ("A.y", "attribute", 5, 5),
        ],
    ),
    ("module-attribute", "X = 1\n", [("X", "attribute", 1, 1)]),
    (
        "chained-assignment-gives-each-name",
        "a = b = 1\n",
        [("a", "attribute", 1, 1), ("b", "attribute", 1, 1)],
    ),
    (
        "chained-assignment-skips-non-name-targets",
        "a = obj.attr = c[0] = d, e = 1, 2\n",
        [("a", "attribute", 1, 1)],
    ),
    ("tuple-target-ignored", "a, b = 1, 2\n", []),
    ("list-target-ignored", "[a, b] = 1, 2\n", []),
    ("starred-target-ignored", "a, *b = 1, 2, 3\n", []),
    ("attribute-target-ignored", "obj.x = 1\n", []),
    ("subscript-target-ignored", "d['k'] = 1\n", []),
    ("augassign-ignored", "X += 1\n", []),
    ("for-target-ignored", "for i in range(3):\n    pass\n", []),
    ("with-as-ignored", "with open(p) as fh:\n    pass\n", []),
    ("walrus-ignored", "if (n := 10) > 5:\n    pass\n", []),
    ("imports-ignored", "import os\nfrom a import b as c\nimport numpy as np\n", []),
    ("annotated-with-value", "X: int = 1\n", [("X", "attribute", 1, 1)]),
    ("annotated-without-value", "X: int\n", [("X", "attribute", 1, 1)]),
    ("annotated-attribute-target-ignored", "obj.x: int = 1\n", []),
    (
        "multiline-assignment-spans-statement",
        """
        MAPPING = {
            "a": 1,
            "b": 2,
        }
        """,
        [("MAPPING", "attribute", 1, 4)],
    ),
    (
        "class-attributes",
        """
        class A:
            x = 1
            y: int
            z: str = "s"
            u = v = 0
        """,
        [
            ("A", "class", 1, 5),
            ("A.x", "attribute", 2, 2),
            ("A.y", "attribute", 3, 3),
            ("A.z", "attribute", 4, 4),
            ("A.u", "attribute", 5, 5),
            ("A.v", "attribute", 5, 5),
        ],
    ),
    (
        "class-attributes-in-blocks",
        """
        class A:
            if X:
                a = 1
            else:
                a = 2
            try:
                b: int = 1
            except E:
                b = 0
        """,
        [
            ("A", "class", 1, 9),
            ("A.a", "attribute", 3, 3),
            ("A.a", "attribute", 5, 5),
            ("A.b", "attribute", 7, 7),
            ("A.b", "attribute", 9, 9),
        ],
    ),
    (
        "module-attributes-in-blocks",
        """
        try:
            HAS = True
        except ImportError:
            HAS = False
        while False:
            W = 1
        """,
        [
            ("HAS", "attribute", 2, 2),
            ("HAS", "attribute", 4, 4),
            ("W", "attribute", 6, 6),
        ],
    ),
    (
        "no-attributes-in-function-bodies",
        """
        def f():
            x = 1
            y: int = 2
            if x:
                z = 3
        class A:
            def m(self):
                self.x = 1
                local = 2
        """,
        [
            ("f", "function", 1, 5),
            ("A", "class", 6, 9),
            ("A.m", "method", 7, 9),
        ],
    ),
    (
        "sorted-by-start-then-end",
        """
        class A: pass
        def f(): pass
        X = 1
        """,
        [("A", "class", 1, 1), ("f", "function", 2, 2), ("X", "attribute", 3, 3)],
    ),
]


def _syntax_of_this_python(source: str) -> list[pytest.MarkDecorator]:
    """The reference is Python's own ``ast``: it cannot read what this Python cannot."""
    needs_311 = "except*" in source and sys.version_info < (3, 11)
    return [pytest.mark.skip(reason="except* is Python 3.11 syntax")] if needs_311 else []


@pytest.mark.parametrize(
    ("source", "expected"),
    [pytest.param(src, exp, id=name, marks=_syntax_of_this_python(src))
     for name, src, exp in CASES],
)
def test_reference_symbols(source: str, expected: list[tuple[str, str, int, int]]) -> None:
    assert reference_symbols(textwrap.dedent(source).lstrip("\n")) == expected


def test_invalid_source_raises() -> None:
    with pytest.raises(SyntaxError):
        reference_symbols("def f(:\n")


def _write(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def test_reference_for_tree(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/a.py": b"def f():\n    pass\n",
            "pkg/sub/b.py": b"class B:\n    x = 1\n",
            "pkg/empty.py": b"",
            "pkg/bom.py": b"\xef\xbb\xbfY = 1\n",
            "pkg/latin1.py": b"# caf\xe9\ndef g():\n    pass\n",
            "pkg/broken.py": b"def h(:\n",
            "pkg/notes.txt": b"def not_python(): pass\n",
            ".git/hooks/x.py": b"def hook(): pass\n",
        },
    )
    os.symlink("a.py", tmp_path / "pkg" / "link.py")
    os.symlink("sub", tmp_path / "pkg" / "linkdir")
    symbols, skipped = reference_for_tree(tmp_path)
    assert symbols == {
        ("pkg/a.py", "f", "function", 1, 2),
        ("pkg/sub/b.py", "B", "class", 1, 2),
        ("pkg/sub/b.py", "B.x", "attribute", 2, 2),
        ("pkg/bom.py", "Y", "attribute", 1, 1),
    }
    assert skipped == ["pkg/broken.py", "pkg/latin1.py"]


def _code_qualnames(source: str) -> set[str]:
    """Qualnames of def/class code objects as CPython itself computes them."""
    found: set[str] = set()
    stack = [compile(source, "<case>", "exec")]
    while stack:
        code = stack.pop()
        stack.extend(c for c in code.co_consts if hasattr(c, "co_qualname"))
        last = code.co_qualname.rsplit(".", 1)[-1]
        if not last.startswith("<"):
            found.add(code.co_qualname)
    return found


@pytest.mark.skipif(not hasattr(compile("", "", "exec"), "co_qualname"), reason="needs 3.11+")
@pytest.mark.parametrize(
    "source",
    [pytest.param(src, id=name) for name, src, _ in CASES],
)
def test_qualnames_match_cpython(source: str) -> None:
    source = textwrap.dedent(source).lstrip("\n")
    ours = {q for q, kind, _, _ in reference_symbols(source) if kind != "attribute"}
    assert ours == _code_qualnames(source)
