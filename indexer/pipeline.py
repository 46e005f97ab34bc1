"""Index one version: snapshot -> new blobs -> parse in a process pool -> one transaction.

A blob is parsed once, ever: blobs already in the database are skipped, so a version
that shares most files with an indexed one costs only its changed files. Once per
extractor, that is: `reextract_outdated` parses again the blobs that another extractor
(an older annotate, another tree-sitter) indexed.

A wheel's new blobs go to the pool as its members are read (`_ParseAhead`), before the
snapshot is whole: what the index would store does not change, only when it is parsed.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import marshal
import multiprocessing
import operator
import os
import signal
import sqlite3
import stat
import sys
import threading
import time
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from db import queries
from db.database import Database
from db.errors import DatabaseBusy
from db.queries import is_python_path
from indexer.config import ProjectConfig, RepoConfig, refuse_a_pypi_number
from indexer.cores import available_cores
from indexer.errors import SameWheel, SourceError, VersionNotFound
from indexer.extractor import extractor_id
from indexer.models import FileEntry, ParsedBlob, SnapshotInfo
from indexer.sources import MemberRead, Snapshot, open_local, open_snapshot
from indexer.stopping import STOPPING_SIGNALS
from indexer.symbols import parse_blob

if sys.platform == "linux":
    import fcntl

MAX_STORED_BYTES = 1024 * 1024
INLINE_PARSE_LIMIT = 64
BATCH_BYTES = 512 * 1024
CHECK_EVERY = 64
"""How many members of a wheel are read between two looks in the index for the blobs it
has (`_ParseAhead`)."""
TAIL_BATCH_BYTES = 32 * 1024
"""The least a batch holds once the bytes left are few: each worker parsed last batches of
up to `BATCH_BYTES` (~0.1 s of a cold index of vLLM), while the other waited for it."""
PIPE_BYTES = 1024 * 1024
"""What the pipes that take batches to the parser workers and bring their rows back hold
(Linux lets any user ask for up to /proc/sys/fs/pipe-max-size, 1 MiB by default): a batch,
or its rows, whole. Through the default 64 KiB a worker waited for the main process, busy
writing rows to SQLite, at every 64 KiB of a batch it took or of the rows it gave back."""

Batch = list[tuple[str, bool, bytes, bool]]
"""(blob id, whether it is Python, content, whether to compress it) of a few blobs, parsed
by one worker task."""
Futures = collections.deque[Future[bytes]]
"""The tasks sent to the parser pool whose rows are not taken yet, in the order sent: each
gives its rows as `marshal` data (`submit`)."""
BINARY = "binary"
"""Why a blob is not parsed: its first 8 KiB hold a NUL byte."""


class Progress(Protocol):
    def start(self, label: str, total: int) -> None: ...
    def advance(self, count: int) -> None: ...
    def finish(self) -> None: ...


class _NoProgress:
    def start(self, label: str, total: int) -> None:
        pass

    def advance(self, count: int) -> None:
        pass

    def finish(self) -> None:
        pass


@dataclass(frozen=True)
class IndexOutcome:
    repo: str
    version: str
    already: bool
    source: str = ""
    source_id: str | None = None
    files: int = 0
    new_blobs: int = 0
    parsed: int = 0
    symbols: int = 0
    seconds: float = 0.0
    passed_over: tuple[str, ...] = ()  # why the sources tried first did not give it


def index_version(
    database: Database,
    config: ProjectConfig,
    repo_name: str,
    version: str,
    *,
    from_path: Path | None = None,
    progress: Progress | None = None,
    workers: int | None = None,
    references: bool = True,
) -> IndexOutcome:
    """Index ``repo_name@version`` unless it already is; return what was done.

    ``references=False`` skips recording names and imports (for the benchmark, which
    compares indexing with and without them)."""
    run = _Run(progress or _NoProgress(), workers, references, time.perf_counter())
    repo = config.repo(repo_name)
    if queries.version_id(database, repo.name, version) is not None:
        return IndexOutcome(repo.name, version, already=True)
    refuse_a_pypi_number(repo, version)
    with _ParseAhead(database, run) as ahead:
        on_read = ahead.take if _worker_count(run) > 1 else None
        if from_path is not None:
            snapshot = open_local(repo, version, from_path, on_read)
        else:
            snapshot = _opened_or_recorded(database, repo, version, config.cache_dir, on_read)
        with snapshot:
            _refuse_no_python(snapshot.info, repo, from_path)
            if version not in repo.versions:
                _refuse_a_second_name(database, snapshot.info)
            return _index_snapshot(database, repo, snapshot, run, ahead)


def _refuse_no_python(info: SnapshotInfo, repo: RepoConfig, from_path: Path | None) -> None:
    """A version with no .py file has nothing a ref can name, and an indexed version is
    never replaced: stored, it would stay so."""
    if any(is_python_path(entry.path) for entry in info.files):
        return
    if from_path is None:
        source = f"{info.source_kind} {(info.commit_sha or info.wheel_sha256 or '')[:12]}"
        raise SourceError(f"{info.repo}@{info.version} has no .py file to index ({source})",
                          "check the version name: annotate reads a version's Python code")
    if from_path.is_dir():
        raise SourceError(f"{from_path} has no .py file to index (symlinks, .git, __pycache__, "
                          "virtual environments and files git does not track are skipped)",
                          "pass the checkout's top folder")
    raise SourceError(f"{from_path} has no .py file to index",
                      f"pass a wheel that holds {repo.pypi or repo.name}'s .py files")


def _opened_or_recorded(
    database: Database, repo: RepoConfig, version: str, cache_dir: Path,
    on_read: MemberRead | None = None,
) -> Snapshot:
    """`open_snapshot`; a configured version no source has is recorded as such (check
    then says so rather than advise the same ``annotate index`` again); a version not
    configured, a typo most likely, is not."""
    try:
        return open_snapshot(repo, version, cache_dir, on_read)
    except VersionNotFound:
        if version in repo.versions:
            _record_not_found(database, f"{repo.name}@{version}", repo.sources)
        raise


def _record_not_found(database: Database, pin: str, sources: Sequence[str]) -> None:
    """Record that no source had ``pin`` when the index can be written now: the note is
    advice, which neither waits for another writer nor replaces the not-found error."""
    if database.read_only:
        return
    with contextlib.suppress(DatabaseBusy, sqlite3.OperationalError):
        queries.record_not_found(database, pin, sources)


def _refuse_a_second_name(database: Database, info: SnapshotInfo) -> None:
    """Two names of one PyPI wheel would be two versions whose permalinks disagree."""
    if info.source_kind != "pypi" or info.wheel_sha256 is None:
        return
    indexed = queries.version_of_wheel(database, info.repo, info.wheel_sha256)
    if indexed is not None:
        raise SameWheel(f"{info.repo}@{info.version} is the PyPI wheel of "
                        f"{info.repo}@{indexed}, which is indexed",
                        hint=f"write {info.repo}@{indexed}")


@dataclass(frozen=True)
class _Run:
    """How one index run goes: progress display, parser processes, references."""

    progress: Progress
    workers: int | None
    references: bool
    started: float

    def seconds(self) -> float:
        return time.perf_counter() - self.started


def _index_snapshot(
    database: Database, repo: RepoConfig, snapshot: Snapshot, run: _Run, ahead: _ParseAhead
) -> IndexOutcome:
    info = snapshot.info
    files = info.files
    new_entries = _entries_to_store(database, files)
    run.progress.start(f"{info.repo}@{info.version}", len(new_entries))
    version = queries.VersionRow(
        repo=info.repo, version=info.version, source=info.source_kind,
        commit_sha=info.commit_sha, wheel_sha256=info.wheel_sha256,
        file_count=len(files), new_blobs=len(new_entries), seconds=0.0,
    )
    repo_row = {"name": repo.name, "git": repo.git, "pypi": repo.pypi, "github": repo.github}
    rows = _blob_rows(snapshot, new_entries, run, ahead)
    try:
        stored = queries.write_version(
            database, repo_row, version, [(e.path, e.blob_id) for e in files], rows,
            extractor=_extractor(run.references), clock=run.seconds,
        )
    finally:  # a failed write stops the parser pool now, not when the traceback is freed
        rows.close()
    run.progress.finish()
    stored_now = stored or queries.Stored()
    return IndexOutcome(
        repo=info.repo, version=info.version, already=stored is None,
        source=info.source_kind, source_id=info.commit_sha or info.wheel_sha256,
        files=len(files), new_blobs=stored_now.blobs + stored_now.filled_in,
        parsed=stored_now.parsed, symbols=stored_now.symbols, seconds=run.seconds(),
        passed_over=info.passed_over,
    )


def _entries_to_store(database: Database, files: Sequence[FileEntry]) -> list[FileEntry]:
    """One entry per blob to store: the new ones, and those stored unparsed that this
    version has at a .py path. A .py path is chosen when the blob has one."""
    known = queries.known_blobs(database, (entry.blob_id for entry in files))
    python = {entry.blob_id for entry in files if is_python_path(entry.path)}
    now_python = queries.never_parsed_blobs(database, python & known)
    to_store = [e for e in files if e.blob_id not in known or e.blob_id in now_python]
    python_last = sorted(to_store, key=lambda entry: is_python_path(entry.path))
    return list({entry.blob_id: entry for entry in python_last}.values())  # last one wins


def _extractor(references: bool) -> str:
    """Blobs indexed without references are another extractor's: a later run with them
    extracts those blobs again."""
    return extractor_id() if references else extractor_id() + "; no references"


def reextract_outdated(
    database: Database, *, progress: Progress | None = None, workers: int | None = None
) -> tuple[queries.Reextraction, float] | None:
    """Parse again, in one transaction, every blob that another extractor indexed; None
    when there is none. Returns what changed and the seconds it took."""
    extractor = extractor_id()
    if not queries.has_outdated_blobs(database, extractor):
        return None
    run = _Run(progress or _NoProgress(), workers, True, time.perf_counter())

    def parse(
        count: int, contents: Iterator[tuple[str, bytes]]
    ) -> Generator[queries.BlobRow, None, None]:
        run.progress.start("blobs of an older extractor", count)
        batches = _content_batches((blob_id, True, data, False) for blob_id, data in contents)
        yield from _parsed(batches, count, run, reparse_batch)
        run.progress.finish()

    done = queries.reextract(database, extractor, parse)
    return None if done is None else (done, run.seconds())


def _blob_rows(
    snapshot: Snapshot, entries: list[FileEntry], run: _Run, ahead: _ParseAhead
) -> Generator[queries.BlobRow, None, None]:
    stored = [e for e in entries if is_python_path(e.path) or e.size <= MAX_STORED_BYTES]
    for entry in entries:
        if not (is_python_path(entry.path) or entry.size <= MAX_STORED_BYTES):
            yield queries.BlobRow(entry.blob_id, entry.size, None, skipped=queries.NOT_STORED)
    compressed = {entry.blob_id: content for entry in stored
                  if (content := snapshot.stored_content(entry)) is not None}
    rest = stored[ahead.sent_of(snapshot, stored, set(compressed)):]
    batches = _content_batches(
        ((entry.blob_id, is_python_path(entry.path), snapshot.read(entry),
          entry.blob_id not in compressed) for entry in rest),
        to_go=sum(entry.size for entry in rest), workers=_worker_count(run),
    )
    with contextlib.closing(ahead.parsed(batches, len(stored))) as rows:
        for row in rows:
            yield _with_content(row, compressed)


class _ParseAhead:
    """Sends a wheel's new blobs to the parser pool while the rest of the wheel is read
    (`MemberRead`): read and hashed first, its members kept one core of two idle for
    0.13 s of a cold index of vLLM. Every `CHECK_EVERY` members it looks in the index for
    their blobs, as `_entries_to_store` does, and once more than `INLINE_PARSE_LIMIT` are
    new it starts the pool and sends each full batch. `_blob_rows` then takes the rows of
    what was sent and sends the rest, when what was sent is what it would have sent first:
    else (another source, read after this wheel failed; another writer that stored some
    of the blobs meanwhile) what was sent is dropped, and every blob is sent anew."""

    def __init__(self, database: Database, run: _Run) -> None:
        self._database = database
        self._run = run
        self._parse = functools.partial(parse_batch, references=run.references)
        self._read: list[FileEntry] = []
        self._unchecked: list[tuple[FileEntry, bytes, bytes | None]] = []
        self._new: list[tuple[str, bool, bytes, bool]] = []  # a batch's items, not yet sent
        self._taken: set[str] = set()  # the blob ids in self._new or sent
        self._sent: list[tuple[str, bool, bool]] = []  # a batch's items, but their data
        self._futures: Futures = collections.deque()
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> _ParseAhead:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def take(self, entry: FileEntry, data: bytes, stream: bytes | None) -> None:
        self._read.append(entry)
        self._unchecked.append((entry, data, stream))
        if len(self._unchecked) >= CHECK_EVERY:
            self._check()

    def _check(self) -> None:
        """Note the new blobs of the members read since the last check; send them in full
        batches once the pool is worth starting."""
        read = {(entry.path, entry.blob_id): (data, stream)
                for entry, data, stream in self._unchecked}
        for entry in _entries_to_store(self._database, [e for e, _, _ in self._unchecked]):
            if entry.blob_id not in self._taken:
                data, stream = read[entry.path, entry.blob_id]
                self._new.append((entry.blob_id, is_python_path(entry.path), data, stream is None))
                self._taken.add(entry.blob_id)
        self._unchecked = []
        if self._pool is None and len(self._taken) > INLINE_PARSE_LIMIT:
            self._pool = parser_pool(_worker_count(self._run))
        while self._pool is not None and (count := _full_batch(self._new)):
            batch, self._new = self._new[:count], self._new[count:]
            self._futures.append(submit(self._pool, self._parse, batch))
            self._sent += [(blob_id, python, compress) for blob_id, python, _, compress in batch]

    def sent_of(self, snapshot: Snapshot, stored: list[FileEntry], compressed: set[str]) -> int:
        """How many of the blobs ``stored`` (the first ones) were sent, ``compressed`` those
        whose content the source holds compressed; 0 when what was sent is not theirs."""
        expected = [(e.blob_id, is_python_path(e.path), e.blob_id not in compressed)
                    for e in stored[:len(self._sent)]]
        if expected == self._sent and tuple(self._read) == snapshot.info.files:
            return len(self._sent)
        if self._sent:
            self.close()  # the pool of what is dropped: `parsed` starts another
            self._sent, self._futures = [], collections.deque()
        return 0

    def parsed(
        self, batches: Iterator[Batch], count: int
    ) -> Generator[queries.BlobRow, None, None]:
        """The rows of the batches sent, then of ``batches``: ``count`` blobs in all."""
        if self._pool is None:
            yield from _parsed(batches, count, self._run, self._parse)
            return
        try:
            yield from _pooled(self._pool, self._parse, batches, self._run.progress,
                               self._futures)
        finally:
            self.close()

    def close(self) -> None:
        """Shut the pool down, if it was started."""
        pool, self._pool = self._pool, None
        if pool is not None:
            shut_down(pool)


def _full_batch(items: Batch) -> int:
    """How many of ``items``, from the first, make a batch of `BATCH_BYTES`; 0 if all of
    them do not."""
    size = 0
    for count, (_blob_id, _python, data, _compress) in enumerate(items, 1):
        size += len(data)
        if size >= BATCH_BYTES:
            return count
    return 0


def _with_content(row: queries.BlobRow, compressed: dict[str, bytes]) -> queries.BlobRow:
    """``row`` with the content its source held compressed already (a wheel's member),
    which the worker was not asked to compress again."""
    content = compressed.get(row.blob_id)
    if content is None or row.skipped == BINARY:
        return row
    return dataclasses.replace(row, content=content)


def _parsed(
    batches: Iterator[Batch], count: int, run: _Run,
    parse: Callable[[Batch], list[queries.BlobRow]],
) -> Generator[queries.BlobRow, None, None]:
    """The rows ``parse`` makes of ``count`` blobs: in a process pool, unless they are
    few or one worker was asked for."""
    if count <= INLINE_PARSE_LIMIT or (run.workers or 0) == 1:
        yield from _advancing(map(parse, batches), run.progress)
        return
    pool = parser_pool(_worker_count(run))
    try:
        yield from _pooled(pool, parse, batches, run.progress)
    finally:
        shut_down(pool)


def _pooled(
    pool: ProcessPoolExecutor, parse: Callable[[Batch], list[queries.BlobRow]],
    batches: Iterable[Batch], progress: Progress, sent: Futures | None = None,
) -> Iterator[queries.BlobRow]:
    """The rows of the batches ``sent`` to ``pool`` already, then of ``batches``, each
    submitted now, in their order."""
    futures = collections.deque() if sent is None else sent
    futures.extend(submit(pool, parse, batch) for batch in batches)
    return _advancing(_results(futures), progress)


def _results(futures: Futures) -> Iterator[list[queries.BlobRow]]:
    """Each future's result, in order, taken out of ``futures``: held to the end, the rows
    of every batch would stay in memory until the version is committed, then take 12 ms
    to free on vLLM, with one core idle."""
    while futures:
        yield [queries.BlobRow(*fields) for fields in marshal.loads(futures.popleft().result())]


_ROW_FIELDS = operator.attrgetter(*(field.name for field in dataclasses.fields(queries.BlobRow)))


def submit(
    pool: ProcessPoolExecutor, parse: Callable[[Batch], list[queries.BlobRow]], batch: Batch
) -> Future[bytes]:
    """Send ``batch`` to ``pool``, to be parsed by ``parse``, its rows to come back as
    `marshal` data (`_results` loads them)."""
    return pool.submit(_marshalled, parse, batch)


def _marshalled(parse: Callable[[Batch], list[queries.BlobRow]], batch: Batch) -> bytes:
    """Worker side: the fields of the rows ``parse`` makes of ``batch``, marshalled. The
    rows hold only str, bytes, int, bool, None, tuples and lists, which marshal writes and
    reads faster than pickle writes and reads dataclasses: 0.14 CPU-s less of a cold index
    of vLLM v0.20.0, 0.11 of it the workers'. The pool's processes run the same Python,
    whose marshal format is theirs."""
    return marshal.dumps([_ROW_FIELDS(row) for row in parse(batch)])


def _worker_count(run: _Run) -> int:
    return run.workers or min(available_cores(), 8)


def parser_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` parser processes, its pipes widened to `PIPE_BYTES`: those it
    opens as it is made (its tasks', its results' and its wake-up pipe), told apart from
    the process's others by their (descriptor, inode) pairs, for the executor does not
    name its connections in public (a pipe another thread opens meanwhile is widened too,
    to no harm)."""
    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    before = open_pipes()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context,
                               initializer=start_worker)
    if sys.platform == "linux":
        for descriptor, _inode in open_pipes() - before:
            with contextlib.suppress(OSError):  # a lower limit: the pipe stays as it was
                fcntl.fcntl(descriptor, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    return pool


def open_pipes() -> set[tuple[int, int]]:
    """(descriptor, inode) of each pipe this process has open, as Linux's /proc lists them;
    elsewhere none (pipes are widened on Linux only)."""
    if sys.platform != "linux":
        return set()
    found = set()
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed since
            status = os.fstat(int(name))
            if stat.S_ISFIFO(status.st_mode):
                found.add((int(name), status.st_ino))
    return found


def shut_down(pool: ProcessPoolExecutor) -> None:
    """Cancel the tasks not started and wait for the workers to finish theirs (a moment:
    one batch each). A Ctrl-C, SIGTERM or SIGHUP meanwhile (``timeout`` signals the
    process and then its group) is noted, not handled, until the pool is down, then
    handled as it would have been: the run stops all the same. Raised inside the wait, it
    would leave the pool torn down under its running manager thread (Python 3.11 takes an
    interrupted ``Thread.join`` for a thread that ended), and the exit could then hang on
    a full pipe."""
    if threading.current_thread() is not threading.main_thread():
        pool.shutdown(wait=True, cancel_futures=True)  # signals only reach the main thread
        return
    noted: list[int] = []
    previous = {signum: signal.getsignal(signum) for signum in STOPPING_SIGNALS}
    handled = [signum for signum, handler in previous.items()
               if handler not in (signal.SIG_IGN, None)]  # nohup's SIGHUP stays ignored
    for signum in handled:
        signal.signal(signum, lambda signum, frame: noted.append(signum))
    try:
        pool.shutdown(wait=True, cancel_futures=True)
    finally:
        for signum in handled:
            signal.signal(signum, previous[signum])
    if noted:
        signal.raise_signal(noted[0])


def start_worker() -> None:
    """Parser worker initializer.

    * Ctrl-C (and SIGTERM, SIGHUP) is the main process's to handle: it stops taking
      results and shuts the pool down, and the workers finish the batch in hand. A worker
      that died of it instead would break the pool while the shutdown cancels its tasks,
      which Python 3.11 does not survive (the pool's thread fails, and the exit waits
      forever on a full pipe).
    * A worker exits once the main process is gone. A SIGKILL leaves no one to shut the
      pool down, and a worker waiting for tasks would otherwise wait forever (holding its
      memory and the parent's stdout/stderr pipes)."""
    for signum in STOPPING_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _advancing(
    results: Iterator[list[queries.BlobRow]], progress: Progress
) -> Iterator[queries.BlobRow]:
    for rows in results:
        progress.advance(len(rows))
        yield from rows


def _content_batches(
    blobs: Iterable[tuple[str, bool, bytes, bool]], to_go: int | None = None, workers: int = 1
) -> Iterator[Batch]:
    """``blobs`` in batches of about `BATCH_BYTES`. Told the bytes ``to_go`` in all, a
    batch holds no more than a share of what is left, one of 2 x ``workers``, down to
    `TAIL_BATCH_BYTES`: the last batches are small, and the workers finish together."""
    batch: Batch = []
    size = 0
    for blob in blobs:
        batch.append(blob)
        size += len(blob[2])
        if size >= _batch_limit(to_go, workers):
            yield batch
            to_go = None if to_go is None else to_go - size
            batch, size = [], 0
    if batch:
        yield batch


def _batch_limit(to_go: int | None, workers: int) -> int:
    if to_go is None:
        return BATCH_BYTES
    return max(TAIL_BATCH_BYTES, min(BATCH_BYTES, to_go // (2 * workers)))


def parse_batch(batch: Batch, references: bool = True) -> list[queries.BlobRow]:
    """Worker side: parse the Python blobs of a batch and compress the blobs asked."""
    return [
        _blob_row(blob_id, is_python, data, compress, references)
        for blob_id, is_python, data, compress in batch
    ]


def reparse_batch(batch: Batch) -> list[queries.BlobRow]:
    """Worker side: parse again blobs already stored (their content is not sent back)."""
    return [_parsed_row(blob_id, data, None, references=True) for blob_id, _, data, _ in batch]


def _blob_row(
    blob_id: str, is_python: bool, data: bytes, compress: bool, references: bool
) -> queries.BlobRow:
    binary = b"\0" in data[:8192]
    content = zlib.compress(data, 1) if compress and not binary else None
    if not is_python or binary:
        return queries.BlobRow(blob_id, len(data), content,
                               skipped=BINARY if binary else None, python=is_python)
    return _parsed_row(blob_id, data, content, references)


def _parsed_row(
    blob_id: str, data: bytes, content: bytes | None, references: bool
) -> queries.BlobRow:
    parsed = parse_blob(blob_id, data, references)
    return queries.BlobRow(
        blob_id, len(data), content, parsed=parsed.skipped is None,
        has_errors=parsed.has_errors, decode_errors=parsed.decode_errors,
        skipped=parsed.skipped, symbols=symbol_rows(parsed), names=parsed.names,
        imports=parsed.imports, python=True,
    )


def symbol_rows(parsed: ParsedBlob) -> list[tuple]:
    return [(parsed.blob_id, seq, *row) for seq, row in enumerate(parsed.rows)]
