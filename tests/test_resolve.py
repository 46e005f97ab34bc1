"""Resolving refs against an index built by ``annotate index`` from the fake repos."""

from __future__ import annotations

import contextlib
import gc
import pickle
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import fakevllm as fv
import pytest
from click.testing import CliRunner
from fakeproject import run_annotate, stored_fingerprints, write_tree

from annotate_cli import cli
from annotations.errors import AnnotationError
from annotations.quotes import quote_stands
from annotations.refs import parse_ref
from annotations.resolve import (
    AmbiguousRef,
    ResolveError,
    Resolver,
    UnindexedVersion,
    split_lines,
)
from db.database import open_database
from db.queries import Unindexed
from indexer.config import load_config
from indexer.fingerprints import digest
from indexer.pipeline import index_version

GH = "https://github.com/vllm-project/vllm/blob"
CACHE = "vllm/config/cache.py"
UTIL = "CacheConfig.gpu_memory_utilization"


@pytest.fixture(scope="module")
def indexed(indexed_fakes: Path) -> Path:
    return indexed_fakes


@pytest.fixture(scope="module")
def resolver(indexed: Path) -> Iterator[Resolver]:
    database = open_database(indexed / ".annotate" / "index.db", create=False)
    try:
        yield Resolver(database, load_config(indexed))
    finally:
        database.close()


# -- every ref form resolves ---------------------------------------------------------------------

RESOLVES = [
    pytest.param(
        f"vllm@v0.1.0:{CACHE}::{UTIL}", f"vllm@v0.1.0:{CACHE}::{UTIL}", 22, 22, id="symbol"
    ),
    pytest.param(
        "vllm@v0.1.0:vllm/engine/async_llm_engine.py::build_guarded_step.<locals>.guarded_step",
        "vllm@v0.1.0:vllm/engine/async_llm_engine.py::build_guarded_step.<locals>.guarded_step",
        27, 31, id="symbol-locals",
    ),
    pytest.param(
        "vllm@v0.1.0:vllm.engine.async_llm_engine.build_guarded_step.<locals>.guarded_step",
        "vllm@v0.1.0:vllm/engine/async_llm_engine.py::build_guarded_step.<locals>.guarded_step",
        27, 31, id="dotted-locals",
    ),
    pytest.param(
        f"vllm@v0.1.0:vllm.config.cache.{UTIL}", f"vllm@v0.1.0:{CACHE}::{UTIL}", 22, 22,
        id="dotted-module-file",
    ),
    pytest.param(
        "vllm@v0.2.0:vllm.engine.llm_engine.LLMEngine.add_request",
        "vllm@v0.2.0:vllm/engine/llm_engine.py::LLMEngine.add_request", 30, 42,
        id="dotted-method",
    ),
    pytest.param(
        "vllm@v0.1.0:vllm.platforms.DEFAULT_DEVICE",
        "vllm@v0.1.0:vllm/platforms/__init__.py::DEFAULT_DEVICE", 15, 15,
        id="dotted-package-init",
    ),
    pytest.param(
        "vllm@v0.1.0:vllm.__all__", "vllm@v0.1.0:vllm/__init__.py::__all__", 8, 8,
        id="dotted-top-package-init",
    ),
    pytest.param(
        "vllm@v0.1.0:vllm.platforms.interface.Platform.is_cuda",
        "vllm@v0.1.0:vllm/platforms/interface.py::Platform.is_cuda", 21, 22,
        id="dotted-longest-module-prefix-wins-over-package-init",
    ),
    pytest.param(
        f"vllm@v0.1.0:vllm.{UTIL}", f"vllm@v0.1.0:{CACHE}::{UTIL}", 22, 22,
        id="dotted-name-a-package-init-imports-is-where-it-is-defined",
    ),
    pytest.param(
        "vllm@v0.1.0:vllm.AsyncEngine",
        "vllm@v0.1.0:vllm/engine/async_llm_engine.py::AsyncLLMEngine", 43, 55,
        id="dotted-name-imported-under-an-alias",
    ),
    pytest.param(
        "lmcache@v0.5.1:lmcache.integration.vllm.utils.mla_enabled",
        "lmcache@v0.5.1:lmcache/integration/vllm/utils.py::mla_enabled", 6, 8,
        id="dotted-other-repo",
    ),
    pytest.param(
        f"vllm@v0.1.0:{UTIL}", f"vllm@v0.1.0:{CACHE}::{UTIL}", 22, 22, id="short-qualname"
    ),
    pytest.param("vllm@v0.2.0:cdiv", "vllm@v0.2.0:vllm/utils.py::cdiv", 10, 12, id="short-name"),
    pytest.param(
        "vllm@v0.1.0:LLMEngine.log_stats",
        "vllm@v0.1.0:vllm/engine/llm_engine.py::LLMEngine.log_stats", 22, 24,
        id="short-property-getter-and-setter-is-one-symbol",
    ),
    pytest.param(
        "vllm@v0.1.0:csrc/attention/paged_attention_v1.cu#L1-L3",
        "vllm@v0.1.0:csrc/attention/paged_attention_v1.cu#L1-L3", 1, 3, id="lines-cuda",
    ),
    pytest.param("vllm@v0.1.0:README.md#L1", "vllm@v0.1.0:README.md#L1", 1, 1,
                 id="lines-markdown-one-line"),
    pytest.param("vllm@v0.2.0:vllm/utils.py#L10-12", "vllm@v0.2.0:vllm/utils.py#L10-L12", 10, 12,
                 id="lines-python-short-anchor"),
    pytest.param(f"{GH}/v0.2.0/{CACHE}#L22", f"vllm@v0.2.0:{CACHE}::{UTIL}", 22, 22,
                 id="permalink-innermost-attribute"),
    pytest.param(
        f"{GH}/v0.2.0/{CACHE}#L27-L29",
        f"vllm@v0.2.0:{CACHE}::CacheConfig.verify_with_parallel_config", 26, 29,
        id="permalink-range-inside-method",
    ),
    pytest.param(f"{GH}/v0.2.0/{CACHE}#L21-L27", f"vllm@v0.2.0:{CACHE}::CacheConfig", 12, 29,
                 id="permalink-range-over-two-members-is-the-class"),
    pytest.param(
        f"{GH}/v0.2.0/{CACHE}#L25-L29",
        f"vllm@v0.2.0:{CACHE}::CacheConfig.verify_with_parallel_config", 26, 29,
        id="permalink-leading-blank-line-is-not-the-class",
    ),
    pytest.param(f"{GH}/v0.2.0/{CACHE}#L9-L11", f"vllm@v0.2.0:{CACHE}::DEFAULT_SWAP_SPACE_GIB",
                 9, 9, id="permalink-trailing-blank-lines-are-not-cited"),
    pytest.param(f"{GH}/v0.2.0/{CACHE}#L10-L11", f"vllm@v0.2.0:{CACHE}#L10-L11", 10, 11,
                 id="permalink-blank-lines-only-give-lines"),
    pytest.param(
        f"{GH}/v0.1.0/vllm/engine/async_llm_engine.py#L28-L29",
        "vllm@v0.1.0:vllm/engine/async_llm_engine.py::build_guarded_step.<locals>.guarded_step",
        27, 31, id="permalink-nested-function",
    ),
    pytest.param(f"{GH}/v0.2.0/{CACHE}#L1-L3", f"vllm@v0.2.0:{CACHE}#L1-L3", 1, 3,
                 id="permalink-no-symbol-gives-lines"),
    pytest.param(f"{GH}/v0.1.0/{CACHE}#L9-L13", f"vllm@v0.1.0:{CACHE}#L9-L13", 9, 13,
                 id="permalink-partly-overlapping-symbols-gives-lines"),
    pytest.param(f"{GH}/v0.2.0/README.md#L3", "vllm@v0.2.0:README.md#L3", 3, 3,
                 id="permalink-non-python"),
    pytest.param(
        "https://github.com/LMCache/LMCache/blob/v0.5.1/lmcache/integration/vllm/utils.py#L7",
        "lmcache@v0.5.1:lmcache/integration/vllm/utils.py::mla_enabled", 6, 8,
        id="permalink-other-repo",
    ),
    pytest.param(f"https://github.com/VLLM-Project/VLLM/blob/v0.2.0/{CACHE}#L22",
                 f"vllm@v0.2.0:{CACHE}::{UTIL}", 22, 22,
                 id="permalink-github-name-case-insensitive"),
]


@pytest.mark.parametrize(("text", "canonical", "start", "end"), RESOLVES)
def test_ref_forms_resolve(
    resolver: Resolver, text: str, canonical: str, start: int, end: int
) -> None:
    resolved = resolver.resolve(parse_ref(text))
    assert resolved.canonical == canonical
    assert (resolved.start_line, resolved.end_line) == (start, end)


def test_unpinned_ref_takes_the_pin_given_to_it(resolver: Resolver) -> None:
    ref = parse_ref(f"vllm.config.cache.{UTIL}").with_pin("vllm", "v0.2.0")
    resolved = resolver.resolve(ref)
    assert resolved.canonical == f"vllm@v0.2.0:{CACHE}::{UTIL}"
    assert resolver.text_of(resolved) == "    gpu_memory_utilization: float = 0.92\n"


def test_a_symbol_ref_reads_its_own_rows_not_its_files(
        indexed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A collection cites thousands of files: reading every symbol of a ref's file (the
    whole of CacheConfig's file for one attribute) made `link` read ~25 rows a ref."""
    database = open_database(indexed / ".annotate" / "index.db", create=False)
    fetched: list[str] = []
    query = database.query

    def counting_query(sql: str, params: tuple = ()) -> Iterator[dict]:
        for row in query(sql, params):
            fetched.append(row.get("qualname"))
            yield row

    monkeypatch.setattr(database, "query", counting_query)
    try:
        resolved = Resolver(database, load_config(indexed)).resolve(
            parse_ref(f"vllm@v0.1.0:{CACHE}::{UTIL}"))
    finally:
        database.close()
    assert resolved.canonical == f"vllm@v0.1.0:{CACHE}::{UTIL}"
    assert fetched == [UTIL]


def test_symbol_carries_its_fingerprints_at_the_pin(resolver: Resolver) -> None:
    old = resolver.resolve(parse_ref("vllm@v0.1.0:vllm/utils.py::cdiv"))
    new = resolver.resolve(parse_ref("vllm@v0.2.0:vllm/utils.py::cdiv"))
    assert (old.exact, old.normalized, old.shape) == stored_fingerprints(
        resolver.database, "v0.1.0", "vllm/utils.py", "cdiv"
    )
    assert (new.exact, new.normalized, new.shape) == stored_fingerprints(
        resolver.database, "v0.2.0", "vllm/utils.py", "cdiv"
    )
    assert old.exact != new.exact  # the body changed between the two pins
    assert (old.kind, old.qualname, old.pin) == ("function", "cdiv", "vllm@v0.1.0")
    assert resolver.text_of(new) == (
        'def cdiv(a: int, b: int) -> int:\n    """Ceiling division."""\n'
        "    return (a + b - 1) // b\n"
    )


def test_line_range_fingerprints_its_exact_lines(resolver: Resolver) -> None:
    resolved = resolver.resolve(
        parse_ref("vllm@v0.1.0:csrc/attention/paged_attention_v1.cu#L1-L3")
    )
    expected = "".join(fv.PAGED_ATTENTION_CU.splitlines(keepends=True)[:3])
    assert resolver.text_of(resolved) == expected
    assert resolved.exact == digest(expected.encode())
    assert resolved.normalized == digest(b" ".join(expected.encode().split()))
    assert (resolved.qualname, resolved.kind) == (None, None)


def test_permalink_without_anchor_is_the_whole_file(resolver: Resolver) -> None:
    resolved = resolver.resolve(parse_ref(f"{GH}/v0.1.0/README.md"))
    assert resolved.canonical == "vllm@v0.1.0:README.md#L1-L3"
    assert resolver.text_of(resolved) == fv.README


# -- errors --------------------------------------------------------------------------------------

FORWARDS = (
    "vllm/model_executor/layers/layernorm.py::RMSNorm.forward, "
    "vllm/model_executor/layers/linear.py::ReplicatedLinear.forward, "
    "vllm/model_executor/layers/linear.py::ColumnParallelLinear.forward, "
    "vllm/model_executor/layers/logits_processor.py::LogitsProcessor.forward"
)
INITS = (
    "vllm/core/scheduler.py::Scheduler.__init__, "
    "vllm/engine/async_llm_engine.py::_make_stream_cls.<locals>.AsyncStream.__init__, "
    "vllm/engine/async_llm_engine.py::AsyncLLMEngine.__init__, "
    "vllm/engine/llm_engine.py::LLMEngine.__init__, "
    "vllm/model_executor/layers/layernorm.py::RMSNorm.__init__, "
    "vllm/model_executor/layers/linear.py::LinearBase.__init__, "
    "vllm/model_executor/layers/linear.py::ColumnParallelLinear.__init__, "
    "vllm/model_executor/layers/logits_processor.py::LogitsProcessor.__init__"
)
DS = "vllm/model_executor/models/deepseek_v4"
PICK = "(hint: write PATH::QUALNAME to pick one)"

ERRORS = [
    pytest.param(
        "vllm@v9.9.9:vllm/utils.py::cdiv", UnindexedVersion,
        "vllm@v9.9.9 is neither indexed nor configured (vllm has v0.1.0, v0.2.0, v0.3.0) "
        "(hint: fix the version, or run 'annotate index vllm@v9.9.9' to index it)",
        id="version-not-indexed",
    ),
    pytest.param(
        f"{GH}/v9.9.9/vllm/utils.py#L1", UnindexedVersion,
        "vllm@v9.9.9 is neither indexed nor configured (vllm has v0.1.0, v0.2.0, v0.3.0) "
        "(hint: fix the version, or run 'annotate index vllm@v9.9.9' to index it)",
        id="permalink-version-not-indexed",
    ),
    pytest.param(
        "nope@v1:a.py::b", ResolveError,
        "unknown repo 'nope' (hint: configured repos are: lmcache, vllm "
        "(add it as [repos.nope] in annotate.toml))",
        id="unknown-repo",
    ),
    pytest.param(
        "vLLM@v0.1.0:vllm/utils.py::cdiv", ResolveError,
        "unknown repo 'vLLM' (hint: did you mean 'vllm'? configured repos are: lmcache, vllm)",
        id="unknown-repo-in-another-case",
    ),
    pytest.param(
        "lmcach@v0.1.0:lmcache/a.py::b", ResolveError,
        "unknown repo 'lmcach' (hint: did you mean 'lmcache'? configured repos are: lmcache, "
        "vllm)",
        id="unknown-repo-misspelt",
    ),
    pytest.param(
        "llm@v0.1.0:vllm/utils.py::cdiv", ResolveError,
        "unknown repo 'llm' (hint: did you mean 'vllm'? configured repos are: lmcache, vllm)",
        id="unknown-repo-one-edit-from-a-short-name",
    ),
    pytest.param(
        "lm@v0.1.0:a.py::b", ResolveError,
        "unknown repo 'lm' (hint: configured repos are: lmcache, vllm "
        "(add it as [repos.lm] in annotate.toml))",
        id="unknown-repo-two-edits-are-half-a-short-name",
    ),
    pytest.param(
        "vllm-omni@v0.1.0:vllm_omni/a.py::b", ResolveError,
        "unknown repo 'vllm-omni' (hint: configured repos are: lmcache, vllm "
        "(add it as [repos.vllm-omni] in annotate.toml))",
        id="unknown-repo-a-sibling-of-a-configured-one",
    ),
    pytest.param(
        "lmcache-ext@v0.1.0:a.py::b", ResolveError,
        "unknown repo 'lmcache-ext' (hint: configured repos are: lmcache, vllm "
        "(add it as [repos.lmcache-ext] in annotate.toml))",
        id="unknown-repo-named-after-a-configured-one",
    ),
    pytest.param(
        "https://github.com/acme/widgets/blob/v1/a.py#L1", ResolveError,
        "github.com/acme/widgets is not a configured repo "
        "(hint: add it as [repos.NAME] in annotate.toml with github = \"ORG/NAME\")",
        id="permalink-unknown-github-repo",
    ),
    pytest.param(
        "vllm/utils.py::cdiv", ResolveError,
        "'vllm/utils.py::cdiv' names no version (hint: add 'at: REPO@VERSION' to the claim "
        "or file, or write REPO@VERSION: first)",
        id="no-pin",
    ),
    pytest.param(
        "vllm@v0.3.0:vllm/worker/cache_engine.py::CacheEngine", ResolveError,
        "path 'vllm/worker/cache_engine.py' does not exist at vllm@v0.3.0 "
        "(hint: it is defined at vllm@v0.1.0, vllm@v0.2.0: write vllm@v0.2.0:vllm/worker/"
        "cache_engine.py::CacheEngine; at vllm@v0.3.0, did you mean "
        "'vllm/v1/worker/cache_engine.py', 'vllm/engine/llm_engine.py' or "
        "'vllm/config/cache.py'?)",
        id="path-of-older-versions-missing-did-you-mean",
    ),
    pytest.param(
        "vllm@v0.1.0:vllm/utls.py::cdiv", ResolveError,
        "path 'vllm/utls.py' does not exist at vllm@v0.1.0 "
        "(hint: did you mean 'vllm/utils.py' or 'vllm/__init__.py'?)",
        id="path-missing-several-close",
    ),
    pytest.param(
        "vllm@v0.1.0:kernels/zzz.rs#L1", ResolveError,
        "path 'kernels/zzz.rs' does not exist at vllm@v0.1.0 (hint: check the path)",
        id="path-missing-nothing-close",
    ),
    pytest.param(
        "vllm@v0.2.0:vllm/compilation/cuda_graph.py::capture_graph", ResolveError,
        "no symbol 'capture_graph' in vllm/compilation/cuda_graph.py at vllm@v0.2.0 "
        "(hint: it is defined at vllm@v0.1.0: write vllm@v0.1.0:vllm/compilation/"
        "cuda_graph.py::capture_graph; at vllm@v0.2.0, closest: 'capture_cudagraph')",
        id="qualname-of-an-older-version-missing-closest",
    ),
    pytest.param(
        "vllm@v0.1.0:vllm/utils.py::Nothing.like.this", ResolveError,
        "no symbol 'Nothing.like.this' in vllm/utils.py at vllm@v0.1.0 "
        "(hint: check the qualname)",
        id="qualname-missing-nothing-close",
    ),
    pytest.param(
        "vllm@v0.1.0:vllm.utils.cdivv", ResolveError,
        "no symbol 'cdivv' in vllm/utils.py at vllm@v0.1.0 (hint: closest: 'cdiv')",
        id="dotted-qualname-missing-in-longest-module",
    ),
    pytest.param(
        "vllm@v0.1.0:vllm.platforms.interfaces.Platform", ResolveError,
        "no module 'vllm.platforms.interfaces' at vllm@v0.1.0 (hint: did you mean "
        "'vllm.platforms.interface'?)",
        id="dotted-module-misspelt-in-a-package",
    ),
    pytest.param(
        "vllm@v0.1.0:vllm.platforms.DEFAULT_DEVICES", ResolveError,
        "no symbol 'DEFAULT_DEVICES' in vllm/platforms/__init__.py at vllm@v0.1.0 "
        "(hint: closest: 'DEFAULT_DEVICE')",
        id="dotted-symbol-misspelt-in-a-package-init",
    ),
    pytest.param(
        "vllm@v0.1.0:vllm.CacheConfig.no_such_member", ResolveError,
        f"no symbol 'CacheConfig.no_such_member' in {CACHE} at vllm@v0.1.0 "
        "(hint: closest: 'CacheConfig.swap_space', 'CacheConfig.block_size' or "
        "'CacheConfig.cache_dtype')",
        id="dotted-name-imported-by-a-package-init-lacks-the-member",
    ),
    pytest.param(
        "vllm@v0.1.0:vllm.CacheConfg", ResolveError,
        "no symbol 'CacheConfg' in vllm/__init__.py at vllm@v0.1.0 (hint: closest: "
        "'CacheConfig')",
        id="dotted-name-a-package-init-imports-misspelt",
    ),
    pytest.param(
        "vllm@v0.1.0:no_such_name", ResolveError,
        "no module or symbol 'no_such_name' at vllm@v0.1.0 "
        "(hint: write PATH::QUALNAME, or a dotted name starting with the module)",
        id="short-name-missing",
    ),
    pytest.param(
        "vllm@v0.1.0:CacheConfg", ResolveError,
        "no module or symbol 'CacheConfg' at vllm@v0.1.0 (hint: closest: 'CacheConfig' or "
        "'CacheEngine')",
        id="short-name-misspelt",
    ),
    pytest.param(
        "vllm@v0.1.0:CacheConfg.block_size", ResolveError,
        "no module or symbol 'CacheConfg.block_size' at vllm@v0.1.0 (hint: closest: "
        "'CacheConfig.block_size')",
        id="short-qualname-of-a-misspelt-class",
    ),
    pytest.param(
        "vllm@v0.1.0:CacheConfig.blok_size", ResolveError,
        "no module or symbol 'CacheConfig.blok_size' at vllm@v0.1.0 (hint: closest: "
        "'CacheConfig.block_size')",
        id="short-qualname-of-a-misspelt-member",
    ),
    pytest.param(
        "vllm@v0.1.0:mla_enabled", ResolveError,
        "no module or symbol 'mla_enabled' at vllm@v0.1.0 (hint: it is defined at "
        "lmcache@v0.5.1: write lmcache@v0.5.1:mla_enabled)",
        id="short-name-of-another-repo",
    ),
    pytest.param(
        "vllm@v0.1.0:forward", AmbiguousRef,
        f"'forward' matches 4 symbols at vllm@v0.1.0: {FORWARDS} {PICK}",
        id="short-name-ambiguous",
    ),
    pytest.param(
        "vllm@v0.3.0:DeepseekV4ForCausalLM.forward", AmbiguousRef,
        "'DeepseekV4ForCausalLM.forward' matches 3 symbols at vllm@v0.3.0: "
        f"{DS}_amd.py::DeepseekV4ForCausalLM.forward, "
        f"{DS}_nvidia.py::DeepseekV4ForCausalLM.forward, "
        f"{DS}_xpu.py::DeepseekV4ForCausalLM.forward {PICK}",
        id="dotted-qualname-ambiguous",
    ),
    pytest.param(
        "vllm@v0.1.0:__init__", AmbiguousRef,
        f"'__init__' matches 10 symbols at vllm@v0.1.0: {INITS} and 2 more {PICK}",
        id="short-name-ambiguous-list-is-capped",
    ),
    pytest.param(
        "vllm@v0.1.0:README.md#L2-L9", ResolveError,
        "lines 2-9 are past the end of README.md (3 lines) at vllm@v0.1.0 "
        "(hint: check the line range)",
        id="lines-past-end",
    ),
    pytest.param(
        f"{GH}/v0.1.0/README.md#L4", ResolveError,
        "lines 4-4 are past the end of README.md (3 lines) at vllm@v0.1.0 "
        "(hint: check the line range)",
        id="permalink-lines-past-end",
    ),
    pytest.param(
        "vllm@v0.1.0:lmcache/integration/vllm/utils.py::mla_enabled", ResolveError,
        "path 'lmcache/integration/vllm/utils.py' is not in vllm@v0.1.0; it is in "
        "lmcache@v0.5.1 (hint: pin the ref at lmcache@v0.5.1 ('lmcache@v0.5.1:' before its "
        "path))",
        id="path-of-another-repo",
    ),
    pytest.param(
        "vllm@v0.1.0:vllm.config.cache", ResolveError,
        "'vllm.config.cache' is the module vllm/config/cache.py at vllm@v0.1.0, not a symbol "
        "(hint: name a symbol in it, or write vllm@v0.1.0:vllm/config/cache.py#Lx-Ly for its "
        "lines)", id="dotted-module",
    ),
    pytest.param(
        "vllm@v0.1.0:vllm.config", ResolveError,
        "'vllm.config' is the module vllm/config/__init__.py at vllm@v0.1.0, not a symbol "
        "(hint: name a symbol in it, or write vllm@v0.1.0:vllm/config/__init__.py#Lx-Ly for "
        "its lines)", id="dotted-package",
    ),
]


@pytest.mark.parametrize(("text", "error_type", "message"), ERRORS)
def test_resolve_errors(
    resolver: Resolver, text: str, error_type: type[ResolveError], message: str
) -> None:
    with pytest.raises(ResolveError) as caught:
        resolver.resolve(parse_ref(text))
    assert type(caught.value) is error_type
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("carry", "where"),
    [
        pytest.param(lambda error: error.located("a.yml", 7), "a.yml:7", id="located"),
        pytest.param(lambda error: pickle.loads(pickle.dumps(error)), "3", id="pickled"),
    ],
)
def test_an_unindexed_version_keeps_its_pin_when_located_or_pickled(
    carry: Callable[[UnindexedVersion], AnnotationError], where: str
) -> None:
    error = UnindexedVersion("vllm", "v0.2", Unindexed("vllm@v0.2 is not indexed", "h", "v0.2.0"))
    carried = carry(error.located(line=3))
    assert isinstance(carried, UnindexedVersion)
    assert (carried.repo, carried.version, carried.misspelling_of) == ("vllm", "v0.2", "v0.2.0")
    assert str(carried) == f"{where}: vllm@v0.2 is not indexed (hint: h)"


# -- helpers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quote", "stands"),
    [
        pytest.param("gpu_memory_utilization: float = 0.9", True, id="exact"),
        pytest.param("gpu_memory_utilization:   float\n = 0.9", True, id="white-space-runs"),
        pytest.param("gpu_memory_utilization: float = 0.92", False, id="other-value"),
        pytest.param("gpu_memory_utilization: float = 0", False, id="cut-number"),
        pytest.param("gpu_memory_util", False, id="cut-name-end"),
        pytest.param("memory_utilization: float", False, id="cut-name-start"),
        pytest.param("utilization: float = 0.9", False, id="cut-name-start-after-underscore"),
        pytest.param("float = 0.9", True, id="whole-tokens"),
        pytest.param(": float =", True, id="punctuation-at-both-ends"),
        pytest.param("= 0.", True, id="ends-on-punctuation"),
    ],
)
def test_quote_stands(quote: str, stands: bool) -> None:
    assert quote_stands(quote, "    gpu_memory_utilization: float = 0.9\n") is stands


def test_quote_stands_after_an_occurrence_that_cuts_a_token() -> None:
    # The first "= 0" is a piece of "= 0.9"; the search goes on to the one that stands.
    assert quote_stands("= 0", "x = 0.9\ny = 0\n")


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        pytest.param("", [], id="empty"),
        pytest.param("a", ["a"], id="no-final-newline"),
        pytest.param("a\n", ["a\n"], id="final-newline"),
        pytest.param("a\r\nb\n\n", ["a\r\n", "b\n", "\n"], id="crlf-and-blank"),
        pytest.param("\f\nx = 'a\u2028b'\x85\n", ["\f\n", "x = 'a\u2028b'\x85\n"],
                     id="only-newline-ends-a-line"),
        pytest.param("a\rb\r\nc", ["a\rb\r\n", "c"], id="a-lone-cr-is-made-a-lf-before"),
    ],
)
def test_split_lines(text: str, lines: list[str]) -> None:
    assert split_lines(text) == lines


# -- lines are counted like git and the indexer count them ---------------------------------------

FORM_FEED_SOURCE = (
    '"""Page one."""\n'  # 1
    "\f\n"  # 2: a page break, as PEP 8 allows
    "def before():\n"  # 3
    '    return "a\u2028b"\n'  # 4: LINE SEPARATOR inside a string
    "\n"  # 5
    "\n"  # 6
    "def after():\n"  # 7
    "    return 1\n"  # 8
)


@pytest.fixture
def form_feed_project(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    fv.git(repo, "-c", "init.defaultBranch=main", "init", "-q", ".")
    (repo / "ff.py").write_text(FORM_FEED_SOURCE, encoding="utf-8")
    fv.git(repo, "add", "-A")
    fv.git(repo, "commit", "-q", "-m", "one")
    fv.git(repo, "tag", "v1")
    project = tmp_path / "project"
    project.mkdir()
    (project / "annotate.toml").write_text(
        f'[repos.ff]\ngit = "{repo.as_uri()}"\ngithub = "acme/ff"\nversions = ["v1"]\n',
        encoding="utf-8",
    )
    done = run_annotate(project, "index", "ff@v1")
    assert done.returncode == 0, done.stderr
    return project


def test_form_feed_and_line_separator_do_not_shift_lines(form_feed_project: Path) -> None:
    with open_database(form_feed_project / ".annotate" / "index.db", create=False) as database:
        resolver = Resolver(database, load_config(form_feed_project))
        symbol = resolver.resolve(parse_ref("ff@v1:ff.py::after"))
        lines = resolver.resolve(parse_ref("ff@v1:ff.py#L4-L8"))
        assert (symbol.start_line, symbol.end_line) == (7, 8)
        assert resolver.text_of(symbol) == "def after():\n    return 1\n"
        assert resolver.text_of(lines) == '    return "a\u2028b"\n\n\ndef after():\n    return 1\n'
        with pytest.raises(ResolveError, match="lines 9-9 are past the end of ff.py"):
            resolver.resolve(parse_ref("ff@v1:ff.py#L9"))
    config = str(form_feed_project / "annotate.toml")
    result = CliRunner().invoke(cli, ["--config", config, "show", "ff@v1:ff.py::after"])
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == (
        "# ff@v1:ff.py::after\n"
        "# https://github.com/acme/ff/blob/v1/ff.py#L7-L8\n"
        "7  def after():\n"
        "8      return 1\n"
    )


IMPORTS_TREE = {
    "pkg/__init__.py": "from .impl import *\nfrom .named import Named as Renamed\n",
    "pkg/impl.py": "class Starred:\n    size = 1\n",
    "pkg/named.py": "class Named:\n    pass\n",
    "pkg/lazy.py": (
        "def build():\n    from pkg.named import Named\n    return Named\n\n\n"
        "class Holder:\n    from pkg.impl import Starred\n"
    ),
}


@pytest.fixture
def imports_resolver(tmp_path: Path) -> Iterator[Resolver]:
    source = write_tree(tmp_path / "src", IMPORTS_TREE)
    (tmp_path / "annotate.toml").write_text('[repos.pkg]\ngithub = "acme/pkg"\n')
    config = load_config(tmp_path)
    with open_database(tmp_path / "index.db") as database:
        index_version(database, config, "pkg", "v1", from_path=source)
        yield Resolver(database, config)


SPANS_TREE = {
    "pkg/spans.py": (
        "low = high = 0\n\n\nclass Box:\n    width = height = 1\n\n    def area(self):\n"
        "        return self.width * self.height\n"
    ),
}


@pytest.mark.parametrize(("lines", "canonical"), [
    pytest.param("L1", "pkg/spans.py::low", id="equal-spans-the-first-in-source-order"),
    pytest.param("L5", "pkg/spans.py::Box.width", id="equal-spans-inside-a-class"),
    pytest.param("L8", "pkg/spans.py::Box.area", id="the-method-not-its-class"),
    pytest.param("L5-L8", "pkg/spans.py::Box", id="over-two-members-the-class"),
    pytest.param("L2-L3", "pkg/spans.py#L2-L3", id="covered-by-none-the-lines"),
])
def test_a_permalink_cites_the_innermost_symbol_covering_its_lines(
    tmp_path: Path, lines: str, canonical: str
) -> None:
    source = write_tree(tmp_path / "src", SPANS_TREE)
    (tmp_path / "annotate.toml").write_text('[repos.pkg]\ngithub = "acme/pkg"\n')
    config = load_config(tmp_path)
    with open_database(tmp_path / "index.db") as database:
        index_version(database, config, "pkg", "v1", from_path=source)
        resolved = Resolver(database, config).resolve(
            parse_ref(f"https://github.com/acme/pkg/blob/v1/pkg/spans.py#{lines}"))
    assert resolved.canonical == f"pkg@v1:{canonical}"


@pytest.mark.parametrize(("dotted", "canonical"), [
    pytest.param("pkg.Starred.size", "pkg/impl.py::Starred.size", id="through-a-star-import"),
    pytest.param("pkg.Renamed", "pkg/named.py::Named", id="through-an-alias"),
    pytest.param("pkg.lazy.Named", None, id="not-a-functions-lazy-import"),
    pytest.param("pkg.lazy.Starred", None, id="not-a-class-bodys-import"),
])
def test_a_dotted_name_follows_the_imports_that_bind_module_names(
    imports_resolver: Resolver, dotted: str, canonical: str | None
) -> None:
    ref = parse_ref(f"pkg@v1:{dotted}")
    if canonical is None:
        with pytest.raises(ResolveError):
            imports_resolver.resolve(ref)
    else:
        assert imports_resolver.resolve(ref).canonical == f"pkg@v1:{canonical}"


@pytest.mark.parametrize(("text", "canonical"), [
    pytest.param(f"vllm@v0.1.0:vllm.{UTIL}", f"vllm@v0.1.0:{CACHE}::{UTIL}",
                 id="a-name-a-package-init-imports"),
    pytest.param("vllm@v0.1.0:vllm.AsyncEngine",
                 "vllm@v0.1.0:vllm/engine/async_llm_engine.py::AsyncLLMEngine",
                 id="a-name-imported-under-an-alias"),
])
def test_a_re_exported_name_is_resolved_without_looking_at_other_versions(
    indexed: Path, text: str, canonical: str
) -> None:
    """The package's __init__.py does not define it, but imports it: that is no broken
    ref, so the hint of one (the versions whose file defines it, one query each) is not
    made."""
    with open_database(indexed / ".annotate" / "index.db", create=False) as database:
        resolver = Resolver(database, load_config(indexed))
        resolver.version_key("vllm", "v0.1.0")
        statements: list[str] = []
        database.conn.set_trace_callback(statements.append)
        resolved = resolver.resolve(parse_ref(text))
        database.conn.set_trace_callback(None)
    assert resolved.canonical == canonical
    assert [statement for statement in statements if "FROM versions" in statement] == []


@pytest.mark.parametrize("text", [
    pytest.param(param.values[0], id=f"{kind}-{param.id}")
    for kind, table in (("resolves", RESOLVES), ("fails", ERRORS)) for param in table
])
def test_a_resolver_is_freed_when_dropped_without_waiting_for_the_collector(
        indexed: Path, text: str) -> None:
    """Its caches hold ~140 MB after a big collection's link: they must go with it, not
    at the next collection (a cache over its own bound methods, or an error raised while
    a frame holds it, made a cycle)."""
    database = open_database(indexed / ".annotate" / "index.db", create=False)
    gc.disable()
    try:
        resolver = Resolver(database, load_config(indexed))
        with contextlib.suppress(ResolveError):
            resolver.text_of(resolver.resolve(parse_ref(text)))
        freed = weakref.ref(resolver)
        del resolver
        assert freed() is None
    finally:
        gc.enable()
        database.close()
