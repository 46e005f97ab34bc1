"""fork_map: parts after the first run in forked children; failures are redone here.
fork_map_beside: every part in a child while the caller computes another step."""

from __future__ import annotations

import os

import pytest

from annotations.forking import balanced, can_fork, fork_map, fork_map_beside

pytestmark = pytest.mark.skipif(not can_fork(), reason="needs os.fork")

PARENT = os.getpid()


def where(part: int) -> tuple[int, int]:
    return part * part, os.getpid()


def test_parts_after_the_first_run_in_children_and_come_back_in_order() -> None:
    results = fork_map(where, [1, 2, 3, 4])
    assert [square for square, _ in results] == [1, 4, 9, 16]
    pids = [pid for _, pid in results]
    assert pids[0] == PARENT
    assert PARENT not in pids[1:] and len(set(pids)) == 4


def test_in_child_runs_in_each_child_only() -> None:
    marks: list[int] = []
    results = fork_map(lambda part: (part, list(marks)), [0, 1, 2],
                       in_child=lambda: marks.append(os.getpid()))
    assert results[0] == (0, [])
    assert [len(seen) for _, seen in results[1:]] == [1, 1]
    assert marks == []  # the children's appends stayed in the children


def _fails_in_children(part: int) -> tuple[int, int]:
    if os.getpid() != PARENT:
        raise RuntimeError("only in a child")
    return where(part)


def _dies_in_children(part: int) -> tuple[int, int]:
    if os.getpid() != PARENT:
        os._exit(3)  # killed, nothing written
    return where(part)


@pytest.mark.parametrize("function", [_fails_in_children, _dies_in_children],
                         ids=["child-raises", "child-dies"])
def test_a_failed_child_part_is_redone_by_the_caller(function) -> None:
    assert fork_map(function, [1, 2, 3]) == [(1, PARENT), (4, PARENT), (9, PARENT)]


def test_an_error_in_the_callers_part_propagates_and_children_are_reaped(
    forks: list[int],
) -> None:
    def fails_here(part: int) -> int:
        if os.getpid() == PARENT:
            raise ValueError(f"part {part}")
        return part

    with pytest.raises(ValueError, match="part 1"):
        fork_map(fails_here, [1, 2, 3])
    assert len(forks) == 2
    for pid in forks:  # no child left behind
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_large_results_do_not_block_the_pipe() -> None:
    results = fork_map(lambda part: bytes(part) * 3, [1 << 20, 1 << 20])
    assert [len(result) for result in results] == [3 << 20, 3 << 20]


def test_one_part_forks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("forked"))
    assert fork_map(where, [5]) == [(25, PARENT)]


def test_beside_runs_in_the_caller_while_every_part_runs_in_a_child() -> None:
    other, results = fork_map_beside(where, [1, 2, 3], lambda: ("beside", os.getpid()))
    assert other == ("beside", PARENT)
    assert [square for square, _ in results] == [1, 4, 9]
    pids = [pid for _, pid in results]
    assert PARENT not in pids and len(set(pids)) == 3


@pytest.mark.parametrize("function", [_fails_in_children, _dies_in_children],
                         ids=["child-raises", "child-dies"])
def test_beside_a_failed_child_part_is_redone_by_the_caller(function) -> None:
    assert fork_map_beside(function, [1, 2], lambda: "beside") == (
        "beside", [(1, PARENT), (4, PARENT)])


def test_an_error_beside_propagates_and_children_are_reaped(forks: list[int]) -> None:
    def fails() -> None:
        raise ValueError("beside")

    with pytest.raises(ValueError, match="beside"):
        fork_map_beside(where, [1, 2], fails)
    assert len(forks) == 2
    for pid in forks:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_no_parts_fork_nothing_beside(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("forked"))
    assert fork_map_beside(where, [], lambda: "beside") == ("beside", [])


@pytest.mark.parametrize(
    ("groups", "parts", "expected"),
    [
        pytest.param([[1, 2, 3], [4], [5, 6]], 2, [[1, 2, 3], [5, 6, 4]], id="largest-first"),
        pytest.param([[1], [2]], 4, [[1], [2]], id="fewer-groups-than-parts"),
        pytest.param([[1, 2]], 1, [[1, 2]], id="one-part"),
        pytest.param([], 2, [], id="nothing"),
    ],
)
def test_balanced_keeps_groups_whole(groups: list, parts: int, expected: list) -> None:
    assert balanced(groups, parts) == expected
