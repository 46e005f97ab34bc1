"""The git source: a cached bare, shallow mirror per repo, read without a work tree.

Only the tag asked for is fetched (``--depth 1``); files are listed with one ``ls-tree``
and read through one long-lived ``cat-file --batch`` (GitPython).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import git

from indexer.config import RepoConfig, is_remote_git
from indexer.errors import SourceError, VersionNotFound
from indexer.models import FileEntry, SnapshotInfo
from indexer.sources import (
    Snapshot,
    cache_error,
    cache_hint,
    git_env_without_repository,
    is_disk_problem,
    path_text,
)

GIT_TIMEOUT_SECONDS = 600
"""The longest a fetch may take in all (a huge first fetch on a slow link)."""
GIT_STALL_SECONDS = 30
"""An http(s) fetch moving under 1 KB/s for this long gives up (git has no such limit by
default, so a server that accepts and never answers would hold it until the timeout).
The user's own ``GIT_HTTP_LOW_SPEED_LIMIT``/``_TIME`` win."""
_SHA = re.compile(r"[0-9a-f]{40}")
_GITPYTHON_STDERR = re.compile(r"^\s*stderr: '(.*)'\s*$", re.DOTALL)
"""How GitPython wraps a command's standard error in its exception."""
_LOCKED = re.compile(r"Unable to create '[^']*\.lock': File exists")
_UNREACHABLE = re.compile(r"does not appear to be a git repository|"
                          r"[Rr]epository '?[^ ]*'? not found")
"""What git says of a location that holds no repository (not of a network that is down,
which the README's no-GitHub setup expects)."""
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
        self.url = _git_url(repo.git or "")
        # One mirror per URL: a repo pointed at a fork must not read the first one's tags.
        url_key = hashlib.sha1(self.url.encode()).hexdigest()[:12]
        self.path = cache_dir / "git" / f"{repo.name}-{url_key}.git"

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
            if (self.path / "HEAD").exists():  # a read-only cache: its tags still read
                yield
                return
            raise cache_error(self.path.parent, error, self.repo.config_name) from None
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._remove_stale_git_locks()
            yield

    def _remove_stale_git_locks(self) -> None:
        """Remove the ``*.lock`` files that a git command killed with its run left in the
        mirror (``shallow.lock`` would fail every later fetch). Runs of annotate take
        turns (the flock), so an old one is no one's; a recent one may be an orphaned fetch
        still running, and is left to the error that names it."""
        if not self.path.is_dir():
            return
        cutoff = time.time() - GIT_TIMEOUT_SECONDS
        for lock in [*self.path.glob("*.lock"), *self.path.glob("refs/**/*.lock")]:
            with contextlib.suppress(OSError):
                if lock.stat().st_mtime < cutoff:
                    lock.unlink()

    def _open(self) -> git.Repo:
        try:
            if not (self.path / "HEAD").exists():
                self._init()
            handle = git.Repo(self.path)
            handle.git.update_environment(**_mirror_env(self.path))
            return handle
        except OSError as error:
            raise cache_error(self.path, error, self.repo.config_name) from None
        except git.GitError as error:
            raise SourceError(
                f"the git mirror {self.path} is unusable ({_git_reason(error)})",
                "delete that folder; it is fetched again next time",
            ) from None

    def _init(self) -> None:
        """A new, empty bare mirror (failing on a full or read-only disk: the cache's fault,
        not the mirror's). Run without a git hook's `REPOSITORY_VARIABLES`, which
        ``git init --bare`` would obey (turning the user's own repository bare)."""
        done = subprocess.run(["git", "init", "--quiet", "--bare", str(self.path)],
                              env=git_env_without_repository(), capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            reason = _reason_in(done.stderr)
            raise SourceError(f"cannot create the git mirror {self.path} ({reason})",
                              cache_hint(self.repo.config_name))

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
            raise self._fetch_error(_git_reason(error)) from None
        commit = self._resolve(handle, version) if not is_sha else version
        if commit is None:
            raise VersionNotFound(f"{self.url}: tag {version} did not resolve to a commit")
        return commit


    def _fetch_error(self, reason: str) -> SourceError:
        """A failed fetch: the version is not there, unless git says what else is wrong."""
        failed = f"{self.url}: {reason}"
        if is_disk_problem(reason):
            return SourceError(failed, cache_hint(self.repo.config_name))
        if _LOCKED.search(reason):
            return SourceError(failed, "another git command may still be fetching into the "
                                       "mirror; if none is, delete that file")
        if _UNREACHABLE.search(reason):
            return SourceError(failed, f"check the git location of repo {self.repo.name} "
                                       f"({self.repo.git})")
        return VersionNotFound(failed)


class GitSnapshot(Snapshot):
    def __init__(self, handle: git.Repo, info: SnapshotInfo) -> None:
        self._handle = handle
        self.info = info

    def read(self, entry: FileEntry) -> bytes:
        try:
            return self._handle.git.get_object_data(entry.blob_id)[3]
        except (git.GitError, ValueError):
            raise SourceError(
                f"cannot read {entry.path} (blob {entry.blob_id}) from the git mirror "
                f"{self._handle.git_dir}: the object is missing or damaged",
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
        if not size.isdigit():  # git could not read the blob to size it
            raise SourceError(f"the git mirror {handle.git_dir} is damaged (blob {sha.decode()} "
                              f"of {path_text(path)} is unreadable)",
                              "delete the mirror folder; it is fetched again next time")
        entries.append(FileEntry(path_text(path), sha.decode(), int(size)))
    return tuple(entries)


def _mirror_env(path: Path) -> dict[str, str]:
    """The `REPOSITORY_VARIABLES` set in this process, pointed at the mirror (GitPython
    passes its own environment on, and can only add to it)."""
    values = {
        "GIT_DIR": str(path), "GIT_COMMON_DIR": str(path),
        "GIT_OBJECT_DIRECTORY": str(path / "objects"), "GIT_ALTERNATE_OBJECT_DIRECTORIES": "",
        "GIT_INDEX_FILE": str(path / "index"), "GIT_WORK_TREE": str(path),
        "GIT_NAMESPACE": "", "GIT_QUARANTINE_PATH": "",
    }
    return {name: value for name, value in values.items() if name in os.environ}


def _git_url(url: str) -> str:
    if is_remote_git(url):
        return url
    return Path(url).expanduser().resolve().as_uri()


def _fetch_env() -> dict[str, str]:
    stall = {"GIT_HTTP_LOW_SPEED_LIMIT": "1000", "GIT_HTTP_LOW_SPEED_TIME": str(GIT_STALL_SECONDS)}
    return {**_GIT_ENV, **{name: value for name, value in stall.items()
                           if name not in os.environ}}


def _git_reason(error: git.GitError) -> str:
    return _reason_in(_GITPYTHON_STDERR.sub(r"\1", str(getattr(error, "stderr", "") or error)))


def _reason_in(stderr: str) -> str:
    """The line of git's standard error that says why it failed."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    fallback = lines[-1] if lines else ""
    # the first fatal line says why ("... does not appear to be a git repository"), the
    # next ones what failed because of it ("Could not read from remote repository")
    reason = next((line for line in lines if "fatal:" in line), fallback)
    reason = next(  # "fatal: unpack-objects failed" follows the line that says why
        (line for line in reversed(lines) if is_disk_problem(line)), reason
    )
    return reason.replace("fatal:", "").strip() or "git failed"
