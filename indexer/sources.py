"""Where a version's files come from: a git mirror, a PyPI wheel, or a local path.

Every file is identified by its git blob id, computed the same way for wheel members and
local files, so one file from git and from a wheel is one blob.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import git

from indexer.config import RepoConfig, check_version_name
from indexer.errors import SourceError, VersionNotFound
from indexer.models import FileEntry, SnapshotInfo

GIT_TIMEOUT_SECONDS = 600
PIP_TIMEOUT_SECONDS = 1800
_SHA = re.compile(r"[0-9a-f]{40}")
_GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GCM_INTERACTIVE": "never",
}


def blob_id(data: bytes) -> str:
    """The git blob id of ``data`` (what ``git hash-object`` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Snapshot(ABC):
    """The files of one version, readable by entry until closed."""

    info: SnapshotInfo

    @abstractmethod
    def read(self, entry: FileEntry) -> bytes: ...

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release processes or files held open."""

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def open_snapshot(repo: RepoConfig, version: str, cache_dir: Path) -> Snapshot:
    """Open ``repo@version`` from the first configured source that has it."""
    check_version_name(version)
    failures = []
    for kind in repo.sources:
        try:
            if kind == "git" and repo.git:
                return GitMirror(repo, cache_dir).snapshot(version)
            if kind == "pypi" and repo.pypi:
                return open_wheel(repo, version, fetch_wheel(repo, version, cache_dir))
        except SourceError as error:  # a broken mirror or cache also falls back
            failures.append(f"{kind}: {error.message}")
    tried = "; ".join(failures) or "no git or pypi source is configured"
    raise VersionNotFound(
        f"{repo.name}@{version} was not found ({tried})",
        "check the version name, or index it from a checkout with "
        f"'annotate index {repo.name}@{version} --from PATH'",
    )


def open_local(repo: RepoConfig, version: str, path: Path) -> Snapshot:
    """A version read from a directory (a checkout) or a wheel file."""
    check_version_name(version)
    if path.is_dir():
        return DirectorySnapshot(repo.name, version, path)
    if path.is_file() and path.suffix == ".whl":
        return open_wheel(repo, version, path)
    raise SourceError(f"{path} is neither a directory nor a .whl file", "pass a checkout or wheel")


# --- git ------------------------------------------------------------------------------


class GitMirror:
    """A bare, shallow mirror of one repo in the cache, fetched one tag at a time."""

    def __init__(self, repo: RepoConfig, cache_dir: Path) -> None:
        self.repo = repo
        self.path = cache_dir / "git" / f"{repo.name}.git"
        self.url = _git_url(repo.git or "")

    def snapshot(self, version: str) -> GitSnapshot:
        with self._locked():  # concurrent runs would race on shallow.lock and ref locks
            handle = self._open()
            try:
                commit = self._resolve(handle, version) or self._fetch(handle, version)
                files = _ls_tree(handle, commit)
            except BaseException:
                handle.close()
                raise
        info = SnapshotInfo(self.repo.name, version, "git", commit_sha=commit, files=files)
        return GitSnapshot(handle, info)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold an exclusive lock on the mirror (a no-op where fcntl is missing)."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            yield
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = (self.path.parent / f"{self.path.name}.lock").open("a")
        except OSError as error:
            raise _cache_error(self.path.parent, error) from None
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _open(self) -> git.Repo:
        try:
            if not (self.path / "HEAD").exists():
                return git.Repo.init(self.path, bare=True)
            return git.Repo(self.path)
        except OSError as error:
            raise _cache_error(self.path, error) from None
        except git.GitError as error:
            raise SourceError(
                f"the git mirror {self.path} is unusable ({_git_reason(error)})",
                "delete that folder; it is fetched again next time",
            ) from None

    def _resolve(self, handle: git.Repo, version: str) -> str | None:
        ref = version if _SHA.fullmatch(version) else f"refs/tags/{version}"
        try:
            return handle.git.rev_parse("--verify", "--quiet", f"{ref}^{{commit}}")
        except git.GitCommandError:
            return None

    def _fetch(self, handle: git.Repo, version: str) -> str:
        is_sha = bool(_SHA.fullmatch(version))
        refspec = f"+{version}:refs/annotate/{version}" if is_sha else (
            f"+refs/tags/{version}:refs/tags/{version}"
        )
        try:
            handle.git.fetch(
                "--depth", "1", "--no-tags", "--quiet", "--", self.url, refspec,
                env=_GIT_ENV, kill_after_timeout=GIT_TIMEOUT_SECONDS,
            )
        except git.GitCommandError as error:
            raise VersionNotFound(f"{self.url}: {_git_reason(error)}") from None
        commit = self._resolve(handle, version) if not is_sha else version
        if commit is None:
            raise VersionNotFound(f"{self.url}: tag {version} did not resolve to a commit")
        return commit


class GitSnapshot(Snapshot):
    def __init__(self, handle: git.Repo, info: SnapshotInfo) -> None:
        self._handle = handle
        self.info = info

    def read(self, entry: FileEntry) -> bytes:
        try:
            return self._handle.git.get_object_data(entry.blob_id)[3]
        except (git.GitError, ValueError) as error:
            raise SourceError(
                f"cannot read {entry.path} ({entry.blob_id}) from {self._handle.git_dir}: {error}",
                "delete the mirror folder; it is fetched again next time",
            ) from None

    def close(self) -> None:
        self._handle.close()


def _ls_tree(handle: git.Repo, commit: str) -> tuple[FileEntry, ...]:
    try:
        raw: bytes = handle.git.ls_tree(
            "-r", "-l", "-z", "--full-tree", commit, stdout_as_string=False
        )
    except git.GitCommandError as error:
        raise SourceError(
            f"cannot list {commit} in the git mirror {handle.git_dir} ({_git_reason(error)})",
            "delete the mirror folder; it is fetched again next time",
        ) from None
    entries = []
    for record in raw.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, sha, size = meta.split()
        if kind != b"blob" or mode == b"120000":
            continue  # symlinks and submodules are not files of the version
        entries.append(FileEntry(path.decode("utf-8", "surrogateescape"), sha.decode(), int(size)))
    return tuple(entries)


def _git_url(url: str) -> str:
    if "://" in url or url.startswith("git@"):
        return url
    return Path(url).expanduser().resolve().as_uri()


def _git_reason(error: git.GitError) -> str:
    text = getattr(error, "stderr", "") or str(error)
    lines = [line.strip(" '\"") for line in str(text).splitlines() if line.strip(" '\"")]
    fallback = lines[-1] if lines else ""
    reason = next((line for line in reversed(lines) if "fatal:" in line), fallback)
    cleaned = reason.replace("stderr:", "").replace("fatal:", "")
    return cleaned.strip(" '\"") or "git failed"


# --- pypi -----------------------------------------------------------------------------


def pypi_version(version: str) -> str:
    """v0.20.0 -> 0.20.0"""
    return version[1:] if re.match(r"v\d", version) else version


def fetch_wheel(repo: RepoConfig, version: str, cache_dir: Path) -> Path:
    """The cached wheel of ``repo.pypi==version``, downloaded with pip when missing."""
    requirement = f"{repo.pypi}=={pypi_version(version)}"
    folder = cache_dir / "wheels" / (repo.pypi or repo.name) / pypi_version(version)
    cached = _cached_wheel(folder)
    if cached is not None:
        return cached
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".download-", dir=folder.parent))
    except OSError as error:
        raise _cache_error(folder.parent, error) from None
    try:
        wheel = _pip_download(requirement, staging)
        folder.mkdir(exist_ok=True)
        final = folder / wheel.name
        os.replace(wheel, final)
        return final
    except OSError as error:
        raise _cache_error(folder, error) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _cached_wheel(folder: Path) -> Path | None:
    wheels = sorted(folder.glob("*.whl")) if folder.is_dir() else []
    for wheel in wheels:
        if zipfile.is_zipfile(wheel):
            return wheel
        wheel.unlink(missing_ok=True)  # truncated or corrupt: fetched again
    return None


def _pip_download(requirement: str, destination: Path) -> Path:
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
        "--disable-pip-version-check", "--no-input", "--progress-bar", "off",
        "-d", str(destination), requirement,
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=PIP_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        raise VersionNotFound(
            f"pip: {requirement} timed out after {PIP_TIMEOUT_SECONDS}s"
        ) from None
    wheels = sorted(destination.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        raise VersionNotFound(f"pip: {requirement}: {_pip_reason(done.stderr)}")
    return wheels[0]


def _pip_reason(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    reason = errors[-1] if errors else (lines[-1] if lines else "pip failed")
    return reason.removeprefix("ERROR: ")


def open_wheel(repo: RepoConfig, version: str, wheel: Path) -> WheelSnapshot:
    try:
        digest = hashlib.sha256()
        with wheel.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        archive = zipfile.ZipFile(wheel)
        return WheelSnapshot(repo.name, version, archive, digest.hexdigest())
    except (OSError, zipfile.BadZipFile) as error:
        wheel.unlink(missing_ok=True)
        raise SourceError(
            f"the wheel {wheel.name} is unreadable ({error}); it was removed from the cache",
            "run the command again to download it anew",
        ) from None


class WheelSnapshot(Snapshot):
    """The ``.py`` members of a wheel, at their repository paths."""

    def __init__(self, repo: str, version: str, archive: zipfile.ZipFile, sha256: str) -> None:
        self._archive = archive
        self._contents: dict[str, bytes] = {}
        entries = []
        for member in archive.infolist():
            top = member.filename.split("/", 1)[0]
            if member.is_dir() or not member.filename.endswith(".py"):
                continue
            if top.endswith((".dist-info", ".data")) or not _safe_path(member.filename):
                continue
            data = self._read_member(member)
            self._contents[member.filename] = data
            entries.append(FileEntry(member.filename, blob_id(data), len(data)))
        self.info = SnapshotInfo(repo, version, "pypi", wheel_sha256=sha256, files=tuple(entries))

    def _read_member(self, member: zipfile.ZipInfo) -> bytes:
        try:
            return self._archive.read(member)
        except (zipfile.BadZipFile, OSError, EOFError) as error:
            raise SourceError(
                f"the cached wheel {self._archive.filename} is corrupt ({error})",
                f"delete it and run again: rm '{self._archive.filename}'",
            ) from None

    def read(self, entry: FileEntry) -> bytes:
        return self._contents[entry.path]

    def close(self) -> None:
        self._archive.close()


# --- local directory --------------------------------------------------------------------


class DirectorySnapshot(Snapshot):
    """Files of a checkout on disk (symlinks and .git are skipped)."""

    def __init__(self, repo: str, version: str, root: Path) -> None:
        self._root = root
        entries = []
        for folder, subfolders, names in os.walk(root):
            subfolders[:] = sorted(d for d in subfolders if d != ".git")
            for name in sorted(names):
                full = Path(folder, name)
                if full.is_symlink() or not full.is_file():
                    continue
                relative = full.relative_to(root).as_posix()
                data = full.read_bytes()
                entries.append(FileEntry(relative, blob_id(data), len(data)))
        self.info = SnapshotInfo(repo, version, "local", files=tuple(entries))

    def read(self, entry: FileEntry) -> bytes:
        return (self._root / entry.path).read_bytes()


def _safe_path(path: str) -> bool:
    pure = PurePosixPath(path)
    return not pure.is_absolute() and ".." not in pure.parts and "\0" not in path


def _cache_error(path: Path, error: OSError) -> SourceError:
    return SourceError(
        f"cannot write the cache folder {path} ({error.strerror or error})",
        "free some space, or point ANNOTATE_CACHE_DIR (or cache_dir in annotate.toml) "
        "at a writable folder",
    )
