"""A tiny, hermetic fake vLLM: git repository with tags, wheels, and a second repo.

Everything here is deterministic: contents live in ``VERSIONS``, git runs with a
controlled environment and fixed dates (so commit ids are stable), wheels use fixed
zip timestamps. ``CASES`` and ``FEATURES`` name the symbols tests can target.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import zipfile
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Symlink:
    """Marker for a symlink in a snapshot; ``target`` is relative to the link's dir."""

    target: str


Content = str | bytes | Symlink
Snapshot = dict[str, Content]
SymbolRef = tuple[str, str]  # (path, qualname)


@dataclass
class FakeRepo:
    path: Path  # work tree (non-bare repo, checked out at the last tag on branch main)
    tags: list[str]
    url: str  # file:// URL of ``path``
    commits: dict[str, str] = field(default_factory=dict)  # tag -> commit sha
    versions: dict[str, Snapshot] = field(default_factory=dict)  # tag -> snapshot


@dataclass(frozen=True)
class ChangeCase:
    """One kind of change between two tags: ``old`` at old_tag became ``new`` at new_tag."""

    old_tag: str
    new_tag: str
    old: SymbolRef | None  # None: the symbol is new
    new: tuple[SymbolRef, ...]  # (): removed; several: ambiguous
    note: str = ""


# --------------------------------------------------------------------------------------
# Contents
# --------------------------------------------------------------------------------------

README = """\
# vLLM (fake)

A tiny fake vLLM source tree used by the vllm-annotate tests.
"""

PAGED_ATTENTION_CU = """\
// Paged attention kernel, version 1.
#include <cuda_runtime.h>

__global__ void paged_attention_v1_kernel(float* out, const float* q, int num_heads) {
  int head = blockIdx.x;
  if (head < num_heads) out[head] = q[head];
}
"""

VLLM_INIT = '''\
"""vLLM: a high-throughput and memory-efficient inference engine for LLMs."""

from vllm.config.cache import CacheConfig
from vllm.engine.async_llm_engine import AsyncLLMEngine as AsyncEngine
from vllm.engine.llm_engine import LLMEngine
from vllm.sampling_params import SamplingParams

__all__ = ["AsyncEngine", "CacheConfig", "LLMEngine", "SamplingParams"]
'''

CACHE_CONFIG_TEMPLATE = '''\
"""Configuration for the KV cache."""

from dataclasses import dataclass
from typing import Literal

CacheDType = Literal["auto", "fp8", "fp8_e4m3", "fp8_e5m2"]

# Default CPU swap space per GPU, in GiB.
DEFAULT_SWAP_SPACE_GIB = {swap}


@dataclass
class CacheConfig:
    """Configuration for the KV cache.

    Attributes:
        block_size: Size of a cache block in number of tokens.
        gpu_memory_utilization: Fraction of GPU memory used by the executor.
    """

    block_size: int = 16
    gpu_memory_utilization: float = {util}
    swap_space: float = DEFAULT_SWAP_SPACE_GIB
    cache_dtype: CacheDType = "auto"

    def verify_with_parallel_config(self, tensor_parallel_size: int) -> None:
        total_cpu_memory = 64 << 30
        if self.swap_space * tensor_parallel_size > total_cpu_memory:
            raise ValueError("Too large swap space.")
'''
CACHE_CONFIG_V1 = CACHE_CONFIG_TEMPLATE.format(swap="4", util="0.9")
CACHE_CONFIG_V2 = CACHE_CONFIG_TEMPLATE.format(swap="8", util="0.92")

LLM_ENGINE_HEAD = '''\
"""The synchronous LLM engine."""

from vllm.config.cache import CacheConfig
from {scheduler_module} import Scheduler
from vllm.sampling_params import SamplingParams
from vllm.sequence import SequenceGroup


class LLMEngine:
    """An LLM engine that receives requests and generates texts."""

    def __init__(self, cache_config: CacheConfig, log_stats: bool = False) -> None:
        self.cache_config = cache_config
        self.scheduler = Scheduler(cache_config)
        self._log_stats = log_stats

    @classmethod
    def from_engine_args(cls, engine_args) -> "LLMEngine":
        config = engine_args.create_cache_config()
        return cls(config, log_stats=not engine_args.disable_log_stats)

    @property
    def log_stats(self) -> bool:
        return self._log_stats

    @log_stats.setter
    def log_stats(self, value: bool) -> None:
        self._log_stats = value

'''

ADD_REQUEST_V1 = '''\
    def add_request(self, request_id: str, prompt: str, params: SamplingParams) -> None:
        """Add a request to the engine's request pool."""
        # Create the sequence group.
        seq_group = SequenceGroup(request_id, prompt, params)
        self.scheduler.add_seq_group(seq_group)
'''

# Formatting/comment/docstring-only rewrite of ADD_REQUEST_V1.
ADD_REQUEST_V2 = '''\
    def add_request(
        self,
        request_id: str,
        prompt: str,
        params: SamplingParams,
    ) -> None:
        """Add a new request to the request pool of the engine.

        The request is scheduled on the next call to step().
        """
        # Build the sequence group for this request.
        seq_group = SequenceGroup(request_id, prompt, params)
        self.scheduler.add_seq_group(seq_group)
'''

LLM_ENGINE_TAIL = """
    def step(self) -> list:
        scheduler_outputs = self.scheduler.schedule()
        return [group.request_id for group in scheduler_outputs]
"""

_HEAD_OLD = LLM_ENGINE_HEAD.format(scheduler_module="vllm.core.scheduler")
_HEAD_NEW = LLM_ENGINE_HEAD.format(scheduler_module="vllm.v1.core.sched.scheduler")
LLM_ENGINE_V1 = _HEAD_OLD + ADD_REQUEST_V1 + LLM_ENGINE_TAIL
LLM_ENGINE_V2 = _HEAD_OLD + ADD_REQUEST_V2 + LLM_ENGINE_TAIL
LLM_ENGINE_V3 = _HEAD_NEW + ADD_REQUEST_V2 + LLM_ENGINE_TAIL  # only an import line differs

ASYNC_LLM_ENGINE = '''\
"""Asynchronous wrapper around LLMEngine."""

import asyncio
from collections.abc import AsyncIterator

from vllm.engine.llm_engine import LLMEngine


def _make_stream_cls():
    class AsyncStream:
        """A stream of outputs for one request."""

        def __init__(self, request_id: str) -> None:
            self.request_id = request_id
            self._queue: asyncio.Queue = asyncio.Queue()

        def put(self, item) -> None:
            self._queue.put_nowait(item)

    return AsyncStream


AsyncStream = _make_stream_cls()


def build_guarded_step(engine: LLMEngine):
    def guarded_step():
        try:
            return engine.step()
        except RuntimeError:
            return []

    return guarded_step


async def run_engine_loop(engine: LLMEngine, interval: float = 0.0) -> None:
    step = build_guarded_step(engine)
    while True:
        step()
        await asyncio.sleep(interval)


class AsyncLLMEngine:
    """An asynchronous wrapper for LLMEngine."""

    def __init__(self, engine: LLMEngine) -> None:
        self.engine = engine
        self._streams: dict[str, AsyncStream] = {}

    async def generate(self, request_id: str, prompt: str, params) -> AsyncIterator[str]:
        self.engine.add_request(request_id, prompt, params)
        stream = AsyncStream(request_id)
        self._streams[request_id] = stream
        while True:
            yield await stream._queue.get()
'''

SAMPLING_PARAMS_V1 = '''\
"""Sampling parameters for text generation."""


class SamplingParams:
    """Sampling parameters for text generation."""

    def __init__(self, n: int = 1, temperature: float = 1.0, top_p: float = 1.0) -> None:
        self.n = n
        self.temperature = temperature
        self.top_p = top_p
        self._verify_args()

    def _verify_args(self) -> None:
        if self.n < 1:
            raise ValueError(f"n must be at least 1, got {self.n}.")
        if self.temperature < 0.0:
            raise ValueError(f"temperature must be non-negative, got {self.temperature}.")

    def __repr__(self) -> str:
        return f"SamplingParams(n={self.n}, temperature={self.temperature})"
'''

# Gains ``clone`` (and an import, which shifts every line below it by two).
SAMPLING_PARAMS_V2 = (
    SAMPLING_PARAMS_V1.replace('generation."""\n\n', 'generation."""\n\nimport copy\n\n', 1)
    + '''
    def clone(self) -> "SamplingParams":
        """Deep copy of these parameters."""
        return copy.deepcopy(self)
'''
)

UTILS_V1 = '''\
"""Miscellaneous utilities."""

import functools
import socket
import uuid

import psutil


def cdiv(a: int, b: int) -> int:
    """Ceiling division."""
    return -(a // -b)


def random_uuid() -> str:
    return str(uuid.uuid4().hex)


def get_distributed_init_method(ip: str, port: int) -> str:
    return f"tcp://{ip}:{port}"


@functools.lru_cache(maxsize=None)
def get_cpu_memory() -> int:
    """Returns the total CPU memory of the node in bytes."""
    return psutil.virtual_memory().total


def is_neuron() -> bool:
    try:
        import transformers_neuronx
    except ImportError:
        transformers_neuronx = None
    return transformers_neuronx is not None


def get_open_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]
'''

_IS_NEURON = UTILS_V1[UTILS_V1.index("def is_neuron") : UTILS_V1.index("def get_open_port")]
UTILS_V2 = (
    UTILS_V1.replace("return -(a // -b)", "return (a + b - 1) // b")
    .replace("(ip: str, port: int)", "(ip: str, port: int = 29500)")
    .replace("@functools.lru_cache(maxsize=None)", "@functools.cache")
    .replace(_IS_NEURON, "")
)

CUDA_GRAPH_TEMPLATE = '''\
"""CUDA graph capture helpers."""

import torch

_BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + [8 * i for i in range(1, 33)]


def get_graph_batch_sizes(max_batch_size: int) -> list[int]:
    return [bs for bs in _BATCH_SIZES_TO_CAPTURE if bs <= max_batch_size]


def {name}(model, input_ids: torch.Tensor, positions: torch.Tensor):
    """Capture a CUDA graph for one forward pass of ``model``."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        hidden_states = model(input_ids, positions)
    torch.cuda.synchronize()
    return graph, hidden_states
'''
# The capture function alone, with plainer parameters: a ``str.format`` template.
CAPTURE_TEMPLATE = '''\
def {name}(model, input_ids, positions):
    """Capture a CUDA graph for one forward pass."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        hidden_states = model(input_ids, positions)
    torch.cuda.synchronize()
    return graph, hidden_states
'''
CUDA_GRAPH_V1 = CUDA_GRAPH_TEMPLATE.replace("{name}", "capture_graph")
CUDA_GRAPH_V2 = CUDA_GRAPH_TEMPLATE.replace("{name}", "capture_cudagraph")

LINEAR_TEMPLATE = '''\
"""Linear layers."""

import torch
from torch import nn
from torch.nn import functional as F


class LinearBase(nn.Module):
    """Base linear layer."""

    def __init__(self, input_size: int, output_size: int, bias: bool = True) -> None:
        super().__init__()
        self.input_size = input_size
        self.output_size = output_size
        self.weight = nn.Parameter(torch.empty(output_size, input_size))
        self.bias = nn.Parameter(torch.zeros(output_size)) if bias else None


class ReplicatedLinear(LinearBase):
    """Replicated linear layer: every rank holds the full weight."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)


class ColumnParallelLinear({base}):
    """Linear layer with column parallelism."""

    def __init__(self, input_size: int, output_size: int, tp_size: int = 1) -> None:
        super().__init__()
        self.output_size_per_partition = output_size // tp_size
        self.weight = nn.Parameter(torch.empty(self.output_size_per_partition, input_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight)
'''
LINEAR_V1 = LINEAR_TEMPLATE.replace("{base}", "nn.Module")
LINEAR_V2 = LINEAR_TEMPLATE.replace("{base}", "LinearBase")

LOGITS_PROCESSOR = '''\
"""Compute logits from hidden states."""

import numpy as np
import torch

from .linear import ReplicatedLinear


class LogitsProcessor(torch.nn.Module):
    """Projects hidden states to vocabulary logits."""

    def __init__(self, hidden_size: int, vocab_size: int, scale: float = 1.0) -> None:
        super().__init__()
        self.lm_head = ReplicatedLinear(hidden_size, vocab_size, bias=False)
        self.scale = scale

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        logits = self.lm_head.forward(hidden_states)
        return logits * self.scale

    def top_token_ids(self, logits: torch.Tensor, k: int) -> np.ndarray:
        return np.argsort(logits.cpu().numpy(), axis=-1)[..., -k:]
'''

LAYERNORM = '''\
"""Normalization layers."""

import torch
from torch import nn


@torch.compile(dynamic=True)
@torch.no_grad()
def fused_add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    x = x + residual
    variance = x.pow(2).mean(dim=-1, keepdim=True)
    return x * torch.rsqrt(variance + eps) * weight, x


class RMSNorm(nn.Module):
    """Root mean square layer normalization."""

    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        return fused_add_rms_norm(x, residual, self.weight, self.variance_epsilon)
'''

PLATFORMS_INIT = '''\
"""Platform detection."""

import os
import sys
from typing import TYPE_CHECKING

try:
    import triton  # noqa: F401

    HAS_TRITON = True
except ImportError:
    HAS_TRITON = False

if sys.platform == "darwin":
    DEFAULT_DEVICE = "cpu"
else:
    DEFAULT_DEVICE = "cuda"

if TYPE_CHECKING:

    def current_platform_name() -> str: ...

else:

    def current_platform_name() -> str:
        return os.environ.get("VLLM_TARGET_DEVICE", DEFAULT_DEVICE)
'''

PLATFORM_INTERFACE = '''\
"""Base class of all platforms."""

import sys

import torch


class Platform:
    """Platform-specific behaviour."""

    device_name: str = "cuda"
    if sys.platform == "darwin":
        dispatch_key = "CPU"
    else:
        dispatch_key = "CUDA"
    try:
        supports_fp8 = torch.cuda.get_device_capability() >= (8, 9)
    except (AssertionError, RuntimeError):
        supports_fp8 = False

    def is_cuda(self) -> bool:
        return self.device_name == "cuda"
'''

# Line 8 is broken; tree-sitter still recovers the defs before and after it.
BROKEN_LOADER = '''\
"""Weight loading helpers; this file has a syntax error on purpose."""


def load_weights_before(model):
    return model.state_dict()


def broken_loader(model:
    return model


def load_weights_after(model, path):
    return model.load(path)
'''

# Latin-1 byte in a comment: not valid UTF-8.
TOKENIZER_LATIN1 = (
    b"# Tokenizer helpers, written in a caf\xe9.\n"
    b"\n"
    b"\n"
    b"def get_tokenizer_name(model: str) -> str:\n"
    b'    return model.split("/")[-1]\n'
)

CACHE_ENGINE_CLASS = '''\
class CacheEngine:
    """Manages the KV cache.

    Initializes and manages the GPU and CPU KV caches.
    """

    def __init__(self, cache_config: CacheConfig, num_layers: int) -> None:
        self.cache_config = cache_config
        self.num_layers = num_layers
        self.block_size = cache_config.block_size
        self.gpu_cache = self._allocate_kv_cache("cuda")
        self.cpu_cache = self._allocate_kv_cache("cpu")

    def _allocate_kv_cache(self, device: str) -> list[torch.Tensor]:
        shape = (2, self.block_size, 8, 128)
        return [torch.empty(shape, device=device) for _ in range(self.num_layers)]

    def swap_in(self, src_to_dst: torch.Tensor) -> None:
        for i in range(self.num_layers):
            self.gpu_cache[i].index_copy_(0, src_to_dst, self.cpu_cache[i])
'''

CACHE_ENGINE_HEAD = '''\
"""{doc}"""

import torch

from vllm.config.cache import CacheConfig


'''
CACHE_ENGINE_OLD = (
    CACHE_ENGINE_HEAD.format(doc="CacheEngine class for managing the KV cache.")
    + CACHE_ENGINE_CLASS
)
CACHE_ENGINE_NEW = (
    CACHE_ENGINE_HEAD.format(doc="KV cache management for the V1 engine.") + CACHE_ENGINE_CLASS
)

SCHEDULER_OLD = '''\
"""The request scheduler."""

from collections import deque

from vllm.config.cache import CacheConfig


class Scheduler:
    """Decides which sequence groups run in the next step."""

    def __init__(self, cache_config: CacheConfig) -> None:
        self.cache_config = cache_config
        self.waiting: deque = deque()
        self.running: list = []

    def add_seq_group(self, seq_group) -> None:
        self.waiting.append(seq_group)

    def schedule(self) -> list:
        while self.waiting:
            self.running.append(self.waiting.popleft())
        return list(self.running)
'''

SCHEDULER_NEW = (
    SCHEDULER_OLD.replace('"""The request scheduler."""', '"""The V1 request scheduler."""')
    .replace(
        "(self, cache_config: CacheConfig) -> None:\n        self.cache_config = cache_config\n",
        "(self, cache_config: CacheConfig, max_num_seqs: int = 256) -> None:\n"
        "        self.cache_config = cache_config\n"
        "        self.max_num_seqs = max_num_seqs\n",
    )
    .replace("while self.waiting:", "while self.waiting and len(self.running) < self.max_num_seqs:")
)

DEEPSEEK_V4_TEMPLATE = '''\
"""Inference-only DeepSeek-V4 model{suffix}."""

import torch
from torch import nn

from vllm.model_executor.layers.layernorm import RMSNorm
from vllm.model_executor.layers.linear import ReplicatedLinear


class DeepseekV4ForCausalLM(nn.Module):
    """DeepSeek-V4 causal language model."""

    attn_backend: str = "{backend}"
    packed_modules_mapping = {{"gate_up_proj": ["gate_proj", "up_proj"]}}

    def __init__(self, hidden_size: int, vocab_size: int) -> None:
        super().__init__()
        self.norm = RMSNorm(hidden_size)
        self.lm_head = ReplicatedLinear(hidden_size, vocab_size, bias=False)

    def forward(self, hidden_states: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        hidden_states, _ = self.norm(hidden_states, residual)
        return self.lm_head(hidden_states)

    def get_attn_backend(self) -> str:
        return self.attn_backend
'''
DEEPSEEK_V4 = DEEPSEEK_V4_TEMPLATE.format(suffix="", backend="auto")
DEEPSEEK_V4_AMD = DEEPSEEK_V4_TEMPLATE.format(suffix=" (AMD ROCm)", backend="ROCM_AITER_MLA")
DEEPSEEK_V4_NVIDIA = DEEPSEEK_V4_TEMPLATE.format(suffix=" (NVIDIA CUDA)", backend="FLASHMLA")
DEEPSEEK_V4_XPU = DEEPSEEK_V4_TEMPLATE.format(suffix=" (Intel XPU)", backend="XPU_MLA")
DEEPSEEK_V4_REEXPORT = '''\
"""DeepSeek-V4 now lives in per-platform modules; this keeps the old import path."""

from vllm.model_executor.models.deepseek_v4_nvidia import DeepseekV4ForCausalLM

__all__ = ["DeepseekV4ForCausalLM"]
'''

# A loader that a version removes, and the closest function left at the next one: alike
# enough to be named as a candidate, not enough to count as a move.
LOAD_WEIGHTS_FROM_FILE = '''\
def load_weights(model, path):
    state = torch.load(path)
    for name, tensor in state.items():
        model.get_parameter(name).copy_(tensor)
    return model
'''
LOAD_WEIGHTS_FROM_URL = '''\
def load_weights(model, url, retries=3):
    with urlopen(url) as response:
        payload = response.read()
    return model.from_bytes(payload, retries)
'''

# --------------------------------------------------------------------------------------
# Paths and snapshots
# --------------------------------------------------------------------------------------

SYNTAX_ERROR_FILE = "vllm/model_executor/model_loader/broken_loader.py"
NON_UTF8_FILE = "vllm/transformers_utils/tokenizer_latin1.py"
EMPTY_FILE = "vllm/config/__init__.py"
SYMLINK_FILE = "vllm/link.py"
SYMLINK_TARGET = "config/cache.py"  # relative to vllm/, i.e. vllm/config/cache.py
NON_PYTHON_FILES = ("README.md", "csrc/attention/paged_attention_v1.cu")
DEEPSEEK_DIR = "vllm/model_executor/models"

COMMON: Snapshot = {
    "README.md": README,
    "csrc/attention/paged_attention_v1.cu": PAGED_ATTENTION_CU,
    "vllm/__init__.py": VLLM_INIT,
    SYMLINK_FILE: Symlink(SYMLINK_TARGET),
    EMPTY_FILE: "",
    "vllm/engine/async_llm_engine.py": ASYNC_LLM_ENGINE,
    "vllm/model_executor/layers/logits_processor.py": LOGITS_PROCESSOR,
    "vllm/model_executor/layers/layernorm.py": LAYERNORM,
    "vllm/platforms/__init__.py": PLATFORMS_INIT,
    "vllm/platforms/interface.py": PLATFORM_INTERFACE,
    SYNTAX_ERROR_FILE: BROKEN_LOADER,
    NON_UTF8_FILE: TOKENIZER_LATIN1,
}

_V1_ONLY: Snapshot = {
    "vllm/config/cache.py": CACHE_CONFIG_V1,
    "vllm/engine/llm_engine.py": LLM_ENGINE_V1,
    "vllm/sampling_params.py": SAMPLING_PARAMS_V1,
    "vllm/utils.py": UTILS_V1,
    "vllm/compilation/cuda_graph.py": CUDA_GRAPH_V1,
    "vllm/model_executor/layers/linear.py": LINEAR_V1,
    "vllm/worker/cache_engine.py": CACHE_ENGINE_OLD,
    "vllm/core/scheduler.py": SCHEDULER_OLD,
}

_V2_V3_SHARED: Snapshot = {
    "vllm/config/cache.py": CACHE_CONFIG_V2,
    "vllm/sampling_params.py": SAMPLING_PARAMS_V2,
    "vllm/utils.py": UTILS_V2,
    "vllm/compilation/cuda_graph.py": CUDA_GRAPH_V2,
    "vllm/model_executor/layers/linear.py": LINEAR_V2,
}

_V2_ONLY: Snapshot = {
    "vllm/engine/llm_engine.py": LLM_ENGINE_V2,
    "vllm/worker/cache_engine.py": CACHE_ENGINE_OLD,
    "vllm/core/scheduler.py": SCHEDULER_OLD,
    f"{DEEPSEEK_DIR}/deepseek_v4.py": DEEPSEEK_V4,
}

_V3_ONLY: Snapshot = {
    "vllm/engine/llm_engine.py": LLM_ENGINE_V3,
    "vllm/v1/worker/cache_engine.py": CACHE_ENGINE_NEW,
    "vllm/v1/core/sched/scheduler.py": SCHEDULER_NEW,
    f"{DEEPSEEK_DIR}/deepseek_v4.py": DEEPSEEK_V4_REEXPORT,
    f"{DEEPSEEK_DIR}/deepseek_v4_amd.py": DEEPSEEK_V4_AMD,
    f"{DEEPSEEK_DIR}/deepseek_v4_nvidia.py": DEEPSEEK_V4_NVIDIA,
    f"{DEEPSEEK_DIR}/deepseek_v4_xpu.py": DEEPSEEK_V4_XPU,
}


def _snapshot(*parts: Snapshot) -> Snapshot:
    merged: Snapshot = {}
    for part in parts:
        merged.update(part)
    return dict(sorted(merged.items()))


TAGS = ["v0.1.0", "v0.2.0", "v0.3.0"]
ANNOTATED_TAGS = {"v0.2.0"}
VERSIONS: dict[str, Snapshot] = {
    "v0.1.0": _snapshot(COMMON, _V1_ONLY),
    "v0.2.0": _snapshot(COMMON, _V2_V3_SHARED, _V2_ONLY),
    "v0.3.0": _snapshot(COMMON, _V2_V3_SHARED, _V3_ONLY),
}
COMMIT_DATES = {
    "v0.1.0": "2024-01-15T12:00:00+00:00",
    "v0.2.0": "2024-06-15T12:00:00+00:00",
    "v0.3.0": "2025-01-15T12:00:00+00:00",
}

_DS = DEEPSEEK_DIR
CASES: dict[str, ChangeCase] = {
    "moved": ChangeCase(
        "v0.2.0",
        "v0.3.0",
        ("vllm/worker/cache_engine.py", "CacheEngine"),
        (("vllm/v1/worker/cache_engine.py", "CacheEngine"),),
        "class text identical; only the module docstring differs",
    ),
    "moved_and_changed": ChangeCase(
        "v0.2.0",
        "v0.3.0",
        ("vllm/core/scheduler.py", "Scheduler"),
        (("vllm/v1/core/sched/scheduler.py", "Scheduler"),),
        "__init__ gains max_num_seqs, schedule body changes, add_seq_group unchanged",
    ),
    "renamed": ChangeCase(
        "v0.1.0",
        "v0.2.0",
        ("vllm/compilation/cuda_graph.py", "capture_graph"),
        (("vllm/compilation/cuda_graph.py", "capture_cudagraph"),),
        "same body, same line span",
    ),
    "signature_changed": ChangeCase(
        "v0.1.0",
        "v0.2.0",
        ("vllm/utils.py", "get_distributed_init_method"),
        (("vllm/utils.py", "get_distributed_init_method"),),
        "port gains default 29500; body unchanged",
    ),
    "body_changed": ChangeCase(
        "v0.1.0",
        "v0.2.0",
        ("vllm/utils.py", "cdiv"),
        (("vllm/utils.py", "cdiv"),),
        "return statement rewritten; signature and docstring unchanged",
    ),
    "decorator_changed": ChangeCase(
        "v0.1.0",
        "v0.2.0",
        ("vllm/utils.py", "get_cpu_memory"),
        (("vllm/utils.py", "get_cpu_memory"),),
        "@functools.lru_cache(maxsize=None) -> @functools.cache",
    ),
    "bases_changed": ChangeCase(
        "v0.1.0",
        "v0.2.0",
        ("vllm/model_executor/layers/linear.py", "ColumnParallelLinear"),
        (("vllm/model_executor/layers/linear.py", "ColumnParallelLinear"),),
        "(nn.Module) -> (LinearBase); members unchanged",
    ),
    "member_added": ChangeCase(
        "v0.1.0",
        "v0.2.0",
        ("vllm/sampling_params.py", "SamplingParams"),
        (("vllm/sampling_params.py", "SamplingParams"),),
        "gains method clone; its other methods are only shifted by 2 lines",
    ),
    "added": ChangeCase(
        "v0.1.0",
        "v0.2.0",
        None,
        (("vllm/sampling_params.py", "SamplingParams.clone"),),
    ),
    "formatting_only": ChangeCase(
        "v0.1.0",
        "v0.2.0",
        ("vllm/engine/llm_engine.py", "LLMEngine.add_request"),
        (("vllm/engine/llm_engine.py", "LLMEngine.add_request"),),
        "args split over lines, comment and docstring reworded: semantically identical",
    ),
    "attribute_value_changed": ChangeCase(
        "v0.1.0",
        "v0.2.0",
        ("vllm/config/cache.py", "CacheConfig.gpu_memory_utilization"),
        (("vllm/config/cache.py", "CacheConfig.gpu_memory_utilization"),),
        "float = 0.9 -> float = 0.92",
    ),
    "constant_value_changed": ChangeCase(
        "v0.1.0",
        "v0.2.0",
        ("vllm/config/cache.py", "DEFAULT_SWAP_SPACE_GIB"),
        (("vllm/config/cache.py", "DEFAULT_SWAP_SPACE_GIB"),),
        "4 -> 8",
    ),
    "removed": ChangeCase(
        "v0.1.0",
        "v0.2.0",
        ("vllm/utils.py", "is_neuron"),
        (),
    ),
    "ambiguous_move": ChangeCase(
        "v0.2.0",
        "v0.3.0",
        (f"{_DS}/deepseek_v4.py", "DeepseekV4ForCausalLM"),
        (
            (f"{_DS}/deepseek_v4_amd.py", "DeepseekV4ForCausalLM"),
            (f"{_DS}/deepseek_v4_nvidia.py", "DeepseekV4ForCausalLM"),
            (f"{_DS}/deepseek_v4_xpu.py", "DeepseekV4ForCausalLM"),
        ),
        "each copy differs from the original only in the attn_backend value line; "
        "deepseek_v4.py remains as an import-only re-export of the nvidia copy",
    ),
}

# Structural features present (unchanged) in every version.
_AE = "vllm/engine/async_llm_engine.py"
FEATURES: dict[str, SymbolRef] = {
    "multi_decorator": ("vllm/model_executor/layers/layernorm.py", "fused_add_rms_norm"),
    "nested_function": (_AE, "build_guarded_step.<locals>.guarded_step"),
    "async_function": (_AE, "run_engine_loop"),
    "async_method": (_AE, "AsyncLLMEngine.generate"),
    "class_in_function": (_AE, "_make_stream_cls.<locals>.AsyncStream"),
    "property_getter_setter": ("vllm/engine/llm_engine.py", "LLMEngine.log_stats"),
    "classmethod": ("vllm/engine/llm_engine.py", "LLMEngine.from_engine_args"),
    "conditional_def": ("vllm/platforms/__init__.py", "current_platform_name"),
    "module_attr_in_try": ("vllm/platforms/__init__.py", "HAS_TRITON"),
    "module_attr_in_if": ("vllm/platforms/__init__.py", "DEFAULT_DEVICE"),
    "class_attr_in_if": ("vllm/platforms/interface.py", "Platform.dispatch_key"),
    "class_attr_in_try": ("vllm/platforms/interface.py", "Platform.supports_fp8"),
    "cross_ref_target": ("vllm/model_executor/layers/linear.py", "ReplicatedLinear"),
    "cross_ref_user": ("vllm/model_executor/layers/logits_processor.py", "LogitsProcessor"),
    "reexport_module": ("vllm/__init__.py", "__all__"),
}

LMCACHE_UTILS = '''\
"""Helpers for the vLLM integration of LMCache."""

from vllm.config.cache import CacheConfig


def mla_enabled(model_config) -> bool:
    """Whether the model uses multi-head latent attention."""
    return getattr(model_config, "use_mla", False)


def cache_block_size(cache_config: CacheConfig) -> int:
    return cache_config.block_size
'''

LMCACHE_VERSIONS: dict[str, Snapshot] = {
    "v0.5.1": {
        "README.md": "# LMCache (fake)\n",
        "lmcache/__init__.py": "",
        "lmcache/integration/vllm/utils.py": LMCACHE_UTILS,
    },
}
LMCACHE_COMMIT_DATES = {"v0.5.1": "2025-02-01T12:00:00+00:00"}


# --------------------------------------------------------------------------------------
# Snapshot helpers
# --------------------------------------------------------------------------------------


def content_bytes(content: Content) -> bytes:
    """Bytes of a regular file's content (``Symlink`` is not a regular file)."""
    if isinstance(content, Symlink):
        raise TypeError("a symlink has no file content")
    return content.encode("utf-8") if isinstance(content, str) else content


def regular_files(snapshot: Snapshot) -> dict[str, bytes]:
    """Path -> bytes of every non-symlink file of a snapshot."""
    return {p: content_bytes(c) for p, c in snapshot.items() if not isinstance(c, Symlink)}


def python_files(tag: str) -> dict[str, bytes]:
    """Path -> bytes of every regular ``.py`` file of a tag of the fake vLLM."""
    files = regular_files(VERSIONS[tag])
    return {p: data for p, data in files.items() if p.endswith(".py")}


# --------------------------------------------------------------------------------------
# git
# --------------------------------------------------------------------------------------


def git_env(date: str = "2024-01-01T00:00:00+00:00") -> dict[str, str]:
    """A minimal environment making git independent of the user's config."""
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": os.devnull,
        "LC_ALL": "C",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": "Fake Author",
        "GIT_AUTHOR_EMAIL": "author@example.invalid",
        "GIT_COMMITTER_NAME": "Fake Committer",
        "GIT_COMMITTER_EMAIL": "committer@example.invalid",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
    }


def git(cwd: Path, *args: str, date: str = "2024-01-01T00:00:00+00:00") -> str:
    """Run git in ``cwd`` with ``git_env``; return stripped stdout."""
    result = subprocess.run(
        ["git", *args], cwd=cwd, env=git_env(date), check=True, capture_output=True, text=True
    )
    return result.stdout.strip()


def _clear_worktree(repo: Path) -> None:
    for entry in repo.iterdir():
        if entry.name == ".git":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def write_snapshot(root: Path, snapshot: Snapshot) -> None:
    """Materialize a snapshot under ``root`` (symlinks as real symlinks)."""
    for rel, content in snapshot.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Symlink):
            os.symlink(content.target, path)
        else:
            path.write_bytes(content_bytes(content))


def _build_repo(
    dest: Path, versions: dict[str, Snapshot], dates: dict[str, str], annotated: set[str]
) -> FakeRepo:
    dest.mkdir(parents=True, exist_ok=True)
    git(dest, "-c", "init.defaultBranch=main", "init", "-q", ".")
    commits: dict[str, str] = {}
    for tag, snapshot in versions.items():
        date = dates[tag]
        _clear_worktree(dest)
        write_snapshot(dest, snapshot)
        git(dest, "add", "-A", date=date)
        git(dest, "commit", "-q", "--no-verify", "-m", f"Release {tag}", date=date)
        if tag in annotated:
            git(dest, "tag", "-a", "-m", f"Release {tag}", tag, date=date)
        else:
            git(dest, "tag", tag, date=date)
        commits[tag] = git(dest, "rev-parse", "HEAD")
    path = dest.resolve()
    return FakeRepo(path, list(versions), path.as_uri(), commits, dict(versions))


def build_fake_vllm(dest: Path) -> FakeRepo:
    """Create the fake vLLM repo at ``dest`` with tags v0.1.0, v0.2.0 (annotated), v0.3.0."""
    return _build_repo(dest, VERSIONS, COMMIT_DATES, ANNOTATED_TAGS)


def build_fake_lmcache(dest: Path) -> FakeRepo:
    """Create a tiny second repo (LMCache) at ``dest`` with tag v0.5.1."""
    return _build_repo(dest, LMCACHE_VERSIONS, LMCACHE_COMMIT_DATES, set())


# --------------------------------------------------------------------------------------
# Wheels
# --------------------------------------------------------------------------------------

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


PURE_PYTHON = "py3-none-any"


def _dist_info_files(
    name: str, version: str, tag: str, requires_python: str | None
) -> dict[str, bytes]:
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    if requires_python is not None:
        metadata += f"Requires-Python: {requires_python}\n"
    purelib = str(tag == PURE_PYTHON).lower()
    wheel = f"Wheel-Version: 1.0\nGenerator: fakevllm\nRoot-Is-Purelib: {purelib}\nTag: {tag}\n"
    return {f"{info}/METADATA": metadata.encode(), f"{info}/WHEEL": wheel.encode()}


def wheel_filename(name: str, version: str, tag: str = PURE_PYTHON) -> str:
    return f"{name.replace('-', '_')}-{version}-{tag}.whl"


def wheel_members(
    name: str, version: str, tag: str = PURE_PYTHON, requires_python: str | None = None,
    code_of: str | None = None,
) -> dict[str, bytes]:
    """Archive name -> bytes of a wheel (RECORD included, last); its .py files are those
    of the tag ``code_of`` (default: ``v{version}``)."""
    members = dict(sorted(python_files(code_of or f"v{version}").items()))
    members.update(_dist_info_files(name, version, tag, requires_python))
    record_name = f"{name.replace('-', '_')}-{version}.dist-info/RECORD"
    lines = [_record_line(arc, data) for arc, data in members.items()]
    members[record_name] = ("\n".join([*lines, f"{record_name},,"]) + "\n").encode()
    return members


def _write_wheel(path: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in members.items():
            info = zipfile.ZipInfo(arcname, date_time=_ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)


def build_fake_wheels(
    dest_dir: Path, name: str = "vllm", versions: tuple[str, ...] = ("0.1.0", "0.2.0")
) -> Path:
    """Write ``{name}-{version}-py3-none-any.whl`` for each version; return ``dest_dir``."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    for version in versions:
        write_wheel(dest_dir, name, version)
    return dest_dir


def write_wheel(
    dest_dir: Path, name: str, version: str, tag: str = PURE_PYTHON,
    requires_python: str | None = None, code_of: str | None = None,
) -> Path:
    """Write the wheel of ``name==version`` tagged ``tag`` (``cp39-cp39-win_amd64``: any
    tag, whatever this machine is) into ``dest_dir``; return its path. ``code_of``: the
    tag whose .py files it holds, for a version the fake repo has not (``0.1.0+cu129``)."""
    path = dest_dir / wheel_filename(name, version, tag)
    _write_wheel(path, wheel_members(name, version, tag, requires_python, code_of))
    return path
