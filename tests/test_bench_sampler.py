"""The benchmark's memory sampler (bench/run.py), which polls /proc while a measured
command runs: it must find the whole process tree, and cheaply, for it shares the cores
with the command it measures."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "run.py"
TREE = """\
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                         stdin=subprocess.PIPE)
print(child.pid, flush=True)
sys.stdin.read()
child.stdin.close()
child.wait()
"""


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    """bench/run.py, a script rather than a package's module, loaded from its file (its
    dataclasses need it in sys.modules while it runs)."""
    spec = importlib.util.spec_from_file_location("bench_run", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="no /proc here")
def test_the_sampler_finds_children_and_grandchildren_as_a_scan_of_proc_does(
    bench: ModuleType
) -> None:
    with subprocess.Popen([sys.executable, "-c", TREE], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as parent:
        try:
            assert parent.stdout is not None
            grandchild = int(parent.stdout.readline())
            found = bench._descendants(os.getpid())
            assert {parent.pid, grandchild} <= found
            assert found == bench._descendants_by_scan(os.getpid())
            assert bench.descendants_rss_kb(os.getpid()) > 0
        finally:
            assert parent.stdin is not None
            parent.stdin.close()  # the tree exits once its input ends
            parent.wait(timeout=30)


def test_the_back_to_back_ratio_is_the_median_of_each_repetitions_own(
    bench: ModuleType
) -> None:
    """A host that slowed down for one repetition slows the cold index and the plain parse
    run right after it alike: each repetition's ratio stands, where the ratio of the two
    medians (here 2.4 / 2.0) mixes repetitions."""
    results = bench.Results()
    for cold, plain in ((2.2, 2.0), (3.3, 3.0), (2.4, 1.9)):
        results.add("cold", bench.Run(cold, 0, None, 0, cold))
        results.add("plain", bench.Run(plain, 0, None, 0, plain))
    assert bench.paired_ratio(results, "cold", "plain") == pytest.approx(1.1)
    assert bench.ratio(results, "cold", "plain") == pytest.approx(1.2)
    assert bench.paired_ratio(results, "cold", "griffe") is None
