"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
file descriptors 3 and 4, messages ended by NUL), for the HTML report's tests that need a
laid-out page: heights, scrolling, clicks. Standard library only; no port is opened."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
from pathlib import Path
from typing import Any

TIMEOUT = 120
"""Seconds to wait for a word from Chromium."""
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless Chromium with one page; ``with Browser(profile) as browser:``."""

    def __init__(self, profile: Path, width: int = 1280, height: int = 1000) -> None:
        to_chromium, from_us = os.pipe()
        to_us, from_chromium = os.pipe()
        self._process = subprocess.Popen(
            [CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-quic", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
             f"--window-size={width},{height}", "--remote-debugging-pipe", "about:blank"],
            pass_fds=(3, 4), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=lambda: (os.dup2(to_chromium, 3), os.dup2(from_chromium, 4)),
        )
        os.close(to_chromium)
        os.close(from_chromium)
        self._writer = os.fdopen(from_us, "wb", buffering=0)
        self._reader = os.fdopen(to_us, "rb", buffering=0)
        self._unread = b""
        self._last_id = 0
        self._events: list[dict[str, Any]] = []
        page = next(target for target in self._call("Target.getTargets")["targetInfos"]
                    if target["type"] == "page")
        self._session = self._call("Target.attachToTarget", targetId=page["targetId"],
                                   flatten=True)["sessionId"]
        self._call("Page.enable", self._session)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self._send("Browser.close", None, {})  # its reply may come after the pipe closes
        self._process.wait(timeout=60)
        self._writer.close()
        self._reader.close()

    def open(self, url: str) -> None:
        """Load ``url`` and wait for its load event."""
        self._events.clear()
        self._call("Page.navigate", self._session, url=url)
        self._wait_for("Page.loadEventFired")

    def media(self, media: str) -> None:
        """Lay the page out for ``media`` ("print", "screen")."""
        self._call("Emulation.setEmulatedMedia", self._session, media=media)

    def js(self, expression: str) -> Any:
        """The value of ``expression`` evaluated in the page."""
        result = self._call("Runtime.evaluate", self._session, expression=expression,
                            returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def _call(self, method: str, session: str | None = None, **params: Any) -> Any:
        self._send(method, session, params)
        while True:
            reply = self._read()
            if reply.get("id") == self._last_id:
                assert "error" not in reply, reply["error"]
                return reply["result"]
            self._events.append(reply)

    def _send(self, method: str, session: str | None, params: dict[str, Any]) -> None:
        self._last_id += 1
        message: dict[str, Any] = {"id": self._last_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self._writer.write(json.dumps(message).encode() + b"\0")

    def _wait_for(self, event: str) -> None:
        while not any(message.get("method") == event for message in self._events):
            self._events.append(self._read())

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._unread:
            readable, _, _ = select.select([self._reader], [], [], TIMEOUT)
            assert readable, f"Chromium said nothing for {TIMEOUT} s"
            chunk = self._reader.read(1 << 20)
            if not chunk:
                raise EOFError("Chromium closed its DevTools pipe")
            self._unread += chunk
        message, self._unread = self._unread.split(b"\0", 1)
        return dict(json.loads(message))
