"""The ``annotate`` console script. A Ctrl-C in its first few tenths of a second, while
`annotate_cli` and the libraries it needs are imported, ends the run as one later does
(`annotate_cli.reports_errors`): one line, exit 130, not a traceback.

A finished run ends without the interpreter's teardown (`_Ending`)."""

from __future__ import annotations

import atexit
import os
import signal
import sys

INTERRUPTED = "Interrupted; nothing half-written was kept."


def main() -> None:
    ending = _Ending()
    if not _exit_handlers_registered():
        atexit.register(ending.exit_now)  # runs last: the exit handlers go last in, first out
    try:
        from annotate_cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write(INTERRUPTED + "\n")
        sys.exit(128 + signal.SIGINT)
    try:
        run()
    except SystemExit as done:
        ending.exited, ending.status = True, done.code
        raise


def _exit_handlers_registered() -> bool:
    """Whether an exit handler was registered before the console script ran (by a
    ``sitecustomize`` or a ``.pth`` hook, coverage.py's for one): it would run after
    `_Ending`'s, that is never, so the run then ends with the usual teardown."""
    count = getattr(atexit, "_ncallbacks", None)
    return count is None or count() > 0


class _Ending:
    """How a run that exited with a status ends: once every other exit handler has run,
    the standard streams are flushed and the process exits. The interpreter's teardown,
    which frees each module and object one by one, took 11-25 ms of every command (of
    `annotate versions`' 0.09 s); the system takes the process's memory back at once.
    Every file annotate writes is closed by then (each in a ``with``), and the threads
    are joined: Python joins them before the exit handlers run. A run that ends with a
    traceback, or whose output cannot be flushed, gets the teardown as before (which
    reports the latter, exit 120)."""

    def __init__(self) -> None:
        self.exited = False
        self.status: object = None  # SystemExit's code: a status, None (0) or a message

    def exit_now(self) -> None:
        if not self.exited or not (self.status is None or isinstance(self.status, int)):
            return
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
        except (OSError, ValueError):
            return  # Python's own teardown reports it, as it did
        os._exit(self.status or 0)
