"""Split one computation over forked children (POSIX): the first part runs in the caller
(`fork_map`), or another step does (`fork_map_beside`).

A child inherits the caller's memory (the loaded symbols of both versions) instead of
rebuilding it, computes its part and sends the result back pickled through a pipe. A
child that fails, or dies, has its part redone in the caller, where an error, if any,
surfaces with its own traceback. Without ``os.fork`` everything runs in the caller.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from collections.abc import Callable, Sequence
from typing import TypeVar

Part = TypeVar("Part")
Result = TypeVar("Result")
Other = TypeVar("Other")

_FAILED = b"!"


def balanced(groups: Sequence[Sequence[Part]], parts: int) -> list[list[Part]]:
    """The groups' items in at most ``parts`` lists of about the same length, each group
    kept whole (largest first, each into the shortest list so far)."""
    lists: list[list[Part]] = [[] for _ in range(max(1, parts))]
    for group in sorted(groups, key=len, reverse=True):
        min(lists, key=len).extend(group)
    return [items for items in lists if items]


def can_fork() -> bool:
    return hasattr(os, "fork")


def fork_map(
    function: Callable[[Part], Result], parts: Sequence[Part],
    in_child: Callable[[], None] = lambda: None,
) -> list[Result]:
    """``[function(part) for part in parts]``, the parts after the first in forked
    children; ``in_child`` runs first in each child (e.g. to open its own connections)."""
    if len(parts) < 2 or not can_fork():
        return [function(part) for part in parts]
    first, rest = fork_map_beside(function, parts[1:], lambda: function(parts[0]), in_child)
    return [first, *rest]


def fork_map_beside(
    function: Callable[[Part], Result], parts: Sequence[Part], beside: Callable[[], Other],
    in_child: Callable[[], None] = lambda: None,
) -> tuple[Other, list[Result]]:
    """``beside()`` and ``[function(part) for part in parts]``: each part in a forked
    child while the caller computes ``beside()`` (another step, whose result stays here)."""
    if not parts or not can_fork():
        return beside(), [function(part) for part in parts]
    children: list[tuple[int, int] | None] = []
    try:
        children.extend(_start(function, part, in_child) for part in parts)
        other = beside()
        return other, _collected(children, function, parts)
    except BaseException:
        _abandon([child for child in children if child is not None])
        raise


def _collected(
    children: list[tuple[int, int] | None], function: Callable[[Part], Result],
    parts: Sequence[Part],
) -> list[Result]:
    """The result of each of ``parts`` from its child, in order, each child taken off
    ``children`` once waited for; a part whose child failed (or was never started, None)
    computed here."""
    results: list[Result] = []
    while children:
        child = children.pop(0)
        data = _receive(*child) if child is not None else _FAILED
        results.append(_result(data, function, parts[len(results)]))
    return results


def _start(
    function: Callable[[Part], Result], part: Part, in_child: Callable[[], None]
) -> tuple[int, int] | None:
    """A child computing ``part``: (pid, pipe to read), or None when the system cannot
    fork now (the caller then computes the part)."""
    reader, writer = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(reader)
        os.close(writer)
        return None
    if pid == 0:
        os.close(reader)
        _run_child(function, part, in_child, writer)
    os.close(writer)
    return pid, reader


def _run_child(
    function: Callable[[Part], Result], part: Part, in_child: Callable[[], None], writer: int
) -> None:
    """Never returns: the child must not go on running the caller's code."""
    data = _FAILED
    try:
        in_child()
        data = pickle.dumps(function(part), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException:  # noqa: BLE001 - any failure: the parent redoes this part
        data = _FAILED
    finally:
        try:
            with os.fdopen(writer, "wb") as pipe:
                pipe.write(data)
        finally:
            os._exit(0)


def _abandon(children: list[tuple[int, int]]) -> None:
    """Stop and reap the children whose results are no longer wanted."""
    for pid, reader in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.close(reader)
        os.waitpid(pid, 0)


def _receive(pid: int, reader: int) -> bytes:
    """What the child wrote, once it has exited."""
    try:
        with os.fdopen(reader, "rb") as pipe:
            return pipe.read()
    finally:
        os.waitpid(pid, 0)


def _result(data: bytes, function: Callable[[Part], Result], part: Part) -> Result:
    if data not in (_FAILED, b""):
        try:
            return pickle.loads(data)
        except (pickle.UnpicklingError, EOFError):  # the child died while writing
            pass
    return function(part)
