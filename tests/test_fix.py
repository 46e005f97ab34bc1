"""``annotate fix``: rewrite moved refs and permalinks, bump pins, byte for byte elsewhere.

One index of two purpose-built trees (``vllm@v1``, ``vllm@v2``; v2 is the target) is built
per module and copied into each test's directory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import fakevllm
import pytest
import yaml
from click.testing import CliRunner, Result
from fakeproject import copy_project, isolate
from fakeproject import write_file as write

from annotate_cli import cli
from annotations import fix as fix_module
from annotations.fix import FixError, FixPlan
from annotations.loader import link_claim_id
from annotations.yaml_edit import ClaimsYaml, Span

GH = "https://github.com/vllm-project/vllm/blob"
CONFIG = '[repos.vllm]\nversions = ["v0", "v1", "v2"]\n'  # v0 is never indexed

POOL = '''

def capture_graph_pool(sizes: list[int]) -> dict:
    """One memory pool shared by every captured graph."""
    pool = torch.cuda.graph_pool_handle()
    return {size: pool for size in sizes}
'''
KERNEL = "// paged attention\n#include <cuda.h>\n\n__global__ void kernel(float* out) {\n" \
         "  out[0] = 1.0f;\n}\n"
ENGINE = "vllm/worker/cache_engine.py::CacheEngine"
NEW_ENGINE = "vllm@v2:vllm/v1/worker/cache_engine.py::CacheEngine"
GRAPH = "vllm/compilation/cuda_graph.py::capture_graph"
NEW_GRAPH = "vllm@v2:vllm/compilation/cuda_graph.py::capture_cudagraph"
SPLIT = "vllm/model_executor/models/deepseek_v4.py::DeepseekV4ForCausalLM"
DS = "vllm/model_executor/models"

MERGE = '''\
def merge_blocks(blocks, block_size):
    """Merge adjacent free blocks into runs."""
    runs = []
    for block in sorted(blocks):
        if runs and runs[-1][1] == block:
            runs[-1][1] = block + block_size
        else:
            runs.append([block, block + block_size])
    return runs
'''
TOP_K = "def top_k(logits, k):\n    values = sorted(logits)\n    return values[-k:]\n"
SAMPLER = "\n\ndef greedy(logits):\n    return top_k(logits, 1)\n"
METHODS = 'Method = Literal[\n    "ngram",\n    "suffix",\n    Eagle,\n]\n'
V1 = {
    "vllm/block_utils.py": MERGE,
    "vllm/sampling.py": TOP_K,
    "vllm/sampler.py": "from vllm.sampling import top_k" + SAMPLER,
    "vllm/worker/cache_engine.py": fakevllm.CACHE_ENGINE_OLD,  # CacheEngine: lines 8-27
    "vllm/compilation/cuda_graph.py": fakevllm.CUDA_GRAPH_V1 + POOL,
    f"{DS}/deepseek_v4.py": fakevllm.DEEPSEEK_V4,
    "vllm/utils.py": fakevllm.UTILS_V1,
    "csrc/kernel.cu": KERNEL,
    "vllm/config/spec.py": METHODS,
}
V2 = {
    "vllm/core/block_utils.py": MERGE.replace("    runs = []\n",
                                              "    assert block_size > 0\n    runs = []\n"),
    "vllm/sampler.py": "from vllm.sample.sampling import top_k" + SAMPLER,
    "vllm/sample/sampling.py": TOP_K.replace("    values", "    # the largest last\n    values"),
    # One more import line: CacheEngine is on lines 9-28.
    "vllm/v1/worker/cache_engine.py": fakevllm.CACHE_ENGINE_NEW.replace(
        "import torch\n", "import torch\nimport torch.nn\n"),
    "vllm/compilation/cuda_graph.py": fakevllm.CUDA_GRAPH_V2 + POOL,
    f"{DS}/deepseek_v4_amd.py": fakevllm.DEEPSEEK_V4_AMD,
    f"{DS}/deepseek_v4_nvidia.py": fakevllm.DEEPSEEK_V4_NVIDIA,
    f"{DS}/deepseek_v4_xpu.py": fakevllm.DEEPSEEK_V4_XPU,
    "vllm/utils.py": fakevllm.UTILS_V2,
    "csrc/kernel.cu": "// v2\n// two lines more\n" + KERNEL,
    # Two lines above it, one member more: lines 1-5 of v1 are lines 3-8.
    "vllm/config/spec.py": "A = 1\nB = 2\n" + METHODS.replace("    Eagle",
                                                            '    "custom",\n    Eagle'),
}


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="annotate")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fix-index")
    with pytest.MonkeyPatch.context() as patch:
        isolate(patch, root / "xdg-cache")
        patch.chdir(root)
        write("annotate.toml", CONFIG)
        for version, files in (("v1", V1), ("v2", V2)):
            for rel, text in files.items():
                write(Path("src", version, rel), text)
            done = run("index", f"vllm@{version}", "--from", f"src/{version}")
            assert done.exit_code == 0, done.output
    return root


@pytest.fixture(autouse=True)
def project(indexed: Path) -> Path:
    return copy_project(indexed)


def fix(*args: str) -> Result:
    result = run("fix", *args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def statuses() -> dict[tuple[str, str], str]:
    report = json.loads(run("check", "--format", "json", "--exit-zero").stdout)
    return {(r["claim"], r["ref"]): r["status"] for r in report["results"]}


# --- moved refs in annotation files, byte for byte ----------------------------------------

# Comments, key order, three quoting styles, Chinese text, trailing white space; CRLF below.
ANNOTATION = f"""\
# 注释：缓存引擎的几条论断
article: blog/engine.md\x20\x20\x20
title: '缓存引擎'
at: "vllm@v1"
claims:
  - id: engine   # the engine itself
    refs:
      - '{ENGINE}'
      - ref: "{GRAPH}"
        quote: "torch.cuda.synchronize()"
    text: "CacheEngine 管理 KV cache，按块分配"\x20\x20
  - id: pool
    text: 池
    refs: [{GRAPH}_pool, {GRAPH}]
  - id: split
    text: "DeepSeek-V4 按平台拆分"
    refs: [{SPLIT}]
  - id: ceil
    text: "cdiv 向上取整"
    at: vllm@v1   # pinned when written
    refs: [vllm/utils.py::cdiv]
"""
FIXED = (
    ANNOTATION.replace(f"'{ENGINE}'", f"'{NEW_ENGINE}'")
    .replace(f'"{GRAPH}"', f'"{NEW_GRAPH}"')
    .replace(f"{GRAPH}_pool, {GRAPH}]", f"{GRAPH}_pool, {NEW_GRAPH}]")
)


def crlf(text: str) -> bytes:
    return text.replace("\n", "\r\n").encode("utf-8")


def test_links_gives_each_ref_on_a_line_its_own_status() -> None:
    """Claim 'pool' has a fresh ref and a moved one on one line (links reuses this fixture)."""
    write("annotations/engine.yml", ANNOTATION)
    assert run("link").exit_code == 0
    listed = json.loads(run("links", "--article", "blog/engine.md", "--format", "json").stdout)
    shown = {(row["claim"], row["ref"]): row["status"] for row in listed}
    assert shown[("pool", f"{GRAPH}_pool")] == "fresh"
    assert shown[("pool", GRAPH)] == "moved"
    assert shown == statuses()


@pytest.mark.parametrize("ending", ["lf", "crlf"])
def test_moved_refs_are_rewritten_and_nothing_else(ending: str) -> None:
    encode = crlf if ending == "crlf" else str.encode
    path = write("annotations/engine.yml", encode(ANNOTATION))
    result = fix()
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == encode(FIXED)
    assert result.stdout == "3 edits in 1 file: annotations/engine.yml\n"
    assert result.stderr == (
        f"Note: annotations/engine.yml:17: left {SPLIT} as it is: the move is ambiguous "
        f"(vllm@v2:{DS}/deepseek_v4_amd.py::DeepseekV4ForCausalLM, "
        f"vllm@v2:{DS}/deepseek_v4_nvidia.py::DeepseekV4ForCausalLM, "
        f"vllm@v2:{DS}/deepseek_v4_xpu.py::DeepseekV4ForCausalLM)\n"
    )
    after = statuses()
    assert after[("engine", NEW_ENGINE)] == "fresh"
    assert after[("engine", NEW_GRAPH)] == "fresh"
    assert after[("pool", NEW_GRAPH)] == "fresh"
    assert after[("pool", f"{GRAPH}_pool")] == "fresh"
    assert after[("split", SPLIT)] == "moved"
    assert after[("ceil", "vllm/utils.py::cdiv")] == "changed"
    second = fix()
    assert second.stdout == "0 edits in 0 files\n"
    assert path.read_bytes() == encode(FIXED)


def _tabbed(text: str) -> str:
    """Tabs after scalars and inside a flow list: libyaml reads them, PyYAML does not."""
    return text.replace("title: '缓存引擎'", "title: '缓存引擎'\t").replace("refs: [", "refs: [\t")


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="libyaml is not installed")
def test_a_file_only_libyaml_reads_is_fixed_as_link_reads_it() -> None:
    with pytest.raises(yaml.YAMLError):
        yaml.compose(_tabbed(ANNOTATION), Loader=yaml.SafeLoader)
    path = write("annotations/engine.yml", _tabbed(ANNOTATION))
    result = fix()
    assert result.stdout == "3 edits in 1 file: annotations/engine.yml\n"
    assert path.read_text(encoding="utf-8") == _tabbed(FIXED)


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="libyaml is not installed")
def test_fix_edits_the_tree_link_read_where_the_two_parsers_differ() -> None:
    """libyaml drops a U+FEFF that starts a line, PyYAML keeps it in the value: link read
    the ref as libyaml does (moved, not broken), so fix must find it the same way."""
    head = "article: blog/bom.md\nat: vllm@v1\nclaims:\n  - id: c\n    text: t\n"
    path = write("annotations/bom.yml", f"{head}    refs: [vllm/utils.py::cdiv,\n\ufeff{ENGINE}]\n")
    assert statuses()[("c", ENGINE)] == "moved"
    assert fix().stdout == "1 edit in 1 file: annotations/bom.yml\n"
    assert path.read_text(encoding="utf-8") == (
        f"{head}    refs: [vllm/utils.py::cdiv,\n\ufeff{NEW_ENGINE}]\n")


def _scalar_marks(node: yaml.Node) -> list[tuple]:
    if isinstance(node, yaml.ScalarNode):
        start, end = node.start_mark, node.end_mark
        return [(node.value, start.index, start.line, start.column, end.index, end.line,
                 end.column, node.style or None)]
    parts = (p for item in node.value for p in (item if isinstance(item, tuple) else (item,)))
    return [mark for part in parts for mark in _scalar_marks(part)]


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="libyaml is not installed")
@pytest.mark.parametrize("text", [
    pytest.param(ANNOTATION, id="annotation"),
    pytest.param("t: '😀缓存'\nrefs: [ab, \"c😀d\", e]\nx: |\n  block\nk: &a v\nm: *a\n",
                 id="astral-quoted-block-alias"),
])
def test_libyaml_marks_count_what_pyyaml_marks_count(text: str) -> None:
    """fix places edits by marks: where PyYAML refuses a file, libyaml's must mean the same."""
    expected = _scalar_marks(yaml.compose(text, Loader=yaml.SafeLoader))
    assert _scalar_marks(yaml.compose(text, Loader=yaml.CSafeLoader)) == expected


@pytest.mark.parametrize("refs", [
    "[vllm/utils.py::cdiv, {E}, {E}]",
    "[{{ref: {E}, quote: \"def __init__\"}}, '{E}']",
    "[{E}, {{ref: {E}, uses: [{U}]}}]",
], ids=["twice", "twice-with-and-without-a-quote", "twice-one-with-uses"])
def test_a_ref_written_twice_on_one_line_is_rewritten_both_times(refs: str) -> None:
    text = f"article: blog/t.md\nat: vllm@v1\nclaims:\n  - id: c\n    text: x\n    refs: {refs}\n"
    uses = "vllm/worker/cache_engine.py::CacheEngine._allocate_kv_cache"
    path = write("annotations/t.yml", text.format(E=ENGINE, U=uses))
    result = fix()
    assert result.exit_code == 0, result.output
    assert path.read_text(encoding="utf-8") == text.format(E=NEW_ENGINE, U=f"vllm@v1:{uses}")


def test_a_rewritten_file_keeps_its_mode() -> None:
    path = write("annotations/engine.yml", ANNOTATION)
    path.chmod(0o640)
    assert fix().exit_code == 0
    assert path.read_text(encoding="utf-8") == FIXED
    assert path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in path.parent.iterdir()) == ["engine.yml"]


def test_dry_run_prints_the_diff_and_changes_nothing() -> None:
    path = write("annotations/engine.yml", ANNOTATION)
    result = fix("--dry-run")
    assert result.exit_code == 0
    assert path.read_text(encoding="utf-8") == ANNOTATION
    assert result.stdout == (
        "--- a/annotations/engine.yml\n"
        "+++ b/annotations/engine.yml\n"
        "@@ -5,13 +5,13 @@\n"
        " claims:\n"
        "   - id: engine   # the engine itself\n"
        "     refs:\n"
        f"-      - '{ENGINE}'\n"
        f"-      - ref: \"{GRAPH}\"\n"
        f"+      - '{NEW_ENGINE}'\n"
        f"+      - ref: \"{NEW_GRAPH}\"\n"
        "         quote: \"torch.cuda.synchronize()\"\n"
        "     text: \"CacheEngine 管理 KV cache，按块分配\"  \n"
        "   - id: pool\n"
        "     text: 池\n"
        f"-    refs: [{GRAPH}_pool, {GRAPH}]\n"
        f"+    refs: [{GRAPH}_pool, {NEW_GRAPH}]\n"
        "   - id: split\n"
        "     text: \"DeepSeek-V4 按平台拆分\"\n"
        f"     refs: [{SPLIT}]\n"
    )
    assert result.stderr.startswith("Note: annotations/engine.yml:17: left ")
    assert result.stderr.endswith("Note: --dry-run wrote nothing: fix would make 3 edits in 1 "
                                  "file: annotations/engine.yml\n")
    assert fix("--dry-run").stdout == result.stdout  # nothing was written


def test_a_ref_written_twice_on_its_line_is_rewritten_where_it_stands_alone() -> None:
    text = (f"article: blog/x.md\nat: vllm@v1\nclaims:\n  - id: twice\n    text: x\n"
            f"    refs: [\"{GRAPH}_pool\", \"{GRAPH}\"]\n")
    path = write("annotations/x.yml", text)
    assert fix().exit_code == 0
    assert path.read_text(encoding="utf-8") == text.replace(f'"{GRAPH}"', f'"{NEW_GRAPH}"')


def test_moved_line_ranges_are_rewritten() -> None:
    text = ("article: blog/k.md\nat: vllm@v1\nclaims:\n  - id: kernel\n    text: k\n"
            "    refs: [csrc/kernel.cu#L4-L6, \"csrc/kernel.cu#L4\"]\n")
    path = write("annotations/k.yml", text)
    assert fix().stdout == "2 edits in 1 file: annotations/k.yml\n"
    assert path.read_text(encoding="utf-8") == text.replace(
        "[csrc/kernel.cu#L4-L6, \"csrc/kernel.cu#L4\"]",
        "[vllm@v2:csrc/kernel.cu#L6-L8, \"vllm@v2:csrc/kernel.cu#L6\"]",
    )
    assert set(statuses().values()) == {"fresh"}


# --- permalinks in Markdown articles ------------------------------------------------------

ENGINE_URL = f"{GH}/v1/vllm/worker/cache_engine.py#L8-L27"
NEW_ENGINE_URL = f"{GH}/v2/vllm/v1/worker/cache_engine.py#L9-L28"
KERNEL_URL = f"{GH}/v1/csrc/kernel.cu#L4-L6"
NEW_KERNEL_URL = f"{GH}/v2/csrc/kernel.cu#L6-L8"
SPLIT_URL = f"{GH}/v1/{DS}/deepseek_v4.py#L10-L25"
UTILS_URL = f"{GH}/v1/vllm/utils.py#L10-L12"
ARTICLE = f"""\
---
title: 缓存引擎
at: vllm@v1
claims:
  - id: front
    text: "引擎"
    refs: [{ENGINE}]
---
# 缓存引擎

CacheEngine 定义在 {ENGINE_URL} ，\x20\x20
内核见 <{KERNEL_URL}>。

- 拆分：[DeepSeek-V4]({SPLIT_URL})
- 向上取整：{UTILS_URL}.
"""


def test_permalinks_get_their_new_url_at_the_target() -> None:
    path = write("articles/engine.md", ARTICLE)
    result = fix()
    assert result.exit_code == 0, result.output
    assert path.read_text(encoding="utf-8") == (
        ARTICLE.replace(ENGINE_URL, NEW_ENGINE_URL).replace(KERNEL_URL, NEW_KERNEL_URL)
        .replace(f"refs: [{ENGINE}]", f"refs: [{NEW_ENGINE}]")
    )
    assert result.stdout == "3 edits in 1 file: articles/engine.md\n"
    assert result.stderr.startswith(f"Note: articles/engine.md:14: left {SPLIT_URL} as it is: "
                                    "the move is ambiguous (")
    after = statuses()
    assert after[(link_claim_id("articles/engine.md", NEW_ENGINE_URL), NEW_ENGINE_URL)] == "fresh"
    assert after[(link_claim_id("articles/engine.md", NEW_KERNEL_URL), NEW_KERNEL_URL)] == "fresh"
    assert after[(link_claim_id("articles/engine.md", UTILS_URL), UTILS_URL)] == "changed"


@pytest.mark.parametrize("around", ["~~", "_", "*"], ids=["struck-out", "emphasised", "bold"])
def test_a_permalink_in_markdown_emphasis_is_rewritten_inside_it(around: str) -> None:
    path = write("articles/e.md", f"# T\n\n{around}旧链接：{ENGINE_URL}{around}\n")
    assert fix().stdout == "1 edit in 1 file: articles/e.md\n"
    assert path.read_text(encoding="utf-8") == f"# T\n\n{around}旧链接：{NEW_ENGINE_URL}{around}\n"


def test_a_permalink_kept_in_an_html_comment_is_neither_a_claim_nor_rewritten() -> None:
    text = (f"# T\n\n<!-- old: {ENGINE_URL} --> see [the engine]({ENGINE_URL}).\n"
            f"<!--\nTODO {UTILS_URL}\n-->\n<pre>{KERNEL_URL}</pre>\n")
    path = write("articles/engine.md", text)
    assert fix().stdout == "1 edit in 1 file: articles/engine.md\n"
    assert path.read_text(encoding="utf-8") == text.replace(
        f"engine]({ENGINE_URL})", f"engine]({NEW_ENGINE_URL})")
    assert [ref for _, ref in statuses()] == [NEW_ENGINE_URL]


def test_an_unreadable_permalink_is_listed_broken_beside_its_articles_other_claims() -> None:
    bad = f"{GH}/v1/vllm/utils.py#L9-L2"
    write("articles/e.md", f"# T\n\nBad {bad}.\n\nGood {ENGINE_URL}.\n")
    assert run("link").exit_code == 2
    rows = [line.split()[:5] for line in
            run("links", "--article", "articles/e.md").stdout.splitlines()[1:]]
    assert rows == [["3", link_claim_id("articles/e.md", bad), "-", "broken", "broken"],
                    ["5", link_claim_id("articles/e.md", ENGINE_URL), "v1", "linked", "moved"]]
    assert fix().stdout == "1 edit in 1 file: articles/e.md\n"


@pytest.mark.parametrize(("anchor", "status"), [
    ("#L11", "fresh"), ("#L11-L12", "changed"), ("#L12", "changed"), ("#L10", "changed"),
    ("#L10-L11", "changed"), ("#L10-L12", "changed"), ("#L24", "changed"),
    ("#L25-L26", "fresh"),
], ids=["docstring-stands", "changed-line-in-range", "changed-line", "def-line-cites-it-all",
        "from-the-def-line-cites-it-all", "whole-symbol", "decorated-def-line-cites-it-all",
        "decorated-body-stands"])
def test_a_permalink_into_a_changed_symbol_is_judged_by_its_lines(anchor: str, status: str) -> None:
    """cdiv's return line changed at v2: a link to its other lines still holds, as a
    quote of them would; check and diff --annotated agree."""
    url = f"{GH}/v1/vllm/utils.py{anchor}"
    write("articles/e.md", f"# T\n\nCeiling division {url}.\n")
    report = json.loads(run("check", "--format", "json", "--exit-zero").stdout)
    (result,) = report["results"]
    assert result["status"] == status
    if status == "fresh":
        assert result["message"].endswith("), but the linked lines still stand")
    elif anchor in ("#L11-L12", "#L12"):
        assert result["message"] == "body changed; the linked lines no longer stand"
    else:  # a link from the def line cites the whole symbol: no lines of it to judge
        assert "linked lines" not in result["message"]
    diff = json.loads(run("diff", "vllm@v1", "vllm@v2", "--annotated", "--format", "json").stdout)
    cited = [change["ref"] for change in diff["changed"] if change.get("claims")]
    symbol = "get_cpu_memory" if int(anchor[2:4]) > 20 else "cdiv"
    assert cited == ([] if status == "fresh" else [f"vllm/utils.py::{symbol}"])


def test_links_by_lines_lists_the_permalinks_into_those_lines_and_each_claim_once() -> None:
    docstring, body = f"{GH}/v1/vllm/utils.py#L11", f"{GH}/v1/vllm/utils.py#L12"
    write("articles/e.md", f"# T\n\nDocstring {docstring}.\n\nBody {body}.\n")
    write("annotations/twice.yml", "article: t\nat: vllm@v1\nclaims:\n  - id: twice\n    "
                                   "text: t\n    refs: [vllm/utils.py::cdiv, vllm.utils.cdiv]\n")
    assert run("link").exit_code == 0
    listed = run("links", "vllm@v1:vllm/utils.py#L12").stdout.splitlines()
    assert listed == ["vllm/utils.py::cdiv",
                      f"  articles/e.md#{link_claim_id('articles/e.md', body)} @v1: Body {body}.",
                      "  t#twice @v1: t"]


@pytest.mark.parametrize("paragraph", [
    "引擎见 {moved}，\n向上取整见 [cdiv]({stays})。",
    "向上取整见 [cdiv]({stays})，引擎见 <{moved}>。",
    "[cdiv]: {stays}\n\n用法 [cdiv][] 与 {moved}.",
], ids=["bare-url-in-the-paragraph", "autolink-in-the-paragraph", "url-beside-a-reference-use"])
def test_a_permalink_that_moves_beside_one_that_stays_is_rewritten(paragraph: str) -> None:
    """A bare permalink (or an autolink) is its own text: rewriting it changes the text of
    the other links of its paragraph, as meant, so fix must not refuse the run."""
    text = f"# T\n\n{paragraph.format(moved=ENGINE_URL, stays=UTILS_URL)}\n"
    path = write("articles/e.md", text)
    result = fix()
    assert (result.exit_code, result.stdout) == (0, "1 edit in 1 file: articles/e.md\n"), \
        result.output
    assert path.read_text(encoding="utf-8") == text.replace(ENGINE_URL, NEW_ENGINE_URL)
    assert statuses()[(link_claim_id("articles/e.md", UTILS_URL), UTILS_URL)] == "changed"


@pytest.mark.parametrize("ending", ["", "\r\n"], ids=["no-line-break-at-the-end", "crlf"])
def test_the_dry_run_diff_applies_to_give_what_fix_writes(ending: str, tmp_path: Path) -> None:
    """The diff of a file whose last line has no line break marks it, as diff and git do:
    unmarked, the next file's header ran on at the end of that line."""
    engine = f"# T\r\n\r\n引擎见 [engine]({ENGINE_URL})。\r\n\r\n末尾：{ENGINE_URL}{ending}"
    write("articles/a.md", engine)
    write("articles/b.md", f"# B\n\n{ENGINE_URL}")
    dry = fix("--dry-run").stdout_bytes  # as written: .stdout makes CRLF a LF
    assert b"\n+++ b/articles/b.md\n" in dry
    patched = tmp_path / "patched"
    shutil.copytree("articles", patched / "articles")
    applied = subprocess.run(["git", "apply", "--unsafe-paths", "-"], input=dry,
                             cwd=patched, capture_output=True, check=False)
    assert applied.returncode == 0, applied.stderr
    assert fix().exit_code == 0
    for name in ("a.md", "b.md"):
        assert (patched / "articles" / name).read_bytes() == Path("articles", name).read_bytes()


def test_a_rewritten_permalink_keeps_githubs_source_view() -> None:
    old = ENGINE_URL.replace("#", "?plain=1#")
    path = write("articles/e.md", f"# T\n\nSee [the engine]({old}).\n")
    assert fix().stdout == "1 edit in 1 file: articles/e.md\n"
    assert path.read_text(encoding="utf-8") == (
        f"# T\n\nSee [the engine]({NEW_ENGINE_URL.replace('#', '?plain=1#')}).\n")


@pytest.mark.parametrize("line", [
    "<!-- old link:\n{U} --> The engine is {U} today.",
    "Use `<!--` to hide; the engine is {U} and `-->` closes.",
    "<!--\n```\n-->\n```\n{U}\n```\n\nThe engine is {U} today.",
    "<pre>\n```\n</pre>\n```\n{U}\n```\n\nThe engine is {U} today.",
], ids=["comment-over-two-lines-before-it", "comment-markers-in-code-spans",
        "fence-after-a-comment-holding-one", "fence-after-a-pre-holding-one"])
def test_fix_rewrites_the_permalink_the_loader_saw(line: str) -> None:
    text = f"# A\n\n{line.format(U=ENGINE_URL)}\n"
    path = write("articles/a.md", text)
    assert fix().stdout == "1 edit in 1 file: articles/a.md\n"
    head, _, tail = text.rpartition(ENGINE_URL)
    assert path.read_text(encoding="utf-8") == head + NEW_ENGINE_URL + tail


def test_a_permalink_shown_in_a_code_span_before_its_link_is_left_as_code() -> None:
    text = f"# T\n\nPaste `{ENGINE_URL}` as [the link]({ENGINE_URL}).\n"
    path = write("articles/engine.md", text)
    result = fix()
    assert (result.exit_code, result.stdout) == (0, "1 edit in 1 file: articles/engine.md\n")
    assert path.read_text(encoding="utf-8") == (
        f"# T\n\nPaste `{ENGINE_URL}` as [the link]({NEW_ENGINE_URL}).\n")


def test_fix_reads_an_article_with_links_into_other_repos_as_link_does() -> None:
    """A link into a repo not configured is not a claim, whatever its anchor: fix must
    not find the article unreadable when it checks its edits."""
    other = "https://github.com/huggingface/transformers/blob/main/README.md#installation"
    text = ARTICLE + f"\n安装见 {other}\n"
    path = write("articles/engine.md", text)
    result = fix()
    assert result.exit_code == 0, result.output
    assert path.read_text(encoding="utf-8") == (
        text.replace(ENGINE_URL, NEW_ENGINE_URL).replace(KERNEL_URL, NEW_KERNEL_URL)
        .replace(f"refs: [{ENGINE}]", f"refs: [{NEW_ENGINE}]"))


@pytest.mark.parametrize(("old", "new"), [
    pytest.param(f"{GH}/v1/vllm/worker/cache_engine.py#L10-L11",
                 f"{GH}/v2/vllm/v1/worker/cache_engine.py#L11-L12", id="lines-in-a-class"),
    pytest.param(f"{GH}/v1/vllm/worker/cache_engine.py#L17",
                 f"{GH}/v2/vllm/v1/worker/cache_engine.py#L18", id="one-line-in-a-method"),
    pytest.param(f"{GH}/v1/vllm/sampling.py#L2-L3",
                 f"{GH}/v2/vllm/sample/sampling.py#L1-L4", id="symbol-changed-length"),
    pytest.param(f"{GH}/v1/vllm/worker/cache_engine.py?plain=1#L10C5-L11C20",
                 f"{GH}/v2/vllm/v1/worker/cache_engine.py?plain=1#L11-L12",
                 id="githubs-own-variants-keep-the-source-view-not-the-columns"),
])
def test_a_permalink_inside_a_symbol_keeps_its_lines(old: str, new: str) -> None:
    path = write("articles/inside.md", _linking_article(old))
    result = fix()
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    assert path.read_text(encoding="utf-8") == _linking_article(new)


def _linking_article(url: str) -> str:
    return f"# 行\n\n见 {url}. 又见 [此处]({url})。\n"


def test_a_symbol_that_moved_and_changed_keeps_its_permalink_with_a_note() -> None:
    old = f"{GH}/v1/vllm/block_utils.py#L5-L6"
    path = write("articles/inside.md", _linking_article(old))
    result = fix()
    assert (result.exit_code, result.stdout) == (0, "0 edits in 0 files\n")
    assert path.read_text(encoding="utf-8") == _linking_article(old)
    assert result.stderr.splitlines()[0] == (
        f"Note: articles/inside.md:3: left {old} as it is: it moved to "
        f"{GH}/v2/vllm/core/block_utils.py#L1-L10 and changed (body); re-read the text "
        "that links it, then write the new permalink"
    )


MERGE_MOVED = "moved to vllm@v2:vllm/core/block_utils.py::merge_blocks; body changed"


@pytest.mark.parametrize(("article", "evidence"), [
    (f"# T\n\nRuns {GH}/v1/vllm/block_utils.py#L5-L6.\n", "; the linked lines still stand there"),
    (f"# T\n\nRuns {GH}/v1/vllm/block_utils.py#L2-L3.\n",
     "; the linked lines no longer stand there"),
    ("---\nat: vllm@v1\nclaims:\n  - id: q\n    text: t\n    refs:\n      - ref: vllm/block_"
     "utils.py::merge_blocks\n        quote: runs.append\n---\n# T\n",
     "; the quote still stands there"),
    ("---\nat: vllm@v1\nclaims:\n  - id: q\n    text: t\n    refs: [vllm.block_utils.merge_"
     "blocks]\n---\n# T\n", ""),
], ids=["linked-lines-stand", "linked-lines-gone", "quote-stands", "no-evidence"])
def test_a_moved_and_changed_symbol_says_whether_the_evidence_stands_there(
    article: str, evidence: str
) -> None:
    """The author's quote or linked lines tell a ref to rewrite from a claim to re-read."""
    write("articles/e.md", article)
    (result,) = json.loads(run("check", "--format", "json", "--exit-zero").stdout)["results"]
    assert (result["status"], result["message"]) == ("moved", MERGE_MOVED + evidence)


def test_permalink_lines_agree_with_the_loader_across_unusual_line_breaks() -> None:
    # U+2028 and a lone CR end lines for the loader (and YAML) too: the fix edits the
    # line the check reported, nothing else.
    text = f"# 引擎\u2028说明\r\n旧行\r{ENGINE_URL}\n"
    path = write("articles/odd.md", text)
    result = fix()
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert path.read_bytes() == text.replace(ENGINE_URL, NEW_ENGINE_URL).encode("utf-8")


# --- --bump ---------------------------------------------------------------------------------

BUMP = """\
article: blog/bump.md
at: vllm@v1
claims:
  - id: no-pin
    text: "x"
    refs: [vllm/utils.py::cdiv]
  - id: own-pin
    text: "y"
    at: 'vllm@v1'   # pinned when written\x20\x20
    refs:
      - vllm/utils.py::get_distributed_init_method
"""


@pytest.mark.parametrize(("claim", "old", "new"), [
    pytest.param("no-pin", "  - id: no-pin\n", "  - id: no-pin\n    at: vllm@v2\n", id="insert"),
    pytest.param("own-pin", "    at: 'vllm@v1'   # pinned when written  \n",
                 "    at: 'vllm@v2'   # pinned when written  \n", id="replace"),
    pytest.param("blog/bump.md#no-pin", "  - id: no-pin\n", "  - id: no-pin\n    at: vllm@v2\n",
                 id="article-and-id"),
    pytest.param("./blog/bump.md#no-pin", "  - id: no-pin\n",
                 "  - id: no-pin\n    at: vllm@v2\n", id="dot-slash-article-and-id"),
])
@pytest.mark.parametrize("ending", ["lf", "crlf"])
def test_bump_moves_the_claims_pin(claim: str, old: str, new: str, ending: str) -> None:
    text = BUMP
    encode = crlf if ending == "crlf" else str.encode
    path = write("annotations/bump.yml", encode(text))
    result = fix("--bump", claim)
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == encode(text.replace(old, new))
    assert result.stdout == "1 edit in 1 file: annotations/bump.yml\n"
    claim_id = claim.rpartition("#")[2]
    bumped = [status for (cid, _), status in statuses().items() if cid == claim_id]
    assert bumped == ["fresh"]


@pytest.mark.parametrize("claim", [
    pytest.param("missing.yml#no-pin", id="no-such-file"),
    pytest.param("a" * 300 + ".yml#no-pin", id="a-name-too-long"),
])
def test_bump_of_a_claim_in_a_file_no_one_has_is_one_error(claim: str) -> None:
    write("annotations/bump.yml", BUMP)
    result = fix("--bump", claim)
    assert (result.exit_code, result.stdout) == (2, ""), result.output
    assert result.stderr.startswith(f"Error: no claim '{claim}' ")


STYLE_HEAD = "article: blog/style.md\nat: vllm@v1\nclaims:\n"


@pytest.mark.parametrize(("claim", "bumped"), [
    pytest.param("  - text: x\n    id: c\n    refs: [vllm/utils.py::cdiv]\n",
                 "  - text: x\n    id: c\n    at: vllm@v2\n    refs: [vllm/utils.py::cdiv]\n",
                 id="id-not-first"),
    pytest.param("  - at: vllm@v1\n    id: c\n    text: x\n    refs: [vllm/utils.py::cdiv]\n",
                 "  - at: vllm@v2\n    id: c\n    text: x\n    refs: [vllm/utils.py::cdiv]\n",
                 id="at-before-id"),
    pytest.param("  - {id: c, text: x, refs: [vllm/utils.py::cdiv]}\n",
                 "  - {id: c, at: vllm@v2, text: x, refs: [vllm/utils.py::cdiv]}\n",
                 id="flow-without-at"),
    pytest.param("  - {text: x, id: \"c\", at: \"vllm@v1\", refs: [vllm/utils.py::cdiv]}\n",
                 "  - {text: x, id: \"c\", at: \"vllm@v2\", refs: [vllm/utils.py::cdiv]}\n",
                 id="flow-quoted-at"),
    pytest.param("  - {id: c,\n     text: x,\n     refs: [vllm/utils.py::cdiv]}\n",
                 "  - {id: c, at: vllm@v2,\n     text: x,\n     refs: [vllm/utils.py::cdiv]}\n",
                 id="flow-over-lines"),
    pytest.param("  -\n    id: c  # the cdiv claim\n    text: x\n    refs: [vllm/utils.py::cdiv]\n",
                 "  -\n    id: c  # the cdiv claim\n    at: vllm@v2\n    text: x\n"
                 "    refs: [vllm/utils.py::cdiv]\n", id="id-on-its-own-line"),
    pytest.param("- id: c\n  text: x\n  at: ~\n  refs: [vllm/utils.py::cdiv]\n",
                 "- id: c\n  text: x\n  at: vllm@v2\n  refs: [vllm/utils.py::cdiv]\n",
                 id="null-at"),
    pytest.param("  - id: 'c'\n    text: x\n    refs: [vllm/utils.py::cdiv]\n",
                 "  - id: 'c'\n    at: vllm@v2\n    text: x\n    refs: [vllm/utils.py::cdiv]\n",
                 id="quoted-id"),
    pytest.param("  - {id: \"c\", text: x, refs: [vllm/utils.py::cdiv]}\n",
                 "  - {id: \"c\", at: vllm@v2, text: x, refs: [vllm/utils.py::cdiv]}\n",
                 id="flow-double-quoted-id"),
    pytest.param('  - {"id": "c", "text": "x", "refs": ["vllm/utils.py::cdiv"]}\n',
                 '  - {"id": "c", at: vllm@v2, "text": "x", "refs": ["vllm/utils.py::cdiv"]}\n',
                 id="json-style-quoted-keys"),
    pytest.param("  - 'id': c\n    text: x\n    refs: [vllm/utils.py::cdiv]\n",
                 "  - 'id': c\n    at: vllm@v2\n    text: x\n    refs: [vllm/utils.py::cdiv]\n",
                 id="single-quoted-key"),
])
def test_bump_writes_the_pin_in_the_claims_own_style(claim: str, bumped: str) -> None:
    path = write("annotations/style.yml", STYLE_HEAD + claim)
    result = fix("--bump", "c")
    assert result.exit_code == 0, result.output
    assert path.read_text(encoding="utf-8") == STYLE_HEAD + bumped
    assert statuses() == {("c", "vllm/utils.py::cdiv"): "fresh"}


def test_bump_above_a_waived_claim_keeps_the_waiver_it_moves_down() -> None:
    waived = ("  - id: w\n    text: y\n    refs: [vllm/utils.py::get_distributed_init_method]\n"
              "    waive:\n      - {status: changed, until: 2099-01-01, reason: reviewed}\n")
    path = write("annotations/style.yml", STYLE_HEAD + "  - id: c\n    text: x\n"
                 "    refs: [vllm/utils.py::cdiv]\n" + waived)
    result = fix("--bump", "c")
    assert result.exit_code == 0, result.output
    assert path.read_text(encoding="utf-8") == (
        STYLE_HEAD + "  - id: c\n    at: vllm@v2\n    text: x\n    refs: [vllm/utils.py::cdiv]\n"
        + waived)


def test_bump_replaces_an_alias_pin_and_leaves_its_anchor() -> None:
    head = STYLE_HEAD.replace("at: vllm@v1", "at: &pin vllm@v1")
    claim = "  - id: c\n    text: x\n    at: *pin\n    refs: [vllm/utils.py::cdiv]\n"
    path = write("annotations/style.yml", head + claim)
    assert fix("--bump", "c").exit_code == 0
    assert path.read_text(encoding="utf-8") == head + claim.replace("*pin", "vllm@v2")


def refused_bump(name: str, text: str, claim: str) -> str:
    """The stderr of a ``fix --bump CLAIM`` that must refuse: exit 2, nothing on stdout,
    the file ``name`` (written with ``text``) left as it was."""
    path = write(name, text)
    result = fix("--bump", claim)
    assert (result.exit_code, result.stdout) == (2, "")
    assert path.read_text(encoding="utf-8") == text
    return result.stderr


@pytest.mark.parametrize(("ref", "status"), [
    ("[vllm/config/spec.py#L1-L5]", "changed"),
    ("\n      - ref: vllm/config/spec.py#L1-L5\n        quote: '\"ngram\",'", "fresh"),
], ids=["changed", "changed-but-its-quote-stands"])
def test_bump_refuses_changed_lines_that_other_lines_replaced_at_their_numbers(
    ref: str, status: str
) -> None:
    """Moving the pin alone would cite ``A = 1`` and what follows instead of the Literal."""
    text = STYLE_HEAD + f"  - id: c\n    text: x\n    refs: {ref}\n"
    stderr = refused_bump("annotations/style.yml", text, "c")
    assert stderr.startswith(
        f"Error: claim 'c' cannot move to vllm@v2: vllm/config/spec.py#L1-L5 is {status} (")
    assert "(hint: its lines changed and other lines stand at their numbers at the target" in (
        stderr)


@pytest.mark.parametrize("lines", ["L10-L12", "L11-L12"],
                         ids=["a-whole-definition", "lines-inside-a-definition"])
def test_bump_moves_the_pin_of_lines_changed_where_they_stood(lines: str) -> None:
    text = STYLE_HEAD + f"  - id: c\n    text: x\n    refs: [vllm/utils.py#{lines}]\n"
    path = write("annotations/style.yml", text)
    assert fix("--bump", "c").exit_code == 0
    assert path.read_text(encoding="utf-8") == text.replace("id: c\n", "id: c\n    at: vllm@v2\n")


def test_bump_refuses_a_pin_over_several_lines() -> None:
    text = (STYLE_HEAD + "  - id: c\n    text: x\n    at: >-\n      vllm@v1\n"
            "    refs: [vllm/utils.py::cdiv]\n")
    assert refused_bump("annotations/style.yml", text, "c") == (
        "Error: claim 'c' cannot move to vllm@v2: its 'at:' is not written as plain text on "
        "one line (escapes, a block scalar or a line break); nothing was changed (hint: bump "
        "this claim by editing its 'at:' by hand)\n")


def test_bump_of_a_flow_claim_in_front_matter() -> None:
    article = ("---\nat: vllm@v1\nclaims:\n  - {text: x, id: c, refs: [vllm/utils.py::cdiv]}\n"
               "---\n\n# cdiv\n\nid: c is not a claim here\n")
    path = write("articles/flow.md", article)
    assert fix("--bump", "c").exit_code == 0
    assert path.read_text(encoding="utf-8") == article.replace("id: c,", "id: c, at: vllm@v2,", 1)


def test_bump_pins_a_claim_at_its_own_repos_target_when_it_cites_another_repo() -> None:
    Path("annotate.toml").write_text(CONFIG + '[repos.lmcache]\nversions = ["a1"]\n')
    write("src/lm/lmcache/utils.py", "def mla_enabled(config):\n    return config.mla\n")
    assert run("index", "lmcache@a1", "--from", "src/lm").exit_code == 0
    text = ("article: blog/s.md\nat: vllm@v1\nclaims:\n  - id: mixed\n    text: x\n"
            "    refs: [lmcache@a1:lmcache/utils.py::mla_enabled, vllm/utils.py::cdiv]\n")
    path = write("annotations/s.yml", text)
    result = fix("--bump", "mixed")
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    assert path.read_text(encoding="utf-8") == text.replace(
        "  - id: mixed\n", "  - id: mixed\n    at: vllm@v2\n")
    assert set(statuses().values()) == {"fresh"}


def test_a_uses_target_of_another_repo_is_not_sought_in_the_refs_repo() -> None:
    """LMCache's lru_cache did not move to vLLM's cache, however alike their code."""
    Path("annotate.toml").write_text(
        '[repos.vllm]\nversions = ["v0", "v1", "v2", "v3"]\n[repos.lmcache]\nversions = ["a1"]\n')
    body = "(function):\n    memo = {}\n    return wraps(function)(lambda *a: memo.get(a))\n"
    write("src/lm/lmcache/utils.py", "def lru_cache" + body)
    assert run("index", "lmcache@a1", "--from", "src/lm").exit_code == 0
    for rel, text in {**V2, "vllm/caching.py": "def cache" + body}.items():
        write(Path("src/v3", rel), text)
    assert run("index", "vllm@v3", "--from", "src/v3").exit_code == 0
    text = ("article: blog/s.md\nat: vllm@v1\nclaims:\n  - id: c\n    text: x\n"
            "    refs:\n      - ref: vllm/utils.py::get_cpu_memory\n"
            "        uses: [lmcache@a1:lmcache/utils.py::lru_cache]\n")
    write("annotations/s.yml", text)
    result = run("check", "--against", "vllm@v3", "--format", "json", "--exit-zero")
    [result] = json.loads(result.stdout)["results"]
    assert (result["status"], result["message"]) == (
        "relation-missing", "vllm@v3:vllm/utils.py::get_cpu_memory no longer refers to "
        "lmcache@a1:lmcache/utils.py::lru_cache")


@pytest.mark.parametrize("order", [("one", "two"), ("two", "one")], ids=["one-first", "two-first"])
def test_two_bumps_in_one_file_in_either_order(order: tuple[str, str]) -> None:
    text = ("article: blog/s.md\nat: vllm@v1\nclaims:\n  - id: one\n    text: x\n"
            "    refs: [vllm/utils.py::cdiv]\n  - id: two\n    text: y\n"
            "    refs: [vllm@v1:vllm/utils.py::cdiv]\n")
    path = write("annotations/s.yml", text)
    result = fix("--bump", order[0], "--bump", order[1])
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    assert path.read_text(encoding="utf-8") == (
        "article: blog/s.md\nat: vllm@v1\nclaims:\n  - id: one\n    at: vllm@v2\n    text: x\n"
        "    refs: [vllm/utils.py::cdiv]\n  - id: two\n    at: vllm@v2\n    text: y\n"
        "    refs: [vllm@v2:vllm/utils.py::cdiv]\n")


def test_bump_of_a_claim_already_at_the_target_edits_nothing_and_says_why() -> None:
    """Not "0 edits in 0 files" alone, which reads as a bump that failed unsaid."""
    text = BUMP.replace("at: 'vllm@v1'", "at: 'vllm@v2'")
    path = write("annotations/bump.yml", text)
    result = fix("--bump", "own-pin")
    assert (result.exit_code, result.stdout, result.stderr) == (
        0, "0 edits in 0 files\n", "Note: claim 'own-pin' is at vllm@v2 already: nothing to "
        "bump\n")
    assert path.read_text(encoding="utf-8") == text


def test_bump_of_a_claim_at_the_target_whose_ref_has_an_older_pin_rewrites_it_unnoted() -> None:
    """The claim is at the target already, its ref is not: the bump moves the ref, so it is
    no bump with nothing to do."""
    text = ("article: blog/s.md\nat: vllm@v1\nclaims:\n  - id: two\n    at: vllm@v2\n"
            "    text: y\n    refs: [vllm@v1:vllm/utils.py::cdiv]\n")
    path = write("annotations/s.yml", text)
    result = fix("--bump", "two")
    assert (result.exit_code, result.stdout, result.stderr) == (
        0, "1 edit in 1 file: annotations/s.yml\n", "")
    assert path.read_text(encoding="utf-8") == text.replace("[vllm@v1:", "[vllm@v2:")



@pytest.mark.parametrize(("refs", "fixed_refs", "stdout", "stderr"), [
    pytest.param("[vllm/utils.py::cdiv]", "[vllm/utils.py::cdiv]", "0 edits in 0 files\n",
                 "Note: claim 'two' is at vllm@v2 already: nothing to bump\n",
                 id="nothing-to-bump"),
    pytest.param("[vllm@v1:vllm/utils.py::cdiv]", "[vllm@v2:vllm/utils.py::cdiv]",
                 "1 edit in 1 file: annotations/s.yml\n", "", id="a-ref-with-an-older-pin"),
])
def test_bump_of_a_claim_at_the_target_by_its_files_pin_writes_it_no_pin_of_its_own(
    refs: str, fixed_refs: str, stdout: str, stderr: str
) -> None:
    """The file's ``at:`` pins the claim at the target already: an ``at:`` of its own
    saying the same would be a line more that says nothing."""
    text = ("article: blog/s.md\nat: vllm@v2\nclaims:\n  - id: two\n    text: y\n"
            f"    refs: {refs}\n")
    path = write("annotations/s.yml", text)
    result = fix("--bump", "two")
    assert (result.exit_code, result.stdout, result.stderr) == (0, stdout, stderr)
    assert path.read_text(encoding="utf-8") == text.replace(refs, fixed_refs)


NEW_MERGE = "vllm/core/block_utils.py::merge_blocks"  # as bumped: the claim's pin
MERGE = "vllm/block_utils.py::merge_blocks"
ONE_LINE = f"  - {{id: a, text: x, refs: [{MERGE}]}}\n  - {{id: b, text: y, refs: [{MERGE}]}}\n"


@pytest.mark.parametrize(("args", "claims", "fixed"), [
    pytest.param(("--bump", "b"),
                 f"claims: [{{id: a, text: x, refs: [{MERGE}]}}, {{id: b, text: y, refs: "
                 f"[{MERGE}]}}]\n",
                 f"claims: [{{id: a, text: x, refs: [{MERGE}]}}, {{id: b, at: vllm@v2, text: y, "
                 f"refs: [{NEW_MERGE}]}}]\n", id="bump-the-second-claim-on-a-line"),
    pytest.param((), f"claims:\n  - {{id: c, text: \"{ENGINE} 管理缓存\", refs: [{ENGINE}]}}\n",
                 f"claims:\n  - {{id: c, text: \"{ENGINE} 管理缓存\", refs: [{NEW_ENGINE}]}}\n",
                 id="ref-also-in-the-text"),
    pytest.param(("--bump", "c"), "claims:\n  - {id: c, text: x, at: &p 'vllm@v1', refs: "
                 "[vllm/utils.py::cdiv]}\n",
                 "claims:\n  - {id: c, text: x, at: &p 'vllm@v2', refs: "
                 "[vllm/utils.py::cdiv]}\n", id="anchored-pin"),
    pytest.param(("--bump", "c"), "claims:\n  - id: c\n    at: !!str \"vllm@v1\"\n    text: x\n"
                 "    refs: [vllm/utils.py::cdiv]\n",
                 "claims:\n  - id: c\n    at: !!str \"vllm@v2\"\n    text: x\n"
                 "    refs: [vllm/utils.py::cdiv]\n", id="tagged-pin"),
])
def test_fix_edits_the_claims_own_values_where_they_stand(
    args: tuple[str, ...], claims: str, fixed: str
) -> None:
    head = "article: blog/s.md\nat: vllm@v1\n"
    path = write("annotations/s.yml", head + claims)
    result = fix(*args)
    assert result.exit_code == 0 and "Error" not in result.stderr, result.output
    assert path.read_text(encoding="utf-8") == head + fixed
    assert "fresh" in statuses().values()


def test_bump_on_the_first_line_after_a_byte_order_mark() -> None:
    text = "\ufeff{article: blog/s.md, at: vllm@v1, claims: [{id: c, text: x, refs: [%s]}]}\n"
    path = write("annotations/s.yml", text % "vllm@v1:vllm/utils.py::cdiv")
    assert fix("--bump", "c").exit_code == 0
    assert path.read_text(encoding="utf-8") == text.replace("{id: c,", "{id: c, at: vllm@v2,") % (
        "vllm@v2:vllm/utils.py::cdiv")


@pytest.mark.parametrize(("edit", "error"), [
    pytest.param(Span(4, 10, 11, "z"), "the edits to annotations/s.yml would also change claim "
                 "'a'; nothing was changed (hint: edit it by hand)", id="another-claims-text"),
    pytest.param(Span(2, 7, 7, "["), "the edits would leave annotations/s.yml unreadable",
                 id="unreadable"),
])
def test_edits_that_change_more_than_meant_are_refused(edit: Span, error: str) -> None:
    text = ("article: blog/s.md\nat: vllm@v1\nclaims:\n  - id: a\n    text: x\n"
            "    refs: [vllm/utils.py::cdiv]\n")
    write("annotations/s.yml", text)
    plan = FixPlan(Path.cwd())
    plan.file("annotations/s.yml").apply(edit)
    with pytest.raises(FixError) as raised:
        plan.verify()
    assert str(raised.value).startswith(error)


@pytest.mark.parametrize(("claims", "error"), [
    pytest.param('  - id: c\n    text: x\n    refs: ["vllm/block_utils.py::merge\\x5fblocks"]\n',
                 "vllm/block_utils.py::merge_blocks cannot be rewritten (it is not written as "
                 "plain text on one line (escapes, a block scalar or a line break))",
                 id="escaped-ref"),
    pytest.param(f"  - text: x\n    refs: [vllm/utils.py::cdiv]\n    id: >-\n      c\n"
                 f"  - id: d\n    text: y\n    refs: [{MERGE}]\n",
                 "its 'id:' is written in a way fix cannot add an 'at:' after", id="folded-id"),
    pytest.param("  - text: x\n    refs: [vllm/utils.py::cdiv]\n    id: >-\n      c",
                 "its 'id:' is written in a way fix cannot add an 'at:' after",
                 id="folded-id-at-the-end"),
    pytest.param("  - ? id\n    : c\n    text: x\n    refs: [vllm/utils.py::cdiv]\n",
                 "its 'id:' is written in a way fix cannot add an 'at:' after",
                 id="explicit-id-key"),
    pytest.param('  - id: "c\\\n      "\n    text: x\n    refs: [vllm/utils.py::cdiv]\n',
                 "its 'id:' is written in a way fix cannot add an 'at:' after",
                 id="quoted-id-ending-on-the-next-line"),
    pytest.param(f'  - id: c\n    text: x\n    refs: ["\\ {MERGE}"]\n',
                 f" {MERGE} cannot be rewritten (it is not written as plain text on one line "
                 "(escapes, a block scalar or a line break))", id="ref-after-an-escaped-space"),
    pytest.param("  - id: c\n    text: x\n    at: &p vllm@v1\n    refs: [vllm/utils.py::cdiv]\n"
                 "  - id: d\n    text: y\n    at: *p\n    refs: [vllm/utils.py::cdiv]\n",
                 "its 'at:' is an anchor that other values share", id="shared-pin-anchor"),
    pytest.param(f"  - id: c\n    text: x\n    refs: [&m {MERGE}]\n"
                 f"  - id: d\n    text: y\n    refs: [*m]\n",
                 f"{MERGE} cannot be rewritten (it is an alias that other refs share; write it "
                 "out)", id="shared-ref-anchor"),
])
def test_bump_refuses_what_it_cannot_edit_in_place(claims: str, error: str) -> None:
    text = "article: blog/s.md\nat: vllm@v1\nclaims:\n" + claims
    stderr = refused_bump("annotations/s.yml", text, "c")
    assert stderr.startswith("Error: claim 'c' cannot move to vllm@v2: " + error)
    assert stderr.count("\n") == 1


def test_bump_refuses_an_edit_that_would_change_another_claim() -> None:
    """The claims share their refs list through an anchor: moving c's ref moves d's."""
    text = ("article: blog/s.md\nat: vllm@v1\nclaims:\n"
            f"  - id: c\n    text: x\n    refs: &m [{MERGE}]\n"
            "  - id: d\n    text: y\n    refs: *m\n")
    assert refused_bump("annotations/s.yml", text, "c") == (
        f"Error: claim 'c' cannot move to vllm@v2: {MERGE} cannot be rewritten (it is an "
        "alias that other refs share; write it out); nothing was changed (hint: edit it by "
        "hand)\n")


def test_the_files_are_read_again_and_an_edit_that_strays_is_refused(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last safety net: an edit that lands elsewhere than meant (forced here onto claim
    d's text) is caught when the edited file is read again, and nothing is written."""
    text = ("article: blog/s.md\nat: vllm@v1\nclaims:\n"
            f"  - id: c\n    text: x\n    refs: [{ENGINE}]\n"
            "  - id: d\n    text: y\n    refs: [vllm/utils.py::cdiv]\n")
    path = write("annotations/s.yml", text)
    monkeypatch.setattr(ClaimsYaml, "ref_edits", lambda *args: [Span(7, 10, 11, "z")])
    result = fix()
    assert (result.exit_code, result.stderr) == (2, (  # c's ref is not as meant, d's text
        "Error: the edits to annotations/s.yml would also change claim 'c'; nothing was "
        "changed (hint: edit it by hand)\n"))
    assert path.read_text() == text


def test_bump_inserts_a_pin_with_the_files_line_ending() -> None:
    text = "article: blog/s.md\r\nat: vllm@v1\r\nclaims:\r\n  - text: x\r\n" \
           "    refs: [vllm/utils.py::cdiv]\r\n    id: c"
    path = write("annotations/s.yml", text.encode("utf-8"))
    assert fix("--bump", "c").exit_code == 0
    assert path.read_bytes() == (text + "\r\n    at: vllm@v2\r\n").encode("utf-8")


def test_a_file_that_cannot_be_written_leaves_every_file_as_it_was() -> None:
    text = (f"article: blog/s.md\nat: vllm@v1\nclaims:\n  - id: c\n    text: x\n"
            f"    refs: [{ENGINE}]\n")
    first = write("annotations/a.yml", text)
    second = write("annotations/b.yml", text.replace("blog/s.md", "blog/t.md"))
    Path("annotations/b.yml.annotate-fix").mkdir()
    result = fix()
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "Error: cannot write annotations/b.yml's new text to b.yml.annotate-fix (Is a "
        "directory); nothing was changed\n")
    assert first.read_text(encoding="utf-8") == text
    assert second.read_text(encoding="utf-8") == text.replace("blog/s.md", "blog/t.md")
    assert sorted(path.name for path in Path("annotations").iterdir()) == [
        "a.yml", "b.yml", "b.yml.annotate-fix"]


def test_a_file_edited_while_fix_runs_keeps_the_edit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The author saves the file in an editor after fix has read it: fix's text, made from
    what it read, would replace the new one whole."""
    text = (f"article: blog/s.md\nat: vllm@v1\nclaims:\n  - id: c\n    text: x\n"
            f"    refs: [{ENGINE}]\n")
    path = write("annotations/a.yml", text)
    saved = text.replace("text: x", "text: x, as the author wrote it meanwhile")
    stage = fix_module._write_staged
    monkeypatch.setattr(fix_module, "_write_staged", lambda *args: (
        path.write_text(saved, encoding="utf-8"), stage(*args)))
    result = fix()
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == ("Error: annotations/a.yml changed while fix ran; nothing was "
                             "changed (hint: run 'annotate fix' again)\n")
    assert path.read_text(encoding="utf-8") == saved
    assert sorted(p.name for p in path.parent.iterdir()) == ["a.yml"]


def test_a_symlinked_annotation_file_is_read_and_edited_where_it_lives() -> None:
    text = (f"article: blog/s.md\nat: vllm@v1\nclaims:\n  - id: c\n    text: x\n"
            f"    refs: [{ENGINE}]\n")
    target = write("shared/s.yml", text)
    link = Path("annotations/s.yml")
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(target.resolve())
    result = fix()
    assert (result.exit_code, result.stdout) == (0, "1 edit in 1 file: annotations/s.yml\n")
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert target.read_text(encoding="utf-8") == text.replace(ENGINE, NEW_ENGINE)


def test_one_annotation_file_under_two_names_is_read_once() -> None:
    text = (f"article: blog/s.md\nat: vllm@v1\nclaims:\n  - id: c\n    text: x\n"
            f"    refs: [{ENGINE}]\n")
    write("annotations/a.yml", text)
    Path("annotations/b.yml").symlink_to("a.yml")
    result = fix()
    assert (result.exit_code, result.stdout) == (0, "1 edit in 1 file: annotations/a.yml\n")


@pytest.mark.parametrize("config", [
    pytest.param(CONFIG, id="configured"),
    pytest.param('[repos.vllm]\nversions = ["v2"]\n', id="older-not-configured"),
])
def test_fix_against_an_older_version_moves_nothing_back(config: str) -> None:
    """``--against`` an older version asks how a claim held then; its refs stay. Older by
    version number: v1 is older than v2 whether the config lists it or not."""
    write("annotate.toml", config)
    text = (f"article: blog/s.md\nat: vllm@v2\nclaims:\n  - id: c\n    text: x\n"
            f"    refs: [{NEW_ENGINE.removeprefix('vllm@v2:')}]\n")
    path = write("annotations/s.yml", text)
    result = fix("--against", "vllm@v1")
    assert (result.exit_code, result.stdout) == (0, "0 edits in 0 files\n")
    assert result.stderr == (
        f"Note: annotations/s.yml:6: left {NEW_ENGINE.removeprefix('vllm@v2:')} as it is: "
        "vllm@v1 is older than its pin vllm@v2, and fix moves refs forward only\n")
    assert path.read_text(encoding="utf-8") == text
    bumped = fix("--against", "vllm@v1", "--bump", "c")
    assert (bumped.exit_code, bumped.stderr) == (
        2, "Error: claim 'c' cannot move back to vllm@v1 from vllm@v2; nothing was changed "
           "(hint: fix moves claims forward only)\n")


def test_a_read_only_file_is_refused_and_no_file_is_edited() -> None:
    """A file made read-only is not replaced (renaming a new file over it would change it
    all the same, split off its hard links): as root too, who may write any file."""
    text = (f"article: blog/s.md\nat: vllm@v1\nclaims:\n  - id: c\n    text: x\n"
            f"    refs: [{ENGINE}]\n")
    first = write("annotations/a.yml", text)
    second = write("annotations/b.yml", text.replace("blog/s.md", "blog/t.md"))
    second.chmod(0o444)
    linked = Path("kept/b.yml")
    linked.parent.mkdir()
    os.link(second, linked)
    result = fix()
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "Error: annotations/b.yml is read-only; nothing was changed (hint: make it writable, "
        "or leave it out of the config's 'annotations' globs)\n")
    assert first.read_text(encoding="utf-8") == text
    assert second.read_text(encoding="utf-8") == text.replace("blog/s.md", "blog/t.md")
    assert os.path.samefile(second, linked)
    assert second.stat().st_mode & 0o777 == 0o444
    assert sorted(path.name for path in Path("annotations").iterdir()) == ["a.yml", "b.yml"]

    dry = fix("--dry-run")
    assert dry.exit_code == 0
    assert dry.stderr == ("Note: annotations/b.yml is read-only: fix without --dry-run edits "
                          "no file while it is\nNote: --dry-run wrote nothing: fix would make "
                          "2 edits in 2 files: annotations/a.yml, annotations/b.yml\n")
    assert "+++ b/annotations/a.yml\n" in dry.stdout
    assert "+++ b/annotations/b.yml\n" in dry.stdout

    second.chmod(0o644)
    assert fix().stdout == "2 edits in 2 files: annotations/a.yml, annotations/b.yml\n"


def test_read_only_files_are_named_together_with_the_globs_that_leave_them_out() -> None:
    text = (f"article: blog/s.md\nat: vllm@v1\nclaims:\n  - id: c\n    text: x\n"
            f"    refs: [{ENGINE}]\n")
    files = [write("annotations/a.yml", text), write("articles/engine.md", ARTICLE)]
    for path in files:
        path.chmod(0o400)
    result = fix()
    assert (result.exit_code, result.stdout) == (2, "")
    notes, error = result.stderr.splitlines()  # an ambiguous move's note, in the article
    assert notes.startswith("Note: articles/engine.md:14: left ")
    assert error == (
        "Error: annotations/a.yml, articles/engine.md are read-only; nothing was changed "
        "(hint: make them writable, or leave them out of the config's 'annotations' and "
        "'articles' globs)")
    assert [path.read_text(encoding="utf-8") for path in files] == [text, ARTICLE]


def test_a_read_only_file_that_fix_reads_but_leaves_as_it_is_stops_nothing() -> None:
    text = "article: blog/s.md\nat: vllm@v1\nclaims:\n  - id: a\n    text: x\n    refs: [f]\n"
    first = write("annotations/a.yml", text)
    write("annotations/b.yml", text.replace("blog/s.md", "blog/t.md")).chmod(0o444)
    plan = FixPlan(Path.cwd())
    plan.file("annotations/b.yml")  # read for its claims, and not edited
    plan.file("annotations/a.yml").apply(Span(4, 10, 11, "y"))
    assert plan.read_only() == []
    assert plan.write() == ["annotations/a.yml"]
    assert first.read_text(encoding="utf-8") == text.replace("text: x", "text: y")


@pytest.mark.parametrize(("mode", "writable", "read_only"), [
    pytest.param(0o644, True, False, id="writable"),
    pytest.param(0o444, True, True, id="no-write-bit-as-root"),
    pytest.param(0o464, True, False, id="a-group-write-bit-as-root"),
    pytest.param(0o644, False, True, id="a-write-bit-this-user-may-not-use"),
    pytest.param(None, True, False, id="gone-since-it-was-read"),
])
def test_what_is_read_only(
    monkeypatch: pytest.MonkeyPatch, mode: int | None, writable: bool, read_only: bool
) -> None:
    """The mode says it for root (whom ``os.access`` lets write any file), ``os.access``
    for anyone else; a file gone since it was read is not refused (writing it says why)."""
    path = Path("annotations/a.yml")
    if mode is not None:
        write(path, "x").chmod(mode)
    monkeypatch.setattr(fix_module.os, "access", lambda *_: writable)
    assert fix_module._read_only(path) is read_only


def _attribute(path: Path, flag: str, on: bool) -> bool:
    """Whether ``chattr`` could set (or clear) ``flag`` on ``path``: root on a file system
    with attributes."""
    done = subprocess.run(["chattr", ("+" if on else "-") + flag, str(path)],
                          capture_output=True, check=False)
    return done.returncode == 0


def _fix_with_the_second_file(flag: str) -> tuple[Result, str, Path, Path]:
    """``fix`` of two annotation files to rewrite, the second with ``chattr +flag``: the
    result, the first file's text, and the two files."""
    text = (f"article: blog/s.md\nat: vllm@v1\nclaims:\n  - id: c\n    text: x\n"
            f"    refs: [{ENGINE}]\n")
    first = write("annotations/a.yml", text)
    second = write("annotations/b.yml", text.replace("blog/s.md", "blog/t.md"))
    if not _attribute(second, flag, on=True):
        pytest.skip(f"chattr +{flag} needs root and a file system with attributes")
    try:
        return fix(), text, first, second
    finally:
        _attribute(second, flag, on=False)


def test_a_file_that_cannot_be_replaced_puts_back_those_already_replaced() -> None:
    """An append-only file (``chattr +a``) is writable, so not refused up front as a
    read-only one is, but cannot be renamed over: a.yml is replaced first, then put back."""
    result, text, first, second = _fix_with_the_second_file("a")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == ("Error: cannot replace b.yml (Operation not permitted); nothing "
                             "was changed (hint: make it writable)\n")
    assert first.read_text(encoding="utf-8") == text
    assert second.read_text(encoding="utf-8") == text.replace("blog/s.md", "blog/t.md")
    assert sorted(path.name for path in Path("annotations").iterdir()) == ["a.yml", "b.yml"]


def test_an_immutable_file_is_refused_as_a_read_only_one() -> None:
    result, text, first, _ = _fix_with_the_second_file("i")
    assert (result.exit_code, result.stderr) == (
        2, "Error: annotations/b.yml is read-only; nothing was changed (hint: make it "
           "writable, or leave it out of the config's 'annotations' globs)\n")
    assert first.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("when", ["staging", "replacing"])
def test_an_interrupted_fix_leaves_every_file_as_it_was(
    monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """Ctrl-C (or SIGTERM, which the CLI raises the same way) at the second file: the
    interrupt is raised where it would land, in the second write or the second replace."""
    text = (f"article: blog/s.md\nat: vllm@v1\nclaims:\n  - id: c\n    text: x\n"
            f"    refs: [{ENGINE}]\n")
    files = [write(f"annotations/{name}.yml", text.replace("blog/s.md", f"blog/{name}.md"))
             for name in ("a", "b", "c")]
    before = [path.read_bytes() for path in files]
    calls = []
    real = os.replace if when == "replacing" else Path.write_bytes

    def interrupted(*args: object) -> object:
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args)

    if when == "replacing":
        monkeypatch.setattr("annotations.fix.os.replace", interrupted)
    else:
        monkeypatch.setattr(Path, "write_bytes", interrupted)
    result = fix()
    assert result.exit_code == 130
    assert [path.read_bytes() for path in files] == before
    assert sorted(path.name for path in Path("annotations").iterdir()) == [
        "a.yml", "b.yml", "c.yml"]


def test_a_claim_named_like_a_permalinks_is_bumped() -> None:
    article = f"---\nat: vllm@v1\nclaims:\n  - id: link-intro\n    text: x\n" \
              f"    refs: [{UTILS_URL}]\n---\n\n# utils\n"
    path = write("articles/intro.md", article)
    result = fix("--bump", "link-intro", "--bump", "articles/intro.md#link-intro")
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    bumped = path.read_text(encoding="utf-8")
    assert "    at: vllm@v2\n" in bumped and f"{GH}/v2/vllm/utils.py#L" in bumped


MERGE_REF = "vllm/block_utils.py::merge_blocks"
MOVED_AND_CHANGED = f"""\
article: blog/merge.md
at: vllm@v1
claims:
  - id: merge
    text: "合并相邻空闲块"
    refs: [{MERGE_REF}, vllm@v1:vllm/utils.py::cdiv]
"""


def test_a_ref_that_moved_and_changed_is_left_with_a_note() -> None:
    path = write("annotations/merge.yml", MOVED_AND_CHANGED)
    result = fix()
    assert (result.exit_code, result.stdout) == (0, "0 edits in 0 files\n")
    assert result.stderr == (
        f"Note: annotations/merge.yml:6: left {MERGE_REF} as it is: it moved to "
        "vllm@v2:vllm/core/block_utils.py::merge_blocks and changed (body); re-read claim "
        "'merge', then 'annotate fix --bump blog/merge.md#merge' moves it\n"
    )
    assert path.read_text(encoding="utf-8") == MOVED_AND_CHANGED
    assert statuses()[("merge", MERGE_REF)] == "moved"


@pytest.mark.parametrize(("ref", "advice"), [
    pytest.param("vllm/utils.py::is_neuron", "; vllm/utils.py::is_neuron is removed: edit or "
                 "drop that ref first, then 'annotate fix --bump blog/merge.md#merge' moves it",
                 id="removed"),
    pytest.param("vllm/utils.py::nope", "; vllm/utils.py::nope is broken: mend that ref "
                 "first, then 'annotate fix --bump blog/merge.md#merge' moves it", id="broken"),
    pytest.param("{ref: vllm/utils.py::cdiv, quote: 'return -(a // -b)'}",
                 "; as vllm/utils.py::cdiv is quote-missing, re-read the claim at the target, "
                 "then edit its quote and its 'at:' together by hand", id="quote-missing"),
    pytest.param("vllm/utils.py::is_neuron, vllm/utils.py::nope", "; vllm/utils.py::is_neuron "
                 "is removed: edit or drop that ref first; vllm/utils.py::nope is broken: mend "
                 "that ref first, then 'annotate fix --bump blog/merge.md#merge' moves it",
                 id="removed-and-broken"),
    pytest.param("vllm/utils.py::is_neuron, {ref: vllm/utils.py::cdiv, quote: 'return -(a // "
                 "-b)'}", "; as vllm/utils.py::cdiv is quote-missing, re-read the claim at the "
                 "target, then edit its quote and its 'at:' together by hand",
                 id="removed-then-quote-missing"),
])
def test_a_moved_and_changed_refs_note_says_what_keeps_its_claim_from_a_bump(
    ref: str, advice: str
) -> None:
    """The note does not send the author to a ``--bump`` that would refuse."""
    write("annotations/merge.yml", MOVED_AND_CHANGED.replace("vllm@v1:vllm/utils.py::cdiv", ref))
    result = fix()
    assert result.exit_code == 0, result.output
    assert (
        f"Note: annotations/merge.yml:6: left {MERGE_REF} as it is: it moved to "
        "vllm@v2:vllm/core/block_utils.py::merge_blocks and changed (body); re-read claim "
        f"'merge'{advice}\n"
    ) in result.stderr


ENGINE_USES = "vllm/worker/cache_engine.py::CacheEngine._allocate_kv_cache"


# A claim's refs as written, then as a bump to v2 writes them: as its author would at v2,
# each naming what check found at v2 (a ref written without a pin takes the claim's).
@pytest.mark.parametrize(("refs", "bumped"), [
    pytest.param(f"[{MERGE_REF}, vllm@v1:vllm/utils.py::cdiv]",
                 "[vllm/core/block_utils.py::merge_blocks, vllm@v2:vllm/utils.py::cdiv]",
                 id="moved-without-a-pin-stays-without"),
    pytest.param(f"[vllm@v1:{MERGE_REF}]", "[vllm@v2:vllm/core/block_utils.py::merge_blocks]",
                 id="moved-with-its-own-pin-keeps-one"),
    pytest.param("[vllm.block_utils.merge_blocks]", "[vllm/core/block_utils.py::merge_blocks]",
                 id="dotted-name-without-a-pin"),
    pytest.param(f"\n      - ref: {ENGINE}\n        uses: [{ENGINE_USES}]",
                 "\n      - ref: vllm/v1/worker/cache_engine.py::CacheEngine\n"
                 f"        uses: [vllm@v1:{ENGINE_USES}]", id="its-uses-keep-their-pin"),
    # greedy stays as it was; top_k, which it calls, moved: written unpinned, the target
    # would take the claim's new pin, where no vllm/sampling.py is
    pytest.param("\n      - ref: vllm/sampler.py::greedy\n        uses: [vllm/sampling.py::top_k]",
                 "\n      - ref: vllm/sampler.py::greedy\n"
                 "        uses: [vllm@v1:vllm/sampling.py::top_k]",
                 id="an-unmoved-refs-uses-keep-their-pin"),
])
def test_bump_moves_the_claims_refs_with_its_pin(refs: str, bumped: str) -> None:
    text = MOVED_AND_CHANGED.replace(f"[{MERGE_REF}, vllm@v1:vllm/utils.py::cdiv]", refs)
    path = write("annotations/merge.yml", text)
    result = fix("--bump", "merge")
    assert (result.exit_code, result.stderr) == (0, "")
    assert path.read_text(encoding="utf-8") == text.replace(
        "  - id: merge\n", "  - id: merge\n    at: vllm@v2\n").replace(refs, bumped)
    assert set(statuses().values()) == {"fresh"}


def test_bump_moves_a_permalink_ref_to_the_target() -> None:
    text = MOVED_AND_CHANGED.replace("vllm@v1:vllm/utils.py::cdiv", UTILS_URL)
    path = write("annotations/merge.yml", text)
    assert statuses()[("merge", UTILS_URL)] == "changed"
    result = fix("--bump", "merge")
    assert (result.exit_code, result.stderr) == (0, "")
    bumped = path.read_text(encoding="utf-8")
    assert UTILS_URL not in bumped and f"{GH}/v2/vllm/utils.py#L" in bumped
    assert set(statuses().values()) == {"fresh"}


@pytest.mark.parametrize(("ref", "status", "hint"), [
    pytest.param("vllm/utils.py::is_neuron", "removed", "edit or drop that ref first",
                 id="removed"),
    pytest.param(SPLIT, "moved", "choose one of its candidates and write it first",
                 id="ambiguous-move"),
    pytest.param("{ref: vllm/utils.py::cdiv, quote: 'return -(a // -b)'}", "quote-missing",
                 "re-read the claim at the target, then edit its quote and its 'at:' together "
                 "by hand", id="quote-missing"),
    pytest.param("vllm/utils.py::nope", "broken", "mend that ref first", id="broken"),
    pytest.param("vllm@v0:vllm/utils.py::cdiv", "unindexed", "index that version first",
                 id="unindexed"),
])
def test_bump_refuses_a_claim_that_would_not_hold_at_the_target(
    ref: str, status: str, hint: str
) -> None:
    text = MOVED_AND_CHANGED.replace("vllm@v1:vllm/utils.py::cdiv", ref)
    stderr = refused_bump("annotations/merge.yml", text, "merge")
    written = ref.removeprefix("{ref: ").partition(",")[0]
    assert stderr.startswith(
        f"Error: claim 'merge' cannot move to vllm@v2: {written} is {status} (")
    assert stderr.endswith(f" (hint: {hint})\n")


def test_bump_of_a_claim_pinned_at_a_version_not_yet_indexed_names_it() -> None:
    """Every ref of the claim is unindexed, so none was compared with the target: the
    target is still the configured one, and the refusal says what to index."""
    text = "article: blog/later.md\nat: vllm@v0\nclaims:\n  - id: later\n    text: x\n" \
           "    refs: [vllm/utils.py::cdiv]\n"
    assert refused_bump("annotations/later.yml", text, "later") == (
        "Error: claim 'later' cannot move to vllm@v2: vllm/utils.py::cdiv is unindexed "
        "(vllm@v0 is not indexed (run 'annotate index vllm@v0')) "
        "(hint: index that version first)\n")


def test_bump_of_a_front_matter_claim() -> None:
    path = write("articles/engine.md", ARTICLE)
    result = fix("--bump", "front", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "+    at: vllm@v2\n" in result.stdout
    assert path.read_text(encoding="utf-8") == ARTICLE
    assert fix("--bump", "front").exit_code == 0
    assert "  - id: front\n    at: vllm@v2\n    text:" in path.read_text(encoding="utf-8")


@pytest.mark.parametrize(("args", "error"), [
    pytest.param(("--bump", "nope"),
                 "Error: no claim 'nope' (hint: write ARTICLE#ID, FILE#ID or the claim's id)",
                 id="unknown-claim"),
    pytest.param(("--bump", "blog/other.md#no-pin"),
                 "Error: no claim 'blog/other.md#no-pin' (hint: it is in blog/bump.md: write "
                 "blog/bump.md#no-pin)", id="another-article"),
    pytest.param(("--bump", "blog/other.md#nope"),
                 "Error: no claim 'blog/other.md#nope' (hint: write ARTICLE#ID, FILE#ID or the "
                 "claim's id)", id="unknown-article"),
    pytest.param(("--bump", "no-pn"),
                 "Error: no claim 'no-pn' (hint: did you mean 'no-pin'?)", id="misspelt-claim"),
    pytest.param(("--bump", "blog/a.md#moves"),
                 "Error: no claim 'blog/a.md#moves' (hint: did you mean 'blog/a.md#moved'?)",
                 id="misspelt-claim-of-an-article"),
    pytest.param(("--bump", "shared"),
                 "Error: claim id 'shared' is in several articles: blog/a.md, blog/bump.md "
                 "(hint: write ARTICLE#shared)", id="ambiguous-claim-id"),
    pytest.param(("--bump", link_claim_id("articles/engine.md", UTILS_URL)),
                 f"Error: claim '{link_claim_id('articles/engine.md', UTILS_URL)}' comes from a "
                 "Markdown permalink (hint: bump it by editing the permalink's version)",
                 id="permalink-claim"),
    pytest.param(("--against", "vllm"),
                 "Error: Invalid value for '--against': 'vllm' is not REPO@VERSION (for example "
                 "vllm@v0.20.0) (see 'annotate fix --help')",
                 id="bad-against"),
    pytest.param(("--against", "vllm@v9"),
                 "Error: Invalid value for '--against': vllm@v9 is neither indexed nor configured "
                 "(vllm has v0, v1, v2); fix the version, or run 'annotate index vllm@v9' to "
                 "index it (see 'annotate fix --help')", id="against-not-indexed"),
])
def test_fix_errors_are_one_line_and_change_nothing(args: tuple[str, ...], error: str) -> None:
    shared = "  - id: shared\n    text: s\n    refs: [vllm/utils.py::cdiv]\n"
    files = {
        "annotations/bump.yml": BUMP + shared,
        "annotations/a.yml": f"article: blog/a.md\nat: vllm@v1\nclaims:\n{shared}"
                             f"  - id: moved\n    text: m\n    refs: [{ENGINE}]\n",
        "articles/engine.md": ARTICLE,
    }
    for rel, text in files.items():
        write(rel, text)
    result = fix(*args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == error + "\n"
    for rel, text in files.items():
        assert Path(rel).read_text(encoding="utf-8") == text


@pytest.mark.parametrize("wanted", [
    pytest.param("blog/b.md#shared", id="article"),
    pytest.param("annotations/b.yml#shared", id="file-check-reports"),
    pytest.param("./annotations/b.yml#shared", id="file-with-dot-slash"),
    pytest.param("{cwd}/annotations/b.yml#shared", id="absolute-file"),
    pytest.param("../{folder}/annotations/b.yml#shared", id="file-from-another-folder"),
])
def test_bump_with_the_article_resolves_an_ambiguous_id(wanted: str) -> None:
    shared = "  - id: shared\n    text: s\n    refs: [vllm/utils.py::cdiv]\n"
    a = write("annotations/a.yml", f"article: blog/a.md\nat: vllm@v1\nclaims:\n{shared}")
    b = write("annotations/b.yml", f"article: blog/b.md\nat: vllm@v1\nclaims:\n{shared}")
    assert fix("--bump", wanted.format(cwd=Path.cwd(), folder=Path.cwd().name)).exit_code == 0
    assert a.read_text(encoding="utf-8").count("at: vllm@v2") == 0
    assert b.read_text(encoding="utf-8").count("    at: vllm@v2\n") == 1


def test_fix_refuses_to_edit_when_an_annotation_file_is_invalid() -> None:
    good = write("annotations/engine.yml", ANNOTATION)
    bad = write("annotations/bad.yml", "claims: [\n")
    result = fix()
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0].startswith("Error: annotations/bad.yml:2: invalid YAML")
    assert good.read_text(encoding="utf-8") == ANNOTATION
    assert bad.read_text(encoding="utf-8") == "claims: [\n"


def test_a_moved_ref_writes_out_the_pin_its_unpinned_uses_target_took_from_it() -> None:
    """An unpinned `uses:` target takes its ref's pin: rewritten at the target, the ref
    would carry it along (and verify refused the whole fix); its pin is written out."""
    use = "vllm/worker/cache_engine.py::CacheEngine._allocate_kv_cache"
    claims = (f"article: blog/engine.md\nat: vllm@v1\nclaims:\n  - id: engine\n    text: 引擎\n"
              f"    refs:\n      - ref: {ENGINE}\n        uses: [{use}]\n")
    path = write("annotations/engine.yml", claims)
    result = fix()
    assert (result.exit_code, result.stdout) == (0, "2 edits in 1 file: annotations/engine.yml\n")
    assert path.read_text() == claims.replace(f"ref: {ENGINE}", f"ref: {NEW_ENGINE}").replace(
        f"[{use}]", f"[vllm@v1:{use}]")
    assert statuses() == {("engine", NEW_ENGINE): "fresh"}


def test_a_pinned_uses_target_is_left_as_written_when_its_ref_moves() -> None:
    """Only an unpinned target takes its ref's pin: one with its own keeps its text, even
    written as no canonical ref is (with a space before it)."""
    use = "vllm/worker/cache_engine.py::CacheEngine._allocate_kv_cache"
    claims = (f"article: blog/engine.md\nat: vllm@v1\nclaims:\n  - id: engine\n    text: 引擎\n"
              f"    refs:\n      - ref: {ENGINE}\n        uses: [' vllm@v1:{use}']\n")
    path = write("annotations/engine.yml", claims)
    result = fix()
    assert (result.exit_code, result.stdout) == (0, "1 edit in 1 file: annotations/engine.yml\n")
    assert path.read_text() == claims.replace(f"ref: {ENGINE}", f"ref: {NEW_ENGINE}")
    assert statuses() == {("engine", NEW_ENGINE): "fresh"}


def test_a_uses_list_shared_through_an_anchor_leaves_only_its_ref() -> None:
    """Writing the pin into an anchor would change the other claim: that ref is left, with
    a note, and the rest of the file is fixed."""
    use = "vllm/worker/cache_engine.py::CacheEngine._allocate_kv_cache"
    claims = (f"article: blog/engine.md\nat: vllm@v1\nclaims:\n  - id: engine\n    text: a\n"
              f"    refs:\n      - ref: {ENGINE}\n        uses: &u [{use}]\n"
              f"  - id: again\n    text: b\n    refs:\n      - ref: {ENGINE}\n        uses: *u\n"
              f"  - id: graph\n    text: c\n    refs: [{GRAPH}]\n")
    path = write("annotations/engine.yml", claims)
    result = fix()
    assert (result.exit_code, result.stdout) == (0, "1 edit in 1 file: annotations/engine.yml\n")
    assert path.read_text() == claims.replace(f"[{GRAPH}]", f"[{NEW_GRAPH}]")
    assert result.stderr.count("its uses: target is an alias that other refs share") == 2


@pytest.mark.parametrize(("text", "composed", "claim_line"), [
    ("---\nat: vllm@v1\nclaims:\n  - id: c\n    text: x\n    refs: [a.py::f]\n---\n\n# T\n",
     ["\nat: vllm@v1\nclaims:\n  - id: c\n    text: x\n    refs: [a.py::f]"], 4),
    ("article: a.md\nclaims:\n  - id: c\n    text: x\n    refs: [a.py::f]\n",
     ["article: a.md\nclaims:\n  - id: c\n    text: x\n    refs: [a.py::f]\n"], 3),
    ("---\narticle: a.md\nclaims:\n  - id: c\n    text: x\n    refs: [a.py::f]\n...\n",
     ["\narticle: a.md\nclaims:\n  - id: c\n    text: x\n    refs: [a.py::f]"], 4),
    ("---\ntitle: t\n---\n\n# T\n\nclaims: none\n", ["\ntitle: t"], None),
], ids=["markdown-front-matter", "yaml", "yaml-document-markers", "front-matter-without-claims"])
def test_claims_yaml_composes_a_markdown_articles_front_matter_only(
        monkeypatch: pytest.MonkeyPatch, text: str, composed: list[str],
        claim_line: int | None) -> None:
    """Composing a Markdown article whole failed twice (libyaml, then PyYAML's slow parser
    for its message) before its front matter was read: a third of a big collection's fix."""
    from annotations import yaml_edit

    seen: list[str] = []
    compose = yaml_edit.compose_yaml
    monkeypatch.setattr(yaml_edit, "compose_yaml", lambda source: seen.append(source) or
                        compose(source))
    node = ClaimsYaml.of(text.splitlines(keepends=True)).claim("c")
    assert seen == composed
    assert (node.start_mark.line + 1 if node is not None else None) == claim_line  # the file's


def test_fix_gathers_the_rewritten_permalinks_once_not_once_per_body_link(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Verifying each body permalink's claim went through every rewrite of every file
    again: quadratic in a collection's size (2,000 body links x 2,000 rewrites)."""
    calls = []
    rewritten_urls = FixPlan.rewritten_urls

    def counted(*args: object) -> object:
        calls.append(args)
        return rewritten_urls(*args)

    monkeypatch.setattr(FixPlan, "rewritten_urls", counted)
    text = f"# T\n\nold: {ENGINE_URL}\n\n" + "".join(
        f"round up {n}: {UTILS_URL}\n\n" for n in range(5))
    path = write("articles/many.md", text)
    assert fix().stdout == "1 edit in 1 file: articles/many.md\n"
    assert path.read_text(encoding="utf-8") == text.replace(ENGINE_URL, NEW_ENGINE_URL)
    assert len(calls) == 1


@pytest.mark.parametrize(("name", "text"), [
    pytest.param("annotations/engine.yml", ANNOTATION, id="annotation-file"),
    pytest.param("articles/engine.md", ARTICLE, id="markdown-front-matter"),
])
def test_fix_composes_each_file_it_edits_once_and_its_edit_once(
    monkeypatch: pytest.MonkeyPatch, name: str, text: str
) -> None:
    """Its claims were read from a second composition of the YAML that fix composed to
    edit it: two of the three parses of each file a fix edits."""
    from annotations import loader

    path = write(name, text)
    assert run("link").exit_code == 0
    composed: list[str] = []
    compose = loader._compose_single
    monkeypatch.setattr(loader, "_compose_single", lambda source: composed.append(source) or
                        compose(source))
    result = fix()
    assert result.exit_code == 0, result.output
    assert path.read_text(encoding="utf-8") != text
    assert len(composed) == len(set(composed)) == 2

