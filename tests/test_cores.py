"""The default number of worker processes: the cores this process may use, under the CPU
quota of its cgroup. The quotas are read from a folder laid out as /sys/fs/cgroup is (this
machine's cgroups cannot be changed by a test); the affinity is the kernel's own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from indexer.cores import available_cores, cpu_quota


def _cgroups(tmp_path: Path, files: dict[str, str], memberships: str) -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text + "\n")
    own = tmp_path / "self-cgroup"
    own.write_text(memberships)
    return root, own


V1_CPU = "4:cpu,cpuacct:/\n1:name=systemd:/\n0::/\n"


@pytest.mark.parametrize(("files", "memberships", "quota"), [
    pytest.param({"cpu.max": "50000 100000"}, "0::/\n", 1, id="v2-half-a-cpu"),
    pytest.param({"cpu.max": "150000 100000"}, "0::/\n", 2, id="v2-rounded-up"),
    pytest.param({"cpu.max": "max 100000"}, "0::/\n", None, id="v2-no-quota"),
    pytest.param({"a/b/cpu.max": "max 100000", "a/cpu.max": "100000 100000",
                  "cpu.max": "400000 100000"}, "0::/a/b\n", 1, id="v2-tightest-above"),
    pytest.param({"cpu.max": "200000 100000"}, "0::/docker/0123abc\n", 2,
                 id="v2-host-path-of-a-container-without-cgroup-namespace"),
    pytest.param({"cpu,cpuacct/cpu.cfs_quota_us": "200000",
                  "cpu,cpuacct/cpu.cfs_period_us": "100000"}, V1_CPU, 2, id="v1"),
    pytest.param({"cpu/cpu.cfs_quota_us": "100000", "cpu/cpu.cfs_period_us": "100000"},
                 V1_CPU, 1, id="v1-mounted-as-cpu"),
    pytest.param({"cpu,cpuacct/cpu.cfs_quota_us": "-1",
                  "cpu,cpuacct/cpu.cfs_period_us": "100000"}, V1_CPU, None, id="v1-no-quota"),
    pytest.param({"memory/memory.limit_in_bytes": "1000"}, "5:memory:/\n", None,
                 id="v1-without-the-cpu-controller"),
    pytest.param({"cpu.max": "garbage"}, "0::/\n", None, id="unreadable-quota"),
    pytest.param({}, "not a cgroup line\n", None, id="unreadable-membership"),
])
def test_cpu_quota(
    tmp_path: Path, files: dict[str, str], memberships: str, quota: int | None
) -> None:
    root, own = _cgroups(tmp_path, files, memberships)
    assert cpu_quota(root, own) == quota


def test_no_cgroups_no_quota(tmp_path: Path) -> None:
    """Not Linux: there is no /proc/self/cgroup to read."""
    assert cpu_quota(tmp_path, tmp_path / "missing") is None


def _allowed() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def test_a_quota_below_the_cores_is_the_count(tmp_path: Path) -> None:
    root, own = _cgroups(tmp_path, {"cpu.max": "10000 100000"}, "0::/\n")
    assert available_cores(root, own) == 1
    root, own = _cgroups(tmp_path / "roomy", {"cpu.max": "6400000 100000"}, "0::/\n")
    assert available_cores(root, own) == _allowed()


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
@pytest.mark.parametrize("default", [
    pytest.param("annotate_cli._cores(4)", id="check-and-diff"),
    pytest.param("indexer.pipeline._worker_count(types.SimpleNamespace(workers=None))",
                 id="index"),
])
def test_a_process_pinned_to_one_core_works_alone(default: str) -> None:
    """``taskset -c 0 annotate ...``, or a container given one core of many: one worker."""
    script = ("import os, types, annotate_cli, indexer.pipeline\n"
              "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
              f"print({default})\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    assert done.stdout == "1\n"
