"""``annotate history``: one symbol's timeline across the indexed versions of the fake vLLM."""

from __future__ import annotations

import json
from pathlib import Path

import fakevllm
import pytest
from click.testing import CliRunner, Result

from annotate_cli import cli
from annotations.diffs.timeline import Timeline, TimelineRow, table_rows
from db import queries
from db.database import open_database
from indexer.config import load_config
from indexer.pipeline import index_version

# v0.3.0 is indexed first and not configured: the order is still v0.1.0, v0.2.0, v0.3.0
# (by version number).
CONFIG = """\
[repos.vllm]
versions = ["v0.1.0", "v0.2.0"]
"""
INDEX_ORDER = ("v0.3.0", "v0.1.0", "v0.2.0")
GH = "https://github.com/vllm-project/vllm/blob"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("history-project")
    (root / "annotate.toml").write_text(CONFIG, encoding="utf-8")
    config = load_config(root)
    with open_database(config.db) as database:
        for tag in INDEX_ORDER:
            source = root / "src" / tag
            fakevllm.write_snapshot(source, fakevllm.VERSIONS[tag])
            index_version(database, config, "vllm", tag, from_path=source, workers=1)
    return root


def run(project: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--config", str(project / "annotate.toml"), *args])


def timeline(project: Path, ref: str) -> dict:
    result = run(project, "history", ref, "--format", "json")
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    return json.loads(result.stdout)


def events(data: dict) -> list[tuple[str, str, str | None]]:
    return [(step["version"], step["event"], step["ref"]) for step in data["steps"]]


def fails(project: Path, *args: str) -> str:
    result = run(project, *args)
    assert (result.exit_code, result.stdout) == (2, ""), result.output
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    return result.stderr


def test_moved(project: Path) -> None:
    new = "vllm/v1/worker/cache_engine.py::CacheEngine"
    old = "vllm/worker/cache_engine.py::CacheEngine"
    data = timeline(project, f"vllm@v0.3.0:{new}")
    assert events(data) == [
        ("v0.1.0", "introduced", old), ("v0.2.0", "unchanged", old), ("v0.3.0", "moved", new),
    ]
    moved = data["steps"][-1]
    assert (moved["moved_from"], moved["content"], moved["kinds"]) == (old, "unchanged", [])


@pytest.mark.parametrize("definition", ["@property", "@log_stats.setter"])
def test_a_permalink_to_one_of_two_definitions_follows_that_one(
    project: Path, definition: str
) -> None:
    """A property's getter and setter share a qualname: the one the permalink covers is
    the one followed, as check compares it."""
    path = "vllm/engine/llm_engine.py"
    source = fakevllm.content_bytes(fakevllm.VERSIONS["v0.1.0"][path]).decode()
    start = source.splitlines().index(f"    {definition}") + 1
    data = timeline(project, f"{GH}/v0.1.0/{path}#L{start + 1}-L{start + 2}")
    assert data["steps"][0]["start_line"] == start


def test_renamed(project: Path) -> None:
    old = "vllm/compilation/cuda_graph.py::capture_graph"
    new = "vllm/compilation/cuda_graph.py::capture_cudagraph"
    data = timeline(project, f"vllm@v0.1.0:{old}")
    assert events(data) == [
        ("v0.1.0", "introduced", old), ("v0.2.0", "moved", new), ("v0.3.0", "unchanged", new),
    ]
    assert data["steps"][1]["moved_from"] == old


def test_moved_and_changed(project: Path) -> None:
    data = timeline(project, "vllm@v0.2.0:vllm/core/scheduler.py::Scheduler")
    assert [step["event"] for step in data["steps"]] == ["introduced", "unchanged", "moved"]
    moved = data["steps"][-1]
    assert moved["ref"] == "vllm/v1/core/sched/scheduler.py::Scheduler"
    assert (moved["content"], moved["kinds"]) == ("changed", ["members", "body"])
    assert moved["changes"] == ["members changed: changed __init__", "body changed"]


@pytest.mark.parametrize("ref", [
    "vllm@v0.2.0:vllm/utils.py::cdiv",
    "vllm@v0.1.0:vllm.utils.cdiv",
    f"{GH}/v0.1.0/vllm/utils.py#L10-L12",
    "vllm@v0.1.0:vllm/utils.py#L10-L12",
    "vllm/utils.py::cdiv",  # unpinned: at the target version (v0.2.0, the last configured)
], ids=["symbol", "dotted", "permalink", "lines", "unpinned"])
def test_changed(project: Path, ref: str) -> None:
    data = timeline(project, ref)
    cdiv = "vllm/utils.py::cdiv"
    assert events(data) == [
        ("v0.1.0", "introduced", cdiv), ("v0.2.0", "changed", cdiv),
        ("v0.3.0", "unchanged", cdiv),
    ]
    assert data["steps"][1]["kinds"] == ["body"]


def test_signature_change_explained(project: Path) -> None:
    data = timeline(project, "vllm@v0.1.0:vllm/utils.py::get_distributed_init_method")
    assert data["steps"][1]["changes"] == [
        "signature changed: def get_distributed_init_method(ip: str, port: int) -> str -> "
        "def get_distributed_init_method(ip: str, port: int = 29500) -> str"
    ]


def test_removed(project: Path) -> None:
    data = timeline(project, "vllm@v0.1.0:vllm/utils.py::is_neuron")
    assert events(data) == [
        ("v0.1.0", "introduced", "vllm/utils.py::is_neuron"), ("v0.2.0", "removed", None),
    ]
    removed = data["steps"][-1]
    assert (removed["path"], removed["url"], removed["start_line"]) == (None, None, None)
    assert removed["code_went_to"] == []  # its code went nowhere


def test_cosmetic(project: Path) -> None:
    data = timeline(project, "vllm@v0.3.0:vllm/engine/llm_engine.py::LLMEngine.add_request")
    assert [step["event"] for step in data["steps"]] == ["introduced", "cosmetic", "unchanged"]


def test_added_later_is_introduced_there(project: Path) -> None:
    data = timeline(project, "vllm@v0.3.0:vllm/sampling_params.py::SamplingParams.clone")
    assert [(s["version"], s["event"]) for s in data["steps"]] == [
        ("v0.2.0", "introduced"), ("v0.3.0", "unchanged"),
    ]


def test_ambiguous_move_lists_the_other_candidates(project: Path) -> None:
    models = "vllm/model_executor/models"
    data = timeline(project, f"vllm@v0.2.0:{models}/deepseek_v4.py::DeepseekV4ForCausalLM")
    moved = data["steps"][-1]
    assert moved["event"] == "moved"
    assert {moved["ref"], *moved["candidates"]} == {
        f"{models}/deepseek_v4_{kind}.py::DeepseekV4ForCausalLM"
        for kind in ("amd", "nvidia", "xpu")
    }


@pytest.mark.parametrize("kind", ["amd", "nvidia", "xpu"])
def test_each_copy_of_a_split_symbol_has_its_own_history(project: Path, kind: str) -> None:
    models = "vllm/model_executor/models"
    copy = f"{models}/deepseek_v4_{kind}.py::DeepseekV4ForCausalLM"
    data = timeline(project, f"vllm@v0.3.0:{copy}")
    steps = [(s["version"], s["event"], s["ref"]) for s in data["steps"]]
    assert steps[-1] == ("v0.3.0", "moved", copy)
    assert steps[-2][2] == f"{models}/deepseek_v4.py::DeepseekV4ForCausalLM"
    others = {f"{models}/deepseek_v4_{other}.py::DeepseekV4ForCausalLM"
              for other in ("amd", "nvidia", "xpu") if other != kind}
    assert set(data["steps"][-1]["candidates"]) == others


def test_json_shape(project: Path) -> None:
    data = timeline(project, "vllm@v0.2.0:vllm/utils.py::cdiv")
    assert list(data) == ["repo", "ref", "versions", "steps"]
    assert data["repo"] == "vllm" and data["ref"] == "vllm@v0.2.0:vllm/utils.py::cdiv"
    assert data["versions"] == ["v0.1.0", "v0.2.0", "v0.3.0"]
    first = data["steps"][0]
    assert list(first) == ["version", "event", "ref", "path", "qualname", "kind", "start_line",
                           "end_line", "url", "kinds", "changes", "content", "moved_from",
                           "candidates", "code_went_to"]
    assert first["url"] == f"{GH}/v0.1.0/vllm/utils.py#L10-L12"
    assert first["content"] is None  # introduced: nothing to compare with


def test_text_table(project: Path) -> None:
    result = run(project, "history", "vllm@v0.2.0:vllm/core/scheduler.py::Scheduler")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "vllm@v0.2.0:vllm/core/scheduler.py::Scheduler"
    assert lines[1].split() == ["version", "event", "symbol", "lines", "details"]
    assert lines[2].split()[:3] == ["v0.1.0", "introduced", "vllm/core/scheduler.py::Scheduler"]
    assert lines[4].split()[:3] == ["v0.3.0", "moved",
                                    "vllm/v1/core/sched/scheduler.py::Scheduler"]
    assert lines[4].endswith("from vllm/core/scheduler.py::Scheduler; changed; members, body")
    assert len(lines) == 5


def test_removed_in_the_table(project: Path) -> None:
    result = run(project, "history", "vllm@v0.1.0:vllm/utils.py::is_neuron")
    assert result.stdout.splitlines()[-1].split() == ["v0.2.0", "removed", "-"]


def test_the_table_says_where_a_removed_symbols_code_went() -> None:
    """As vLLM v0.23's MLACommonImpl._run_prefill_new_tokens_fa, whose code went to
    FlashAttnPrefillBackend.run_prefill_new_tokens (where is `Matcher.where_code_went`'s,
    tested in test_matching.py)."""
    gone = TimelineRow("v2", "removed", None, None, None, None, None, None,
                       code_went_to=("b.py::Backend.run", "c.py::run"))
    kept = TimelineRow("v1", "introduced", "a.py", "f", "function", 1, 2, None)
    rows = table_rows(Timeline("vllm", "vllm@v1:a.py::f", ("v1", "v2"), (kept, gone)))
    assert rows == [["v1", "introduced", "a.py::f", "1-2", ""],
                    ["v2", "removed", "-", "", "its code went to b.py::Backend.run, c.py::run"]]


# --- the order of the versions ----------------------------------------------------------

# Configured: v0.1.0 and v0.3.0 only. v0.2.0 is indexed after v0.3.0 and v0.2.0rc1 after
# v0.2.0; main and nightly (v0.3.0's files) are no version numbers.
UNORDERED_CONFIG = """\
[repos.vllm]
versions = ["v0.1.0", "v0.3.0"]
[repos.lmcache]
versions = []
"""
UNORDERED_INDEX = {"main": "v0.3.0", "v0.3.0": "v0.3.0", "v0.2.0": "v0.2.0",
                   "v0.2.0rc1": "v0.1.0", "v0.1.0": "v0.1.0", "nightly": "v0.3.0"}
VERSION_ORDER = ["v0.1.0", "v0.2.0rc1", "v0.2.0", "v0.3.0", "main", "nightly"]


@pytest.fixture(scope="module")
def unordered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose versions were indexed in no order (`UNORDERED_INDEX`: each name
    with the fake version whose files it holds), some of them not configured."""
    root = tmp_path_factory.mktemp("unordered-project")
    (root / "annotate.toml").write_text(UNORDERED_CONFIG, encoding="utf-8")
    config = load_config(root)
    with open_database(config.db) as database:
        for name, files in UNORDERED_INDEX.items():
            source = root / "src" / name
            fakevllm.write_snapshot(source, fakevllm.VERSIONS[files])
            index_version(database, config, "vllm", name, from_path=source, workers=1)
    return root


@pytest.mark.parametrize(("ref", "expected"), [
    pytest.param("vllm@v0.3.0:vllm/utils.py::cdiv", [
        ("v0.1.0", "introduced"), ("v0.2.0rc1", "unchanged"), ("v0.2.0", "changed"),
        ("v0.3.0", "unchanged"), ("main", "unchanged"), ("nightly", "unchanged"),
    ], id="changed-in-an-unconfigured-version"),
    pytest.param("vllm@v0.1.0:vllm/worker/cache_engine.py::CacheEngine", [
        ("v0.1.0", "introduced"), ("v0.2.0rc1", "unchanged"), ("v0.2.0", "unchanged"),
        ("v0.3.0", "moved"), ("main", "unchanged"), ("nightly", "unchanged"),
    ], id="moved-in-a-configured-version"),
    pytest.param("vllm@main:vllm/sampling_params.py::SamplingParams.clone", [
        ("v0.2.0", "introduced"), ("v0.3.0", "unchanged"), ("main", "unchanged"),
        ("nightly", "unchanged"),
    ], id="asked-at-a-branch"),
])
def test_history_orders_the_versions_by_number(
    unordered: Path, ref: str, expected: list[tuple[str, str]]
) -> None:
    """Not as configured, then as indexed: v0.2.0 between v0.1.0 and v0.3.0, its release
    candidate before it; the names that are not version numbers last, as indexed."""
    data = timeline(unordered, ref)
    assert data["versions"] == VERSION_ORDER
    assert [(step["version"], step["event"]) for step in data["steps"]] == expected


def test_the_versions_are_read_in_order_in_one_query(unordered: Path) -> None:
    """Each version with its key, from one query, whatever their number."""
    config = load_config(unordered)
    statements: list[str] = []
    with open_database(config.db) as database:
        database.conn.set_trace_callback(statements.append)
        versions = queries.indexed_version_keys(database, "vllm")
        database.conn.set_trace_callback(None)
        keys = {version: queries.version_id(database, "vllm", version)
                for version in VERSION_ORDER}
    assert versions == [(version, keys[version]) for version in VERSION_ORDER]
    assert len(statements) == 1, statements


@pytest.mark.parametrize("output_format", ["table", "json"])
def test_versions_are_listed_in_the_same_order(unordered: Path, output_format: str) -> None:
    result = run(unordered, "versions", "--format", output_format)
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    if output_format == "json":
        listed = [row["version"] for row in json.loads(result.stdout)]
    else:
        listed = [line.split()[1] for line in result.stdout.splitlines()[1:]]
    assert listed == VERSION_ORDER


def test_an_unpinned_ref_is_still_at_the_last_configured_version(unordered: Path) -> None:
    """The target stays the last configured version, not the last in version order."""
    assert timeline(unordered, "vllm/v1/worker/cache_engine.py::CacheEngine")["ref"] == (
        "vllm@v0.3.0:vllm/v1/worker/cache_engine.py::CacheEngine")


# --- errors ---------------------------------------------------------------------------


def test_unindexed_version(project: Path) -> None:
    assert fails(project, "history", "vllm@v9:vllm/utils.py::cdiv") == (
        "Error: vllm@v9 is neither indexed nor configured (vllm has v0.1.0, v0.2.0, v0.3.0); "
        "fix the version, or run 'annotate index vllm@v9' to index it\n"
    )


@pytest.mark.parametrize(("ref", "error"), [
    ("vllm@v0.1.0:vllm/utils.py#L1-L3", "names lines that no symbol covers"),
    (f"{GH}/v0.1.0/vllm/utils.py", "names a whole file, not a symbol"),
], ids=["lines-outside-every-symbol", "permalink-to-a-file"])
def test_lines_that_are_no_symbol(project: Path, ref: str, error: str) -> None:
    assert fails(project, "history", ref) == (
        f"Error: '{ref}' {error} (hint: write a symbol: PATH::QUALNAME, a dotted name, or a "
        "permalink or REPO@VERSION:PATH#Lx-Ly to lines within one)\n")


def test_unknown_symbol(project: Path) -> None:
    error = fails(project, "history", "vllm@v0.1.0:vllm/utils.py::nope")
    assert error.startswith("Error: no symbol 'nope' in vllm/utils.py at vllm@v0.1.0")


@pytest.mark.parametrize("ref", ["vllm@:vllm/utils.py::cdiv", "vllm@v0.1.0:../x.py::f", ""])
def test_bad_refs(project: Path, ref: str) -> None:
    assert fails(project, "history", ref).startswith("Error: ")


def test_missing_argument_is_a_usage_error(project: Path) -> None:
    result = run(project, "history")
    assert result.exit_code == 2 and "Missing argument 'REF'" in result.stderr
