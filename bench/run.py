#!/usr/bin/env python3
"""Whole-process benchmark of ``annotate index`` (and check/diff) beside plain baselines.

One run measures, on the same vllm v0.20.0 wheel, N times each (interleaved), every
measurement as its own subprocess: cold index, no-op re-index, incremental index of
v0.25.0, a plain tree-sitter parse, Universal Ctags, griffe's static load, and, when the
commands exist, ``annotate check`` and ``annotate diff``; then link, check and links on a
big generated article collection (bench/collection.py). It prints a Markdown report of
medians (min/max), ratios and PASS/FAIL per target, and can write the raw numbers as JSON.

    python bench/run.py --repeat 3 --json bench/results.json
    python bench/run.py --only collection --repeat 1    # the big collection alone

See bench/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

REPO = "vllm"
OLD = "v0.20.0"
NEW = "v0.25.0"
DEFAULT_WHEELS = Path("/tmp/realdata/wheels")
MB = 1024 * 1024

NOOP_LIMIT_S = 0.5
RSS_LIMIT_MB = 500.0
CHECK_LIMIT_S = 0.5
DIFF_LIMIT_S = 5.0
REFERENCES_LIMIT = 1.35
XREF_LIMIT_S = 0.3
XREF_NAME = "ReplicatedLinear"
COLLECTION_LINK_LIMIT_S = 12.0
COLLECTION_CHECK_LIMIT_S = 5.0
COLLECTION_LINKS_LIMIT_S = 2.5
LMCACHE = "lmcache@v0.5.1"
GENERATOR = Path(__file__).with_name("collection.py")
EDITED = Path("articles/section0/post-0000.yml")  # the file "check after one edit" edits

CONFIG = f"""\
db = "index.db"
cache_dir = "cache"

[repos.{REPO}]
sources = ["pypi"]
versions = ["{OLD}", "{NEW}"]
"""

# The baseline: read the wheel's .py members (same selection as indexer.sources.WheelSnapshot)
# into memory, then parse each one and drop the tree. Prints its inner phase timings as JSON.
PLAIN_PARSE = """\
import json, sys, time, zipfile
started = time.perf_counter()
import tree_sitter, tree_sitter_python
parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_python.language()))
imported = time.perf_counter()
with zipfile.ZipFile(sys.argv[1]) as archive:
    sources = [
        archive.read(member) for member in archive.infolist()
        if not member.is_dir() and member.filename.endswith(".py")
        and not member.filename.split("/", 1)[0].endswith((".dist-info", ".data"))
    ]
read = time.perf_counter()
for source in sources:
    tree = parser.parse(source)
    del tree
parsed = time.perf_counter()
print(json.dumps({
    "files": len(sources), "bytes": sum(map(len, sources)),
    "import_s": imported - started, "read_s": read - imported, "parse_loop_s": parsed - read,
}))
"""

# The pipeline's floor: the cold index exactly as `annotate index` runs it, except that each
# Python blob is only parsed (tree dropped, nothing extracted). What it costs beyond the plain
# parse is the pipeline (wheel, hashes, pool, zlib, SQLite); what the cold index costs beyond
# it is symbol and reference extraction. The patch is inherited by the forked workers.
FLOOR_INDEX = """\
import sys
import tree_sitter, tree_sitter_python
from indexer import pipeline
from indexer.models import ParsedBlob
parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_python.language()))
def parse_only(blob_id, source, references=True):
    return ParsedBlob(blob_id, (), has_errors=parser.parse(source).root_node.has_error)
pipeline.parse_blob = parse_only
import annotate_cli
sys.argv[0] = "annotate"
annotate_cli.main()
"""

# The big collection's project: both vllm versions and LMCache, the wheels' cache shared.
COLLECTION_CONFIG = f"""\
db = "index.db"
cache_dir = "../cache"
annotations = ["articles/**/*.yml"]
articles = ["articles/**/*.md"]

[repos.{REPO}]
sources = ["pypi"]
versions = ["{OLD}", "{NEW}"]
target = "{NEW}"

[repos.lmcache]
sources = ["pypi"]
versions = ["v0.5.1"]
"""

GRIFFE_LOAD = """\
import sys, griffe
griffe.load("vllm", search_paths=[sys.argv[1]], allow_inspection=False)
"""


# --- measuring one process ------------------------------------------------------------------

# Peak RSS comes from wait4() in this small launcher, not in the bench process: Linux carries
# the RSS high-water mark of the memory a process had before exec() into its ru_maxrss, and a
# child spawned from the bench (vfork or fork) starts from the bench's own memory. Forked from
# this ~7 MB launcher, the measured command reports its own peak (floor: the launcher's RSS).
LAUNCHER = """\
import os, sys, time
report, command = sys.argv[1], sys.argv[2:]
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(command[0], command)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - started
with open(report, "w") as handle:
    cpu = usage.ru_utime + usage.ru_stime
    handle.write(f"{seconds!r} {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)} {cpu!r}")
"""


@dataclass
class Run:
    """One whole-process measurement."""

    seconds: float  # wall clock from fork to reap
    max_rss_kb: int  # ru_maxrss from wait4: the largest single process of the tree
    tree_rss_kb: int | None  # sampled peak of the summed RSS of the process and descendants
    returncode: int
    cpu_seconds: float  # user + system, of the process and every child it waited for
    inner: dict[str, float] = field(default_factory=dict)


class TreeSampler(threading.Thread):
    """Polls /proc for the summed resident memory of a process's descendants."""

    def __init__(self, root: int, interval: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.interval = interval
        self.peak_kb = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.peak_kb = max(self.peak_kb, descendants_rss_kb(self.root))
            self._done.wait(self.interval)

    def finish(self) -> int:
        self._done.set()
        self.join()
        return self.peak_kb


def descendants_rss_kb(root: int) -> int:
    """Sum of VmRSS over the descendants of ``root`` (shared pages counted in each)."""
    page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
    total = 0
    for pid in _descendants(root):
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page_kb
        except (OSError, IndexError, ValueError):
            continue
    return total


def _descendants(root: int) -> set[int]:
    """The process ids below ``root``, from each process's ``task/*/children``: the tree's
    files alone. Scanning every process's ``stat`` instead took 1.4 ms a poll here, some
    0.03 s of CPU a cold index, whose two cores it shares (kept where ``children`` is
    not compiled into the kernel)."""
    if not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists():
        return _descendants_by_scan(root)
    tree: set[int] = set()
    frontier = [root]
    while frontier:
        for child in _children(frontier.pop()):
            if child not in tree:
                tree.add(child)
                frontier.append(child)
    return tree


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:  # gone meanwhile
        return found
    for task in tasks:
        try:
            found += [int(child) for child in
                      Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            continue
    return found


def _descendants_by_scan(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        parents[int(name)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree: set[int] = set()
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        tree.update(children)
        frontier.extend(children)
    return tree


def measure(
    command: Sequence[str],
    *,
    cwd: Path,
    log: Path,
    env: dict[str, str] | None = None,
    ok_codes: tuple[int, ...] = (0,),
    stdout_to_log: bool = True,
) -> Run:
    """Run ``command`` once through the launcher; stdout/stderr go to ``log``.out/.err."""
    log.parent.mkdir(parents=True, exist_ok=True)
    report = log.with_suffix(".rusage")
    report.unlink(missing_ok=True)
    launcher = [sys.executable, "-I", "-S", "-c", LAUNCHER, str(report), *command]
    with open(log.with_suffix(".out"), "wb") as out, open(log.with_suffix(".err"), "wb") as err:
        process = subprocess.Popen(
            launcher, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=out if stdout_to_log else subprocess.DEVNULL, stderr=err,
        )
        sampler = TreeSampler(process.pid) if Path("/proc/self/stat").exists() else None
        if sampler is not None:
            sampler.start()
        process.wait()
        tree_kb = sampler.finish() if sampler is not None else None
    if process.returncode != 0 or not report.exists():
        raise RuntimeError(f"the launcher failed for {' '.join(command)} (log {log}.err)")
    seconds, rss, code, cpu = report.read_text().split()
    if int(code) not in ok_codes:
        tail = log.with_suffix(".err").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{' '.join(command)} exited {code} (log {log}.*):\n{tail}")
    rss_kb = int(rss) // 1024 if sys.platform == "darwin" else int(rss)
    return Run(float(seconds), rss_kb, tree_kb or None, int(code), float(cpu))


# --- the bench -----------------------------------------------------------------------------


@dataclass
class Setup:
    workdir: Path
    annotate: list[str]
    wheel: Path
    sources: Path
    files: int
    source_bytes: int
    index_args: list[str]
    has_check: bool
    has_diff: bool
    has_ctags: bool
    has_griffe: bool
    has_collection: bool = True
    popular: str = ""  # the symbol the big collection cites most, for `annotate links`


@dataclass
class Results:
    runs: dict[str, list[Run]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    load: list[float] = field(default_factory=list)  # 1-minute load average before each rep

    def add(self, name: str, run: Run) -> None:
        self.runs.setdefault(name, []).append(run)


def note(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def annotate_command() -> list[str]:
    beside = Path(sys.executable).with_name("annotate")
    found = str(beside) if beside.exists() else shutil.which("annotate")
    if not found:
        sys.exit("annotate is not installed (pip install -e .)")
    return [found]


def has_subcommand(annotate: list[str], name: str, cwd: Path) -> bool:
    done = subprocess.run([*annotate, name, "--help"], cwd=cwd, capture_output=True, check=False)
    return done.returncode == 0


def cached_wheel(workdir: Path, version: str) -> Path | None:
    folder = workdir / "cache" / "wheels" / REPO / version.removeprefix("v")
    wheels = sorted(folder.glob("*.whl")) if folder.is_dir() else []
    return wheels[0] if wheels else None


def warm_cache(workdir: Path, annotate: list[str], wheels: Path) -> Path:
    """Let pip 'download' both wheels from a local folder into the cache, untimed."""
    if cached_wheel(workdir, OLD) is None or cached_wheel(workdir, NEW) is None:
        if not wheels.is_dir():
            sys.exit(f"--wheels {wheels} is not a folder (it must hold the {REPO} wheels)")
        note(f"warming the wheel cache from {wheels} (untimed, indexes into scratch.db)")
        env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}
        measure([*annotate, "--db", "scratch.db", "index", f"{REPO}@{OLD}", f"{REPO}@{NEW}"],
                cwd=workdir, env=env, log=workdir / "logs" / "warm")
        remove_db(workdir / "scratch.db")
    wheel = cached_wheel(workdir, OLD)
    if wheel is None:
        sys.exit(f"no {REPO} {OLD} wheel in the cache after warming (see {workdir}/logs)")
    return wheel


def is_source_member(member: zipfile.ZipInfo) -> bool:
    top = member.filename.split("/", 1)[0]
    return (not member.is_dir() and member.filename.endswith(".py")
            and not top.endswith((".dist-info", ".data")))


def unpack_sources(wheel: Path, target: Path) -> tuple[int, int]:
    """Extract the wheel's .py members (what the indexer parses); return (files, bytes)."""
    with zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.infolist() if is_source_member(m)]
        if not target.is_dir():
            tmp = target.with_name(target.name + ".part")
            shutil.rmtree(tmp, ignore_errors=True)
            archive.extractall(tmp, members)
            tmp.rename(target)
    return len(members), sum(m.file_size for m in members)


BYTE_COMPILE = """
import compileall, importlib.util, pathlib
for name in ("annotate_cli", "annotations", "db", "indexer"):
    origin = pathlib.Path(importlib.util.find_spec(name).origin)
    if origin.name == "__init__.py":
        compileall.compile_dir(origin.parent, quiet=1)
    else:
        compileall.compile_file(origin, quiet=1)
"""


def byte_compile(workdir: Path) -> None:
    """Compile annotate's modules to bytecode once, as ``pip install`` does. An editable
    install under ``PYTHONDONTWRITEBYTECODE=1`` (as on the machine this was written on)
    would otherwise compile them again in every measured process, about 40 ms each."""
    subprocess.run([sys.executable, "-c", BYTE_COMPILE], cwd=workdir, check=True)


def prepare(args: argparse.Namespace) -> Setup:
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "annotate.toml").write_text(CONFIG)
    byte_compile(workdir)
    annotate = annotate_command()
    wheel = warm_cache(workdir, annotate, args.wheels)
    sources = workdir / "src" / OLD
    files, size = unpack_sources(wheel, sources)
    ctags = shutil.which("ctags")
    return Setup(
        workdir=workdir, annotate=annotate, wheel=wheel, sources=sources, files=files,
        source_bytes=size,
        index_args=["--workers", str(args.workers)] if args.workers else [],
        has_check=has_subcommand(annotate, "check", workdir),
        has_diff=has_subcommand(annotate, "diff", workdir),
        has_ctags=ctags is not None,
        has_griffe=importlib.util.find_spec("griffe") is not None,
    )


def remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def copy_db(source: Path, target: Path) -> None:
    remove_db(target)
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{source}{suffix}").exists():
            shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")


def db_size(path: Path) -> int:
    return sum(Path(f"{path}{s}").stat().st_size
               for s in ("", "-wal") if Path(f"{path}{s}").exists())


def last_line(log: Path) -> str:
    lines = log.with_suffix(".out").read_text(errors="replace").strip().splitlines()
    return lines[-1] if lines else ""


def bench_index(setup: Setup, results: Results, rep: int) -> None:
    """(1) cold, (2) no-op, (3) incremental; sizes of the databases."""
    wd, logs, annotate = setup.workdir, setup.workdir / "logs", setup.annotate
    cold_db, incremental_db = wd / "index.db", wd / "incremental.db"
    remove_db(cold_db)
    log = logs / f"cold-{rep}"
    results.add("cold", measure([*annotate, "index", *setup.index_args, f"{REPO}@{OLD}"],
                                cwd=wd, log=log))
    results.notes["cold"] = last_line(log)
    results.sizes["db_after_cold"] = db_size(cold_db)
    bench_plain_parse(setup, results, rep)  # back to back with the cold index it is the bar of
    bare_db = wd / "no-references.db"
    remove_db(bare_db)
    log = logs / f"cold-no-references-{rep}"
    results.add("cold_bare", measure(
        [*annotate, "--db", str(bare_db), "index", *setup.index_args, "--no-references",
         f"{REPO}@{OLD}"], cwd=wd, log=log))
    results.notes["cold_bare"] = last_line(log)
    remove_db(bare_db)
    log = logs / f"cold-floor-{rep}"
    results.add("cold_floor", measure(
        [sys.executable, "-c", FLOOR_INDEX, "--db", str(bare_db), "index", *setup.index_args,
         f"{REPO}@{OLD}"], cwd=wd, log=log))
    results.notes["cold_floor"] = last_line(log)
    remove_db(bare_db)
    log = logs / f"xref-{rep}"
    results.add("xref", measure(
        [*annotate, "xref", XREF_NAME, f"{REPO}@{OLD}", "--format", "json"], cwd=wd, log=log))
    copy_db(cold_db, incremental_db)
    log = logs / f"noop-{rep}"
    results.add("noop", measure([*annotate, "index", f"{REPO}@{OLD}"], cwd=wd, log=log))
    results.notes["noop"] = last_line(log)
    log = logs / f"incremental-{rep}"
    command = [*annotate, "--db", str(incremental_db), "index", *setup.index_args,
               f"{REPO}@{NEW}"]
    results.add("incremental", measure(command, cwd=wd, log=log))
    results.notes["incremental"] = last_line(log)
    results.sizes["db_after_incremental"] = db_size(incremental_db)


def bench_plain_parse(setup: Setup, results: Results, rep: int) -> None:
    """(5a, 5b) plain tree-sitter parse of the same files."""
    log = setup.workdir / "logs" / f"plain-{rep}"
    run = measure([sys.executable, "-c", PLAIN_PARSE, str(setup.wheel)], cwd=setup.workdir,
                  log=log)
    run.inner = json.loads(last_line(log))
    results.add("plain", run)
    results.notes["plain"] = f"{run.inner['files']} files, {run.inner['bytes'] / MB:.1f} MB"


def bench_baselines(setup: Setup, results: Results, rep: int) -> None:
    """(5c) ctags, (5d) griffe."""
    wd, logs = setup.workdir, setup.workdir / "logs"
    if setup.has_ctags:
        command = ["ctags", "-R", "--languages=Python", "-f", "/dev/null", str(setup.sources)]
        results.add("ctags", measure(command, cwd=wd, log=logs / f"ctags-{rep}"))
    if setup.has_griffe:
        command = [sys.executable, "-c", GRIFFE_LOAD, str(setup.sources)]
        results.add("griffe", measure(command, cwd=wd, log=logs / f"griffe-{rep}"))


def write_claims(setup: Setup, count: int) -> int:
    """articles/bench.yml: ``count`` claims citing v0.20.0 symbols chosen evenly, pinned."""
    done = subprocess.run(
        [*setup.annotate, "--db", "warm.db", "symbols", f"{REPO}@{OLD}", "--format", "jsonl"],
        cwd=setup.workdir, capture_output=True, text=True, check=True,
    )
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    seen: dict[tuple[str, str], int] = {}
    for row in rows:
        key = (row["path"], row["qualname"])
        seen[key] = seen.get(key, 0) + 1
    candidates = sorted(
        (row for row in rows
         if seen[(row["path"], row["qualname"])] == 1 and "<locals>" not in row["qualname"]
         and row["kind"] in ("class", "function", "method")),
        key=lambda row: (row["path"], row["qualname"]),
    )
    chosen = [candidates[i * len(candidates) // count] for i in range(min(count, len(candidates)))]
    claims = []
    for number, row in enumerate(chosen):
        ref: str | dict[str, str] = f"{row['path']}::{row['qualname']}"
        first_line = (row["signature"] or "").strip().splitlines()[:1]
        if number % 2 == 0 and first_line and first_line[0].strip():
            ref = {"ref": ref, "quote": first_line[0].strip()}
        claims.append({"id": f"c{number:03d}", "text": f"bench claim about {row['qualname']}",
                       "refs": [ref]})
    article = {"article": "bench/bench.md", "title": "bench", "at": f"{REPO}@{OLD}",
               "claims": claims}
    target = setup.workdir / "articles" / "bench.yml"
    target.parent.mkdir(exist_ok=True)
    target.write_text(yaml.safe_dump(article, allow_unicode=True, sort_keys=False, width=1000))
    return len(claims)


def prepare_warm_db(setup: Setup, results: Results, claims: int) -> None:
    """A database with both versions, claims linked once (untimed)."""
    copy_db(setup.workdir / "incremental.db", setup.workdir / "warm.db")
    if not setup.has_check:
        return
    log = setup.workdir / "logs" / "link"
    try:
        written = write_claims(setup, claims)
        measure([*setup.annotate, "--db", "warm.db", "link"], cwd=setup.workdir, log=log)
    except (RuntimeError, subprocess.CalledProcessError) as error:
        skip_later(setup, results, "check", f"setup failed: {error}")
        return
    results.notes["check_setup"] = f"{written} claims; link: {last_line(log)}"


def skip_later(setup: Setup, results: Results, name: str, reason: str) -> None:
    """The later targets are work in progress: a failure skips them instead of the bench."""
    note(f"skipping {name}: {reason}")
    results.notes[name] = f"skipped: {reason.splitlines()[0][:120]}"
    results.runs.pop(name, None)
    setattr(setup, f"has_{name}", False)


def output_problem(log: Path, json_stdout: bool) -> str | None:
    """Why a run that exited 0 or 1 did not do its job (exit 1 is also Python's crash code)."""
    stderr = log.with_suffix(".err").read_text(errors="replace")
    if "Traceback (most recent call last)" in stderr:
        return f"crashed: {stderr.strip().splitlines()[-1]}"
    if json_stdout:
        try:
            json.loads(log.with_suffix(".out").read_bytes())
        except ValueError:
            return "its standard output is not JSON"
    return None


def bench_later(setup: Setup, results: Results, rep: int) -> None:
    """(7b) check of the bench claims against v0.25.0, its comparisons not cached, (7)
    the same again, (8) diff v0.20.0..v0.25.0, with its default workers, (8c) the same
    again, its matches read from the index's diff cache, and (8b) in one process. Rows 8
    and 8b match anew: the cache is emptied before them."""
    wd, logs, annotate = setup.workdir, setup.workdir / "logs", setup.annotate
    check = [*annotate, "--db", "warm.db", "check", "--format", "json", "--exit-zero"]
    diff = [*annotate, "--db", "warm.db", "diff", f"{REPO}@{OLD}", f"{REPO}@{NEW}",
            "--format", "json"]
    commands = {
        "check_first": check,
        "check": check,
        "diff": diff,
        "diff_cached": diff,
        "diff_serial": [*diff, "--workers", "1"],
    }
    for name, command in commands.items():
        if not (setup.has_check if name.startswith("check") else setup.has_diff):
            continue
        if name == "check_first":
            forget_check_matches(wd / "warm.db")
        if name in ("diff", "diff_serial"):
            forget_diff_matches(wd / "warm.db")
        log = logs / f"{name}-{rep}"
        keep_stdout = name.startswith("check")  # its JSON is validated; diff's is not kept
        try:
            run = measure(command, cwd=wd, log=log, ok_codes=(0, 1), stdout_to_log=keep_stdout)
        except RuntimeError as error:
            skip_later(setup, results, name, str(error))
            continue
        problem = output_problem(log, json_stdout=keep_stdout)
        if problem:
            skip_later(setup, results, name, f"{problem} (log {log}.err)")
        else:
            results.add(name, run)



def forget_check_matches(db: Path) -> None:
    """Empty the comparisons that check caches (untimed), so that the next check compares
    every claim anew, as the first check after ``annotate link`` does."""
    with sqlite3.connect(db) as connection:
        connection.execute("DELETE FROM match_cache")
    connection.close()


def forget_diff_matches(db: Path) -> None:
    """Empty the index's diff cache (untimed), so that the next diff matches anew; an
    annotate older than the cache has no such table."""
    with sqlite3.connect(db) as connection:
        try:
            connection.execute("DELETE FROM diff_cache")
        except sqlite3.OperationalError as error:
            if "no such table" not in str(error):
                raise
    connection.close()

def prepare_collection(setup: Setup, results: Results, wheels: Path) -> None:
    """collection/template.db (untimed): both vllm versions (incremental.db's, or indexed
    now) and LMCache v0.5.1, the generated collection linked once and checked once, so
    that its comparisons with the target are cached."""
    folder = setup.workdir / "collection"
    shutil.rmtree(folder / "articles", ignore_errors=True)
    folder.mkdir(exist_ok=True)
    (folder / "annotate.toml").write_text(COLLECTION_CONFIG)
    template, logs = folder / "template.db", setup.workdir / "logs"
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels.resolve())}
    annotate = [*setup.annotate, "--db", "template.db"]
    try:
        if (setup.workdir / "incremental.db").exists():
            copy_db(setup.workdir / "incremental.db", template)
            pins = [LMCACHE]
        else:
            remove_db(template)
            pins = [f"{REPO}@{OLD}", f"{REPO}@{NEW}", LMCACHE]
        measure([*annotate, "index", *setup.index_args, *pins], cwd=folder, env=env,
                log=logs / "collection-index")
        done = subprocess.run([sys.executable, str(GENERATOR), str(template), str(folder)],
                              capture_output=True, text=True, check=True)
        made = json.loads(done.stdout)
        measure([*annotate, "link"], cwd=folder, log=logs / "collection-setup-link",
                ok_codes=(0, 2))
        measure([*annotate, "check", "--exit-zero"], cwd=folder,
                log=logs / "collection-setup-check")
    except (RuntimeError, subprocess.CalledProcessError, ValueError) as error:
        skip_collection(setup, results, f"setup failed: {error}")
        return
    setup.popular = made["popular"]
    results.notes["collection_setup"] = (
        f"{made['files']} files, {made['claims']} claims, {made['refs']} refs; "
        f"links {setup.popular}; link: {last_line(logs / 'collection-setup-link')}")


def bench_collection(setup: Setup, results: Results, rep: int) -> None:
    """(10) on a copy of the template: a link of every file, a no-op check, a check after
    one file was edited, and links of the symbol the collection cites most."""
    if not setup.has_collection:
        return
    folder, logs = setup.workdir / "collection", setup.workdir / "logs"
    copy_db(folder / "template.db", folder / "case.db")
    with sqlite3.connect(folder / "case.db") as conn:  # nothing to take from the last link
        conn.execute("DELETE FROM link_files")
    conn.close()
    annotate = [*setup.annotate, "--db", "case.db"]
    edited = folder / EDITED
    original = edited.read_bytes()
    steps = [
        ("collection_link", [*annotate, "link"], (0, 2), None),
        ("collection_check", [*annotate, "check", "--exit-zero"], (0,), None),
        ("collection_check_edited", [*annotate, "check", "--exit-zero"], (0,), b"# edited\n"),
        ("collection_links", [*annotate, "links", setup.popular], (0,), None),
    ]
    try:
        for name, command, ok_codes, edit in steps:
            if edit is not None:
                edited.write_bytes(original + edit)
            log = logs / f"{name}-{rep}"
            run = measure(command, cwd=folder, log=log, ok_codes=ok_codes)
            problem = output_problem(log, json_stdout=False)
            if problem:
                raise RuntimeError(f"{problem} (log {log}.err)")
            results.add(name, run)
    except RuntimeError as error:
        skip_collection(setup, results, str(error))
    finally:
        edited.write_bytes(original)


def skip_collection(setup: Setup, results: Results, reason: str) -> None:
    skip_later(setup, results, "collection", reason)
    for name in COLLECTION_RUNS:
        results.runs.pop(name, None)
        results.notes[name] = results.notes["collection"]


# --- report --------------------------------------------------------------------------------

LABELS = {
    "cold": f"1. cold `annotate index {REPO}@{OLD}` (fresh db)",
    "cold_bare": f"1b. cold `annotate index {REPO}@{OLD} --no-references`",
    "cold_floor": "1c. the cold index with extraction stubbed out (parse only: the floor)",
    "noop": f"2. no-op re-index of {OLD} (same db)",
    "incremental": f"3. incremental `index {REPO}@{NEW}` after {OLD}",
    "plain": "5a. plain tree-sitter parse, whole process",
    "plain_loop": "5b. plain tree-sitter parse, parse loop only",
    "ctags": "5c. `ctags -R --languages=Python`",
    "griffe": "5d. griffe static load (allow_inspection=False)",
    "check": f"7. `annotate check` against {NEW} (warm db)",
    "check_first": "7b. the same check, its comparisons not cached (the first after link)",
    "diff": f"8. `annotate diff {OLD} {NEW} --format json`",
    "diff_serial": "8b. the same diff with `--workers 1` (no forked matching)",
    "diff_cached": "8c. the same diff again, its matches read from the diff cache",
    "xref": f"9. `annotate xref {XREF_NAME} {REPO}@{OLD} --format json` (warm db)",
    "collection_link": "10a. big collection: `annotate link`, every file read and resolved",
    "collection_check": "10b. big collection: no-op `annotate check`",
    "collection_check_edited": "10c. big collection: `annotate check` after one file's edit",
    "collection_links": "10d. big collection: `annotate links SYMBOL`",
}
COLLECTION_RUNS = ("collection_link", "collection_check", "collection_check_edited",
                   "collection_links")


def seconds_of(results: Results, name: str) -> list[float]:
    if name == "plain_loop":
        return [run.inner["parse_loop_s"] for run in results.runs.get("plain", [])]
    return [run.seconds for run in results.runs.get(name, [])]


def median(results: Results, name: str) -> float | None:
    values = seconds_of(results, name)
    return statistics.median(values) if values else None


def ratio(results: Results, top: str, bottom: str) -> float | None:
    a, b = median(results, top), median(results, bottom)
    return a / b if a is not None and b else None


def median_cpu(results: Results, name: str) -> float | None:
    values = [run.cpu_seconds for run in results.runs.get(name, [])]
    return statistics.median(values) if values else None


def paired_ratio(results: Results, top: str, bottom: str) -> float | None:
    """The median over the repetitions of each one's ``top`` / ``bottom``: rows measured
    back to back, so that a shared machine's slow minutes weigh on both alike."""
    pairs = list(zip(seconds_of(results, top), seconds_of(results, bottom), strict=False))
    if not pairs or not all(b for _, b in pairs):
        return None
    return statistics.median(a / b for a, b in pairs)


def cpu_ratio(results: Results, top: str, bottom: str) -> float | None:
    a, b = median_cpu(results, top), median_cpu(results, bottom)
    return a / b if a is not None and b else None


def fmt(value: float | None, digits: int = 2, suffix: str = "") -> str:
    return "n/a" if value is None else f"{value:.{digits}f}{suffix}"


def timing_table(results: Results) -> list[str]:
    lines = [
        "| measurement | median s | min s | max s | median CPU s "
        "| peak RSS MB (largest process) | tree RSS MB (sampled sum) | output |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, label in LABELS.items():
        values = seconds_of(results, name)
        if not values:
            lines.append(f"| {label} | skipped | | | | | | {results.notes.get(name, '')} |")
            continue
        runs = results.runs.get(name, []) if name != "plain_loop" else []
        cpu = median_cpu(results, name) if runs else None
        rss = statistics.median(r.max_rss_kb for r in runs) / 1024 if runs else None
        trees = [r.tree_rss_kb for r in runs if r.tree_rss_kb]
        tree = statistics.median(trees) / 1024 if trees else None
        note_text = results.notes.get(name, "").replace("|", "/")
        lines.append(
            f"| {label} | {fmt(statistics.median(values), 3)} | {fmt(min(values), 3)} "
            f"| {fmt(max(values), 3)} | {fmt(cpu, 2)} | {fmt(rss, 0)} | {fmt(tree, 0)} "
            f"| {note_text} |"
        )
    return lines


def ratio_rows(results: Results) -> dict[str, float | None]:
    return {
        "cold / plain parse (whole process)": ratio(results, "cold", "plain"),
        "cold / plain parse, back to back (median of the repetitions' ratios)":
            paired_ratio(results, "cold", "plain"),
        "cold / plain parse (parse loop only)": ratio(results, "cold", "plain_loop"),
        "cold / ctags": ratio(results, "cold", "ctags"),
        "cold / griffe": ratio(results, "cold", "griffe"),
        "incremental / cold": ratio(results, "incremental", "cold"),
        "cold with references / without": ratio(results, "cold", "cold_bare"),
        "floor (1c) / plain parse (whole process)": ratio(results, "cold_floor", "plain"),
        "cold / floor (1c): what extraction adds": ratio(results, "cold", "cold_floor"),
        "cold CPU / plain parse CPU": cpu_ratio(results, "cold", "plain"),
        "floor (1c) CPU / plain parse CPU": cpu_ratio(results, "cold_floor", "plain"),
        "no-op / cold": ratio(results, "noop", "cold"),
        "diff / diff with one worker": ratio(results, "diff", "diff_serial"),
        "diff again (8c) / diff": ratio(results, "diff_cached", "diff"),
        "check (7) / first check (7b)": ratio(results, "check", "check_first"),
    }


def target_rows(results: Results) -> list[tuple[str, str, str, str]]:
    """(target, measured, limit, verdict) rows."""

    def verdict(value: float | None, limit: float | None) -> str:
        if value is None or limit is None:
            return "SKIP"
        return "PASS" if value <= limit else "FAIL"

    cold, plain = median(results, "cold"), median(results, "plain")
    rss_runs = results.runs.get("cold", [])
    rss = max(r.max_rss_kb for r in rss_runs) / 1024 if rss_runs else None
    checks: list[tuple[str, float | None, float | None, Callable[[float | None], str]]] = [
        ("cold index <= plain parse, whole process (medians)", cold, plain,
         lambda v: fmt(v, 2, " s")),
        ("no-op re-index < 0.5 s (median)", median(results, "noop"), NOOP_LIMIT_S,
         lambda v: fmt(v, 3, " s")),
        ("peak RSS of cold index < 500 MB (max over runs)", rss, RSS_LIMIT_MB,
         lambda v: fmt(v, 0, " MB")),
        ("check of ~200 claims < 0.5 s (median)", median(results, "check"), CHECK_LIMIT_S,
         lambda v: fmt(v, 3, " s")),
        ("diff v0.20.0..v0.25.0 < 5 s (median)", median(results, "diff"), DIFF_LIMIT_S,
         lambda v: fmt(v, 2, " s")),
        ("cold index with references <= 1.35 x without (medians)",
         ratio(results, "cold", "cold_bare"), REFERENCES_LIMIT, lambda v: fmt(v, 2, "x")),
        ("xref query < 0.3 s, warm db (median)", median(results, "xref"), XREF_LIMIT_S,
         lambda v: fmt(v, 3, " s")),
        ("big collection: link < 12 s (median)", median(results, "collection_link"),
         COLLECTION_LINK_LIMIT_S, lambda v: fmt(v, 2, " s")),
        ("big collection: no-op check < 5 s (median)", median(results, "collection_check"),
         COLLECTION_CHECK_LIMIT_S, lambda v: fmt(v, 2, " s")),
        ("big collection: links SYMBOL < 2.5 s (median)", median(results, "collection_links"),
         COLLECTION_LINKS_LIMIT_S, lambda v: fmt(v, 2, " s")),
        ("big collection: peak RSS < 500 MB (max over its runs)", collection_rss(results),
         RSS_LIMIT_MB, lambda v: fmt(v, 0, " MB")),
    ]
    return [(label, show(value), show(limit), verdict(value, limit))
            for label, value, limit, show in checks]


def collection_rss(results: Results) -> float | None:
    """The largest peak RSS of the big collection's runs, in MB."""
    peaks = [run.max_rss_kb for name in COLLECTION_RUNS for run in results.runs.get(name, [])]
    return max(peaks) / 1024 if peaks else None


def report(setup: Setup, results: Results, repeat: int) -> str:
    lines = [
        f"## annotate bench: {REPO} {OLD} wheel, {setup.files} .py files, "
        f"{setup.source_bytes / MB:.1f} MB of source; {repeat} repetitions, "
        f"{os.cpu_count()} cores; index workers: "
        f"{setup.index_args[1] if setup.index_args else 'default'}; "
        f"1-min load average before each repetition: "
        f"{', '.join(f'{value:.1f}' for value in results.load)}",
        "",
        *timing_table(results),
        "",
        "| size | MB |",
        "|---|---:|",
        f"| wheel ({setup.wheel.name}) | {setup.wheel.stat().st_size / MB:.1f} |",
    ]
    for key, value in results.sizes.items():
        lines.append(f"| {key.replace('_', ' ')} | {value / MB:.1f} |")
    lines += ["", "| ratio (of medians) | value |", "|---|---:|"]
    lines += [f"| {label} | {fmt(value, 2, 'x')} |" for label, value in ratio_rows(results).items()]
    lines += ["", "| target | measured | limit | verdict |", "|---|---:|---:|---|"]
    lines += [f"| {' | '.join(row)} |" for row in target_rows(results)]
    if "check_setup" in results.notes:
        lines += ["", f"check setup: {results.notes['check_setup']}"]
    if "collection_setup" in results.notes:
        lines += ["", f"big collection: {results.notes['collection_setup']}"]
    return "\n".join(lines)


def raw_json(setup: Setup, results: Results, repeat: int) -> dict:
    return {
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                    "cpus": os.cpu_count()},
        "setup": {"workdir": str(setup.workdir), "wheel": str(setup.wheel),
                  "files": setup.files, "source_bytes": setup.source_bytes,
                  "index_args": setup.index_args, "repeat": repeat},
        "runs": {name: [asdict(run) for run in runs] for name, runs in results.runs.items()},
        "medians_s": {name: median(results, name) for name in LABELS},
        "medians_cpu_s": {name: median_cpu(results, name) for name in LABELS},
        "sizes_bytes": results.sizes,
        "ratios": ratio_rows(results),
        "targets": [dict(zip(("target", "measured", "limit", "verdict"), row, strict=True))
                    for row in target_rows(results)],
        "notes": results.notes,
        "load_average": results.load,
    }


# --- main ----------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the raw numbers here")
    parser.add_argument("--workdir", type=Path, help="work folder (default: a temp dir, removed "
                        "afterwards); reuse one to keep the wheel cache")
    parser.add_argument("--wheels", type=Path, default=DEFAULT_WHEELS,
                        help=f"folder holding the vllm wheels (default {DEFAULT_WHEELS})")
    parser.add_argument("--workers", type=int, help="pass --workers N to annotate index")
    parser.add_argument("--claims", type=int, default=200, help="claims for the check bench")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target FAILs")
    parser.add_argument("--only", choices=["collection"],
                        help="run only this case (collection: the big article collection)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    temporary = args.workdir is None
    if temporary:
        args.workdir = Path(tempfile.mkdtemp(prefix="annotate-bench-"))
    try:
        setup = prepare(args)
        note(f"workdir {setup.workdir}; ctags={setup.has_ctags} griffe={setup.has_griffe} "
             f"check={setup.has_check} diff={setup.has_diff}")
        results = Results()
        for rep in range(args.repeat):
            results.load.append(os.getloadavg()[0])
            note(f"repetition {rep + 1}/{args.repeat} (load average {results.load[-1]:.2f})")
            if args.only is None:
                bench_index(setup, results, rep)
                if rep == 0:
                    prepare_warm_db(setup, results, args.claims)
                bench_baselines(setup, results, rep)
                bench_later(setup, results, rep)
            if rep == 0:
                prepare_collection(setup, results, args.wheels)
            bench_collection(setup, results, rep)
        print(report(setup, results, args.repeat))
        if args.json:
            args.json.write_text(json.dumps(raw_json(setup, results, args.repeat), indent=2))
        failed = any(row[3] == "FAIL" for row in target_rows(results))
        return 1 if failed and args.strict else 0
    finally:
        if temporary:
            shutil.rmtree(args.workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
