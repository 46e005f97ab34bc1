"""`annotations.quotes.quote_holds`: a quote of code must stand in code at the target.

`annotate check` end to end is in test_check.py (the CASES rows ``quote-of-...``); these
are the texts in between: comments and docstrings of every kind, string literals in code,
and text Python's tokenizer refuses (taken as before: an occurrence anywhere).
"""

from __future__ import annotations

import pytest

from annotations.quotes import _occurrences, quote_holds, quote_stands

CODE = "def fraction(total):\n    return Field(total, default=0.92)\n"
LOWERED = "def fraction(total):\n    return Field(total, default=0.9)\n"


@pytest.mark.parametrize(("pinned", "target", "quote", "holds"), [
    pytest.param(CODE, CODE.replace("total)", "total, ge=0)"), "default=0.92", True,
                 id="code-kept-in-code"),
    pytest.param(CODE, LOWERED + "    # default=0.92 was too high\n", "default=0.92", False,
                 id="code-kept-only-in-a-comment"),
    pytest.param(CODE, LOWERED.replace(":\n", ':\n    """Was default=0.92."""\n', 1),
                 "default=0.92", False, id="code-kept-only-in-a-docstring"),
    pytest.param(CODE, LOWERED.replace(":\n", ":\n    r'''Was\n    default=0.92.'''\n", 1),
                 "default=0.92", False, id="code-kept-only-in-a-raw-multi-line-docstring"),
    pytest.param(CODE, LOWERED + '    """Was default=0.92."""\n', "default=0.92", False,
                 id="code-kept-only-in-a-string-statement-below-code"),
    pytest.param(CODE, LOWERED.replace(":\n", ':\n    "Was " "default=0.92."\n', 1),
                 "default=0.92", False, id="code-kept-only-in-a-concatenated-docstring"),
    pytest.param(CODE, LOWERED.replace(":\n", ':\n    "Was " \\\n    "default=0.92."\n', 1),
                 "default=0.92", False, id="code-kept-only-in-a-continued-docstring"),
    pytest.param(CODE, "x = f(\n    1)\n" + LOWERED + '    """Was default=0.92."""\n',
                 "default=0.92", False, id="code-kept-only-in-a-docstring-after-brackets"),
    pytest.param(CODE, LOWERED.replace(":\n", ":\n    log = \\\n        'default=0.92'\n", 1),
                 "default=0.92", True, id="code-kept-in-a-string-literal-continuing-a-line"),
    pytest.param(CODE, LOWERED + "    # default=0.92 was too high\n" + CODE, "default=0.92",
                 True, id="code-kept-in-code-and-a-comment"),
    pytest.param(CODE, LOWERED.replace(":\n", ":\n    log('default=0.92')\n", 1),
                 "default=0.92", True, id="code-kept-in-a-string-literal-in-code"),
    pytest.param(CODE, LOWERED.replace(":\n", ":\n    log(\n        'default=0.92',\n    )\n", 1),
                 "default=0.92", True, id="code-kept-in-a-string-literal-on-a-line-of-its-own"),
    pytest.param(CODE, LOWERED.replace(":\n", ":\n    f'default=0.92 {total}'\n", 1),
                 "default=0.92", True, id="code-kept-in-an-f-string-statement"),
    pytest.param("x = 1  # the default\n", "y = 2\n# x = 1  # the default\n",
                 "x = 1  # the default", False, id="code-and-its-comment-kept-commented-out"),
    pytest.param("def f():\n    # keep 8% headroom\n    return 1\n",
                 "def f():\n    # keep 8% headroom\n    return 2\n", "keep 8% headroom", True,
                 id="comment-kept-in-a-comment"),
    pytest.param('def f():\n    """Keep 8% headroom."""\n    return 1\n',
                 "def f():\n    # Keep 8% headroom.\n    return 2\n", "Keep 8% headroom", True,
                 id="docstring-kept-in-a-comment"),
    pytest.param("def f():\n    # return 1\n    return 2\n", "def f():\n    return 1\n",
                 "return 1", True, id="comment-kept-in-code"),
    pytest.param(CODE, LOWERED + "    # default=0.92\n    return '\n", "default=0.92", True,
                 id="target-the-tokenizer-refuses"),
    pytest.param("    x = 'default=0.92\n", LOWERED + "    # default=0.92\n", "default=0.92",
                 True, id="pin-the-tokenizer-refuses"),
    pytest.param(CODE, LOWERED, "default=0.92", False, id="gone"),
    pytest.param(CODE, CODE, "default=0.92", True, id="unchanged"),
])
def test_quote_holds(pinned: str, target: str, quote: str, holds: bool) -> None:
    assert quote_holds(quote, target, lambda: pinned) is holds


@pytest.mark.parametrize(("quote", "text"), [
    pytest.param("a = 0", "a = 0.9\na = 0\n", id="after-a-cut-number"),
    pytest.param("b = 1", "ab = 1\nb = 1\n", id="after-a-cut-name"),
    pytest.param("x =  1", "x\u2028=\x1c\xa01", id="unicode-white-space"),
    pytest.param("x = 1", "x=1", id="none"),
])
def test_the_occurrences_are_those_quote_stands_finds(quote: str, text: str) -> None:
    spans = list(_occurrences(quote, text))
    assert bool(spans) is quote_stands(quote, text)
    assert all(" ".join(text[start:end].split()) == " ".join(quote.split())
               for start, end in spans)
