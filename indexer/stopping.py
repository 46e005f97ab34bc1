"""The signals that stop a run: Ctrl-C, and SIGTERM (a CI job cancelled, ``timeout``) and
SIGHUP (the terminal closed), which the CLI raises as Ctrl-C. The parser pool's workers
ignore them (the main process stops the run), and its shutdown notes them until it is
done."""

from __future__ import annotations

import signal

STOPPING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
