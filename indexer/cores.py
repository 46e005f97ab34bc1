"""How many cores this process may keep busy: the default of every ``--workers``.

``os.cpu_count()`` counts the machine's cores, where a CI job often gets a few of them: a
container pinned to some cores (its cpuset, or ``taskset``) or held to a CPU quota (docker's
``--cpus``, a Kubernetes CPU limit). Workers beyond those only take turns, each with its
own memory.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
OWN_CGROUPS = Path("/proc/self/cgroup")


def available_cores(cgroup_root: Path = CGROUP_ROOT, own_cgroups: Path = OWN_CGROUPS) -> int:
    """The cores this process may run on (its CPU affinity), fewer when a cgroup's CPU
    quota allows less (rounded up: a quota of 1.5 CPUs keeps 2 processes busy)."""
    cores = _allowed_cores()
    quota = cpu_quota(cgroup_root, own_cgroups)
    return cores if quota is None else max(1, min(cores, quota))


def _allowed_cores() -> int:
    allowed = getattr(os, "sched_getaffinity", None)  # not on macOS or Windows
    if allowed is None:
        return os.cpu_count() or 1
    return len(allowed(0)) or 1


def cpu_quota(cgroup_root: Path = CGROUP_ROOT, own_cgroups: Path = OWN_CGROUPS) -> int | None:
    """The CPUs the tightest CPU quota of this process's cgroup and those above it allows,
    rounded up, in cgroup v2 (``cpu.max``) or v1 (``cpu.cfs_quota_us``); None when none
    is set or none can be read (not Linux)."""
    try:
        memberships = own_cgroups.read_text().splitlines()
    except OSError:
        return None
    quotas = [quota for line in memberships for quota in _quotas(cgroup_root, line)]
    return min(quotas, default=None)


def _quotas(cgroup_root: Path, membership: str) -> list[int]:
    """The quotas set on the cgroup that a line of /proc/self/cgroup names and on those
    above it: ``0::/path`` (v2, mounted at the root), ``4:cpu,cpuacct:/path`` (v1)."""
    fields = membership.split(":", 2)
    if len(fields) != 3 or not fields[2]:
        return []
    _, controllers, path = fields
    if controllers == "":
        mounts, read = [cgroup_root], _v2_quota
    elif "cpu" in controllers.split(","):
        mounts, read = [cgroup_root / controllers, cgroup_root / "cpu"], _v1_quota
    else:
        return []
    quotas = []
    for mount in mounts:
        for folder in _up_to(mount, mount / path.lstrip("/")):
            quota = read(folder)
            if quota is not None:
                quotas.append(quota)
    return quotas


def _up_to(mount: Path, folder: Path) -> list[Path]:
    """``folder`` and every folder above it, up to ``mount``. Without a cgroup namespace a
    container sees its host's path for its cgroup, and its own cgroup at the mount."""
    folders = [folder]
    while folder != mount and mount in folder.parents:
        folder = folder.parent
        folders.append(folder)
    return folders


def _v2_quota(folder: Path) -> int | None:
    """``cpu.max``: ``150000 100000`` (1.5 CPUs), or ``max 100000`` (none)."""
    try:
        limit, period = (folder / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        return None
    return _cpus(limit, period)


def _v1_quota(folder: Path) -> int | None:
    """``cpu.cfs_quota_us`` (``-1``: none) over ``cpu.cfs_period_us``."""
    try:
        limit = (folder / "cpu.cfs_quota_us").read_text().strip()
        period = (folder / "cpu.cfs_period_us").read_text().strip()
    except OSError:
        return None
    return _cpus(limit, period)


def _cpus(limit: str, period: str) -> int | None:
    try:
        quota, length = int(limit), int(period)
    except ValueError:  # "max"
        return None
    if quota <= 0 or length <= 0:
        return None
    return math.ceil(quota / length)
