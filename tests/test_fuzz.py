"""Fuzzing through the command line: whatever an annotation file, an article or a ref holds,
``annotate`` answers with a result or with its own one-line error, never a traceback.

The loader and the ref grammar have unit-level fuzz tests (tests/test_loader.py,
tests/test_refs.py); these go through the click commands and their error mapping
(`annotate_cli.reports_errors`), with a real index, a bounded number of examples each.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import fakevllm as fv
import pytest
import yaml
from click.testing import CliRunner, Result
from fakeproject import copy_project, invoke, isolate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotate_cli import cli
from annotations.loader import CLAIM_KEYS, REF_KEYS, TOP_KEYS, WAIVER_KEYS
from annotations.reports import FORMATS

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """annotate.toml and an index of vllm@v0.1.0 and v0.2.0 (from directories)."""
    root = tmp_path_factory.mktemp("fuzz")
    (root / "annotate.toml").write_text(
        '[repos.vllm]\nsources = ["git"]\nversions = ["v0.1.0", "v0.2.0"]\n'
    )
    with pytest.MonkeyPatch.context() as patch:  # before conftest's per-test isolation
        isolate(patch, root / "xdg-cache")
        for tag in ("v0.1.0", "v0.2.0"):
            fv.write_snapshot(root / tag, fv.VERSIONS[tag])
            result = CliRunner().invoke(cli, ["--config", str(root / "annotate.toml"), "index",
                                              f"vllm@{tag}", "--from", str(root / tag)])
            assert result.exit_code == 0, result.output
    return root


@pytest.fixture
def project(built: Path) -> Path:
    root = copy_project(built)
    Path("annotations").mkdir()
    Path("articles").mkdir()
    return root


def run(*args: str) -> Result:
    result = invoke(*args)
    assert result.exit_code in (0, 1, 2), result.exit_code
    if result.exit_code == 2:
        assert result.stderr.splitlines()[-1].startswith("Error: "), result.stderr
    return result


def link_and_check(fmt: str) -> None:
    run("link")
    result = run("check", "--format", fmt)
    if fmt in ("json", "sarif") and result.exit_code != 2:
        json.loads(result.stdout)


# -- strategies ----------------------------------------------------------------------------

REF_PIECES = st.sampled_from([
    "vllm", "lmcache", "evil", "@", "v0.1.0", "v0.2.0", "v9", "-", "--upload-pack=x", ":",
    "::", "/", "..", ".", "vllm/utils.py", "vllm/config/cache.py", "README.md", "cdiv",
    "CacheConfig", "gpu_memory_utilization", "<locals>", "#L", "#L1-L3", "1", "-L", "0",
    "999999999", "https://github.com/", "vllm-project/vllm", "/blob/", "%2F", "%00", "%",
    "?", "\\", " ", "\t", "\x00", "\u2028", "中", "é",
])
refs = st.one_of(st.lists(REF_PIECES, max_size=10).map("".join), st.text(max_size=30))
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
    st.text(max_size=20), st.dates(min_value=datetime.date(1, 1, 1)), refs,
)
keys = st.one_of(st.sampled_from(TOP_KEYS + CLAIM_KEYS + REF_KEYS + WAIVER_KEYS),
                 st.text(max_size=8))
yamlish = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(keys, children, max_size=5)),
    max_leaves=25,
)
claim = st.fixed_dictionaries(
    {"id": st.one_of(st.from_regex(r"[a-z0-9][a-z0-9-]{0,8}", fullmatch=True), yamlish),
     "text": st.one_of(st.text(max_size=40), yamlish)},
    optional={
        "refs": st.one_of(st.lists(st.one_of(refs, st.fixed_dictionaries(
            {"ref": refs}, optional={"quote": st.text(max_size=10),
                                     "uses": st.lists(refs, max_size=2)})), max_size=3),
            yamlish),
        "at": st.one_of(refs, yamlish),
        "waive": st.lists(st.fixed_dictionaries(
            {"status": st.sampled_from(["changed", "moved", "removed", "x"]),
             "until": st.one_of(st.dates(), st.text(max_size=10)),
             "reason": st.text(max_size=10)}), max_size=2),
    },
)
documents = st.one_of(
    st.fixed_dictionaries({"article": st.one_of(st.text(max_size=20), yamlish),
                           "claims": st.lists(claim, max_size=4)},
                          optional={"at": st.one_of(refs, yamlish), "title": yamlish}),
    yamlish,
)
formats = st.sampled_from(FORMATS)


def dump(document: object) -> str:
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False)


# -- properties ------------------------------------------------------------------------------


@SETTINGS
@given(documents, formats)
def test_any_yaml_shaped_annotation_file(project: Path, document: object, fmt: str) -> None:
    Path("annotations/fuzz.yml").write_text(dump(document), encoding="utf-8")
    link_and_check(fmt)


@SETTINGS
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200).map(
    lambda data: data.decode("latin-1"))), formats)
def test_any_text_as_annotation_file(project: Path, text: str, fmt: str) -> None:
    Path("annotations/fuzz.yml").write_bytes(text.encode("utf-8", "surrogatepass"))
    link_and_check(fmt)


@SETTINGS
@given(st.lists(st.one_of(refs, st.text(max_size=30), st.sampled_from(["---", "\n", "# T"])),
                max_size=8).map(" ".join), documents, formats)
def test_any_markdown_article(project: Path, body: str, front: object, fmt: str) -> None:
    Path("articles/fuzz.md").write_text(f"---\n{dump(front)}---\n{body}\n", encoding="utf-8")
    link_and_check(fmt)


@SETTINGS
@given(refs)
def test_any_ref_on_the_command_line(project: Path, ref: str) -> None:
    if "\x00" in ref:  # an OS cannot pass NUL in an argument; click would never see it
        ref = ref.replace("\x00", "")
    for command in (["show", ref], ["links", ref], ["xref", ref], ["check", "--against", ref]):
        run(*command)
