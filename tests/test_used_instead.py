"""What the users of a removed module-level symbol name in its place (``users_now_use``).

Each case is a pair of sources reduced from vLLM v0.20.0 -> v0.25.0 (the symbol it comes
from in its comment), indexed as ``vllm@v1`` and ``vllm@v2`` under ``c/<id>/``, and what
the removed symbol's users name instead, as `SymbolComparer` stores it. The hint is worded
as a fact ("handler_for names HandlerRegistry where it did"): a name the rewritten code
merely calls, returns or branches to beside it must not be given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fakeproject import DB, isolate, write_tree
from fakeproject import write_file as write

from annotate_cli import cli
from annotations import code_lines, matching
from annotations.comparison import Comparison, SymbolComparer
from annotations.refs import parse_ref
from annotations.resolve import Resolver
from annotations.results import Status
from annotations.used_instead import LONGEST_STATEMENT
from db.database import open_database
from indexer.config import load_config


@dataclass(frozen=True)
class Case:
    """``old`` and ``new``: m.py at v1 and v2 (and ``files``, the same at both); ``removed``
    a module-level name of m.py at v1 alone; ``users``: each user's qualname, with the
    names of m.py at v2 it names in the removed symbol's place."""

    old: str
    new: str
    removed: str
    users: dict[str, tuple[str, ...]]
    files: dict[str, str] = field(default_factory=dict)


KERNELS = """\
class EmulationKernel:
    pass


class FbgemmKernel:
    pass


class MarlinKernel:
    pass


"""
FLATTEN_INPUT = """\
def flatten_input(content):
    if isinstance(content, str):
        return content
    return "\\n".join(str(part.get("text", "")) for part in content or ())


"""
AUTO_MOE = """\
class AutoMoEMethod:
    def __init__(self, config, moe):
        self.config = config
        self.kernel = select_kernel(moe)


"""
LONG_ROW = ", ".join(["1"] * (LONGEST_STATEMENT // 2))
CASES: dict[str, Case] = {
    # --- what replaced it, named where it stood ---------------------------------------
    "another-called-the-same": Case(  # flatten_chat_text_content
        FLATTEN_INPUT + "def flatten_chat(content):\n"
        "    return ''.join(part['text'] for part in content)\n\n\n"
        "def parse(message):\n    text = flatten_chat(message.get('content'))\n"
        "    return text.strip()\n",
        FLATTEN_INPUT + "def parse(message):\n    text = flatten_input(message.get('content'))\n"
        "    return text.strip()\n",
        "flatten_chat", {"parse": ("flatten_input",)},
    ),
    "a-dict-lookup-made-a-registry-call": Case(  # spec_manager_map
        "class FullManager:\n    pass\n\n\nMANAGERS = {int: FullManager}\n\n\n"
        "def manager_for(spec, **kwargs):\n    manager_class = MANAGERS[type(spec)]\n"
        "    return manager_class(spec, **kwargs)\n",
        "class FullManager:\n    pass\n\n\nclass SpecRegistry:\n    _managers = {}\n\n"
        "    @classmethod\n    def manager_class(cls, spec):\n"
        "        return cls._managers.get(type(spec))\n\n\n"
        "def manager_for(spec, **kwargs):\n    manager_class = SpecRegistry.manager_class(spec)\n"
        "    return manager_class(spec, **kwargs)\n",
        "MANAGERS", {"manager_for": ("SpecRegistry",)},
    ),
    "built-then-returned-now-returned": Case(  # AWQMarlinMoEMethod
        AUTO_MOE + "class MarlinMoEMethod:\n    def __init__(self, config, moe):\n"
        "        self.config, self.moe, self.dtype = config, moe, None\n\n\n"
        "def quant_method(config, layer, prefix):\n"
        "    method = MarlinMoEMethod(config, layer.moe_config)\n"
        "    method.dtype = input_dtype(prefix)\n    return method\n",
        AUTO_MOE + "def quant_method(config, layer, prefix):\n"
        "    return AutoMoEMethod(config, layer.moe_config)\n",
        "MarlinMoEMethod", {"quant_method": ("AutoMoEMethod",)},
    ),
    "its-result-no-longer-kept": Case(  # set_device_control_env_var
        "def set_device_env(config, rank):\n    return {'CUDA_VISIBLE_DEVICES': str(rank)}\n\n\n"
        "def start(config, rank):\n    context = set_device_env(config, rank)\n"
        "    with context:\n        launch(config)\n",
        "def set_assigned_gpu_ids(config, rank, assigned):\n"
        "    config.gpu_ids = assigned or [rank]\n\n\n"
        "def start(config, rank):\n    set_assigned_gpu_ids(config, rank, config.assigned)\n"
        "    launch(config)\n",
        "set_device_env", {"start": ("set_assigned_gpu_ids",)},
    ),
    "a-type-in-an-annotation": Case(  # CpuGpuOffloadingHandlers
        "class CpuGpuHandlers:\n    pass\n\n\nclass Spec:\n    def __init__(self):\n"
        "        self._handlers: CpuGpuHandlers | None = None\n",
        "class CpuWorker:\n    def run(self):\n        return 1\n\n\nclass Spec:\n"
        "    def __init__(self):\n        self._worker: CpuWorker | None = None\n",
        "CpuGpuHandlers", {"Spec.__init__": ("CpuWorker",)},
    ),
    "a-base-class": Case(  # OpenAIServing
        "class OpenAIServing:\n    def serve(self):\n        return 'openai'\n\n\n"
        "class ServingChat(OpenAIServing):\n    name = 'chat'\n",
        "class GenerateBaseServing:\n    def generate(self, prompt):\n        return prompt\n\n\n"
        "class ServingChat(GenerateBaseServing):\n    name = 'chat'\n",
        "OpenAIServing", {"ServingChat": ("GenerateBaseServing",)},
    ),
    "split-in-two": Case(  # EagleCudaGraphManager
        "class EagleGraphs:\n    pass\n\n\nclass Speculator:\n    def init_graphs(self, mode):\n"
        "        self.prefill_graphs = EagleGraphs(self.config, mode, self.steps + 1)\n"
        "        self.decode_graphs = EagleGraphs(self.config, mode, query_len=1)\n",
        "class PrefillGraphs:\n    pass\n\n\nclass DecodeGraphs:\n    pass\n\n\nclass Speculator:\n"
        "    def init_graphs(self, mode):\n"
        "        self.prefill_graphs = PrefillGraphs(self.config, mode, self.steps + 1)\n"
        "        self.decode_graphs = DecodeGraphs(self.config, mode, query_len=1)\n",
        "EagleGraphs", {"Speculator.init_graphs": ("PrefillGraphs", "DecodeGraphs")},
    ),
    "merged-into-another-with-a-flag": Case(  # CompressedTensorsW4A16Fp4
        "class W4A16Fp4:\n    pass\n\n\nclass W4A4Fp4:\n    pass\n\n\n"
        "def scheme(weight, activation):\n    if weight.nvfp4 and activation is None:\n"
        "        return W4A16Fp4()\n    return W4A4Fp4()\n",
        "class W4A4Fp4:\n    def __init__(self, use_a16=False):\n"
        "        self.use_a16 = use_a16\n\n\n"
        "def scheme(weight, activation):\n    if weight.nvfp4:\n        if activation is None:\n"
        "            return W4A4Fp4(use_a16=True)\n        if not activation.nvfp4:\n"
        "            raise ValueError('NVFP4 weights need NVFP4 activations')\n"
        "        return W4A4Fp4()\n    return None\n",
        "W4A16Fp4", {"scheme": ("W4A4Fp4",)},
    ),
    "its-method-made-a-function": Case(  # logger (cute's cache_utils)
        "import logging\n\nlogger = logging.getLogger(__name__)\n\n\nclass Cache:\n"
        "    def load(self, path):\n        logger.debug('Loading %s', path)\n"
        "        return read(path)\n",
        "def fa_log(level, message):\n    if level <= 1:\n        print(message)\n\n\n"
        "class Cache:\n    def load(self, path):\n        fa_log(1, f'Loading {path}')\n"
        "        return read(path)\n",
        "logger", {"Cache.load": ("fa_log",)},
    ),
    "two-calls-made-one": Case(  # _e2m1_nibble
        "def e2m1_nibble(x):\n    return (x * 2).to(8)\n\n\ndef quantize(x_lo, x_hi, scale):\n"
        "    lo = e2m1_nibble(x_lo * scale)\n    hi = e2m1_nibble(x_hi * scale)\n"
        "    packed = lo | (hi << 4)\n    return packed\n",
        "def fp32x2_to_fp4x2(a, b):\n    return inline_asm('cvt.rn.satfinite.e2m1x2', a, b)\n\n\n"
        "def quantize(x_lo, x_hi, scale):\n"
        "    packed = fp32x2_to_fp4x2(x_lo * scale, x_hi * scale)\n    return packed\n",
        "e2m1_nibble", {"quantize": ("fp32x2_to_fp4x2",)},
    ),
    "its-call-written-over-lines-now": Case(  # reduce (triton_kernels' matmul_ogs)
        "def reduce(x, dim, flex=None):\n    return x.sum(dim)\n\n\ndef matmul(x, w, memory):\n"
        "    out = x @ w\n    final, scale = reduce(out, dim=1, flex=memory['flex'])\n"
        "    return final\n",
        "def reduce_grouped(x, indx, flex):\n    return x.view(-1, indx).sum(0), None\n\n\n"
        "def matmul(x, w, memory):\n    out = x @ w\n    final, scale = reduce_grouped(\n"
        "        out,\n        None,\n        flex=memory['flex'],\n    )\n    return final\n",
        "reduce", {"matmul": ("reduce_grouped",)},
    ),
    "an-error-raised-now-another": Case(  # one word for another at a statement's end
        "class OldError(Exception):\n    pass\n\n\ndef check(value):\n    if value < 0:\n"
        "        raise OldError\n    return value\n",
        "class RangeError(Exception):\n    pass\n\n\ndef check(value):\n    if value < 0:\n"
        "        raise RangeError\n    return value\n",
        "OldError", {"check": ("RangeError",)},
    ),
    "a-decorator-now-another": Case(
        "def old_compile(cls):\n    return cls\n\n\nclass Model:\n    @old_compile\n"
        "    def forward(self, x):\n        return x\n",
        "def support_compile(cls):\n    return cls\n\n\nclass Model:\n    @support_compile\n"
        "    def forward(self, x):\n        return x\n",
        "old_compile", {"Model.forward": ("support_compile",)},
    ),
    "a-returned-class-now-another": Case(
        "class OldBackend:\n    pass\n\n\ndef backend_class(name):\n    if name:\n"
        "        return OldBackend\n    return None\n",
        "class FlashBackend:\n    pass\n\n\ndef backend_class(name):\n    if name:\n"
        "        return FlashBackend\n    return None\n",
        "OldBackend", {"backend_class": ("FlashBackend",)},
    ),
    # --- and only that: what the rewrite adds beside it is not named ---------------------
    "a-call-added-after-it-is-not-named": Case(  # GPTQLinearMethod
        "class LinearMethod:\n    pass\n\n\ndef marlin_dtype(prefix):\n    return None\n\n\n"
        "def quant_method(config, layer, prefix):\n"
        "    return linear_method(config, layer, prefix, LinearMethod)\n",
        "class AutoLinearMethod:\n    def apply(self, x):\n        return x\n\n\n"
        "def marlin_dtype(prefix):\n    return None\n\n\n"
        "def quant_method(config, layer, prefix):\n    method = linear_method(\n"
        "        config, layer, prefix, AutoLinearMethod\n    )\n    if method is None:\n"
        "        return None\n    method.input_dtype = marlin_dtype(prefix)\n    return method\n",
        "LinearMethod", {"quant_method": ("AutoLinearMethod",)},
    ),
    "a-sibling-added-beside-it-is-not-named": Case(  # CustomMMDataset
        "class MMDataset:\n    pass\n\n\ndef samples(args):\n    if args.name == 'custom':\n"
        "        dataset = None\n    elif args.name == 'custom_mm':\n"
        "        dataset = MMDataset(dataset_path=args.path)\n    return dataset\n",
        "class ImageDataset:\n    pass\n\n\nclass AudioDataset:\n    pass\n\n\n"
        "def samples(args):\n    if args.name == 'custom':\n        dataset = None\n"
        "    elif args.name == 'custom_image':\n"
        "        dataset = ImageDataset(dataset_path=args.path, seed=args.seed)\n"
        "    elif args.name == 'custom_audio':\n"
        "        dataset = AudioDataset(args.path, sample_rate=16000)\n    return dataset\n",
        "MMDataset", {"samples": ("ImageDataset",)},
    ),
    # --- no hint: what the rewritten lines merely call, return or branch to -------------
    "a-branch-gone-the-kernel-of-a-new-branch-is-not-named": Case(  # VLLM_USE_FBGEMM
        KERNELS + "USE_FBGEMM = False\n\n\ndef init_kernel(invariant):\n    force = None\n"
        "    if invariant:\n        force = EmulationKernel\n    elif USE_FBGEMM:\n"
        "        force = FbgemmKernel\n    return force\n",
        KERNELS + "def init_kernel(invariant, use_a16=False):\n    force = None\n"
        "    backend = linear_backend()\n    if invariant:\n        force = EmulationKernel\n"
        "    elif backend == 'auto' and use_a16:\n        force = MarlinKernel\n    return force\n",
        "USE_FBGEMM", {},
    ),
    "read-into-another-variable-the-kernel-set-is-not-named": Case(  # VLLM_NVFP4_GEMM_BACKEND
        KERNELS + "GEMM_BACKEND = None\n\n\ndef init_kernel(invariant):\n"
        "    backend_name = GEMM_BACKEND\n    return backend_name\n",
        KERNELS + "def init_kernel(invariant):\n    force_kernel = MarlinKernel\n"
        "    return force_kernel\n",
        "GEMM_BACKEND", {},
    ),
    "a-lookup-gone-the-kernel-of-a-new-branch-is-not-named": Case(  # _NVFP4_BACKEND_TO_KERNEL
        KERNELS + "BACKEND_TO_KERNEL = {'fbgemm': FbgemmKernel}\n\n\n"
        "def init_kernel(invariant, backend):\n    force = None\n    if invariant:\n"
        "        force = EmulationKernel\n    elif backend is not None:\n"
        "        force = BACKEND_TO_KERNEL.get(backend)\n    return force\n",
        KERNELS + "def init_kernel(invariant, backend, use_a16=False):\n    force = None\n"
        "    if invariant:\n        force = EmulationKernel\n"
        "    elif backend == 'auto' and use_a16:\n        force = MarlinKernel\n    return force\n",
        "BACKEND_TO_KERNEL", {},
    ),
    "a-type-gone-the-class-of-its-keys-is-not-named": Case(  # OffloadingOperationMetrics
        "from typing import Any\n\n\nclass OperationMetrics:\n    size: int\n    time: float\n\n\n"
        "class Stats:\n    def reset(self):\n"
        "        self.data: dict[str, list[OperationMetrics]] = {}\n",
        "from typing import Any\n\n\nclass StatsKey:\n    TYPES = 'types'\n    DATA = 'data'\n\n\n"
        "class Stats:\n    def reset(self):\n        self.data: dict[str, Any] = {\n"
        "            StatsKey.TYPES: {},\n            StatsKey.DATA: {},\n        }\n",
        "OperationMetrics", {},
    ),
    "made-a-method-what-is-returned-is-not-named": Case(  # pp_receive
        "from .outputs import RunnerOutput\n\n\ndef pp_receive(num_reqs, max_len):\n"
        "    return receive_tensors(num_reqs, max_len)\n\n\nclass Runner:\n"
        "    def sample_tokens(self, batch):\n        if not self.is_last_rank:\n"
        "            sampled, num_sampled, num_rejected = pp_receive(\n"
        "                batch.num_reqs, max_sample_len=self.num_steps + 1\n            )\n"
        "            self.postprocess(batch, sampled, num_sampled, num_rejected)\n"
        "            return None\n        return RunnerOutput(self.sample(batch))\n",
        "from .outputs import RunnerOutput\n\n\nclass Runner:\n"
        "    def sample_tokens(self, batch):\n        if not self.is_last_rank:\n"
        "            all_decode_next = self.pp_handler.receive(batch)\n"
        "            self.postprocess_num_computed_tokens(batch)\n"
        "            if not all_decode_next:\n"
        "                self.model_state.postprocess_state(batch.idx_mapping, 0)\n"
        "            kv_output = self.kv_connector.post_forward(self.finished)\n"
        "            return RunnerOutput.with_kv_output_only(kv_output)\n"
        "        return RunnerOutput(self.sample(batch))\n",
        "pp_receive", {},
        files={"outputs.py": "class RunnerOutput:\n    def __init__(self, ids):\n"
                             "        self.ids = ids\n"},
    ),
    "folded-into-another-a-later-call-is-not-named": Case(  # synthetic_rejection_sample
        "def synthetic_sample(tokens, draft):\n    return tokens[: len(draft)], len(draft)\n\n\n"
        "def counts(num_sampled, seq_lens):\n    return num_sampled, seq_lens - num_sampled\n\n\n"
        "def sample(method, logits, draft, seq_lens):\n    if method == 'strict':\n"
        "        sampled, num_sampled = strict_sample(logits, draft)\n    else:\n"
        "        sampled, num_sampled = synthetic_sample(\n            logits.argmax(-1), draft\n"
        "        )\n    return sampled, num_sampled\n",
        "def counts(num_sampled, seq_lens):\n    return num_sampled, seq_lens - num_sampled\n\n\n"
        "def sample(method, logits, draft, seq_lens):\n"
        "    sampled, num_sampled = strict_sample(logits, draft, method)\n"
        "    num_sampled, num_rejected = counts(\n        num_sampled,\n        seq_lens,\n    )\n"
        "    return sampled, num_sampled\n",
        "synthetic_sample", {},
    ),
    "made-a-local-its-helper-is-not-named": Case(  # vllm_ir_lib
        "ir_lib = Library('vllm_ir', 'FRAGMENT')\n\n\nclass IrOp:\n    def __init__(self, name):\n"
        "        # registration\n        ir_lib.define(name + self.schema)\n"
        "        self.op = getattr(ops, name)\n",
        "def ops_subtree(lib):\n    return getattr(ops, lib.ns)\n\n\nclass IrOp:\n"
        "    def __init__(self, name):\n        # registration (the ops subtree of lib.ns)\n"
        "        lib = ir_torch_lib\n        lib.define(name + self.schema)\n"
        "        torch_ops = ops_subtree(lib)\n        self.op = getattr(torch_ops, name)\n",
        "ir_lib", {},
    ),
    "a-statement-too-long-to-align-names-nothing": Case(  # cost guard, no vLLM case
        "def old_scale(x):\n    return x * 2\n\n\ndef new_scale(x):\n    return x * 3\n\n\n"
        f"def table():\n    return [old_scale, {LONG_ROW}]\n",
        "def new_scale(x):\n    return x * 3\n\n\n"
        f"def table():\n    return [new_scale, {LONG_ROW}]\n",
        "old_scale", {},
    ),
    "inlined-what-its-body-called-is-not-named": Case(  # flash_attn_supports_fp8
        "def flash_attn_version():\n    return 3\n\n\ndef supports_fp8():\n"
        "    return flash_attn_version() == 3 and is_hopper()\n\n\nclass Backend:\n"
        "    def supports_dtype(self, dtype):\n        if is_quantized(dtype):\n"
        "            return supports_fp8()\n        return dtype == 'auto'\n",
        "def flash_attn_version():\n    return 3\n\n\nclass Backend:\n"
        "    def supports_dtype(self, dtype):\n        if dtype in ('fp8', 'fp8_e4m3'):\n"
        "            if is_xpu():\n                return True\n"
        "            return (\n                flash_attn_version() == 3\n"
        "                and is_hopper()\n            )\n        return dtype == 'auto'\n",
        "supports_fp8", {},
    ),
    "a-user-removed-too": Case(  # no vLLM case: where both codes went is asked at once
        "def scale_rows(rows):\n    return rows.float() * weights_for_rows(rows)\n\n\n"
        "def apply_scales(batch):\n    scaled_batch_rows = scale_rows(batch)\n"
        "    return scaled_batch_rows.sum(dim=-1)\n",
        "class Scaler:\n    def forward(self, batch):\n"
        "        scaled_batch_rows = batch.float() * weights_for_rows(batch)\n"
        "        return scaled_batch_rows.sum(dim=-1)\n",
        "scale_rows", {},
    ),
}


def _files(case_id: str, main: str, case: Case) -> dict[str, str]:
    return {f"c/{case_id}/{path}": text for path, text in {"m.py": main, **case.files}.items()}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every case's files at v1 and v2, indexed."""
    root = tmp_path_factory.mktemp("used-instead")
    with pytest.MonkeyPatch.context() as patch:
        isolate(patch, root / "xdg-cache")
        patch.chdir(root)
        write(root / "annotate.toml", '[repos.vllm]\nversions = ["v1", "v2"]\n')
        for version, source in (("v1", "old"), ("v2", "new")):
            files: dict[str, str] = {}
            for case_id, case in CASES.items():
                files.update(_files(case_id, getattr(case, source), case))
            tree = write_tree(root / "src" / version, files)
            done = CliRunner().invoke(cli, ["index", f"vllm@{version}", "--from", str(tree)])
            assert done.exit_code == 0, done.output
    return root


@pytest.mark.parametrize("case_id", CASES)
def test_what_the_users_of_a_removed_symbol_name_in_its_place(case_id: str, project: Path) -> None:
    case = CASES[case_id]
    with open_database(project / DB, create=False) as database:
        resolver = Resolver(database, load_config(project))
        pinned = resolver.resolve(parse_ref(f"vllm@v1:c/{case_id}/m.py::{case.removed}"))
        comparison = SymbolComparer(resolver).compare(pinned,
                                                      resolver.version_key("vllm", "v2"))
    assert comparison.status is Status.REMOVED
    assert dict(comparison.users_instead) == {
        user: tuple(f"vllm@v2:c/{case_id}/m.py::{name}" for name in names)
        for user, names in case.users.items()}


def test_a_removed_symbol_and_its_removed_user_are_placed_with_one_index_of_lines(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a removed symbol's code went and where that of its user, removed too, went
    are asked at once: each ask reads B's changed files (0.4 s at vLLM v0.20.0 ->
    v0.25.0), and the user's was asked again when the comparisons were stored."""
    asked: list[frozenset[str]] = []

    class Recorded(code_lines.LinePlaces):
        def __init__(self, files: Any, wanted: frozenset[str]) -> None:
            super().__init__(files, wanted)
            asked.append(wanted)

    monkeypatch.setattr(matching, "LinePlaces", Recorded)
    with open_database(project / DB, create=False) as database:
        resolver = Resolver(database, load_config(project))
        pinned = resolver.resolve(parse_ref("vllm@v1:c/a-user-removed-too/m.py::scale_rows"))
        comparer = SymbolComparer(resolver)
        comparison = comparer.compare(pinned, resolver.version_key("vllm", "v2"))
        comparer.save()
        stored = dict(database.conn.execute(
            "SELECT qualname, result FROM match_cache WHERE path = 'c/a-user-removed-too/m.py'"))
    assert comparison.status is Status.REMOVED
    assert len(asked) == 1
    assert "scaled_batch_rows = scale_rows(batch)" in asked[0]  # the user's line
    assert set(stored) == {"scale_rows", "apply_scales"}
    assert Comparison.decode(stored["apply_scales"]).status is Status.REMOVED
