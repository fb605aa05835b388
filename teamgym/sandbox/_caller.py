"""The server as its own judge, for tests that are literal calls (stdlib only).

Most tests are ``assert ENTRY(literal, ...) == LITERAL`` (HumanEval, MBPP, a tester's asserts). Such a test runs no
test code at all: the host parses the arguments and keeps the expected value, the server sends the calls to the
program's process (the same plain-data protocol a judge uses, see :mod:`_program`; all calls go at once and the
program answers them in turn, each under its own time budget) and passes the plain answers back to the host, which
compares. A job whose tests are all such calls needs no judge process. The server never decodes
the program's answers (the host does, defensively); it only frames them into the judge's record format.
"""

from __future__ import annotations

import json
import os
import struct
import time

import _wire

_HEADER = struct.Struct(">I")
_GRACE = 0.25  # seconds past a call's budget before the server stops waiting for the program's own timeout reply


class Caller:
    """Drives one program through its calls from the server's poll loop; records as a judge writes them."""

    def __init__(self, send_fd: int, reply_fd: int, entry_point: str, tests: list[dict], test_timeout: float):
        self.send_fd, self.reply_fd = send_fd, reply_fd
        self.entry_point, self.tests, self.budget = entry_point, tests, test_timeout
        self.records: list[str] = []
        self.index = -1  # the test in flight; -1 while the program runs its top level
        self.deadline = float("inf")  # the program's top level has its budget once its jail is up (``begin``)
        self.seq = 0  # the answer awaited (the test's index + 1)
        self.done = False
        self.inbox = bytearray()
        self.outbox = bytearray()
        os.set_blocking(send_fd, False)
        for index, test in enumerate(tests):  # all at once: the program answers them in turn, without waiting on us
            call = {"seq": index + 1, "name": entry_point, "args": test["args"], "kwargs": test["kwargs"]}
            body = json.dumps(dict(call, budget=test_timeout), separators=(",", ":")).encode()
            self.outbox += _HEADER.pack(len(body)) + body
        self.flush()

    # ------------------------------------------------------------------------------------------ events
    def on_data(self, chunk: bytes) -> None:
        self.inbox += chunk
        while not self.done and len(self.inbox) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self.inbox)
            if size > _wire.MAX_FRAME:
                return self._broken("the program's answer was over the size limit")
            if len(self.inbox) < _HEADER.size + size:
                return
            body = bytes(self.inbox[_HEADER.size : _HEADER.size + size])
            del self.inbox[: _HEADER.size + size]
            try:
                message = _wire.loads(body)
            except _wire.WireError:
                return self._broken("the program's answer was unreadable")
            self._message(message if type(message) is dict else {})

    def on_eof(self) -> None:
        if not self.done:
            if self.index < 0:
                self._record({"program": "failed", "status": "error", "error": "the program ended before the tests"})
                self.done = True
            else:
                self._broken("the program ended during a call")

    def begin(self, now: float) -> None:
        """The program's jail is up: its top level has ``test_timeout`` seconds from ``now``."""
        if self.index < 0 and not self.done:
            self.deadline = now + self.budget

    def on_time(self, now: float) -> None:
        if self.done or now < self.deadline:
            return
        if self.index < 0:
            self._record({"program": "failed", "status": "timeout", "error": "the program did not finish in time"})
            self.done = True
            return
        error = f"the test ran past its time budget ({self.budget:g} s)"
        self._record({"i": self.index, "status": "timeout", "error": error})
        self._next()

    def flush(self) -> None:
        """Write what the pipe takes of the calls waiting to go out."""
        try:
            written = os.write(self.send_fd, self.outbox)
        except BlockingIOError:
            return
        except OSError:  # the program closed its end: its replies will say how it ended
            self.outbox.clear()
            return
        del self.outbox[:written]

    # ------------------------------------------------------------------------------------------ protocol
    def _message(self, message: dict) -> None:
        if self.index < 0:
            if message.get("hello") == "ok":
                self._record({"program": "ok"})
                self._next()
                return
            status = message.get("status") if message.get("status") in ("error", "memory") else "error"
            error = message.get("error") if type(message.get("error")) is str else "the program failed"
            self._record({"program": "failed", "status": status, "error": error[:2000]})
            self.done = True
            return
        if message.get("seq") != self.seq:
            return  # the late answer to a call that timed out
        self._record(self._verdict(message))
        self._next()

    def _verdict(self, reply: dict) -> dict:
        if reply.get("timeout") is True:
            error = f"the test ran past its time budget ({self.budget:g} s)"
            return {"i": self.index, "status": "timeout", "error": error}
        if "raise" in reply:
            raised = reply["raise"] if type(reply["raise"]) is list else []
            kind = raised[0] if raised and type(raised[0]) is str else "Exception"
            message = raised[1] if len(raised) > 1 and type(raised[1]) is str else kind
            return {"i": self.index, "status": "memory" if kind == "MemoryError" else "error", "error": message[:2000]}
        if "value" in reply:
            return {"i": self.index, "value": reply["value"]}
        return {"i": self.index, "status": "error", "error": f"{self.entry_point}() returned no plain value"}

    def _next(self) -> None:
        """The next call's clock starts now: its request is already in the program's channel."""
        self.index += 1
        self.seq = self.index + 1
        self.deadline = time.monotonic() + self.budget + _GRACE
        if self.index >= len(self.tests):
            self.done = True

    def _broken(self, why: str) -> None:
        if self.index < 0:
            self._record({"program": "failed", "status": "error", "error": why})
        for index in range(max(self.index, 0), len(self.tests)):
            self._record({"i": index, "status": "error", "error": why})
        self.done = True

    @property
    def closed(self) -> bool:
        return self.send_fd < 0

    def close(self) -> None:
        """Close both channels (the program then sees the end of its calls and exits). Idempotent."""
        for name in ("send_fd", "reply_fd"):
            fd = getattr(self, name)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)

    def _record(self, record: dict) -> None:
        try:
            line = json.dumps(record, separators=(",", ":"))
        except RecursionError:  # an answer nested deeper than the encoder goes (it decoded one frame higher up)
            line = json.dumps({"i": record.get("i"), "status": "error", "error": "the answer is nested too deeply"})
        self.records.append(line)
