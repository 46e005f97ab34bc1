"""``annotate check`` end to end: real indexing, real annotation files, every status and format.

Two indexes are built once per module and copied into each test's directory:

* ``table``: purpose-built trees (``vllm@v1`` and ``vllm@v2``, one directory per case of
  `CASES`), indexed with ``annotate index vllm@vN --from DIR``;
* ``fake``: the fake vLLM repository (tags v0.1.0, v0.2.0, v0.3.0) through ``annotate.toml``.
"""

from __future__ import annotations

import contextlib
import datetime
import gc
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import fakevllm
import jsonschema
import pytest
from click.testing import CliRunner, Result
from fakeproject import DB, connected, copy_project, isolate, write_tree
from fakeproject import write_file as write
from fakevllm import FakeRepo
from inlined_code import FP8_INLINED, SUPPORTS_FP8

from annotate_cli import cli
from annotations import code_lines, comparison, links, matching, xref
from annotations.check import CheckOptions, check_linked
from annotations.links import annotation_files, replaces_an_input
from annotations.loader import link_claim_id
from annotations.matching import SourceStore
from annotations.resolve import Resolver
from annotations.results import Status
from db.database import open_database
from indexer.config import load_config

SCHEMA_PATH = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
RESULT_KEYS = {"article", "claim", "line", "ref", "resolved", "target", "status", "changes",
               "new_ref", "candidates", "message"}


# --- helpers ----------------------------------------------------------------------------


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="annotate")


def check_json(*args: str) -> tuple[int, dict]:
    result = run("check", "--format", "json", *args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout)


def by_claim(report: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for result in report["results"]:
        found.setdefault(result["claim"], []).append(result)
    return found


def claim_yaml(claim_id: str, refs: list[str], text: str = "x") -> str:
    lines = [f"  - id: {claim_id}", f"    text: \"{text}\"", "    refs:"]
    lines += [f"      - {ref}" for ref in refs]
    return "\n".join(lines) + "\n"


def annotation(article: str, at: str, claims: str) -> str:
    return f"article: {article}\nat: {at}\nclaims:\n{claims}"


def _module_env(patch: pytest.MonkeyPatch, root: Path) -> None:
    """What conftest's per-test isolation does, for a module-scoped fixture."""
    isolate(patch, root / "xdg-cache")
    patch.chdir(root)


# --- the table: (old source, new source) -> status and kinds -----------------------------


@dataclass(frozen=True)
class Case:
    """``old`` is the file ``path`` at v1; ``new`` the same file at v2, or None when it is
    gone, or the files v2 has instead ({path: source}).

    Paths and refs are relative to the case's own directory ``c/<id>/``; ``ref`` is pinned by
    the file's ``at: vllm@v1`` unless it names its own version. ``both`` are files present
    unchanged in both versions.
    """

    old: str
    new: str | dict[str, str] | None
    ref: str
    status: str
    kinds: tuple[str, ...] = ()
    new_ref: str | None = None
    candidates: int = 0
    message: str | None = None
    path: str = "m.py"
    both: dict[str, str] = field(default_factory=dict)  # files in both versions
    quote: str | None = None
    uses: tuple[str, ...] = ()


# The lines of SUPPORTS_FP8 and FP8_INLINED, which another case has: where its code went
# are places of these alone.
FP4_SUPPORT, FP4_INLINED = (text.replace("== 3", "== 4").replace("(90)", "(100)")
                            for text in (SUPPORTS_FP8, FP8_INLINED))
EVICT = """\
class Pool:
    def evict(self, block_hash):
        if self.cached.pop(block_hash, None) is None:
            return False
        self.events.append(Removed(block_hash))
        return True
"""
# BlockPool._maybe_evict_cached_block at vLLM v0.25.0: its event is made by a helper.
EVICT_WITH_HELPER = """\
class Pool:
    def evict(self, block_hash):
        if self.cached.pop(block_hash, None) is None:
            return False
        self._emit_removed(block_hash)
        return True

    def _emit_removed(self, block_hash):
        if self.enable_events:
            self.events.append(Removed(block_hash))
"""
TOTAL = "def total(xs):\n    return sum(x for x in xs if x is not None)\n"
CONNECT = "def connect(host, port):\n    sock = open_socket(host, port)\n    return sock\n"
CDIV = 'def cdiv(a: int, b: int) -> int:\n    """Ceiling division."""\n    return -(a // -b)\n'
CDIV_NEW = CDIV.replace("-(a // -b)", "(a + b - 1) // b")
# A form feed and a line separator in strings: no line ends there, for Python, git or the
# index (`str.splitlines` would end one at each).
PAGE = 'def page():\n    sep = "\x0c\u2028"\n    return sep + "x"\n'
MEMORY = (
    "@functools.lru_cache(maxsize=None)\ndef get_cpu_memory() -> int:\n"
    "    return psutil.virtual_memory().total\n"
)
COLUMN = '''\
class ColumnLinear({base}):
    """Linear layer with column parallelism."""

    def __init__(self, input_size: int, output_size: int, tp_size: int = 1) -> None:
        super().__init__()
        self.output_size_per_partition = output_size // tp_size

    def forward(self, x):
        return F.linear(x, self.weight)
'''
PARAMS = '''\
class SamplingParams:
    def __init__(self, n: int = 1, temperature: float = 1.0) -> None:
        self.n = n
        self.temperature = temperature

    def __repr__(self) -> str:
        return f"SamplingParams(n={self.n}, temperature={self.temperature})"
'''
PARAMS_CLONE = PARAMS + '''
    def clone(self) -> "SamplingParams":
        return copy.deepcopy(self)
'''
CONFIG = "class CacheConfig:\n    block_size: int = 16\n    utilization: float = {util}\n"
ENGINE = fakevllm.CACHE_ENGINE_CLASS
SWAP_ENGINE = ENGINE.replace("CacheEngine", "SwapEngine").replace(
    "Manages the KV cache.", "Swaps blocks between the GPU and the CPU.")
CAPTURE = fakevllm.CAPTURE_TEMPLATE
TRACE = CAPTURE.replace("synchronize()", "current_stream().synchronize()")
REPLAY = CAPTURE.replace("torch.cuda.synchronize()", "graph.replay()")
SPARSE = """\
class SparseBackend(AttentionBackend):
    accept_output_buffer = True

    @staticmethod
    def get_name() -> str:
        return "SPARSE_MLA"

    @staticmethod
    def get_impl_cls():
        return SparseImpl

    @classmethod
    def supports_compute_capability(cls, capability) -> bool:
        return capability.major == 10

    @classmethod
    def supports_combination(cls, head_size, dtype, kv_cache_dtype, block_size) -> str | None:
        if kv_cache_dtype not in ("auto", "fp8"):
            return "only auto and fp8 caches"
        if block_size not in (32, 64):
            return "block size must be 32 or 64"
        return None

    @staticmethod
    def get_kv_cache_shape(num_blocks, block_size, num_kv_heads, head_size):
        return (num_blocks, block_size, head_size)
"""
SPARSE_SPLIT = """\
class _SparseBackendBase(AttentionBackend):
    accept_output_buffer = True

    @staticmethod
    def get_name() -> str:
        return "SPARSE_MLA"


class SparseTRTBackend(_SparseBackendBase):
    @staticmethod
    def get_impl_cls():
        return SparseImpl

    @classmethod
    def supports_compute_capability(cls, capability) -> bool:
        return capability.major == 10

    @classmethod
    def supports_combination(cls, head_size, dtype, kv_cache_dtype, block_size) -> str | None:
        if kv_cache_dtype not in ("auto", "fp8"):
            return "only auto and fp8 caches"
        if block_size not in (32, 64):
            return "block size must be 32 or 64"
        return None

    @staticmethod
    def get_kv_cache_shape(num_blocks, block_size, num_kv_heads, head_size):
        return (num_blocks, block_size, head_size)


class SparseSM120Backend(_SparseBackendBase):
    @staticmethod
    def get_name() -> str:
        return "SPARSE_MLA_SM120"

    @staticmethod
    def get_impl_cls():
        return SparseSM120Impl

    @classmethod
    def supports_compute_capability(cls, capability) -> bool:
        return capability.major == 12

    @classmethod
    def supports_combination(cls, head_size, dtype, kv_cache_dtype, block_size) -> str | None:
        if kv_cache_dtype != "fp8_ds_mla":
            return "only fp8_ds_mla caches"
        return None

    @staticmethod
    def get_kv_cache_shape(num_blocks, block_size, num_kv_heads, head_size):
        return (num_blocks, block_size, 656)
"""
HANDLERS = """\
class IntHandler:
    pass


class StrHandler:
    pass


HANDLERS: dict[type, type] = {
    int: IntHandler,
    str: StrHandler,
}


def handler_for(value):
    handler_class = HANDLERS[type(value)]
    return handler_class(value)
"""
HANDLERS_REGISTERED = HANDLERS[:HANDLERS.index("HANDLERS")] + """\
class HandlerRegistry:
    _handlers: dict[type, type] = {}

    @classmethod
    def register(cls, kind, handler) -> None:
        cls._handlers[kind] = handler

    @classmethod
    def get(cls, value):
        return cls._handlers[type(value)]


def register_handlers() -> None:
    HandlerRegistry.register(int, IntHandler)
    HandlerRegistry.register(str, StrHandler)


def handler_for(value):
    handler_class = HandlerRegistry.get(value)
    return handler_class(value)
"""
EAGER = "def replay_eager(model, input_ids, positions):\n    return model(input_ids, positions)\n"
NEURON = fakevllm.UTILS_V1[fakevllm.UTILS_V1.index("def is_neuron"):]
PREFIX = '''\
def longest_common_prefix(words):
    if not words:
        return ""
    first, last = min(words), max(words)
    for i, ch in enumerate(first):
        if ch != last[i]:
            return first[:i]
    return first
'''
LOAD = fakevllm.LOAD_WEIGHTS_FROM_FILE
FETCH = fakevllm.LOAD_WEIGHTS_FROM_URL
MODEL = fakevllm.DEEPSEEK_V4_TEMPLATE
# DeepseekV4DecoderLayer.forward at vLLM v0.25.0: fused in one per-platform copy, and its
# code in a method of its own in another (a class of its own: not moved-ambiguous's copies).
KIMI = MODEL.replace("DeepseekV4ForCausalLM", "KimiForCausalLM").replace("hidden_states", "x")
_FORWARD = """\
    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        x, _ = self.norm(x, residual)
        return self.lm_head(x)
"""
KIMI_FUSED = KIMI.replace("return self.lm_head(x)", "return self.fused_head(x)")
KIMI_UNFUSED = KIMI.replace(_FORWARD, """\
    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self._forward_unfused(x, residual)

""" + _FORWARD.replace("def forward", "def _forward_unfused"))
MLA = "class MLA:\n    def __init__(self):\n        self.proj = Helper()\n        self.dim = 576\n"
HELPER = "class Helper:\n    def run(self):\n        return 42\n"
HELPER_USED = PARAMS.replace("SamplingParams", "Helper") + "\n\n" + MLA
KERNEL = "// paged attention\n#include <cuda.h>\n\n__global__ void kernel(float* out) {\n" \
         "  out[0] = 1.0f;\n}\n"
LAUNCH = "\nvoid launch(float* out, cudaStream_t stream) {\n" \
         "  kernel<<<1, 1, 0, stream>>>(out);\n}\n"

SUFFIX = PREFIX.replace("prefix", "suffix").replace("min(words)", "min(w[::-1] for w in words)")
METHODS = 'Method = Literal[\n    "ngram",\n    "suffix",\n    Eagle,\n]\n'
KDA = """\
def kda_attention(q, k, v, layer_name):
    return lookup(layer_name).forward(q, k, v)


register_custom_op(
    op_name="kda_attention",
    op_func=kda_attention,
)
"""

# A quote of code must stand in code: not only in a comment or docstring that keeps its text.
FRACTION = "def memory_fraction(total):\n{doc}    return Field(total, default={value}, ge=0)\n"
DOCSTRING = '    """The share of memory to use{note}."""\n'
FRACTION_LOWERED = FRACTION.format(doc="    # default=0.92 was too high\n", value="0.9")
HEADROOM = FRACTION.format(doc="    # keep 8% headroom\n", value="{value}")
UTILIZATION = 'class CacheConfig:\n    utilization: float = {value}\n    """{doc}"""\n'
BACKEND = "def backend():\n    return {call}\n"

CASES: dict[str, Case] = {
    "fresh-file-unchanged": Case(TOTAL, TOTAL, "m.py::total", "fresh", message="unchanged"),
    "fresh-rest-of-file-changed": Case(
        TOTAL + "\nLIMIT = 1\n", TOTAL + "\nLIMIT = 2\n", "m.py::total", "fresh",
    ),
    "cosmetic-comment": Case(
        TOTAL, TOTAL.replace("    return", "    # skip the gaps\n    return"), "m.py::total",
        "cosmetic",
    ),
    "cosmetic-docstring": Case(
        CDIV, CDIV.replace("Ceiling division.", "Divide, rounding up."), "m.py::cdiv",
        "cosmetic",
    ),
    "cosmetic-reformat": Case(
        CONNECT, CONNECT.replace("open_socket(host, port)", "open_socket(\n        host,\n"
                                 "        port,\n    )"),
        "m.py::connect", "cosmetic",
    ),
    "changed-signature": Case(
        CONNECT, CONNECT.replace("(host, port)", "(host, port=29500)", 1), "m.py::connect",
        "changed", ("signature",),
        message="signature changed: def connect(host, port) -> def connect(host, port=29500)",
    ),
    "changed-decorator": Case(
        MEMORY, MEMORY.replace("lru_cache(maxsize=None)", "cache"), "m.py::get_cpu_memory",
        "changed", ("signature",),
    ),
    "changed-body-with-a-form-feed": Case(PAGE, PAGE.replace('"x"', '"y"'), "m.py::page",
                                          "changed", ("body",)),
    "changed-body": Case(CDIV, CDIV_NEW, "m.py::cdiv", "changed", ("body",),
                         message="body changed"),
    "changed-signature-and-body": Case(
        CONNECT, CONNECT.replace("(host, port)", "(host, port, timeout)").replace(
            "return sock", "return sock.settimeout(timeout) or sock"),
        "m.py::connect", "changed", ("signature", "body"),
    ),
    "changed-bases": Case(
        COLUMN.format(base="nn.Module"), COLUMN.format(base="LinearBase"), "m.py::ColumnLinear",
        "changed", ("bases",), message="bases changed: (nn.Module) -> (LinearBase)",
    ),
    "changed-members": Case(PARAMS, PARAMS_CLONE, "m.py::SamplingParams", "changed",
                            ("members",), message="members changed: added clone"),
    "changed-member-body": Case(
        COLUMN.format(base="Base"), COLUMN.format(base="Base").replace("self.weight)", "w)"),
        "m.py::ColumnLinear", "changed", ("body",),
    ),
    "changed-class-attribute": Case(
        CONFIG.format(util="0.9"), CONFIG.format(util="0.92"), "m.py::CacheConfig.utilization",
        "changed", ("value",), message="value changed: 0.9 -> 0.92",
    ),
    "changed-module-constant": Case(
        "SWAP_SPACE_GIB = 4\n", "SWAP_SPACE_GIB = 8\n", "m.py::SWAP_SPACE_GIB", "changed",
        ("value",), message="value changed: 4 -> 8",
    ),
    "changed-annotation-and-value": Case(
        'EFFORT: Literal["low", "high"] | None = None\n',
        'EFFORT: Literal["low", "high", "max"] | None = "low"\n', "m.py::EFFORT", "changed",
        ("annotation", "value"),
        message='annotation changed: Literal["low", "high"] | None -> '
                'Literal["low", "high", "max"] | None; value changed: None -> "low"',
    ),
    "moved-to-another-file": Case(
        '"""Old."""\n' + ENGINE, {"v1/m.py": '"""New."""\n' + ENGINE}, "m.py::CacheEngine",
        "moved", new_ref="v1/m.py::CacheEngine",
    ),
    "moved-renamed": Case(
        CAPTURE.format(name="capture_graph"), CAPTURE.format(name="capture_cudagraph"),
        "m.py::capture_graph", "moved", new_ref="m.py::capture_cudagraph",
    ),
    "moved-and-changed": Case(
        SWAP_ENGINE,
        {"v1/engine.py": SWAP_ENGINE.replace("(self.num_layers):", "(self.num_layers - 1):")},
        "m.py::SwapEngine", "moved", ("body",), new_ref="v1/engine.py::SwapEngine",
        message="body changed",
    ),
    "moved-ambiguous": Case(
        MODEL.format(suffix="", backend="auto"),
        {f"ds_{name}.py": MODEL.format(suffix=f" ({name})", backend=backend)
         for name, backend in (("amd", "ROCM_AITER_MLA"), ("nvidia", "FLASHMLA"),
                               ("xpu", "XPU_MLA"))},
        "ds.py::DeepseekV4ForCausalLM", "moved", ("members",), candidates=2, path="ds.py",
        message="several candidates",
    ),
    "moved-old-name-kept-as-alias": Case(  # the name callers use stands, bound to the new one
        CAPTURE.format(name="record_graph"),
        CAPTURE.format(name="record_cudagraph") + "\n\nrecord_graph = record_cudagraph\n",
        "m.py::record_graph", "moved", new_ref="m.py::record_cudagraph",
        message="moved to vllm@v2:c/moved-old-name-kept-as-alias/m.py::record_cudagraph; "
                "record_graph still stands at vllm@v2:c/moved-old-name-kept-as-alias/m.py#L10"
                ", an alias of it: code that uses the old name still works",
    ),
    "moved-old-name-imported-as-alias": Case(
        TRACE.format(name="trace_graph"),
        {"m.py": "from .graphs import trace_cudagraph as trace_graph\n",
         "graphs.py": TRACE.format(name="trace_cudagraph")},
        "m.py::trace_graph", "moved", new_ref="graphs.py::trace_cudagraph",
        message="; trace_graph still stands at vllm@v2:c/moved-old-name-imported-as-alias/"
                "m.py#L1, an alias of it",
    ),
    "moved-old-name-kept-for-another": Case(  # callers of the old name get another function
        REPLAY.format(name="replay_graph"),
        f"{REPLAY.format(name='replay_cudagraph')}\n\n{EAGER}\n\nreplay_graph = replay_eager\n",
        "m.py::replay_graph", "moved", new_ref="m.py::replay_cudagraph",
        message="; replay_graph still stands at vllm@v2:c/moved-old-name-kept-for-another/m.py"
                "#L14, an alias of vllm@v2:c/moved-old-name-kept-for-another/m.py::replay_eager: "
                "code that uses the old name gets that",
    ),
    "moved-class-kept-as-alias": Case(
        ENGINE.replace("CacheEngine", "PagedEngine"),
        ENGINE.replace("CacheEngine", "PagedKVEngine") + "\n\nPagedEngine = PagedKVEngine\n",
        "m.py::PagedEngine", "moved", new_ref="m.py::PagedKVEngine",
        message="; PagedEngine still stands at vllm@v2:c/moved-class-kept-as-alias/m.py#L23, an "
                "alias of it",
    ),
    "moved-split-into-subclasses-of-a-new-base": Case(  # each subclass is where it went
        SPARSE, SPARSE_SPLIT, "m.py::SparseBackend", "moved", ("bases", "members"),
        new_ref="m.py::SparseTRTBackend", candidates=1,
        message="moved to vllm@v2:c/moved-split-into-subclasses-of-a-new-base/m.py::"
                "SparseTRTBackend (several candidates",
    ),
    "moved-renamed-beside-a-class-that-moved-too": Case(  # no split: each class moved
        SPARSE.replace("Sparse", "Grouped") + "\n\n"
        + SPARSE_SPLIT[SPARSE_SPLIT.index("class SparseSM120"):].replace(
            "SparseSM120Backend(_SparseBackendBase)", "IndexedBackend(AttentionBackend)"),
        SPARSE_SPLIT.replace("SparseSM120Backend", "IndexedBackend").replace("Sparse", "Grouped"),
        "m.py::GroupedBackend", "moved", ("bases", "members"), new_ref="m.py::GroupedTRTBackend",
    ),
    "removed": Case(NEURON, NEURON[NEURON.index("def get_open_port"):], "m.py::is_neuron",
                    "removed", message="not found at vllm@v2"),
    "removed-with-candidates": Case(
        LOAD, {"fetch.py": FETCH}, "loader.py::load_weights", "removed", candidates=1,
        path="loader.py", message="closest: vllm@v2:c/removed-with-candidates/fetch.py",
    ),
    "removed-quote-stands-in-a-candidate": Case(
        LOAD, {"fetch.py": FETCH}, "loader.py::load_weights", "removed", candidates=1,
        path="loader.py", quote="def load_weights(model,",
        message="; the quote stands in vllm@v2:c/removed-quote-stands-in-a-candidate/fetch.py"
                "::load_weights",
    ),
    "removed-its-code-went-to": Case(
        SUPPORTS_FP8 + "\n\n" + CDIV, {"m.py": CDIV, "b.py": FP8_INLINED}, "m.py::supports_fp8",
        "removed", message="; its code went to vllm@v2:c/removed-its-code-went-to/b.py"
                           "::FlashBackend.supports_dtype",
    ),
    "removed-quote-stands-where-its-code-went": Case(  # no candidate: only its code went there
        FP4_SUPPORT + "\n\n" + CDIV, {"m.py": CDIV, "b.py": FP4_INLINED}, "m.py::supports_fp8",
        "removed", quote="get_flash_attn_version() == 4",
        message="; the quote stands in vllm@v2:c/removed-quote-stands-where-its-code-went/b.py"
                "::FlashBackend.supports_dtype",
    ),
    "quote-missing": Case(
        CDIV, CDIV_NEW, "m.py::cdiv", "quote-missing", ("body",), quote="-(a // -b)",
        message="the quote '-(a // -b)' no longer stands in vllm@v2:c/quote-missing/m.py::cdiv",
    ),
    "quote-missing-stands-in-a-helper": Case(
        EVICT, EVICT_WITH_HELPER, "m.py::Pool.evict", "quote-missing", ("body",),
        quote="Removed(block_hash)", message=(
            "the quote 'Removed(block_hash)' no longer stands in vllm@v2:c/quote-missing-stands"
            "-in-a-helper/m.py::Pool.evict; it stands in vllm@v2:c/quote-missing-stands-in-a-"
            "helper/m.py::Pool._emit_removed"),
    ),
    "quote-missing-stands-in-a-candidates-file": Case(
        KIMI.format(suffix="", backend="auto"),
        {"kimi_amd.py": KIMI_UNFUSED.format(suffix=" (amd)", backend="ROCM_AITER_MLA"),
         "kimi_nvidia.py": KIMI_FUSED.format(suffix=" (nvidia)", backend="FLASHMLA")},
        "kimi.py::KimiForCausalLM.forward", "quote-missing", ("body",),
        new_ref="kimi_nvidia.py::KimiForCausalLM.forward", candidates=1, path="kimi.py",
        quote="return self.lm_head(x)", message=(
            "; it stands in vllm@v2:c/quote-missing-stands-in-a-candidates-file/kimi_amd.py"
            "::KimiForCausalLM._forward_unfused"),
    ),
    "quote-stands-in-changed-symbol": Case(
        CDIV, CDIV_NEW, "m.py::cdiv", "fresh", ("body",), quote="def cdiv(a: int,  b: int)",
        message="changed (body), but the quote still stands",
    ),
    "quote-stands-in-moved-symbol": Case(
        PREFIX, PREFIX.replace("longest_common_prefix", "common_prefix"),
        "m.py::longest_common_prefix", "moved", quote="min(words),  max(words)",
        new_ref="m.py::common_prefix",
    ),
    "quote-missing-in-moved-symbol": Case(
        "def pad_to(n, k):\n    return -(-n // k) * k\n",
        {"align.py": "def pad_to(n, k):\n    return (n + k - 1) // k * k\n"},
        "m.py::pad_to", "quote-missing", ("body",), quote="-(-n // k)",
        new_ref="align.py::pad_to", message="no longer stands in vllm@v2:",
    ),
    "quote-of-code-kept-only-in-a-comment": Case(
        FRACTION.format(doc="", value="0.92"), FRACTION_LOWERED, "m.py::memory_fraction",
        "quote-missing", ("body",), quote="default=0.92",
        message="the quote 'default=0.92' no longer stands in vllm@v2:c/quote-of-code-kept-only-"
                "in-a-comment/m.py::memory_fraction; it stands there only in a comment or "
                "docstring",
    ),
    "quote-of-code-kept-only-in-a-docstring": Case(
        FRACTION.format(doc=DOCSTRING.format(note=""), value="0.92"),
        FRACTION.format(doc=DOCSTRING.format(note=" (default=0.92 before v2)"), value="0.9"),
        "m.py::memory_fraction", "quote-missing", ("body",), quote="default=0.92",
        message="only in a comment or docstring",
    ),
    "quote-of-code-kept-only-in-an-attribute-docstring": Case(
        UTILIZATION.format(value="0.92", doc="The share of GPU memory."),
        UTILIZATION.format(value="0.9", doc="Was utilization: float = 0.92 before v2."),
        "m.py::CacheConfig", "quote-missing", ("members", "body"),
        quote="utilization: float = 0.92",
        message="only in a comment or docstring",
    ),
    "quote-of-code-kept-in-code-and-a-comment": Case(
        FRACTION.format(doc="", value="0.92"),
        FRACTION_LOWERED.replace("0.9,", "0.92,").replace("ge=0", "ge=0.1"),
        "m.py::memory_fraction", "fresh", ("body",), quote="default=0.92",
        message="changed (body), but the quote still stands",
    ),
    "quote-of-a-comment-kept-in-a-comment": Case(
        HEADROOM.format(value="0.92"), HEADROOM.format(value="0.9"), "m.py::memory_fraction",
        "fresh", ("body",), quote="keep 8% headroom",
        message="changed (body), but the quote still stands",
    ),
    "quote-of-a-docstring-kept-in-a-comment": Case(
        FRACTION.format(doc=DOCSTRING.format(note=", with headroom"), value="0.92"),
        FRACTION.format(doc="    # The share of memory to use, with headroom.\n", value="0.9"),
        "m.py::memory_fraction", "fresh", ("body",), quote="The share of memory to use, with",
        message="changed (body), but the quote still stands",
    ),
    "quote-of-a-string-literal-kept-in-code": Case(  # on a line of its own, as a docstring is
        BACKEND.format(call="'FLASHMLA'"),
        BACKEND.format(call="os.environ.get(\n        'BACKEND',\n        'FLASHMLA',\n    )"),
        "m.py::backend", "fresh", ("body",), quote="'FLASHMLA'",
        message="changed (body), but the quote still stands",
    ),
    "quote-of-code-kept-only-in-a-comment-of-the-moved-symbol": Case(
        "def pad_up(n, k):\n    return -(-n // k) * k\n",
        {"align.py": "def pad_up(n, k):\n    # was -(-n // k) * k\n"
                     "    return (n + k - 1) // k * k\n"},
        "m.py::pad_up", "quote-missing", ("body",), quote="-(-n // k)",
        new_ref="align.py::pad_up", message="only in a comment or docstring",
    ),
    "lines-quote-of-code-kept-only-in-a-comment": Case(
        FRACTION.format(doc="", value="0.92"), FRACTION_LOWERED, "m.py#L1-L2", "quote-missing",
        ("body",), quote="default=0.92", message="only in a comment or docstring",
    ),
    "quote-of-a-kernel-kept-in-a-preprocessor-line": Case(  # "#define" is no comment in C
        KERNEL, KERNEL.replace("  out[0] = 1.0f;", "#define STORE out[0] = 1.0f;"),
        "kernel.cu#L4-L6", "fresh", ("body",), path="kernel.cu", quote="out[0] = 1.0f;",
        message="changed (body), but the quote still stands",
    ),
    "removed-quote-only-in-a-comment-of-a-candidate": Case(
        LOAD.replace("load_weights", "load_state"),
        {"fetch.py": FETCH.replace("load_weights", "load_state").replace(
            "    with", "    # torch.load(path) read a file\n    with")},
        "loader.py::load_state", "removed", candidates=1, path="loader.py",
        quote="torch.load(path)", message="closest: vllm@v2:c/removed-quote-only-in-a-comment-",
    ),
    "relation-missing": Case(
        MLA, MLA.replace("Helper()", "None"), "m.py::MLA.__init__", "relation-missing", ("body",),
        both={"helper.py": HELPER}, uses=("helper.py::Helper",),
        message="no longer refers to vllm@v1:c/relation-missing/helper.py::Helper",
    ),
    "relation-missing-in-moved-symbol": Case(
        MLA, {"attn/mla.py": MLA.replace("Helper()", "None")}, "m.py::MLA.__init__",
        "relation-missing", ("body",), new_ref="attn/mla.py::MLA.__init__",
        both={"helper.py": HELPER}, uses=("helper.py::Helper",),
        message="no longer refers to "
                "vllm@v1:c/relation-missing-in-moved-symbol/helper.py::Helper",
    ),
    "relation-target-renamed": Case(  # it refers to the target under its new name
        HELPER_USED, HELPER_USED.replace("Helper", "Assistant"), "m.py::MLA.__init__",
        "relation-missing", ("body",), uses=("m.py::Helper",),
        message="no longer refers to vllm@v1:c/relation-target-renamed/m.py::Helper, but it "
                "refers to vllm@v2:c/relation-target-renamed/m.py::Assistant, where that moved",
    ),
    "relation-holds": Case(
        MLA, MLA.replace("576", "512"), "m.py::MLA.__init__", "changed", ("body",),
        both={"helper.py": HELPER}, uses=("helper.py::Helper",),
    ),
    "broken": Case(TOTAL, TOTAL, "m.py::no_such_function", "broken",
                   message="no symbol 'no_such_function'"),
    "relation-target-missing": Case(
        MLA, MLA, "m.py::MLA.__init__", "broken", both={"helper.py": HELPER},
        uses=("helper.py::Nope",), message="uses: no symbol 'Nope' in c/relation-target-",
    ),
    "relation-false-at-pin": Case(
        MLA.replace("Helper()", "None"), MLA.replace("Helper()", "None"), "m.py::MLA.__init__",
        "broken", both={"helper.py": HELPER}, uses=("helper.py::Helper",),
        message="vllm@v1:c/relation-false-at-pin/m.py::MLA.__init__ does not refer to "
                "vllm@v1:c/relation-false-at-pin/helper.py::Helper at its own pin",
    ),
    "relation-own-name-is-no-use": Case(
        MLA + "\n    def run(self):\n        return self.dim\n",
        MLA + "\n    def run(self):\n        return self.dim\n", "m.py::MLA.run", "broken",
        both={"helper.py": HELPER}, uses=("helper.py::Helper.run",),
        message="m.py::MLA.run does not refer to vllm@v1:c/relation-own-name-is-no-use/helper.py",
    ),
    "relation-dunder-is-its-class": Case(
        MLA, MLA, "m.py::MLA.__init__", "fresh",
        both={"helper.py": "class Helper:\n    def __init__(self):\n        self.x = 1\n"},
        uses=("helper.py::Helper.__init__",),
    ),
    "relation-dunder-of-a-base-through-super": Case(
        "class MLA(Helper):\n    def __init__(self):\n        super().__init__()\n",
        "class MLA(Helper):\n    def __init__(self):\n        super().__init__()\n",
        "m.py::MLA.__init__", "fresh",
        both={"helper.py": "class Helper:\n    def __init__(self):\n        self.x = 1\n"},
        uses=("helper.py::Helper.__init__",),
    ),
    "relation-dunder-of-another-class": Case(
        MLA.replace("self.proj = Helper()", "super().__init__()"),
        MLA.replace("self.proj = Helper()", "super().__init__()"), "m.py::MLA.__init__", "broken",
        both={"helper.py": "class Helper:\n    def __init__(self):\n        self.x = 1\n"},
        uses=("helper.py::Helper.__init__",), message="does not refer to",
    ),
    "relation-target-at-an-unknown-version": Case(
        MLA, MLA, "m.py::MLA.__init__", "broken", both={"helper.py": HELPER},
        uses=("vllm@v0.1:helper.py::Helper",),
        message="uses: vllm@v0.1 is neither indexed nor configured",
    ),
    "unindexed-pin": Case(TOTAL, TOTAL, "vllm@v0:m.py::total", "unindexed",
                          message="vllm@v0 is not indexed (run 'annotate index vllm@v0')"),
    "unknown-pin": Case(TOTAL, TOTAL, "vllm@v0.2:m.py::total", "broken",
                        message="vllm@v0.2 is neither indexed nor configured"),
    "lines-file-unchanged": Case(KERNEL, KERNEL, "kernel.cu#L4-L6", "fresh",
                                 path="kernel.cu", message="file unchanged"),
    "lines-unchanged": Case(KERNEL, KERNEL + "// end\n", "kernel.cu#L4-L6", "fresh",
                            path="kernel.cu", message="lines unchanged"),
    "lines-moved-past-a-lone-cr": Case(
        KERNEL, "// v2\r// more\n" + KERNEL, "kernel.cu#L4-L6", "moved", path="kernel.cu",
        new_ref="kernel.cu#L6-L8", message="the lines moved by +2",
    ),
    "lines-of-a-cr-only-file-moved": Case(
        KERNEL.replace("\n", "\r"), "// v2\r" + KERNEL.replace("\n", "\r"), "kernel.cu#L4-L6",
        "moved", path="kernel.cu", new_ref="kernel.cu#L5-L7", message="the lines moved by +1",
    ),
    "lines-moved": Case(KERNEL, "// v2\n// more\n" + KERNEL, "kernel.cu#L4-L6", "moved",
                        path="kernel.cu", new_ref="kernel.cu#L6-L8",
                        message="the lines moved by +2"),
    "lines-repeated-text-stays": Case(
        KERNEL + "void other() {\n}\n", KERNEL + "void other() {\n}\n// end\n",
        "kernel.cu#L8-L8", "fresh", path="kernel.cu", message="lines unchanged",
    ),
    "lines-repeated-text-follows-its-own-place": Case(  # not the nearer copy of its text
        "a()\nX\nb()\nX\n", "a()\nX\nn1\nn2\nn3\nb()\nX\n", "m.txt#L4", "moved",
        path="m.txt", new_ref="m.txt#L7", message="the lines moved by +3",
    ),
    "lines-repeated-text-none-its-own": Case(
        "a\nX\nb\n", "X\nc\nX\n", "m.txt#L2", "moved", path="m.txt", new_ref="m.txt#L1",
        candidates=1, message="the lines stand at 2 places at vllm@v2 (L1, L3), none more",
    ),
    "lines-text-now-inside-a-line": Case(
        "a = 0\nx = 1\n", "max = 1\nb = 2\n", "m.txt#L2", "changed", ("body",),
        path="m.txt", message="lines 2-2 of c/lines-text-now-inside-a-line/m.txt no longer",
    ),
    "lines-changed": Case(KERNEL, KERNEL.replace("1.0f", "2.0f"), "kernel.cu#L4-L6", "changed",
                          ("body",), path="kernel.cu", message="no longer stand as written"),
    "lines-changed-in-a-definition-that-shifted": Case(  # diffed as their definition
        METHODS, "B = 2\nC = 3\n" + METHODS.replace('    "suffix",\n', '    "suffix",\n'
                                                       '    "custom",\n'),
        "m.py#L1-L5", "changed", ("body",), message="(Method holds them)",
    ),
    "lines-went-with-their-definition": Case(
        "X = 1\n" + SUFFIX, {"m.py": "X = 1\n", "util.py": SUFFIX}, "m.py#L5-L8", "moved",
        new_ref="util.py#L4-L7", message="m.py no longer holds them; they stand in "
                                         "longest_common_suffix at c/lines-went-with-their-",
    ),
    "lines-removed": Case(KERNEL, None, "removed.cu#L4-L6", "removed", path="removed.cu",
                          message="c/lines-removed/removed.cu does not exist at vllm@v2"),
    "lines-file-gone-text-in-a-sibling": Case(
        KERNEL, {"kernels.cu": "// merged\n" + KERNEL}, "gone.cu#L4-L6", "moved",
        path="gone.cu", new_ref="kernels.cu#L5-L7",
        message="gone.cu does not exist at vllm@v2; its lines stand in c/lines-file-gone",
    ),
    "lines-file-gone-text-in-two-siblings": Case(
        KERNEL, {"a.cu": KERNEL, "b.cu": KERNEL}, "gone.cu#L4-L6", "moved", path="gone.cu",
        new_ref="a.cu#L4-L6", candidates=1, message="its lines stand at 2 places",
    ),
    "lines-file-gone-text-everywhere-is-not-followed": Case(
        KERNEL, {f"k{n}.cu": KERNEL for n in range(9)}, "gone.cu#L4-L6", "removed",
        path="gone.cu", message="its lines stand at more than 5 places in files of its folder"
                                " or name, or where its code went: no evidence of where "
                                "they went",
    ),
    "removed-its-users-now-use-another": Case(  # a dict made a registry its users ask
        HANDLERS, HANDLERS_REGISTERED, "m.py::HANDLERS", "removed",
        message="; its users at vllm@v1 no longer refer to it: handler_for names "
                "HandlerRegistry where it did",
    ),
    "removed-its-users-now-use-a-parameter": Case(  # a local is no successor to name
        "MAX_SPLITS = 8\n\n\ndef split_count(total):\n    return min(total, MAX_SPLITS)\n",
        "def split_count(total, max_splits):\n    return min(total, max_splits)\n",
        "m.py::MAX_SPLITS", "removed", message="MAX_SPLITS not found at vllm@v2",
    ),
    "removed-its-user-in-a-file-no-ref-can-name": Case(  # '::' in its name: passed over
        "OLD_LIMIT = 4\n", "NEW_LIMIT = 4\n", "m.py::OLD_LIMIT", "removed",
        message="OLD_LIMIT not found at vllm@v2",
        both={"odd::use.py": "from .m import OLD_LIMIT\n\n\ndef limit():\n    return OLD_LIMIT\n"},
    ),
    "lines-file-gone-text-where-its-code-went": Case(  # another folder, another name
        KDA, {"gdn/kimi.py": '"""Kimi layers."""\n' + KDA}, "ops/kda.py#L5-L8", "moved",
        path="ops/kda.py", new_ref="gdn/kimi.py#L6-L9",
        message="ops/kda.py does not exist at vllm@v2; its lines stand in c/lines-file-gone-"
                "text-where-its-code-went/gdn/kimi.py#L6",
    ),
    "lines-file-gone-short-text-went-with-their-definition": Case(  # a moved module
        "X = 1\n\n\ndef f():\n    return 1\n", {"pkg/m.py": "X = 1\n\n\ndef f():\n    return 1\n"},
        "m.py#L4-L5", "moved", new_ref="pkg/m.py#L4-L5",
        message="m.py does not exist at vllm@v2; they stand in f at c/lines-file-gone-short-"
                "text-went-with-their-definition/pkg/m.py#L4",
    ),
    "lines-file-gone-changed-where-its-code-went": Case(  # a module renamed, its imports changed
        "import os\nimport sys\n\n\ndef helper_of_a_renamed_module():\n    return 41\n",
        {"pkg/n.py": "import re\nimport sys\n\n\ndef helper_of_a_renamed_module():\n"
                     "    return 41\n"},
        "m.py#L1-L2", "removed",
        message="m.py does not exist at vllm@v2; its code went to c/lines-file-gone-changed-"
                "where-its-code-went/pkg/n.py, where these lines do not stand as written",
    ),
    "lines-file-gone-short-text-where-its-code-went": Case(
        "import os\nimport sys\n\n\ndef helper_of_a_moved_module():\n    return 42\n",
        {"pkg/n.py": '"""Moved."""\nimport os\nimport sys\n\n\ndef helper_of_a_moved_module():\n'
                     "    return 42\n"},
        "m.py#L1-L2", "moved", new_ref="pkg/n.py#L2-L3",
        message="m.py does not exist at vllm@v2; its lines stand in c/lines-file-gone-short-"
                "text-where-its-code-went/pkg/n.py#L2, where its code went",
    ),
    "lines-file-renamed-and-edited-lines-stand": Case(  # a kernel renamed into a subfolder
        KERNEL + LAUNCH, {"ops/v1/paged_attention.cu": "// v1\n" + KERNEL + LAUNCH.replace(
            "1, 1", "grid, block")},
        "ops/attention.cu#L4-L6", "moved", path="ops/attention.cu",
        new_ref="ops/v1/paged_attention.cu#L5-L7",
        message="ops/attention.cu does not exist at vllm@v2; its lines stand in c/lines-file-"
                "renamed-and-edited-lines-stand/ops/v1/paged_attention.cu#L5, where its code went",
    ),
    "lines-file-renamed-and-edited-lines-changed": Case(  # the same name, in another folder
        KERNEL + LAUNCH, {"csrc/flash.cu": KERNEL.replace("1.0f", "2.0f") + LAUNCH},
        "ops/flash.cu#L4-L6", "removed", path="ops/flash.cu",
        message="ops/flash.cu does not exist at vllm@v2; its code went to c/lines-file-renamed-"
                "and-edited-lines-changed/csrc/flash.cu, where these lines do not stand as "
                "written",
    ),
    "lines-file-gone-a-new-file-of-its-name-is-no-rename": Case(
        KERNEL + LAUNCH, {"csrc/cache.cu": "// rewritten\n__global__ void other() {}\n"},
        "ops/cache.cu#L4-L6", "removed", path="ops/cache.cu",
        message="c/lines-file-gone-a-new-file-of-its-name-is-no-rename/ops/cache.cu does not "
                "exist at vllm@v2",
    ),
    "lines-file-gone-two-files-as-alike-is-no-rename": Case(
        KERNEL + LAUNCH, {f"ops/{arch}/kernels.cu": KERNEL.replace("1.0f", "2.0f") + LAUNCH
                          for arch in ("sm80", "sm90")},
        "ops/dup.cu#L4-L6", "removed", path="ops/dup.cu",
        message="c/lines-file-gone-two-files-as-alike-is-no-rename/ops/dup.cu does not exist at "
                "vllm@v2",
    ),
    "lines-file-gone-short-text-is-not-followed": Case(
        "a\nX\nb\n", {"n.txt": "X\n"}, "m.txt#L2", "removed", path="m.txt",
        message="m.txt does not exist at vllm@v2",
    ),
}


def _case_files(case_id: str, case: Case) -> tuple[dict[str, str], dict[str, str]]:
    base = f"c/{case_id}"
    old = {f"{base}/{case.path}": case.old}
    files = {case.path: case.new} if isinstance(case.new, str) else case.new or {}
    new = {f"{base}/{rel}": text for rel, text in files.items()}
    for rel, text in case.both.items():
        old[f"{base}/{rel}"] = new[f"{base}/{rel}"] = text
    return old, new


def _written(case_id: str, ref: str) -> str:
    pin, colon, rest = ref.partition(":") if ref.startswith("vllm@") else ("", "", ref)
    return f"{pin}{colon}c/{case_id}/{rest}"


def _case_claim(case_id: str, case: Case) -> str:
    lines = [f"  - id: {case_id}", f"    text: \"{case_id}\"", "    refs:",
             f"      - ref: {_written(case_id, case.ref)}"]
    if case.quote:
        lines.append(f"        quote: \"{case.quote}\"")
    if case.uses:
        lines.append(f"        uses: [{', '.join(_written(case_id, u) for u in case.uses)}]")
    return "\n".join(lines) + "\n"


TABLE_CONFIG = '[repos.vllm]\nversions = ["v0", "v1", "v2"]\n'  # v0 is never indexed


def build_table_index(root: Path) -> None:
    old: dict[str, str] = {}
    new: dict[str, str] = {}
    for case_id, case in CASES.items():
        case_old, case_new = _case_files(case_id, case)
        old.update(case_old)
        new.update(case_new)
    write(root / "annotate.toml", TABLE_CONFIG)
    for version, files in (("v1", old), ("v2", new)):
        source = write_tree(root / "src" / version, files)
        done = run("index", f"vllm@{version}", "--from", str(source))
        assert done.exit_code == 0, done.output


@pytest.fixture(scope="module")
def table_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("table")
    with pytest.MonkeyPatch.context() as patch:
        _module_env(patch, root)
        build_table_index(root)
    return root


@pytest.fixture(scope="module")
def table_report(table_index: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One ``annotate check --format json`` over one claim per case."""
    root = tmp_path_factory.mktemp("table-check")
    with pytest.MonkeyPatch.context() as patch:
        _module_env(patch, root)
        copy_project(table_index)
        claims = "".join(_case_claim(case_id, case) for case_id, case in CASES.items())
        write(root / "annotations" / "cases.yml", annotation("blog/cases.md", "vllm@v1", claims))
        code, report = check_json()
    assert code == 1
    return report


@pytest.mark.parametrize("case_id", CASES)
def test_status_table(case_id: str, table_report: dict) -> None:
    case = CASES[case_id]
    [result] = by_claim(table_report)[case_id]
    assert set(result) >= RESULT_KEYS
    assert (result["status"], tuple(result["changes"])) == (case.status, case.kinds), result
    # A ref that does not resolve at its own pin is compared with nothing.
    assert result["target"] == (None if case.status in ("broken", "unindexed") else "vllm@v2")
    if case.message is not None:
        assert case.message in result["message"]
    assert len(result["candidates"]) == case.candidates
    if case.new_ref is not None:
        assert result["new_ref"] == f"vllm@v2:{_written(case_id, case.new_ref)}"
    elif case.status != "moved":
        assert result["new_ref"] is None  # a moved ref keeps where it went, whatever else
    if case.status == "changed":
        assert result["diff"].startswith(f"--- vllm@v1:c/{case_id}/")


GITHUB = "https://github.com/vllm-project/vllm/blob"


def test_where_a_removed_symbols_code_went_is_in_the_json(table_report: dict) -> None:
    """A hint beside the verdict: the status stays removed, with no new ref."""
    [result] = by_claim(table_report)["removed-its-code-went-to"]
    assert result["code_went_to"] == [
        "vllm@v2:c/removed-its-code-went-to/b.py::FlashBackend.supports_dtype"]
    [url] = result["code_went_to_urls"]  # each place's permalink, as candidate_urls
    assert re.fullmatch(re.escape(f"{GITHUB}/v2/c/removed-its-code-went-to/b.py") + r"#L\d+-L\d+",
                        url)
    removed = by_claim(table_report)["removed"][0]
    assert (removed["code_went_to"], removed["code_went_to_urls"]) == ([], [])


def test_check_asks_where_the_code_of_its_removed_symbols_went_all_at_once(
    table_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """check asked where each removed symbol's code went one at a time, from an index of
    every line of the target's changed files (~1 s of CPU at vLLM v0.20.0 -> v0.25.0):
    it asks about all those of a version pair at once, from an index of their lines."""
    indexes: list[frozenset[str] | None] = []

    class Recorded(code_lines.LinePlaces):
        def __init__(self, files: Any, wanted: frozenset[str] | None = None) -> None:
            super().__init__(files, wanted)
            indexes.append(wanted)

    monkeypatch.setattr(matching, "LinePlaces", Recorded)
    _module_env(monkeypatch, tmp_path)
    copy_project(table_index)
    claims = "".join(_case_claim(case_id, case) for case_id, case in CASES.items())
    write(tmp_path / "annotations" / "cases.yml", annotation("blog/cases.md", "vllm@v1", claims))
    _, report = check_json()
    removed = {result["claim"] for result in report["results"] if result["status"] == "removed"}
    their_lines = {line for case_id in removed
                   for text in _case_files(case_id, CASES[case_id])[0].values()
                   for line in code_lines.normalized_lines(text)}
    [wanted] = indexes  # one index, of lines of the removed refs' files at v1 alone
    assert wanted is not None and wanted <= their_lines
    assert len(wanted) == 27 and len(their_lines) == 59  # of their 16 cases
    [went] = by_claim(report)["removed-its-code-went-to"]
    assert went["code_went_to"] == [
        "vllm@v2:c/removed-its-code-went-to/b.py::FlashBackend.supports_dtype"]


def test_where_a_removed_line_refs_code_went_is_in_the_json_as_in_its_message(
    table_report: dict,
) -> None:
    """Lines of a gone file found nowhere said where its code went in the message alone:
    ``code_went_to`` was empty, as for a ref whose code went nowhere."""
    went = {case_id: by_claim(table_report)[case_id][0]["code_went_to"] for case_id in (
        "lines-file-gone-changed-where-its-code-went", "lines-file-renamed-and-edited-lines-"
        "changed", "lines-file-gone-a-new-file-of-its-name-is-no-rename")}
    assert went == {
        "lines-file-gone-changed-where-its-code-went": [
            "vllm@v2:c/lines-file-gone-changed-where-its-code-went/pkg/n.py"],
        "lines-file-renamed-and-edited-lines-changed": [
            "vllm@v2:c/lines-file-renamed-and-edited-lines-changed/csrc/flash.cu"],
        "lines-file-gone-a-new-file-of-its-name-is-no-rename": [],
    }
    [url] = by_claim(table_report)["lines-file-gone-changed-where-its-code-went"][0][
        "code_went_to_urls"]  # the file's, as the diff's code_went_to has it
    assert url == f"{GITHUB}/v2/c/lines-file-gone-changed-where-its-code-went/pkg/n.py"


def test_an_old_name_kept_as_an_alias_is_in_the_json(table_report: dict) -> None:
    """A hint beside the move, which stays a move (``fix`` rewrites the ref to the
    definition): the line that keeps the old name, as a line ref, and its permalink."""
    [kept] = by_claim(table_report)["moved-old-name-kept-as-alias"]
    assert kept["alias"] == "vllm@v2:c/moved-old-name-kept-as-alias/m.py#L10"
    assert kept["alias_url"] == f"{GITHUB}/v2/c/moved-old-name-kept-as-alias/m.py#L10"
    [renamed] = by_claim(table_report)["moved-renamed"]  # no alias left behind
    assert (renamed["alias"], renamed["alias_url"]) == (None, None)
    assert "alias" not in renamed["message"]


def test_what_the_users_of_a_removed_symbol_now_use_is_in_the_json(table_report: dict) -> None:
    """The classes and functions named where its users named it, as refs; a parameter, a
    local or an attribute is none (``min``, a builtin, is no definition of the version)."""
    [registry] = by_claim(table_report)["removed-its-users-now-use-another"]
    assert registry["users_now_use"] == [
        "vllm@v2:c/removed-its-users-now-use-another/m.py::HandlerRegistry"]
    [parameter] = by_claim(table_report)["removed-its-users-now-use-a-parameter"]
    assert parameter["users_now_use"] == []
    assert "its users" not in parameter["message"]


def test_changed_lines_are_diffed_as_their_definition(table_report: dict) -> None:
    """Not as the same line numbers at the target, where other lines now stand."""
    [result] = by_claim(table_report)["lines-changed-in-a-definition-that-shifted"]
    assert '+    "custom",' in result["diff"]
    assert "B = 2" not in result["diff"]
    assert result["new_url"].endswith("/m.py#L3-L8")


SCALE = "class Scale:\n    TENSOR = 'tensor'\n    GROUP = 'group'\n"
REEXPORTS = {  # the package keeps exporting Scale from wherever it now lives
    "v1": {"pkg/__init__.py": "from .layer import Scale\n", "pkg/layer.py": SCALE},
    "v2": {"pkg/__init__.py": "from .experts import Scale\n", "pkg/experts.py": SCALE,
           "pkg/layer.py": "X = 1\n"},
}


@pytest.mark.parametrize(("ref", "status"), [
    pytest.param("vllm.pkg.Scale", "fresh", id="public-name-still-names-it"),
    pytest.param("Scale", "fresh", id="short-name-still-names-it"),
    pytest.param("vllm.pkg.layer.Scale", "moved", id="module-name-no-longer-does"),
    pytest.param("vllm/pkg/layer.py::Scale", "moved", id="path-no-longer-does"),
])
def test_a_name_that_still_names_the_moved_symbol_is_not_moved(
    tmp_path: Path, ref: str, status: str
) -> None:
    write(Path("annotate.toml"), '[repos.vllm]\nversions = ["v1", "v2"]\n')
    for version, files in REEXPORTS.items():
        source = write_tree(tmp_path / version / "vllm", files).parent
        assert run("index", f"vllm@{version}", "--from", str(source)).exit_code == 0
    write(Path("annotations/a.yml"), annotation("blog/a.md", "vllm@v1", claim_yaml("s", [ref])))
    code, report = check_json("--exit-zero")
    [result] = report["results"]
    assert result["status"] == status, result
    if status == "fresh":
        assert result["message"] == (f"{ref} still names it at vllm@v2, now in "
                                     "vllm/pkg/experts.py")


def test_a_name_that_still_names_the_moved_symbol_is_changed_when_its_code_is(
    tmp_path: Path
) -> None:
    write(Path("annotate.toml"), '[repos.vllm]\nversions = ["v1", "v2"]\n')
    changed = SCALE.replace("'group'", "'block'")
    versions = {"v1": REEXPORTS["v1"], "v2": {**REEXPORTS["v2"], "pkg/experts.py": changed}}
    for version, files in versions.items():
        source = write_tree(tmp_path / version / "vllm", files).parent
        assert run("index", f"vllm@{version}", "--from", str(source)).exit_code == 0
    write(Path("annotations/a.yml"),
          annotation("blog/a.md", "vllm@v1", claim_yaml("s", ["vllm.pkg.Scale"])))
    code, report = check_json("--exit-zero")
    [result] = report["results"]
    assert (result["status"], result["changes"]) == ("changed", ["members"]), result
    assert result["message"].startswith("vllm.pkg.Scale still names it at vllm@v2, now in "
                                        "vllm/pkg/experts.py; "), result


def test_table_covers_every_status_and_kind() -> None:
    assert {case.status for case in CASES.values()} == {status.value for status in Status}
    kinds = {kind for case in CASES.values() if case.status == "changed" for kind in case.kinds}
    assert kinds == {"signature", "bases", "members", "body", "value", "annotation"}


@pytest.mark.parametrize(("claim", "expected"), [
    pytest.param("changed-signature", (
        "--- vllm@v1:c/changed-signature/m.py::connect\n"
        "+++ vllm@v2:c/changed-signature/m.py::connect\n"
        "@@ -1,3 +1,3 @@\n"
        "-def connect(host, port):\n"
        "+def connect(host, port=29500):\n"
        "     sock = open_socket(host, port)\n"
        "     return sock\n"
    ), id="symbol"),
    pytest.param("changed-body-with-a-form-feed", (
        "--- vllm@v1:c/changed-body-with-a-form-feed/m.py::page\n"
        "+++ vllm@v2:c/changed-body-with-a-form-feed/m.py::page\n"
        "@@ -1,3 +1,3 @@\n"
        " def page():\n"
        '     sep = "\x0c\u2028"\n'
        '-    return sep + "x"\n'
        '+    return sep + "y"\n'
    ), id="lines-of-python-not-of-str-splitlines"),
    pytest.param("lines-changed", (
        "--- vllm@v1:c/lines-changed/kernel.cu#L4-L6\n"
        "+++ vllm@v2:c/lines-changed/kernel.cu#L4-L6\n"
        "@@ -1,3 +1,3 @@\n"
        " __global__ void kernel(float* out) {\n"
        "-  out[0] = 1.0f;\n"
        "+  out[0] = 2.0f;\n"
        " }\n"
    ), id="lines"),
])
def test_a_change_comes_with_a_short_unified_diff_of_the_same_span(
    table_report: dict, claim: str, expected: str
) -> None:
    [result] = by_claim(table_report)[claim]
    assert result["diff"] == expected


def test_a_missing_quote_is_said_to_stand_in_the_innermost_definition_holding_it(
    table_report: dict,
) -> None:
    """Its method, not also the class around it."""
    [result] = by_claim(table_report)["quote-missing-stands-in-a-helper"]
    assert result["message"] == CASES["quote-missing-stands-in-a-helper"].message


def test_a_quote_only_in_a_comment_of_a_candidate_is_not_said_to_stand_there(
    table_report: dict,
) -> None:
    [result] = by_claim(table_report)["removed-quote-only-in-a-comment-of-a-candidate"]
    assert "the quote stands in" not in result["message"]


# The quote cases of a symbol changed in place (the diff keeps a moved symbol's claims).
QUOTES_IN_CHANGED = [case_id for case_id, case in CASES.items() if case.quote
                     and "::" in case.ref and case.status in ("fresh", "quote-missing")
                     and case.kinds and case.new_ref is None]


def test_the_annotated_diff_keeps_the_claims_whose_quote_check_finds_missing(
    table_index: Path,
) -> None:
    """As check sees them: a claim whose quote of code stands at v2 only in a comment or
    docstring must be revised; one whose quote stands as it stood is not affected."""
    copy_project(table_index)
    claims = "".join(_case_claim(case_id, CASES[case_id]) for case_id in QUOTES_IN_CHANGED)
    write(Path("annotations/a.yml"), annotation("blog/a.md", "vllm@v1", claims))
    assert run("link").exit_code == 0
    result = run("diff", "vllm@v1", "vllm@v2", "--annotated", "--format", "json")
    assert result.exit_code == 0, result.output
    cited = {claim["claim"] for article in json.loads(result.stdout)["articles"]
             for claim in article["claims"]}
    assert cited == {case_id for case_id in QUOTES_IN_CHANGED
                     if CASES[case_id].status == "quote-missing"}


def test_ambiguous_move_names_the_other_copies(table_report: dict) -> None:
    [result] = by_claim(table_report)["moved-ambiguous"]
    base = "vllm@v2:c/moved-ambiguous"
    every = {f"{base}/ds_{name}.py::DeepseekV4ForCausalLM" for name in ("amd", "nvidia", "xpu")}
    assert {result["new_ref"], *result["candidates"]} == every


def test_claim_status_is_its_worst_refs(table_index: Path) -> None:
    copy_project(table_index)
    refs = {
        "fresh-only": ["c/fresh-file-unchanged/m.py::total"],
        "cosmetic-and-fresh": ["c/fresh-file-unchanged/m.py::total",
                               "c/cosmetic-comment/m.py::total"],
        "fresh-and-unindexed": ["c/fresh-file-unchanged/m.py::total",
                                "vllm@v0:c/fresh-file-unchanged/m.py::total"],
        "changed-moved-removed": ["c/changed-body/m.py::cdiv", "c/removed/m.py::is_neuron",
                                  "c/moved-renamed/m.py::capture_graph"],
        "removed-and-broken": ["c/removed/m.py::is_neuron", "c/broken/m.py::nope"],
    }
    claims = "".join(claim_yaml(claim_id, written) for claim_id, written in refs.items())
    write(Path("annotations/worst.yml"), annotation("blog/worst.md", "vllm@v1", claims))
    code, report = check_json("--exit-zero")
    assert code == 0
    assert report["claims"] == [
        {"article": "blog/worst.md", "claim": claim, "status": status} for claim, status in [
            ("fresh-only", "fresh"), ("cosmetic-and-fresh", "cosmetic"),
            ("fresh-and-unindexed", "unindexed"), ("changed-moved-removed", "removed"),
            ("removed-and-broken", "broken"),
        ]
    ]



def test_a_check_frees_what_it_read_without_waiting_for_the_collector(
    table_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resolvers and source stores of a link and a check go when the run is done,
    not at a later garbage collection (a big collection's held ~100 MB until then)."""
    made: list[weakref.ref] = []  # every Resolver and SourceStore of the run
    for kind in (Resolver, SourceStore):
        monkeypatch.setattr(kind, "__init__", _tracked(kind.__init__, made))
    copy_project(table_index)
    claims = "".join(_case_claim(case_id, case) for case_id, case in CASES.items())
    write(Path("annotations/cases.yml"), annotation("blog/cases.md", "vllm@v1", claims))
    gc.disable()
    try:
        code, _ = check_json("--exit-zero")
        alive = [type(ref()).__name__ for ref in made if ref() is not None]
    finally:
        gc.enable()
    assert (code, len(made) >= 3, alive) == (0, True, [])  # link's resolver, check's and its store



def test_a_no_op_check_reads_its_line_comparisons_back(
    table_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line refs are stored as symbol refs are: a second check looks for no lines (the
    big collection's 2,582 line refs cost a no-op check ~1.4 s of profiled time)."""
    copy_project(table_index)
    claims = "".join(_case_claim(case_id, case) for case_id, case in CASES.items())
    write(Path("annotations/cases.yml"), annotation("blog/cases.md", "vllm@v1", claims))
    first = run("check", "--format", "json", "--exit-zero").stdout
    searched: list[str] = []
    places_of = comparison.places_of
    monkeypatch.setattr(comparison, "places_of",
                        lambda old, new: searched.append(old) or places_of(old, new))
    second = run("check", "--format", "json", "--exit-zero").stdout
    assert (second, searched) == (first, [])
    assert '"lines-changed-in-a-definition-that-shifted"' in first


def test_the_users_of_a_removed_symbol_are_looked_for_once(
    table_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a removed symbol's users name instead is stored with its comparison: a check
    looks for the users of each once (it asked twice, as it checks removed refs twice),
    and a second check, for none (the big collection's no-op check took 3.5 s of user
    CPU without the hint, 29 s with it looked for each time)."""
    copy_project(table_index)
    claims = "".join(_case_claim(case_id, case) for case_id, case in CASES.items())
    write(Path("annotations/cases.yml"), annotation("blog/cases.md", "vllm@v1", claims))
    searched: list[tuple[str, str]] = []
    occurrences = xref._FileScanner.occurrences
    monkeypatch.setattr(xref._FileScanner, "occurrences", lambda scanner, name: (
        searched.append((scanner.path, name)) or occurrences(scanner, name)))
    first = run("check", "--format", "json", "--exit-zero").stdout
    assert searched.count(("c/removed-its-users-now-use-another/m.py", "HANDLERS")) == 1
    searched.clear()
    second = run("check", "--format", "json", "--exit-zero").stdout
    assert (second, searched) == (first, [])
    assert "handler_for names HandlerRegistry where it did" in first


def _tracked(init: Callable[..., None], made: list[weakref.ref]) -> Callable[..., None]:
    def tracked(self: object, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(weakref.ref(self))
    return tracked


@pytest.fixture
def stored_links(table_index: Path) -> list[tuple]:
    """The table's project with one claim linked: the stored links a failed run must keep."""
    copy_project(table_index)
    write(Path("annotations/a.yml"), "article: a.md\nat: vllm@v1\nclaims:\n  - id: a\n"
          "    text: t\n    refs: [nowhere.py::f]\n")
    run("link")
    stored = _stored_links()
    assert stored
    return stored


@pytest.mark.parametrize("command", ["check", "link", "fix"])
def test_no_annotation_files_is_an_error_and_keeps_the_links(
    stored_links: list[tuple], command: str
) -> None:
    """A glob's typo, or CI run from the wrong folder: not a green check of nothing."""
    for folder in ("annotations", "articles"):
        shutil.rmtree(folder, ignore_errors=True)
    config = load_config()
    result = run(command)
    assert (result.exit_code, result.stdout) == (2, "")
    patterns = ", ".join(config.annotations + config.articles)
    assert result.stderr == (
        f"Error: no annotation file under {config.root} matches {patterns}; add one, or set "
        "'annotations' and 'articles' in annotate.toml\n"
    )
    assert _stored_links() == stored_links


@pytest.mark.parametrize("command", ["check", "link", "fix"])
def test_run_from_a_subfolder_names_the_folder_of_the_config(
    stored_links: list[tuple], command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path.cwd()
    monkeypatch.chdir(root / "annotations")
    result = CliRunner().invoke(cli, ["--db", str(root / DB), command], prog_name="annotate")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.endswith(
        f"; run from {root}, where annotate.toml is, or pass --config {root / 'annotate.toml'}\n")
    monkeypatch.chdir(root)
    assert _stored_links() == stored_links


def test_no_annotation_files_and_no_config_says_where_to_run_from(
    stored_links: list[tuple], monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    db = Path.cwd() / DB
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    result = CliRunner().invoke(cli, ["--db", str(db), "link"], prog_name="annotate")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.endswith("; run from your articles' folder, or set 'annotations' and "
                                  "'articles' in annotate.toml\n")


@pytest.mark.parametrize(("below", "found"), [
    pytest.param(("docs",), "docs", id="a-folder-down"),
    pytest.param(("site/content/notes",), "site/content/notes", id="three-folders-down"),
    pytest.param(("b/notes", "a/notes/deeper"), "b/notes", id="the-shallowest"),
    pytest.param(("b/notes", "a/notes"), "a/notes", id="the-first-by-name"),
])
def test_no_config_here_but_one_below_names_its_folder(
    stored_links: list[tuple], monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory, below: tuple[str, ...], found: str,
) -> None:
    """Run from the top of a repository whose articles have a folder of their own (a CI
    job's working directory), the error says where the config is."""
    db = Path.cwd() / DB
    top = tmp_path_factory.mktemp("repository")
    for folder in below:
        write(top / folder / "annotate.toml", "")
    monkeypatch.chdir(top)
    result = CliRunner().invoke(cli, ["--db", str(db), "check"], prog_name="annotate")
    assert (result.exit_code, result.stdout) == (2, "")
    config = top / found / "annotate.toml"
    assert result.stderr.endswith(
        f"; run from {config.parent}, where annotate.toml is, or pass --config {config}\n")


@pytest.mark.parametrize("below", [
    pytest.param("one/two/three/four", id="four-folders-down"),
    pytest.param(".hidden", id="in-a-hidden-folder"),
    pytest.param("node_modules/pkg", id="in-node-modules"),
])
def test_a_config_annotate_does_not_look_for_is_not_named(
    stored_links: list[tuple], monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory, below: str,
) -> None:
    db = Path.cwd() / DB
    top = tmp_path_factory.mktemp("repository")
    write(top / below / "annotate.toml", "")
    monkeypatch.chdir(top)
    result = CliRunner().invoke(cli, ["--db", str(db), "check"], prog_name="annotate")
    assert result.stderr.endswith("; run from your articles' folder, or set 'annotations' and "
                                  "'articles' in annotate.toml\n")


@pytest.mark.parametrize("mode", [
    pytest.param(0, id="a-folder-that-cannot-be-read"),
    pytest.param(0o644, id="a-folder-listed-but-not-entered"),
])
def test_a_folder_below_that_cannot_be_read_is_passed_over(
    stored_links: list[tuple], monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory, mode: int,
) -> None:
    """Looking for a config below, a folder whose entries cannot be looked at (seen
    before docs/ by name) holds none of ours: the error names the one that is there."""
    db = Path.cwd() / DB
    top = tmp_path_factory.mktemp("repository")
    write(top / "docs" / "annotate.toml", "")
    (top / "a-private" / "inside").mkdir(parents=True)
    (top / "a-private").chmod(mode)
    monkeypatch.chdir(top)
    try:
        code, out, err = _run_as_a_user("--db", str(db), "check")
    finally:
        (top / "a-private").chmod(0o755)
    config = top / "docs" / "annotate.toml"
    assert (code, out) == (2, ""), err
    assert err.endswith(
        f"; run from {config.parent}, where annotate.toml is, or pass --config {config}\n"), err


@pytest.mark.parametrize("command", ["check", "link", "fix"])
def test_annotation_files_without_claims_are_an_error_and_keep_the_links(
    stored_links: list[tuple], command: str
) -> None:
    """A glob that matches only an article's README: the same check of nothing."""
    shutil.rmtree("annotations")
    write(Path("articles/README.md"), "# Articles\n\nNo claims here.\n")
    result = run(command)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith(
        f"Error: the 1 annotation file under {Path.cwd()} matching ")
    assert result.stderr.endswith(" holds no claims (hint: check 'annotations' and 'articles' in "
                                  "annotate.toml; the stored links are kept)\n")
    assert _stored_links() == stored_links


def _without_root_powers() -> list[str]:
    """A command prefix under which file modes bind: as root, drop the capabilities that
    ignore them (root reads a folder of mode 000)."""
    if os.geteuid() != 0:
        return []
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]
    try:
        done = subprocess.run([*prefix, "true"], capture_output=True, check=False)
    except OSError:
        pytest.skip("run as root, and setpriv is not installed to drop root's file powers")
    if done.returncode != 0:
        pytest.skip(f"run as root, and setpriv cannot drop root's file powers: {done.stderr!r}")
    return prefix


def _run_as_a_user(*args: str) -> tuple[int, str, str]:
    done = subprocess.run([*_without_root_powers(), sys.executable, "-m", "annotate_cli",
                           *args], capture_output=True, text=True, check=False)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("command", ["check", "link", "fix"])
def test_a_folder_the_globs_reach_and_the_user_cannot_read_is_an_error(
    stored_links: list[tuple], command: str
) -> None:
    """Python's glob passes over it: its claims would drop out, and check pass without them."""
    write(Path("annotations/private/b.yml"), "article: b.md\nat: vllm@v1\nclaims:\n  - id: b\n"
          "    text: t\n    refs: [nowhere.py::g]\n")
    Path("annotations/private").chmod(0)
    try:
        outcome = _run_as_a_user(command)
    finally:
        Path("annotations/private").chmod(0o755)
    assert outcome == (2, "", (
        "Error: cannot read the folder annotations/private (Permission denied), which "
        "'annotations/**/*.yml' reaches: its annotation files would be left out (hint: make it "
        "readable, or change 'annotations' or 'articles' in annotate.toml so that they do not "
        "reach it)\n"
    ))
    assert _stored_links() == stored_links


def test_a_query_beside_an_unreadable_folder_says_to_link(stored_links: list[tuple]) -> None:
    """``search`` reads the stored links: it answers, and sends the user to ``link``, which
    names the folder."""
    Path("annotations/private").mkdir()
    Path("annotations/private").chmod(0)
    try:
        outcome = _run_as_a_user("search", "t")
    finally:
        Path("annotations/private").chmod(0o755)
    assert outcome == (0, "a.md#a: t\n", (
        "Note: the annotation files, the index or annotate changed since the last link; run "
        "'annotate link' (or 'annotate check') to bring the claims shown here up to date\n"))


@pytest.mark.parametrize("annotated", [[], ["--annotated"]], ids=["every-symbol", "annotated"])
@pytest.mark.parametrize("output", [[], ["--output", "diff.md"]], ids=["stdout", "output-file"])
def test_a_diff_beside_an_unreadable_folder_says_to_link(
    stored_links: list[tuple], output: list[str], annotated: list[str]
) -> None:
    """A diff reads the stored links, as ``search`` does: with or without ``--output``, it
    is made, with the note that sends the user to ``link``, which names the folder."""
    expected = run("diff", "vllm@v1", "vllm@v2", *annotated).stdout
    Path("annotations/private").mkdir()
    Path("annotations/private").chmod(0)
    try:
        code, printed, error = _run_as_a_user("diff", "vllm@v1", "vllm@v2", *annotated, *output)
    finally:
        Path("annotations/private").chmod(0o755)
    assert (code, error) == (0, (
        "Note: the annotation files, the index or annotate changed since the last link; run "
        "'annotate link' (or 'annotate check') to bring the claims shown here up to date\n"))
    assert (Path("diff.md").read_text() if output else printed) == expected


def test_a_diff_beside_an_unreadable_folder_a_glob_names_a_file_in(
    stored_links: list[tuple]
) -> None:
    """A glob whose last part names a file (``annotations/*/b.yml``) is also looked for as a
    symlink to nothing, which Python before 3.12 passes over: in a folder that cannot be
    looked into, that cannot be told, and it is passed over as Python's glob passes over
    it (``link`` names the folder). ``diff --output`` reads the globs so as not to write
    over an annotation file."""
    config = Path("annotate.toml")
    config.write_text('annotations = ["annotations/*.yml", "annotations/*/b.yml"]\n'
                      + config.read_text())
    expected = run("diff", "vllm@v1", "vllm@v2").stdout
    Path("annotations/private").mkdir()
    Path("annotations/private").chmod(0)
    try:
        code, _, error = _run_as_a_user("diff", "vllm@v1", "vllm@v2", "--output", "diff.md")
    finally:
        Path("annotations/private").chmod(0o755)
    assert code == 0, error
    assert Path("diff.md").read_text() == expected


def test_a_diff_is_not_written_over_a_file_in_a_folder_that_cannot_be_listed(
    stored_links: list[tuple]
) -> None:
    """Whether it is an annotation file cannot be told: it is kept."""
    claim = Path("annotations/private/b.yml")
    write(claim, _B_CLAIM)
    claim.parent.chmod(0o333)  # written and entered, not listed
    try:
        code, printed, error = _run_as_a_user("diff", "vllm@v1", "vllm@v2", "-o", str(claim))
    finally:
        claim.parent.chmod(0o755)
    assert (code, printed) == (2, "")
    assert error == (
        "Error: Invalid value for '--output' / '-o': annotations/private cannot be listed, so "
        "whether annotations/private/b.yml is an annotation file, which the report would "
        "replace, cannot be told; write the report outside that folder, or make it readable "
        "(see 'annotate diff --help')\n")
    assert claim.read_text() == _B_CLAIM


@pytest.mark.parametrize("folder", [
    pytest.param("notes", id="outside-every-glob"),
    pytest.param("annotations/old", id="below-a-glob-of-one-level"),
    pytest.param("articles/old.md", id="matched-by-name-as-a-file-is"),
])
def test_an_unreadable_folder_no_glob_reaches_is_no_concern(
    stored_links: list[tuple], folder: str
) -> None:
    globs = 'annotations = ["annotations/*.yml"]\narticles = ["articles/*.md"]\n'
    Path("annotate.toml").write_text(globs + Path("annotate.toml").read_text())
    without = _run_as_a_user("check")
    Path(folder).mkdir(parents=True)
    Path(folder).chmod(0)
    try:
        assert _run_as_a_user("check") == without
    finally:
        Path(folder).chmod(0o755)
    assert without[0] == 1  # the stored claim's ref is broken: reported, not refused


_B_CLAIM = "article: b.md\nat: vllm@v1\nclaims:\n  - {id: b, text: t, refs: [nowhere.py::g]}\n"


@pytest.mark.parametrize(("pattern", "file"), [
    pytest.param("annotations/*/b.yml", "annotations/entered/b.yml", id="its-name"),
    pytest.param("annotations/*/drafts/b.yml", "annotations/entered/drafts/b.yml",
                 id="the-names-after-a-wildcard"),
    pytest.param("annotations/entered/b.yml", "annotations/entered/b.yml", id="no-wildcard"),
    pytest.param("annotations/*/drafts/*.yml", "annotations/entered/drafts/b.yml",
                 id="a-name-between-wildcards"),
])
def test_a_folder_the_glob_finds_a_name_in_without_listing_it_is_no_concern(
    stored_links: list[tuple], pattern: str, file: str
) -> None:
    """A folder one may enter but not list (mode 111): the glob finds b.yml in it by name,
    and its claim is checked, as in a folder of mode 755 (Python 3.12's glob lists the
    folder of each name, and found none there)."""
    Path("annotate.toml").write_text(f'annotations = ["{pattern}"]\n'
                                     + Path("annotate.toml").read_text())
    write(Path(file), _B_CLAIM)
    readable = _run_as_a_user("check", "--format", "json")
    Path("annotations/entered").chmod(0o111)
    try:
        entered = _run_as_a_user("check", "--format", "json")
    finally:
        Path("annotations/entered").chmod(0o755)
    assert entered == readable
    assert [ref["claim"] for ref in json.loads(readable[1])["results"]] == ["b"]


@pytest.mark.parametrize(("pattern", "refused"), [
    pytest.param("annotations/*/*.yml", True, id="a-wildcard-follows-it"),
    pytest.param("annotations/**/*.yml", False, id="double-star-does-not-follow-it"),
])
def test_a_symlinked_folder_is_checked_where_the_glob_follows_it(
    stored_links: list[tuple], tmp_path: Path, pattern: str, refused: bool
) -> None:
    """As Python's glob, which follows a symlinked folder but by ``**``: one that cannot be
    read leaves its claims out where the glob follows it."""
    Path("annotate.toml").write_text(f'annotations = ["{pattern}"]\n'
                                     + Path("annotate.toml").read_text())
    elsewhere = tmp_path / "elsewhere" / "private"
    write(elsewhere / "b.yml", _B_CLAIM)
    Path("annotations/shared").symlink_to(elsewhere)
    elsewhere.chmod(0)
    try:
        code, _, error = _run_as_a_user("check")
    finally:
        elsewhere.chmod(0o755)
    assert (code, error.startswith("Error: cannot read the folder ")) == (
        (2, True) if refused else (1, False))
    assert _stored_links() == stored_links


@pytest.mark.parametrize("pattern", [
    pytest.param("annotations/**/*.yml", id="double-star"),
    pytest.param("annotations/*.yml", id="a-wildcard"),
    pytest.param("annotations/b.yml", id="its-own-name"),
])
def test_a_symlink_into_a_folder_the_user_cannot_enter_is_named_as_a_symlink(
    stored_links: list[tuple], tmp_path: Path, pattern: str
) -> None:
    """Whether it leads to a file or a folder cannot be told: not "the folder annotations/b.yml",
    nor "the folder annotations", which can be read."""
    Path("annotate.toml").write_text(f'annotations = ["{pattern}"]\n'
                                     + Path("annotate.toml").read_text())
    elsewhere = tmp_path / "elsewhere" / "private"
    write(elsewhere / "b.yml", _B_CLAIM)
    Path("annotations/b.yml").symlink_to(elsewhere / "b.yml")
    elsewhere.chmod(0)
    try:
        outcome = _run_as_a_user("check")
    finally:
        elsewhere.chmod(0o755)
    assert outcome == (2, "", (
        "Error: cannot tell where the symlink annotations/b.yml leads (Permission denied), "
        f"which '{pattern}' reaches: the annotation files there would be left out (hint: make "
        "the folder it leads into readable, or change 'annotations' or 'articles' in "
        "annotate.toml so that they do not reach it)\n"
    ))
    assert _stored_links() == stored_links


@pytest.mark.parametrize("pattern", ["annotations/*.yml", "annotations/b.yml"],
                         ids=["a-wildcard", "its-own-name"])
def test_a_diff_beside_a_symlink_into_a_folder_the_user_cannot_enter(
    stored_links: list[tuple], tmp_path: Path, pattern: str
) -> None:
    """``diff --output`` reads the globs so as not to write over an annotation file: what
    the symlink leads to cannot be told, and it is passed over, as a folder that cannot be
    read is (``link`` names it)."""
    Path("annotate.toml").write_text(f'annotations = ["{pattern}"]\n'
                                     + Path("annotate.toml").read_text())
    expected = run("diff", "vllm@v1", "vllm@v2").stdout
    elsewhere = tmp_path / "elsewhere" / "private"
    write(elsewhere / "b.yml", _B_CLAIM)
    Path("annotations/b.yml").symlink_to(elsewhere / "b.yml")
    elsewhere.chmod(0)
    try:
        code, _, error = _run_as_a_user("diff", "vllm@v1", "vllm@v2", "--output", "diff.md")
    finally:
        elsewhere.chmod(0o755)
    assert (code, error) == (0, (
        "Note: the annotation files, the index or annotate changed since the last link; run "
        "'annotate link' (or 'annotate check') to bring the claims shown here up to date\n"))
    assert Path("diff.md").read_text() == expected


def test_globs_that_differ_in_file_names_only_walk_their_folders_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check for unreadable folders lists each folder once more than the globs do, not
    once per pattern: ``*.yml`` and ``*.yaml`` over a large tree (a node_modules) took
    link from 0.8 s to 1.8 s."""
    deep = tmp_path / "annotations" / "site" / "node_modules" / "pkg"
    deep.mkdir(parents=True)
    patterns = ("annotations/**/*.yml", "annotations/**/*.yaml")
    listed: list[str] = []
    scandir = os.scandir

    def counting(path: str | os.PathLike[str] = ".") -> object:
        listed.append(os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", counting)
    for pattern in patterns:
        list(tmp_path.glob(pattern))
    by_globs = listed.count(str(deep))
    listed.clear()
    links.annotation_files(replace(load_config(tmp_path), annotations=patterns, articles=()))
    assert (by_globs, listed.count(str(deep))) == (by_globs, by_globs + 1)


def _stored_links() -> list[tuple]:
    with contextlib.closing(sqlite3.connect(DB)) as conn:
        return conn.execute("SELECT * FROM claim_refs ORDER BY 1").fetchall()


def _target_not_indexed() -> None:
    """The table's project with target v3, configured and never indexed (an ``index
    --keep-going`` that could not fetch it), and a claim of two refs pinned at v1."""
    Path("annotate.toml").write_text('[repos.vllm]\nversions = ["v1", "v2", "v3"]\n')
    claims = claim_yaml("one", ["c/changed-body/m.py::cdiv", "c/fresh-file-unchanged/m.py::total"])
    write(Path("annotations/a.yml"), annotation("blog/a.md", "vllm@v1", claims))


TARGET_NOT_INDEXED = ("target vllm@v3 is not indexed, so its refs were compared with nothing: "
                      "run 'annotate index vllm@v3'")


def test_unindexed_configured_target_says_which_index_to_run(table_index: Path) -> None:
    """An explicit ``--against`` that is not indexed is an error (test_bad_against_*): a typo in CI
    must not pass as "nothing stale"; nor does a configured target not indexed: every format
    says it, as an error."""
    copy_project(table_index)
    _target_not_indexed()
    code, report = check_json()
    assert code == 2
    assert [(result["status"], result["target"]) for result in report["results"]] == [
        ("unindexed", "vllm@v3"), ("unindexed", "vllm@v3")]
    assert "annotate index vllm@v3" in report["results"][0]["message"]
    assert report["summary"]["unindexed_targets"] == ["vllm@v3"]
    note = TARGET_NOT_INDEXED
    github = run("check", "--format", "github").stdout.splitlines()
    assert github[0] == f"::error title=annotate%3A target not indexed::{note}"
    assert github[1].endswith(f"; not checked; {note}")
    assert run("check").stdout.endswith(f"; not checked; {note}\n")
    escaped = note.replace("fail_on", "fail\\_on")
    assert f"**Error**: {escaped}." in run("check", "--format", "markdown").stdout
    sarif = json.loads(run("check", "--format", "sarif").stdout)
    invocation = sarif["runs"][0]["invocations"][0]
    assert invocation == {"executionSuccessful": False, "toolExecutionNotifications": [
        {"level": "error", "message": {"text": note}}]}


@pytest.mark.parametrize("args", [
    pytest.param((), id="plain"),
    pytest.param(("--exit-zero",), id="exit-zero"),
    pytest.param(("--format", "github"), id="github"),
])
def test_a_target_not_indexed_fails_the_check_naming_the_index_to_run(
    table_index: Path, args: tuple[str, ...]
) -> None:
    """``annotate index --keep-going && annotate check`` in CI, when the target's download
    failed: nothing was checked, which is no green run, --exit-zero or not (as an annotation
    file that cannot be read). The report is printed first, whole."""
    copy_project(table_index)
    _target_not_indexed()
    result = run("check", *args)
    assert (result.exit_code, result.stderr) == (2, (
        "Error: target vllm@v3 is not indexed, so 2 refs were not checked; run 'annotate "
        "index vllm@v3'\n"))
    assert TARGET_NOT_INDEXED in result.stdout


def test_a_target_not_indexed_and_a_file_not_read_are_one_error(table_index: Path) -> None:
    copy_project(table_index)
    _target_not_indexed()
    write(Path("annotations/bad.yml"), "claims: [\n")
    result = run("check")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        "Error: 1 annotation file could not be read (see above); target vllm@v3 is not "
        "indexed, so 2 refs were not checked; run 'annotate index vllm@v3'")


def test_a_target_no_source_had_is_named_with_how_to_give_it_one(
    table_index: Path, tmp_path: Path
) -> None:
    """The index advice a pin not indexed gets: the last index found it in no source."""
    copy_project(table_index)
    _target_not_indexed()
    empty = tmp_path / "empty-clone"
    subprocess.run(["git", "init", "-q", str(empty)], check=True)
    Path("annotate.toml").write_text(f'[repos.vllm]\ngit = "{empty}"\nsources = ["git"]\n'
                                     'versions = ["v1", "v2", "v3"]\n')
    assert run("index", "vllm@v3", "--keep-going").exit_code == 0
    result = run("check")
    assert (result.exit_code, result.stderr) == (2, (
        "Error: target vllm@v3 is not indexed, so 2 refs were not checked; 'annotate index' "
        "could not fetch it from its sources (git): set git of [repos.vllm] in annotate.toml "
        "to a local clone that has it, or run 'annotate index vllm@v3 --from PATH' on a "
        "checkout of it\n"))


def test_a_pin_not_indexed_is_still_no_error(table_index: Path) -> None:
    """Its refs are unindexed, a warning: fail_on decides (test_exit_code_by_status)."""
    copy_project(table_index)
    claims = claim_yaml("one", [STATUS_REFS["unindexed"], STATUS_REFS["fresh"]])
    write(Path("annotations/a.yml"), annotation("blog/a.md", "vllm@v1", claims))
    result = run("check", "--format", "github")
    assert (result.exit_code, result.stderr) == (0, "")
    assert "::error" not in result.stdout


# --- exit codes -------------------------------------------------------------------------

STATUS_REFS = {
    "fresh": "c/fresh-file-unchanged/m.py::total",
    "cosmetic": "c/cosmetic-comment/m.py::total",
    "unindexed": "vllm@v0:c/fresh-file-unchanged/m.py::total",
    "changed": "c/changed-body/m.py::cdiv",
    "moved": "c/moved-renamed/m.py::capture_graph",
    "removed": "c/removed/m.py::is_neuron",
    "broken": "c/broken/m.py::nope",
}


@pytest.mark.parametrize(("status", "code"), [
    ("fresh", 0), ("cosmetic", 0), ("unindexed", 0), ("changed", 1), ("moved", 1),
    ("removed", 1), ("broken", 1), ("quote-missing", 1), ("relation-missing", 1),
])
def test_exit_code_by_status(table_index: Path, status: str, code: int) -> None:
    copy_project(table_index)
    if status in STATUS_REFS:
        claims = claim_yaml("the-claim", [STATUS_REFS[status]])
    else:
        claims = _case_claim(status, CASES[status]).replace(f"id: {status}", "id: the-claim")
    write(Path("annotations/a.yml"), annotation("blog/a.md", "vllm@v1", claims))
    result = run("check")
    assert result.exit_code == code, result.output
    assert f" 1 {status}," in result.stdout.splitlines()[-1].replace(";", ",")
    assert run("check", "--exit-zero").exit_code == 0


def _two_claims() -> None:
    claims = claim_yaml("changed", [STATUS_REFS["changed"]])
    claims += claim_yaml("removed", [STATUS_REFS["removed"]])
    write(Path("annotations/a.yml"), annotation("blog/a.md", "vllm@v1", claims))


def test_fail_on_only_removed(table_index: Path) -> None:
    copy_project(table_index)
    Path("annotate.toml").write_text('fail_on = ["removed"]\n' + TABLE_CONFIG)
    _two_claims()
    code, report = check_json()
    assert code == 1
    failing = {r["claim"]: r["failing"] for r in report["results"]}
    assert failing == {"changed": False, "removed": True}
    claims = claim_yaml("changed", [STATUS_REFS["changed"]])
    claims += claim_yaml("moved", [STATUS_REFS["moved"]])
    write(Path("annotations/a.yml"), annotation("blog/a.md", "vllm@v1", claims))
    assert run("check").exit_code == 0


def test_nothing_stale_exits_zero(table_index: Path) -> None:
    copy_project(table_index)
    claims = claim_yaml("ok", [STATUS_REFS["fresh"], STATUS_REFS["cosmetic"]])
    write(Path("annotations/a.yml"), annotation("blog/a.md", "vllm@v1", claims))
    result = run("check")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.splitlines()[-1] == (
        "1 claim, 2 refs: 1 fresh, 1 cosmetic, 0 changed, 0 moved, 0 removed, "
        "0 quote-missing, 0 relation-missing, 0 broken, 0 unindexed; nothing stale"
    )


@pytest.mark.parametrize(("against", "error"), [
    pytest.param("vllm", "Error: Invalid value for '--against': 'vllm' is not REPO@VERSION",
                 id="not-repo-at"),
    pytest.param("nope@v1", "Error: unknown repo 'nope'", id="unknown-repo"),
    pytest.param("vllm@v9", "Error: Invalid value for '--against': vllm@v9 is neither indexed "
                 "nor configured (vllm has v0, v1, v2); fix the version, or run 'annotate "
                 "index vllm@v9' to index it (see 'annotate check --help')",
                 id="neither-indexed-nor-configured"),
    pytest.param("vllm@v3:vllm/utils.py::cdiv",
                 "Error: Invalid value for '--against': invalid version 'v3:vllm/utils.py::cdiv'",
                 id="a-ref-not-a-version"),
    pytest.param(("vllm@v2", "vllm@v3"), "Error: Invalid value for '--against': give one "
                 "version per repo", id="two-for-one-repo"),
])
def test_bad_against_is_a_usage_error(
    table_index: Path, against: str | tuple[str, ...], error: str
) -> None:
    copy_project(table_index)
    _two_claims()
    versions = (against,) if isinstance(against, str) else against
    result = run("check", *(arg for version in versions for arg in ("--against", version)))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1].startswith(error)


@pytest.mark.parametrize(("bad", "error"), [
    pytest.param("claims: [\n", "annotations/bad.yml:2: invalid YAML", id="invalid-yaml"),
    pytest.param("article: a.md\nclaims:\n  - id: Bad Id\n    text: x\n    refs: [m.py::f]\n",
                 "annotations/bad.yml:3: invalid claim id 'Bad Id'", id="invalid-claim"),
    pytest.param(b"article: a.md\n# caf\xe9\n", "annotations/bad.yml:2: not valid UTF-8",
                 id="unreadable-bytes"),
])
def test_bad_annotation_file_exits_2_after_the_report(
    table_index: Path, bad: str | bytes, error: str
) -> None:
    copy_project(table_index)
    _two_claims()
    write(Path("annotations/bad.yml"), bad)
    for _ in range(2):  # the second run links again: a failed file never records a link
        code, report = check_json("--exit-zero")
        assert code == 2
        assert {r["claim"] for r in report["results"]} == {"changed", "removed"}
        [unread] = report["input_errors"]
        assert f"{unread['file']}:{unread['line']}: {unread['message']}".startswith(error)
    result = run("check")
    assert result.exit_code == 2
    errors = result.stderr.splitlines()
    assert errors[0].startswith(f"Error: {error}")
    assert errors[-1] == "Error: 1 annotation file could not be read (see above)"
    assert "blog/a.md" in result.stdout


def test_the_claims_a_broken_file_had_are_not_reported_and_ci_sees_why(
    table_index: Path
) -> None:
    copy_project(table_index)
    _two_claims()
    good = annotation("blog/b.md", "vllm@v1", claim_yaml("gone", [STATUS_REFS["removed"]]))
    write(Path("annotations/b.yml"), good)
    assert {r["claim"] for r in check_json("--exit-zero")[1]["results"]} == {
        "changed", "removed", "gone"}
    write(Path("annotations/b.yml"), good.replace("claims:", "claims: ["))
    code, report = check_json("--exit-zero")
    assert code == 2
    assert {r["claim"] for r in report["results"]} == {"changed", "removed"}
    result = run("check", "--format", "github")
    assert result.exit_code == 2
    assert "::error file=annotations/b.yml,line=" in result.stdout
    assert "title=annotate%3A annotation file not read::invalid YAML" in result.stdout
    lines = result.stdout.splitlines()
    assert lines[0].startswith("::error file=annotations/b.yml,line=")
    assert lines[1].endswith("; stale; 1 annotation file could not be read (not checked)")


@pytest.mark.parametrize(("b_yml", "claims", "unreadable"), [
    pytest.param("claims: [\n", {"changed", "removed"}, ["annotations/b.yml"],
                 id="an-unreadable-file-and-not-its-old-claims"),
    pytest.param(annotation("blog/b.md", "vllm@v1", claim_yaml("broken", ["m.py::nothing"])),
                 {"changed", "removed", "broken"}, [], id="a-broken-ref-is-a-result"),
])
def test_a_check_of_the_links_brought_up_to_date_says_which_files_it_could_not_read(
    table_index: Path, b_yml: str, claims: set[str], unreadable: list[str]
) -> None:
    copy_project(table_index)
    _two_claims()
    write(Path("annotations/b.yml"), annotation(
        "blog/b.md", "vllm@v1", claim_yaml("gone", [STATUS_REFS["removed"]])))
    assert run("link").exit_code == 0
    write(Path("annotations/b.yml"), b_yml)
    config = load_config()
    options = CheckOptions({}, datetime.date.today(), config.fail_on)
    with open_database(DB) as database:
        checked = check_linked(database, config, options, annotation_files(config))
    assert {result.claim for result in checked.report.results} == claims
    assert [error.file for error in checked.unreadable] == unreadable
    assert [error.file for error in checked.report.input_errors] == unreadable


def test_check_help_says_what_fails_and_what_exit_zero_leaves() -> None:
    """Not 'exit 1 when any is stale': a broken ref fails, a stale status left out of
    fail_on does not, and --exit-zero does not hide an unreadable file nor a target not
    indexed."""
    shown = " ".join(run("check", "--help").stdout.split())
    assert "exit 1 when any fails. A ref fails when its status is in the config's fail_on" in shown
    assert ("Exit 0 even when refs fail (an unreadable annotation file, or a target not "
            "indexed, still exits 2)") in shown


def test_output_file(table_index: Path) -> None:
    copy_project(table_index)
    _two_claims()
    result = run("check", "--format", "json", "--output", "report.json")
    assert (result.exit_code, result.stdout) == (1, "")
    report = json.loads(Path("report.json").read_text(encoding="utf-8"))
    assert report["summary"]["failing"] == 2
    assert run("check", "--output", "report.txt", "--exit-zero").exit_code == 0
    assert Path("report.txt").read_text(encoding="utf-8").endswith("; stale\n")
    unwritable = run("check", "--output", "no/such/dir/report.txt")
    assert unwritable.exit_code == 2
    assert unwritable.stderr.startswith("Error: cannot write no/such/dir/report.txt: ")


REPORT_COMMANDS = [
    pytest.param(("check", "--exit-zero"), id="check"),
    pytest.param(("diff", "vllm@v1", "vllm@v2"), id="diff"),
]


@pytest.mark.parametrize("command", REPORT_COMMANDS)
def test_a_report_through_a_dangling_symlink_is_written_where_it_points(
    table_index: Path, command: tuple[str, ...]
) -> None:
    """As ``open()`` writes through it: the link stays, its file is made."""
    copy_project(table_index)
    _two_claims()
    Path("reports").mkdir()
    Path("report.txt").symlink_to("reports/latest.txt")
    result = run(*command, "-o", "report.txt")
    assert (result.exit_code, result.stdout) == (0, "")
    assert "Error" not in result.stderr
    assert Path("report.txt").is_symlink()
    assert Path("reports/latest.txt").read_text(encoding="utf-8").endswith("\n")


@pytest.mark.parametrize("command", REPORT_COMMANDS)
def test_a_report_to_a_dash_goes_to_standard_output(
    table_index: Path, command: tuple[str, ...]
) -> None:
    """``-o -`` is standard output, as for click's file options and most tools; a file
    named ``-`` is ``-o ./-``."""
    copy_project(table_index)
    _two_claims()
    printed = run(*command)
    dashed = run(*command, "-o", "-")
    assert (dashed.exit_code, dashed.stdout, dashed.stderr) == (
        printed.exit_code, printed.stdout, printed.stderr)
    assert dashed.stdout.endswith("\n") and len(dashed.stdout.splitlines()) > 3
    assert not Path("-").exists()
    assert run(*command, "-o", "./-").stdout == ""
    assert Path("-").read_text(encoding="utf-8") == printed.stdout


@pytest.mark.parametrize("command", REPORT_COMMANDS)
@pytest.mark.parametrize("links", [
    pytest.param({"report.txt": "report.txt"}, id="a-symlink-to-itself"),
    pytest.param({"report.txt": "other.txt", "other.txt": "report.txt"},
                 id="two-symlinks-to-each-other"),
])
def test_a_report_path_that_is_a_symlink_loop_is_refused_and_left_alone(
    table_index: Path, command: tuple[str, ...], links: dict[str, str]
) -> None:
    """As ``open()`` refuses it (ELOOP): the links are the user's, not replaced by a file."""
    copy_project(table_index)
    _two_claims()
    for name, target in links.items():
        Path(name).symlink_to(target)
    before = sorted(os.listdir("."))
    result = run(*command, "-o", "report.txt")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.splitlines()[-1] == (  # diff's note that no claim is linked first
        "Error: cannot write report.txt: it is a symlink that leads back to itself (Too many "
        "levels of symbolic links); remove the link, or pass another --output")
    assert sorted(os.listdir(".")) == before
    assert {name: os.readlink(name) for name in links} == links


@pytest.mark.parametrize("output", [
    pytest.param("reports/report.txt", id="a-folder-linked-to-itself"),
    pytest.param("reports/latest/report.txt", id="below-a-folder-linked-to-itself"),
])
def test_a_report_below_a_symlink_loop_names_the_link(table_index: Path, output: str) -> None:
    """The loop is a folder's link, not the report's: the error names that folder."""
    copy_project(table_index)
    _two_claims()
    Path("reports").symlink_to("reports")
    result = run("check", "-o", output)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.splitlines()[-1] == (
        f"Error: cannot write {output}: its folder reports is a symlink that leads back to "
        "itself (Too many levels of symbolic links); remove the link, or pass another --output")
    assert os.readlink("reports") == "reports"


@pytest.mark.parametrize("command", [
    *(pytest.param(("check", "--format", name), id=f"check-{name}")
      for name in ("text", "json", "github", "sarif", "markdown")),
    *(pytest.param(("diff", "vllm@v1", "vllm@v2", "--format", name), id=f"diff-{name}")
      for name in ("markdown", "json", "html")),
])
def test_output_file_holds_what_standard_output_shows(
    table_index: Path, command: tuple[str, ...]
) -> None:
    copy_project(table_index)
    _two_claims()
    shown = run(*command).stdout
    assert run(*command, "--output", "report").stdout == ""
    written = Path("report").read_text(encoding="utf-8")
    assert (written, written.endswith("\n")) == (shown, True)


@pytest.mark.parametrize("output", [
    pytest.param(str(DB), id="the-index"),
    pytest.param(f"{DB}-wal", id="the-index-log"),
    pytest.param("annotate.toml", id="the-config"),
    pytest.param("./annotations/a.yml", id="an-annotation-file"),
])
@pytest.mark.parametrize("command", [
    pytest.param(("check", "--format", "sarif"), id="check"),
    pytest.param(("diff", "vllm@v1", "vllm@v2"), id="diff"),
])
def test_output_over_an_input_is_refused_and_keeps_it(
    table_index: Path, command: tuple[str, ...], output: str
) -> None:
    copy_project(table_index)
    _two_claims()
    Path(f"{DB}-wal").touch()
    before = Path(output).read_bytes()
    result = run(*command, "--output", output)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"Error: Invalid value for '--output' / '-o': {Path(output)} is one of annotate's "
        "inputs, which the "
        f"report would replace; write the report to another file (see 'annotate {command[0]} "
        "--help')\n")
    assert Path(output).read_bytes() == before


@pytest.mark.parametrize(("output", "glob"), [
    pytest.param("annotations/b.yml", "'annotations/**/*.yml' of 'annotations' looks for "
                 "annotation files", id="an-annotation-glob"),
    pytest.param("./annotations/old/b.yaml", "'annotations/**/*.yaml' of 'annotations' looks "
                 "for annotation files", id="below-a-double-star"),
    pytest.param("articles/diff.md", "'articles/**/*.md' of 'articles' looks for Markdown "
                 "articles", id="an-article-glob"),
])
@pytest.mark.parametrize("command", [
    pytest.param(("check", "--format", "markdown"), id="check"),
    pytest.param(("diff", "vllm@v1", "vllm@v2"), id="diff"),
])
def test_output_where_a_glob_finds_annotations_is_refused(
    table_index: Path, command: tuple[str, ...], output: str, glob: str
) -> None:
    """Not there yet, it is no input; written, the next link would read the report as an
    annotation file (which does not load: check fails) or an article (its permalinks
    claims)."""
    copy_project(table_index)
    _two_claims()
    Path("annotations/old").mkdir()
    Path("articles").mkdir()
    result = run(*command, "--output", output)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"Error: Invalid value for '--output' / '-o': {Path(output)} is where the glob "
        f"{glob}: the next link would read the "
        f"report as one; write it elsewhere (see 'annotate {command[0]} --help')\n")
    assert not Path(output).exists()


@pytest.mark.parametrize(("output", "replaces"), [
    pytest.param(str(DB), True, id="the-configured-index"),
    pytest.param(f"{DB}-shm", True, id="its-shared-memory"),
    pytest.param("other.db-wal", True, id="the-log-of-the-index-in-use"),
    pytest.param("annotate.toml", True, id="the-config"),
    pytest.param("./annotations/a.yml", True, id="an-annotation-file"),
    pytest.param("hard-link.json", True, id="a-hard-link-to-one"),
    pytest.param("report.json", False, id="a-new-file"),
    pytest.param("loop.txt", False, id="a-symlink-loop"),
])
def test_what_a_report_would_replace_of_the_files_a_run_reads(
    table_index: Path, output: str, replaces: bool
) -> None:
    copy_project(table_index)
    _two_claims()
    os.link("annotations/a.yml", "hard-link.json")
    Path("loop.txt").symlink_to("loop.txt")
    config = load_config()
    assert replaces_an_input(Path(output), config, annotation_files(config),
                             Path("other.db")) is replaces


@pytest.mark.parametrize("command", [
    pytest.param(("check", "--format", "markdown"), id="check"),
    pytest.param(("diff", "vllm@v1", "vllm@v2"), id="diff"),
])
def test_output_in_a_symlinked_annotation_folder_is_refused(
    table_index: Path, tmp_path_factory: pytest.TempPathFactory, command: tuple[str, ...]
) -> None:
    """annotations/ a symlink to a folder outside the project (a shared catalogue): the
    glob looks through it, so a report written there would be read as an annotation file
    by the next link (the path was compared as it really is, outside the project)."""
    copy_project(table_index)
    shared = tmp_path_factory.mktemp("shared")
    Path("annotations").symlink_to(shared, target_is_directory=True)
    _two_claims()
    result = run(*command, "--output", "annotations/b.yml")
    assert (result.exit_code, result.stdout) == (2, "")
    assert "annotations/b.yml is where the glob 'annotations/**/*.yml' of 'annotations' " \
           "looks for annotation files" in result.stderr
    assert not (shared / "b.yml").exists()


def test_output_through_a_hard_link_to_an_input_is_refused(table_index: Path) -> None:
    copy_project(table_index)
    _two_claims()
    os.link("annotations/a.yml", "report.json")
    before = Path("annotations/a.yml").read_bytes()
    result = run("check", "--format", "json", "--output", "report.json")
    assert (result.exit_code, result.stdout) == (2, "")
    assert "report.json is one of annotate's inputs" in result.stderr
    assert Path("annotations/a.yml").read_bytes() == before


def test_output_over_the_configured_index_is_refused_when_another_is_used(
    table_index: Path
) -> None:
    copy_project(table_index)
    _two_claims()
    shutil.copyfile(DB, "scratch.db")
    before = DB.read_bytes()
    result = run("--db", "scratch.db", "check", "--output", str(DB))
    assert (result.exit_code, result.stdout) == (2, "")
    assert "is one of annotate's inputs" in result.stderr
    assert DB.read_bytes() == before


# --- waivers ----------------------------------------------------------------------------

WAIVED = """\
article: blog/w.md
at: vllm@v1
claims:
  - id: waived
    text: "cdiv rounds up"
    refs: [c/changed-body/m.py::cdiv]
    waive:
      - {status: changed, until: 2027-03-31, reason: "reviewed: same result"}
  - id: other-status
    text: "is_neuron"
    refs: [c/removed/m.py::is_neuron]
    waive:
      - {status: changed, until: 2027-03-31, reason: "only a change is accepted"}
"""


@pytest.mark.parametrize(("today", "expired"), [
    pytest.param("2027-03-30", False, id="before"),
    pytest.param("2027-03-31", False, id="on-the-day"),
    pytest.param("2027-04-01", True, id="after"),
])
def test_waiver_silences_until_its_date(table_index: Path, today: str, expired: bool) -> None:
    copy_project(table_index)
    write(Path("annotations/w.yml"), WAIVED.split("  - id: other-status")[0])
    code, report = check_json("--today", today)
    [result] = report["results"]
    assert code == (1 if expired else 0)
    assert result["status"] == "changed"
    assert (result["waived_until"], result["waiver_expired"]) == ("2027-03-31", expired)
    assert result["waiver_reason"] == "reviewed: same result"
    assert result["failing"] is expired
    assert report["summary"]["waived"] == (0 if expired else 1)
    text = run("check", "--today", today).stdout
    note = "[waiver expired 2027-03-31]" if expired else (
        "[waived until 2027-03-31 (reviewed: same result)]")
    assert note in text
    assert text.rstrip().endswith("; stale" if expired else "(1 waived); nothing stale")


def test_a_renewed_waiver_counts(table_index: Path) -> None:
    copy_project(table_index)
    renewed = WAIVED.split("  - id: other-status")[0] + (
        '      - {status: changed, until: 2028-06-30, reason: "reviewed again"}\n')
    write(Path("annotations/w.yml"), renewed)
    code, report = check_json("--today", "2027-05-01")
    [result] = report["results"]
    assert code == 0
    assert (result["waived_until"], result["waiver_reason"]) == ("2028-06-30", "reviewed again")
    assert result["waiver_expired"] is False


def test_waiver_of_another_status_does_not_silence(table_index: Path) -> None:
    copy_project(table_index)
    write(Path("annotations/w.yml"), WAIVED)
    code, report = check_json("--today", "2027-01-01")
    results = {r["claim"]: r for r in report["results"]}
    assert code == 1
    assert results["other-status"]["status"] == "removed"
    assert results["other-status"]["failing"] is True
    assert results["other-status"]["waived_until"] is None
    assert results["waived"]["failing"] is False


def test_a_waiver_of_removed_silences_a_removed_ref(table_index: Path) -> None:
    """A removed ref is checked again once the others are (where its code went is asked
    for all at once); its waiver holds all the same."""
    copy_project(table_index)
    write(Path("annotations/w.yml"), WAIVED.replace(
        '{status: changed, until: 2027-03-31, reason: "only a change is accepted"}',
        '{status: removed, until: 2027-03-31, reason: "gone on purpose"}'))
    code, report = check_json("--today", "2027-01-01")
    removed = next(r for r in report["results"] if r["claim"] == "other-status")
    assert code == 0
    assert (removed["status"], removed["failing"]) == ("removed", False)
    assert (removed["waived_until"], removed["waiver_reason"]) == (
        "2027-03-31", "gone on purpose")


# --- the fake vLLM: its change cases, through annotate.toml --------------------------------

FAKE_CONFIG = """\
[repos.vllm]
git = "{url}"
versions = ["v0.1.0", "v0.2.0", "v0.3.0"]
"""

# Expected status and kinds of each fakevllm.CASES entry, checked against its new tag.
FAKE_EXPECTED: dict[str, tuple[str, tuple[str, ...]]] = {
    "moved": ("moved", ()),
    "moved_and_changed": ("moved", ("members", "body")),
    "renamed": ("moved", ()),
    "signature_changed": ("changed", ("signature",)),
    "body_changed": ("changed", ("body",)),
    "decorator_changed": ("changed", ("signature",)),
    "bases_changed": ("changed", ("bases",)),
    "member_added": ("changed", ("members",)),
    "formatting_only": ("cosmetic", ()),
    "attribute_value_changed": ("changed", ("value",)),
    "constant_value_changed": ("changed", ("value",)),
    "removed": ("removed", ()),
    "ambiguous_move": ("moved", ("members",)),
}


@pytest.fixture(scope="module")
def fake_index(tmp_path_factory: pytest.TempPathFactory, fake_vllm: FakeRepo) -> Path:
    root = tmp_path_factory.mktemp("fake")
    with pytest.MonkeyPatch.context() as patch:
        _module_env(patch, root)
        write(root / "annotate.toml", FAKE_CONFIG.format(url=fake_vllm.url))
        done = run("index", *(f"vllm@{tag}" for tag in fakevllm.TAGS))
        assert done.exit_code == 0, done.output
    return root


def _fake_claims(new_tag: str) -> str:
    claims = ""
    for name, case in fakevllm.CASES.items():
        if case.old is not None and case.new_tag == new_tag:
            claim_id = name.replace("_", "-")
            ref = f"vllm@{case.old_tag}:{case.old[0]}::{case.old[1]}"
            claims += claim_yaml(claim_id, [ref], text=case.note or name)
    return claims


@pytest.fixture(scope="module")
def fake_reports(fake_index: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Per new tag: check of that tag's cases against it."""
    reports = {}
    for tag in ("v0.2.0", "v0.3.0"):
        root = tmp_path_factory.mktemp(f"fake-check-{tag}")
        with pytest.MonkeyPatch.context() as patch:
            _module_env(patch, root)
            copy_project(fake_index)
            write(root / "articles" / "cases.yml", annotation("blog/cases.md", "vllm@v0.1.0",
                                                              _fake_claims(tag)))
            code, reports[tag] = check_json("--against", f"vllm@{tag}")
            assert code == 1
    return reports


def _stored_comparisons() -> list[tuple]:
    with connected(DB) as conn:
        return sorted(conn.execute("SELECT * FROM match_cache").fetchall(), key=repr)


def _forget_comparisons() -> None:
    with connected(DB) as conn:
        conn.execute("DELETE FROM match_cache")


def _write_claims_at_their_old_tags() -> None:
    """A claim of each fake vLLM case, its ref pinned at the case's old tag: v0.1.0 or
    v0.2.0, two version pairs against v0.3.0."""
    claims = "".join(
        claim_yaml(name.replace("_", "-"), [f"vllm@{case.old_tag}:{case.old[0]}::{case.old[1]}"])
        for name, case in fakevllm.CASES.items() if case.old is not None)
    write(Path("articles/cases.yml"), annotation("blog/cases.md", "vllm@v0.1.0", claims))


def test_refs_pinned_at_two_versions_are_compared_in_two_processes_as_in_one(
    fake_index: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each case's ref at its old tag, against v0.3.0: two version pairs, v0.1.0 and
    v0.2.0 -> v0.3.0, compared by two processes at once with ``--workers 2``; the report
    and the comparisons stored are those of one process, which compares none again."""
    matchers: list[tuple[int, int]] = []  # the pairs matched in this process
    real_init = matching.Matcher.__init__

    def recording_init(self: matching.Matcher, database: Any, a: int, b: int,
                       *args: Any, **kwargs: Any) -> None:
        matchers.append((a, b))
        real_init(self, database, a, b, *args, **kwargs)

    monkeypatch.setattr(matching.Matcher, "__init__", recording_init)
    copy_project(fake_index)
    _write_claims_at_their_old_tags()
    one_code, one = check_json("--against", "vllm@v0.3.0", "--workers", "1")
    one_stored = _stored_comparisons()
    assert (len(set(matchers)), forks) == (2, [])
    _forget_comparisons()
    matchers.clear()
    two_code, two = check_json("--against", "vllm@v0.3.0", "--workers", "2")
    assert len(forks) == 1  # the second pair's process: the first is compared here
    assert len(matchers) == 1  # that first pair's, once
    assert (two_code, two) == (one_code, one)
    assert _stored_comparisons() == one_stored
    assert {result["status"] for result in one["results"]} >= {"moved", "changed", "removed"}
    again_code, again = check_json("--against", "vllm@v0.3.0", "--workers", "2")
    assert (again_code, again, len(forks)) == (one_code, one, 1)  # all stored: no process


def test_ctrl_c_while_pairs_are_compared_apart_ends_every_process_and_stores_nothing(
    fake_index: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C while this process compares its pair and a forked one the other: the child
    is killed and reaped, the run ends as any interrupted run (130), and no comparison is
    stored."""
    from annotations import check

    main_process, compare = os.getpid(), check._comparisons

    def interrupted_here(*args: Any) -> Any:
        if os.getpid() == main_process:
            raise KeyboardInterrupt
        return compare(*args)

    monkeypatch.setattr(check, "_comparisons", interrupted_here)
    copy_project(fake_index)
    _write_claims_at_their_old_tags()
    result = run("check", "--against", "vllm@v0.3.0", "--workers", "2")
    assert result.exit_code == 130
    assert result.stderr == "Interrupted; nothing half-written was kept.\n"
    [child] = forks
    with pytest.raises(ChildProcessError):
        os.waitpid(child, os.WNOHANG)  # reaped already
    assert _stored_comparisons() == []


@pytest.mark.parametrize("second_pin", [
    pytest.param(None, id="one-pin"),
    pytest.param("v0.3.0", id="and-a-pin-at-the-target"),  # compared at once, where it is
])
def test_refs_of_one_version_pair_are_compared_in_one_process(
    fake_index: Path, forks: list[int], second_pin: str | None
) -> None:
    copy_project(fake_index)
    claims = _fake_claims("v0.2.0")
    if second_pin is not None:
        claims += claim_yaml("at-the-target",
                             [f"vllm@{second_pin}:vllm/config/cache.py::CacheConfig"])
    write(Path("articles/cases.yml"), annotation("blog/cases.md", "vllm@v0.1.0", claims))
    code, report = check_json("--against", "vllm@v0.3.0", "--workers", "4")
    assert code == 1
    assert not forks
    statuses = {result["claim"]: result["status"] for result in report["results"]}
    assert statuses.get("at-the-target", "fresh") == "fresh"


def test_fake_expectations_cover_every_case() -> None:
    assert set(FAKE_EXPECTED) == {n for n, c in fakevllm.CASES.items() if c.old is not None}


@pytest.mark.parametrize("name", sorted(FAKE_EXPECTED))
def test_fake_vllm_case(name: str, fake_reports: dict[str, dict]) -> None:
    case = fakevllm.CASES[name]
    status, kinds = FAKE_EXPECTED[name]
    [result] = by_claim(fake_reports[case.new_tag])[name.replace("_", "-")]
    assert (result["status"], tuple(result["changes"])) == (status, kinds)
    assert result["target"] == f"vllm@{case.new_tag}"
    news = {f"vllm@{case.new_tag}:{path}::{qualname}" for path, qualname in case.new}
    if status == "moved":
        assert {result["new_ref"], *result["candidates"]} == news
    if status == "removed":
        assert result["new_ref"] is None


def test_fake_ambiguous_split_is_moved_with_candidates(fake_reports: dict[str, dict]) -> None:
    [result] = by_claim(fake_reports["v0.3.0"])["ambiguous-move"]
    assert result["status"] == "moved"
    assert len(result["candidates"]) == 2
    assert result["new_ref"] not in result["candidates"]
    assert "several candidates" in result["message"]
    assert "deepseek_v4.py::" not in result["new_ref"]  # the re-export is no definition


# --- every output format, end to end ------------------------------------------------------

FORMATS_ANNOTATION = """\
article: blog/formats.md
title: "格式"
at: vllm@v0.1.0
claims:
  - id: fresh
    text: "RMSNorm 的 forward 融合了残差"
    refs: [vllm/model_executor/layers/layernorm.py::RMSNorm.forward]
  - id: changed
    text: "cdiv rounds up"
    refs:
      - vllm/utils.py::cdiv
  - id: waived
    text: "the default utilization"
    refs: [vllm/config/cache.py::CacheConfig.gpu_memory_utilization]
    waive:
      - {status: changed, until: 2099-12-31, reason: "reviewed"}
  - id: ambiguous
    text: "DeepSeek-V4"
    at: vllm@v0.2.0
    refs: [vllm/model_executor/models/deepseek_v4.py::DeepseekV4ForCausalLM]
  - id: removed
    text: "neuron"
    refs: [vllm/utils.py::is_neuron]
"""
# The line of each claim's ref in FORMATS_ANNOTATION.
FORMAT_LINES = {"fresh": 7, "changed": 11, "waived": 14, "ambiguous": 20, "removed": 23}


@pytest.fixture
def formats_project(fake_index: Path) -> Path:
    root = copy_project(fake_index)
    write(root / "annotations" / "formats.yml", FORMATS_ANNOTATION)
    return root


def test_format_lines_match_the_file() -> None:
    lines = FORMATS_ANNOTATION.splitlines()
    for claim, line in FORMAT_LINES.items():
        assert "::" in lines[line - 1]
        assert any(f"id: {claim}" in text for text in lines[:line])


def test_format_json(formats_project: Path) -> None:
    code, report = check_json()
    assert code == 1
    assert set(report) == {"results", "claims", "summary", "input_errors"}
    assert report["input_errors"] == []
    results = {r["claim"]: r for r in report["results"]}
    assert {claim: (r["status"], r["line"], r["failing"]) for claim, r in results.items()} == {
        "fresh": ("fresh", 7, False), "changed": ("changed", 11, True),
        "waived": ("changed", 14, False), "ambiguous": ("moved", 20, True),
        "removed": ("removed", 23, True),
    }
    for result in results.values():
        assert set(result) >= RESULT_KEYS
        assert result["article"] == "blog/formats.md"
        assert result["file"] == "annotations/formats.yml"
        assert result["target"] == "vllm@v0.3.0"
    assert results["changed"]["resolved"] == "vllm@v0.1.0:vllm/utils.py::cdiv"
    assert results["changed"]["ref"] == "vllm/utils.py::cdiv"
    assert results["changed"]["old_url"] == (
        "https://github.com/vllm-project/vllm/blob/v0.1.0/vllm/utils.py#L10-L12"
    )
    summary = report["summary"]
    assert (summary["refs"], summary["claims"], summary["articles"]) == (5, 5, 1)
    assert (summary["waived"], summary["failing"], summary["targets"]) == (1, 3, ["vllm@v0.3.0"])
    assert summary["counts"]["changed"] == 2 and summary["counts"]["moved"] == 1


def test_format_text(formats_project: Path) -> None:
    result = run("check")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[:3] == ["target: vllm@v0.3.0", "", "blog/formats.md"]
    [changed] = [line for line in lines if " changed " in line and "cdiv" in line]
    assert changed.startswith("  changed ")
    assert "annotations/formats.yml:11" in changed and changed.endswith("[failing]")
    assert "      -    return -(a // -b)" in lines
    assert any(line.startswith("      candidates: vllm@v0.3.0:") for line in lines)
    assert lines[-1] == (
        "5 claims, 5 refs: 1 fresh, 0 cosmetic, 2 changed, 1 moved, 1 removed, 0 quote-missing,"
        " 0 relation-missing, 0 broken, 0 unindexed (1 waived); stale"
    )
    assert "\x1b[" not in result.stdout


def test_format_github(formats_project: Path) -> None:
    result = run("check", "--format", "github")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    by_line = {}
    for line in lines[1:]:
        head, _, message = line[2:].partition("::")
        name, _, properties = head.partition(" ")
        props = dict(item.split("=", 1) for item in properties.split(","))
        by_line[int(props["line"])] = (name, props["file"], message)
    assert by_line == {
        11: ("error", "annotations/formats.yml", by_line[11][2]),
        14: ("notice", "annotations/formats.yml", by_line[14][2]),
        20: ("error", "annotations/formats.yml", by_line[20][2]),
        23: ("error", "annotations/formats.yml", by_line[23][2]),
    }
    assert by_line[11][2].startswith("vllm/utils.py::cdiv is changed (body): body changed%0A")
    assert "waived until 2099-12-31 (reviewed)" in by_line[14][2]
    assert "candidates: vllm@v0.3.0:" in by_line[20][2]
    assert lines[0].startswith("::notice::5 claims, 5 refs: ")


@pytest.mark.parametrize("layout", ["github-workspace", "git-work-tree"])
def test_github_and_sarif_paths_are_from_the_repositorys_root(
    formats_project: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    """A config in docs/ of the repository: GitHub reads paths from the repository's
    root, so the annotations and alerts name docs/annotations/..."""
    docs = formats_project / "repo" / "docs"
    docs.mkdir(parents=True)
    for name in ("annotate.toml", "annotations", ".annotate"):
        shutil.move(formats_project / name, docs / name)
    if layout == "github-workspace":
        monkeypatch.setenv("GITHUB_WORKSPACE", str(docs.parent))
    else:
        (docs.parent / ".git").mkdir()
    config = ("--config", str(docs / "annotate.toml"))
    github = run(*config, "check", "--format", "github")
    assert "::error file=docs/annotations/formats.yml,line=11," in github.stdout
    sarif = json.loads(run(*config, "check", "--format", "sarif").stdout)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in sarif["runs"][0]["results"]}
    assert uris == {"docs/annotations/formats.yml"}
    text = run(*config, "check")
    assert " annotations/formats.yml:11 " in text.stdout  # the text report keeps the config's


GH = "https://github.com/vllm-project/vllm/blob"
POST = f"""\
---
title: 笔记
---
# 笔记

is_neuron 在 {GH}/v0.1.0/vllm/utils.py#L30-L34 检测 Neuron。

旧版本：{GH}/v0.0.9/vllm/utils.py#L10
"""


def test_permalinks_of_a_markdown_article_point_at_the_article(fake_index: Path) -> None:
    copy_project(fake_index)
    config = Path("annotate.toml")
    config.write_text(config.read_text().replace('["v0.1.0"', '["v0.0.9", "v0.1.0"'))
    write(Path("articles/post.md"), POST)
    result = run("check", "--format", "github")
    assert result.exit_code == 1
    summary, removed, unindexed = result.stdout.splitlines()
    assert removed.startswith("::error file=articles/post.md,line=6,title=annotate%3A removed "
                              "claim link-")
    assert "vllm/utils.py::is_neuron not found at vllm@v0.3.0" in removed
    assert unindexed.startswith("::notice file=articles/post.md,line=8,title=annotate%3A "
                                "unindexed claim link-")
    old = f"{GH}/v0.0.9/vllm/utils.py#L10"
    assert unindexed.endswith(
        f"::{old} is unindexed: vllm@v0.0.9 is not indexed (run 'annotate index vllm@v0.0.9')"
        f"%0Aclaim {link_claim_id('articles/post.md', old)} of articles/post.md: 旧版本：{old}"
    )
    assert summary.startswith("::notice::2 claims, 2 refs: 0 fresh")


def test_a_permalink_to_an_indexed_commit_is_checked(fake_index: Path) -> None:
    """GitHub's "Copy permalink" names the commit: a version indexed from git records it."""
    copy_project(fake_index)
    with contextlib.closing(sqlite3.connect(DB)) as conn:
        [(commit,)] = conn.execute("SELECT commit_sha FROM versions WHERE version = 'v0.1.0'")
    write(Path("articles/post.md"), POST.replace("/v0.1.0/", f"/{commit[:10]}/"))
    code, report = check_json("--exit-zero")
    assert code == 0
    by_ref = {r["ref"]: r for r in report["results"]}
    linked = by_ref[f"{GH}/{commit[:10]}/vllm/utils.py#L30-L34"]
    assert (linked["status"], linked["resolved"]) == (
        "removed", f"vllm@{commit[:10]}:vllm/utils.py::is_neuron")


@pytest.mark.parametrize(("version", "hint"), [
    pytest.param("v0.0.9", "a permalink must name a configured release tag: blob/TAG/PATH",
                 id="a-release-not-configured"),
    pytest.param("main", "a permalink must name a configured release tag: blob/TAG/PATH",
                 id="a-branch"),
    pytest.param("1234567890abcdef1234567890abcdef12345678",
                 "a commit names only a version indexed from git at that commit (a wheel "
                 "records none): put the release tag in its place, blob/TAG/PATH",
                 id="a-commit-of-no-indexed-version"),
])
def test_a_permalink_to_a_version_nobody_indexes_fails_the_check(
    fake_index: Path, version: str, hint: str
) -> None:
    """Left unindexed, it would never be checked, and CI would stay green. The check says
    what to do as ``link`` does: CI runs only the check."""
    copy_project(fake_index)
    write(Path("articles/post.md"), POST.replace("v0.0.9", version))
    result = run("check", "--format", "github")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[2].startswith(
        "::error file=articles/post.md,line=8,title=annotate%3A broken claim link-")
    assert (f"is broken: vllm@{version} is neither indexed nor configured (hint: {hint})%0A"
            in result.stdout)
    linked = run("link")
    assert linked.exit_code == 2
    assert f"vllm@{version} is neither indexed nor configured (hint: {hint})" in linked.stderr


AT_TYPO = "vllm@v0.2.O"
AT_MESSAGE = (f"at: {AT_TYPO} is neither indexed nor configured, so the refs it pins cannot be "
              "resolved (hint: did you mean 'vllm@v0.2.0'? vllm has v0.1.0, v0.2.0, v0.3.0; or "
              "add v0.2.O to 'versions' of [repos.vllm] in annotate.toml and run 'annotate "
              "index vllm@v0.2.O')")
CLAIMS_UNDER_AN_AT = """\
  - id: cache
    text: t
    refs:
      - vllm/config/cache.py::CacheConfig
      - vllm.engine.llm_engine.LLMEngine.step
  - id: engine
    text: u
    refs: [LLMEngine, vllm/config/cache.py#L1-L2]
"""


@pytest.mark.parametrize(("path", "text", "at_line", "pinned_claims"), [
    pytest.param("articles/post.md", f"---\nat: {AT_TYPO}\nclaims:\n{CLAIMS_UNDER_AN_AT}---\n",
                 2, {"cache", "engine"}, id="markdown-front-matter"),
    pytest.param("annotations/a.yml", f"article: a.md\nat: {AT_TYPO}\nclaims:\n"
                 f"{CLAIMS_UNDER_AN_AT}", 2, {"cache", "engine"}, id="yaml-file"),
    pytest.param("annotations/a.yml", "article: a.md\nat: vllm@v0.1.0\nclaims:\n"
                 + CLAIMS_UNDER_AN_AT.replace("    text: u\n", f"    text: u\n    at: {AT_TYPO}\n"),
                 11, {"engine"}, id="yaml-claim-of-its-own"),
])
def test_an_at_of_a_version_not_indexed_is_one_error_at_its_line(
    fake_index: Path, path: str, text: str, at_line: int, pinned_claims: set[str]
) -> None:
    """Not one error per ref it pins (9 in one article): the at: is the one thing to fix."""
    copy_project(fake_index)
    write(Path(path), text)
    assert text.splitlines()[at_line - 1].endswith(f"at: {AT_TYPO}")
    linked = run("link")
    assert (linked.exit_code, linked.stderr) == (2, (
        f"Error: {path}:{at_line}: {AT_MESSAGE}\n"
        "Error: 1 problem in the annotations (see above)\n"))
    code, report = check_json()
    pinned = [r for r in report["results"] if r["claim"] in pinned_claims]
    assert code == 1 and len(pinned) == 2 * len(pinned_claims)  # each ref still a result
    assert {(r["status"], r["message"]) for r in pinned} == {("broken", AT_MESSAGE)}
    sarif = json.loads(run("check", "--format", "sarif").stdout)["runs"][0]["results"]
    assert sorted(r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in sarif
                  if AT_MESSAGE in r["message"]["text"]) == sorted(r["line"] for r in pinned)


def test_format_sarif_validates(formats_project: Path) -> None:
    result = run("check", "--format", "sarif")
    assert result.exit_code == 1
    log = json.loads(result.stdout)
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.validators.validator_for(schema)(schema).validate(log)
    results = log["runs"][0]["results"]
    located = {
        (r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
         r["locations"][0]["physicalLocation"]["region"]["startLine"], r["level"])
        for r in results
    }
    assert located == {
        ("annotate/changed", "annotations/formats.yml", 11, "error"),
        ("annotate/changed", "annotations/formats.yml", 14, "note"),
        ("annotate/moved", "annotations/formats.yml", 20, "error"),
        ("annotate/removed", "annotations/formats.yml", 23, "error"),
    }
    [waived] = [r for r in results if r["locations"][0]["physicalLocation"]["region"]
                ["startLine"] == 14]
    assert waived["suppressions"][0]["justification"] == "waived until 2099-12-31: reviewed"


def test_format_markdown(formats_project: Path) -> None:
    result = run("check", "--format", "markdown")
    assert result.exit_code == 1
    text = result.stdout
    assert text.startswith("## annotate check\n\n**5 claims, 5 refs** in 1 article against "
                           "<code>vllm@v0.3.0</code>. **Stale:** 3 refs need attention.")
    assert "### blog/formats.md" in text
    assert "| <kbd>removed</kbd> **failing** | <code>removed</code><br>" \
           "annotations/formats.yml:23 |" in text
    assert "<details><summary>Diffs of 2 changed refs</summary>" in text
    assert "```diff\n--- vllm@v0.1.0:vllm/utils.py::cdiv\n" in text
    assert "| <kbd>fresh</kbd>" not in text


def _link_cells(text: str, claim: str) -> tuple[str, str]:
    """The Ref and New ref cells of `claim`'s row in a Markdown report."""
    [row] = [line for line in text.splitlines() if f"<code>{claim}</code><br>" in line]
    cells = [cell.strip() for cell in row.split(" | ")]
    return cells[2], cells[3]


def _at(version: str, path: str, lines: str) -> str:
    url = f"https://github.com/vllm-project/vllm/blob/{version}/{path}#{lines}"
    return f'<a href="{url}">at {version}</a>'


DEEPSEEK_V4 = "vllm/model_executor/models/deepseek_v4"


def _linked_ref(arch: str) -> str:
    """DeepseekV4ForCausalLM's ref at v0.3.0 in the file of ``arch``, linked to it."""
    url = f"https://github.com/vllm-project/vllm/blob/v0.3.0/{DEEPSEEK_V4}_{arch}.py#L10-L26"
    name = f"vllm@v0.3.0:{DEEPSEEK_V4}_{arch}.py::DeepseekV4ForCausalLM".replace("_", "\\_")
    return f'<a href="{url}"><code>{name}</code></a>'


@pytest.mark.parametrize(("claim", "ref_cell", "new_ref_cell"), [
    pytest.param("changed",
                 "<code>vllm/utils.py::cdiv</code><br>"
                 f"{_at('v0.1.0', 'vllm/utils.py', 'L10-L12')} · "
                 f"{_at('v0.3.0', 'vllm/utils.py', 'L10-L12')}", "",
                 id="changed-at-its-pin-and-the-target"),
    pytest.param("ambiguous",
                 "<code>vllm/model\\_executor/models/deepseek\\_v4.py::DeepseekV4ForCausalLM"
                 f"</code><br>{_at('v0.2.0', f'{DEEPSEEK_V4}.py', 'L10-L26')} · "
                 f"{_at('v0.3.0', f'{DEEPSEEK_V4}_amd.py', 'L10-L26')}",
                 f"{_linked_ref('amd')}<br>candidates: {_linked_ref('nvidia')}, "
                 f"{_linked_ref('xpu')}", id="moved-links-its-new-place-and-candidates"),
    pytest.param("removed",
                 "<code>vllm/utils.py::is\\_neuron</code><br>"
                 f"{_at('v0.1.0', 'vllm/utils.py', 'L29-L34')}", "", id="removed-at-its-pin-only"),
])
def test_format_markdown_links_each_ref_at_its_pin_and_the_target(
    formats_project: Path, claim: str, ref_cell: str, new_ref_cell: str
) -> None:
    ref, new_ref = _link_cells(run("check", "--format", "markdown").stdout, claim)
    assert ref == ref_cell
    assert new_ref == new_ref_cell


# --- the match cache ----------------------------------------------------------------------


def cache_rows() -> list[tuple]:
    with connected(DB) as conn:
        return conn.execute("SELECT path, qualname, engine, result FROM match_cache").fetchall()


def test_second_check_is_identical_and_cached(formats_project: Path) -> None:
    assert cache_rows() == []
    first = run("check", "--format", "json")
    rows = cache_rows()
    assert {(path, qualname) for path, qualname, _, _ in rows} == {
        ("vllm/model_executor/layers/layernorm.py", "RMSNorm.forward"),
        ("vllm/utils.py", "cdiv"), ("vllm/utils.py", "is_neuron"),
        ("vllm/config/cache.py", "CacheConfig.gpu_memory_utilization"),
        ("vllm/model_executor/models/deepseek_v4.py", "DeepseekV4ForCausalLM"),
    }
    assert {engine for _, _, engine, _ in rows} == {comparison.ENGINE}
    second = run("check", "--format", "json")
    assert second.stdout == first.stdout
    assert second.exit_code == first.exit_code == 1
    assert cache_rows() == rows


def test_a_stored_comparison_is_decoded_once_however_many_refs_cite_it(
    formats_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A no-op check of a collection that cites each symbol many times decoded the stored
    comparison again for each citing ref: it decodes it once, and reports the same."""
    write(Path("annotations/again.yml"), FORMATS_ANNOTATION.replace("blog/formats.md",
                                                                    "blog/again.md"))
    first = run("check", "--format", "json")
    decoded = []
    decode = comparison.Comparison.decode
    monkeypatch.setattr(comparison.Comparison, "decode",
                        lambda text: decoded.append(text) or decode(text))
    second = run("check", "--format", "json")
    assert (second.stdout, second.exit_code) == (first.stdout, first.exit_code)
    assert len(json.loads(second.stdout)["results"]) == 2 * len(FORMAT_LINES)
    assert sorted(decoded) == sorted(result for *_, result in cache_rows())


def test_the_stored_refs_are_read_as_they_are_checked(
    formats_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """check read every stored ref (a dict of 25 columns each) before it checked the first:
    66 MB of a 34,979-ref collection's peak. It reads each as it checks it; the removed
    ones are checked again after the last, to ask where their code went all at once.
    (With ``--workers`` above 1, the refs of a collection pinned at several versions are
    read once before, each dropped as read, to find the version pairs to compare at once.)"""
    from annotations import check
    from db.database import Database

    refs_read = []
    query = Database.query

    def counted(self: Database, sql: str, params: tuple = ()) -> Iterator[dict]:
        for row in query(self, sql, params):
            refs_read.extend([row["written"]] if "FROM claim_refs r JOIN claims" in sql else [])
            yield row

    read_when_checked = []
    check_ref = check._check_ref
    monkeypatch.setattr(Database, "query", counted)
    monkeypatch.setattr(check, "_check_ref", lambda *args, **kwargs: read_when_checked.append(
        len(refs_read)) or check_ref(*args, **kwargs))
    code, report = check_json("--workers", "1")
    removed = sum(result["status"] == "removed" for result in report["results"])
    assert (code, len(report["results"])) == (1, len(FORMAT_LINES))
    assert read_when_checked == [*range(1, len(FORMAT_LINES) + 1), *[len(FORMAT_LINES)] * removed]


def test_the_pinned_symbols_of_a_file_come_from_one_read_of_its_rows(
    formats_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each symbol compared with the target was looked up in a new view of its version,
    which read its file's symbol rows again: 11,588 reads of 1.4M rows in a big
    collection's first check. A file's rows are read once at each pin."""
    from db import match_queries

    read = []
    file_rows = match_queries.file_symbol_rows
    monkeypatch.setattr(match_queries, "file_symbol_rows",
                        lambda database, key, path: read.append((key, path))
                        or file_rows(database, key, path))
    code, report = check_json()
    assert (code, len(report["results"])) == (1, len(FORMAT_LINES))
    assert ("vllm/utils.py" in {path for _, path in read}, sorted(read)) == (
        True, sorted(set(read)))


def test_removing_and_readding_a_claim_after_the_cache_is_filled(formats_project: Path) -> None:
    first = run("check", "--format", "json").stdout
    path = Path("annotations/formats.yml")
    without = FORMATS_ANNOTATION.split("  - id: removed")[0]
    path.write_text(without, encoding="utf-8")
    shorter = json.loads(run("check", "--format", "json").stdout)
    assert "removed" not in {r["claim"] for r in shorter["results"]}
    path.write_text(FORMATS_ANNOTATION, encoding="utf-8")
    assert run("check", "--format", "json").stdout == first


def test_results_cached_by_an_older_engine_are_ignored(
    formats_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = run("check", "--format", "json").stdout
    fake = comparison.Comparison(Status.FRESH, "from the cache").encode()
    with connected(DB) as conn:
        conn.execute("UPDATE match_cache SET result = ?", (fake,))
    cached = json.loads(run("check", "--format", "json", "--exit-zero").stdout)
    assert {r["message"] for r in cached["results"]} == {"from the cache"}  # the cache is read
    old_engine = comparison.ENGINE
    monkeypatch.setattr(comparison, "ENGINE", "matcher-next")
    assert run("check", "--format", "json").stdout == first
    assert {engine for _, _, engine, _ in cache_rows()} == {old_engine, "matcher-next"}


def test_fail_on_with_an_unknown_status_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "annotate.toml").write_text('fail_on = ["remove"]\n')
    result = CliRunner().invoke(cli, ["check"])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        f"Error: {tmp_path / 'annotate.toml'}: unknown status 'remove' in fail_on; choose from "
        "fresh, cosmetic, unindexed, changed, moved, removed, quote-missing, broken, "
        "relation-missing"
    )


def test_moved_refs_are_checks_moved_results_without_their_quotes_and_diffs(
        table_index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``links SYMBOL`` asks which refs moved to SYMBOL: it ran the whole check (quotes,
    relations, diffs, waivers of every ref) to read the new places of a few."""
    import datetime

    from annotations import check
    from db.database import open_database

    copy_project(table_index)
    claims = "".join(_case_claim(case_id, case) for case_id, case in CASES.items())
    write(Path("annotations/cases.yml"), annotation("blog/cases.md", "vllm@v1", claims))
    assert run("link").exit_code == 2  # the table's broken cases
    options = check.CheckOptions({}, datetime.date.today(), ("moved",))
    config = load_config()
    with open_database(Path(DB), create=False) as database:
        full = check.check_all(database, config, options).results
        monkeypatch.setattr(check, "_finish", None)  # moved_refs finishes no ref
        moved = check.moved_refs(database, config, options)
        of_symbols = check.moved_refs(database, config, options, lines=False)

    def places(results: tuple | list) -> list[tuple]:
        return [(r.file, r.line, r.claim, r.ref, r.new_ref, r.candidates)
                for r in results if r.new_ref is not None]

    assert places(moved) == places(full)
    lines_moved = [r for r in moved if "::" not in (r.resolved or "")]
    assert {r.claim for r in lines_moved} >= {"lines-moved", "lines-file-gone-text-in-a-sibling"}
    assert places(of_symbols) == places(r for r in moved if r not in lines_moved)
    assert {r.claim for r in moved} >= {"moved-renamed", "moved-and-changed", "moved-ambiguous"}
    listed = run("links", "capture_cudagraph")
    assert "moved-renamed" in listed.stdout, listed.output


@pytest.mark.parametrize("symbol", [
    pytest.param("c/relation-holds/helper.py::Helper", id="path-and-qualname"),
    pytest.param("vllm@v1:c/relation-holds/helper.py::Helper", id="full-ref"),
    pytest.param("Helper", id="short-name"),
])
def test_links_lists_a_claim_citing_the_symbol_in_its_uses(table_index: Path, symbol: str) -> None:
    """"Which claims cite Helper": the claim whose ref on MLA.__init__ asserts that it uses
    Helper cites it too (a relation check keeps), marked so."""
    copy_project(table_index)
    claims = _case_claim("relation-holds", CASES["relation-holds"])
    write(Path("annotations/a.yml"), annotation("blog/a.md", "vllm@v1", claims))
    assert run("link").exit_code == 0
    listed = run("links", symbol)
    assert (listed.exit_code, listed.stderr, listed.stdout) == (0, "", (
        "c/relation-holds/helper.py::Helper\n  blog/a.md#relation-holds @v1 (in the uses: of "
        "c/relation-holds/m.py::MLA.__init__): relation-holds\n"))
    (found,) = json.loads(run("links", "--format", "json", symbol).stdout)
    assert (found["ref"], found["uses_of"], found["version"]) == (
        "vllm@v1:c/relation-holds/helper.py::Helper", "c/relation-holds/m.py::MLA.__init__",
        "v1")
