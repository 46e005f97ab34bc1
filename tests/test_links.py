"""``annotate link``: what it stores, how re-running replaces it, and every input error."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import fakevllm as fv
import pytest
from click.testing import CliRunner, Result
from fakeproject import DB, connected, copy_project, run_annotate
from fakeproject import write_file as write

from annotate_cli import cli
from annotations import links
from annotations.links import annotation_files, repo_filter
from annotations.loader import link_claim_id, load_file
from db import claims as claim_store
from db.database import open_database
from indexer.config import load_config
from indexer.fingerprints import digest

GH = "https://github.com/vllm-project/vllm/blob"


@pytest.fixture(scope="module")
def indexed(indexed_fakes: Path) -> Path:
    """A directory with annotate.toml and the index `annotate index` built from it."""
    return indexed_fakes


@pytest.fixture
def project(indexed: Path) -> Path:
    """The current directory, with the config and a fresh copy of the index."""
    return copy_project(indexed)


def link() -> Result:
    return CliRunner().invoke(cli, ["link"])


def rows(sql: str, *params: object) -> list[tuple]:
    with connected(DB) as conn:
        return conn.execute(sql, params).fetchall()


def stored() -> dict[str, list[tuple]]:
    """Every row `link` writes, without row ids, in a stable order."""
    return {
        "articles": rows("SELECT * FROM articles ORDER BY path"),
        "claims": rows("SELECT article, claim_id, text, pin, source_file, line FROM claims"
                       " ORDER BY article, claim_id"),
        "refs": rows("SELECT c.article, c.claim_id, r.seq, r.written, r.resolved, r.state,"
                     " r.message, r.exact FROM claim_refs r JOIN claims c ON c.id = r.claim"
                     " ORDER BY c.article, c.claim_id, r.seq"),
        "search": rows("SELECT article, claim_id, title, text, symbols FROM claim_search"
                       " ORDER BY article, claim_id"),
    }


MLA = """\
article: blog/mla-tp.md
title: "MLA 的 TP 切分"
at: vllm@v0.1.0
claims:
  - id: util-default
    text: "显存利用率默认是 0.9"
    refs:
      - vllm/config/cache.py::CacheConfig.gpu_memory_utilization
      - ref: vllm.config.cache.CacheConfig
        quote: "gpu_memory_utilization: float = 0.9"
  - id: cdiv-later
    text: "后来 cdiv 改写了"
    at: vllm@v0.2.0
    refs:
      - vllm/utils.py::cdiv
      - csrc/attention/paged_attention_v1.cu#L1-L3
      - lmcache@v0.5.1:lmcache/integration/vllm/utils.py::mla_enabled
"""
URL_UTIL = f"{GH}/v0.2.0/vllm/config/cache.py#L22"
URL_README = f"{GH}/v0.2.0/README.md#L1"
POST = f"""\
---
title: 缓存
at: vllm@v0.2.0
claims:
  - id: clone
    text: SamplingParams 在 v0.2.0 有了 clone
    refs: [vllm.sampling_params.SamplingParams.clone]
---
# 缓存配置

默认值见 {URL_UTIL} 。

README 的标题：{URL_README}
"""
EXTRA = """\
article: https://example.com/notes
claims:
  - id: readme
    text: README 第一行
    refs: [vllm@v0.3.0:README.md#L1]
"""
SUMMARY = "3 articles, 6 claims, 9 refs: 9 linked, 0 unindexed, 0 broken\n"
UTIL = "vllm/config/cache.py::CacheConfig.gpu_memory_utilization"


def write_corpus() -> None:
    write("annotations/mla.yml", MLA)
    write("articles/post.md", POST)
    write("articles/extra.yml", EXTRA)


# -- what link stores ----------------------------------------------------------------------------


def test_a_markdown_file_without_claims_is_not_counted_as_an_article(project: Path) -> None:
    """As check counts them (articles/README.md, selected by articles/**/*.md, said 18
    articles to link and 17 to check)."""
    write_corpus()
    write("articles/README.md", "# 文章\n\n说明，没有链接。\n")
    result = link()
    assert (result.exit_code, result.stdout) == (0, SUMMARY)
    checked = json.loads(CliRunner().invoke(cli, ["check", "--format", "json"]).stdout)
    assert checked["summary"]["articles"] == int(SUMMARY.split()[0])


def test_link_stores_articles_claims_and_links(project: Path) -> None:
    write_corpus()
    result = link()
    assert (result.exit_code, result.stderr, result.stdout) == (0, "", SUMMARY)
    assert rows("SELECT * FROM articles ORDER BY path") == [
        ("articles/post.md", "缓存", "articles/post.md"),
        ("blog/mla-tp.md", "MLA 的 TP 切分", "annotations/mla.yml"),
        ("https://example.com/notes", None, "articles/extra.yml"),
    ]
    link_util = link_claim_id("articles/post.md", URL_UTIL)
    link_readme = link_claim_id("articles/post.md", URL_README)
    claims = rows("SELECT claim_id, pin, source_file, line FROM claims ORDER BY source_file, line")
    assert claims == [
        ("util-default", "vllm@v0.1.0", "annotations/mla.yml", 5),
        ("cdiv-later", "vllm@v0.2.0", "annotations/mla.yml", 11),
        ("readme", None, "articles/extra.yml", 3),
        ("clone", "vllm@v0.2.0", "articles/post.md", 5),
        (link_util, None, "articles/post.md", 11),
        (link_readme, None, "articles/post.md", 13),
    ]
    refs = rows("SELECT c.claim_id, r.seq, r.line, r.written, r.resolved, r.repo, r.version,"
                " r.state, r.message FROM claim_refs r JOIN claims c ON c.id = r.claim"
                " ORDER BY c.source_file, c.line, r.seq")
    assert refs == [
        ("util-default", 0, 8, UTIL, f"vllm@v0.1.0:{UTIL}", "vllm", "v0.1.0", "linked", None),
        ("util-default", 1, 9, "vllm.config.cache.CacheConfig",
         "vllm@v0.1.0:vllm/config/cache.py::CacheConfig", "vllm", "v0.1.0", "linked", None),
        ("cdiv-later", 0, 15, "vllm/utils.py::cdiv", "vllm@v0.2.0:vllm/utils.py::cdiv",
         "vllm", "v0.2.0", "linked", None),
        ("cdiv-later", 1, 16, "csrc/attention/paged_attention_v1.cu#L1-L3",
         "vllm@v0.2.0:csrc/attention/paged_attention_v1.cu#L1-L3",
         "vllm", "v0.2.0", "linked", None),
        ("cdiv-later", 2, 17, "lmcache@v0.5.1:lmcache/integration/vllm/utils.py::mla_enabled",
         "lmcache@v0.5.1:lmcache/integration/vllm/utils.py::mla_enabled",
         "lmcache", "v0.5.1", "linked", None),
        ("readme", 0, 5, "vllm@v0.3.0:README.md#L1", "vllm@v0.3.0:README.md#L1",
         "vllm", "v0.3.0", "linked", None),
        ("clone", 0, 7, "vllm.sampling_params.SamplingParams.clone",
         "vllm@v0.2.0:vllm/sampling_params.py::SamplingParams.clone",
         "vllm", "v0.2.0", "linked", None),
        (link_util, 0, 11, URL_UTIL, f"vllm@v0.2.0:{UTIL}", "vllm", "v0.2.0", "linked", None),
        (link_readme, 0, 13, URL_README, "vllm@v0.2.0:README.md#L1",
         "vllm", "v0.2.0", "linked", None),
    ]
    assert rows("SELECT quote FROM claim_refs WHERE quote IS NOT NULL") == [
        ("gpu_memory_utilization: float = 0.9",)
    ]


@pytest.mark.parametrize("command", [
    pytest.param(["link"], id="link"),
    pytest.param(["check", "--exit-zero"], id="check"),
    pytest.param(["check", "--exit-zero", "--format", "markdown", "-o", "summary.md"],
                 id="check-to-a-file"),
    pytest.param(["fix"], id="fix"),
    pytest.param(["fix", "--dry-run"], id="fix-dry-run"),
    pytest.param(["diff", "vllm@v0.1.0", "vllm@v0.2.0"], id="diff"),
    pytest.param(["diff", "vllm@v0.1.0", "vllm@v0.2.0", "-o", "diff.md"], id="diff-to-a-file"),
])
def test_the_annotation_files_are_globbed_once_per_run(
    project: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """Refusing a run of no file finds the files that are then linked: one walk of a large
    articles folder, not two."""
    write_corpus()
    globbed = []

    def counted(find: Callable[[object], tuple]) -> Callable[[object], tuple]:
        def globbing(config: object) -> tuple:
            globbed.append(config)
            return find(config)
        return globbing

    for name in ("annotation_files", "readable_annotation_files"):  # diff -o: the latter
        monkeypatch.setattr(links, name, counted(getattr(links, name)))
    result = CliRunner().invoke(cli, command)
    assert (result.exit_code, len(globbed)) == (0, 1), result.output


def test_stored_claims_are_exactly_what_the_files_say(project: Path) -> None:
    write_corpus()
    assert link().exit_code == 0
    config = load_config()
    yaml_files, markdown_files = annotation_files(config)
    loaded = [load_file(path, config.root, markdown=path in markdown_files,
                        repos=repo_filter(config)) for path in yaml_files + markdown_files]
    assert [error for result in loaded for error in result.errors] == []
    expected = sorted(
        (c.article, c.claim_id, c.text, c.at, c.source_file, c.line)
        for result in loaded for article in result.articles for c in article.claims
    )
    assert stored()["claims"] == expected
    texts = {claim_id: text for _, claim_id, text, *_ in expected}
    assert texts["util-default"] == "显存利用率默认是 0.9"
    assert texts["cdiv-later"] == "后来 cdiv 改写了"


def test_links_carry_the_symbols_fingerprints_at_their_pin(project: Path) -> None:
    write_corpus()
    assert link().exit_code == 0
    symbol_refs = rows(
        "SELECT r.repo, r.version, r.path, r.qualname, r.kind, r.start_line, r.end_line,"
        " r.blob_id, r.exact, r.normalized, r.shape FROM claim_refs r WHERE r.qualname IS NOT NULL"
        " ORDER BY r.version, r.path, r.qualname"
    )
    indexed = rows(
        "SELECT repo, version, path, qualname, kind, start_line, end_line, blob_id, exact,"
        " normalized, shape FROM version_symbols WHERE (repo, version, path, qualname) IN"
        " (SELECT repo, version, path, qualname FROM claim_refs) ORDER BY version, path, qualname"
    )
    assert len(symbol_refs) == 6
    assert symbol_refs == indexed
    lines = rows("SELECT resolved, start_line, end_line, exact, normalized FROM claim_refs"
                 " WHERE qualname IS NULL ORDER BY resolved")
    cuda = "".join(fv.PAGED_ATTENTION_CU.splitlines(keepends=True)[:3]).encode()
    readme = fv.README.splitlines(keepends=True)[0].encode()
    assert lines == [
        ("vllm@v0.2.0:README.md#L1", 1, 1, digest(readme), digest(b" ".join(readme.split()))),
        ("vllm@v0.2.0:csrc/attention/paged_attention_v1.cu#L1-L3", 1, 3, digest(cuda),
         digest(b" ".join(cuda.split()))),
        ("vllm@v0.3.0:README.md#L1", 1, 1, digest(readme), digest(b" ".join(readme.split()))),
    ]


def test_the_pin_of_the_claim_wins_over_the_file_pin(project: Path) -> None:
    write("annotations/pins.yml", """\
article: pins
at: vllm@v0.1.0
claims:
  - id: file-pin
    text: a
    refs: [vllm/utils.py::cdiv]
  - id: claim-pin
    text: b
    at: vllm@v0.2.0
    refs: [vllm/utils.py::cdiv, vllm@v0.1.0:vllm/utils.py::cdiv]
""")
    result = link()
    assert (result.exit_code, result.stdout) == (
        0, "1 article, 2 claims, 3 refs: 3 linked, 0 unindexed, 0 broken\n"
    )
    assert rows("SELECT c.claim_id, r.resolved FROM claim_refs r JOIN claims c ON c.id = r.claim"
                " ORDER BY c.line, r.seq") == [
        ("file-pin", "vllm@v0.1.0:vllm/utils.py::cdiv"),
        ("claim-pin", "vllm@v0.2.0:vllm/utils.py::cdiv"),
        ("claim-pin", "vllm@v0.1.0:vllm/utils.py::cdiv"),
    ]


# -- re-running ----------------------------------------------------------------------------------


def test_relinking_unchanged_files_stores_the_same(project: Path) -> None:
    write_corpus()
    assert link().exit_code == 0
    before = stored()
    result = link()
    assert (result.exit_code, result.stdout) == (0, SUMMARY)
    assert stored() == before


LINK_TABLES = ("articles", "claims", "claim_refs", "claim_uses", "claim_waivers",
               "claim_search", "meta", "link_files")
ADDED_TO_POST = """\
article: articles/post.md
claims:
  - id: cdiv
    text: cdiv 向上取整
    refs: [vllm@v0.1.0:vllm/utils.py::cdiv]
"""


def link_dump(db: Path) -> dict[str, list[tuple]]:
    """Every row of every table a link writes, row ids (and so the order) included."""
    with connected(db) as conn:
        return {table: conn.execute(f"SELECT {'' if table in ('meta', 'link_files') else 'rowid, '}"
                                    f"* FROM {table} ORDER BY 1, 2").fetchall()
                for table in LINK_TABLES}


def unindex_v030(project: Path) -> None:
    with connected(project / DB) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM versions WHERE repo = 'vllm' AND version = 'v0.3.0'")


def index_v030(project: Path) -> None:
    done = run_annotate(project, "index", "vllm@v0.3.0")
    assert done.returncode == 0, done.stderr


def set_target(project: Path) -> None:
    config = project / "annotate.toml"
    config.write_text(config.read_text().replace("[repos.vllm]\n",
                                                 '[repos.vllm]\ntarget = "v0.2.0"\n'))


def append_comment(path: str) -> None:
    with Path(path).open("a") as file:
        file.write("# checked again\n")


def glob_articles_first(project: Path) -> None:
    """The same files, the same links each, globbed in another order."""
    config = project / "annotate.toml"
    config.write_text('annotations = ["articles/**/*.yml", "annotations/**/*.yml"]\n'
                      + config.read_text())


ALL_FILES = {"annotations/mla.yml", "articles/post.md", "articles/extra.yml",
             "annotations/post-more.yml"}
CHANGES = [
    pytest.param(None, lambda root: write("annotations/mla.yml", MLA.replace("默认是", "默认为")),
                 {"annotations/mla.yml"}, id="one-file-edited"),
    pytest.param(None, lambda root: write("annotations/new.yml", claim("vllm/utils.py::cdiv")),
                 {"annotations/new.yml"}, id="one-file-added"),
    pytest.param(None, lambda root: Path("articles/extra.yml").unlink(), set(),
                 id="one-file-removed"),
    pytest.param(None, lambda root: Path("annotations/mla.yml").rename("annotations/mla2.yml"),
                 {"annotations/mla2.yml"}, id="one-file-renamed"),
    pytest.param(unindex_v030, index_v030, ALL_FILES, id="a-version-newly-indexed"),
    pytest.param(None, set_target, ALL_FILES, id="config-target-changed"),
    pytest.param(None, lambda root: append_comment("annotations/mla.yml"),
                 {"annotations/mla.yml"}, id="a-comment-appended"),
    pytest.param(None, glob_articles_first, ALL_FILES, id="files-globbed-in-another-order"),
]


@pytest.mark.parametrize(("before", "change", "resolved"), CHANGES)
def test_a_link_resolves_only_the_files_that_changed_and_stores_what_a_full_link_does(
    project: Path, monkeypatch: pytest.MonkeyPatch, before: Callable[[Path], None] | None,
    change: Callable[[Path], None], resolved: set[str],
) -> None:
    """The files whose bytes, and all else their links depend on, are as at the last link
    are taken from it: the database and the check report are those of a link of every
    file, row ids included."""
    write_corpus()
    write("annotations/post-more.yml", ADDED_TO_POST)
    if before is not None:
        before(project)
    assert link().exit_code == 0
    change(project)
    with connected(DB) as conn, connected("full.db") as full:
        conn.backup(full)
    read_again: set[str] = set()
    file_link = links._file_link
    monkeypatch.setattr(links, "_file_link", lambda resolver, article, *rest: (
        read_again.add(article.source_file), file_link(resolver, article, *rest))[1])
    incremental = link()
    assert (incremental.exit_code, read_again) == (0, resolved)
    read_again.clear()
    with open_database(Path("full.db")) as database:
        links.link_if_changed(database, load_config(), force=True, reuse=False)
    assert read_again == {path.relative_to(project).as_posix()
                          for found in links.annotation_files(load_config()) for path in found}
    assert link_dump(DB) == link_dump(Path("full.db"))
    reports = [CliRunner().invoke(cli, [*db, "check", "--format", "json", "--exit-zero"])
               for db in ([], ["--db", "full.db"])]
    assert reports[0].exit_code == 0 and reports[0].stdout
    assert reports[0].stdout == reports[1].stdout


def _move_the_symlinks_target_away(link: Path) -> None:
    Path("shared").rename("shared-moved")


def _point_the_symlink_at_itself(link: Path) -> None:
    link.unlink()
    link.symlink_to(link.name)


@pytest.mark.parametrize("selected_by", [
    pytest.param(None, id="a-wildcard"),
    pytest.param("articles/extra.yml", id="its-own-path"),
    pytest.param("articles/**/extra.yml", id="its-name-in-any-folder"),
])
@pytest.mark.parametrize(("break_it", "problem"), [
    pytest.param(_move_the_symlinks_target_away, "No such file or directory",
                 id="its-target-moved-away"),
    pytest.param(_point_the_symlink_at_itself, "Too many levels of symbolic links",
                 id="a-symlink-loop"),
])
def test_a_symlinked_annotation_file_that_leads_nowhere_keeps_its_claims(
    project: Path, break_it: Callable[[Path], None], problem: str, selected_by: str | None
) -> None:
    """A symlink the globs select is an annotation file, as a symlinked file is read: when
    it leads to no file, it cannot be read, and its claims stay as a file's that cannot
    be read; passed over, they were deleted without a word. Python before 3.12 finds a
    glob's name without a wildcard only where it leads to something."""
    if selected_by is not None:
        config = project / "annotate.toml"
        config.write_text(f'annotations = ["annotations/**/*.yml", "{selected_by}"]\n'
                          + config.read_text())
    write_corpus()
    shared = write("shared/extra.yml", Path("articles/extra.yml").read_text())
    extra = Path("articles/extra.yml")
    extra.unlink()
    extra.symlink_to(os.path.relpath(shared, extra.parent))
    assert link().stdout == SUMMARY
    before = stored()
    break_it(extra)
    result = link()
    assert (result.exit_code, result.stdout) == (
        2, "2 articles, 5 claims, 8 refs: 8 linked, 0 unindexed, 0 broken\n")
    assert result.stderr == (f"Error: articles/extra.yml: cannot read file: {problem}\n"
                             "Error: 1 problem in the annotations (see above)\n")
    assert stored() == before


def break_extra_then_mend_it() -> None:
    """A link that cannot read a file keeps that file's claims: the next one, the file
    mended, writes every claim again."""
    extra = Path("articles/extra.yml")
    mended = extra.read_text()
    extra.write_text("claims: [\n")
    assert link().exit_code == 2
    extra.write_text(mended)


@pytest.mark.parametrize(("change", "rewritten"), [
    pytest.param(lambda root, patch: append_comment("annotations/mla.yml"), False,
                 id="a-comment-appended"),
    pytest.param(lambda root, patch: write("annotations/mla.yml",
                                           MLA.replace("article: ", "article:  ")),
                 False, id="spaces-after-a-key"),
    pytest.param(lambda root, patch: write("annotations/mla.yml",
                                           MLA.replace("默认是", "默认为")),
                 True, id="a-claim-edited"),
    pytest.param(lambda root, patch: write("annotations/mla.yml",
                                           MLA.replace("\n", "\n\n", 1)),
                 True, id="a-claim-on-another-line"),
    pytest.param(lambda root, patch: Path("articles/extra.yml").unlink(), True,
                 id="a-file-removed"),
    pytest.param(lambda root, patch: glob_articles_first(root), True,
                 id="files-globbed-in-another-order"),
    pytest.param(lambda root, patch: break_extra_then_mend_it(), True,
                 id="after-a-link-that-could-not-read-one"),
    pytest.param(lambda root, patch: (
        append_comment("annotations/mla.yml"),
        patch.setattr("annotations.links.LINK_FORMAT", links.LINK_FORMAT + 1)), True,
                 id="another-link-format-that-may-store-other-rows"),
])
def test_a_link_writes_the_claims_again_only_when_they_are_not_those_stored(
    project: Path, monkeypatch: pytest.MonkeyPatch,
    change: Callable[[Path, pytest.MonkeyPatch], None], rewritten: bool,
) -> None:
    """An edit that leaves a file's links as they were (a comment) writes no claim: the
    stored ones are row for row those a link of every file writes."""
    write_corpus()
    write("annotations/post-more.yml", ADDED_TO_POST)
    assert link().exit_code == 0
    change(project, monkeypatch)
    before = link_dump(DB)
    written: list[int] = []
    replace = claim_store.replace_articles
    monkeypatch.setattr(claim_store, "replace_articles",
                        lambda database, rows, *rest: (written.append(len(rows)),
                                                       replace(database, rows, *rest))[1])
    assert link().exit_code == 0
    assert bool(written) == rewritten
    if not rewritten:
        after = link_dump(DB)
        assert [table for table in LINK_TABLES if after[table] != before[table]] == [
            "meta", "link_files"]


def test_a_link_says_of_the_files_it_takes_from_the_last_what_it_said_then(
    project: Path,
) -> None:
    """Their broken refs (waived or not), their unindexed pins, their permalinks into repos
    not configured, their article split and their claim id repeated by another file."""
    config = Path("annotate.toml")
    config.write_text(config.read_text().replace("versions = [", 'versions = ["v9.9.9", '))
    write_corpus()
    waive = "    waive:\n      - {status: broken, until: 2099-01-01, reason: renamed}\n"
    write("annotations/broken.yml", claim("vllm/utils.py::cdivv"))
    write("annotations/waived.yml", claim("vllm/utils.py::cdivw", waive).replace(
        "article: notes", "article: waived"))
    write("annotations/later.yml", claim("vllm@v9.9.9:vllm/utils.py::cdiv").replace(
        "article: notes", "article: post.md"))
    write("articles/other.md", "# O\n\nhttps://github.com/someone/else/blob/v1/a.py#L1\n")
    write("annotations/twice.yml", ADDED_TO_POST.replace("id: cdiv", "id: clone"))
    first = link()
    assert first.exit_code == 2
    assert [line.split(":")[0] for line in first.stderr.splitlines()] == [
        "Error", "Error", "Warning", "Warning", "Note", "Note", "Error"]
    for told in ("cdivv", "cdivw", "annotations/later.yml", "someone/else", "'clone'"):
        assert told in first.stderr
    write("articles/extra.yml", EXTRA.replace("README 第一行", "README 的第一行"))
    again = link()
    assert (again.exit_code, again.stderr, again.stdout) == (2, first.stderr, first.stdout)


@pytest.mark.parametrize("setting", [
    pytest.param('github = "someone/vllm-fork"', id="github"),
    pytest.param('pypi = "vllm-fork"', id="pypi"),
])
def test_a_repo_setting_changed_in_the_config_makes_the_links_outdated(
    project: Path, setting: str
) -> None:
    write_corpus()
    assert link().exit_code == 0
    with open_database(project / DB) as database:
        assert links.link_state(database, load_config()) is links.LinkState.CURRENT
        config = Path("annotate.toml").read_text(encoding="utf-8")
        write("annotate.toml", config.replace("[repos.vllm]\n", f"[repos.vllm]\n{setting}\n"))
        assert links.link_state(database, load_config()) is links.LinkState.CHANGED


def test_relinking_replaces_what_changed_and_removes_what_is_gone(project: Path) -> None:
    write_corpus()
    assert link().exit_code == 0
    write("annotations/mla.yml", MLA.split("  - id: cdiv-later")[0].replace(
        "显存利用率默认是 0.9", "默认 0.9，v0.2.0 起 0.92"))
    result = link()
    assert (result.exit_code, result.stdout) == (
        0, "3 articles, 5 claims, 6 refs: 6 linked, 0 unindexed, 0 broken\n"
    )
    assert rows("SELECT claim_id, text FROM claims WHERE article = 'blog/mla-tp.md'") == [
        ("util-default", "默认 0.9，v0.2.0 起 0.92")
    ]
    assert rows("SELECT claim_id, text FROM claim_search WHERE article = 'blog/mla-tp.md'") == [
        ("util-default", "默认 0.9，v0.2.0 起 0.92")
    ]
    assert rows("SELECT count(*) FROM claim_refs") == [(6,)]
    assert rows("SELECT count(*) FROM claim_refs WHERE claim NOT IN (SELECT id FROM claims)") == [
        (0,)
    ]


def test_deleting_a_file_removes_its_article(project: Path) -> None:
    write_corpus()
    assert link().exit_code == 0
    Path("articles/post.md").unlink()
    result = link()
    assert (result.exit_code, result.stdout) == (
        0, "2 articles, 3 claims, 6 refs: 6 linked, 0 unindexed, 0 broken\n"
    )
    assert rows("SELECT path FROM articles ORDER BY path") == [
        ("blog/mla-tp.md",), ("https://example.com/notes",)
    ]
    assert rows("SELECT DISTINCT article FROM claims ORDER BY article") == [
        ("blog/mla-tp.md",), ("https://example.com/notes",)
    ]
    assert rows("SELECT DISTINCT article FROM claim_search ORDER BY article") == [
        ("blog/mla-tp.md",), ("https://example.com/notes",)
    ]


def test_a_file_that_now_fails_to_load_keeps_its_previous_rows(project: Path) -> None:
    write_corpus()
    assert link().exit_code == 0
    before = stored()
    write("articles/post.md", POST.replace("title: 缓存", "titel: 缓存"))
    write("articles/extra.yml", EXTRA.replace("README 第一行", "README 的第一行"))
    result = link()
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: articles/post.md:2: unknown key 'titel' at top level "
        "(did you mean 'title'? allowed: article, title, at, claims)\n"
        "Error: 1 problem in the annotations (see above)\n"
    )
    assert result.stdout == "2 articles, 3 claims, 6 refs: 6 linked, 0 unindexed, 0 broken\n"
    after = stored()
    for table in after:
        assert [row for row in after[table] if "articles/post.md" in row] == [
            row for row in before[table] if "articles/post.md" in row
        ]
    assert ("https://example.com/notes", "readme", "README 的第一行", None, "articles/extra.yml",
            3) in after["claims"]


def test_a_file_whose_bytes_were_not_read_before_the_loader_read_it_is_linked_uncached(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unreadable when the link hashed the files, readable when the loader read it: its
    claims are stored, and not taken as those of bytes never hashed."""
    write_corpus()
    contents = links._contents
    monkeypatch.setattr(links, "_contents", lambda files: [
        (path, markdown, None if path.name == "extra.yml" else data)
        for path, markdown, data in contents(files)])
    assert link().stdout == SUMMARY
    assert rows("SELECT source_file FROM link_files ORDER BY 1") == [
        ("annotations/mla.yml",), ("articles/post.md",)]


def store_links_of_other_bytes(conn: sqlite3.Connection, other: tuple) -> None:
    conn.execute("UPDATE link_files SET digest = ?, links = ? WHERE source_file = ?", other)


def delete_links(conn: sqlite3.Connection, other: tuple) -> None:
    conn.execute("DELETE FROM link_files WHERE source_file = ?", other[2:])


@pytest.mark.parametrize("other_link", [
    pytest.param(store_links_of_other_bytes, id="stored-for-other-bytes"),
    pytest.param(delete_links, id="deleted"),
])
def test_a_file_link_another_link_changed_since_its_digest_was_read_is_made_again(
    project: Path, monkeypatch: pytest.MonkeyPatch,
    other_link: Callable[[sqlite3.Connection, tuple], None],
) -> None:
    """Another process's link of the file as it was a moment before (edited, or gone)
    commits between this link's reading the digests and its taking the file's links:
    those are not the links of these bytes, or not there at all. It stores what a link of
    every file stores."""
    write_corpus()
    write("annotations/mla.yml", MLA.replace("默认是", "默认为"))
    assert link().exit_code == 0
    (other,) = rows("SELECT digest, links, source_file FROM link_files"
                    " WHERE source_file = 'annotations/mla.yml'")
    write("annotations/mla.yml", MLA)
    assert link().exit_code == 0
    write("articles/extra.yml", EXTRA.replace("README 第一行", "README 的第一行"))
    with connected(DB) as conn, connected("full.db") as full:
        conn.backup(full)
    digests = links.claim_store.file_link_digests

    def digests_then_another_link(database: object) -> dict:
        read = digests(database)
        with connected(DB) as conn:
            other_link(conn, other)
        return read

    monkeypatch.setattr(links.claim_store, "file_link_digests", digests_then_another_link)
    result = link()
    monkeypatch.setattr(links.claim_store, "file_link_digests", digests)
    assert (result.exit_code, result.stdout) == (0, SUMMARY)
    with open_database(Path("full.db")) as database:
        links.link_if_changed(database, load_config(), force=True, reuse=False)
    assert link_dump(DB) == link_dump(Path("full.db"))


def test_a_link_keeping_the_stored_claims_writes_them_when_another_link_overtook_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A comment appended to a file leaves its links as stored, so the claims would be
    kept as they are; but another process's link (of the file as it was a moment before)
    commits its rows after this link compared the stored claims: this one writes every
    row, as a full link does, and not the other's claims under its own signature."""
    write_corpus()
    write("annotations/mla.yml", MLA.replace("默认是", "默认为"))
    assert link().exit_code == 0
    with connected(DB) as conn, connected("other.db") as other:
        conn.backup(other)
    write("annotations/mla.yml", MLA)
    assert link().exit_code == 0
    write("annotations/mla.yml", MLA + "# a comment\n")
    with connected(DB) as conn, connected("full.db") as full:
        conn.backup(full)
    claim_order = links.claim_store.claim_order

    def order_then_another_link(database: object) -> list:
        read = claim_order(database)
        with connected("other.db") as other, connected(DB) as conn:
            other.backup(conn)
        return read

    monkeypatch.setattr(links.claim_store, "claim_order", order_then_another_link)
    result = link()
    monkeypatch.setattr(links.claim_store, "claim_order", claim_order)
    assert (result.exit_code, result.stdout) == (0, SUMMARY)
    with open_database(Path("full.db")) as database:
        links.link_if_changed(database, load_config(), force=True, reuse=False)
    assert link_dump(DB) == link_dump(Path("full.db"))


def test_a_link_makes_the_search_table_again_as_migration_2_made_it(
    project: Path, tmp_path: Path
) -> None:
    """Emptied by dropping and creating it again (FTS5 deletes row by row): the same table,
    and claims found in it."""
    from db.claims import CLAIM_SEARCH_TABLE

    with open_database(tmp_path / "new.db", create=True):
        pass
    with connected(tmp_path / "new.db") as conn:
        (made,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'claim_search'").fetchone()
    write_corpus()
    assert link().exit_code == 0
    write("articles/extra.yml", EXTRA.replace("README 第一行", "README 的第一行"))
    assert link().exit_code == 0
    assert rows("SELECT sql FROM sqlite_master WHERE name = 'claim_search'") == [(made,)]
    assert made == CLAIM_SEARCH_TABLE
    assert rows("SELECT claim_id FROM claim_search WHERE claim_search MATCH '\"的第一行\"'") == [
        ("readme",)]


def test_a_kept_claim_that_gives_way_leaves_one_search_row(project: Path) -> None:
    write_corpus()
    swap = ("article: articles/post.md\nat: vllm@v0.1.0\nclaims:\n  - id: swap\n"
            "    text: {text}\n    refs: [vllm.config.cache.DEFAULT_SWAP_SPACE_GIB]\n")
    write("annotations/a.yml", swap.format(text="旧的说法"))
    assert link().exit_code == 0
    write("annotations/a.yml", "article: articles/post.md\nclaims: [\n")  # fails: kept
    write("annotations/b.yml", swap.format(text="新的说法"))
    assert link().exit_code == 2
    assert rows("SELECT text FROM claim_search WHERE article = 'articles/post.md'"
                " AND claim_id = 'swap'") == [("新的说法",)]


def test_links_of_an_article_from_two_files_say_which_file_each_line_is_in(
    project: Path
) -> None:
    write_corpus()
    write("annotations/post-more.yml", "article: articles/post.md\nat: vllm@v0.1.0\nclaims:\n"
          "  - id: swap\n    text: 交换空间\n"
          "    refs: [vllm.config.cache.DEFAULT_SWAP_SPACE_GIB]\n")
    assert link().exit_code == 0
    result = CliRunner().invoke(cli, ["links", "--article", "articles/post.md"])
    lines = result.stdout.splitlines()
    assert lines[0].split()[:2] == ["file:line", "claim"]
    assert {line.split()[0].rsplit(":", 1)[0] for line in lines[1:]} == {
        "annotations/post-more.yml", "articles/post.md"}
    assert "annotations/post-more.yml:6" in {line.split()[0] for line in lines[1:]}


POST_MORE = """\
article: articles/post.md
at: vllm@v0.1.0
claims:
  - id: swap
    text: 交换空间
    refs: [vllm.config.cache.DEFAULT_SWAP_SPACE_GIB]
  - id: cdiv
    text: cdiv 向上取整
    refs:
      - vllm/utils.py::cdiv
      - ref: vllm/utils.py::cdiv
        quote: "-(a // -b)"
"""


def test_an_article_from_two_files_lists_its_own_file_first_then_each_file_in_order(
    project: Path
) -> None:
    """Its claims are not interleaved by line number across its files, which splits a
    claim's refs around another file's line: the Markdown article's claims (lines 5, 11
    and 13), then those the YAML file adds (lines 4 and 7)."""
    write_corpus()
    write("annotations/post-more.yml", POST_MORE)
    assert link().exit_code == 0
    links = CliRunner().invoke(cli, ["links", "--article", "articles/post.md"])
    places = [line.split()[0] for line in links.stdout.splitlines()[1:]]
    assert places == ["articles/post.md:7", "articles/post.md:11", "articles/post.md:13",
                      "annotations/post-more.yml:6", "annotations/post-more.yml:10",
                      "annotations/post-more.yml:11"]
    checked = json.loads(CliRunner().invoke(cli, ["check", "--format", "json"]).stdout)
    in_post = [f"{result['file']}:{result['line']}" for result in checked["results"]
               if result["article"] == "articles/post.md"]
    assert in_post == places


def test_claims_of_one_article_from_two_files_are_all_kept(project: Path) -> None:
    write_corpus()
    write("annotations/post-more.yml", """\
article: articles/post.md
at: vllm@v0.1.0
claims:
  - id: swap
    text: 默认交换空间 4 GiB
    refs: [vllm.config.cache.DEFAULT_SWAP_SPACE_GIB]
""")
    result = link()
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == "3 articles, 7 claims, 10 refs: 10 linked, 0 unindexed, 0 broken\n"
    assert rows("SELECT claim_id, source_file FROM claims WHERE article = 'articles/post.md'"
                " ORDER BY source_file, line") == [
        ("swap", "annotations/post-more.yml"),
        ("clone", "articles/post.md"),
        (link_claim_id("articles/post.md", URL_UTIL), "articles/post.md"),
        (link_claim_id("articles/post.md", URL_README), "articles/post.md"),
    ]
    # The second file now fails to load: its claim stays, the other file's claims refresh.
    write("annotations/post-more.yml", "article: articles/post.md\nclaims: [\n")
    write("articles/post.md", POST.replace("有了 clone", "新增 clone"))
    result = link()
    assert result.exit_code == 2
    assert rows("SELECT claim_id, text FROM claims WHERE article = 'articles/post.md'"
                " AND claim_id IN ('swap', 'clone') ORDER BY claim_id") == [
        ("clone", "SamplingParams 在 v0.2.0 新增 clone"),
        ("swap", "默认交换空间 4 GiB"),
    ]


@pytest.mark.parametrize(("article", "warned"), [
    pytest.param("post.md", True, id="a-shorter-path-is-two-articles"),
    pytest.param("articles/post.md", False, id="the-same-path-is-one-article"),
    pytest.param("other/post.md", False, id="another-article"),
])
def test_an_annotation_file_naming_a_markdown_article_by_a_shorter_path(
    project: Path, article: str, warned: bool
) -> None:
    write_corpus()
    write("annotations/post-more.yml", f"article: {article}\nat: vllm@v0.1.0\nclaims:\n"
          "  - id: swap\n    text: t\n    refs: [vllm.config.cache.DEFAULT_SWAP_SPACE_GIB]\n")
    expected = ("Warning: annotations/post-more.yml: article 'post.md' is not the Markdown "
                "article 'articles/post.md': their claims are two articles (hint: write "
                "'article: articles/post.md' to make them one)\n")
    for command in ("link", "check"):  # CI runs check, which links the files that changed
        with Path("annotations/post-more.yml").open("a") as changed:
            changed.write(f"# {command}\n")
        result = CliRunner().invoke(cli, [command])
        assert result.exit_code in (0, 1)
        assert result.stderr == (expected if warned else "")


@pytest.mark.parametrize(("article", "warned"), [
    pytest.param("docs/notes.md", True, id="a-markdown-file-the-globs-do-not-select"),
    pytest.param("articles/post.md", False, id="a-markdown-article"),
    pytest.param("docs/gone.md", False, id="no-such-file"),
    pytest.param("docs", False, id="a-folder"),
])
def test_an_annotation_file_naming_a_markdown_file_that_is_no_article(
    project: Path, article: str, warned: bool
) -> None:
    """The catalogue's config reads no Markdown (articles = []): an author's article named
    in a YAML file would lose its front matter's claims and its permalinks unsaid."""
    write_corpus()
    write("docs/notes.md", POST)
    write("annotations/post-more.yml", f"article: {article}\nat: vllm@v0.1.0\nclaims:\n"
          "  - id: swap\n    text: t\n    refs: [vllm.config.cache.DEFAULT_SWAP_SPACE_GIB]\n")
    result = link()
    assert result.exit_code == 0
    assert result.stderr == (
        f"Warning: annotations/post-more.yml: article '{article}' is a Markdown file that the "
        "'articles' globs of the config do not select: its front matter and permalinks are "
        f"not read (hint: add '{article}' to 'articles' in annotate.toml)\n" if warned else "")


@pytest.mark.parametrize("article", ["./articles/post.md", "articles/../articles/post.md"])
def test_an_annotation_file_naming_a_markdown_article_by_another_path(
    project: Path, article: str
) -> None:
    """The globs select articles/post.md: named otherwise, it is a second article, not a
    file to add to 'articles' (which it is in already)."""
    write_corpus()
    write("annotations/post-more.yml", f"article: {article}\nat: vllm@v0.1.0\nclaims:\n"
          "  - id: swap\n    text: t\n    refs: [vllm.config.cache.DEFAULT_SWAP_SPACE_GIB]\n")
    result = link()
    assert result.exit_code == 0
    assert result.stderr == (
        f"Warning: annotations/post-more.yml: article '{article}' is not the Markdown article "
        "'articles/post.md': their claims are two articles (hint: write 'article: "
        "articles/post.md' to make them one)\n")


def test_a_markdown_article_that_does_not_load_is_not_called_unselected(
    project: Path
) -> None:
    """articles/post.md is selected, and its front matter has an error: that error is
    said, not that the globs do not select it (with a hint to add it to 'articles')."""
    write_corpus()
    write("articles/post.md", POST.replace("title: 缓存", "title: [缓存"))
    write("annotations/post-more.yml", "article: articles/post.md\nat: vllm@v0.1.0\n"
          "claims:\n  - id: swap\n    text: t\n"
          "    refs: [vllm.config.cache.DEFAULT_SWAP_SPACE_GIB]\n")
    result = link()
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "Error: articles/post.md:3: invalid YAML: while parsing a flow sequence (on line 2), "
        "expected ',' or ']', but got ':'",
        "Error: 1 problem in the annotations (see above)",
    ]


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS file names must be UTF-8")
def test_an_annotation_file_name_that_is_not_utf8_is_one_error(project: Path) -> None:
    write_corpus()
    Path("annotations", os.fsdecode(b"odd\xff.yml")).write_text(
        claim("vllm/utils.py::cdiv"), encoding="utf-8")
    result = link()
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: annotations/odd\\xff.yml: the file name is not valid UTF-8 (hint: rename the "
        "file)\n")


def test_a_claim_id_repeated_by_another_file_of_the_article(project: Path) -> None:
    write_corpus()
    write("annotations/post-more.yml", """\
article: articles/post.md
at: vllm@v0.1.0
claims:
  - id: swap
    text: 默认交换空间 4 GiB
    refs: [vllm.config.cache.DEFAULT_SWAP_SPACE_GIB]
  - id: clone
    text: 另一个 clone
    refs: [vllm/utils.py::cdiv]
""")
    result = link()
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: articles/post.md:5: duplicate claim id 'clone' of article 'articles/post.md' "
        "(first defined at annotations/post-more.yml:7)\n"
        "Error: 1 problem in the annotations (see above)\n"
    )
    assert result.stdout == "3 articles, 5 claims, 8 refs: 8 linked, 0 unindexed, 0 broken\n"
    assert rows("SELECT claim_id, text FROM claims WHERE article = 'articles/post.md'"
                " ORDER BY claim_id") == [
        ("clone", "另一个 clone"),
        ("swap", "默认交换空间 4 GiB"),
    ]


def test_link_is_one_transaction(project: Path) -> None:
    write_corpus()
    assert link().exit_code == 0
    before = stored()
    write("annotations/mla.yml", MLA.replace("id: cdiv-later", "id: boom"))
    write("articles/extra.yml", EXTRA.replace("README 第一行", "changed"))
    with connected(DB) as conn:  # real SQLite failing half-way through the writes
        conn.execute("CREATE TRIGGER boom BEFORE INSERT ON claims WHEN NEW.claim_id = 'boom'"
                     " BEGIN SELECT RAISE(ABORT, 'boom'); END")
    config = load_config()
    with (
        open_database(config.db, create=False) as database,
        pytest.raises(sqlite3.IntegrityError, match="boom"),
    ):
        links.link_if_changed(database, config, force=True, reuse=False)
    assert stored() == before


# -- errors --------------------------------------------------------------------------------------

BAD = "annotations/bad.yml"
HEAD = "article: notes\nat: vllm@v0.1.0\nclaims:\n"
ONE_REF = "1 article, 1 claim, 1 ref: 0 linked, 0 unindexed, 1 broken"
FORWARDS = (
    "vllm/model_executor/layers/layernorm.py::RMSNorm.forward, "
    "vllm/model_executor/layers/linear.py::ReplicatedLinear.forward, "
    "vllm/model_executor/layers/linear.py::ColumnParallelLinear.forward, "
    "vllm/model_executor/layers/logits_processor.py::LogitsProcessor.forward"
)
DS = "vllm/model_executor/models/deepseek_v4"
HF_URL = "https://github.com/huggingface/transformers/blob/v4.28.0/src/llama.py#L10-L20"
NO_ARTICLES = "0 articles, 0 claims, 0 refs: 0 linked, 0 unindexed, 0 broken"


def claim(ref: str, extra: str = "") -> str:
    return f"{HEAD}  - id: one\n    text: 一\n    refs:\n      - {ref}\n{extra}"


LINK_ERRORS = [
    pytest.param(
        BAD, "article: notes\nclaims: [\n",
        [f"{BAD}:3: invalid YAML: while parsing a flow node, expected the node content, "
         "but found '<stream end>'"],
        NO_ARTICLES, id="invalid-yaml",
    ),
    pytest.param(
        BAD, f"{HEAD}  - id: one\n    txt: 一\n    refs: [cdiv]\n",
        [f"{BAD}:4: claim 'one' is missing 'text'",
         f"{BAD}:5: unknown key 'txt' in claim 'one' (did you mean 'text'? allowed: id, text, "
         "at, refs, waive)"],
        NO_ARTICLES, id="unknown-key",
    ),
    pytest.param(
        BAD, f"{HEAD}  - id: one\n    text: 一\n",
        [f"{BAD}:4: claim 'one' has no refs"], NO_ARTICLES, id="missing-refs",
    ),
    pytest.param(
        BAD, f"{HEAD}  - id: one\n    text: 一\n    refs: [cdiv]\n"
             "  - id: one\n    text: 二\n    refs: [cdiv]\n",
        [f"{BAD}:7: duplicate claim id 'one' (first defined at line 4)"],
        NO_ARTICLES, id="duplicate-id",
    ),
    pytest.param(
        BAD, f"{HEAD}  - id: One_Claim\n    text: 一\n    refs: [cdiv]\n",
        [f"{BAD}:4: invalid claim id 'One_Claim': must match ^[a-z0-9][a-z0-9-]*$ (hint: "
         "lowercase letters, digits and '-': 'one-claim')"],
        NO_ARTICLES, id="wrong-id-shape",
    ),
    pytest.param(
        BAD, "article: notes\nat: vllm\nclaims: []\n",
        [f"{BAD}:2: invalid pin 'vllm': expected 'REPO@VERSION' "
         "(hint: 'at' takes REPO@VERSION, e.g. vllm@v0.20.0)"],
        NO_ARTICLES, id="bad-at-pin",
    ),
    pytest.param(
        BAD, claim("vllm/utils.py"),
        [f"{BAD}:7: missing '::QUALNAME' or '#Lx-Ly' after path 'vllm/utils.py'"],
        NO_ARTICLES, id="ref-syntax",
    ),
    pytest.param(
        BAD, claim("nope@v1:a.py::b"),
        [f"{BAD}:7: unknown repo 'nope' (hint: configured repos are: lmcache, vllm "
         "(add it as [repos.nope] in annotate.toml))"],
        ONE_REF, id="unknown-repo",
    ),
    pytest.param(
        BAD, "article: notes\nclaims:\n  - id: one\n    text: 一\n"
             "    refs: [vllm/utils.py::cdiv]\n",
        [f"{BAD}:5: 'vllm/utils.py::cdiv' names no version (hint: add 'at: REPO@VERSION' "
         "to the claim or file, or write REPO@VERSION: first)"],
        ONE_REF, id="no-pin",
    ),
    pytest.param(
        BAD, claim("vllm/utls.py::cdiv"),
        [f"{BAD}:7: path 'vllm/utls.py' does not exist at vllm@v0.1.0 "
         "(hint: did you mean 'vllm/utils.py' or 'vllm/__init__.py'?)"],
        ONE_REF, id="missing-path-did-you-mean",
    ),
    pytest.param(
        BAD, claim("vllm/compilation/cuda_graph.py::capture_cudagraph"),
        [f"{BAD}:7: no symbol 'capture_cudagraph' in vllm/compilation/cuda_graph.py at "
         "vllm@v0.1.0 (hint: it is defined at vllm@v0.2.0, vllm@v0.3.0: write vllm@v0.3.0:"
         "vllm/compilation/cuda_graph.py::capture_cudagraph; at vllm@v0.1.0, closest: "
         "'capture_graph')"],
        ONE_REF, id="missing-qualname-of-later-versions-closest",
    ),
    pytest.param(
        BAD, claim("forward"),
        [f"{BAD}:7: 'forward' matches 4 symbols at vllm@v0.1.0: {FORWARDS} "
         "(hint: write PATH::QUALNAME to pick one)"],
        ONE_REF, id="ambiguous-short-name",
    ),
    pytest.param(
        BAD, claim("vllm@v0.3.0:DeepseekV4ForCausalLM.forward"),
        [f"{BAD}:7: 'DeepseekV4ForCausalLM.forward' matches 3 symbols at vllm@v0.3.0: "
         f"{DS}_amd.py::DeepseekV4ForCausalLM.forward, "
         f"{DS}_nvidia.py::DeepseekV4ForCausalLM.forward, "
         f"{DS}_xpu.py::DeepseekV4ForCausalLM.forward (hint: write PATH::QUALNAME to pick one)"],
        ONE_REF, id="ambiguous-dotted-name",
    ),
    pytest.param(
        BAD, claim("ref: vllm.config.cache.CacheConfig.gpu_memory_utilization",
                   "        quote: 'float = 0.92'\n"),
        [f"{BAD}:7: quote 'float = 0.92' does not occur in vllm@v0.1.0:vllm/config/cache.py::"
         "CacheConfig.gpu_memory_utilization at its own pin "
         "(hint: the annotation is wrong from the start: fix the quote or the ref; its closest "
         "line: 'gpu_memory_utilization: float = 0.9')"],
        ONE_REF, id="quote-missing-at-own-pin-names-the-closest-line",
    ),
    pytest.param(
        BAD, claim("ref: vllm.config.cache.CacheConfig.gpu_memory_utilization",
                   "        quote: 'gpu_memory_utilization:float'\n"),
        [f"{BAD}:7: quote 'gpu_memory_utilization:float' does not occur in vllm@v0.1.0:"
         "vllm/config/cache.py::CacheConfig.gpu_memory_utilization at its own pin "
         "(hint: the annotation is wrong from the start: fix the quote or the ref; its closest "
         "line: 'gpu_memory_utilization: float = 0.9')"],
        ONE_REF, id="quote-spaced-otherwise-names-the-closest-line",
    ),
    pytest.param(
        BAD, claim("ref: vllm.config.cache.CacheConfig.gpu_memory_utilization",
                   "        quote: 'bytes = 4096'\n"),
        [f"{BAD}:7: quote 'bytes = 4096' does not occur in vllm@v0.1.0:vllm/config/cache.py::"
         "CacheConfig.gpu_memory_utilization at its own pin "
         "(hint: the annotation is wrong from the start: fix the quote or the ref)"],
        ONE_REF, id="quote-like-no-line",
    ),
    pytest.param(
        BAD, claim("README.md#L3-L4"),
        [f"{BAD}:7: lines 3-4 are past the end of README.md (3 lines) at vllm@v0.1.0 "
         "(hint: check the line range)"],
        ONE_REF, id="lines-past-end",
    ),
    pytest.param(
        "articles/bad.md", "---\ntitle: t\nclaim: []\n---\ntext\n",
        ["articles/bad.md:3: unknown key 'claim' at top level "
         "(did you mean 'claims'? allowed: article, title, at, claims)"],
        NO_ARTICLES, id="markdown-front-matter",
    ),
    pytest.param(
        "articles/bad.md", f"# T\n\nSee {GH}/v0.2.0/vllm/utils.py#L5-L1.\n",
        ["articles/bad.md:3: line range L5-L1 ends before it starts"],
        ONE_REF, id="markdown-permalink-syntax-is-a-broken-claim",
    ),
    pytest.param(
        "articles/bad.md", f"# T\n\nSee {GH}/v0.2.0/vllm/utils.py#L5-L1.\n\n"
                           f"And {GH}/v0.2.0/vllm/utils.py#L1-L5.\n",
        ["articles/bad.md:3: line range L5-L1 ends before it starts"],
        "1 article, 2 claims, 2 refs: 1 linked, 0 unindexed, 1 broken",
        id="markdown-permalink-syntax-leaves-the-other-claims",
    ),
    pytest.param(
        "articles/bad.md", f"# T\n\nSee {GH}/v0.2.0/vllm/utls.py#L5.\n",
        ["articles/bad.md:3: path 'vllm/utls.py' does not exist at vllm@v0.2.0 "
         "(hint: did you mean 'vllm/utils.py' or 'vllm/__init__.py'?)"],
        ONE_REF, id="markdown-permalink-missing-path",
    ),
    pytest.param(
        "articles/bad.md", "# T\n\nSee https://github.com/vllm-project/vlm/blob/v0.2.0/a.py.\n",
        ["articles/bad.md:3: github.com/vllm-project/vlm is not a configured repo "
         "(hint: did you mean 'github.com/vllm-project/vllm'?)"],
        ONE_REF, id="markdown-permalink-into-a-misspelt-repo",
    ),
    pytest.param(
        BAD, claim(HF_URL),
        [f"{BAD}:7: github.com/huggingface/transformers is not a configured repo "
         '(hint: add it as [repos.NAME] in annotate.toml with github = "ORG/NAME")'],
        ONE_REF, id="written-ref-into-a-repo-not-configured",
    ),
]


@pytest.mark.parametrize(("name", "text", "errors", "summary"), LINK_ERRORS)
def test_link_errors(
    project: Path, name: str, text: str, errors: list[str], summary: str
) -> None:
    write(name, text)
    result = link()
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"Error: {error}" for error in errors] + [
        f"Error: {len(errors)} problem{'s' if len(errors) != 1 else ''} in the annotations"
        " (see above)"
    ]
    assert result.stdout == summary + "\n"


def test_link_reports_the_errors_of_every_file_and_links_the_others(project: Path) -> None:
    """A file that does not load does not stop the others: each file's errors are
    reported, in the order of the files, and the files that load are linked."""
    write("annotations/a-bad.yml", "article: notes\nclaims: [\n")
    write("annotations/b-good.yml", claim("vllm/utils.py::cdiv"))
    write("annotations/c-bad.yml", f"{HEAD}  - id: one\n    txt: 一\n    refs: [cdiv]\n")
    result = link()
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "Error: annotations/a-bad.yml:3: invalid YAML: while parsing a flow node, expected "
        "the node content, but found '<stream end>'",
        "Error: annotations/c-bad.yml:4: claim 'one' is missing 'text'",
        "Error: annotations/c-bad.yml:5: unknown key 'txt' in claim 'one' (did you mean "
        "'text'? allowed: id, text, at, refs, waive)",
        "Error: 3 problems in the annotations (see above)",
    ]
    assert result.stdout == "1 article, 1 claim, 1 ref: 1 linked, 0 unindexed, 0 broken\n"


def test_body_permalinks_into_repos_not_configured_are_not_claims(project: Path) -> None:
    """An article on vLLM links to transformers or flash-attention too; only the repos
    this project tracks are checked, and ``link`` says what it left out."""
    other = "https://github.com/Dao-AILab/flash-attention/blob/v2.6.3/csrc/flash.h#L5"
    sibling = "https://github.com/vllm-project/vllm-ascend/blob/v0.11.0/vllm_ascend/x.py#L3"
    readme = "https://github.com/huggingface/transformers/blob/main/README.md#installation"
    write("articles/post.md", f"# T\n\nFrom {HF_URL} and {other}, twice: {other}.\n\n"
                              f"See {GH}/v0.2.0/vllm/utils.py#L10-L12, and {sibling}.\n\n"
                              f"Install: {readme}\n")
    result = link()
    assert result.exit_code == 0
    assert result.stdout == "1 article, 1 claim, 1 ref: 1 linked, 0 unindexed, 0 broken\n"
    assert result.stderr == (
        "Note: 5 permalinks into repos not configured (github.com/Dao-AILab/flash-attention, "
        "github.com/huggingface/transformers, github.com/vllm-project/vllm-ascend) are not "
        'checked; add [repos.NAME] in annotate.toml with github = "ORG/NAME" to check them\n')
    assert rows("SELECT written FROM claim_refs") == [(f"{GH}/v0.2.0/vllm/utils.py#L10-L12",)]


@pytest.mark.parametrize(("quote", "setter"), [
    pytest.param("return self._log_stats", False, id="in-the-first-definition"),
    pytest.param("self._log_stats = value", True, id="in-the-setter"),
])
def test_a_quote_picks_the_definition_of_a_qualname_it_stands_in(
    project: Path, quote: str, setter: bool
) -> None:
    write("annotations/stats.yml", claim("ref: vllm/engine/llm_engine.py::LLMEngine.log_stats",
                                         f"        quote: '{quote}'\n"))
    assert link().exit_code == 0
    source = fv.content_bytes(fv.VERSIONS["v0.1.0"]["vllm/engine/llm_engine.py"]).decode()
    start = source.splitlines().index("    @log_stats.setter" if setter else "    @property") + 1
    assert rows("SELECT start_line FROM claim_refs") == [(start,)]


def test_a_quote_in_no_definition_of_its_qualname_says_so(project: Path) -> None:
    write("annotations/stats.yml", claim("ref: vllm/engine/llm_engine.py::LLMEngine.log_stats",
                                         "        quote: 'not there'\n"))
    result = link()
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        "Error: annotations/stats.yml:7: quote 'not there' does not occur in vllm@v0.1.0:"
        "vllm/engine/llm_engine.py::LLMEngine.log_stats or in its other definitions at its "
        "own pin (hint: the annotation is wrong from the start: fix the quote or the ref)")


def test_one_bad_file_does_not_stop_the_others(project: Path) -> None:
    write_corpus()
    write("annotations/a-broken.yml", "article: x\nclaims: [\n")
    write("annotations/b-unknown.yml", "article: y\nclaims: []\ncolour: red\n")
    write("articles/c-ref.yml", claim("vllm/utils.py::cdivv"))
    result = link()
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "Error: annotations/a-broken.yml:3: invalid YAML: while parsing a flow node, "
        "expected the node content, but found '<stream end>'",
        "Error: annotations/b-unknown.yml:3: unknown key 'colour' at top level "
        "(allowed: article, title, at, claims)",
        "Error: articles/c-ref.yml:7: no symbol 'cdivv' in vllm/utils.py at vllm@v0.1.0 "
        "(hint: closest: 'cdiv')",
        "Error: 3 problems in the annotations (see above)",
    ]
    assert result.stdout == "4 articles, 7 claims, 10 refs: 9 linked, 0 unindexed, 1 broken\n"
    assert rows("SELECT path FROM articles ORDER BY path") == [
        ("articles/post.md",), ("blog/mla-tp.md",), ("https://example.com/notes",), ("notes",)
    ]
    assert rows("SELECT r.state, r.message FROM claim_refs r JOIN claims c ON c.id = r.claim"
                " WHERE c.article = 'notes'") == [
        ("broken", "no symbol 'cdivv' in vllm/utils.py at vllm@v0.1.0 (hint: closest: 'cdiv')")
    ]


def test_a_configured_version_not_yet_indexed_is_a_warning(project: Path) -> None:
    config = Path("annotate.toml")
    config.write_text(config.read_text().replace("versions = [", 'versions = ["v9.9.9", '))
    assert "v9.9.9" in config.read_text()
    write("annotations/later.yml", claim("vllm@v9.9.9:vllm/utils.py::cdiv"))
    write("articles/later.md", f"# T\n\nSee {GH}/v9.9.9/vllm/utils.py#L5.\n")
    result = link()
    assert result.exit_code == 0
    assert result.stderr.splitlines() == [
        "Warning: vllm@v9.9.9 is not indexed (2 refs of 2 claims pin it); "
        "run 'annotate index vllm@v9.9.9'",
    ]
    assert result.stdout == "2 articles, 2 claims, 2 refs: 0 linked, 2 unindexed, 0 broken\n"
    assert rows("SELECT written, state, message, resolved FROM claim_refs ORDER BY line") == [
        (f"{GH}/v9.9.9/vllm/utils.py#L5", "unindexed", "vllm@v9.9.9 is not indexed", None),
        ("vllm@v9.9.9:vllm/utils.py::cdiv", "unindexed", "vllm@v9.9.9 is not indexed", None),
    ]


UNINDEXED_PINS = """\
article: notes
at: vllm@v9.9.9
claims:
  - id: one
    text: 一
    refs: [vllm/utils.py::cdiv, vllm/config/cache.py::CacheConfig]
  - id: two
    text: 二
    refs: [vllm/utils.py::cdiv, vllm@v9.9.8:vllm/utils.py::cdiv]
  - id: three
    text: 三
    at: vllm@v9.9.8
    refs: [vllm/utils.py::cdiv, vllm@v0.1.0:vllm/utils.py::cdiv]
"""


def test_refs_at_versions_not_yet_indexed_are_one_warning_per_version(project: Path) -> None:
    """Not one identical warning per ref: the catalogue has 11 refs at v0.23.1rc0."""
    config = Path("annotate.toml")
    config.write_text(config.read_text().replace("versions = [", 'versions = ["v9.9.8", '
                                                                  '"v9.9.9", '))
    write("annotations/later.yml", UNINDEXED_PINS)
    write("articles/later.md", f"# T\n\nSee {GH}/v9.9.9/vllm/utils.py#L5.\n")
    result = link()
    assert (result.exit_code, result.stderr.splitlines()) == (0, [
        "Warning: vllm@v9.9.9 is not indexed (4 refs of 3 claims pin it); "
        "run 'annotate index vllm@v9.9.9'",
        "Warning: vllm@v9.9.8 is not indexed (2 refs of 2 claims pin it); "
        "run 'annotate index vllm@v9.9.8'",
    ])
    checked = CliRunner().invoke(cli, ["check", "--exit-zero"])
    lines = checked.stdout.splitlines()
    assert (checked.exit_code, checked.stderr) == (0, "")
    assert sum("(run 'annotate index" in line for line in lines) == 0
    assert sum(line.endswith(" vllm@v9.9.9 is not indexed") for line in lines) == 4
    assert lines[-3:-1] == [
        "vllm@v9.9.9 is not indexed (4 refs of 3 claims pin it); run 'annotate index vllm@v9.9.9'",
        "vllm@v9.9.8 is not indexed (2 refs of 2 claims pin it); run 'annotate index vllm@v9.9.8'",
    ]


@pytest.mark.parametrize(("config_file", "shown"), [
    ("annotate.toml", "[repos.vllm] in annotate.toml"),
    ("pyproject.toml", "[tool.annotate.repos.vllm] in pyproject.toml"),
])
def test_a_version_no_source_had_is_not_advised_to_be_indexed_again(
    project: Path, config_file: str, shown: str
) -> None:
    """The catalogue's v0.23.1rc0: a tag only, which the last `index --keep-going` found in
    no source; v9.9.8, never tried, is still to be indexed. The advice names the config in
    use."""
    text = Path("annotate.toml").read_text().replace("versions = [", 'versions = ["v9.9.8", '
                                                                     '"v9.9.9", ')
    if config_file == "pyproject.toml":
        text = "[tool.annotate]\n" + text.replace("[repos.", "[tool.annotate.repos.")
        Path("annotate.toml").unlink()
    Path(config_file).write_text(text)
    write("annotations/later.yml", UNINDEXED_PINS)
    indexed = CliRunner().invoke(cli, ["index", "--keep-going", "vllm@v9.9.9"])
    assert (indexed.exit_code, indexed.stderr[:41]) == (
        0, "Warning: vllm@v9.9.9 was not found (git: ")
    not_found = ("'annotate index' could not fetch it from its sources (git, pypi): set "
                 f"git of {shown} to a local clone that has it, or run "
                 "'annotate index vllm@v9.9.9 --from PATH' on a checkout of it")
    assert link().stderr.splitlines()[0] == (
        f"Warning: vllm@v9.9.9 is not indexed (3 refs of 2 claims pin it); {not_found}")
    checked = CliRunner().invoke(cli, ["check", "--exit-zero"])
    assert checked.stdout.splitlines()[-3:-1] == [
        f"vllm@v9.9.9 is not indexed (3 refs of 2 claims pin it); {not_found}",
        "vllm@v9.9.8 is not indexed (2 refs of 2 claims pin it); run 'annotate index vllm@v9.9.8'",
    ]
    assert sum(line.endswith(" vllm@v9.9.9 is not indexed") for line in
               checked.stdout.splitlines()) == 3
    shown = CliRunner().invoke(cli, ["symbols", "vllm@v9.9.9"])
    assert (shown.exit_code, shown.stderr) == (
        2, f"Error: vllm@v9.9.9 is not indexed; {not_found}\n")


def test_links_stored_by_another_link_format_are_linked_again(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a link stores for the same files and index can change with annotate itself
    (a broken ref's hint in its message); links stored before are not kept as current."""
    write("annotations/later.yml", claim("vllm@v0.1.0:vllm/utils.py::cdivv"))
    assert link().exit_code == 2
    with connected(DB) as conn:  # as an older annotate stored it
        conn.execute("UPDATE claim_refs SET message = 'no symbol (old wording)'")
    assert CliRunner().invoke(cli, ["check"]).exit_code == 1
    assert rows("SELECT message FROM claim_refs") == [("no symbol (old wording)",)]
    monkeypatch.setattr("annotations.links.LINK_FORMAT", links.LINK_FORMAT + 1)
    check = CliRunner().invoke(cli, ["check"])
    assert check.exit_code == 1
    assert rows("SELECT message FROM claim_refs") == [
        ("no symbol 'cdivv' in vllm/utils.py at vllm@v0.1.0 (hint: closest: 'cdiv')",)]
    assert "(hint: closest: 'cdiv')  [failing]" in check.stdout


@pytest.mark.parametrize(("until", "code"), [
    pytest.param("2099-01-01", 0, id="waived"), pytest.param("2000-01-01", 2, id="expired"),
])
def test_a_broken_ref_whose_claim_waives_broken_is_no_link_error(
    project: Path, until: str, code: int
) -> None:
    """check lets such a claim pass until the date: so does link, with a note."""
    waive = f"    waive:\n      - {{status: broken, until: {until}, reason: upstream renames it}}\n"
    write("annotations/w.yml", claim("vllm/utils.py::cdivv", waive))
    result = link()
    assert result.exit_code == code
    message = ("annotations/w.yml:7: no symbol 'cdivv' in vllm/utils.py at vllm@v0.1.0 "
               "(hint: closest: 'cdiv')")
    if code == 0:
        assert result.stderr == f"Note: {message} (waived until {until}: upstream renames it)\n"
    else:
        assert result.stderr.splitlines()[0] == f"Error: {message}"
    assert CliRunner().invoke(cli, ["check"]).exit_code == (0 if code == 0 else 1)


@pytest.mark.parametrize(("quote", "text", "named"), [
    pytest.param("abcdefghij", "abcdefg\nabcdefgh", "abcdefgh", id="a-line-holding-four-fifths"),
    pytest.param("abcdefghij", "abcdefg\nxyz", None, id="a-line-holding-less"),
    pytest.param("abcdefghij", "jihgfedcba", None, id="every-character-out-of-order"),
    pytest.param("abcdefghij", "abcdefghi" + "x" * 500, "abcdefghi" + "x" * 88 + "...",
                 id="a-long-line-cut"),
    pytest.param("ab  cd\n ef", "x\n  ab\tcd  e\n", "ab cd e", id="white-space-runs-as-one"),
    pytest.param("()", "if f(x):", None, id="two-characters-apart"),
    pytest.param("self.foo()", "disable=not self.load_config.use_tqdm_on_load,", None,
                 id="single-characters-strewn-over-a-line"),
    pytest.param("abcdefghij", "abcd-efgh", "abcd-efgh", id="two-runs-of-four"),
])
def test_a_broken_quotes_closest_line_holds_four_fifths_of_it_in_order(
    quote: str, text: str, named: str | None
) -> None:
    """A line is named when it holds at least 80% of the quote's characters in order, in
    runs of two or more (the lines that cannot, by their length or the characters they
    hold, are passed over)."""
    assert links._closest_line(quote, [text]) == named


def test_a_version_neither_indexed_nor_configured_is_broken(project: Path) -> None:
    """A typo in a pin, or a release nobody configured: no ``annotate index`` of the
    configured versions would ever check it, so it must not pass as merely unindexed."""
    write("annotations/later.yml", claim("vllm@v0.9:vllm/utils.py::cdiv"))
    result = link()
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "Error: annotations/later.yml:7: vllm@v0.9 is neither indexed nor configured (hint: "
        "fix the pin, or add v0.9 to 'versions' of [repos.vllm] in annotate.toml and run "
        "'annotate index vllm@v0.9')",
        "Error: 1 problem in the annotations (see above)",
    ]
    assert rows("SELECT state, message FROM claim_refs") == [  # what check will say
        ("broken", "vllm@v0.9 is neither indexed nor configured (hint: fix the pin, or add "
                   "v0.9 to 'versions' of [repos.vllm] in annotate.toml and run 'annotate index "
                   "vllm@v0.9')")]


@pytest.mark.parametrize(("written", "hint"), [
    pytest.param("vllm@0.9.0", "write vllm@v0.9.0: vllm-project/vllm tags it v0.9.0; then add "
                 "v0.9.0 to 'versions' of [repos.vllm] in annotate.toml and run 'annotate index "
                 "vllm@v0.9.0'", id="vllm-s-own"),
    pytest.param("vllm@0.9.0-fork", "fix the pin, or add 0.9.0-fork to 'versions' of "
                 "[repos.vllm] in annotate.toml and run 'annotate index vllm@0.9.0-fork'",
                 id="not-a-pypi-number"),
])
def test_a_pin_named_as_pypi_numbers_a_release_names_its_tag(
    project: Path, written: str, hint: str
) -> None:
    """Neither 'annotate index vllm@0.9.0' nor versions = ["0.9.0"] is taken (the permalinks
    would name a tag vLLM does not have): the hint names what is."""
    write("annotations/later.yml", claim(f"{written}:vllm/utils.py::cdiv"))
    result = link()
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"Error: annotations/later.yml:7: {written} is neither indexed nor configured "
        f"(hint: {hint})")


@pytest.mark.parametrize("pin", [
    pytest.param("vllm@v0.1", id="missing-its-last-zero"),
    pytest.param("vllm@0.1", id="missing-its-v-and-last-zero"),
    pytest.param("vllm@v0.1.0.0", id="with-another-zero"),
])
def test_a_pin_of_the_same_version_number_names_the_indexed_version(
    project: Path, pin: str
) -> None:
    """As pip reads it: vllm==0.1 is the 0.1.0 wheel, which 'annotate index vllm@v0.1'
    refuses as vllm@v0.1.0's."""
    write("annotations/later.yml", claim(f"{pin}:vllm/utils.py::cdiv"))
    result = link()
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"Error: annotations/later.yml:7: {pin} is neither indexed nor configured; "
        "did you mean 'vllm@v0.1.0'? It is indexed")


def test_a_pin_missing_its_v_names_the_indexed_version(project: Path) -> None:
    write("annotations/later.yml", claim("vllm@0.1.0:vllm/utils.py::cdiv"))
    result = link()
    assert result.stderr.splitlines()[0] == (
        "Error: annotations/later.yml:7: vllm@0.1.0 is neither indexed nor configured; "
        "did you mean 'vllm@v0.1.0'? It is indexed")
    checked = CliRunner().invoke(cli, ["check", "--format", "github"])
    assert checked.exit_code == 1
    assert ("is broken: vllm@0.1.0 is neither indexed nor configured; did you mean 'vllm@v0.1.0'? "
            "It is indexed%0A") in checked.stdout
    shown = CliRunner().invoke(cli, ["show", "vllm@0.1.0:vllm/utils.py::cdiv"])
    assert shown.stderr == ("Error: vllm@0.1.0 is not indexed; did you mean 'vllm@v0.1.0'? It "
                            "is indexed\n")
    symbols = CliRunner().invoke(cli, ["symbols", "vllm@0.1.0"])
    assert symbols.stderr == ("Error: vllm@0.1.0 is not indexed; did you mean 'vllm@v0.1.0'? It "
                              "is indexed\n")


def test_yaml_files_are_found_by_either_extension(project: Path) -> None:
    write("annotations/a.yml", claim("cdiv"))
    write("articles/deep/b.yaml", claim("cdiv").replace("article: notes", "article: b"))
    result = link()
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    assert result.stdout.startswith("2 articles, 2 claims, 2 refs: 2 linked")


def test_link_without_an_index(tmp_path: Path) -> None:
    write("annotations/a.yml", claim("cdiv"))
    result = link()
    assert result.exit_code == 2
    missing = tmp_path.resolve() / DB
    assert result.stderr == (
        f"Error: no index at {missing}; run 'annotate index' first, or pass --db PATH\n"
    )


# -- YAML safety ---------------------------------------------------------------------------------

UNSAFE = [
    pytest.param('article: evil\nclaims: !!python/object/apply:os.system ["touch x"]\n',
                 "!!python/object/apply:os.system", 2, id="apply-as-value"),
    pytest.param('--- !!python/object/apply:os.system ["touch x"]\n',
                 "!!python/object/apply:os.system", 1, id="apply-as-document"),
    pytest.param("article: evil\nclaims:\n  - !!python/object/new:subprocess.call [[touch, x]]\n",
                 "!!python/object/new:subprocess.call", 3, id="new-in-a-list"),
    pytest.param("article: evil\ntitle: !!python/name:os.system\nclaims: []\n",
                 "!!python/name:os.system", 2, id="name"),
]


@pytest.mark.parametrize(("text", "tag", "line"), UNSAFE)
def test_python_tags_are_rejected_and_never_run(
    project: Path, text: str, tag: str, line: int
) -> None:
    write("annotations/evil.yml", text)
    result = link()
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"Error: annotations/evil.yml:{line}: unsupported YAML tag '{tag}' "
        "(hint: only plain YAML data is read)"
    )
    assert not Path("x").exists()
    assert rows("SELECT count(*) FROM articles") == [(0,)]
