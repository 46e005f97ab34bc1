"""The git source: a cached bare, shallow mirror per repo, read without a work tree.

Only the tag asked for is fetched (``--depth 1``); files are listed with one ``ls-tree``
and read through one long-lived ``cat-file --batch`` (GitPython).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

import git

from indexer.config import RepoConfig, is_remote_git
from indexer.errors import SourceError, VersionNotFound
from indexer.models import FileEntry, SnapshotInfo
from indexer.sources import CACHE_HINT, Snapshot, cache_error, is_disk_problem, path_text

GIT_TIMEOUT_SECONDS = 600
"""The longest a fetch may take in all (a huge first fetch on a slow link)."""
GIT_STALL_SECONDS = 30
"""An http(s) fetch moving under 1 KB/s for this long gives up (git has no such limit by
default, so a server that accepts and never answers would hold it until the timeout).
The user's own ``GIT_HTTP_LOW_SPEED_LIMIT``/``_TIME`` win."""
_SHA = re.compile(r"[0-9a-f]{40}")
_GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GCM_INTERACTIVE": "never",
}


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
            raise cache_error(self.path.parent, error) from None
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _open(self) -> git.Repo:
        try:
            if not (self.path / "HEAD").exists():
                return self._init()
            return git.Repo(self.path)
        except OSError as error:
            raise cache_error(self.path, error) from None
        except git.GitError as error:
            raise SourceError(
                f"the git mirror {self.path} is unusable ({_git_reason(error)})",
                "delete that folder; it is fetched again next time",
            ) from None

    def _init(self) -> git.Repo:
        """A new, empty bare mirror (failing on a full or read-only disk: the cache's fault,
        not the mirror's)."""
        try:
            return git.Repo.init(self.path, bare=True)
        except git.GitError as error:
            raise SourceError(f"cannot create the git mirror {self.path} "
                              f"({_git_reason(error)})", CACHE_HINT) from None

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
                env=_fetch_env(), kill_after_timeout=GIT_TIMEOUT_SECONDS,
            )
        except git.GitCommandError as error:
            reason = _git_reason(error)
            if is_disk_problem(reason):
                raise SourceError(f"{self.url}: {reason}", CACHE_HINT) from None
            raise VersionNotFound(f"{self.url}: {reason}") from None
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
        entries.append(FileEntry(path_text(path), sha.decode(), int(size)))
    return tuple(entries)


def _git_url(url: str) -> str:
    if is_remote_git(url):
        return url
    return Path(url).expanduser().resolve().as_uri()


def _fetch_env() -> dict[str, str]:
    stall = {"GIT_HTTP_LOW_SPEED_LIMIT": "1000", "GIT_HTTP_LOW_SPEED_TIME": str(GIT_STALL_SECONDS)}
    return {**_GIT_ENV, **{name: value for name, value in stall.items()
                           if name not in os.environ}}


def _git_reason(error: git.GitError) -> str:
    text = getattr(error, "stderr", "") or str(error)
    lines = [line.strip(" '\"") for line in str(text).splitlines() if line.strip(" '\"")]
    fallback = lines[-1] if lines else ""
    reason = next((line for line in reversed(lines) if "fatal:" in line), fallback)
    reason = next(  # "fatal: unpack-objects failed" follows the line that says why
        (line for line in reversed(lines) if is_disk_problem(line)), reason
    )
    cleaned = reason.replace("stderr:", "").replace("fatal:", "")
    return cleaned.strip(" '\"") or "git failed"
