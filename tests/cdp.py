"""A headless Chromium driven over ``--remote-debugging-pipe`` (DevTools protocol, NUL-separated
JSON on file descriptors 3 and 4): standard library only, no websocket client needed."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from typing import Any, Dict, List, Optional

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-pipe",
)


def find_chromium() -> Optional[str]:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _onto_3_and_4(reads: int, writes: int) -> None:
    """In the child: the pipe ends on the descriptors Chromium's pipe mode reads (3) and writes (4)."""
    high_r, high_w = fcntl.fcntl(reads, fcntl.F_DUPFD, 10), fcntl.fcntl(writes, fcntl.F_DUPFD, 10)
    os.dup2(high_r, 3)
    os.dup2(high_w, 4)


class Browser:
    def __init__(self, binary: str) -> None:
        self.profile = tempfile.mkdtemp(prefix="ap-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            pass_fds=(3, 4),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=lambda: _onto_3_and_4(to_child_r, from_child_w),
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._next = 0
        self.events: List[Dict[str, Any]] = []

    def _read_message(self, deadline: float) -> Dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def send(
        self, method: str, params: Optional[Dict[str, Any]] = None, session: Optional[str] = None, timeout: float = 30.0
    ) -> Dict[str, Any]:
        self._next += 1
        ident = self._next
        message: Dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == ident:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 30.0, session: Optional[str] = None) -> Dict[str, Any]:
        """The first ``method`` event (of that tab's ``session`` when given: a second tab must not
        take the first tab's load event for its own)."""

        def wanted(event: Dict[str, Any]) -> bool:
            return event.get("method") == method and (session is None or event.get("sessionId") == session)

        for event in self.events:
            if wanted(event):
                return event
        deadline = time.monotonic() + timeout
        while True:
            event = self._read_message(deadline)
            self.events.append(event)
            if wanted(event):
                return event

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_child)
        os.close(self._from_child)
        shutil.rmtree(self.profile, ignore_errors=True)


def open_page(browser: Browser, url: str) -> str:
    """A new tab at ``url``, loaded, with console and log events recorded; its session id."""
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log"):
        browser.send(f"{domain}.enable", session=session)
    browser.send("Page.navigate", {"url": url}, session=session)
    browser.wait_event("Page.loadEventFired", session=session)
    return session


def evaluate(browser: Browser, session: str, expression: str) -> Any:
    result = browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session)
    if "exceptionDetails" in result:
        raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
    return result["result"].get("value")


def console_errors(browser: Browser) -> List[Dict[str, Any]]:
    """Every console error, uncaught exception and error log entry the page raised."""
    out = []
    for event in browser.events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            out.append(params)
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            out.append(params)
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            out.append(params)
    return out
