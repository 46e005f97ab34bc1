"""Where a version's files come from: a git mirror, a PyPI wheel, or a local path.

Every file is identified by its git blob id, computed the same way for wheel members and
local files, so one file from git and from a wheel is one blob.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import zipfile
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

from indexer.config import RepoConfig, check_version_name
from indexer.errors import SourceError, VersionNotFound
from indexer.models import FileEntry, SnapshotInfo

if sys.platform != "win32":  # on Windows downloads are reclaimed by age alone
    import fcntl

PIP_TIMEOUT_SECONDS = 1800
"""The longest one ``pip download`` may run."""
DOWNLOAD_SECONDS = 2 * PIP_TIMEOUT_SECONDS
"""The longest a download may take: pip, then pip again for another machine's wheel
(`_pip_download`); a staging folder with no lock is a live download's until this old."""
PIP_LOG_HAS_A_NAME = sys.platform == "win32"
"""Where there is no /dev/fd to hand pip a file with no name (Windows)."""


MemberRead = Callable[[FileEntry, bytes, "bytes | None"], None]
"""Told each member of a wheel as soon as it is read: its entry, its content, and the zlib
stream the wheel holds of it (`Snapshot.stored_content`), if any; so that its parsing may
start while the rest of the wheel is read."""


def blob_id(data: bytes) -> str:
    """The git blob id of ``data`` (what ``git hash-object`` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Snapshot(ABC):
    """The files of one version, readable by entry until closed."""

    info: SnapshotInfo

    @abstractmethod
    def read(self, entry: FileEntry) -> bytes: ...

    def stored_content(self, entry: FileEntry) -> bytes | None:
        """The entry's content as the index stores it (a zlib stream) when the source holds
        it compressed already; None when it must be compressed."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release processes or files held open."""

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def open_snapshot(
    repo: RepoConfig, version: str, cache_dir: Path, on_read: MemberRead | None = None
) -> Snapshot:
    """Open ``repo@version`` from the first configured source that has it; a wheel's
    members are handed to ``on_read`` as they are read (git's files are not)."""
    check_version_name(version)
    failures: list[str] = []
    hints: list[str] = []  # what to do about a broken cache or mirror, said first
    for kind in repo.sources:
        try:
            snapshot = _open_from(kind, repo, version, cache_dir, on_read)
            if snapshot is not None:
                snapshot.info = dataclasses.replace(snapshot.info, passed_over=tuple(failures))
                return snapshot
        except SourceError as error:  # a broken mirror or cache also falls back
            failures.append(f"{kind}: {error.message}")
            hint = None if isinstance(error, VersionNotFound) else error.hint
            if hint is not None and hint not in hints:
                hints.append(hint)
    tried = "; ".join(failures) or "no git or pypi source is configured"
    raise VersionNotFound(
        f"{repo.name}@{version} was not found ({tried})",
        "; ".join([*hints, "check the version name, or index it from a checkout with "
                   f"'annotate index {repo.name}@{version} --from PATH'"]),
    )


def _open_from(
    kind: str, repo: RepoConfig, version: str, cache_dir: Path, on_read: MemberRead | None
) -> Snapshot | None:
    if kind == "git" and repo.git:
        return _git_mirror(repo, cache_dir).snapshot(version)
    if kind == "pypi" and repo.pypi:
        wheel = fetch_wheel(repo, version, cache_dir)
        return open_wheel(repo, version, wheel, cached=True, on_read=on_read)
    return None


def _git_mirror(repo: RepoConfig, cache_dir: Path) -> Any:
    """The repo's `indexer.git_source.GitMirror`, imported only when git is used: GitPython
    refuses to load where no ``git`` command is (a slim container)."""
    try:
        from indexer.git_source import GitMirror
    except ImportError as error:
        if "git executable" not in str(error).lower():
            raise
        raise SourceError("the git command is not installed (or not on PATH)",
                          "install git, or use sources = [\"pypi\"]") from None
    return GitMirror(repo, cache_dir)


def open_local(
    repo: RepoConfig, version: str, path: Path, on_read: MemberRead | None = None
) -> Snapshot:
    """A version read from a directory (a checkout) or a wheel file, whose members are
    handed to ``on_read`` as they are read (a directory's files are not)."""
    check_version_name(version)
    if path.is_dir():
        _refuse_the_package_folder(repo, path)
        return DirectorySnapshot(repo.name, version, path)
    if path.is_file() and path.suffix == ".whl":
        _refuse_another_projects_wheel(repo, path)
        return open_wheel(repo, version, path, on_read=on_read)
    raise SourceError(f"{path} is neither a directory nor a .whl file", "pass a checkout or wheel")


def _refuse_another_projects_wheel(repo: RepoConfig, wheel: Path) -> None:
    """``--from vllm-0.20.0-...whl`` for lmcache would keep vLLM's code as a version of
    lmcache, which never changes once indexed. The project is the one the wheel's
    ``NAME-VERSION.dist-info`` folder names (PEP 427), whatever the file is called
    (``lmcache.whl``), compared as PyPI compares names (PEP 503)."""
    project = _wheel_project(wheel)
    if repo.pypi and project and _project_name(project) != _project_name(repo.pypi):
        raise SourceError(f"{wheel} is a wheel of {project}, not of {repo.pypi} (the pypi of "
                          f"repo {repo.name})", f"pass a wheel of {repo.pypi}")


def _wheel_project(wheel: Path) -> str | None:
    """The project of ``wheel``'s top ``.dist-info`` folder; None when it has none, or does
    not read (`open_wheel` says why)."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            tops = {name.split("/", 1)[0] for name in archive.namelist()}
    except (OSError, zipfile.BadZipFile):
        return None
    return next((top.split("-", 1)[0] for top in sorted(tops) if top.endswith(".dist-info")),
                None)


def _refuse_the_package_folder(repo: RepoConfig, path: Path) -> None:
    """``--from checkout/vllm`` would store ``config/cache.py`` for ``vllm/config/cache.py``:
    every ref and permalink would miss."""
    package = (repo.pypi or repo.name).replace("-", "_")
    resolved = path.resolve()
    if (resolved.name == package and (resolved / "__init__.py").is_file()
            and not (resolved / package).is_dir()):
        raise SourceError(f"{path} is the {package} package, not the checkout around it: its "
                          f"paths would lack the leading {package}/",
                          f"pass {resolved.parent}")


# --- pypi -----------------------------------------------------------------------------


def pypi_version(version: str) -> str:
    """v0.20.0 -> 0.20.0"""
    return version[1:] if re.match(r"v\d", version) else version


_LONGEST_FILE_NAME = 255
"""Bytes of the longest file name most file systems take (NAME_MAX), the cache folder's
of a version too."""

def fetch_wheel(repo: RepoConfig, version: str, cache_dir: Path) -> Path:
    """The cached wheel of ``repo.pypi==version``, downloaded with pip when missing."""
    name, number = repo.pypi or repo.name, pypi_version(version)
    if len(number.encode()) > _LONGEST_FILE_NAME:  # no cache folder can be named so
        raise VersionNotFound(f"pip: {name}=={number}: no release has a name that long")
    folder = cache_dir / "wheels" / name / number
    _reclaim_dead_downloads(cache_dir / "wheels")
    cached = _cached_wheel(folder)
    if cached is not None:
        return cached
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".download-", dir=folder.parent))
    except OSError as error:
        raise cache_error(folder.parent, error, repo.config_name) from None
    lock = None
    try:
        lock = _lock_download(staging)
        wheel = _pip_download(name, number, staging, lock, repo.config_name)
        folder.mkdir(exist_ok=True)
        final = folder / wheel.name
        os.replace(wheel, final)
        return final
    except OSError as error:
        raise cache_error(folder, error, repo.config_name) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if lock is not None:
            os.close(lock)


DOWNLOAD_LOCK = "lock"


def _lock_download(staging: Path) -> int | None:
    """Lock ``staging`` as a live download's, for this process and the pip it starts (which
    may outlive it): the kernel drops the lock when both are gone, however they ended. The
    file is locked under another name, then renamed, so that a run reclaiming folders never
    finds it unlocked while the download sets up. None where locks are not supported."""
    if sys.platform == "win32":  # pragma: no cover
        return None
    starting = staging / f"{DOWNLOAD_LOCK}.new"
    descriptor = os.open(starting, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
    except OSError:  # a file system without locks: the folder is reclaimed by age
        os.close(descriptor)
        return None
    try:
        os.rename(starting, staging / DOWNLOAD_LOCK)
    except OSError:
        os.close(descriptor)
        raise
    return descriptor


def _reclaim_dead_downloads(wheels: Path) -> None:
    """Remove the staging folders that downloads killed before they could clean up (``kill
    -9``, a power cut) left in the cache: those whose lock no process holds. One without a
    lock (from before locks, or where they are not supported) goes once older than any
    download may take."""
    cutoff = time.time() - DOWNLOAD_SECONDS
    for staging in wheels.glob("*/.download-*"):
        with contextlib.suppress(OSError):  # a live download's, or a read-only cache
            if (staging / DOWNLOAD_LOCK).exists():
                _remove_if_unlocked(staging)
            elif staging.stat().st_mtime < cutoff:
                shutil.rmtree(staging)


def _remove_if_unlocked(staging: Path) -> None:
    if sys.platform == "win32":  # pragma: no cover
        return
    descriptor = os.open(staging / DOWNLOAD_LOCK, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError when held
        shutil.rmtree(staging)
    finally:
        os.close(descriptor)


def _cached_wheel(folder: Path) -> Path | None:
    wheels = sorted(folder.glob("*.whl")) if folder.is_dir() else []
    for wheel in wheels:
        if zipfile.is_zipfile(wheel):
            return wheel
        wheel.unlink(missing_ok=True)  # truncated or corrupt: fetched again
    return None


def _pip_download(
    name: str, version: str, destination: Path, lock: int | None, config_name: str
) -> Path:
    """Download the wheel of ``name==version`` into ``destination``, handing pip the
    download's ``lock``: the one this machine would install, else (only .py members are
    read) one of another platform or Python that pip skipped, asked for by its tag. pip
    keeps its temporary folders (the wheel as it arrives, up to 234 MiB for vLLM) in
    ``destination`` too, and not in TMPDIR: when pip is killed (SIGTERM or SIGKILL to the
    run's process group, a CI job cancelled), they go with the folder, however the run
    ended."""
    requirement = f"{name}=={version}"
    run = _run_pip(requirement, destination, lock)
    reasons = [run.reason]
    other = _tag_of_another_machine(name, version, run)
    if other is not None:
        run = _run_pip(requirement, destination, lock, other.pip_options())
        reasons.append(f"tried again for the wheel {other} of another machine: {run.reason}")
    if run.wheel is not None:
        return run.wheel
    reason = "; ".join(reasons)
    if is_disk_problem(reason):
        raise SourceError(f"pip: {requirement}: {reason}", cache_hint(config_name))
    raise VersionNotFound(f"pip: {requirement}: {reason}")


@dataclasses.dataclass(frozen=True)
class _PipRun:
    """One ``pip download``: the wheel it saved, else why not; and its debug log."""

    wheel: Path | None
    reason: str
    log: str


def _run_pip(
    requirement: str, destination: Path, lock: int | None, options: Sequence[str] = ()
) -> _PipRun:
    temporary = destination / "pip-tmp"
    temporary.mkdir(exist_ok=True)
    # pip's console says only "No matching distribution" when the index failed to answer;
    # its debug log (--log) says why ("Could not fetch URL ...: Read timed out"), and
    # names the wheels it skipped.
    with _pip_log(temporary) as log:
        log_name, inherited = _passed_to_pip(log, lock)
        command = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
            "--ignore-requires-python", "--disable-pip-version-check", "--no-input",
            "--progress-bar", "off", "--log", log_name, "-d", str(destination), *options,
            requirement,
        ]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=PIP_TIMEOUT_SECONDS,
                check=False, pass_fds=inherited, env={**os.environ, "TMPDIR": str(temporary)},
            )
        except subprocess.TimeoutExpired:
            raise VersionNotFound(
                f"pip: {requirement} timed out after {PIP_TIMEOUT_SECONDS}s"
            ) from None
        log.seek(0)
        text = log.read().decode(errors="replace")
    wheels = sorted(destination.glob("*.whl"))
    if done.returncode == 0 and wheels:
        return _PipRun(wheels[0], "", text)
    return _PipRun(None, _pip_reason(done.stderr, text), text)


class _WheelTag(NamedTuple):
    """The tag of a wheel file (PEP 425), each part maybe several joined by dots."""

    python: str
    abi: str
    platform: str

    def __str__(self) -> str:
        return "-".join(self)

    def pip_options(self) -> list[str]:
        """What makes pip take this wheel on any machine."""
        implementation, python_version = re.findall(r"[a-z]+|\d+", self.python.split(".")[0])
        return [f"--implementation={implementation}", f"--python-version={python_version}",
                *(f"--abi={abi}" for abi in self.abi.split(".")),
                *(f"--platform={platform}" for platform in self.platform.split("."))]

    def is_linux_x86_64(self) -> bool:
        return any("linux" in platform and platform.endswith("_x86_64")
                   for platform in self.platform.split("."))


_WHEEL_FILE = re.compile(r"(?<![^\s/\\'\"<>,])[^\s/\\'\"<>,]+\.whl\b")
"""A wheel's file name in pip's log, found from the start of a name only: from each of its
characters, a long name (a link of a million) was gone over again, quadratic."""
_VALID_TAG = re.compile(r"([a-z]+\d+)(\.[a-z]+\d+)*-\w+(\.\w+)*-\w+(\.\w+)*", re.ASCII)


def _tag_of_another_machine(name: str, version: str, run: _PipRun) -> _WheelTag | None:
    """When pip found no wheel of ``name==version`` for this machine, the tag of one its
    debug log names (it skipped it): a Linux x86-64 one first, the wheel most machines
    (and CI) fetch, so that they record the same sha256."""
    if run.wheel is not None or "No matching distribution" not in run.reason:
        return None
    tags = {tag for file in _WHEEL_FILE.findall(run.log)
            if (tag := _wheel_tag(urllib.parse.unquote(file), name, version)) is not None}
    return min(tags, key=lambda tag: (not tag.is_linux_x86_64(), str(tag)), default=None)


def _wheel_tag(file_name: str, name: str, version: str) -> _WheelTag | None:
    """The tag of ``file_name`` when it is a wheel of ``name==version``."""
    parts = file_name.removesuffix(".whl").split("-")
    if len(parts) not in (5, 6) or not _matches(version, parts[1]):
        return None
    if _project_name(parts[0]) != _project_name(name):
        return None
    tag = _WheelTag(*parts[-3:])
    return tag if _VALID_TAG.fullmatch(str(tag)) else None


def _matches(asked: str, published: str) -> bool:
    """Whether pip takes the version ``published`` for ``NAME==asked`` (PEP 440: ``0.20``
    is ``0.20.0``, and ``0.20.0`` takes ``0.20.0+cu129``, not the other way round)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet  # a retry's, 5 ms
    from packaging.version import InvalidVersion, Version

    try:
        return SpecifierSet(f"=={asked}").contains(Version(published), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):  # pip finds no such version either
        return False


def _project_name(name: str) -> str:
    """The name as PyPI compares names: ``LM_Cache`` and ``lm.cache`` are ``lm-cache``."""
    return re.sub(r"[-_.]+", "-", name).lower()


@contextlib.contextmanager
def _pip_log(folder: Path) -> Iterator[IO[bytes]]:
    """The file pip writes its debug log to. It has no name (pip opens it as /dev/fd/N), in
    the temporary folder, off the cache, which may be the full disk pip fails on: no run
    leaves it behind, not even one killed by SIGKILL. Where there is no /dev/fd, it is a
    file in ``folder`` (the download's, which goes with it however the run ends), removed
    once read."""
    if not PIP_LOG_HAS_A_NAME:
        with tempfile.TemporaryFile(prefix="annotate-pip-", suffix=".log") as log:
            yield log
        return
    descriptor, name = tempfile.mkstemp(prefix="annotate-pip-", suffix=".log", dir=folder)
    os.close(descriptor)
    try:
        with open(name, "rb") as log:
            yield log
    finally:
        with contextlib.suppress(OSError):  # still held (a virus scan): left, not an error
            os.unlink(name)


def _passed_to_pip(log: IO[bytes], lock: int | None) -> tuple[str, tuple[int, ...]]:
    """The name pip opens ``log`` by, and the descriptors pip inherits: the log's, unless
    it has a name, and the download's ``lock``."""
    locks = () if lock is None else (lock,)
    if PIP_LOG_HAS_A_NAME:
        return log.name, locks
    return f"/dev/fd/{log.fileno()}", (log.fileno(), *locks)


DISK_PROBLEMS = ("No space left on device", "Read-only file system", "Disk quota exceeded")


def is_disk_problem(message: str) -> bool:
    """Whether a tool's error message blames the disk (then the cache is at fault)."""
    return any(problem in message for problem in DISK_PROBLEMS)
_FETCH_FAILED = re.compile(r"Could not fetch URL (\S+?): (.+?) - skipping")
_NETWORK_FAILURES = (
    "Read timed out", "Connection refused", "Connection reset", "timed out",
    "Name or service not known", "Temporary failure in name resolution", "No route to host",
    "Network is unreachable", "certificate verify failed",
)


def _pip_reason(stderr: str, log: str = "") -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    reason = errors[-1] if errors else (lines[-1] if lines else "pip failed")
    if reason == "ERROR: Exception:" and lines:  # pip crashed: its traceback's last line
        reason = lines[-1]
    reason = reason.removeprefix("ERROR: ")
    fetches = _FETCH_FAILED.findall(log)
    if fetches:  # the index did not answer, or not with a page
        url, why = fetches[-1]
        known = next((f for f in _NETWORK_FAILURES if f.lower() in why.lower()), None)
        reason += f" ({url}: {known.lower() if known else why.split(' for url')[0][:200]})"
    return reason


def open_wheel(
    repo: RepoConfig, version: str, wheel: Path, *, cached: bool = False,
    on_read: MemberRead | None = None,
) -> WheelSnapshot:
    """Open a wheel's ``.py`` members, each handed to ``on_read`` once read; an unreadable
    wheel is removed only from the cache, never when it is the user's own file. A cached
    wheel came from ``pypi``; the user's own (``--from``) is recorded as ``local``, with
    its sha256 either way. What ``on_read`` raises (an OSError of its own, say) is not
    taken for the wheel's fault: it passes through as it was."""
    try:
        archive = zipfile.ZipFile(wheel)
        sha256 = wheel_sha256(wheel, cached=cached)
    except (OSError, zipfile.BadZipFile) as error:
        raise _unreadable_wheel(wheel, error, cached) from None
    try:
        return WheelSnapshot(repo.name, version, archive, sha256, "pypi" if cached else "local",
                             on_read)
    except _CorruptMember as error:
        raise _unreadable_wheel(wheel, error, cached) from None


def _unreadable_wheel(wheel: Path, error: Exception, cached: bool) -> SourceError:
    if not cached:
        return SourceError(f"the wheel {wheel} is unreadable ({error})",
                           "check the file, or download it again")
    wheel.unlink(missing_ok=True)
    wheel.with_name(wheel.name + ".sha256").unlink(missing_ok=True)
    return SourceError(
        f"the wheel {wheel.name} is unreadable ({error}); it was removed from the cache",
        "run the command again to download it anew",
    )


def wheel_sha256(wheel: Path, *, cached: bool) -> str:
    """The wheel's sha256; for a cached wheel, remembered beside it (hashing a 250 MB
    wheel costs about 0.3-0.8 s on every index run otherwise)."""
    sidecar = wheel.with_name(wheel.name + ".sha256")
    size = wheel.stat().st_size
    if cached and sidecar.is_file():
        recorded, _, recorded_size = sidecar.read_text().partition(" ")
        if recorded_size.strip() == str(size) and len(recorded) == 64:
            return recorded
    digest = hashlib.sha256()
    with wheel.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    if cached:
        with contextlib.suppress(OSError):  # a read-only cache only costs the hash next time
            sidecar.write_text(f"{digest.hexdigest()} {size}\n")
    return digest.hexdigest()


class _CorruptMember(Exception):
    """A wheel member that does not read back (bad CRC, data that does not inflate), or a
    wheel that cannot be opened again to read its members."""


_ENCRYPTED = 0x1
"""The general purpose flag of an encrypted zip member (APPNOTE 4.4.4)."""
_LOCAL_HEADER = struct.Struct("<4s22xHH")
"""A zip member's local header: its signature, then (after 22 bytes of what the central
directory says again) the lengths of its name and extra field, which its data follows."""
_ZLIB_HEADER = b"\x78\x01"
"""A zlib stream's header (RFC 1950): deflate, 32 KiB window, no preset dictionary."""


def _read_deflated(wheel: IO[bytes], member: zipfile.ZipInfo) -> tuple[bytes, bytes] | None:
    """The content of a deflated ``member`` of the ``wheel`` file and its zlib stream, made
    of the wheel's own deflate data (a header before it, the Adler-32 of the content after
    it), so that nothing is compressed again. None for a member stored or encrypted, or
    whose data is not one whole deflate stream of the size and CRC the wheel records:
    zipfile reads it, or says what is wrong."""
    deflated = _member_data(wheel, member)
    if deflated is None:
        return None
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    try:
        data = inflater.decompress(deflated, member.file_size + 1)  # a bomb stops there
    except zlib.error:
        return None
    whole = inflater.eof and not inflater.unused_data and len(data) == member.file_size
    if not whole or zlib.crc32(data) != member.CRC:
        return None
    return data, _ZLIB_HEADER + deflated + zlib.adler32(data).to_bytes(4, "big")


def _member_data(wheel: IO[bytes], member: zipfile.ZipInfo) -> bytes | None:
    """The data of a deflated, unencrypted ``member`` as the ``wheel`` file holds it."""
    if member.compress_type != zipfile.ZIP_DEFLATED or member.flag_bits & _ENCRYPTED:
        return None
    wheel.seek(member.header_offset)
    header = wheel.read(_LOCAL_HEADER.size)
    if len(header) != _LOCAL_HEADER.size:
        return None
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(header)
    if signature != b"PK\x03\x04":
        return None
    wheel.seek(name_length + extra_length, os.SEEK_CUR)
    return wheel.read(member.compress_size)


def _python_members(archive: zipfile.ZipFile) -> Iterator[zipfile.ZipInfo]:
    """The package's ``.py`` members (not its metadata's), at safe paths."""
    for member in archive.infolist():
        top = member.filename.split("/", 1)[0]
        if member.is_dir() or not member.filename.endswith(".py"):
            continue
        if top.endswith((".dist-info", ".data")) or not _safe_path(member.filename):
            continue
        yield member


class WheelSnapshot(Snapshot):
    """The ``.py`` members of a wheel, at their repository paths."""

    def __init__(
        self, repo: str, version: str, archive: zipfile.ZipFile, sha256: str, source: str,
        on_read: MemberRead | None = None,
    ) -> None:
        self._archive = archive
        self._contents: dict[str, bytes] = {}
        self._streams: dict[str, bytes] = {}
        entries = []
        with self._reopened() as wheel:
            for member in _python_members(archive):
                data = self._read_member(member, wheel)
                self._contents[member.filename] = data
                entries.append(FileEntry(member.filename, blob_id(data), len(data)))
                if on_read is not None:
                    on_read(entries[-1], data, self._streams.get(member.filename))
        self.info = SnapshotInfo(repo, version, source, wheel_sha256=sha256,
                                 files=tuple(entries))

    def _reopened(self) -> IO[bytes]:
        """The wheel's file, opened again to read its members' data as it holds them."""
        try:
            return open(str(self._archive.filename), "rb")
        except OSError as error:
            self._archive.close()
            raise _CorruptMember(str(error)) from None

    def _read_member(self, member: zipfile.ZipInfo, wheel: IO[bytes]) -> bytes:
        try:
            read = _read_deflated(wheel, member)
            if read is None:
                return self._archive.read(member)
        except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as error:
            self._archive.close()
            raise _CorruptMember(f"{member.filename}: {error}") from None
        data, self._streams[member.filename] = read
        return data

    def read(self, entry: FileEntry) -> bytes:
        return self._contents[entry.path]

    def stored_content(self, entry: FileEntry) -> bytes | None:
        return self._streams.get(entry.path)

    def close(self) -> None:
        self._archive.close()


# --- local directory --------------------------------------------------------------------


class DirectorySnapshot(Snapshot):
    """Files of a checkout on disk: in a git work tree, the files git tracks (as they are
    on disk); elsewhere every file but those of .git, __pycache__ and virtual environments.
    Symlinks are skipped."""

    def __init__(self, repo: str, version: str, root: Path) -> None:
        self._files: dict[str, Path] = {}
        entries = []
        for full in _tracked_files(root) or _files_under(root):
            if full.is_symlink() or not full.is_file():
                continue  # a symlink, a submodule, or a tracked file deleted on disk
            relative = path_text(os.fsencode(full.relative_to(root).as_posix()))
            data = _read_file(full)
            self._files[relative] = full
            entries.append(FileEntry(relative, blob_id(data), len(data)))
        self.info = SnapshotInfo(repo, version, "local", files=tuple(entries))

    def read(self, entry: FileEntry) -> bytes:
        return _read_file(self._files[entry.path])


def _read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise _unreadable(path, error) from None


def _unreadable(path: str | Path, error: OSError) -> SourceError:
    return SourceError(f"cannot read {path} ({error.strerror})",
                       "make it readable, or index a copy of the folder without it")


def _tracked_files(root: Path) -> list[Path] | None:
    """The files git tracks in the work tree ``root``; None when it is not one (or git is
    missing). A venv, a build folder or an untracked scratch file is no file of the
    version."""
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached"],
                              env=git_env_without_repository(), capture_output=True,
                              check=False)
    except OSError:  # no git installed: every file, as of a folder
        return None
    reason = done.stderr.decode("utf-8", "replace").strip().splitlines() or ["git failed"]
    if done.returncode != 0 and "not a git repository" in reason[0]:
        return None  # a .git that is not one: a folder like another
    if done.returncode != 0:  # a work tree git will not read: its build files would sneak in
        raise SourceError(f"cannot list the files git tracks in {root} ({reason[0]})",
                          "fix what git says (for another user's folder: git config --global "
                          f"--add safe.directory {root}), or pass a copy without .git")
    return [root / os.fsdecode(name) for name in sorted(done.stdout.split(b"\0")) if name]


def _files_under(root: Path) -> list[Path]:
    found = []
    for folder, subfolders, names in os.walk(root, onerror=_refuse_folder):
        subfolders[:] = sorted(
            name for name in subfolders
            if name not in (".git", "__pycache__") and not _is_venv(Path(folder, name))
        )
        found += [Path(folder, name) for name in sorted(names)]
    return found


def _refuse_folder(error: OSError) -> None:
    """A folder that cannot be listed would leave its files out unsaid."""
    raise _unreadable(error.filename, error)


def _is_venv(folder: Path) -> bool:
    try:
        return (folder / "pyvenv.cfg").exists()
    except OSError as error:
        raise _unreadable(folder, error) from None


REPOSITORY_VARIABLES = (
    "GIT_DIR", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_NAMESPACE", "GIT_QUARANTINE_PATH",
)
"""What a git hook (``pre-commit``, ``pre-push``) sets to point git at the user's own
repository: inherited, they would make annotate's git commands act on that one."""


def git_env_without_repository() -> dict[str, str]:
    return {name: value for name, value in os.environ.items()
            if name not in REPOSITORY_VARIABLES}


def path_text(raw: bytes) -> str:
    """A file name as the index stores it: a byte that is not UTF-8 written as ``\\xNN``
    (SQLite text cannot hold the lone surrogates that ``os.fsdecode`` would make of it)."""
    return raw.decode("utf-8", "backslashreplace")


def _safe_path(path: str) -> bool:
    """Whether ``path`` (``/``-separated) stays inside the folder it is read from."""
    return not path.startswith("/") and ".." not in path.split("/") and "\0" not in path


def cache_hint(config_name: str) -> str:
    """What to do about a cache folder that cannot be written, ``config_name`` naming the
    config (`RepoConfig.config_name`)."""
    return (f"free some space, or point cache_dir in {config_name} (or ANNOTATE_CACHE_DIR, "
            "when cache_dir is not set) at a writable folder")


def cache_error(path: Path, error: OSError, config_name: str) -> SourceError:
    return SourceError(f"cannot write the cache folder {path} ({error.strerror or error})",
                       cache_hint(config_name))
