"""Checks that the fake vLLM corpus really contains what ``fakevllm`` promises."""

from __future__ import annotations

import ast
import base64
import difflib
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import fakevllm as fv
import pytest
from ast_reference import reference_for_tree, reference_symbols
from fakevllm import CASES, FEATURES, TAGS, VERSIONS, FakeRepo, Symlink

CASE_PARAMS = [pytest.param(case, id=name) for name, case in CASES.items()]


# ------------------------------------------------------------------------------ helpers


def _git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _ls_tree(repo: Path, tag: str) -> dict[str, tuple[str, str]]:
    """path -> (mode, blob sha) of a tag's tree."""
    out = fv.git(repo, "ls-tree", "-r", "-z", tag)
    entries: dict[str, tuple[str, str]] = {}
    for record in filter(None, out.split("\0")):
        meta, path = record.split("\t", 1)
        mode, _type, sha = meta.split()
        entries[path] = (mode, sha)
    return entries


def _symbols(tag: str, path: str) -> list[tuple[str, str, int, int]]:
    return reference_symbols(fv.python_files(tag)[path].decode("utf-8"))


def _qualnames(tag: str, path: str) -> list[str]:
    return [q for q, _, _, _ in _symbols(tag, path)]


def _node(tag: str, ref: tuple[str, str]) -> ast.AST:
    """The single ast node defining ``ref`` (path, qualname) at ``tag``."""
    path, qualname = ref
    (start,) = {s for q, _, s, _ in _symbols(tag, path) if q == qualname}
    tree = ast.parse(fv.python_files(tag)[path].decode("utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            if node.name == qualname.rsplit(".", 1)[-1] and first == start:
                return node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.lineno == start:
            return node
    raise LookupError(ref)


def _segment(tag: str, ref: tuple[str, str]) -> str:
    path, qualname = ref
    ((start, end),) = {(s, e) for q, _, s, e in _symbols(tag, path) if q == qualname}
    lines = fv.python_files(tag)[path].decode("utf-8").splitlines(keepends=True)
    return "".join(lines[start - 1 : end])


def _without_docstring(node: ast.AST) -> str:
    body = getattr(node, "body", [])
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        node.body = body[1:]  # type: ignore[attr-defined]
    return ast.dump(node)


# ------------------------------------------------------------------------------ git repo


def test_tags(fake_vllm: FakeRepo) -> None:
    assert fake_vllm.tags == TAGS
    assert fv.git(fake_vllm.path, "tag", "-l").split() == TAGS
    kinds = {t: fv.git(fake_vllm.path, "cat-file", "-t", t) for t in TAGS}
    assert kinds == {"v0.1.0": "commit", "v0.2.0": "tag", "v0.3.0": "commit"}
    for tag in TAGS:
        assert fv.git(fake_vllm.path, "rev-parse", f"{tag}^{{commit}}") == fake_vllm.commits[tag]


def test_worktree_is_clean_at_last_tag(fake_vllm: FakeRepo) -> None:
    assert fv.git(fake_vllm.path, "status", "--porcelain") == ""
    assert fv.git(fake_vllm.path, "rev-parse", "HEAD") == fake_vllm.commits["v0.3.0"]
    assert fv.git(fake_vllm.path, "symbolic-ref", "--short", "HEAD") == "main"


def test_url_lists_peeled_tags(fake_vllm: FakeRepo) -> None:
    assert fake_vllm.url.startswith("file:///")
    refs = fv.git(fake_vllm.path, "ls-remote", "--tags", fake_vllm.url).splitlines()
    names = sorted(line.split("\t")[1] for line in refs)
    assert names == [
        "refs/tags/v0.1.0",
        "refs/tags/v0.2.0",
        "refs/tags/v0.2.0^{}",
        "refs/tags/v0.3.0",
    ]


@pytest.mark.parametrize("tag", TAGS)
def test_tree_matches_versions(fake_vllm: FakeRepo, tag: str) -> None:
    tree = _ls_tree(fake_vllm.path, tag)
    assert set(tree) == set(VERSIONS[tag])
    for path, content in VERSIONS[tag].items():
        if isinstance(content, Symlink):
            expected = ("120000", _git_blob_sha(content.target.encode()))
        else:
            expected = ("100644", _git_blob_sha(fv.content_bytes(content)))
        assert tree[path] == expected, path


def test_build_is_deterministic(fake_vllm: FakeRepo, tmp_path: Path) -> None:
    again = fv.build_fake_vllm(tmp_path / "again")
    assert again.commits == fake_vllm.commits
    assert again.url == (tmp_path / "again").resolve().as_uri()


def test_special_files_everywhere() -> None:
    for tag in TAGS:
        snap = VERSIONS[tag]
        assert snap[fv.SYMLINK_FILE] == Symlink("config/cache.py")
        assert snap[fv.EMPTY_FILE] == ""
        assert all(p in snap for p in fv.NON_PYTHON_FILES)
        data = fv.content_bytes(snap[fv.NON_UTF8_FILE])
        with pytest.raises(UnicodeDecodeError):
            data.decode("utf-8")
        with pytest.raises(SyntaxError):
            ast.parse(fv.content_bytes(snap[fv.SYNTAX_ERROR_FILE]).decode())


def test_reference_for_checked_out_tree(fake_vllm: FakeRepo) -> None:
    symbols, skipped = reference_for_tree(fake_vllm.path)
    assert skipped == sorted([fv.NON_UTF8_FILE, fv.SYNTAX_ERROR_FILE])
    paths = {s[0] for s in symbols}
    assert fv.SYMLINK_FILE not in paths
    assert fv.EMPTY_FILE not in paths
    assert ("vllm/config/cache.py", "CacheConfig.gpu_memory_utilization", "attribute", 22, 22) in (
        symbols
    )


def test_broken_file_is_partly_recoverable_by_tree_sitter() -> None:
    tsp = pytest.importorskip("tree_sitter_python")
    ts = pytest.importorskip("tree_sitter")
    source = fv.content_bytes(VERSIONS["v0.1.0"][fv.SYNTAX_ERROR_FILE])
    root = ts.Parser(ts.Language(tsp.language())).parse(source).root_node
    names = [
        child.child_by_field_name("name").text.decode()
        for child in root.children
        if child.type == "function_definition"
    ]
    assert root.has_error
    assert names == ["load_weights_before", "load_weights_after"]


# ------------------------------------------------------------------------------ symbols


def test_property_getter_and_setter_are_both_listed() -> None:
    for tag in TAGS:
        path, qualname = FEATURES["property_getter_setter"]
        hits = [s for s in _symbols(tag, path) if s[0] == qualname]
        assert [(k, s) for _, k, s, _ in hits] == [("method", 22), ("method", 26)]


def test_conditional_def_is_listed_twice() -> None:
    path, qualname = FEATURES["conditional_def"]
    assert _qualnames("v0.1.0", path).count(qualname) == 2


@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_feature_symbols_exist_in_every_version(feature: str) -> None:
    path, qualname = FEATURES[feature]
    for tag in TAGS:
        assert qualname in _qualnames(tag, path)


def test_structural_kinds() -> None:
    kinds = {
        (q, k)
        for path in ("vllm/engine/async_llm_engine.py", "vllm/platforms/interface.py")
        for q, k, _, _ in _symbols("v0.1.0", path)
    }
    assert {
        ("_make_stream_cls.<locals>.AsyncStream", "class"),
        ("_make_stream_cls.<locals>.AsyncStream.put", "method"),
        ("build_guarded_step.<locals>.guarded_step", "function"),
        ("run_engine_loop", "function"),
        ("AsyncLLMEngine.generate", "method"),
        ("AsyncStream", "attribute"),
        ("Platform.dispatch_key", "attribute"),
        ("Platform.supports_fp8", "attribute"),
        ("Platform.is_cuda", "method"),
    } <= kinds


def test_multi_decorator_span_starts_at_first_decorator() -> None:
    path, qualname = FEATURES["multi_decorator"]
    assert (qualname, "function", 7, 14) in _symbols("v0.1.0", path)


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_case_symbols_exist(case: fv.ChangeCase) -> None:
    if case.old is not None:
        assert case.old[1] in _qualnames(case.old_tag, case.old[0])
    for path, qualname in case.new:
        assert qualname in _qualnames(case.new_tag, path)


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_case_old_symbol_gone_unless_kept(case: fv.ChangeCase) -> None:
    if case.old is None or case.old in case.new:
        return
    path, qualname = case.old
    files = fv.python_files(case.new_tag)
    assert path not in files or qualname not in _qualnames(case.new_tag, path)


def test_moved_class_text_is_identical() -> None:
    case = CASES["moved"]
    assert _segment(case.old_tag, case.old) == _segment(case.new_tag, case.new[0])
    assert "vllm/worker/cache_engine.py" not in VERSIONS[case.new_tag]


def test_moved_and_changed_differs() -> None:
    case = CASES["moved_and_changed"]
    assert _segment(case.old_tag, case.old) != _segment(case.new_tag, case.new[0])
    assert case.old[0] not in VERSIONS[case.new_tag]


def test_renamed_function_has_same_body() -> None:
    case = CASES["renamed"]
    old, new = _node(case.old_tag, case.old), _node(case.new_tag, case.new[0])
    assert ast.dump(old).replace("capture_graph", "capture_cudagraph") == ast.dump(new)


@pytest.mark.parametrize(
    ("name", "changed_field"),
    [
        ("signature_changed", "args"),
        ("body_changed", "body"),
        ("decorator_changed", "decorator_list"),
        ("bases_changed", "bases"),
    ],
)
def test_single_field_changes(name: str, changed_field: str) -> None:
    case = CASES[name]
    old, new = _node(case.old_tag, case.old), _node(case.new_tag, case.new[0])
    for fieldname in old._fields:
        same = _dump(getattr(old, fieldname)) == _dump(getattr(new, fieldname))
        assert same == (fieldname != changed_field), fieldname


def _dump(value: object) -> str:
    if isinstance(value, list):
        return repr([_dump(item) for item in value])
    return ast.dump(value) if isinstance(value, ast.AST) else repr(value)


def test_member_added() -> None:
    case = CASES["member_added"]
    assert "SamplingParams.clone" not in _qualnames(case.old_tag, case.old[0])
    assert "SamplingParams.clone" in _qualnames(case.new_tag, case.new[0][0])


def test_formatting_only_change_is_semantically_identical() -> None:
    case = CASES["formatting_only"]
    old_text, new_text = _segment(case.old_tag, case.old), _segment(case.new_tag, case.new[0])
    assert old_text != new_text
    old, new = _node(case.old_tag, case.old), _node(case.new_tag, case.new[0])
    assert _without_docstring(old) == _without_docstring(new)


@pytest.mark.parametrize(
    ("name", "old_value", "new_value"),
    [("attribute_value_changed", 0.9, 0.92), ("constant_value_changed", 4, 8)],
)
def test_value_changes(name: str, old_value: float, new_value: float) -> None:
    case = CASES[name]
    old, new = _node(case.old_tag, case.old), _node(case.new_tag, case.new[0])
    assert ast.literal_eval(old.value) == old_value  # type: ignore[attr-defined]
    assert ast.literal_eval(new.value) == new_value  # type: ignore[attr-defined]


def test_ambiguous_move_copies_are_near_identical() -> None:
    case = CASES["ambiguous_move"]
    original = _segment(case.old_tag, case.old).splitlines()
    for ref in case.new:
        copy = _segment(case.new_tag, ref).splitlines()
        changed = [d for d in difflib.ndiff(original, copy) if d[:1] in "+-"]
        assert len(changed) == 2, ref  # exactly one line replaced
    reexport = fv.python_files(case.new_tag)[case.old[0]].decode()
    assert "import DeepseekV4ForCausalLM" in reexport
    assert "DeepseekV4ForCausalLM" not in _qualnames(case.new_tag, case.old[0])


def test_imports_for_cross_references() -> None:
    files = fv.python_files("v0.1.0")
    init = files["vllm/__init__.py"].decode()
    assert "from vllm.config.cache import CacheConfig" in init
    assert "AsyncLLMEngine as AsyncEngine" in init
    logits = files["vllm/model_executor/layers/logits_processor.py"].decode()
    assert "from .linear import ReplicatedLinear" in logits
    assert "import numpy as np" in logits
    assert "ReplicatedLinear.forward" in _qualnames("v0.1.0", FEATURES["cross_ref_target"][0])


# ------------------------------------------------------------------------------ wheels


def test_wheel_contents_match_git(fake_wheels: Path, fake_vllm: FakeRepo) -> None:
    for version in ("0.1.0", "0.2.0"):
        tag = f"v{version}"
        tree = _ls_tree(fake_vllm.path, tag)
        with zipfile.ZipFile(fake_wheels / f"vllm-{version}-py3-none-any.whl") as zf:
            names = zf.namelist()
            code = {n: zf.read(n) for n in names if not n.startswith("vllm-")}
            record = zf.read(f"vllm-{version}.dist-info/RECORD").decode()
        assert code == fv.python_files(tag)
        assert fv.SYMLINK_FILE not in code
        for path, data in code.items():
            assert tree[path] == ("100644", _git_blob_sha(data))
        assert names[-1] == f"vllm-{version}.dist-info/RECORD"
        _check_record(record, fake_wheels / f"vllm-{version}-py3-none-any.whl")


def _check_record(record: str, wheel: Path) -> None:
    lines = record.splitlines()
    with zipfile.ZipFile(wheel) as zf:
        assert sorted(line.split(",")[0] for line in lines) == sorted(zf.namelist())
        for line in lines:
            name, digest, size = line.split(",")
            if name.endswith("/RECORD"):
                assert (digest, size) == ("", "")
                continue
            data = zf.read(name)
            raw = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert (digest, size) == (f"sha256={raw.decode()}", str(len(data)))


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return subprocess.run(
        [sys.executable, "-m", "pip", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_pip_download_from_find_links(fake_wheels: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _pip(
        "download", "--no-deps", "--only-binary", ":all:", "--no-index",
        "--find-links", str(fake_wheels), "vllm==0.1.0", "-d", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert [p.name for p in out.iterdir()] == ["vllm-0.1.0-py3-none-any.whl"]
    assert (out / "vllm-0.1.0-py3-none-any.whl").read_bytes() == (
        fake_wheels / "vllm-0.1.0-py3-none-any.whl"
    ).read_bytes()


def test_pip_install_target(fake_wheels: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    wheel = fake_wheels / "vllm-0.2.0-py3-none-any.whl"
    result = _pip("install", "--no-deps", "--no-index", "--no-compile", "--target", str(target),
                  str(wheel))  # fmt: skip
    assert result.returncode == 0, result.stderr
    installed = (target / "vllm/config/cache.py").read_bytes()
    assert installed == fv.python_files("v0.2.0")["vllm/config/cache.py"]


def test_custom_wheel_name_and_versions(tmp_path: Path) -> None:
    out = fv.build_fake_wheels(tmp_path / "w", name="vllm-fork", versions=("0.3.0",))
    assert [p.name for p in out.iterdir()] == ["vllm_fork-0.3.0-py3-none-any.whl"]
    with zipfile.ZipFile(out / "vllm_fork-0.3.0-py3-none-any.whl") as zf:
        metadata = zf.read("vllm_fork-0.3.0.dist-info/METADATA").decode()
    assert "Name: vllm-fork\nVersion: 0.3.0\n" in metadata


# ------------------------------------------------------------------------------ lmcache


def test_fake_lmcache(fake_lmcache: FakeRepo) -> None:
    assert fake_lmcache.tags == ["v0.5.1"]
    tree = _ls_tree(fake_lmcache.path, "v0.5.1")
    assert "lmcache/integration/vllm/utils.py" in tree
    source = fv.LMCACHE_VERSIONS["v0.5.1"]["lmcache/integration/vllm/utils.py"]
    assert ("mla_enabled", "function", 6, 8) in reference_symbols(str(source))


# ------------------------------------------------------------------------------ isolation


def test_environment_is_isolated(tmp_path: Path) -> None:
    assert Path.cwd() == tmp_path
    assert Path(os.environ["XDG_CACHE_HOME"]).is_relative_to(tmp_path)
    assert os.environ["GIT_CONFIG_GLOBAL"] == os.devnull
    assert os.environ["PIP_CONFIG_FILE"] == os.devnull
    assert "PIP_FIND_LINKS" not in os.environ
    assert "ANNOTATE_CACHE_DIR" not in os.environ  # .ci/run sets it to catch a leak
