"""The parts of ``annotate diff``: the side-by-side table, started and stopped using, and
the citations of nested symbols, on a small corpus indexed from snapshots."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from browser import CHROMIUM, Browser
from fakeproject import indexed_project
from inlined_code import FP8_INLINED, SUPPORTS_FP8

from annotations import matching
from annotations.code_lines import LinePlaces, normalized_lines
from annotations.comparison import SymbolComparer
from annotations.diffs import build, html_page, json_format, markdown
from annotations.diffs.model import DiffReport, Location, Section, SymbolChange
from annotations.diffs.sidebyside import MAX_ROWS, OPEN_UP_TO_ROWS, side_by_side
from annotations.diffs.usage import MAX_NAMES, usage_changes
from annotations.resolve import Resolver
from db.database import open_database
from db.match_queries import MATCH_COLUMNS
from indexer.config import load_config

# --- side by side ---------------------------------------------------------------------


def notes(table: str) -> list[str]:
    """The text of the table's full-width rows (folds and notes)."""
    return re.findall(r'<tr class="fold"><td colspan="4">([^<]*)</td></tr>', table)


def code_rows(table: str) -> int:
    return table.count('<tr><td class="ln">')


def numbered(count: int, prefix: str) -> str:
    return "\n".join(f"{prefix} {number}" for number in range(count))


@pytest.mark.parametrize(("old", "new", "folds"), [
    pytest.param("a = 0\n" + numbered(9, "x"), "a = 1\n" + numbered(9, "x"),
                 ["⋯ 6 unchanged lines"], id="first-line-changed"),
    pytest.param(numbered(9, "x") + "\na = 0", numbered(9, "x") + "\na = 1",
                 ["⋯ 6 unchanged lines"], id="last-line-changed"),
    pytest.param(numbered(5, "x") + "\na = 0\n" + numbered(5, "y"),
                 numbered(5, "x") + "\na = 1\n" + numbered(5, "y"),
                 ["⋯ 2 unchanged lines", "⋯ 2 unchanged lines"], id="middle-line-changed"),
    pytest.param("a = 0", "a = 1", [], id="one-line"),
])
def test_unchanged_runs_are_folded_and_nothing_else(old: str, new: str, folds: list[str]
                                                   ) -> None:
    assert notes(side_by_side(old, new, 1, 1)) == folds


def test_rows_are_capped_and_the_rest_counted() -> None:
    table = side_by_side(numbered(MAX_ROWS + 50, "old"), numbered(MAX_ROWS + 50, "new"), 1, 1)
    assert code_rows(table) == MAX_ROWS
    assert notes(table) == ["… 50 more rows not shown"]


def test_rows_up_to_the_cap_are_all_shown() -> None:
    table = side_by_side(numbered(MAX_ROWS, "old"), numbered(MAX_ROWS, "new"), 1, 1)
    assert (code_rows(table), notes(table)) == (MAX_ROWS, [])


def closed_diff(table: str) -> str | None:
    """The summary of the ``<details>`` a big diff starts closed in; None when open."""
    closed = re.fullmatch(r'<details class="diff"><summary>([^<]*)</summary><table class="sbs">'
                          r".*</table></details>", table, re.DOTALL)
    if closed is None:
        assert table.startswith('<table class="sbs">'), table[:80]
    return closed and closed.group(1)


@pytest.mark.parametrize(("rows", "summary"), [
    pytest.param(OPEN_UP_TO_ROWS, None, id="one-screen-open"),
    pytest.param(OPEN_UP_TO_ROWS + 1, f"show the diff: {OPEN_UP_TO_ROWS + 1} lines",
                 id="over-it-closed-with-its-size"),
    pytest.param(MAX_ROWS + 50, f"show the diff: {MAX_ROWS + 50} lines",
                 id="capped-counts-every-row"),
])
def test_a_diff_longer_than_a_screen_starts_closed_and_says_how_long(
    rows: int, summary: str | None
) -> None:
    table = side_by_side(numbered(rows, "old"), numbered(rows, "new"), 1, 1)
    assert closed_diff(table) == summary


@pytest.mark.parametrize(("old", "new"), [
    pytest.param("def f():\r\n    return 1", "def f():\n    return 1", id="crlf-and-lf"),
    pytest.param("def f():\n\treturn 1", "def f():\n    return 1", id="tab-and-spaces"),
])
def test_line_endings_and_tabs_do_not_differ(old: str, new: str) -> None:
    assert notes(side_by_side(old, new, 1, 1)) == ["⋯ 2 unchanged lines", "No line differs."]


def test_control_characters_are_replaced() -> None:
    table = side_by_side("a = '\x07'", "a = '\x1b[2J'", 1, 1)
    assert "\x07" not in table and "\x1b" not in table
    assert table.count("\ufffd") == 2


@pytest.mark.parametrize(("old", "new", "marked"), [
    pytest.param("total = first + second", "total = first + third", True, id="one-word"),
    pytest.param("total = first + second", "raise ValueError('no such block')", False,
                 id="little-in-common"),
    pytest.param("x = " + "a, " * 100 + "b", "x = " + "a, " * 100 + "c", False,
                 id="too-long-to-compare"),
])
def test_words_that_differ_are_marked_in_similar_lines(old: str, new: str, marked: bool
                                                      ) -> None:
    table = side_by_side(old, new, 1, 1)
    assert ("<del>" in table, "<ins>" in table) == (marked, marked)
    assert '<td class="c del">' in table and '<td class="c add">' in table


# --- started and stopped using --------------------------------------------------------


@dataclass(frozen=True)
class Symbol:
    name: str
    blob_id: str
    start_byte: int
    end_byte: int


def usage_of(old: str, new: str, defined: set[str], **limit: int) -> tuple:
    """The usage of a function ``f`` whose code goes from ``old`` to ``new``."""
    contents = {"a": old.encode(), "b": new.encode()}
    start, name = MATCH_COLUMNS.index("start_byte"), MATCH_COLUMNS.index("name")
    row = tuple(0 if index == start else "f" if index == name else None
                for index in range(len(MATCH_COLUMNS)))
    pair = (Symbol("f", "a", 0, len(contents["a"])), Symbol("f", "b", 0, len(contents["b"])))
    names = frozenset(defined | {"f"})
    [usage] = usage_changes([pair], contents, lambda: (names, names), lambda _blob: [row],
                            **limit)
    return usage.started, usage.stopped, usage.started_total, usage.stopped_total


def test_started_using_lists_the_first_names_and_counts_them_all() -> None:
    used = [f"n{number:02}" for number in range(MAX_NAMES + 5)]
    new = "def f():\n    return [" + ", ".join(used) + "]\n"
    assert usage_of("def f():\n    return []\n", new, set(used)) == (
        tuple(used[:MAX_NAMES]), (), MAX_NAMES + 5, 0)
    assert usage_of("def f():\n    return []\n", new, set(used), limit=2) == (
        tuple(used[:2]), (), MAX_NAMES + 5, 0)


BARE = "def f(x):\n    return g(x)\n"


# A keyword argument's name, `g(default=1)`, names a parameter of the callee, which no
# index holds: it is no use. Everything else in code is a name used, however it is bound:
# an attribute after a dot (how a method is called) and the names the symbol binds itself,
# its parameters as its locals (a parameter's name is also read in its body).
@pytest.mark.parametrize(("new", "defined", "started"), [
    pytest.param("def f(x):\n    return g(x, default=1)\n", {"default"}, (),
                 id="keyword-argument"),
    pytest.param("def f(x):\n    return g(\n        x,  # a value\n        default = 1,\n    )\n",
                 {"default"}, (), id="keyword-argument-on-its-own-line"),
    pytest.param("def f(x):\n    return g(x, default=helper)\n", {"default", "helper"},
                 ("helper",), id="keyword-argument-value"),
    pytest.param("def f(x):\n    return g(x, default=1) or default\n", {"default"},
                 ("default",), id="keyword-argument-and-name"),
    pytest.param("def f(x):\n    return g(x, x == default)\n", {"default"}, ("default",),
                 id="comparison-in-an-argument"),
    pytest.param("def f(x):\n    return g(x, default == x)\n", {"default"}, ("default",),
                 id="comparison-of-a-name-in-an-argument"),
    pytest.param("def f(x):\n    return g(x, _size2=1)\n", {"_size2"}, (),
                 id="keyword-argument-with-a-digit-and-an-underscore"),
    pytest.param("def f(x):\n    return g(**options)\n", {"options"}, ("options",),
                 id="double-star-argument"),
    pytest.param("def f(x):\n    class C(Base, metaclass=Meta): ...\n    return g(x)\n",
                 {"Base", "metaclass", "Meta"}, ("Base", "Meta"), id="class-keyword"),
    pytest.param("def f(x, *, default=None):\n    return g(x)\n", {"default"}, ("default",),
                 id="keyword-only-parameter"),
    pytest.param("def f(default=None):\n    return g(x)\n", {"default"}, ("default",),
                 id="first-parameter"),
    pytest.param("def f(x, *, size=g(default=1)):\n    return g(x)\n", {"default", "size"},
                 ("size",), id="keyword-argument-in-a-parameter-default"),
    pytest.param("def f(x, **options):\n    return g(x)\n", {"options"}, ("options",),
                 id="double-star-parameter"),
    pytest.param("def f(x):\n    return g(key=lambda x, default=None: x)\n",
                 {"key", "default"}, ("default",), id="lambda-parameter"),
    pytest.param("def f(x):\n    return g(lambda x, size=h(default=1): x)\n",
                 {"default", "h"}, ("h",), id="keyword-argument-in-a-lambda-default"),
    pytest.param("def f(x):\n    first, default = g(x)\n    return first\n", {"default"},
                 ("default",), id="tuple-assignment"),
    pytest.param("def f(x):\n    first, default = g(x, size=1)\n    return first\n",
                 {"default", "size"}, ("default",),
                 id="tuple-assignment-before-a-keyword-argument"),
    pytest.param("def f(x):\n    return x.helper(g(x))\n", {"helper"}, ("helper",),
                 id="attribute"),
    pytest.param("def f(x):\n    return g(x)  # helper, not 'helper2'\n",
                 {"helper", "helper2"}, (), id="comment-and-string"),
])
def test_what_a_symbol_started_using(new: str, defined: set[str], started: tuple[str, ...]
                                     ) -> None:
    """From ``BARE`` to ``new``; and back, what it started using it stopped using."""
    assert usage_of(BARE, new, defined | {"g"})[:2] == (started, ())
    assert usage_of(new, BARE, defined | {"g"})[:2] == ((), started)


def test_keywords_are_not_names_used_even_when_a_symbol_is_called_so() -> None:
    """``match`` (a soft keyword) is also the name of many a method."""
    old = "def f(x):\n    return helper(x)\n"
    new = "def f(x):\n    match x:\n        case _:\n            return x\n"
    assert usage_of(old, new, {"match", "case", "_", "helper"}) == ((), ("helper",), 0, 1)


# --- a small corpus -------------------------------------------------------------------

BOX = 'class Box:\n    def size(self):\n        return {}\n\n    def colour(self):\n' \
      '        return "red"\n'
KNOB = "def turn():\n    return {}\n"
NEST = {"n1": {"nest/box.py": BOX.format(1), "tools/knob.py": KNOB.format(1)},
        "n2": {"nest/box.py": BOX.format(2),
               "tools/knob.py": KNOB.format(2) + "\n\ndef push():\n    return 0\n"}}
NEST_CLAIMS = """\
article: notes/nest.md
at: nest@n1
claims:
  - id: size-lines
    text: the lines of Box.size, inside Box
    refs: [nest/box.py#L2-L3]
  - id: size-twice
    text: a ref written twice
    refs: [nest/box.py::Box.size, nest/box.py::Box.size]
"""


@pytest.fixture(scope="module")
def nest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed_project(tmp_path_factory.mktemp("nest"), NEST, NEST_CLAIMS)


def nest_diff(root: Path, versions: tuple[str, str] = ("n1", "n2"), **options: object
              ) -> DiffReport:
    config = load_config(root)
    with open_database(config.db) as database:
        return build.build_report(database, config, "nest", *versions, **options)


def nest_report(root: Path, **options: object) -> dict[str, SymbolChange]:
    return {change.ref: change for change in nest_diff(root, **options).changes}


def test_a_line_ref_cites_the_innermost_symbol_and_a_ref_written_twice_once(nest: Path
                                                                             ) -> None:
    changes = nest_report(nest)
    assert list(changes) == ["nest/box.py::Box", "nest/box.py::Box.size", "tools/knob.py::turn",
                             "tools/knob.py::push"]
    assert [citation.claim for citation in changes["nest/box.py::Box.size"].citations] == [
        "size-lines", "size-twice"]
    assert changes["nest/box.py::Box"].citations == ()


def test_sources_shown_side_by_side_are_whole_lines(nest: Path) -> None:
    size = nest_report(nest, diff_limit=5)["nest/box.py::Box.size"]
    assert (size.old_source, size.new_source) == (
        "    def size(self):\n        return 1", "    def size(self):\n        return 2")


def test_html_opens_and_anchors_only_what_claims_cite(nest: Path) -> None:
    page = html_page.render(nest_diff(nest, diff_limit=5))
    assert page.count('<details class="sym" id=') == 1
    assert '<details class="sym" id="changed:nest/box.py::Box.size" open>' in page
    assert page.count('<details class="sym">') == 2  # Box and turn: not cited, closed
    assert '<span class="chip">content' not in page  # a changed symbol's content: no news


def with_a_diff_of(report: DiffReport, ref: str, rows: int) -> DiffReport:
    """``report`` with ``rows`` changed lines in the side-by-side diff of ``ref``."""
    changes = tuple(change._replace(old_source=numbered(rows, "old"),
                                    new_source=numbered(rows, "new"))
                    if change.ref == ref else change for change in report.changes)
    return replace(report, changes=changes)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed")
@pytest.mark.parametrize(("rows", "closed"), [
    pytest.param(OPEN_UP_TO_ROWS, False, id="one-screen-open"),
    pytest.param(MAX_ROWS, True, id="long-closed-behind-one-click"),
])
def test_html_a_claims_link_lands_on_its_symbol_whose_long_diff_is_one_click_away(
    nest: Path, tmp_path: Path, rows: int, closed: bool
) -> None:
    """In a browser, without script: the claim's link opens the symbol and scrolls to it;
    a diff longer than a screen takes no room until its summary is clicked."""
    page = tmp_path / "diff.html"
    report = with_a_diff_of(nest_diff(nest, diff_limit=5), "nest/box.py::Box.size", rows)
    page.write_text(html_page.render(report), encoding="utf-8")
    symbol = "document.getElementById('changed:nest/box.py::Box.size')"
    table = f"{symbol}.querySelector('table.sbs')"
    with Browser(tmp_path / "profile", height=400) as browser:
        browser.open(page.as_uri())
        link = browser.js("document.querySelector('a.chip').getAttribute('href')")
        browser.js("document.querySelector('a.chip').click()")
        assert browser.js("location.hash") == link == "#changed:nest/box.py::Box.size"
        assert browser.js(f"{symbol}.open") is True
        top = browser.js(f"{symbol}.getBoundingClientRect().top")
        assert 0 <= top < browser.js("innerHeight") and browser.js("scrollY") > 0
        assert browser.js(f"{table}.checkVisibility()") is not closed
        height = browser.js("document.documentElement.scrollHeight")
        assert (height < 2000) is closed  # a row is some 17 px tall
        if closed:
            summary = f"{symbol}.querySelector('details.diff > summary')"
            assert browser.js(f"{summary}.textContent") == f"show the diff: {rows} lines"
            browser.js(f"{summary}.click()")
            assert browser.js(f"{table}.checkVisibility()") is True
            assert browser.js("document.documentElement.scrollHeight") > height + rows * 10


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed")
def test_html_prints_the_long_diffs_closed_on_screen(nest: Path, tmp_path: Path) -> None:
    """On paper nothing can be clicked: a long diff is printed, without its summary, and
    without the links back to the top."""
    page = tmp_path / "diff.html"
    report = with_a_diff_of(nest_diff(nest, diff_limit=5), "nest/box.py::Box.size", MAX_ROWS)
    page.write_text(html_page.render(report), encoding="utf-8")
    shown = ("[...document.querySelectorAll('{}')].map(element => element.checkVisibility())")
    with Browser(tmp_path / "profile") as browser:
        browser.open(page.as_uri())
        assert browser.js(shown.format("details.diff > table")) == [False]
        browser.media("print")
        assert browser.js(shown.format("details.diff > table")) == [True]
        assert browser.js(shown.format("details.diff > summary")) == [False]
        assert set(browser.js(shown.format("a.top"))) == {False}


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed")
def test_html_every_section_links_back_to_the_top(nest: Path, tmp_path: Path) -> None:
    page = tmp_path / "diff.html"
    page.write_text(html_page.render(nest_diff(nest)), encoding="utf-8")
    with Browser(tmp_path / "profile", height=400) as browser:
        browser.open(page.as_uri())
        sections = browser.js("document.querySelectorAll('section').length")
        assert browser.js("document.querySelectorAll('section h2 a.top').length") == sections
        browser.js("scrollTo(0, document.documentElement.scrollHeight)")
        assert browser.js("scrollY") > 400
        browser.js("[...document.querySelectorAll('a.top')].pop().click()")
        assert browser.js("scrollY") == 0


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed")
def test_html_lists_the_articles_first_each_a_link_to_its_claims(
    nest: Path, tmp_path: Path
) -> None:
    report = nest_diff(nest)
    article = report.articles[0]
    others = tuple(replace(article, article=f"notes/{name}.md") for name in ("a", "b", "c"))
    page = tmp_path / "diff.html"
    page.write_text(html_page.render(replace(report, articles=(article, *others))),
                    encoding="utf-8")
    with Browser(tmp_path / "profile", height=300) as browser:
        browser.open(page.as_uri())
        index = "document.querySelectorAll('#claims .articles a')"
        assert browser.js(f"[...{index}].map(a => a.textContent)") == [
            "notes/nest.md 2", "notes/a.md 2", "notes/b.md 2", "notes/c.md 2"]
        browser.js(f"{index}[3].click()")
        assert browser.js("location.hash") == "#article:notes/c.md"
        top = browser.js("document.getElementById('article:notes/c.md')"
                         ".getBoundingClientRect().top")
        assert 0 <= top < 10


LANDS = """(target => {
  const rect = target.getBoundingClientRect();
  let closed = 0;
  for (let at = target.parentElement; at; at = at.parentElement) {
    if (at.tagName === 'DETAILS' && !at.open) closed += 1;
  }
  return closed === 0 && target.checkVisibility() && rect.height > 0 && rect.top > -1
         && rect.top < innerHeight;
})(document.getElementById(decodeURIComponent(location.hash.slice(1))))"""
"""Whether the element the page's address points to is open (no closed <details> around
it), visible and in view."""


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed")
def test_html_closes_long_package_groups_and_every_link_into_one_opens_it(
    nest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A section longer than a screen or so lists its packages first, each a link with its
    count; a package group longer than that starts closed, cited or not, and says how
    many of its symbols claims cite: a link into it, a claim's or the list's, opens it."""
    monkeypatch.setattr(html_page, "OPEN_GROUPS_UP_TO", 1)
    page = tmp_path / "diff.html"
    page.write_text(html_page.render(nest_diff(nest)), encoding="utf-8")
    groups = "[...document.querySelectorAll('#changed details.group')]"
    with Browser(tmp_path / "profile", height=300) as browser:
        browser.open(page.as_uri())
        assert browser.js(f"{groups}.map(g => [g.open, g.querySelector('summary')"
                          ".textContent])") == [[False, "nest 2 1 cited"], [False, "tools 1"]]
        index = "[...document.querySelectorAll('#changed ul.packages a')]"
        assert browser.js(f"{index}.map(a => a.textContent)") == ["nest 2 1 cited", "tools 1"]
        links = browser.js("[...document.querySelectorAll('a[href^=\"#\"]')]"
                           ".map(a => a.getAttribute('href'))")
        assert "#changed-package:tools" in links and "#changed:nest/box.py::Box.size" in links
        for number, link in enumerate(links):
            browser.js(f"{groups}.forEach(g => g.open = false); history.replaceState(null, '', "
                       "' '); scrollTo(0, 0)")
            browser.js(f"document.querySelectorAll('a[href^=\"#\"]')[{number}].click()")
            if link != "#top":
                assert browser.js(LANDS) is True, link


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed")
def test_html_prints_the_cited_symbols_of_a_closed_package_group(
    nest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paper cannot be clicked: the symbols claims cite in a group closed on screen are
    printed, the group's others are not (its summary counts them)."""
    monkeypatch.setattr(html_page, "OPEN_GROUPS_UP_TO", 1)
    page = tmp_path / "diff.html"
    page.write_text(html_page.render(nest_diff(nest)), encoding="utf-8")
    shown = ("[...document.querySelectorAll('#changed .sym')]"
             ".map(symbol => [symbol.id, symbol.checkVisibility()])")
    with Browser(tmp_path / "profile") as browser:
        browser.open(page.as_uri())
        cited = "changed:nest/box.py::Box.size"
        assert browser.js(shown) == [["", False], [cited, False], ["", False]]
        browser.media("print")
        assert browser.js(shown) == [["", False], [cited, True], ["", False]]


def test_html_lead_and_package_table(nest: Path) -> None:
    page = html_page.render(nest_diff(nest))
    assert '<p class="lead">4 symbols of n1 compared; <b>4</b> symbols changed' in page
    start = page.index("<tr><td><code>tools</code>")
    dot = '<td class="num"><span class="muted">·</span></td>'
    one = '<td class="num">1</td>'
    # cosmetic, changed, moved, removed, added; then unchanged
    assert page[start:page.index("</tr>", start)] == (
        f"<tr><td><code>tools</code></td>{dot}{one}{dot}{dot}{one}"
        '<td class="num muted">0</td>')


@pytest.mark.parametrize(("packages", "opened"), [
    pytest.param(12, True, id="twelve-open"),
    pytest.param(13, False, id="thirteen-closed"),
])
def test_html_package_table_is_open_when_short(nest: Path, packages: int, opened: bool) -> None:
    report = replace(nest_diff(nest), packages={f"p{number}": {"changed": 1}
                                                for number in range(packages)})
    page = html_page.render(report)
    assert ('<details class="packages" open>' in page) is opened


@pytest.mark.parametrize(("open_up_to", "opened"), [
    pytest.param(3, ["nest", "tools"], id="at-the-limit-every-group"),
    pytest.param(2, ["nest"], id="over-it-the-groups-claims-cite"),
])
def test_html_opens_package_groups_of_small_sections(
    nest: Path, monkeypatch: pytest.MonkeyPatch, open_up_to: int, opened: list[str]
) -> None:
    monkeypatch.setattr(html_page, "OPEN_GROUPS_UP_TO", open_up_to)
    page = html_page.render(nest_diff(nest))
    changed = page[page.index('<section id="changed">'):page.index('<section id="moved">')]
    groups = re.findall(r'<details class="group"( open)?><summary><code>([^<]*)</code>', changed)
    assert [package for is_open, package in groups if is_open] == opened
    assert [package for _, package in groups] == ["nest", "tools"]


_SYMBOL, _LINES = ("nest/box.py::Box.size", "changed"), ("nest/box.py#L1-L1", "lines")


@pytest.mark.parametrize(("cited", "lead"), [
    pytest.param([[_SYMBOL]], "1 claim in 1 article cites listed symbols.", id="one"),
    pytest.param([[_SYMBOL], [_SYMBOL]], "2 claims in 1 article cite listed symbols.",
                 id="two"),
    pytest.param([[_LINES]], "1 claim in 1 article cites changed lines.", id="only-lines"),
    pytest.param([[_SYMBOL], [_LINES]],
                 "2 claims in 1 article cite listed symbols or changed lines.",
                 id="symbols-and-lines"),
    pytest.param([[_SYMBOL, _LINES]], "1 claim in 1 article cites listed symbols or changed "
                 "lines.", id="one-claim-citing-both"),
])
def test_the_lead_counts_the_claims_citing_and_says_what_they_cite(
    nest: Path, cited: list[list[tuple[str, str]]], lead: str
) -> None:
    report = nest_diff(nest)
    [article] = report.articles
    claims = tuple(replace(article.claims[0], claim=f"c{index}", symbols=tuple(symbols))
                   for index, symbols in enumerate(cited))
    report = replace(report, articles=(replace(article, claims=claims),))
    assert f'<p class="lead">{lead}</p>' in html_page.render(report)
    assert f"\n\n{lead}\n\n" in markdown.render(report)


def one_claim(pin: str, claim: str, ref: str) -> str:
    """An annotation file of one claim, ``claim``, citing ``ref`` at ``nest@pin``."""
    return (f"article: notes/n.md\nat: nest@{pin}\nclaims:\n  - id: {claim}\n"
            f"    text: x\n    refs: [{ref}]\n")


INLINED = {"w1": {"fa.py": SUPPORTS_FP8 + "\n\n" + KNOB.format(1), "flash.py": BOX.format(1)},
           "w2": {"fa.py": KNOB.format(1), "flash.py": BOX.format(1) + "\n\n" + FP8_INLINED}}
WENT_TO = "flash.py::FlashBackend.supports_dtype"
WENT_URL = "https://github.com/example/nest/blob/w2/flash.py#L10-L18"


@pytest.fixture(scope="module")
def inlined_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A function removed as its code was inlined into a method."""
    return indexed_project(tmp_path_factory.mktemp("inlined"), INLINED,
                           one_claim("w1", "knob", "fa.py::turn"))


@pytest.fixture(scope="module")
def inlined(inlined_project: Path) -> DiffReport:
    return nest_diff(inlined_project, ("w1", "w2"))


@pytest.fixture
def line_indexes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[LinePlaces, object]]:
    """Each line index the matchers build during the test, with the lines it was built
    for."""
    indexes: list[tuple[LinePlaces, object]] = []

    class Recorded(LinePlaces):
        def __init__(self, files: Any, wanted: Any) -> None:
            super().__init__(files, wanted)
            indexes.append((self, wanted))

    monkeypatch.setattr(matching, "LinePlaces", Recorded)
    return indexes


def test_a_diff_indexes_only_the_lines_of_its_removed_symbols(
    inlined_project: Path, line_indexes: list[tuple[LinePlaces, object]]
) -> None:
    """Where a removed symbol's code went is found by its lines: the diff indexes those
    of its removed symbols, not every line of the changed files (290,358 at vLLM v0.20.0
    -> v0.25.0, 1 s of its 4.7)."""
    [removed] = nest_diff(inlined_project, ("w1", "w2")).section(Section.REMOVED)
    assert removed.code_went_to
    [(index, _)] = line_indexes
    assert {line for held in vars(index).values() for line in held} <= set(
        normalized_lines(SUPPORTS_FP8))


def test_an_annotated_diff_asks_where_only_the_code_of_the_removed_symbols_it_lists_went(
    tmp_path: Path, line_indexes: list[tuple[LinePlaces, object]]
) -> None:
    """``--annotated`` asks check whether each cited ref still stands, which needs no word
    of where a removed symbol's code went: it built an index of every line of the changed
    files for that alone (1.2 s of process CPU for the catalogue at vLLM v0.20.0 ->
    v0.25.0)."""
    root = indexed_project(tmp_path, INLINED, one_claim("w1", "fp8", "fa.py::supports_fp8"))
    [removed] = nest_diff(root, ("w1", "w2"), annotated=True).section(Section.REMOVED)
    assert removed.citations and removed.code_went_to
    assert [wanted is None for _, wanted in line_indexes] == [False]


def test_an_annotated_diff_matches_its_two_versions_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--annotated`` asks check which cited refs still stand at B, and where the lines
    of a gone file went: with the diff's matcher, not one more each for the same two
    versions, loading both again (1.6 s of the catalogue's 5.9 at vLLM v0.20.0 ->
    v0.25.0)."""
    pairs: list[tuple[int, int]] = []
    make = matching.Matcher.__init__

    def recorded(self: matching.Matcher, database: Any, a: int, b: int, *rest: Any) -> None:
        pairs.append((a, b))
        make(self, database, a, b, *rest)

    root = indexed_project(tmp_path, INLINED, one_claim("w1", "fp8", "fa.py::supports_fp8"))
    monkeypatch.setattr(matching.Matcher, "__init__", recorded)
    [removed] = nest_diff(root, ("w1", "w2"), annotated=True).section(Section.REMOVED)
    assert removed.citations
    assert len(pairs) == len(set(pairs)) == 1


def test_where_removed_code_went_is_found_here_while_children_find_the_usage(
    tmp_path: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forked processes find what the changed symbols started using (two files, one
    each) while this one finds where the removed symbol's code went: the report is the
    one a single process writes."""
    changed = {"w1": INLINED["w1"], "w2": {"fa.py": KNOB.format(2),
                                           "flash.py": BOX.format(2) + "\n\n" + FP8_INLINED}}
    root = indexed_project(tmp_path, changed, one_claim("w1", "knob", "fa.py::turn"))
    alone = nest_diff(root, ("w1", "w2"), workers=2)
    assert not forks  # few changed symbols: no fork
    monkeypatch.setattr(build, "PARALLEL_MIN_PAIRS", 0)
    forked = nest_diff(root, ("w1", "w2"), workers=2)
    assert len(forks) == 2, "the usage of each file was not found in a child"
    [removed] = forked.section(Section.REMOVED)
    assert [place.qualname for place in removed.code_went_to] == ["FlashBackend.supports_dtype"]
    assert forked == alone


def test_a_removed_symbol_says_where_its_code_went_in_json(inlined: DiffReport) -> None:
    [removed] = json.loads(json_format.render(inlined))["removed"]
    assert (removed["ref"], removed["code_went_to"]) == ("fa.py::supports_fp8", [{
        "path": "flash.py", "qualname": "FlashBackend.supports_dtype", "kind": "method",
        "start_line": 10, "end_line": 18, "url": WENT_URL}])


def test_a_removed_symbol_says_where_its_code_went_in_markdown(inlined: DiffReport) -> None:
    page = markdown.render(inlined)
    assert "| Symbol | Kind | Closest at the new version | Its code went to |" in page
    went_to = WENT_TO.replace("_", "\\_")
    assert f'| function |  | <a href="{WENT_URL}"><code>{went_to}</code></a> |' in page


def test_a_removed_symbol_says_where_its_code_went_in_html(inlined: DiffReport) -> None:
    page = html_page.render(inlined)
    assert (f'<span class="to">→ its code went to <a href="{WENT_URL}" rel="noreferrer">'
            f'<code>{WENT_TO}</code></a></span>') in page


REGISTRY = {  # spec_manager_map, a dict vLLM v0.25.0 replaced by KVCacheSpecRegistry
    "u1": {"kv.py": "class FullManager:\n    pass\n\n\nMANAGERS = {int: FullManager}\n\n\n"
                    "def manager_for(spec, **kwargs):\n    manager_class = MANAGERS[type(spec)]\n"
                    "    return manager_class(spec, **kwargs)\n"},
    "u2": {"kv.py": "class FullManager:\n    pass\n\n\nclass SpecRegistry:\n    _managers = {}\n\n"
                    "    @classmethod\n    def manager_class(cls, spec):\n"
                    "        return cls._managers.get(type(spec))\n\n\n"
                    "def manager_for(spec, **kwargs):\n"
                    "    manager_class = SpecRegistry.manager_class(spec)\n"
                    "    return manager_class(spec, **kwargs)\n"},
}
REGISTRY_URL = "https://github.com/example/nest/blob/u2/kv.py#L5-L10"


@pytest.fixture(scope="module")
def replaced(tmp_path_factory: pytest.TempPathFactory) -> DiffReport:
    """A dict that a registry replaced, which a claim cites."""
    root = indexed_project(tmp_path_factory.mktemp("replaced"), REGISTRY,
                           one_claim("u1", "map", "kv.py::MANAGERS"))
    return nest_diff(root, ("u1", "u2"))


@pytest.mark.parametrize("ref", ["nest@u2:kv.py::Gone", "nest@u2:kv.py::", "nest@u9:kv.py::X"],
                         ids=["no-such-symbol", "no-qualname", "no-such-version"])
def test_a_place_of_the_users_that_names_no_symbol_is_left_out(tmp_path: Path, ref: str
                                                               ) -> None:
    """A hint less, not a failed diff: check's users in a file no ref can name are left
    out the same way."""
    root = indexed_project(tmp_path, REGISTRY, one_claim("u1", "map", "kv.py::MANAGERS"))
    config = load_config(root)
    with open_database(config.db) as database:
        resolver = Resolver(database, config)
        assert build._resolved_location(resolver, ref) is None
        assert build._resolved_location(resolver, "nest@u2:kv.py::SpecRegistry") == Location(
            "kv.py", "SpecRegistry", "class", 5, 10, REGISTRY_URL)


def test_a_cited_removed_symbol_says_what_its_users_now_use(replaced: DiffReport) -> None:
    """What check says of a removed symbol's users, the diff says where it lists it: the
    reader revising an article learns what its code asks now."""
    [removed] = replaced.section(Section.REMOVED)
    assert removed.ref == "kv.py::MANAGERS" and removed.citations
    assert [(place.ref, place.url) for place in removed.users_now_use] == [
        ("kv.py::SpecRegistry", REGISTRY_URL)]


def test_what_the_users_now_use_is_asked_of_cited_removed_symbols_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each ask reads the users of the removed symbol at both versions: the diff of a
    whole version lists thousands of removed symbols, of which the articles cite a few."""
    asked: list[str] = []
    ask = SymbolComparer.users_instead

    def recorded(self: SymbolComparer, removed: Any, pair: tuple[int, int]) -> Any:
        asked.append(removed.qualname)
        return ask(self, removed, pair)

    monkeypatch.setattr(SymbolComparer, "users_instead", recorded)
    root = indexed_project(tmp_path, REGISTRY, one_claim("u1", "cls", "kv.py::FullManager"))
    [removed] = nest_diff(root, ("u1", "u2")).section(Section.REMOVED)
    assert removed.ref == "kv.py::MANAGERS" and not removed.citations
    assert (asked, removed.users_now_use) == ([], ())


def test_what_the_users_now_use_in_json_markdown_and_html(replaced: DiffReport) -> None:
    [removed] = json.loads(json_format.render(replaced))["removed"]
    assert removed["users_now_use"] == [{
        "path": "kv.py", "qualname": "SpecRegistry", "kind": "class", "start_line": 5,
        "end_line": 10, "url": REGISTRY_URL}]
    registry = f'<a href="{REGISTRY_URL}"><code>kv.py::SpecRegistry</code></a>'
    assert f"| its users now use {registry} |" in markdown.render(replaced)
    page = html_page.render(replaced)
    assert '<span class="to">→ its users now use <code>kv.py::SpecRegistry</code></span>' in page
    assert ('<span class="label">its users now use</span><ul><li>'
            f'<a href="{REGISTRY_URL}" rel="noreferrer"><code>kv.py::SpecRegistry</code></a>'
            "</li></ul>") in page  # the summary above toggles: the links are in the body
