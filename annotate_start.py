"""The ``annotate`` console script. A Ctrl-C in its first few tenths of a second, while
`annotate_cli` and the libraries it needs are imported, ends the run as one later does
(`annotate_cli.reports_errors`): one line, exit 130, not a traceback."""

from __future__ import annotations

import signal
import sys

INTERRUPTED = "Interrupted; nothing half-written was kept."


def main() -> None:
    try:
        from annotate_cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write(INTERRUPTED + "\n")
        sys.exit(128 + signal.SIGINT)
    run()
