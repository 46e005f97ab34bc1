"""db.close_matches: difflib.get_close_matches's answers, scoring few candidates, from a
list of candidates or from `CloseCandidates` (many words against one list); the "did you
mean" hint."""

from __future__ import annotations

import difflib
import random
from collections.abc import Callable, Sequence

import pytest

from db.close_matches import CloseCandidates, close_matches, did_you_mean

Scorer = Callable[[str, Sequence[str], int, float], list[str]]
SCORERS: dict[str, Scorer] = {
    "close_matches": close_matches,
    "CloseCandidates": lambda word, candidates, n, cutoff: CloseCandidates(candidates).close(
        word, n, cutoff),
}

FOLDERS = ("vllm/model_executor/models", "vllm/model_executor/layers/quantization",
           "vllm/v1/worker", "vllm/v1/attention/backends/mla", "vllm/distributed/kv_transfer")
STEMS = ("llama", "llama4", "mllama4", "keye", "keye_vl1_5", "bee", "deepseek_v2", "qwen2",
         "qwen2_5_vl", "mamba_utils", "ubatch_utils", "utils", "gpu_model_runner", "fp8",
         "inc", "humming", "indexer", "flashmla", "cutlass_mla", "p2p_nccl_connector")
# A version's paths: long shared prefixes, as in vLLM's ~2,000 files.
PATHS = sorted(f"{folder}/{stem}{suffix}.py" for folder in FOLDERS for stem in STEMS
               for suffix in ("", "_v2", "_base", "_cuda", "_rocm", "_xpu", "_old_impl",
                              "_common", "_config", "_ops", "_kernels", "_test", "_a", "_b",
                              "_c", "_d", "_e", "_f", "_g", "_h"))


@pytest.mark.parametrize(("word", "candidates", "n", "cutoff"), [
    ("vllm/model_executor/models/keye_old.py", PATHS, 3, 0.6),
    ("vllm/v1/worker/mamba_utils_old.py", PATHS, 3, 0.6),
    ("MissingCacheConfig", ["CacheConfig", "CacheConfig.block_size", "ModelConfig"], 3, 0.5),
    ("abc", ["abd", "abe", "abf", "abg"], 3, 0.6),  # one score: the largest names win
    ("abc", ["abd", "abd", "abe"], 3, 0.6),  # duplicates come back as difflib gives them
    ("zzz", ["abd", "abe"], 3, 0.6),  # nothing close
    ("abc", [], 3, 0.6),
    ("vllm/v1/worker/utils.py", PATHS, 1, 0.6),
], ids=["path-typo", "path-typo-2", "qualname", "ties", "duplicates", "none-close", "no-candidates",
        "n-1"])
@pytest.mark.parametrize("scorer", SCORERS)
def test_same_answer_as_difflib(
    scorer: str, word: str, candidates: list[str], n: int, cutoff: float
) -> None:
    assert SCORERS[scorer](word, candidates, n, cutoff) == difflib.get_close_matches(
        word, candidates, n, cutoff)


def test_same_answer_as_difflib_for_random_typos() -> None:
    rng = random.Random(7)
    shared = CloseCandidates(PATHS)  # counted once, for every typo
    for path in rng.sample(PATHS, 40):
        cut = rng.randrange(len(path))
        typo = path[:cut] + rng.choice(("", "x", "_old", "/")) + path[cut + rng.randint(0, 3):]
        expected = difflib.get_close_matches(typo, PATHS)
        assert close_matches(typo, PATHS) == expected, typo
        assert shared.close(typo) == expected, typo
        assert shared.close(typo, 5, 0.8) == difflib.get_close_matches(typo, PATHS, 5, 0.8)


@pytest.mark.parametrize("scorer", SCORERS)
def test_scores_only_the_candidates_that_can_make_the_top_three(
        scorer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    typo = "vllm/model_executor/models/keye_oldd.py"
    expected = difflib.get_close_matches(typo, PATHS)
    scored = []
    ratio = difflib.SequenceMatcher.ratio

    def counting_ratio(matcher: difflib.SequenceMatcher) -> float:
        scored.append(matcher.a)
        return ratio(matcher)

    monkeypatch.setattr(difflib.SequenceMatcher, "ratio", counting_ratio)
    assert SCORERS[scorer](typo, PATHS, 3, 0.6) == expected
    assert len(PATHS) == 2000
    assert len(scored) < 100, len(scored)  # difflib scores nearly all 2,000


@pytest.mark.parametrize(("options", "hint"), [
    pytest.param(["vllm"], "did you mean 'vllm'?", id="one"),
    pytest.param(["a.py", "b.py"], "did you mean 'a.py' or 'b.py'?", id="two"),
    pytest.param(["a.py", "b.py", "c.py"], "did you mean 'a.py', 'b.py' or 'c.py'?",
                 id="three"),
])
def test_did_you_mean_quotes_each_option_and_asks(options: list[str], hint: str) -> None:
    assert did_you_mean(options) == hint
