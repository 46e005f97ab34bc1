"""``annotate links``, ``search`` and ``show`` on an index linked from a small corpus."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import fakevllm as fv
import pytest
from click.testing import CliRunner, Result
from fakeproject import (
    DB,
    connected,
    copy_project,
    run_annotate,
    write_fakes_config,
    write_tree,
)
from fakevllm import FakeRepo

from annotate_cli import cli
from annotations.citations import links_moved_here, links_moved_to, links_with_status
from annotations.links import annotation_files, selects
from annotations.loader import link_claim_id
from annotations.refs import parse_ref
from annotations.resolve import at_indexed_target_version
from annotations.results import RefResult, Status
from db.claims import MAX_SEARCH_TERMS, all_links, check_search_text, search
from db.database import Database, open_database
from db.errors import BadSearchText, MissingIndex
from indexer.config import load_config

GH = "https://github.com/vllm-project/vllm/blob"
UTIL = "vllm/config/cache.py::CacheConfig.gpu_memory_utilization"

TEXTS = {
    "util-default": "显存利用率默认是 0.9",
    "util-raised": "v0.2.0 起显存利用率默认 0.92",
    "forward-rms": "RMSNorm 的 forward 融合了残差",
    "forward-linear": "ReplicatedLinear.forward 只做一次 F.linear",
    "verify": 'swap 太大时报 "Too large swap space." (NEAR* OR)',
    "percent": "约 50% 的显存留给 KV cache",
}
MLA = f"""\
article: blog/mla-tp.md
title: "MLA 的 TP 切分"
at: vllm@v0.1.0
claims:
  - id: util-default
    text: "{TEXTS['util-default']}"
    refs: [{UTIL}]
  - id: util-raised
    text: "{TEXTS['util-raised']}"
    at: vllm@v0.2.0
    refs: [vllm.config.cache.CacheConfig.gpu_memory_utilization]
  - id: forward-rms
    text: "{TEXTS['forward-rms']}"
    refs: [vllm/model_executor/layers/layernorm.py::RMSNorm.forward]
  - id: forward-linear
    text: "{TEXTS['forward-linear']}"
    refs: [ReplicatedLinear.forward]
  - id: verify
    text: '{TEXTS['verify']}'
    refs: [CacheConfig.verify_with_parallel_config]
  - id: percent
    text: "{TEXTS['percent']}"
    refs: [vllm/utils.py::cdiv]
"""
URL = f"{GH}/v0.2.0/vllm/config/cache.py#L22"
POST = f"""\
---
title: 缓存配置笔记
---
# 缓存

默认值在 {URL} 。
"""
POST_TEXT = f"默认值在 {URL} 。"
POST_CLAIM = link_claim_id("articles/post.md", URL)


@pytest.fixture(scope="module")
def linked(
    tmp_path_factory: pytest.TempPathFactory, fake_vllm: FakeRepo, fake_lmcache: FakeRepo
) -> Path:
    """A directory with annotate.toml, the corpus, and the index `index` then `link` built."""
    root = tmp_path_factory.mktemp("linked")
    write_fakes_config(root, fake_vllm, fake_lmcache)
    (root / "annotations").mkdir()
    (root / "annotations" / "mla.yml").write_text(MLA, encoding="utf-8")
    (root / "articles").mkdir()
    (root / "articles" / "post.md").write_text(POST, encoding="utf-8")
    for command in ("index", "link"):
        done = run_annotate(root, command)
        assert done.returncode == 0, done.stderr
    assert done.stdout == "2 articles, 7 claims, 7 refs: 7 linked, 0 unindexed, 0 broken\n"
    return root


@pytest.fixture(autouse=True)
def project(linked: Path) -> Path:
    """The current directory, with the config, the corpus and a copy of the linked index,
    linked again here (the links depend on where the files are)."""
    root = copy_project(linked)
    for folder in CORPUS:
        shutil.copytree(linked / folder, root / folder)
    ok("link")
    return root


CORPUS = ("annotations", "articles")
"""The folders of the corpus's annotation files."""


def link_alone(name: str, text: str) -> None:
    """``text`` as the only annotation file, annotations/NAME, linked (the corpus's claims
    are then gone)."""
    for folder in CORPUS:
        shutil.rmtree(folder)
    Path("annotations").mkdir()
    Path("annotations", name).write_text(text, encoding="utf-8")
    ok("link")


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="annotate")


def ok(*args: str) -> str:
    result = run(*args)
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    return result.stdout


def fails(*args: str) -> str:
    """The one line of stderr of a command that must exit 2 and print nothing else."""
    result = run(*args)
    assert (result.exit_code, result.stdout) == (2, ""), result.output
    assert result.stderr.count("\n") == 1
    return result.stderr


# -- links ---------------------------------------------------------------------------------------

UTIL_LINKS = (
    f"{UTIL}\n"
    f"  articles/post.md#{POST_CLAIM} @v0.2.0: {POST_TEXT}\n"
    f"  blog/mla-tp.md#util-default @v0.1.0: {TEXTS['util-default']}\n"
    f"  blog/mla-tp.md#util-raised @v0.2.0: {TEXTS['util-raised']}\n"
)


@pytest.mark.parametrize(
    "symbol",
    [
        pytest.param(f"vllm@v0.1.0:{UTIL}", id="full-ref"),
        pytest.param(UTIL, id="path-and-qualname"),
        pytest.param("vllm@v0.2.0:vllm.config.cache.CacheConfig.gpu_memory_utilization",
                     id="pinned-dotted-ref"),
        pytest.param("vllm.config.cache.CacheConfig.gpu_memory_utilization", id="dotted-name"),
        pytest.param("vllm.CacheConfig.gpu_memory_utilization",
                     id="dotted-name-through-the-package-import"),
        pytest.param("vllm@v0.1.0:vllm.CacheConfig.gpu_memory_utilization",
                     id="pinned-dotted-ref-through-the-package-import"),
        pytest.param("CacheConfig.gpu_memory_utilization", id="qualname"),
        pytest.param("gpu_memory_utilization", id="short-name"),
    ],
)
def test_links_to_a_symbol(symbol: str) -> None:
    assert ok("links", symbol) == UTIL_LINKS


def test_links_by_permalink_are_those_at_its_version_into_its_lines() -> None:
    assert ok("links", URL) == (
        f"{UTIL}\n"
        f"  articles/post.md#{POST_CLAIM} @v0.2.0: {POST_TEXT}\n"
        f"  blog/mla-tp.md#util-raised @v0.2.0: {TEXTS['util-raised']}\n"
    )


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("vllm@v0.1.0:vllm/config/cache.py#L1-L200",
                     ["util-default", "verify"], id="file-at-the-pin"),
        pytest.param("vllm@v0.2.0:vllm/config/cache.py#L1-L200",
                     [POST_CLAIM, "util-raised"], id="file-at-another-version"),
        pytest.param("vllm@v0.1.0:vllm/config/cache.py#L1-L2", [], id="lines-no-claim-covers"),
    ],
)
def test_links_by_lines_are_the_refs_overlapping_them(query: str, expected: list[str]) -> None:
    found = json.loads(ok("links", "--format", "json", query))
    assert sorted(link["claim"] for link in found) == sorted(expected)


@pytest.mark.parametrize("path", [
    pytest.param("vllm/config/cache.py", id="path"),
    pytest.param("./vllm/config/cache.py", id="dot-slash"),
    pytest.param("vllm//config/cache.py", id="double-slash"),
    pytest.param("vllm/config/./cache.py", id="dot-segment"),
    pytest.param("vllm/engine/../config/cache.py", id="dot-dot-inside-the-repo"),
])
def test_links_of_a_file_are_every_ref_into_it_at_its_pin(path: str) -> None:
    found = json.loads(ok("links", "--format", "json", path))
    assert sorted((link["claim"], link["version"]) for link in found) == sorted([
        (POST_CLAIM, "v0.2.0"), ("util-default", "v0.1.0"), ("util-raised", "v0.2.0"),
        ("verify", "v0.1.0")])


@pytest.mark.parametrize("path", ["../vllm/config/cache.py", "vllm/../../cache.py",
                                  "/vllm/config/cache.py"],
                         ids=["dot-dot-first", "dot-dot-past-the-root", "absolute"])
def test_links_of_a_path_out_of_the_repo_is_refused(path: str) -> None:
    assert fails("links", path) == (
        f"Error: path '{path}' leads out of the repository: give it relative to the "
        "repository's root (vllm/config/cache.py)\n")


@pytest.mark.parametrize("path", ["setup.py", "./setup.py"], ids=["name", "dot-slash"])
def test_links_of_a_top_level_file_are_the_refs_into_it(path: str) -> None:
    """``setup.py`` names a file an indexed version has, not ``py`` of a module ``setup``."""
    fv.write_snapshot(Path("checkout"), {**fv.VERSIONS["v0.3.0"], "setup.py": "x = 1\ny = 2\n"})
    ok("index", "vllm@v0.3.0-local", "--from", "checkout")
    link_alone("setup.yml", "article: blog/setup.md\nat: vllm@v0.3.0-local\nclaims:\n"
                            "  - id: top\n    text: 安装脚本\n    refs: ['setup.py#L1-L2']\n")
    assert ok("links", path) == "setup.py#L1-L2\n  blog/setup.md#top @v0.3.0-local: 安装脚本\n"


def test_links_of_a_file_list_its_lines_refs_under_their_lines() -> None:
    link_alone("lines.yml", "article: blog/lines.md\nat: vllm@v0.1.0\nclaims:\n  - id: head\n"
                            "    text: 文件开头\n    refs: ['vllm/config/cache.py#L1-L2']\n")
    assert ok("links", "vllm/config/cache.py") == (
        "vllm/config/cache.py#L1-L2\n  blog/lines.md#head @v0.1.0: 文件开头\n")


LATER = """\
article: blog/later.md
at: vllm@v0.4.0
claims:
  - id: later-util
    text: 以后的利用率
    refs: [vllm/config/cache.py::CacheConfig.gpu_memory_utilization]
  - id: later-head
    text: 以后的文件开头
    refs: ['vllm/config/cache.py#L1-L2']
"""
LATER_UTIL = "  blog/later.md#later-util @v0.4.0 (not indexed: as written): 以后的利用率\n"
LATER_HEAD = ("vllm/config/cache.py#L1-L2\n"
              "  blog/later.md#later-head @v0.4.0 (not indexed: as written): 以后的文件开头\n")


@pytest.fixture
def pinned_later() -> None:
    """LATER the only annotation file, its claims pinned at v0.4.0, configured and not
    indexed (v0.23.1rc0 of the catalogue, a tag not on PyPI)."""
    config = Path("annotate.toml")
    config.write_text(config.read_text().replace('"v0.3.0"]', '"v0.3.0", "v0.4.0"]'))
    for folder in CORPUS:
        shutil.rmtree(folder)
    Path("annotations").mkdir()
    Path("annotations", "later.yml").write_text(LATER, encoding="utf-8")
    assert run("link").exit_code == 0


@pytest.mark.parametrize(("symbol", "expected"), [
    pytest.param("vllm/config/cache.py", LATER_HEAD + UTIL + "\n" + LATER_UTIL, id="file"),
    pytest.param(UTIL, f"{UTIL}\n{LATER_UTIL}", id="path-and-qualname"),
    pytest.param("CacheConfig.gpu_memory_utilization", f"{UTIL}\n{LATER_UTIL}", id="qualname"),
    pytest.param("vllm.config.cache.CacheConfig.gpu_memory_utilization", f"{UTIL}\n{LATER_UTIL}",
                 id="dotted-name"),
])
def test_links_list_the_claims_pinned_at_a_version_not_indexed_as_written(
    pinned_later: None, symbol: str, expected: str
) -> None:
    """Not left out: their refs name the file and the symbol as written, which is all a
    version not indexed can tell."""
    result = run("links", symbol)
    assert (result.exit_code, result.stdout) == (0, expected)
    found = json.loads(ok("links", "--format", "json", "vllm/config/cache.py"))
    assert {(link["claim"], link["state"], link["resolved"]) for link in found} == {
        ("later-util", "unindexed", None), ("later-head", "unindexed", None)}


def test_links_of_a_folder_name_its_files_that_claims_pinned_at_a_version_not_indexed_cite(
    pinned_later: None
) -> None:
    """Their refs name their files as written: the folder's note counts them, as `links`
    of one of the files lists them."""
    result = run("links", "vllm/config")
    assert (result.exit_code, result.stdout, result.stderr) == (
        0, "No claims cite it.\n", "Note: no indexed version has a file 'vllm/config': it is "
        "a folder; 2 claims cite its files: vllm/config/cache.py; 'annotate links "
        "vllm/config/cache.py' lists those of one\n")


@pytest.mark.parametrize("command", [
    pytest.param(("show", "vllm/utils.py::cdiv"), id="show"),
    pytest.param(("show", "cdiv"), id="show-a-name"),
    pytest.param(("history", "vllm/utils.py::cdiv"), id="history"),
    pytest.param(("xref", "cdiv"), id="xref"),
    pytest.param(("xref", "vllm/utils.py#L1"), id="xref-of-lines"),
])
def test_a_target_version_not_indexed_is_named_as_the_target(
    pinned_later: None, command: tuple[str, str]
) -> None:
    """Not 'vllm@v0.4.0 is not indexed' alone, a version the user never typed."""
    assert fails(*command) == (
        "Error: vllm@v0.4.0 is not indexed (vllm's target version, used where no version is "
        "named); run 'annotate index vllm@v0.4.0', or name an indexed version\n")


@pytest.mark.parametrize(("written", "read_as"), [
    pytest.param("vllm/utils.py::cdiv", "vllm@v0.3.0:vllm/utils.py::cdiv", id="no-version"),
    pytest.param("cdiv", "vllm@v0.3.0:cdiv", id="a-name"),
    pytest.param("vllm@v0.1.0:vllm/utils.py::cdiv", "vllm@v0.1.0:vllm/utils.py::cdiv",
                 id="its-own-version"),
])
def test_a_ref_naming_no_version_is_read_at_the_indexed_target_version(
    project: Path, written: str, read_as: str
) -> None:
    with open_database(project / DB) as database:
        ref = at_indexed_target_version(database, load_config(), parse_ref(written))
    assert str(ref) == read_as


@pytest.mark.parametrize("written", ["vllm/utils.py::cdiv", "cdiv", "vllm/utils.py#L1"],
                         ids=["path-and-qualname", "a-name", "lines"])
def test_a_target_version_not_indexed_is_named_as_the_target_by_the_library(
    project: Path, pinned_later: None, written: str
) -> None:
    with open_database(project / DB) as database, pytest.raises(MissingIndex) as caught:
        at_indexed_target_version(database, load_config(), parse_ref(written))
    assert str(caught.value) == (
        "vllm@v0.4.0 is not indexed (vllm's target version, used where no version is named); "
        "run 'annotate index vllm@v0.4.0', or name an indexed version")


def test_links_of_a_lines_ref_name_its_lines() -> None:
    link_alone("lines.yml", "article: blog/lines.md\nat: vllm@v0.1.0\nclaims:\n  - id: head\n"
                            "    text: 文件开头\n    refs: ['vllm/config/cache.py#L1-L2']\n")
    expected = "vllm/config/cache.py#L1-L2\n  blog/lines.md#head @v0.1.0: 文件开头\n"
    assert ok("links", "vllm@v0.1.0:vllm/config/cache.py#L2") == expected
    assert ok("links", "vllm@v0.1.0:vllm/config/cache.py#L3-L9") == "No claims cite it.\n"


def test_links_to_a_short_name_of_several_symbols_lists_them_grouped() -> None:
    assert ok("links", "forward") == (
        "vllm/model_executor/layers/layernorm.py::RMSNorm.forward\n"
        f"  blog/mla-tp.md#forward-rms @v0.1.0: {TEXTS['forward-rms']}\n"
        "vllm/model_executor/layers/linear.py::ReplicatedLinear.forward\n"
        f"  blog/mla-tp.md#forward-linear @v0.1.0: {TEXTS['forward-linear']}\n"
    )


def test_links_of_a_path_only_cite_that_path() -> None:
    assert ok("links", "vllm/model_executor/layers/linear.py::forward") == (
        "vllm/model_executor/layers/linear.py::ReplicatedLinear.forward\n"
        f"  blog/mla-tp.md#forward-linear @v0.1.0: {TEXTS['forward-linear']}\n"
    )


GRAPHS = """\
article: blog/graphs.md
at: vllm@v0.1.0
claims:
  - id: capture
    text: "CUDA graph 按批大小逐个捕获"
    refs: [vllm/compilation/cuda_graph.py::capture_graph]
"""
OLD_GRAPH = "vllm/compilation/cuda_graph.py::capture_graph"
NEW_GRAPH = "vllm/compilation/cuda_graph.py::capture_cudagraph"


@pytest.fixture
def graphs(project: Path) -> None:
    """A claim about ``capture_graph`` at v0.1.0, renamed ``capture_cudagraph`` at v0.2.0,
    linked alone."""
    link_alone("graphs.yml", GRAPHS)


@pytest.mark.usefixtures("graphs")
@pytest.mark.parametrize("symbol", [
    pytest.param("capture_cudagraph", id="short-name"),
    pytest.param(NEW_GRAPH, id="path-and-qualname"),
    pytest.param(f"vllm@v0.3.0:{NEW_GRAPH}", id="full-ref"),
    pytest.param("vllm.compilation.cuda_graph.capture_cudagraph", id="dotted-name"),
    pytest.param("vllm:capture_cudagraph", id="malformed-pin-read-as-the-name-after-it"),
])
def test_links_to_a_symbol_list_the_claims_whose_symbol_moved_there(symbol: str) -> None:
    assert ok("links", symbol) == (
        f"{NEW_GRAPH}\n  blog/graphs.md#capture @v0.1.0 (as {OLD_GRAPH}, moved here at "
        "v0.3.0): CUDA graph 按批大小逐个捕获\n")
    (found,) = json.loads(ok("links", "--format", "json", symbol))
    assert (found["ref"], found["version"], found["moved_to"]) == (
        OLD_GRAPH, "v0.1.0", f"vllm@v0.3.0:{NEW_GRAPH}")


@pytest.mark.usefixtures("graphs")
def test_links_to_the_old_name_list_the_claim_as_it_was_linked() -> None:
    assert ok("links", "capture_graph") == (
        f"{OLD_GRAPH}\n  blog/graphs.md#capture @v0.1.0: CUDA graph 按批大小逐个捕获\n")
    (found,) = json.loads(ok("links", "--format", "json", "capture_graph"))
    assert "moved_to" not in found


SPLIT = f"{fv.DEEPSEEK_DIR}/deepseek_v4.py::DeepseekV4ForCausalLM"
COPIES = [f"{fv.DEEPSEEK_DIR}/deepseek_v4_{platform}.py::DeepseekV4ForCausalLM"
          for platform in ("amd", "nvidia", "xpu")]


@pytest.mark.parametrize("copy", COPIES, ids=["amd", "nvidia", "xpu"])
def test_links_to_each_copy_of_an_ambiguous_move_list_the_claim(copy: str) -> None:
    """A class split into per-platform copies at v0.3.0 moved to each as much as to the
    one check names first: each lists the claim, saying it may be elsewhere."""
    link_alone("split.yml", f"article: blog/split.md\nat: vllm@v0.2.0\nclaims:\n  - id: v4\n"
                            f"    text: V4 的模型\n    refs: [{SPLIT}]\n")
    assert ok("links", copy) == (
        f"{copy}\n  blog/split.md#v4 @v0.2.0 (as {SPLIT}, moved here at v0.3.0, or to 2 "
        "other places): V4 的模型\n")
    (found,) = json.loads(ok("links", "--format", "json", copy))
    assert found["moved_to"] == f"vllm@v0.3.0:{copy}"
    assert sorted(found["moved_among"]) == [f"vllm@v0.3.0:{other}" for other in COPIES
                                            if other != copy]


@pytest.mark.usefixtures("graphs")
@pytest.mark.parametrize("symbol", [
    pytest.param("cudagraph", id="end-of-the-name-that-is-no-component"),
    pytest.param("vllm/utils.py::capture_cudagraph", id="its-qualname-in-another-file"),
    pytest.param("LLMEngine.add_request", id="another-symbol"),
])
def test_links_to_a_symbol_no_claim_moved_to_list_none(symbol: str) -> None:
    assert run("links", symbol).stdout == "No claims cite it.\n"


@pytest.mark.usefixtures("graphs")
@pytest.mark.parametrize("symbol", [
    pytest.param("vllm.SamplingParams.clone", id="through-the-package-import"),
    pytest.param("vllm.sampling_params.SamplingParams.clone", id="dotted-name"),
    pytest.param("SamplingParams.clone", id="qualname"),
])
def test_a_dotted_name_follows_a_move_to_what_it_names_at_the_target_version(
    project: Path, symbol: str
) -> None:
    """Read as `links_citing` reads it, and at the target version too: ``clone`` is not
    defined at v0.1.0, the only version a link is pinned at."""
    moved_to = "vllm@v0.3.0:vllm/sampling_params.py::SamplingParams.clone"
    with open_database(project / DB) as database:
        (row,) = all_links(database)
        result = _moved(row, moved_to)
        found = links_moved_to(database, load_config(), symbol, [result])
        assert [(link["claim_id"], link["moved_to"]) for link in found] == [
            ("capture", moved_to)]
        assert links_moved_to(database, load_config(), "SamplingParams.copy", [result]) == []


@pytest.mark.usefixtures("graphs")
@pytest.mark.parametrize(("symbol", "listed", "found"), [
    pytest.param("capture_cudagraph", False, [("capture", f"vllm@v0.3.0:{NEW_GRAPH}")],
                 id="moved-here"),
    pytest.param("capture_cudagraph", True, [], id="listed-already"),
    pytest.param("capture_graph", False, [], id="its-old-name"),
    pytest.param("vllm/compilation/cuda_graph.py", False, [], id="a-file-names-no-symbol"),
])
def test_links_moved_here_are_the_links_checked_moved_to_it_but_those_listed(
    project: Path, symbol: str, listed: bool, found: list[tuple[str, str]]
) -> None:
    with open_database(project / DB) as database:
        listed_links = all_links(database) if listed else []
        moved = links_moved_here(database, load_config(), symbol, listed_links)
    assert [(link["claim_id"], link["moved_to"]) for link in moved] == found


@pytest.mark.usefixtures("graphs")
@pytest.mark.parametrize(("lines_below", "status"), [
    pytest.param(0, "moved", id="checked"),
    pytest.param(1, None, id="checked-a-ref-on-another-line"),
])
def test_links_with_status_are_the_links_with_their_checks_status(
    project: Path, lines_below: int, status: str | None
) -> None:
    """Each stored link with the status of its ref's check result (told apart by file,
    line, claim and ref as written), None when it was not checked."""
    with open_database(project / DB) as database:
        (row,) = all_links(database)
    result = _moved({**row, "line": row["line"] + lines_below}, "vllm@v0.3.0:x.py::y")
    assert links_with_status([row], [result]) == [{**row, "status": status}]


def _moved(row: dict, new_ref: str) -> RefResult:
    """What check says of the stored link ``row`` when its symbol moved to ``new_ref``."""
    return RefResult(
        article=row["article"], claim=row["claim_id"], claim_text=row["text"],
        file=row["source_file"], line=row["line"], ref=row["written"],
        resolved=row["resolved"], target=None, status=Status.MOVED, message="",
        new_ref=new_ref)


@pytest.mark.usefixtures("graphs")
@pytest.mark.parametrize(("symbol", "new_ref"), [
    pytest.param("SamplingParams.copy", "vllm@v0.3.0:vllm/sampling_params.py::SamplingParams"
                 ".clone", id="moved-to-another-symbol"),
    pytest.param("vllm.sampling_params.", "vllm@v0.3.0:vllm/sampling_params.py#L3-L5",
                 id="lines-name-no-symbol"),
])
def test_links_moved_to_lists_no_link_and_reads_none_when_none_moved_to_the_symbol(
    project: Path, monkeypatch: pytest.MonkeyPatch, symbol: str, new_ref: str
) -> None:
    """`links SYMBOL` of a big collection read every stored link to list none."""
    with open_database(project / DB) as database:
        (row,) = all_links(database)
        result = _moved(row, new_ref)
        monkeypatch.setattr("db.claims.all_links", None)
        assert links_moved_to(database, load_config(), symbol, [result]) == []


CACHE_ENGINE = """\
article: blog/engine.md
at: vllm@v0.2.0
claims:
  - id: engine
    text: "缓存引擎"
    refs: [vllm/worker/cache_engine.py::CacheEngine]
"""


def test_a_claim_that_cites_the_name_it_moved_to_is_listed_once_as_linked() -> None:
    """``CacheEngine`` moved to vllm/v1/ at v0.3.0 and kept its name: a claim found by
    the name is not listed again as one whose symbol moved there."""
    link_alone("engine.yml", CACHE_ENGINE)
    assert ok("links", "CacheEngine") == (
        "vllm/worker/cache_engine.py::CacheEngine\n  blog/engine.md#engine @v0.2.0: 缓存引擎\n")
    assert len(json.loads(ok("links", "--format", "json", "CacheEngine"))) == 1
    assert ok("links", "vllm/v1/worker/cache_engine.py::CacheEngine") == (
        "vllm/v1/worker/cache_engine.py::CacheEngine\n  blog/engine.md#engine @v0.2.0 (as "
        "vllm/worker/cache_engine.py::CacheEngine, moved here at v0.3.0): 缓存引擎\n")


@pytest.mark.usefixtures("graphs")
def test_links_to_lines_follow_no_move() -> None:
    assert ok("links", f"vllm@v0.3.0:{NEW_GRAPH.split('::')[0]}#L1-L400") == (
        "No claims cite it.\n")


UNITS = """\
article: blog/units.md
at: vllm@units
claims:
  - id: mu
    text: "\u03bc 是百万分之一"
    refs: [vllm/units.py::\u00b5]
"""


@pytest.mark.parametrize("symbol", [
    pytest.param("\u00b5", id="micro-sign"),
    pytest.param("\u03bc", id="mu"),
    pytest.param("vllm.units.\u00b5", id="dotted-micro-sign"),
    pytest.param("vllm/units.py::\u00b5", id="path-and-micro-sign"),
])
def test_links_to_a_name_read_as_python_reads_it(tmp_path: Path, symbol: str) -> None:
    """``µ`` (the micro sign) is ``μ`` (mu) to Python (NFKC), in the index, in the claim's
    ref and in the name asked for."""
    source = write_tree(tmp_path / "units", {"vllm/units.py": "\u03bc = 1e-6\n"})
    ok("index", "vllm@units", "--from", str(source))
    link_alone("units.yml", UNITS)
    assert ok("links", symbol) == (
        "vllm/units.py::\u03bc\n  blog/units.md#mu @units: \u03bc 是百万分之一\n")


def test_links_to_an_uncited_symbol() -> None:
    assert ok("links", "LLMEngine.add_request") == "No claims cite it.\n"
    assert json.loads(ok("links", "--format", "json", "LLMEngine.add_request")) == []


@pytest.mark.parametrize(("name", "note"), [
    pytest.param("CacheConfg", "Note: nothing named 'CacheConfg' is defined in any indexed "
                 "version (closest: CacheConfig, CacheEngine)\n", id="typo"),
    pytest.param("Zzqxw", "Note: nothing named 'Zzqxw' is defined in any indexed version\n",
                 id="nothing-close"),
    pytest.param("LLMEngine.add_request", "", id="defined-but-not-cited"),
    pytest.param("vllm/config/cache.py::CacheConfg", "", id="a-place-is-not-a-name"),
    pytest.param("vllm@v0.1.0:vllm.config.CacheConfg", "Note: nothing named 'CacheConfg' is "
                 "defined in any indexed version (closest: CacheConfig, CacheEngine)\n",
                 id="a-pinned-dotted-name-is-one"),
    pytest.param("vllm/engine/llm_engine.py", "", id="a-file-no-claim-cites"),
    pytest.param("vllm/config/cahce.py", "Note: no indexed version has a file "
                 "'vllm/config/cahce.py' (closest: vllm/config/cache.py)\n",
                 id="a-file-not-indexed"),
    pytest.param("vllm/nothing/here.py", "Note: no indexed version has a file "
                 "'vllm/nothing/here.py'\n", id="a-file-nothing-close"),
    pytest.param("setup.py", "Note: no indexed version has a file 'setup.py'\n",
                 id="a-top-level-file-not-indexed"),
    pytest.param("cache.py", "Note: no indexed version has a file 'cache.py' (closest: "
                 "vllm/config/cache.py)\n", id="a-file-name-without-its-folder"),
    pytest.param("vllm/confg", "Note: no indexed version has a file 'vllm/confg' (closest: "
                 "vllm/config/)\n", id="a-misspelt-folder"),
    pytest.param("vllm/model_executor/layer/", "Note: no indexed version has a file "
                 "'vllm/model_executor/layer' (closest: vllm/model_executor/layers/)\n",
                 id="a-misspelt-folder-with-its-slash"),
    pytest.param("vlm/config", "Note: no indexed version has a file 'vlm/config' (closest: "
                 "vllm/config/)\n", id="a-misspelt-folder-above-one"),
    pytest.param("vllm/config/cache", "Note: no indexed version has a file "
                 "'vllm/config/cache' (closest: vllm/config/cache.py)\n",
                 id="a-file-without-its-suffix"),
    pytest.param("vllm/nothing", "Note: no indexed version has a file 'vllm/nothing'\n",
                 id="a-folder-nothing-close"),
    pytest.param("vllm/config/", "Note: no indexed version has a file 'vllm/config': it is a "
                 "folder; 4 claims cite its files: vllm/config/cache.py; 'annotate links "
                 "vllm/config/cache.py' lists those of one\n", id="a-folder"),
    pytest.param("vllm/", "Note: no indexed version has a file 'vllm': it is a folder; 7 claims "
                 "cite its files: vllm/config/cache.py, vllm/model_executor/layers/layernorm.py, "
                 "vllm/model_executor/layers/linear.py, vllm/utils.py; 'annotate links "
                 "vllm/config/cache.py' lists those of one\n", id="a-folder-of-folders"),
    pytest.param("vllm/engine", "Note: no indexed version has a file 'vllm/engine': it is a "
                 "folder, and no claim cites a file in it\n", id="a-folder-no-claim-cites"),
])
def test_links_to_a_name_nothing_defines_says_so(name: str, note: str) -> None:
    result = run("links", name)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "No claims cite it.\n", note)


@pytest.mark.parametrize(("name", "note"), [
    pytest.param("RMSNorm", "Note: 1 claim cites its members: vllm/model_executor/layers/"
                 "layernorm.py::RMSNorm.forward; 'annotate links vllm/model_executor/layers/"
                 "layernorm.py::RMSNorm.forward' lists those of one\n", id="a-class"),
    pytest.param("vllm.model_executor.layers.layernorm.RMSNorm", "Note: 1 claim cites its "
                 "members: vllm/model_executor/layers/layernorm.py::RMSNorm.forward; 'annotate"
                 " links vllm/model_executor/layers/layernorm.py::RMSNorm.forward' lists those "
                 "of one\n", id="a-dotted-name"),
    pytest.param("vllm.model_executor.layers.layernorm", "Note: 1 claim cites its members: "
                 "vllm/model_executor/layers/layernorm.py::RMSNorm.forward; 'annotate links "
                 "vllm/model_executor/layers/layernorm.py::RMSNorm.forward' lists those of "
                 "one\n", id="a-module"),
    pytest.param("LLMEngine.add_request", "", id="a-method-has-none"),
])
def test_links_to_a_class_whose_members_are_cited_names_them(name: str, note: str) -> None:
    """An author asking which claims depend on a class is shown those about its members."""
    result = run("links", name)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "No claims cite it.\n", note)


def test_links_json_round_trips_the_text() -> None:
    out = ok("links", "--format", "json", "CacheConfig.gpu_memory_utilization")
    assert TEXTS["util-default"] in out  # not \\u-escaped
    objects = json.loads(out)
    assert [
        {key: obj[key] for key in ("article", "claim", "text", "ref", "resolved", "version")}
        for obj in objects
    ] == [
        {"article": "articles/post.md", "claim": POST_CLAIM, "text": POST_TEXT, "ref": URL,
         "resolved": f"vllm@v0.2.0:{UTIL}", "version": "v0.2.0"},
        {"article": "blog/mla-tp.md", "claim": "util-default", "text": TEXTS["util-default"],
         "ref": UTIL, "resolved": f"vllm@v0.1.0:{UTIL}", "version": "v0.1.0"},
        {"article": "blog/mla-tp.md", "claim": "util-raised", "text": TEXTS["util-raised"],
         "ref": "vllm.config.cache.CacheConfig.gpu_memory_utilization",
         "resolved": f"vllm@v0.2.0:{UTIL}", "version": "v0.2.0"},
    ]
    assert {(obj["state"], obj["file"]) for obj in objects} == {
        ("linked", "articles/post.md"), ("linked", "annotations/mla.yml")
    }


ARTICLE_TABLE = """\
line  claim           version  state   status   symbol
7     util-default    v0.1.0   linked  changed  vllm@v0.1.0:vllm/config/cache.py::CacheConfig.gpu_memory_utilization
11    util-raised     v0.2.0   linked  fresh    vllm@v0.2.0:vllm/config/cache.py::CacheConfig.gpu_memory_utilization
14    forward-rms     v0.1.0   linked  fresh    vllm@v0.1.0:vllm/model_executor/layers/layernorm.py::RMSNorm.forward
17    forward-linear  v0.1.0   linked  fresh    vllm@v0.1.0:vllm/model_executor/layers/linear.py::ReplicatedLinear.forward
20    verify          v0.1.0   linked  fresh    vllm@v0.1.0:vllm/config/cache.py::CacheConfig.verify_with_parallel_config
23    percent         v0.1.0   linked  changed  vllm@v0.1.0:vllm/utils.py::cdiv
"""  # noqa: E501


@pytest.mark.parametrize("article", ["blog/mla-tp.md", "annotations/mla.yml",
                                     "./annotations/mla.yml", "{cwd}/annotations/mla.yml"],
                         ids=["article-path", "annotation-file", "dot-slash", "absolute"])
def test_links_of_an_article(article: str) -> None:
    assert ok("links", "--article", article.format(cwd=Path.cwd())) == ARTICLE_TABLE


def test_links_of_an_article_reads_no_annotation_files() -> None:
    """A query: the stored claims stay, although this directory has no annotation files
    any more (it says they are those of the last link)."""
    remove_every_annotation_file()
    for _ in range(2):
        result = run("links", "--article", "blog/mla-tp.md")
        assert (result.exit_code, result.stdout) == (0, ARTICLE_TABLE)
        assert result.stderr.endswith("; the claims shown are those of the last link\n")


def test_links_of_an_article_as_json() -> None:
    objects = json.loads(ok("links", "--article", "articles/post.md", "--format", "json"))
    assert objects == [{
        "article": "articles/post.md", "claim": POST_CLAIM, "text": POST_TEXT, "ref": URL,
        "resolved": f"vllm@v0.2.0:{UTIL}", "version": "v0.2.0", "state": "linked",
        "file": "articles/post.md", "line": 6, "status": "fresh",
    }]


def test_links_of_an_unknown_article() -> None:
    assert fails("links", "--article", "blog/nope.md") == (
        "Error: no claims of article 'blog/nope.md' are linked; check the path, "
        "or run 'annotate link'\n"
    )


@pytest.mark.parametrize(("article", "meant"), [
    pytest.param("post.md", "articles/post.md", id="without-its-folder"),
    pytest.param("blog/mla_tp.md", "blog/mla-tp.md", id="misspelt"),
])
def test_links_of_an_article_misnamed_names_the_article_meant(article: str, meant: str) -> None:
    assert fails("links", "--article", article) == (
        f"Error: no claims of article '{article}' are linked; did you mean '{meant}'?\n")


def test_links_of_an_article_named_without_its_folder_names_each_it_may_be() -> None:
    """Two articles end in /post.md: naming the first alone would send the user to the
    wrong one as often as not."""
    Path("annotations", "notes.yml").write_text(
        "article: notes/post.md\nat: vllm@v0.1.0\nclaims:\n  - id: div\n    text: 除法\n"
        "    refs: [vllm/utils.py::cdiv]\n", encoding="utf-8")
    ok("link")
    assert fails("links", "--article", "post.md") == (
        "Error: no claims of article 'post.md' are linked; did you mean 'articles/post.md' "
        "or 'notes/post.md'?\n")


def test_links_of_an_article_file_without_claims_says_it_holds_none() -> None:
    Path("articles", "empty.md").write_text("# 空\n\n没有链接。\n", encoding="utf-8")
    before_link = run("links", "--article", "articles/empty.md")
    assert (before_link.exit_code, before_link.stdout) == (2, "")
    assert before_link.stderr.endswith(
        "Error: 'articles/empty.md' held no claims at the last link; run 'annotate link' to "
        "link the claims it holds now\n")
    ok("link")
    assert fails("links", "--article", "./articles/empty.md") == (
        "Error: 'articles/empty.md' holds no claims\n")


def test_links_of_a_file_the_config_does_not_select_says_so() -> None:
    Path("README.md").write_text("# 说明\n", encoding="utf-8")
    assert fails("links", "--article", "README.md") == (
        "Error: 'README.md' is neither an annotation file nor an article: the 'annotations' "
        "and 'articles' globs of annotate.toml do not select it\n")


@pytest.mark.parametrize(("article", "error"), [
    pytest.param("articles/empty.md", "'articles/empty.md' holds no claims",
                 id="an-article-without-claims"),
    pytest.param("README.md", "'README.md' is neither an annotation file nor an article: the "
                 "'annotations' and 'articles' globs of annotate.toml do not select it",
                 id="a-file-no-glob-selects"),
])
def test_links_of_an_article_named_from_the_config_folder_run_from_elsewhere(
    article: str, error: str, tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stored claims name their files from the config's folder, and `links --article`
    finds them so from anywhere: a file named so that has none is told apart the same way,
    not sent to look for another article."""
    Path("articles", "empty.md").write_text("# 空\n\n没有链接。\n", encoding="utf-8")
    Path("README.md").write_text("# 说明\n", encoding="utf-8")
    ok("link")
    config = Path.cwd() / "annotate.toml"
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    assert fails("--config", str(config), "links", "--article", article) == f"Error: {error}\n"


@pytest.mark.parametrize(("path", "selected"), [
    pytest.param("annotations/mla.yml", True, id="an-annotation-file"),
    pytest.param("./articles/post.md", True, id="an-article-by-another-name"),
    pytest.param("elsewhere.yml", True, id="a-symlink-to-one"),
    pytest.param("README.md", False, id="a-file-no-glob-selects"),
    pytest.param("loop.yml", False, id="a-symlink-loop"),
])
def test_the_files_the_config_selects_are_told_by_where_they_lead(
    path: str, selected: bool
) -> None:
    Path("README.md").write_text("# 说明\n", encoding="utf-8")
    Path("elsewhere.yml").symlink_to("annotations/mla.yml")
    Path("loop.yml").symlink_to("loop.yml")
    assert selects(annotation_files(load_config()), Path(path)) is selected


@pytest.mark.parametrize("article", [
    pytest.param("a" * 300 + ".yml", id="a-name-too-long"),
    pytest.param("articles/" + "a" * 300 + "/x.yml", id="a-folder-name-too-long"),
    pytest.param("loop.yml", id="a-symlink-loop"),
])
def test_links_of_an_article_path_no_file_can_have_is_one_error(article: str) -> None:
    Path("loop.yml").symlink_to("loop.yml")
    assert fails("links", "--article", article) == (
        f"Error: no claims of article '{article}' are linked; check the path, or run "
        "'annotate link'\n")


@pytest.mark.parametrize(("args", "error"), [
    pytest.param(["links", ""], "Error: Invalid value for 'SYMBOL': it is empty",
                 id="empty-symbol"),
    pytest.param(["links", "--article", " "], "Error: Invalid value for '--article': it is empty",
                 id="blank-article"),
])
def test_links_of_nothing_is_a_usage_error(args: list[str], error: str) -> None:
    result = run(*args)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"{error} (see 'annotate links --help')\n"


@pytest.mark.parametrize("args", [[], ["forward", "--article", "blog/mla-tp.md"]],
                         ids=["neither", "both"])
def test_links_wants_a_symbol_or_an_article(args: list[str]) -> None:
    result = run("links", *args)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == ("Error: give either SYMBOL or --article PATH (see 'annotate links "
                             "--help')\n")


def test_links_to_a_malformed_ref() -> None:
    assert fails("links", "vllm@v0.1.0:vllm/utils.py::") == (
        "Error: missing qualname after '::' in 'vllm@v0.1.0:vllm/utils.py::'\n"
    )
    assert fails("links", "vllm@v0.1.0:") == (
        "Error: nothing after 'vllm@v0.1.0:' (hint: write PATH::QUALNAME, a dotted name or "
        "PATH#Lx-Ly after ':')\n")


@pytest.mark.parametrize("name", ["vllm.config.", ".CacheConfig", "vllm..CacheConfig"],
                         ids=["trailing-dot", "leading-dot", "double-dot"])
def test_links_to_a_malformed_dotted_name(name: str) -> None:
    assert fails("links", name) == (
        f"Error: invalid dotted name '{name}': expected identifiers joined by '.'\n")


def test_links_at_a_version_not_indexed_says_so() -> None:
    """Not 'No claims cite it.': no claim could, at a version the index does not have."""
    assert fails("links", "vllm@v9:vllm/utils.py#L1") == (
        "Error: vllm@v9 is neither indexed nor configured (vllm has v0.1.0, v0.2.0, v0.3.0); "
        "fix the version, or run 'annotate index vllm@v9' to index it\n")


def test_links_of_a_permalink_into_a_repo_not_configured_is_an_error() -> None:
    """Not the claims on the same lines of another repo (``URL``'s): show says the same."""
    permalink = URL.replace("vllm-project/vllm", "someone/fork")
    assert permalink != URL
    expected = ("Error: github.com/someone/fork is not a configured repo (hint: add it as "
                '[repos.NAME] in annotate.toml with github = "ORG/NAME")\n')
    assert (fails("links", permalink), fails("show", permalink)) == (expected, expected)


UNKNOWN_SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(("command", "pin"), [
    pytest.param(("show", f"{GH}/{UNKNOWN_SHA}/vllm/utils.py#L1"), f"vllm@{UNKNOWN_SHA}",
                 id="show-a-copied-permalink"),
    pytest.param(("show", f"vllm@{UNKNOWN_SHA}:vllm/utils.py::cdiv"), f"vllm@{UNKNOWN_SHA}",
                 id="show-a-ref"),
    pytest.param(("links", "vllm@0123abc:vllm/utils.py#L1"), "vllm@0123abc",
                 id="links-of-an-abbreviated-commit"),
    pytest.param(("links", f"{GH}/{UNKNOWN_SHA}/vllm/utils.py#L1"), f"vllm@{UNKNOWN_SHA}",
                 id="links-of-a-copied-permalink"),
])
def test_a_commit_not_indexed_says_what_would_index_it(command: tuple[str, str], pin: str) -> None:
    """A wheel records no commit: 'annotate index vllm@SHA' alone cannot work from PyPI."""
    assert fails(*command) == (
        f"Error: {pin} is neither indexed nor configured (vllm has v0.1.0, v0.2.0, v0.3.0); "
        "a commit names only a version indexed from git at that commit (a wheel records "
        "none): put the release tag in its place, or index the commit with git ('annotate "
        f"index {pin}', which needs access to the repository) or from a checkout of it "
        f"('annotate index {pin} --from PATH')\n")


# -- search --------------------------------------------------------------------------------------

SEARCHES = [
    pytest.param("显存利用率", ["util-default", "util-raised"], id="chinese-trigram"),
    pytest.param("融合了", ["forward-rms"], id="chinese-three-characters"),
    pytest.param("残差", ["forward-rms"], id="chinese-two-characters"),
    pytest.param("显存", ["percent", "util-default", "util-raised"], id="chinese-two-many"),
    pytest.param("TP 切分", sorted(TEXTS), id="title"),
    pytest.param("笔记", [POST_CLAIM], id="title-two-characters"),
    pytest.param("verify_with_parallel", ["verify"], id="cited-symbol-name"),
    pytest.param("layernorm", ["forward-rms"], id="cited-path"),
    pytest.param("rmsnorm", ["forward-rms"], id="case-insensitive"),
    pytest.param("kv", ["percent"], id="short-word-case-insensitive"),
    pytest.param("f.", ["forward-linear"], id="short-word-anywhere"),
    pytest.param("swap OR 残差", [], id="or-is-a-word-not-an-operator"),
    pytest.param("swap or", ["verify"], id="or-is-matched-as-a-word"),
    pytest.param('"Too large swap space."', ["verify"], id="double-quotes-are-literal"),
    pytest.param("NEAR* OR", ["verify"], id="fts-operators-are-literal"),
    pytest.param("50%", ["percent"], id="percent-is-literal"),
    pytest.param("%", ["percent"], id="lone-percent-is-literal"),
    pytest.param("无此内容", [], id="no-match"),
    pytest.param("forward 残差", ["forward-rms"], id="words-in-any-place"),
    pytest.param("残差 RMSNorm", ["forward-rms"], id="words-in-any-order"),
    pytest.param("默认 0.92", ["util-raised"], id="every-word-must-match"),
    pytest.param("forward 无此", [], id="one-word-missing"),
    pytest.param('"残差 RMSNorm"', [], id="quotes-make-a-phrase"),
    pytest.param('RMSNorm "forward 融合"', ["forward-rms"], id="a-word-and-a-phrase"),
    pytest.param('"forward 融合" ReplicatedLinear', [], id="a-phrase-and-a-word-missing"),
]


@pytest.mark.parametrize(("query", "claims"), SEARCHES)
def test_search(query: str, claims: list[str]) -> None:
    objects = json.loads(ok("search", "--format", "json", query))
    assert sorted(obj["claim_id"] for obj in objects) == claims


@pytest.mark.parametrize(("words", "claims"), [
    pytest.param(("forward", "残差"), ["forward-rms"], id="two-words"),
    pytest.param(("默认", "0.92"), ["util-raised"], id="every-word-must-match"),
    pytest.param(("RMSNorm", '"forward 融合"'), ["forward-rms"], id="a-word-and-a-phrase"),
])
def test_search_takes_its_words_as_several_arguments(words: tuple[str, ...],
                                                     claims: list[str]) -> None:
    """``annotate search kv cache``, unquoted, as one types it: the words of one TEXT."""
    objects = json.loads(ok("search", "--format", "json", *words))
    assert sorted(obj["claim_id"] for obj in objects) == claims


def test_search_says_when_it_shows_only_the_first_claims() -> None:
    every = json.loads(ok("search", "--format", "json", "显存"))
    assert len(every) == 3
    result = run("search", "--format", "json", "--limit", "2", "显存")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == every[:2]
    assert result.stderr == ("Note: showing the first 2 claims that match; add words, or raise "
                             "--limit\n")
    assert run("search", "--limit", "3", "显存").stderr == ""
    assert run("search", "--limit", "1", "显存").stderr == (
        "Note: showing the first claim that matches; add words, or raise --limit\n")


def test_search_output_round_trips_the_text() -> None:
    assert ok("search", "残差") == f"blog/mla-tp.md#forward-rms: {TEXTS['forward-rms']}\n"
    out = ok("search", "--format", "json", "融合了残差")
    assert TEXTS["forward-rms"] in out
    assert json.loads(out) == [{
        "article": "blog/mla-tp.md", "claim_id": "forward-rms", "title": "MLA 的 TP 切分",
        "text": TEXTS["forward-rms"],
        "symbols": "vllm/model_executor/layers/layernorm.py RMSNorm.forward",
        "refs": [{"ref": "vllm/model_executor/layers/layernorm.py::RMSNorm.forward",
                  "resolved": "vllm@v0.1.0:vllm/model_executor/layers/layernorm.py::"
                              "RMSNorm.forward", "state": "linked"}],
    }]
    assert ok("search", "无此内容") == "No claims match.\n"


def test_search_json_lists_a_claims_refs() -> None:
    """``symbols`` is the text searched, the refs' paths and qualnames joined by spaces;
    ``refs`` lists the refs one by one, as written and resolved at their pins (None when
    not indexed), as `links` JSON names them."""
    config = Path("annotate.toml")
    config.write_text(config.read_text().replace('"v0.3.0"]', '"v0.3.0", "v0.4.0"]'))
    for folder in CORPUS:
        shutil.rmtree(folder)
    Path("annotations").mkdir()
    Path("annotations", "refs.yml").write_text(
        f"article: blog/refs.md\nat: vllm@v0.1.0\nclaims:\n  - id: four\n    text: 四个引用\n"
        f"    refs: [{UTIL}, vllm/config/cache.py#L1-L2, 'vllm@v0.4.0:vllm/utils.py::cdiv',"
        f" {UTIL}]\n", encoding="utf-8")
    assert run("link").exit_code == 0
    [found] = json.loads(ok("search", "--format", "json", "四个引用"))
    assert found["symbols"] == (
        "vllm/config/cache.py CacheConfig.gpu_memory_utilization vllm/config/cache.py    "
        "vllm/config/cache.py CacheConfig.gpu_memory_utilization")
    assert found["refs"] == [
        {"ref": UTIL, "resolved": f"vllm@v0.1.0:{UTIL}", "state": "linked"},
        {"ref": "vllm/config/cache.py#L1-L2", "resolved": "vllm@v0.1.0:vllm/config/cache.py#L1-L2",
         "state": "linked"},
        {"ref": "vllm@v0.4.0:vllm/utils.py::cdiv", "resolved": None, "state": "unindexed"},
        {"ref": UTIL, "resolved": f"vllm@v0.1.0:{UTIL}", "state": "linked"},
    ]



def test_search_json_reads_the_refs_of_every_claim_shown_in_one_query() -> None:
    """Not one query per claim: the refs of each, in the order written, as they are stored."""
    statements: list[str] = []
    connect = Database._connect

    def traced(database: Database) -> sqlite3.Connection:
        connection = connect(database)
        connection.set_trace_callback(statements.append)
        return connection

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Database, "_connect", traced)
        found = json.loads(ok("search", "--format", "json", "显存"))
    assert len(found) == 3
    assert len([sql for sql in statements if "FROM claim_refs" in sql]) == 1, statements
    with open_database(DB) as database:
        assert [claim["refs"] for claim in found] == [list(database.query(
            "SELECT r.written AS ref, r.resolved, r.state FROM claim_refs r JOIN claims c"
            " ON c.id = r.claim WHERE c.article = ? AND c.claim_id = ? ORDER BY r.seq",
            (claim["article"], claim["claim_id"]))) for claim in found]


HOSTILE = ["*", "NEAR(", "OR", "AND", "NOT", "a OR b", "NEAR(a b, 2)", "(((",
           ")", "^start", "text:显存", "-x", "'", "_", "\\", "***", "a*", "{x}", ":",
           "显存 OR", "NEAR(显存"]


@pytest.mark.parametrize("query", HOSTILE, ids=[repr(q) for q in HOSTILE])
def test_search_survives_fts_syntax(query: str) -> None:
    result = run("search", "--", query)
    assert (result.exit_code, result.stderr) == (0, "")
    assert isinstance(json.loads(ok("search", "--format", "json", "--", query)), list)


@pytest.mark.parametrize(("query", "found"), [
    pytest.param("*", ["verify"], id="star-alone"),
    pytest.param("NEAR*", ["verify"], id="star-after-a-word"),
    pytest.param("**", [], id="two-stars"),
    pytest.param("swa*", [], id="no-prefix-search"),
    pytest.param("?", [], id="question-mark"),
])
def test_search_has_no_wildcards(query: str, found: list[str]) -> None:
    """``*`` is a character like any other: ``search '*'`` finds the claims whose text holds
    one, not every claim."""
    rows = json.loads(ok("search", "--format", "json", "--", query))
    assert [row["claim_id"] for row in rows] == found


@pytest.mark.parametrize("query", ['"', '"prefix', 'swap "Too large', '"swap" "space', '"" "',
                                   '" " "'],
                         ids=["quote-alone", "unclosed-phrase", "word-then-unclosed",
                              "closed-then-unclosed", "empty-then-unclosed",
                              "white-space-then-unclosed"])
def test_search_refuses_an_unclosed_phrase(query: str) -> None:
    """Not a search for the text with its quote, which matched nothing, silently."""
    result = run("search", "--", query)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == ("Error: Invalid value for 'TEXT': a \" opens a phrase that is not "
                             "closed: close it ('\"prefix caching\"') or drop it (see "
                             "'annotate search --help')\n")


@pytest.mark.parametrize("query", ['" "', '"  \t "', 'swap " "'],
                         ids=["a-space", "spaces-and-a-tab", "a-word-then-a-space"])
def test_search_refuses_a_phrase_of_only_white_space(query: str) -> None:
    """Not a search for a space, which every claim's text holds."""
    assert fails("search", "--", query) == (
        "Error: Invalid value for 'TEXT': a \"quoted phrase\" holds only white space, which every "
        "claim has: put words in it or drop it (see 'annotate search --help')\n")


@pytest.mark.parametrize("query", ['swap ""', '"" "swap"', '" " ""'],
                         ids=["after-a-word", "before-a-phrase", "after-a-phrase-of-white-space"])
def test_search_refuses_an_empty_phrase(query: str) -> None:
    """Not a search for two quotes, which matched nothing, silently."""
    assert fails("search", "--", query) == (
        "Error: Invalid value for 'TEXT': a \"quoted phrase\" is empty: put words in it or drop "
        "it (see 'annotate search --help')\n")


@pytest.mark.parametrize(("query", "error"), [
    pytest.param(" ", "Invalid value for 'TEXT': it is empty", id="blank"),
    pytest.param("", "Invalid value for 'TEXT': it is empty", id="empty"),
    *(pytest.param(query, "Invalid value for 'TEXT': a \"quoted phrase\" is empty: put words in it "
                   "or drop it", id=name)
      for query, name in (('""', "an-empty-phrase"), ('"" ""', "two-empty-phrases"),
                          (' "" ', "an-empty-phrase-in-blanks"))),
])
def test_search_refuses_empty_text(query: str, error: str) -> None:
    result = run("search", "--", query)
    assert result.exit_code == 2
    assert result.stderr == f"Error: {error} (see 'annotate search --help')\n"


def test_search_refuses_its_text_before_it_opens_the_index() -> None:
    """A text that searches for nothing is the error, not an index that is not there."""
    assert fails("--db", "missing.db", "search", "--", '"prefix') == (
        "Error: Invalid value for 'TEXT': a \" opens a phrase that is not closed: close it "
        "('\"prefix caching\"') or drop it (see 'annotate search --help')\n")
    assert not Path("missing.db").exists()


@pytest.mark.parametrize(("text", "problem"), [
    pytest.param("", "the search text is empty", id="empty"),
    pytest.param(' "" ', 'a "quoted phrase" is empty: put words in it or drop it',
                 id="an-empty-phrase-in-blanks"),
    pytest.param('swap "Too large', 'a " opens a phrase that is not closed: close it '
                 "('\"prefix caching\"') or drop it", id="unclosed-phrase"),
    pytest.param('swap ""', 'a "quoted phrase" is empty: put words in it or drop it',
                 id="an-empty-phrase"),
    pytest.param('swap " "', 'a "quoted phrase" holds only white space, which every claim '
                 "has: put words in it or drop it", id="a-phrase-of-white-space"),
])
def test_a_search_text_that_searches_for_nothing_is_refused_by_the_library(
    text: str, problem: str
) -> None:
    """As `search` refuses it, before any database is opened (a docs build searching)."""
    with pytest.raises(BadSearchText) as caught:
        check_search_text(text)
    assert str(caught.value) == problem


@pytest.mark.parametrize("text", ['"swap" space', "swap", '"Too large swap"'],
                         ids=["a-phrase-and-a-word", "a-word", "a-phrase"])
def test_a_search_text_of_words_and_closed_phrases_is_taken(text: str) -> None:
    check_search_text(text)


@pytest.mark.parametrize("text", ['"prefix', 'swap ""', '" "'],
                         ids=["unclosed-phrase", "an-empty-phrase", "a-phrase-of-white-space"])
def test_the_library_search_refuses_a_text_that_searches_for_nothing(text: str) -> None:
    """Not a search for the word '"prefix' with its quote, which matched nothing."""
    with open_database(DB) as database, pytest.raises(BadSearchText):
        search(database, text)


def test_search_of_many_words() -> None:
    """A word repeated is one term; too many different ones are one error (SQLite said the
    index might be damaged)."""
    repeated = run("search", "--", "clone " * 3000)
    assert (repeated.exit_code, repeated.stderr) == (0, "")
    assert repeated.stdout == run("search", "clone").stdout
    many = run("search", "--", " ".join(f"w{number}" for number in range(150)))
    assert (many.exit_code, many.stderr) == (
        2, "Error: the search has 150 different words or phrases (at most 100); search for "
           "the few that matter\n")


@pytest.mark.parametrize(("words", "error"), [
    pytest.param(MAX_SEARCH_TERMS, "", id="at-the-limit"),
    pytest.param(MAX_SEARCH_TERMS + 1, f"Error: the search has {MAX_SEARCH_TERMS + 1} different "
                 f"words or phrases (at most {MAX_SEARCH_TERMS}); search for the few that "
                 "matter\n", id="one-over"),
])
def test_search_terms_limit_is_inclusive(words: int, error: str) -> None:
    result = run("search", "--", " ".join(f"w{number}" for number in range(words)))
    assert (result.exit_code, result.stderr) == (2 if error else 0, error)


# -- show ----------------------------------------------------------------------------------------


def _numbered(source: str, start: int, end: int) -> str:
    width = len(str(end))
    lines = source.split("\n")[start - 1:end]
    return "".join(f"{str(n).rjust(width)}  {line}\n" for n, line in enumerate(lines, start))


UTILS_V1_LINES = fv.UTILS_V1.count("\n")
SHOWS = [
    pytest.param(f"vllm@v0.1.0:{UTIL}", f"vllm@v0.1.0:{UTIL}", "v0.1.0/vllm/config/cache.py",
                 fv.CACHE_CONFIG_V1, 22, 22, id="path-and-qualname"),
    pytest.param("vllm@v0.2.0:vllm.config.cache.CacheConfig.gpu_memory_utilization",
                 f"vllm@v0.2.0:{UTIL}", "v0.2.0/vllm/config/cache.py",
                 fv.CACHE_CONFIG_V2, 22, 22, id="dotted"),
    pytest.param("vllm@v0.2.0:vllm.utils.cdiv", "vllm@v0.2.0:vllm/utils.py::cdiv",
                 "v0.2.0/vllm/utils.py", fv.UTILS_V2, 10, 12, id="dotted-function"),
    pytest.param("vllm@v0.1.0:vllm.platforms.DEFAULT_DEVICE",
                 "vllm@v0.1.0:vllm/platforms/__init__.py::DEFAULT_DEVICE",
                 "v0.1.0/vllm/platforms/__init__.py", fv.PLATFORMS_INIT, 15, 15,
                 id="dotted-package-init"),
    pytest.param("vllm@v0.1.0:vllm/config/cache.py#L8-L10",
                 "vllm@v0.1.0:vllm/config/cache.py#L8-L10",
                 "v0.1.0/vllm/config/cache.py", fv.CACHE_CONFIG_V1, 8, 10,
                 id="lines-aligned-numbers"),
    pytest.param("vllm@v0.3.0:csrc/attention/paged_attention_v1.cu#L4-L7",
                 "vllm@v0.3.0:csrc/attention/paged_attention_v1.cu#L4-L7",
                 "v0.3.0/csrc/attention/paged_attention_v1.cu", fv.PAGED_ATTENTION_CU, 4, 7,
                 id="lines-non-python"),
    pytest.param(f"{GH}/v0.2.0/vllm/sampling_params.py#L24",
                 "vllm@v0.2.0:vllm/sampling_params.py::SamplingParams.clone",
                 "v0.2.0/vllm/sampling_params.py", fv.SAMPLING_PARAMS_V2, 24, 26,
                 id="permalink-to-the-def-line"),
    *(pytest.param(ref, f"vllm@v0.1.0:vllm/utils.py#L1-L{UTILS_V1_LINES}",
                   "v0.1.0/vllm/utils.py", fv.UTILS_V1, 1, UTILS_V1_LINES, id=name)
      for ref, name in (("vllm@v0.1.0:vllm/utils.py", "a-whole-file"),
                        (f"{GH}/v0.1.0/vllm/utils.py", "permalink-to-a-whole-file"))),
]


# DEFAULT_DEVICE is assigned under if and else
OTHER_DEFINITIONS = {
    "vllm@v0.1.0:vllm/platforms/__init__.py::DEFAULT_DEVICE":
        "# defined 2 times in its file; the others: L17 (show "
        "vllm@v0.1.0:vllm/platforms/__init__.py#Lx-Ly for one)\n",
}


@pytest.mark.parametrize(("ref", "canonical", "where", "source", "start", "end"), SHOWS)
def test_show(ref: str, canonical: str, where: str, source: str, start: int, end: int) -> None:
    lines = f"L{start}" if end == start else f"L{start}-L{end}"  # as GitHub links one line
    assert ok("show", ref) == (
        f"# {canonical}\n# {GH}/{where}#{lines}\n"
        + OTHER_DEFINITIONS.get(canonical, "") + _numbered(source, start, end)
    )


SETUP = "from setuptools import setup\n\nsetup()\n"


def test_show_of_a_top_level_file_shows_the_file(tmp_path: Path) -> None:
    """``setup.py`` reads as a dotted name (a module ``setup``, its name ``py``), which
    names nothing: the file it is a path of is shown."""
    source = write_tree(tmp_path / "top", {"setup.py": SETUP, "vllm/__init__.py": ""})
    ok("index", "vllm@top", "--from", str(source))
    assert ok("show", "vllm@top:setup.py") == (
        f"# vllm@top:setup.py#L1-L3\n# {GH}/top/setup.py#L1-L3\n" + _numbered(SETUP, 1, 3))


def test_show_marks_the_lines_a_permalink_links_inside_its_symbol() -> None:
    """The author sees which lines of the symbol the link is evidence of."""
    shown = ok("show", f"{GH}/v0.2.0/vllm/sampling_params.py#L25").splitlines()
    assert shown[0] == "# vllm@v0.2.0:vllm/sampling_params.py::SamplingParams.clone"
    assert shown[2] == "# the permalink links L25 of it, marked >"
    numbered = _numbered(fv.SAMPLING_PARAMS_V2, 24, 26).splitlines()
    assert shown[3:] == [numbered[0], numbered[1].replace("25  ", "25> ", 1), numbered[2]]


def test_show_another_repo() -> None:
    assert ok("show", "lmcache@v0.5.1:lmcache.integration.vllm.utils.cache_block_size") == (
        "# lmcache@v0.5.1:lmcache/integration/vllm/utils.py::cache_block_size\n"
        "# https://github.com/LMCache/LMCache/blob/v0.5.1/lmcache/integration/vllm/utils.py"
        "#L11-L12\n"
        "11  def cache_block_size(cache_config: CacheConfig) -> int:\n"
        "12      return cache_config.block_size\n"
    )


@pytest.mark.parametrize("ref", ["vllm/utils.py::cdiv", "vllm.utils.cdiv", "cdiv"],
                         ids=["path-and-qualname", "dotted", "short-name"])
def test_show_of_a_ref_with_no_version_is_at_the_target_version(ref: str) -> None:
    """As history and xref take it (this was 'names no version', with a hint about the
    'at:' of a claim, which a command line has not)."""
    assert ok("show", ref).startswith(
        f"# vllm@v0.3.0:vllm/utils.py::cdiv\n# {GH}/v0.3.0/vllm/utils.py#L")


def test_xref_of_a_permalink_at_a_commit_is_at_the_version_indexed_there() -> None:
    with connected(DB) as conn:
        (commit,) = conn.execute("SELECT commit_sha FROM versions WHERE repo = 'vllm' AND "
                                 "version = 'v0.1.0'").fetchone()
    data = json.loads(ok("xref", f"{GH}/{commit}/vllm/utils.py#L10-L12", "--format", "json"))
    assert (data["name"], data["version"]) == ("cdiv", "vllm@v0.1.0")
    assert [row["path"] for row in data["definitions"]] == ["vllm/utils.py"]


SHOW_ERRORS = [
    pytest.param("vllm@v0.1.0:vllm/utils.py::", "missing qualname after '::' in "
                 "'vllm@v0.1.0:vllm/utils.py::'", id="syntax"),
    *(pytest.param(ref, "'vllm/config' is a folder at vllm@v0.1.0, not a file (hint: name a "
                   "file in it: 'vllm/config/__init__.py' or 'vllm/config/cache.py')", id=name)
      for ref, name in (("vllm@v0.1.0:vllm/config", "a-folder"),
                        ("vllm@v0.1.0:vllm/config::CacheConfig", "a-folder-with-a-qualname"))),
    pytest.param("vllm@v0.1.0:vllm/utls.py", "path 'vllm/utls.py' does not exist at "
                 "vllm@v0.1.0 (hint: did you mean 'vllm/utils.py' or 'vllm/__init__.py'?)",
                 id="a-whole-file-missing"),
    pytest.param("vllm@v9.9.9:vllm/utils.py::cdiv",
                 "vllm@v9.9.9 is neither indexed nor configured (vllm has v0.1.0, v0.2.0, "
                 "v0.3.0); fix the version, or run 'annotate index vllm@v9.9.9' to index it",
                 id="unindexed"),
    pytest.param("nope@v1:a.py::b", "unknown repo 'nope' (hint: configured repos are: lmcache, "
                 "vllm (add it as [repos.nope] in annotate.toml))", id="unknown-repo"),
    pytest.param("vllm@v0.1.0:vllm/utils.py::cdivv",
                 "no symbol 'cdivv' in vllm/utils.py at vllm@v0.1.0 (hint: closest: 'cdiv')",
                 id="qualname-missing"),
    pytest.param("vllm@v0.1.0:vllm.utils.cdivv",
                 "no symbol 'cdivv' in vllm/utils.py at vllm@v0.1.0 (hint: closest: 'cdiv')",
                 id="dotted-qualname-missing"),
    pytest.param("vllm@v0.1.0:vllm/utls.py::cdiv", "path 'vllm/utls.py' does not exist at "
                 "vllm@v0.1.0 (hint: did you mean 'vllm/utils.py' or 'vllm/__init__.py'?)",
                 id="path-missing"),
    pytest.param("vllm@v0.1.0:LogitsProcessor.forward.nope",
                 "no module or symbol 'LogitsProcessor.forward.nope' at vllm@v0.1.0 "
                 "(hint: write PATH::QUALNAME, or a dotted name starting with the module)",
                 id="short-name-missing"),
    pytest.param("vllm@v0.3.0:DeepseekV4ForCausalLM",
                 "'DeepseekV4ForCausalLM' matches 3 symbols at vllm@v0.3.0: "
                 "vllm/model_executor/models/deepseek_v4_amd.py::DeepseekV4ForCausalLM, "
                 "vllm/model_executor/models/deepseek_v4_nvidia.py::DeepseekV4ForCausalLM, "
                 "vllm/model_executor/models/deepseek_v4_xpu.py::DeepseekV4ForCausalLM "
                 "(hint: write PATH::QUALNAME to pick one)", id="ambiguous"),
    pytest.param(f"{GH}/v0.1.0/README.md#L9", "lines 9-9 are past the end of README.md "
                 "(3 lines) at vllm@v0.1.0 (hint: check the line range)", id="past-the-end"),
]


@pytest.mark.parametrize(("ref", "message"), SHOW_ERRORS)
def test_show_errors(ref: str, message: str) -> None:
    assert fails("show", ref) == f"Error: {message}\n"


OUTDATED_LINKS = (
    "Note: the annotation files, the index or annotate changed since the last link; run "
    "'annotate link' (or 'annotate check') to bring the claims shown here up to date\n"
)


@pytest.mark.parametrize("query", [
    pytest.param(("links", "CacheConfig.gpu_memory_utilization"), id="links"),
    pytest.param(("search", "显存利用率"), id="search"),
    pytest.param(("diff", "vllm@v0.1.0", "vllm@v0.2.0", "--annotated"), id="diff"),
])
def test_queries_say_when_the_files_changed_since_the_last_link(query: tuple[str, ...]) -> None:
    edited = MLA.replace("显存利用率默认是 0.9", "显存利用率默认是九成")
    Path("annotations/mla.yml").write_text(edited, encoding="utf-8")
    before = run(*query)
    assert (before.exit_code, before.stderr) == (0, OUTDATED_LINKS)
    assert "九成" not in before.stdout  # what the last link stored
    assert run("link").exit_code == 0
    after = run(*query)
    assert (after.exit_code, after.stderr) == (0, "")
    assert "九成" in after.stdout


def remove_every_annotation_file() -> None:
    """The corpus's folders emptied."""
    for folder in CORPUS:
        for path in Path(folder).iterdir():
            path.unlink()


def match_no_annotation_file() -> None:
    """The config's globs pointed where there is nothing."""
    config = Path("annotate.toml").read_text(encoding="utf-8")
    Path("annotate.toml").write_text('annotations = ["notes/**/*.yml"]\narticles = []\n'
                                     + config, encoding="utf-8")


@pytest.mark.parametrize("query", [
    pytest.param(("links", "CacheConfig.gpu_memory_utilization"), id="links"),
    pytest.param(("search", "显存利用率"), id="search"),
    pytest.param(("diff", "vllm@v0.1.0", "vllm@v0.2.0", "--annotated"), id="diff"),
])
@pytest.mark.parametrize("remove", [
    pytest.param(remove_every_annotation_file, id="folders-emptied"),
    pytest.param(match_no_annotation_file, id="globs-match-nothing"),
])
def test_queries_say_when_every_annotation_file_is_gone_since_the_last_link(
    query: tuple[str, ...], remove: Callable[[], None]
) -> None:
    """Claims are stored, and no file holds them now: the note says so, and does not send
    the user to a link that would refuse."""
    before = run(*query)
    assert (before.exit_code, before.stderr) == (0, "")
    remove()
    after = run(*query)
    no_files = (f"Note: no annotation file under {Path.cwd()} matches the config's globs; "
                "the claims shown are those of the last link\n")
    assert (after.exit_code, after.stdout, after.stderr) == (0, before.stdout, no_files)
    assert "显存利用率" in after.stdout  # the claims of the last link, still shown
    assert run("link").exit_code == 2  # a link of no file: refused, the claims are kept
    assert run(*query).stderr == no_files


@pytest.mark.parametrize("remove", [
    pytest.param(remove_every_annotation_file, id="folders-emptied"),
    pytest.param(match_no_annotation_file, id="globs-match-nothing"),
])
def test_queries_say_nothing_of_no_annotation_files_when_no_claim_is_stored(
    indexed_fakes: Path, remove: Callable[[], None]
) -> None:
    copy_project(indexed_fakes)  # indexed, never linked
    remove()
    assert ok("search", "显存利用率") == "No claims match.\n"


def test_queries_say_when_a_file_could_not_be_read_at_the_last_link() -> None:
    """Not that the files changed: linking again does not help until the file is mended."""
    Path("annotations/bad.yml").write_text("article: x\nclaims: [\n", encoding="utf-8")
    assert run("link").exit_code == 2
    unreadable = ("Note: some annotation files could not be read at the last link, and keep "
                  "the claims they had before; run 'annotate link' to see which\n")
    for _ in range(2):
        assert run("links", "cdiv").stderr == unreadable
    Path("annotations/bad.yml").write_text(MLA.replace("blog/mla-tp.md", "blog/b.md"),
                                           encoding="utf-8")
    assert run("link").exit_code == 0
    assert run("links", "cdiv").stderr == ""


def test_show_names_the_other_definitions_of_its_qualname() -> None:
    source = fv.content_bytes(fv.VERSIONS["v0.1.0"]["vllm/engine/llm_engine.py"]).decode()
    setter = source.splitlines().index("    @log_stats.setter") + 1
    lines = ok("show", "vllm@v0.1.0:vllm/engine/llm_engine.py::LLMEngine.log_stats").splitlines()
    assert lines[2] == (
        f"# defined 2 times in its file; the others: L{setter}-L{setter + 2} (show "
        "vllm@v0.1.0:vllm/engine/llm_engine.py#Lx-Ly for one)"
    )
    assert lines[3].endswith("    @property")


def test_listings_keep_a_multi_line_claim_on_one_line() -> None:
    link_alone("multi.yml", "article: blog/multi.md\nat: vllm@v0.1.0\nclaims:\n"
                            "  - id: two-lines\n    text: |\n      第一行\n      第二行\n"
                            "    refs: [vllm/utils.py::cdiv]\n")
    assert ok("search", "第二行") == "blog/multi.md#two-lines: 第一行 第二行\n"
    assert ok("links", "cdiv").splitlines()[1:] == [
        "  blog/multi.md#two-lines @v0.1.0: 第一行 第二行"
    ]
