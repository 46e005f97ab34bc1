"""How a definition's statements nest and split (`annotations.layout`)."""

from __future__ import annotations

import pytest

from annotations.layout import layout, same_layout

# (old source, new source, same layout?)
CASES = [
    pytest.param("def f():\n    for x in y:\n        g(x)\n        return x\n",
                 "def f():\n    for x in y:\n        g(x)\n    return x\n", False,
                 id="return-dedented-out-of-a-loop"),
    pytest.param("def f():\n    if a:\n        if b:\n            c\n"
                 "        else:\n            d\n",
                 "def f():\n    if a:\n        if b:\n            c\n    else:\n        d\n",
                 False, id="else-moved-to-the-outer-if"),
    pytest.param("def f():\n    x = f\n    (y)\n", "def f():\n    x = f(y)\n", False,
                 id="two-statements-joined"),
    pytest.param("def f():\n    x = f\n    -y\n", "def f():\n    x = f - y\n", False,
                 id="an-expression-statement-joined-to-the-one-before"),
    pytest.param("def f():\n    if x: return 1\n", "def f():\n    if x:\n        return 1\n",
                 True, id="one-line-suite-split"),
    pytest.param("def f():\n    if x: a; b\n    c\n",
                 "def f():\n    if x:\n        a\n        b\n    c\n", True,
                 id="one-line-suite-of-two-statements"),
    pytest.param("def f():\n    a = 1; b = 2\n", "def f():\n    a = 1\n    b = 2\n", True,
                 id="semicolons-split"),
    pytest.param("def f():\n    '''Doc.'''\n    return 1\n", "def f():\n  return 1  # one\n",
                 True, id="docstring-removed-and-reindented"),
    pytest.param("def f():\n    return (1 +\n            2)\n",
                 "def f():\n    return (\n        1 + 2\n    )\n",
                 True, id="continuation-lines-reflowed"),
    pytest.param("def f():\n    x = 1 + \\\n        2\n", "def f():\n    x = 1 + 2\n", True,
                 id="backslash-continuation-joined"),
    pytest.param("def f(g=lambda: 1): return g\n", "def f(g=lambda: 1):\n    return g\n",
                 True, id="lambda-in-the-parameters"),
    pytest.param("def f():\n    if lambda: 1: a\n", "def f():\n    if lambda: 1:\n        a\n",
                 True, id="lambda-in-the-header"),
    pytest.param("def f():\n    match x:\n        case 1: return\n",
                 "def f():\n    match x:\n        case 1:\n            return\n", True,
                 id="match-case-suite-split"),
    pytest.param("class A:\n    case: int = 1\n    match: str = ''\n",
                 "class A:\n    case: int = 1\n    match: str = ''\n", True,
                 id="soft-keywords-as-annotated-names"),
    pytest.param("x = 1\n", "y = 1\n", True, id="a-renamed-target"),
    pytest.param("def f():\n    for x in y:\n        g()\n        f'{h(x)}'\n",
                 "def f():\n    for x in y:\n        g()\n    f'{h(x)}'\n", False,
                 id="an-f-string-statement-dedented-out-of-a-loop"),
    pytest.param("match = 1  # m\n", "found = 1\n", True,
                 id="a-renamed-target-named-like-a-soft-keyword"),
    pytest.param("@strict\n    class C(B):\n        x: int = 1\n",
                 "@strict\nclass C(B):\n    x: int = 1\n", True,
                 id="decorated-class-out-of-an-if-block"),
    pytest.param("@a\n    @b\n    def f():\n        return 1\n",
                 "@a\n@b\ndef f():\n    if x:\n        return 1\n", False,
                 id="decorated-and-indented-with-a-body-change"),
    pytest.param("def f():\r    for x in y:\r        g(x)\r        return x\r",
                 "def f():\r    for x in y:\r        g(x)\r    return x\r", False,
                 id="return-dedented-out-of-a-loop-with-lone-cr-line-ends"),
    pytest.param("def f():\r    if x: return 1\r", "def f():\n    if x:\n        return 1\n",
                 True, id="lone-cr-and-lf-line-ends"),
    pytest.param("def f():\n    x = f\"({a}\"\n    if x: return 1\n",
                 "def f():\n    x = f\"({a}\"\n    if x:\n        return 1\n", True,
                 id="a-bracket-in-an-f-string-text"),  # an FSTRING_MIDDLE on Python 3.12+
    pytest.param("def f():\n    if f\"{a}:{b}\": return 1\n",
                 "def f():\n    if f\"{a}:{b}\":\n        return 1\n", True,
                 id="a-colon-in-an-f-string-text-of-a-header"),
    pytest.param("def f(a):\n    x = not a\n", "def f(a):\n    x = nota\n", False,
                 id="a-keyword-joined-to-its-operand"),
    pytest.param("def f(a):\n    if not a:\n        g()\n",
                 "def f(a):\n    if nota:\n        g()\n", False,
                 id="a-keyword-joined-to-its-operand-in-a-header"),
    pytest.param("def f():\n    g(not a, notb)\n", "def f():\n    g(nota, not b)\n", False,
                 id="a-keyword-moved-from-one-operand-to-another"),
    pytest.param("async def f():\n    x = await g()\n", "async def f():\n    x = awaitg()\n",
                 False, id="await-joined-to-its-operand"),
    pytest.param("def f():\n    return g(\n        a,\n        b,\n    )\n",
                 "def f():\n    return g(a, b)\n", True, id="a-split-trailing-comma-dropped"),
    pytest.param("class C():\n    x = 1\n", "class C:\n    x = 1\n", True,
                 id="empty-bases-dropped"),
    pytest.param("def f():\n    x = (a)  and  b\n", "def f():\n    x = (a)and b\n", True,
                 id="spaces-around-a-keyword-between-brackets-and-a-name"),
    pytest.param("def f():\n    x = '''\nunclosed\n", "def f():\n    x = 1\n", True,
                 id="untokenizable-source-trusts-the-fingerprint"),
]


@pytest.mark.parametrize(("old", "new", "same"), CASES)
def test_same_layout(old: str, new: str, same: bool) -> None:
    assert same_layout(old, new) is same


def test_layout_lists_each_statement_with_its_depth_and_words() -> None:
    source = "@d\ndef f(x):\n    '''Doc.'''\n    if x: return 1\n    y = x; g(y, not x,)\n"
    assert layout(source) == (
        (0, "@ NAME"), (0, "def NAME ( NAME ) :"), (1, "if NAME :"), (2, "return NUMBER"),
        (1, "NAME = NAME"), (1, "NAME ( NAME , not NAME )"),
    )


def test_a_semicolon_in_an_f_string_text_ends_no_statement() -> None:
    """On Python 3.12+ the tokenizer gives the text ``;`` a token of its own."""
    found = layout('def f():\n    x = f"{a};"\n    y\n')
    assert found is not None
    assert [(depth, words.split()[0]) for depth, words in found] == [
        (0, "def"), (1, "NAME"), (1, "NAME")
    ]
