"""Writing a report file whole: a full disk, a render that fails or Ctrl-C leaves the
previous report as it was, never a part of the new one."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

if sys.platform != "win32":  # on Windows no lock tells a live writer: partials are left
    import fcntl


class NoFileBeside(OSError):
    """The folder of a report refused the temporary file the report is written to first
    (`replace_whole`); ``errno``, ``strerror`` and ``filename`` are the refusal's."""


def replace_whole(path: Path, pieces: Iterable[bytes]) -> None:
    """Write ``pieces`` to a file beside ``path``, then rename it over
    ``path``: a full disk or Ctrl-C leaves the previous report whole, never a part of the
    new one. A device or pipe (``/dev/stdout``) is written to as it is; a file one
    may write in a folder one may not add a file to, over, once the report is whole."""
    if path.exists() and not path.is_file():
        _write_pieces(path, pieces)
        return
    target = Path(os.path.realpath(path))  # a symlink stays one
    if target.is_symlink():  # what realpath leaves unresolved: a loop, which open() refuses
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path))
    kept_mode = _mode_of(target)
    try:
        handle, partial = _created_beside(target, 0o666 if kept_mode is None else kept_mode)
    except PermissionError as error:
        if not target.is_file():
            raise NoFileBeside(error.errno, error.strerror, error.filename) from error
        _copy_when_whole(target, pieces)
        return
    except OSError as error:
        raise NoFileBeside(error.errno, error.strerror, error.filename) from error
    try:
        with os.fdopen(handle, "wb") as file:
            _remove_abandoned(target, file, partial)
            file.writelines(pieces)
        if kept_mode is not None:
            os.chmod(partial, kept_mode)  # with the bits the umask took when it was made
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _created_beside(target: Path, mode: int) -> tuple[int, Path]:
    """A new file beside ``target``, open to be written, and its path; made with ``mode``
    less the umask, as ``open()`` makes a file, which learns the umask without setting it
    (``os.umask`` sets it, for a moment, for every thread)."""
    shown = _partial_stem(target)
    for _ in range(tempfile.TMP_MAX):
        partial = target.with_name(f".{shown}.{os.urandom(4).hex()}.partial")
        with contextlib.suppress(FileExistsError):
            return os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), partial
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", str(target.parent))


ABANDONED_AFTER = 3600
"""Seconds after its last write that a partial file no writer holds is taken as left by a
writer killed outright (``kill -9``, a machine that went down)."""


def _remove_abandoned(target: Path, own: IO[bytes], own_path: Path) -> None:
    """Lock ``own``, the partial file at ``own_path`` this writer writes, then remove the
    other partial files of ``target`` that were last written over `ABANDONED_AFTER`
    seconds ago and whose lock no writer holds: a living writer holds it while it writes
    (a lock goes with its process), and one that just made its file and has yet to take
    the lock made it too recently. Nothing is removed where locks cannot be taken."""
    if sys.platform == "win32":
        return
    try:
        fcntl.flock(own, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # a file system without locks: no lock tells a live writer
        return
    named = re.compile(rf"\.{re.escape(_partial_stem(target))}\.[0-9a-f]{{8}}\.partial")
    with contextlib.suppress(OSError), os.scandir(target.parent) as entries:
        for entry in entries:
            if named.fullmatch(entry.name) and entry.path != str(own_path):
                _remove_if_abandoned(Path(entry.path))


def _remove_if_abandoned(partial: Path) -> None:
    try:
        with partial.open("rb") as file:
            if time.time() - os.fstat(file.fileno()).st_mtime < ABANDONED_AFTER:
                return
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            partial.unlink()
    except OSError:  # held (BlockingIOError), gone, or not ours to read or remove
        return


def _partial_stem(target: Path) -> str:
    """The start of the report's name its partial files are named with: a name as long as
    the file system allows, and 18 more characters, would be too long (48 characters are
    at most 192 bytes)."""
    return target.name[:48]


def _write_pieces(path: Path, pieces: Iterable[bytes]) -> None:
    with path.open("wb") as file:
        file.writelines(pieces)


def _copy_when_whole(path: Path, pieces: Iterable[bytes]) -> None:
    """Write ``pieces`` over the file at ``path`` once they are all made: they are gathered
    in the system's temporary folder first, so a render that fails or is interrupted leaves
    the previous report as it was. The file's room for them is reserved before a byte of it
    changes, and the previous report, copied aside (unless it may not be read), is put
    back if the copy stops anyway (a file system that reserves nothing, Ctrl-C)."""
    with tempfile.TemporaryFile() as whole, tempfile.TemporaryFile() as previous:
        whole.writelines(pieces)
        with _opened_in_place(path) as (file, readable):
            if readable:
                shutil.copyfileobj(file, previous)
            _reserve(file, whole.tell())
            try:
                _overwrite(file, whole)
            except BaseException:
                if readable:
                    _overwrite(file, previous)
                raise


@contextlib.contextmanager
def _opened_in_place(path: Path) -> Iterator[tuple[IO[bytes], bool]]:
    """The file at ``path`` open to be written over, not truncated, and whether it can be
    read (a report of mode 0200 cannot)."""
    file: IO[bytes]
    try:
        file, readable = path.open("r+b"), True
    except PermissionError:
        file, readable = os.fdopen(os.open(path, os.O_WRONLY), "wb"), False
    with file:
        yield file, readable


def _reserve(file: IO[bytes], size: int) -> None:
    """Allocate ``size`` bytes of ``file`` on its disk (a full disk fails here, the file
    as it was but for its length), where the system can."""
    allocate = getattr(os, "posix_fallocate", None)  # not on macOS
    if allocate is None or size == 0:
        return
    length = os.fstat(file.fileno()).st_size
    try:
        allocate(file.fileno(), 0, size)
    except OSError as error:
        os.ftruncate(file.fileno(), length)
        if error.errno not in (errno.EOPNOTSUPP, errno.EINVAL):  # a file system without it
            raise


def _overwrite(file: IO[bytes], source: IO[bytes]) -> None:
    """``file``'s bytes replaced by all of ``source``'s."""
    source.seek(0)
    file.seek(0)
    shutil.copyfileobj(source, file)
    file.truncate()
    file.flush()


def _mode_of(path: Path) -> int | None:
    """The mode of the file at ``path``; None when there is none."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return None


_UNWRITABLE_ADVICE = {
    errno.ENOENT: "its folder {folder} does not exist: create it, or pass another --output",
    errno.ENOTDIR: "{folder} is not a folder: pass another --output",
    errno.EROFS: "its folder {folder} is on a read-only file system: pass an --output on a "
                 "writable one",
    errno.ENOSPC: "make room on its disk, or pass an --output on another disk",
    errno.EDQUOT: "make room within your quota, or pass an --output on another disk",
    errno.EACCES: "make its folder {folder} (or the file) writable, or pass another --output",
    errno.EPERM: "make its folder {folder} (or the file) writable, or pass another --output",
    errno.ENAMETOOLONG: "pass an --output of shorter names",
}
"""What to do when a report cannot be written, by the errno of why."""


def _folder_in_the_way(path: Path, number: int | None) -> str:
    """The folder of the file ``path`` leads to (a symlink followed), or, when the file
    system said a folder is not one (ENOTDIR), the first of its folders that is not."""
    folder = Path(os.path.realpath(path)).parent if os.path.islink(path) else path.parent
    if number == errno.ENOTDIR:  # os.path's tests: False, not an error, for a name too long
        return next((ancestor.as_posix() for ancestor in (*reversed(folder.parents), folder)
                     if not os.path.isdir(ancestor)), folder.as_posix())
    return folder.as_posix()


def _looping_link(path: Path) -> Path:
    """The first of ``path``'s folders, or ``path`` itself, that is a symlink loop."""
    for candidate in (*reversed(path.parents), path):
        try:
            os.stat(candidate)
        except OSError as error:
            if error.errno == errno.ELOOP:
                return candidate
    return path


def why_unwritable(path: Path, error: OSError) -> str:
    """What is wrong with writing a report at ``path`` (``error`` said no), and what to do."""
    if error.errno == errno.ELOOP:
        loop = _looping_link(path)
        what = "it is" if loop == path else f"its folder {loop.as_posix()} is"
        return (f"{what} a symlink that leads back to itself ({error.strerror}); remove the "
                "link, or pass another --output")
    folder = _folder_in_the_way(path, error.errno)
    advice = _UNWRITABLE_ADVICE.get(error.errno or 0)
    if advice is not None:
        return f"{error.strerror}; {advice.format(folder=folder)}"
    if isinstance(error, NoFileBeside):  # a file system that refuses O_EXCL, or another step
        return (f"its folder {folder} refused the new file a report is written to before it "
                f"replaces the old one ({error.strerror}); pass an --output on another "
                "file system")
    return f"{error.strerror}; check that its folder exists and can be written, or pass " \
        "another --output"
