"""The order of a repo's versions: by version number, as PEP 440 orders them.

``v0.9.0`` < ``v0.10.0`` (numbers compare as numbers; the ``v`` is optional),
``0.23.1.dev0`` < ``0.23.1rc0`` < ``0.23.1`` < ``0.23.1.post1``. A name that is not a
version number (``main``, a branch) comes after the numbered ones; sorted stably, those
keep the order they were given in (the order indexed). A commit SHA (7 to 40 lowercase
hex digits) is such a name, even when its digits read as a number (``9767703351``, or
``12345a6789``, which PEP 440 reads as an alpha). This is ``packaging``'s ordering of
PEP 440's forms, without its classes, which refuse such names (``packaging`` serves only
the pypi source's version match, in indexer.sources).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_VERSION = re.compile(
    r"""
    v?
    (?:(?P<epoch>\d+)!)?
    (?P<release>\d+(?:\.\d+)*)
    (?P<pre>[-_.]?(?P<pre_l>alpha|beta|preview|pre|a|b|c|rc)[-_.]?(?P<pre_n>\d+)?)?
    (?P<post>-(?P<post_n1>\d+)|[-_.]?(?:post|rev|r)[-_.]?(?P<post_n2>\d+)?)?
    (?P<dev>[-_.]?dev[-_.]?(?P<dev_n>\d+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    """,
    re.VERBOSE | re.IGNORECASE,
)
COMMIT = re.compile(r"[0-9a-f]{7,40}")
"""A name git could give a commit by: its SHA, whole or abbreviated."""
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}

NOT_A_VERSION = (1,)
"""The key of a name that is not a version number: after every numbered one."""


def version_key(version: str) -> tuple:
    """The sort key of ``version``: ``(0, ...)`` for a version number, `NOT_A_VERSION`
    for any other name."""
    found = _VERSION.fullmatch(version)
    if found is None or COMMIT.fullmatch(version):
        return NOT_A_VERSION
    release = tuple(_number(part) for part in found["release"].split("."))
    while len(release) > 1 and release[-1] == _ZERO:  # 1.0 is 1.0.0
        release = release[:-1]
    if found["pre"]:
        pre: tuple = (1, _PRE_RANK[found["pre_l"].lower()], _number(found["pre_n"] or "0"))
    elif found["dev"] and not found["post"]:
        pre = (0,)  # 1.0.dev0 comes before 1.0a0
    else:
        pre = (2,)
    post = ((1, _number(found["post_n1"] or found["post_n2"] or "0")) if found["post"]
            else (0,))
    dev = (0, _number(found["dev_n"] or "0")) if found["dev"] else (1,)
    local = tuple((1, _number(part), "") if part.isdigit() else (0, _ZERO, part.lower())
                  for part in re.split(r"[-_.]", found["local"] or "") if part)
    return (0, _number(found["epoch"] or "0"), release, pre, post, dev, local)


def _number(digits: str) -> tuple[int, str]:
    """``digits`` ordered as the number they write, of any length (int() refuses over
    4,300 digits): a shorter number is smaller, and of one length, the digits tell. Any
    decimal digit counts as int() reads it (``\\d`` takes ``٣``)."""
    significant = "".join(str(int(digit)) for digit in digits).lstrip("0")
    return len(significant), significant


_ZERO = _number("0")


def in_version_order(versions: Iterable[str]) -> list[str]:
    """``versions`` by `version_key`; names that are not version numbers last, in the
    order given."""
    return sorted(versions, key=version_key)
