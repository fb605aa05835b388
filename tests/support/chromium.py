"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``): stdlib only.

Chromium reads protocol commands from its fd 3 and writes replies and events to its fd 4, each message a JSON
object ended by a NUL byte. No websocket, no chromedriver, no browser download: Debian's ``chromium`` package is
enough (``apt-get install -y chromium``).

>>> with Chromium() as browser:                                         # doctest: +SKIP
...     page = browser.open("file:///tmp/report.html")
...     page.evaluate("document.title"), page.console_errors
('teamgym inspect', [])
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["Chromium", "Page", "find_chromium"]

_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """The path of a Chromium or Chrome binary on ``PATH`` (``$CHROMIUM`` first), or None."""
    for name in (os.environ.get("CHROMIUM"), *_NAMES):
        if name and (path := shutil.which(name)):
            return path
    return None


class Chromium:
    """One headless browser process; :meth:`open` gives a :class:`Page` per URL.

    Args:
        binary: the browser to run (default :func:`find_chromium`).
        width, height: the window size pages are laid out and captured at.
        timeout: seconds to wait for any one protocol reply.
    """

    def __init__(self, binary: str | None = None, *, width: int = 1400, height: int = 900, timeout: float = 60.0):
        self.binary = binary or find_chromium()
        if self.binary is None:
            raise FileNotFoundError("no chromium on PATH: apt-get install -y chromium (or set $CHROMIUM)")
        self.width, self.height, self.timeout = width, height, timeout
        self._profile = tempfile.mkdtemp(prefix="teamgym-chromium-")
        to_browser_r, self._to_browser = _high_pipe()
        self._from_browser, from_browser_w = _high_pipe()
        flags = [
            "--headless",
            "--remote-debugging-pipe",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--mute-audio",
            f"--user-data-dir={self._profile}",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        # The browser reads commands on its fd 3 and writes on its fd 4: bash wires our pipe ends there (dash's
        # redirections take one-digit fds only).
        wiring = f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w}'
        self._process = subprocess.Popen(
            ["bash", "-c", wiring, self.binary, *flags],
            pass_fds=(to_browser_r, from_browser_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next_id = 0
        self._lock = threading.Lock()
        self._replies: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._events: dict[str, queue.Queue[dict[str, Any]]] = {}
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the browser and remove its profile directory."""
        if self._process.poll() is None:
            try:
                self.send("Browser.close")
            except (OSError, TimeoutError):
                pass
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """Send one protocol command and wait for its result; raises ``RuntimeError`` on a protocol error."""
        with self._lock:
            self._next_id += 1
            ident = self._next_id
            self._replies[ident] = queue.Queue()
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        try:
            reply = self._replies[ident].get(timeout=self.timeout)
        except queue.Empty:
            raise TimeoutError(f"no reply to {method} within {self.timeout} s") from None
        finally:
            del self._replies[ident]
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def events(self, session: str) -> queue.Queue[dict[str, Any]]:
        """The queue of protocol events of one page session, in arrival order."""
        with self._lock:
            return self._events.setdefault(session, queue.Queue())

    def open(self, url: str) -> Page:
        """A new tab on ``url``, once its load event has fired."""
        target = self.send("Target.createTarget", {"url": "about:blank"})
        session = self.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})["sessionId"]
        page = Page(self, session)
        page.navigate(url)
        return page

    def _read_loop(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if "id" in message:
                    waiting = self._replies.get(message["id"])
                    if waiting is not None:
                        waiting.put(message)
                elif "sessionId" in message:
                    self.events(message["sessionId"]).put(message)


def _high_pipe() -> tuple[int, int]:
    """``os.pipe()`` with both ends moved to fds >= 10, clear of the 3 and 4 the browser's ends are wired to."""
    ends = []
    for fd in os.pipe():
        ends.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10))
        os.close(fd)
    return ends[0], ends[1]


class Page:
    """One tab: navigate, evaluate JavaScript, take screenshots; collects console errors, uncaught exceptions and the
    URL of every request the page makes."""

    def __init__(self, browser: Chromium, session: str):
        self.browser = browser
        self.session = session
        self.console_errors: list[str] = []
        self.requests: list[str] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": browser.width, "height": browser.height, "deviceScaleFactor": 1, "mobile": False},
        )

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A protocol command in this tab's session."""
        return self.browser.send(method, params, session=self.session)

    def navigate(self, url: str) -> float:
        """Load ``url`` and wait for its load event; returns the seconds from the request to that event."""
        started = time.perf_counter()
        self.send("Page.navigate", {"url": url})
        self.wait_for_event("Page.loadEventFired")
        return time.perf_counter() - started

    def wait_for_event(self, method: str) -> dict[str, Any]:
        """Wait for the next event named ``method`` (collecting console errors seen on the way)."""
        deadline = time.monotonic() + self.browser.timeout
        events = self.browser.events(self.session)
        while True:
            try:
                event = events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"no {method} within {self.browser.timeout} s") from None
            self._note(event)
            if event.get("method") == method:
                return event

    def drain(self) -> None:
        """Read the events queued so far (so that ``console_errors`` is up to date)."""
        events = self.browser.events(self.session)
        while True:
            try:
                self._note(events.get_nowait())
            except queue.Empty:
                return

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression (promises awaited); raises ``RuntimeError`` if it throws."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise RuntimeError(f"{expression!r} threw: {details.get('exception', {}).get('description', details)}")
        self.drain()
        return result["result"].get("value")

    def wait_until(self, expression: str, timeout: float = 10.0) -> Any:
        """Poll a JavaScript expression until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression!r} still falsy after {timeout} s")
            time.sleep(0.05)

    def screenshot(self, path: str | Path, *, full_page: bool = False) -> Path:
        """Write a PNG of the viewport (or of the whole page) to ``path``."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            metrics = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params.update(
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": metrics["width"], "height": metrics["height"], "scale": 1},
            )
        data = self.send("Page.captureScreenshot", params)["data"]
        path = Path(path)
        path.write_bytes(base64.b64decode(data))
        return path

    def _note(self, event: dict[str, Any]) -> None:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.console_errors.append(details.get("exception", {}).get("description") or details.get("text", ""))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
        elif method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.console_errors.append(params["entry"].get("text", ""))
