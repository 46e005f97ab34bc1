"""``annotate diff``: every symbol change between two indexed versions, in Markdown, JSON
and HTML, on the fake vLLM and a small hostile corpus (indexed from snapshots)."""

from __future__ import annotations

import html.parser
import json
import re
import shutil
import subprocess
from pathlib import Path

import fakevllm
import pytest
from click.testing import CliRunner, Result
from fakeproject import connected, indexed_project
from hypothesis import given, settings
from hypothesis import strategies as st

from annotate_cli import cli
from annotations import comparison, matching
from annotations.diffs import build
from annotations.forking import can_fork
from annotations.links import link_if_changed
from annotations.refs import parse_ref
from annotations.reports.markdown import code, text
from annotations.resolve import Resolver
from db.database import open_database
from indexer.config import load_config
from indexer.literals import LITERAL
from indexer.pipeline import index_version
from indexer.references import code_identifiers

CONFIG = """\
[repos.vllm]
versions = ["v0.1.0", "v0.2.0", "v0.3.0"]

[repos.evil]
github = "example/evil"
versions = ["h1", "h2"]
"""
SCRIPT = "<script>document.title='pwned'</script>"
HOSTILE_TEXT = f"{SCRIPT} cdiv | *bold* `tick` & <b>co</b>"
CLAIMS = f"""\
article: blog/<b>evil</b>.md
title: "Hostile {SCRIPT}"
at: vllm@v0.1.0
claims:
  - id: cdiv
    text: "{HOSTILE_TEXT}"
    refs: [vllm/utils.py::cdiv]
  - id: util
    text: "显存利用率默认是 0.9"
    refs: [vllm/config/cache.py::CacheConfig.gpu_memory_utilization]
  - id: util-at-new
    at: vllm@v0.2.0
    text: "written against v0.2.0's default"
    refs: [vllm/config/cache.py::CacheConfig.gpu_memory_utilization]
  - id: sched
    at: vllm@v0.2.0
    text: "the scheduler"
    refs: [vllm/core/scheduler.py::Scheduler]
  - id: render
    at: evil@h1
    text: "render {SCRIPT}"
    refs: [evil/render.py::render]
"""
ENGINE_CLAIMS = """\
article: notes/engine.md
at: vllm@v0.1.0
claims:
  - id: add-request
    text: "add_request builds the sequence group"
    refs: [vllm/engine/llm_engine.py::LLMEngine.add_request]
  - id: rms
    text: "RMSNorm never changes"
    refs: [vllm/model_executor/layers/layernorm.py::RMSNorm]
"""
EVIL_H1 = '''\
"""<script>alert(1)</script> in a docstring."""


def old_helper(x):
    return x


def helper(x):
    return x * 2


def caller(x):
    # helper is only named in this comment
    return old_helper(x)


def render():
    return "<script>alert(1)</script>"


EFFORT: Literal["low", "high"] | None = None


class Holder:
    class Meta:
        extra = "allow"
'''
EVIL_H2 = '''\
"""<script>alert(1)</script> in a docstring."""


def old_helper(x):
    return x


def helper(x):
    return x * 2


def caller(x):
    text = "old_helper is only named in this string"
    return helper(x) + len(text)


def render():
    return "<script>alert(1)</script></td></tr></table>" + "<script>document.title='pwned'</script>"


EFFORT: (
    Literal["low", "high", "max"] | None
) = Field(default=None)


class Holder:
    class Meta:
        extra = "forbid"
        strict = True
'''
EVIL = {"h1": {"evil/render.py": EVIL_H1}, "h2": {"evil/render.py": EVIL_H2}}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """annotate.toml, claims, and an index of the fake vLLM tags and the evil corpus,
    built from snapshots (no git, no network) and linked."""
    root = tmp_path_factory.mktemp("diff-project")
    (root / "annotate.toml").write_text(CONFIG, encoding="utf-8")
    (root / "annotations").mkdir()
    (root / "annotations" / "evil.yml").write_text(CLAIMS, encoding="utf-8")
    (root / "annotations" / "engine.yml").write_text(ENGINE_CLAIMS, encoding="utf-8")
    config = load_config(root)
    with open_database(config.db) as database:
        for tag in fakevllm.TAGS:
            source = root / "src" / tag
            fakevllm.write_snapshot(source, fakevllm.VERSIONS[tag])
            index_version(database, config, "vllm", tag, from_path=source, workers=1)
        for version, files in EVIL.items():
            source = root / "src" / version
            fakevllm.write_snapshot(source, files)
            index_version(database, config, "evil", version, from_path=source, workers=1)
        outcome = link_if_changed(database, config, force=True)
    assert outcome is not None and not outcome.errors
    return root


def run(project: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--config", str(project / "annotate.toml"), *args],
                              prog_name="annotate")


def ok(project: Path, *args: str) -> str:
    result = run(project, *args)
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    return result.stdout


def fails(project: Path, *args: str) -> str:
    """The one stderr line of a command that must exit 2, print nothing else, no traceback."""
    result = run(project, *args)
    assert (result.exit_code, result.stdout) == (2, ""), result.output
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    return result.stderr


def diff_json(project: Path, a: str, b: str, *options: str) -> dict:
    return json.loads(ok(project, "diff", f"vllm@{a}", f"vllm@{b}", "--format", "json",
                         *options))


def markdown_sections(text: str) -> dict[str, str]:
    """The text under each ``## Title (n)`` heading, by title."""
    found = {}
    for block in text.split("\n## ")[1:]:
        title, _, body = block.partition("\n")
        found[re.sub(r" \(\d+\)$", "", title)] = body
    return found


# --- every case in the right section --------------------------------------------------

# Section, kinds (changed and moved-with-changes), how (moves) of every fakevllm case.
EXPECTED: dict[str, tuple[str, tuple[str, ...], str | None]] = {
    "moved": ("moved", (), "moved"),
    "moved_and_changed": ("moved", ("members", "body"), "moved"),
    "renamed": ("moved", (), "renamed"),
    "signature_changed": ("changed", ("signature",), None),
    "body_changed": ("changed", ("body",), None),
    "decorator_changed": ("changed", ("signature",), None),
    "bases_changed": ("changed", ("bases",), None),
    "member_added": ("changed", ("members",), None),
    "added": ("added", (), None),
    "formatting_only": ("cosmetic", (), None),
    "attribute_value_changed": ("changed", ("value",), None),
    "constant_value_changed": ("changed", ("value",), None),
    "removed": ("removed", (), None),
    "ambiguous_move": ("moved", ("members",), "moved"),
}
TITLES = {"changed": "Changed", "moved": "Moved or renamed", "removed": "Removed",
          "added": "Added", "cosmetic": "Cosmetic"}


def test_expectations_cover_every_case() -> None:
    assert set(EXPECTED) == set(fakevllm.CASES)


def _ref(symbol: tuple[str, str]) -> str:
    return "::".join(symbol)


@pytest.mark.parametrize("name", sorted(fakevllm.CASES))
def test_every_case_in_its_json_section(project: Path, name: str) -> None:
    case = fakevllm.CASES[name]
    section, kinds, how = EXPECTED[name]
    report = diff_json(project, case.old_tag, case.new_tag)
    listed = {key: {entry["ref"]: entry for entry in report[key]} for key in TITLES}
    ref = _ref(case.old) if case.old else _ref(case.new[0])
    assert [key for key in TITLES if ref in listed[key]] == [section]
    entry = listed[section][ref]
    assert entry.get("kinds", []) == list(kinds)
    assert entry.get("how") == how
    if section == "moved":
        targets = [entry["new"], *entry["candidates"]]
        assert {f"{t['path']}::{t['qualname']}" for t in targets} == set(map(_ref, case.new))
    if section == "removed":
        assert entry["new"] is None


@pytest.mark.parametrize("name", sorted(fakevllm.CASES))
def test_every_case_in_its_markdown_section(project: Path, name: str) -> None:
    case = fakevllm.CASES[name]
    section = EXPECTED[name][0]
    text = ok(project, "diff", f"vllm@{case.old_tag}", f"vllm@{case.new_tag}")
    sections = markdown_sections(text)
    ref = _ref(case.old) if case.old else _ref(case.new[0])
    cell = f"| {code(ref)}"
    assert [title for title, body in sections.items() if cell in body] == [TITLES[section]]
    if section == "moved":
        assert code(_ref(case.new[0])) in sections[TITLES[section]]
    [row] = [line for line in sections[TITLES[section]].splitlines() if line.startswith(cell)]
    [entry] = [entry for entry in diff_json(project, case.old_tag, case.new_tag)[section]
               if entry["ref"] == ref]
    places = [(f"at {tag}", entry[side]["url"]) for tag, side in ((case.old_tag, "old"),
                                                                  (case.new_tag, "new"))
              if entry[side] is not None]
    linked = [(label, href) for href, label in re.findall(r'<a href="([^"]*)">([^<]*)</a>', row)
              if label.startswith("at ")]
    assert linked == places and all(url.startswith("https://github.com/") for _, url in places)
    targets = {"moved": [entry["new"], *entry.get("candidates", [])],
               "removed": entry.get("candidates", [])}.get(section, [])
    for target in targets:  # a move's target and candidates, a removed symbol's closest
        assert f'<a href="{target["url"]}"><code>' in row


@pytest.mark.skipif(not can_fork(), reason="needs os.fork")
@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_forked_workers_write_the_same_report(
    project: Path, fmt: str, forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    tags = fakevllm.TAGS
    diffs = [("diff", f"vllm@{a}", f"vllm@{b}", "--format", fmt)
             for a, b in zip(tags, tags[1:], strict=False)]
    alone = [ok(project, *args, "--workers", "3") for args in diffs]
    assert not forks  # a small diff does not fork
    with connected(project / ".annotate" / "index.db") as conn:
        conn.execute("DELETE FROM diff_cache")  # matched again, not read back
    monkeypatch.setattr(matching, "PARALLEL_MIN_SYMBOLS", 0)
    monkeypatch.setattr(build, "PARALLEL_MIN_PAIRS", 0)
    assert [ok(project, *args, "--workers", "3") for args in diffs] == alone
    assert forks, "the diff did not fork"


def test_the_help_of_workers_names_each_step_they_run() -> None:
    """--workers N forks N processes for matching and N for the usage step (8a24472):
    ``diff --help`` says so, as docs/commands.md does."""
    result = CliRunner().invoke(cli, ["diff", "--help"], terminal_width=200)
    [workers] = [line for line in result.output.splitlines() if "--workers" in line]
    assert "match symbols" in workers and "started or stopped using" in workers


def test_markdown_lists_sections_counts_and_packages(project: Path) -> None:
    text = ok(project, "diff", "vllm@v0.1.0", "vllm@v0.2.0")
    assert text.startswith("# vllm v0.1.0 → v0.2.0\n")
    sections = markdown_sections(text)
    assert list(sections) == ["Summary", "Affected articles", *TITLES.values()]
    assert "| changed | 8 | 8 |" in sections["Summary"]
    assert "| <code>vllm/config</code> | 0 | 3 | 0 | 0 | 0 |" in sections["Summary"]
    assert sections["Removed"].count("\n| <code>") == 1


# --- --annotated ----------------------------------------------------------------------


def test_annotated_keeps_cited_symbols_and_names_articles_first(project: Path) -> None:
    report = diff_json(project, "v0.1.0", "v0.2.0", "--annotated")
    listed = {key: [entry["ref"] for entry in report[key]] for key in TITLES}
    assert listed == {
        "changed": ["vllm/config/cache.py::CacheConfig.gpu_memory_utilization",
                    "vllm/utils.py::cdiv"],
        "moved": [], "removed": [], "added": [],
        "cosmetic": ["vllm/engine/llm_engine.py::LLMEngine.add_request"],
    }
    assert report["annotated"] is True
    assert report["counts"]["changed"] == 8  # the whole diff is still counted
    assert report["listed"]["changed"] == 2
    # util-at-new cites a changed symbol too, but was written against v0.2.0's code
    assert [(a["article"], [c["claim"] for c in a["claims"]]) for a in report["articles"]] == [
        ("blog/<b>evil</b>.md", ["cdiv", "util"]), ("notes/engine.md", ["add-request"]),
    ]
    cdiv = report["changed"][1]
    assert cdiv["claims"] == [{"article": "blog/<b>evil</b>.md", "claim": "cdiv",
                               "version": "v0.1.0", "ref": "vllm/utils.py::cdiv",
                               "file": "annotations/evil.yml", "line": 7}]
    text = ok(project, "diff", "vllm@v0.1.0", "vllm@v0.2.0", "--annotated")
    assert list(markdown_sections(text))[:2] == ["Affected articles", "Summary"]
    assert "RMSNorm" not in text and "is\\_neuron" not in text


def test_annotated_cites_by_the_new_location_too(project: Path) -> None:
    """The scheduler claim is pinned at v0.2.0; at v0.3.0 the class has moved."""
    report = diff_json(project, "v0.2.0", "v0.3.0", "--annotated")
    assert [entry["ref"] for entry in report["moved"]] == ["vllm/core/scheduler.py::Scheduler"]
    assert report["moved"][0]["new"]["path"] == "vllm/v1/core/sched/scheduler.py"
    assert report["articles"][0]["claims"][0]["symbols"] == [
        {"ref": "vllm/core/scheduler.py::Scheduler", "section": "moved"}
    ]


@pytest.mark.parametrize(("lines", "cited"), [
    pytest.param("L12", False, id="lines-that-stand-in-b"),
    pytest.param("L14", True, id="lines-that-changed"),
])
def test_a_line_ref_cites_a_changed_symbol_only_when_its_lines_changed(
    project: Path, tmp_path: Path, lines: str, cited: bool
) -> None:
    """As check sees it: a line ref whose lines stand in B is fresh or moved, whatever
    changed around them in the symbol they lie in (caller's body)."""
    shutil.copytree(project, tmp_path / "p", ignore=shutil.ignore_patterns("src"))
    (tmp_path / "p" / "annotations" / "lines.yml").write_text(
        "article: notes/lines.md\nat: evil@h1\nclaims:\n  - id: caller-line\n    text: x\n"
        f"    refs: [evil/render.py#{lines}]\n", encoding="utf-8")
    assert run(tmp_path / "p", "link").exit_code == 0
    report = json.loads(ok(tmp_path / "p", "diff", "evil@h1", "evil@h2", "--annotated",
                           "--format", "json"))
    claims = [claim["claim"] for article in report["articles"] for claim in article["claims"]]
    assert ("caller-line" in claims) is cited


def test_a_quote_that_still_stands_in_the_changed_symbol_is_not_affected(
    project: Path, tmp_path: Path
) -> None:
    """As check sees it: cdiv's body changed, but a claim whose quote still stands in it
    is fresh; one whose quote is gone must be revised."""
    shutil.copytree(project, tmp_path / "p", ignore=shutil.ignore_patterns("src"))
    claims = "".join(
        f"  - id: {claim_id}\n    text: x\n    refs:\n      - ref: vllm/utils.py::cdiv\n"
        f"        quote: '{quote}'\n"
        for claim_id, quote in (("signature", "def cdiv(a: int, b: int) -> int"),
                                ("old-return", "return -(a // -b)")))
    (tmp_path / "p" / "annotations" / "quotes.yml").write_text(
        f"article: notes/quotes.md\nat: vllm@v0.1.0\nclaims:\n{claims}", encoding="utf-8")
    assert run(tmp_path / "p", "link").exit_code == 0
    report = diff_json(tmp_path / "p", "v0.1.0", "v0.2.0", "--annotated")
    cited = [(article["article"], claim["claim"]) for article in report["articles"]
             for claim in article["claims"]]
    assert ("notes/quotes.md", "old-return") in cited
    assert ("notes/quotes.md", "signature") not in cited


@pytest.mark.parametrize(("versions", "a", "b", "listed"), [
    pytest.param(("v1", "v2", "v3"), "v1", "v2", ["before"], id="forwards"),
    pytest.param(("v1", "v2", "v3"), "v3", "v2", ["after"], id="backwards"),
    pytest.param(("v1", "v2", "main"), "v1", "v2", ["before"], id="pinned-at-a-branch-listed-last"),
    pytest.param(("stable", "next", "main"), "stable", "next", ["before"], id="branches-forwards"),
    pytest.param(("stable", "next", "main"), "main", "next", ["after"], id="branches-backwards"),
])
def test_a_claim_written_past_the_newer_version_is_not_affected(
    tmp_path: Path, versions: tuple[str, str, str], a: str, b: str, listed: list[str]
) -> None:
    """A diff from v1 to v2 lists what changed under the claims written before v2; one
    pinned at v3 was written against code that had those changes already, though its
    symbol changed again after v2 (check, asked from v3 back to v2, calls it changed).
    A diff backwards, from v3 to v2, leaves out the claim pinned at v1 likewise. Names that
    are not version numbers are ordered as `versions` lists them, oldest first."""
    bodies = dict(zip(versions, ("return a + b", "return b + a", "return a + b + 0"),
                      strict=True))
    claims = "".join(f"  - id: {name}\n    at: vllm@{tag}\n    text: x\n"
                     f"    refs: [vllm/ops.py::add]\n"
                     for name, tag in (("before", versions[0]), ("after", versions[2])))
    indexed_project(tmp_path, {tag: {"vllm/ops.py": f"def add(a, b):\n    {body}\n"}
                               for tag, body in bodies.items()},
                    f"article: notes/pins.md\nclaims:\n{claims}", repo="vllm")
    report = diff_json(tmp_path, a, b, "--annotated")
    assert [claim["claim"] for article in report["articles"]
            for claim in article["claims"]] == listed


@pytest.mark.parametrize(("cited", "markdown", "html"), [
    pytest.param(["add"], "only the 1 changed symbol that claims cite is listed.",
                 "only the <b>1</b> changed symbol that claims cite is listed", id="one"),
    pytest.param(["add", "sub"], "only the 2 changed symbols that claims cite are listed.",
                 "only the <b>2</b> changed symbols that claims cite are listed", id="two"),
])
def test_an_annotated_diff_counts_its_symbols_in_words(
    tmp_path: Path, cited: list[str], markdown: str, html: str
) -> None:
    """An article of one claim on a changed symbol read "only the 1 changed symbols that
    claims cite are listed", which reads as a typo in the report's first line."""
    bodies = {"v1": ("a + b", "a - b"), "v2": ("b + a", "-(b - a)")}
    refs = ", ".join(f"vllm/ops.py::{name}" for name in cited)
    indexed_project(tmp_path, {tag: {"vllm/ops.py": f"def add(a, b):\n    return {add}\n\n\n"
                                                    f"def sub(a, b):\n    return {sub}\n"}
                               for tag, (add, sub) in bodies.items()},
                    f"article: notes/ops.md\nat: vllm@v1\nclaims:\n  - id: ops\n"
                    f"    text: x\n    refs: [{refs}]\n", repo="vllm")
    assert markdown in ok(tmp_path, "diff", "vllm@v1", "vllm@v2", "--annotated")
    assert html in html_page(tmp_path, "vllm@v1", "vllm@v2", "--annotated")


@pytest.fixture(scope="module")
def two_quotes(project: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project with a claim citing cdiv through two refs, each quoting a line that
    v0.2.0 rewrote."""
    root = tmp_path_factory.mktemp("two-quotes") / "p"
    shutil.copytree(project, root, ignore=shutil.ignore_patterns("src"))
    refs = "".join(f"      - ref: vllm/utils.py::cdiv\n        quote: '{quote}'\n"
                   for quote in ("return -(a", "a // -b)"))
    (root / "annotations" / "quotes.yml").write_text(
        "article: notes/quotes.md\nat: vllm@v0.1.0\nclaims:\n  - id: ceiling\n"
        f"    text: x\n    refs:\n{refs}", encoding="utf-8")
    assert run(root, "link").exit_code == 0
    return root


def test_each_citing_ref_is_named_by_its_file_line_and_quote(two_quotes: Path) -> None:
    """Two refs of one claim to one symbol are two citations an author edits apart: each
    says where it is written and what it quotes, in every format."""
    report = diff_json(two_quotes, "v0.1.0", "v0.2.0", "--annotated")
    cdiv = next(entry for entry in report["changed"] if entry["ref"] == "vllm/utils.py::cdiv")
    assert [claim for claim in cdiv["claims"] if claim["claim"] == "ceiling"] == [
        {"article": "notes/quotes.md", "claim": "ceiling", "version": "v0.1.0",
         "ref": "vllm/utils.py::cdiv", "file": "annotations/quotes.yml", "line": line,
         "quote": quote}
        for line, quote in ((7, "return -(a"), (9, "a // -b)"))
    ]
    article = next(a for a in report["articles"] if a["article"] == "notes/quotes.md")
    assert [(c["claim"], c["file"], c["line"]) for c in article["claims"]] == [
        ("ceiling", "annotations/quotes.yml", 7)]
    text = ok(two_quotes, "diff", "vllm@v0.1.0", "vllm@v0.2.0", "--annotated")
    assert ("cited by <code>blog/&lt;b&gt;evil&lt;/b&gt;.md\\#cdiv</code> "
            "(annotations/evil.yml:7), <code>notes/quotes.md\\#ceiling</code> "
            "(annotations/quotes.yml:7, quote <code>return -(a</code>), "
            "<code>notes/quotes.md\\#ceiling</code> (annotations/quotes.yml:9, "
            "quote <code>a // -b)</code>) |") in text
    assert ("- <code>ceiling</code> @v0.1.0 in annotations/quotes.yml:7: x<br>"
            "cites <code>vllm/utils.py::cdiv</code> (changed)") in text
    page = html_page(two_quotes, "vllm@v0.1.0", "vllm@v0.2.0", "--annotated")
    assert ('<li><code>notes/quotes.md#ceiling</code> <span class="pin">@v0.1.0</span> '
            '<span class="where">annotations/quotes.yml:9</span> <span class="text">x</span>'
            '<div class="quote">quote <code>a // -b)</code></div></li>') in page
    assert ('<code class="claim">#ceiling</code> <span class="pin">@v0.1.0</span> '
            '<span class="where">annotations/quotes.yml:7</span>') in page


def test_an_annotated_diff_before_any_link_says_it_shows_no_claim(
    project: Path, tmp_path: Path
) -> None:
    """Index, then diff, as the README's release-day steps go: with no link yet the report
    lists no claim, which must not pass for "no article affected"."""
    root = tmp_path / "p"
    shutil.copytree(project, root, ignore=shutil.ignore_patterns("src", ".annotate"))
    for tag in ("v0.1.0", "v0.2.0"):
        ok(root, "index", f"vllm@{tag}", "--from", str(project / "src" / tag))
    result = run(root, "diff", "vllm@v0.1.0", "vllm@v0.2.0", "--annotated")
    assert result.exit_code == 0 and "No claim cites a listed symbol." not in result.stdout
    assert result.stderr == (
        "Note: no claim is linked yet, so none is shown here; run 'annotate link' (or "
        "'annotate check') first\n")
    assert run(root, "link").exit_code == 0
    assert run(root, "diff", "vllm@v0.1.0", "vllm@v0.2.0", "--annotated").stderr == ""


NOT_LINKED = "No claim is linked yet, so none is shown: run <code>annotate link</code> (or " \
             "<code>annotate check</code>) first."
NONE_CITED = "No claim cites a listed symbol."


@pytest.mark.parametrize("options", [(), ("--annotated",)], ids=["whole", "annotated"])
def test_a_diff_before_any_link_says_so_in_its_report(
    project: Path, tmp_path: Path, options: tuple[str, ...]
) -> None:
    """The report file, which outlives the note on stderr, tells "none linked yet" from
    "none cites a listed symbol", in every format; once linked, as before."""
    root = tmp_path / "p"
    shutil.copytree(project, root, ignore=shutil.ignore_patterns("src", ".annotate"))
    for tag in ("v0.1.0", "v0.2.0"):
        ok(root, "index", f"vllm@{tag}", "--from", str(project / "src" / tag))
    args = ("diff", "vllm@v0.1.0", "vllm@v0.2.0", *options, "--format")
    for linked in (False, True):
        if linked:
            assert run(root, "link").exit_code == 0
        assert json.loads(run(root, *args, "json").stdout)["claims_linked"] is linked
        text = run(root, *args, "markdown").stdout
        assert ("## Affected articles\n\n" + NOT_LINKED in text) is not linked
        page = run(root, *args, "html").stdout
        assert (f'<p class="note">{NOT_LINKED}</p>' in page) is not linked
        assert (NONE_CITED in text, NONE_CITED in page) == (False, False)


NONE_STORED = "The last link stored no claim, so none is shown: run <code>annotate link</code> " \
              "to see which annotation files could not be loaded."


@pytest.mark.parametrize("options", [(), ("--annotated",)], ids=["whole", "annotated"])
def test_a_diff_after_a_link_that_stored_no_claim_says_so_in_its_report(
    project: Path, tmp_path: Path, options: tuple[str, ...]
) -> None:
    """A link whose every annotation file failed to load stores no claim: the report says
    the link ran and stored none, not "none linked yet" nor "none cites a listed symbol"."""
    root = tmp_path / "p"
    shutil.copytree(project, root, ignore=shutil.ignore_patterns("src", ".annotate"))
    for tag in ("v0.1.0", "v0.2.0"):
        ok(root, "index", f"vllm@{tag}", "--from", str(project / "src" / tag))
    for path in (root / "annotations").iterdir():
        path.write_text("claims: [\n", encoding="utf-8")
    assert run(root, "link").exit_code != 0
    args = ("diff", "vllm@v0.1.0", "vllm@v0.2.0", *options, "--format")
    report = json.loads(run(root, *args, "json").stdout)
    assert (report["claims_linked"], report["claims_stored"], report["articles"]) == (True, 0, [])
    text = run(root, *args, "markdown")
    assert "## Affected articles\n\n" + NONE_STORED in text.stdout
    assert "no claim is linked yet" not in text.stderr
    page = run(root, *args, "html").stdout
    assert f'<p class="note">{NONE_STORED}</p>' in page
    assert (NOT_LINKED in text.stdout, NOT_LINKED in page) == (False, False)
    assert (NONE_CITED in text.stdout, NONE_CITED in page) == (False, False)
    (root / "annotations" / "engine.yml").write_text("claims: [{\n", encoding="utf-8")
    assert run(root, *args, "markdown").stderr.startswith(
        "Note: the annotation files, the index or annotate changed since the last link")


def test_annotated_in_another_repo(project: Path) -> None:
    text = ok(project, "diff", "evil@h1", "evil@h2", "--annotated")
    sections = markdown_sections(text)
    assert "evil/render.py::render" in sections["Changed"]
    assert "caller" not in text


# --- started and stopped using --------------------------------------------------------


def evil_json(project: Path, *options: str) -> dict:
    return json.loads(ok(project, "diff", "evil@h1", "evil@h2", "--format", "json", *options))


def test_started_and_stopped_using(project: Path) -> None:
    changed = {entry["ref"]: entry for entry in evil_json(project)["changed"]}
    caller = changed["evil/render.py::caller"]
    # helper was only named in a comment before; old_helper is only named in a string now
    assert (caller["started_using"], caller["stopped_using"]) == (["helper"], ["old_helper"])
    assert (caller["started_using_total"], caller["stopped_using_total"]) == (1, 1)
    render = changed["evil/render.py::render"]
    assert (render["started_using"], render["stopped_using"]) == ([], [])


def test_started_using_in_markdown(project: Path) -> None:
    text = ok(project, "diff", "evil@h1", "evil@h2")
    row = next(line for line in text.splitlines() if "evil/render.py::caller" in line)
    assert row.endswith("| <code>helper</code> | <code>old\\_helper</code> |")


def test_every_kind_of_change_of_a_symbol_is_in_every_format(project: Path) -> None:
    """An attribute whose annotation and value both changed: neither hides the other."""
    changes = ['annotation changed: Literal["low", "high"] | None -> '
               '(Literal["low", "high", "max"] | None)',
               "value changed: None -> Field(default=None)"]
    effort = {e["ref"]: e for e in evil_json(project)["changed"]}["evil/render.py::EFFORT"]
    assert (effort["kinds"], effort["changes"]) == (["annotation", "value"], changes)
    row = next(line for line in ok(project, "diff", "evil@h1", "evil@h2").splitlines()
               if line.startswith(f"| {code('evil/render.py::EFFORT')}"))
    assert f"| {'<br>'.join(text(line) for line in changes)} |" in row
    page = html_page(project, "evil@h1", "evil@h2")
    entry = page[page.index('<span class="path">evil/render.py::</span>EFFORT</code>'):]
    entry = entry[:entry.index("</details>")]
    assert '<span class="chip">annotation</span> <span class="chip">value</span>' in entry
    assert ('<ul class="changes">' + "".join(f"<li>{html.escape(line)}</li>" for line in changes)
            + "</ul>") in entry


def test_a_body_changed_by_a_nested_class_says_which_in_every_format(project: Path) -> None:
    """JSON keeps its one-line ``changes`` and gains ``nested``; Markdown and HTML say the
    nested class and its changes after "body changed"."""
    holder = {e["ref"]: e for e in evil_json(project)["changed"]}["evil/render.py::Holder"]
    assert (holder["kinds"], holder["changes"]) == (["body"], ["body changed"])
    assert holder["nested"] == [{"class": "Meta",
                                 "changes": ["members changed: added strict; changed extra"]}]
    line = "body changed (nested Meta: members changed: added strict; changed extra)"
    row = next(row for row in ok(project, "diff", "evil@h1", "evil@h2").splitlines()
               if row.startswith(f"| {code('evil/render.py::Holder')}"))
    assert f"| {text(line)} |" in row
    page = html_page(project, "evil@h1", "evil@h2")
    entry = page[page.index('<span class="path">evil/render.py::</span>Holder</code>'):]
    assert f'<ul class="changes"><li>{html.escape(line)}</li></ul>' in entry[
        :entry.index("</details>")]


def test_a_class_that_gains_a_base_started_using_it(project: Path) -> None:
    changed = {e["ref"]: e for e in diff_json(project, "v0.1.0", "v0.2.0")["changed"]}
    linear = changed["vllm/model_executor/layers/linear.py::ColumnParallelLinear"]
    assert (linear["started_using"], linear["stopped_using"]) == (["LinearBase"], [])
    # a new method is the class's own definition, not something it uses
    assert changed["vllm/sampling_params.py::SamplingParams"]["started_using"] == []


# The identifiers of code, by their definition: every regex match in each piece of code
# between string literals and comments. ``code_identifiers`` must find the same set.
IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


def reference_identifiers(data: bytes) -> set[bytes]:
    code_parts = LITERAL.split(data)[0::2]
    return {name for part in code_parts for name in IDENTIFIER.findall(part)}


CODE_TEXT = st.text(alphabet=list("ab_1e9 \n\t#'\"\\xr.()"), max_size=80)


@settings(max_examples=300, deadline=None)
@given(CODE_TEXT)
def test_code_identifiers_agree_with_the_regex_reference(text: str) -> None:
    data = text.encode()
    assert code_identifiers(data) == reference_identifiers(data)


def test_code_identifiers_on_real_files() -> None:
    for tag in fakevllm.TAGS:
        for data in fakevllm.python_files(tag).values():
            assert code_identifiers(data) == reference_identifiers(data)
    assert code_identifiers(b"x = 1e5 + 0x1f  # y\nz = 'w'") == {b"x", b"e5", b"x1f", b"z"}


# --- JSON shape -----------------------------------------------------------------------

COMMON_KEYS = {"ref", "kind", "package", "old", "new", "claims"}
LOCATION_KEYS = {"path", "qualname", "kind", "start_line", "end_line", "url"}
USAGE_KEYS = {"kinds", "changes", "nested", "started_using", "started_using_total", "stopped_using",
              "stopped_using_total"}


def test_json_shape(project: Path) -> None:
    report = diff_json(project, "v0.2.0", "v0.3.0")
    assert list(report) == ["repo", "from", "to", "annotated", "claims_linked",
                            "claims_stored", "counts", "listed", "packages", "articles",
                            *TITLES, "lines"]
    assert (report["repo"], report["from"], report["to"]) == ("vllm", "v0.2.0", "v0.3.0")
    assert list(report["counts"]) == ["unchanged", "cosmetic", "changed", "moved", "removed",
                                      "added"]
    totals = {verdict: sum(c.get(verdict, 0) for c in report["packages"].values())
              for verdict in report["counts"]}
    assert totals == report["counts"]
    assert report["listed"] == {key: len(report[key]) for key in TITLES}
    for entry in report["moved"]:
        expected = COMMON_KEYS | {"how", "content", "score", "candidates"}
        if entry["content"] == "changed":
            expected |= USAGE_KEYS
        assert set(entry) == expected
        assert set(entry["old"]) == set(entry["new"]) == LOCATION_KEYS
    for entry in report["added"]:
        assert set(entry) == COMMON_KEYS and entry["old"] is None
    moved = {entry["ref"]: entry for entry in report["moved"]}
    engine = moved["vllm/worker/cache_engine.py::CacheEngine"]["new"]
    assert engine["url"] == ("https://github.com/vllm-project/vllm/blob/v0.3.0/"
                             f"vllm/v1/worker/cache_engine.py#L{engine['start_line']}-"
                             f"L{engine['end_line']}")


def test_json_sections_are_one_symbol_per_line(project: Path) -> None:
    text = ok(project, "diff", "vllm@v0.1.0", "vllm@v0.2.0", "--format", "json")
    lines = [line for line in text.splitlines() if line.startswith('    {"ref": ')]
    assert len(lines) == 19


# --- escaping -------------------------------------------------------------------------


def test_markdown_escapes_claims_and_paths(project: Path) -> None:
    text = ok(project, "diff", "vllm@v0.1.0", "vllm@v0.2.0", "--annotated")
    assert "<script" not in text and "<b>" not in text
    assert ("&lt;script&gt;document.title='pwned'&lt;/script&gt; cdiv \\| \\*bold\\* "
            "\\`tick\\` &amp; &lt;b&gt;co&lt;/b&gt;") in text
    assert "### blog/&lt;b&gt;evil&lt;/b&gt;.md — Hostile &lt;script&gt;" in text


# --- HTML -----------------------------------------------------------------------------

VOID = {"meta", "col", "br", "hr", "img", "input", "link"}
RESOURCE = re.compile(r"""\bsrc\s*=|url\s*\(|@import|<link\b|<script\b|<iframe\b|<object\b|"""
                      r"""<embed\b|<img\b""", re.IGNORECASE)


class TagChecker(html.parser.HTMLParser):
    """Every element closed in order; every <details> with a <summary>; the hrefs."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.hrefs: list[str] = []
        self.tags: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.hrefs += [value or "" for name, value in attrs if name == "href"]
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def check_page(page: str) -> TagChecker:
    checker = TagChecker()
    checker.feed(page)
    checker.close()
    assert checker.stack == []
    assert page.count("<details") == page.count("<summary>")
    return checker


def html_page(project: Path, *args: str) -> str:
    return ok(project, "diff", *args, "--format", "html")


def test_html_parses_and_loads_nothing(project: Path) -> None:
    for args in (("vllm@v0.1.0", "vllm@v0.2.0"), ("vllm@v0.2.0", "vllm@v0.3.0"),
                 ("evil@h1", "evil@h2")):
        page = html_page(project, *args)
        assert page.startswith("<!DOCTYPE html>")
        checker = check_page(page)
        assert RESOURCE.search(page) is None
        assert "script" not in checker.tags
        for href in checker.hrefs:
            assert href.startswith(("#", "https://github.com/")), href
        assert "default-src 'none'" in page


def test_html_escapes_hostile_claims_and_code(project: Path) -> None:
    page = html_page(project, "evil@h1", "evil@h2")
    assert "<script" not in page.lower()
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;" in page
    assert "&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;" in page  # code, escaped
    text = "".join(check_page(page).text)
    assert f"render {SCRIPT}" in text  # the claim, as text
    assert '"<script>alert(1)</script></td></tr></table>" + "<script>' in text  # the code
    page = html_page(project, "vllm@v0.1.0", "vllm@v0.2.0")
    text = "".join(check_page(page).text)
    assert HOSTILE_TEXT in text and "blog/<b>evil</b>.md" in text
    assert 'id="changed:vllm/utils.py::cdiv"' in page


def test_html_summary_claims_and_side_by_side(project: Path) -> None:
    page = html_page(project, "vllm@v0.1.0", "vllm@v0.2.0")
    assert '<section id="summary">' in page
    assert '<div class="card v-changed"><span class="num">8</span>' in page
    assert page.index('id="summary"') < page.index('id="claims"') < page.index('id="changed"')
    assert '<table class="sbs">' in page and "<ins>" in page and "<del>" in page
    assert 'href="https://github.com/vllm-project/vllm/blob/v0.2.0/vllm/utils.py#L10-L12"' in page
    annotated = html_page(project, "vllm@v0.1.0", "vllm@v0.2.0", "--annotated")
    assert annotated.index('id="claims"') < annotated.index('id="summary"')


@pytest.mark.parametrize("options", [
    pytest.param((), id="with-side-by-side-diffs"),
    pytest.param(("--max-diffs", "0"), id="without"),
])
def test_html_opens_every_cited_symbol_a_claim_links_to(
    project: Path, tmp_path: Path, options: tuple[str, ...]
) -> None:
    """A claim's link lands on its symbol with why it is listed in view: what cites it
    (which ref, which quote), its closest candidates; a removed symbol has no sources."""
    shutil.copytree(project, tmp_path / "p", ignore=shutil.ignore_patterns("src"))
    (tmp_path / "p" / "annotations" / "gone.yml").write_text(
        "article: notes/gone.md\nat: vllm@v0.1.0\nclaims:\n  - id: neuron\n    text: x\n"
        "    refs: [vllm/utils.py::is_neuron]\n", encoding="utf-8")
    assert run(tmp_path / "p", "link").exit_code == 0
    page = html_page(tmp_path / "p", "vllm@v0.1.0", "vllm@v0.2.0", "--annotated", *options)
    cited = re.findall(r'<(\w+) class="sym[^"]*" id="([^"]*)"([^>]*)>', page)
    assert {anchor for _, anchor, _ in cited} >= {"removed:vllm/utils.py::is_neuron",
                                                  "changed:vllm/utils.py::cdiv"}
    assert [(anchor, tag, rest) for tag, anchor, rest in cited
            if (tag, rest) != ("details", " open")] == []


def test_html_caps_side_by_side_diffs_and_says_so(project: Path) -> None:
    page = html_page(project, "vllm@v0.1.0", "vllm@v0.2.0", "--max-diffs", "1")
    assert page.count('<table class="sbs">') == 1
    assert "Side-by-side diffs are shown for 1 of the 10" in page
    # the one shown is a cited symbol (cited symbols come first)
    shown = page[:page.index('<table class="sbs">')].rsplit('<details class="sym"', 1)[1]
    assert "cited ×" in shown
    assert "Side-by-side diffs are shown" not in html_page(project, "vllm@v0.1.0",
                                                          "vllm@v0.2.0")


def test_output_file(project: Path, tmp_path: Path) -> None:
    target = tmp_path / "page.html"
    assert ok(project, "diff", "vllm@v0.1.0", "vllm@v0.2.0", "--format", "html", "--output",
              str(target)) == ""
    check_page(target.read_text(encoding="utf-8"))


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed")
def test_html_in_a_headless_browser(project: Path, tmp_path: Path) -> None:
    page = tmp_path / "diff.html"
    page.write_text(html_page(project, "evil@h1", "evil@h2"), encoding="utf-8")
    done = chromium(tmp_path / "profile", "--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    assert '<section id="summary"><h2>Summary<a class="top"' in dom
    title = re.search(r"<title>(.*?)</title>", dom, re.DOTALL)
    assert title is not None and title.group(1) == "annotate diff: evil h1 → h2"
    assert "pwned</title>" not in dom and "<script" not in dom.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    shot = tmp_path / "page.png"
    done = chromium(tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,2000",
                    page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


# --- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(("versions", "wrong"), [
    pytest.param(("vllm@v9", "vllm@v0.1.0"), "'REPO@A': vllm@v9", id="first"),
    pytest.param(("vllm@v0.1.0", "vllm@v9"), "'REPO@B': vllm@v9", id="second"),
    pytest.param(("vllm@v9", "vllm@v8"), "'REPO@A': vllm@v9", id="both-the-first-named"),
])
def test_unindexed_version_names_the_argument(
    project: Path, versions: tuple[str, str], wrong: str
) -> None:
    assert fails(project, "diff", *versions) == (
        f"Error: Invalid value for {wrong} is neither indexed nor configured (vllm has v0.1.0, "
        "v0.2.0, v0.3.0); fix the version, or run 'annotate index vllm@v9' to index it (see "
        "'annotate diff --help')\n"
    )


def test_versions_of_different_repos(project: Path) -> None:
    error = fails(project, "diff", "vllm@v0.1.0", "evil@h1")
    assert error.startswith("Error: vllm@v0.1.0 and evil@h1 are versions of different repos")


def test_unknown_repo(project: Path) -> None:
    assert fails(project, "diff", "nope@v1", "nope@v2").startswith("Error: unknown repo 'nope'")


@pytest.mark.parametrize("versions", [("vLLM@v0.1.0", "vllm@v0.2.0"),
                                      ("vllm@v0.1.0", "vLLM@v0.2.0")],
                         ids=["older", "newer"])
def test_a_misspelt_repo_is_named_not_called_another_repo(
    project: Path, versions: tuple[str, str]
) -> None:
    """Not 'versions of different repos', with a diff of two vLLM@ versions to try."""
    assert fails(project, "diff", *versions).startswith(
        "Error: unknown repo 'vLLM'; did you mean 'vllm'? configured repos are: ")


@pytest.mark.parametrize("args", [
    ("diff", "vllm@v0.1.0"),
    ("diff", "vllm", "vllm@v0.2.0"),
    ("diff", "vllm@v0.1.0", "vllm@v0.2.0", "--format", "pdf"),
    ("diff", "vllm@v0.1.0", "vllm@v0.2.0", "--max-diffs", "-1"),
], ids=["one-version", "no-at", "bad-format", "negative-limit"])
def test_bad_arguments_are_usage_errors(project: Path, args: tuple[str, ...]) -> None:
    result = run(project, *args)
    assert result.exit_code == 2 and result.stdout == ""
    assert "Traceback" not in result.stderr and "Error:" in result.stderr


def test_missing_index(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "none.db"), "diff",
                                      "vllm@v0.1.0", "vllm@v0.2.0"])
    assert result.exit_code == 2 and result.stderr.startswith("Error: no index at")


def test_same_version_lists_nothing_and_says_it_was_compared_with_itself(project: Path) -> None:
    """A report all the same (a script may diff the last target with a new one that is the
    same), but a one-line note: most likely one of the two was mistyped."""
    result = run(project, "diff", "vllm@v0.2.0", "vllm@v0.2.0", "--format", "json")
    assert (result.exit_code, result.stderr) == (
        0, "Note: vllm@v0.2.0 was compared with itself, so nothing changed; name another "
           "version of vllm to compare it with (the others indexed: v0.1.0, v0.3.0)\n")
    report = json.loads(result.stdout)
    assert report["listed"] == dict.fromkeys(TITLES, 0)
    assert report["counts"]["unchanged"] > 0


def test_the_one_version_indexed_compared_with_itself_says_to_index_another(
    tmp_path: Path
) -> None:
    """Not 'name another version', when the index has none to name."""
    (tmp_path / "annotate.toml").write_text('[repos.evil]\ngithub = "example/evil"\n'
                                            'versions = ["h1"]\n', encoding="utf-8")
    config = load_config(tmp_path)
    fakevllm.write_snapshot(tmp_path / "src", EVIL["h1"])
    with open_database(config.db) as database:
        index_version(database, config, "evil", "h1", from_path=tmp_path / "src", workers=1)
    result = run(tmp_path, "diff", "evil@h1", "evil@h1", "--format", "json")
    assert (result.exit_code, result.stderr) == (
        0, "Note: evil@h1 was compared with itself, so nothing changed; no other version of "
           "evil is indexed: index one to compare it with ('annotate index evil@VERSION')\n")


# --- uses: relations ------------------------------------------------------------------

TOY_CONFIG = """\
[repos.toy]
github = "example/toy"
versions = ["k1", "k2"]
target = "k2"

[repos.lib]
github = "example/lib"
versions = ["l1"]
"""
KDA = '''\
class {name}:
    def __init__(self, heads, head_dim):
        self.heads = heads
        self.head_dim = head_dim

    def forward(self, q, k, v, beta):
        state = self.state_of(q)
        return delta_rule(state, q, k, v, beta)

    def state_of(self, q):
        return q.new_zeros(self.heads, self.head_dim, self.head_dim)
'''
CACHE_K1 = '''\
class BlockCache:
    def get(self, key):
        return self.blocks[key]
'''
LAYER = '''\
from toy.kda import {attention}
from toy.cache import BlockCache


def helper(x):
    return x


class DecoderLayer:
    def __init__(self, config):
        self.is_kda = config.is_kda
        self.attn = {attention}(config.heads, config.head_dim)
        self.cache = BlockCache()
        self.pool = {pool}(config)

    def forward(self, x):
        """Runs the layer."""
        return {forward}
'''
KERNEL = "// delta rule\n__global__ void kda(float* s) {\n  s[0] = 1.0f;\n}\n"
GATE = "// gate\n__global__ void gate(float* g) {\n  g[0] = sigmoid(g[0]);\n}\n"
NORM = """\
class Base:
    def __init__(self):
        self.eps = 1e-6


class Fused:
    def __init__(self):
        self.eps = 1e-5


class RMSNorm(Base):
    def __init__(self):
        super().__init__()
        self.weight = 1.0
"""
ROPE = "// rotary embedding\n__global__ void rope(float* q) {\n  q[0] = cos(q[0]);\n}\n"
RENAMED_MODULE = "import os\nimport sys\n\n\ndef helper_of_a_renamed_module():\n    return 7\n"
TOY = {
    "k1": {"toy/kda.py": KDA.format(name="KimiDeltaAttention"),
           "toy/kernel.cu": KERNEL, "toy/gone.py": "import toy.kda\n", "toy/ops/gate.cu": GATE,
           "toy/old_mod.py": RENAMED_MODULE, "toy/kv/rope.cu": ROPE, "toy/norm.py": NORM,
           "toy/cache.py": CACHE_K1,
           "toy/layer.py": LAYER.format(attention="KimiDeltaAttention", pool="Pool",
                                        forward="helper(self.attn.forward(x))")},
    "k2": {"toy/kda.py": KDA.format(name="KimiGatedDeltaNetAttention"),
           "toy/kernel.cu": KERNEL.replace("1.0f", "0.0f"), "toy/kernels/gate.cu": GATE,
           "toy/new_mod.py": RENAMED_MODULE.replace("import os", "import re"),
           "toy/kv/rotary/rope_kernels.cu": ROPE.replace("cos(", "__cosf("),
           "toy/norm.py": NORM.replace("RMSNorm(Base)", "RMSNorm(Fused)"),
           "toy/cache.py": CACHE_K1.replace("self.blocks[key]", "self.blocks.get(key)"),
           "toy/layer.py": LAYER.format(attention="KimiGatedDeltaNetAttention",
                                        pool="BlockPool", forward="self.attn.forward(x)")},
}
for version, size in (("k1", 1), ("k2", 2)):
    TOY[version]["toy/pool.py"] = f"class Pool:\n    size = {size}\n"
LIB = {"l1": {"lib/pool.py": "class Pool:\n    pass\n"}}
# Each claim's ref is a symbol of toy/layer.py (or the ref given), with a quote that
# stands at k2 and one uses: target; then (listed symbol, section, the ref that uses it
# when cited through uses:) of every entry citing the claim in the annotated diff, and
# check's status.
_INIT = "DecoderLayer.__init__"
_QUOTE = "self.is_kda = config.is_kda"
USES_CASES = {
    "target-renamed": (
        _INIT, _QUOTE, "toy/kda.py::KimiDeltaAttention",
        {("toy/layer.py::DecoderLayer.__init__", "changed", None),
         ("toy/kda.py::KimiDeltaAttention", "moved", f"toy/layer.py::{_INIT}")},
        "relation-missing"),
    "unchanged-target-no-longer-named": (
        "DecoderLayer.forward", "Runs the layer.", "toy/layer.py::helper",
        {("toy/layer.py::DecoderLayer.forward", "changed", None)}, "relation-missing"),
    "target-in-another-repo-no-longer-named": (
        _INIT, _QUOTE, "lib@l1:lib/pool.py::Pool",
        {("toy/layer.py::DecoderLayer.__init__", "changed", None)}, "relation-missing"),
    "target-pinned-at-b-no-longer-named": (
        _INIT, _QUOTE, "toy@k2:toy/pool.py::Pool",
        {("toy/layer.py::DecoderLayer.__init__", "changed", None),
         ("toy/pool.py::Pool", "changed", f"toy/layer.py::{_INIT}")}, "relation-missing"),
    # only its class's bases changed, which super() names
    "unchanged-method-of-a-class-whose-bases-changed": (
        "toy/norm.py::RMSNorm.__init__", "self.weight = 1.0", "toy/norm.py::Base.__init__",
        {("toy/norm.py::RMSNorm", "changed", None)}, "relation-missing"),
    "changed-target-still-named": (
        _INIT, _QUOTE, "toy/cache.py::BlockCache", set(), "fresh"),
    # broken at k1 already: no change from k1 to k2 made them so, and they cite nothing
    "relation-wrong-from-the-start": (
        "DecoderLayer.forward", "Runs the layer.", "toy/kda.py::KimiDeltaAttention", set(),
        "broken"),
    "a-target-missing-at-the-pin": (
        _INIT, "self.attn", "toy/kda.py::Nope, toy/kda.py::KimiDeltaAttention", set(),
        "broken"),
}
BROKEN_AT_THE_PIN = [claim for claim, row in USES_CASES.items() if row[-1] == "broken"]


# A line ref (at k1) per claim; where the annotated diff lists it ("lines", or the section
# of the symbol that holds it), or None; check's status; and where both say its lines went.
LINE_CASES = {
    "changed-import": ("toy/layer.py#L1", ("lines", "toy/layer.py#L1"), "changed", None),
    "standing-import": ("toy/layer.py#L2", None, "fresh", None),
    "changed-kernel-line": ("toy/kernel.cu#L3", ("lines", "toy/kernel.cu#L3"), "changed",
                            None),
    "unchanged-kernel-line": ("toy/kernel.cu#L2", None, "fresh", None),
    "file-gone": ("toy/gone.py#L1", ("lines", "toy/gone.py#L1"), "removed", None),
    "file-moved": ("toy/ops/gate.cu#L2-L3", ("lines", "toy/ops/gate.cu#L2-L3"), "moved",
                   "toy/kernels/gate.cu#L2-L3"),
    "module-renamed-lines-changed": ("toy/old_mod.py#L1-L2", ("lines", "toy/old_mod.py#L1-L2"),
                                     "removed", None),
    "kernel-renamed-lines-changed": ("toy/kv/rope.cu#L3", ("lines", "toy/kv/rope.cu#L3"),
                                     "removed", None),
    "in-a-changed-method": ("toy/layer.py#L12", ("changed", "toy/layer.py::DecoderLayer.__init__"),
                            "changed", None),
}


@pytest.fixture(scope="module")
def toy_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two versions of a toy repo, and one claim per `USES_CASES` and `LINE_CASES` row,
    linked."""
    root = tmp_path_factory.mktemp("uses-project")
    (root / "annotate.toml").write_text(TOY_CONFIG, encoding="utf-8")
    claims = "".join(
        f"  - id: {claim_id}\n    text: x\n    refs:\n      - ref: "
        f"{qualname if '::' in qualname else f'toy/layer.py::{qualname}'}\n"
        f"        quote: '{quote}'\n        uses: [{target}]\n"
        for claim_id, (qualname, quote, target, *_) in USES_CASES.items())
    (root / "annotations").mkdir()
    (root / "annotations" / "uses.yml").write_text(
        f"article: notes/uses.md\nat: toy@k1\nclaims:\n{claims}", encoding="utf-8")
    lines = "".join(f"  - {{id: {claim_id}, text: x, refs: [{ref}]}}\n"
                    for claim_id, (ref, *_) in LINE_CASES.items())
    (root / "annotations" / "lines.yml").write_text(
        f"article: notes/lines.md\nat: toy@k1\nclaims:\n{lines}", encoding="utf-8")
    config = load_config(root)
    with open_database(config.db) as database:
        for repo, versions in (("toy", TOY), ("lib", LIB)):
            for version, files in versions.items():
                fakevllm.write_snapshot(root / "src" / version, files)
                index_version(database, config, repo, version,
                              from_path=root / "src" / version, workers=1)
        outcome = link_if_changed(database, config, force=True)
    assert outcome is not None and len(outcome.errors) == len(BROKEN_AT_THE_PIN)
    return root


@pytest.mark.parametrize("claim_id", USES_CASES)
def test_annotated_lists_what_a_claim_cites_through_uses_as_check_fails_it(
    toy_project: Path, claim_id: str
) -> None:
    """A claim whose quote stands but whose uses: relation no longer holds at B fails
    check (relation-missing): the diff lists the symbols that broke it, cited by it."""
    *_, expected, status = USES_CASES[claim_id]
    report = json.loads(ok(toy_project, "diff", "toy@k1", "toy@k2", "--annotated",
                           "--format", "json"))
    found = {(entry["ref"], key, claim.get("used_by")) for key in TITLES
             for entry in report[key] for claim in entry["claims"] if claim["claim"] == claim_id}
    checked = json.loads(run(toy_project, "check", "--format", "json").stdout)
    assert (found, [ref["status"] for ref in checked["results"] if ref["claim"] == claim_id]) == (
        expected, [status])


@pytest.mark.parametrize("claim_id", LINE_CASES)
def test_annotated_lists_cited_lines_that_changed_where_no_symbol_holds_them(
    toy_project: Path, claim_id: str
) -> None:
    """A line ref into a module's imports, or into a file that defines nothing (a kernel),
    whose lines changed fails check as a symbol's would: the diff lists it under lines."""
    _, listed, status, moved_to = LINE_CASES[claim_id]
    report = json.loads(ok(toy_project, "diff", "toy@k1", "toy@k2", "--annotated",
                           "--format", "json"))
    entries = [(key, entry) for key in (*TITLES, "lines") for entry in report[key]
               if claim_id in [claim["claim"] for claim in entry["claims"]]]
    found = [(key, entry["ref"]) for key, entry in entries]
    checked = json.loads(run(toy_project, "check", "--format", "json").stdout)
    [result] = [ref for ref in checked["results"] if ref["claim"] == claim_id]
    assert (found, result["status"]) == ([listed] if listed else [], status)
    went = [entry["new"] and f"{entry['new']['path']}#L{entry['new']['start_line']}-"
            f"L{entry['new']['end_line']}" for key, entry in entries if key == "lines"]
    assert (went, result["new_ref"] if status == "moved" else None) == (
        [moved_to] if listed and listed[0] == "lines" else [],
        moved_to and f"toy@k2:{moved_to}")
    impact = [claim["symbols"] for article in report["articles"] for claim in article["claims"]
              if claim["claim"] == claim_id]
    assert impact == ([[{"ref": listed[1], "section": listed[0]}]] if listed else [])


# A ref of each form at k1 (a quote after '|'), and check's status against k2: the
# annotated diff k1 -> k2 lists the claim iff check calls it anything but fresh.
_PERMALINK = "https://github.com/example/toy/blob/k1/toy/layer.py"
REF_FORM_CASES = {
    "line-ref-into-imports-quote-stands": ("toy/layer.py#L1|from toy.kda import", "fresh"),
    "line-ref-into-imports-quote-gone": ("toy/layer.py#L1|KimiDeltaAttention", "quote-missing"),
    "line-ref-in-a-changed-method-quote-stands": ("toy/layer.py#L12|self.attn =", "fresh"),
    "line-ref-in-a-changed-method-quote-gone": ("toy/layer.py#L12|KimiDeltaAttention(",
                                                "quote-missing"),
    "line-ref-in-a-changed-method": ("toy/layer.py#L12", "changed"),
    "line-ref-in-a-renamed-class-quote-stands": ("toy/kda.py#L1|class", "fresh"),
    "line-ref-in-a-renamed-class": ("toy/kda.py#L1", "changed"),
    "line-ref-in-a-changed-kernel-quote-stands": ("toy/kernel.cu#L3|s[0] =", "fresh"),
    "name-ref-quote-stands": ("toy/layer.py::DecoderLayer.__init__|self.is_kda", "fresh"),
    "name-ref-quote-gone": ("toy/layer.py::DecoderLayer.__init__|KimiDeltaAttention(",
                            "quote-missing"),
    "name-ref-changed": ("toy/layer.py::DecoderLayer.forward", "changed"),
    "name-ref-unchanged": ("toy/layer.py::helper", "fresh"),
    "dotted-name-ref-changed": ("toy.layer.DecoderLayer", "changed"),
    "moved-name-ref-quote-stands": ("toy/kda.py::KimiDeltaAttention|self.heads = heads",
                                    "moved"),
    "permalink-lines-stand": (f"{_PERMALINK}#L11", "fresh"),
    "permalink-lines-gone": (f"{_PERMALINK}#L11-L12", "changed"),
}


@pytest.fixture(scope="module")
def ref_forms_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy repo of `toy_project`, and one claim per `REF_FORM_CASES` row, linked."""
    root = tmp_path_factory.mktemp("ref-forms")
    (root / "annotate.toml").write_text(TOY_CONFIG, encoding="utf-8")
    claims = ""
    for claim_id, (written, _) in REF_FORM_CASES.items():
        ref, _, quote = written.partition("|")
        claims += f"  - id: {claim_id}\n    text: x\n    refs:\n      - ref: '{ref}'\n"
        claims += f"        quote: '{quote}'\n" if quote else ""
    (root / "annotations").mkdir()
    (root / "annotations" / "forms.yml").write_text(
        f"article: notes/forms.md\nat: toy@k1\nclaims:\n{claims}", encoding="utf-8")
    config = load_config(root)
    with open_database(config.db) as database:
        for version, files in TOY.items():
            fakevllm.write_snapshot(root / "src" / version, files)
            index_version(database, config, "toy", version, from_path=root / "src" / version,
                          workers=1)
        outcome = link_if_changed(database, config, force=True)
    assert outcome is not None and not outcome.errors
    return root


def test_annotated_lists_a_claim_iff_check_calls_it_stale(ref_forms_project: Path) -> None:
    """Over every ref form: a claim the annotated diff k1 -> k2 lists (under a symbol or
    changed lines) is one check against k2 calls anything but fresh, and the other way
    round."""
    report = json.loads(ok(ref_forms_project, "diff", "toy@k1", "toy@k2", "--annotated",
                           "--format", "json"))
    listed = {claim["claim"] for article in report["articles"] for claim in article["claims"]}
    checked = json.loads(run(ref_forms_project, "check", "--format", "json").stdout)
    statuses = {result["claim"]: result["status"] for result in checked["results"]}
    assert statuses == {claim_id: status for claim_id, (_, status) in REF_FORM_CASES.items()}
    stale = {claim_id for claim_id, status in statuses.items() if status != "fresh"}
    assert (sorted(listed - stale), sorted(stale - listed)) == ([], [])


def test_a_gone_file_is_compared_with_the_files_added_near_it_once(
    toy_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each line ref into a renamed kernel asks where its file went, twice in a diff: the
    comparison of the file with those added near it is done once for them all."""
    compared = []
    similarity = comparison._similarity
    monkeypatch.setattr(comparison, "_similarity",
                        lambda *texts: compared.append(texts) or similarity(*texts))
    config = load_config(toy_project)
    with open_database(config.db) as database:
        resolver = Resolver(database, config)
        comparer = comparison.SymbolComparer(resolver)
        target = resolver.version_key("toy", "k2")
        pinned = [resolver.resolve(parse_ref(ref))
                  for ref in ("toy@k1:toy/kv/rope.cu#L3", "toy@k1:toy/kv/rope.cu#L1-L2")]
        first = comparison.successor_file(comparer, pinned[0], target)
        once = len(compared)
        went = [comparison.successor_file(comparer, lines, target) for lines in pinned * 2]
    assert (first, went) == ("toy/kv/rotary/rope_kernels.cu",
                             ["toy/kv/rotary/rope_kernels.cu"] * 4)
    assert len(compared) == once > 0


def test_the_definitions_of_a_gone_file_are_read_once_for_its_line_refs(
    toy_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each line ref into a gone module asks where the definitions around its lines went,
    up to three times in a diff: the module's definitions are read once for them all."""
    config = load_config(toy_project)
    with open_database(config.db) as database:
        resolver = Resolver(database, config)
        read = []
        definitions = resolver.definitions
        monkeypatch.setattr(resolver, "definitions",
                            lambda pinned: read.append(pinned.canonical) or definitions(pinned))
        comparer = comparison.SymbolComparer(resolver)
        target = resolver.version_key("toy", "k2")
        pinned = [resolver.resolve(parse_ref(f"toy@k1:toy/old_mod.py#{lines}"))
                  for lines in ("L1", "L1-L2", "L2-L3")]
        went = [comparison.successor_file(comparer, lines, target) for lines in pinned * 2]
    assert (went, read) == (["toy/new_mod.py"] * 6, ["toy@k1:toy/old_mod.py#L1"])


def test_changed_lines_in_every_format(toy_project: Path) -> None:
    entries = json.loads(ok(toy_project, "diff", "toy@k1", "toy@k2", "--format", "json"))["lines"]
    assert entries[0] == {
        "ref": "toy/gone.py#L1", "version": "k1", "path": "toy/gone.py", "start_line": 1,
        "end_line": 1, "url": "https://github.com/example/toy/blob/k1/toy/gone.py#L1",
        "file_gone": True, "new": None, "candidates": [], "code_went_to": None,
        "claims": [{"article": "notes/lines.md", "claim": "file-gone", "version": "k1",
                    "ref": "toy/gone.py#L1", "file": "annotations/lines.yml", "line": 8}]}
    assert (entries[-1]["file_gone"], entries[-1]["new"]) == (True, {
        "path": "toy/kernels/gate.cu", "start_line": 2, "end_line": 3,
        "url": "https://github.com/example/toy/blob/k2/toy/kernels/gate.cu#L2-L3"})
    assert (entries[-2]["ref"], entries[-2]["new"], entries[-2]["code_went_to"]) == (
        "toy/old_mod.py#L1-L2", None,
        {"path": "toy/new_mod.py", "url": "https://github.com/example/toy/blob/k2/toy/new_mod.py"})
    markdown = markdown_sections(ok(toy_project, "diff", "toy@k1", "toy@k2", "--annotated"))
    blob = "https://github.com/example/toy/blob"
    assert markdown["Changed lines"].splitlines()[-6:] == [
        f'| <a href="{blob}/k1/toy/gone.py#L1"><code>toy/gone.py\\#L1</code></a><br>cited '
        "by <code>notes/lines.md\\#file-gone</code> (annotations/lines.yml:8) | k1 | file "
        "gone |",
        f'| <a href="{blob}/k1/toy/kernel.cu#L3"><code>toy/kernel.cu\\#L3</code></a><br>'
        "cited by <code>notes/lines.md\\#changed-kernel-line</code> (annotations/lines.yml:6) "
        "| k1 | changed |",
        f'| <a href="{blob}/k1/toy/kv/rope.cu#L3"><code>toy/kv/rope.cu\\#L3</code></a>'
        "<br>cited by <code>notes/lines.md\\#kernel-renamed-lines-changed</code> "
        "(annotations/lines.yml:11) | k1 | file "
        f'gone; its code went to <a href="{blob}/k2/toy/kv/rotary/rope_kernels.cu"><code>'
        "toy/kv/rotary/rope\\_kernels.cu</code></a> |",
        f'| <a href="{blob}/k1/toy/layer.py#L1"><code>toy/layer.py\\#L1</code></a><br>'
        "cited by <code>notes/lines.md\\#changed-import</code> (annotations/lines.yml:4) | k1 "
        "| changed |",
        f'| <a href="{blob}/k1/toy/old_mod.py#L1-L2"><code>toy/old\\_mod.py\\#L1-L2</code></a>'
        "<br>cited by <code>notes/lines.md\\#module-renamed-lines-changed</code> "
        "(annotations/lines.yml:10) | k1 | file "
        f'gone; its code went to <a href="{blob}/k2/toy/new_mod.py"><code>toy/new\\_mod.py'
        "</code></a> |",
        f'| <a href="{blob}/k1/toy/ops/gate.cu#L2-L3"><code>toy/ops/gate.cu\\#L2-L3</code></a>'
        "<br>cited by <code>notes/lines.md\\#file-moved</code> (annotations/lines.yml:9) | k1 "
        "| file gone; moved to "
        f'<a href="{blob}/k2/toy/kernels/gate.cu#L2-L3"><code>toy/kernels/gate.cu\\#L2-L3'
        "</code></a> |",
    ]
    page = ok(toy_project, "diff", "toy@k1", "toy@k2", "--annotated", "--format", "html")
    check_page(page)
    lead = re.search(r'<p class="lead">(.*?)</p>', page)
    assert lead is not None and lead.group(1).endswith(
        ", and 6 cited line ranges that changed are listed.")
    assert 'href="#lines:toy/gone.py#L1"' in page and 'id="lines:toy/gone.py#L1"' in page
    assert ('<span class="to">→ moved to <a href="https://github.com/example/toy/blob/k2/toy/'
            'kernels/gate.cu#L2-L3" rel="noreferrer"><code>toy/kernels/gate.cu#L2-L3</code></a>'
            '</span>') in page
