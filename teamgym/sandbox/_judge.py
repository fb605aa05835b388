"""The judge of a job's tests: runs the test code, calling the program in its own jail (stdlib only).

The judge never runs model-written program code. Its namespace holds the problem's own trusted code (the
``prelude``: the prompt's imports and helpers; then ``setup``) and, in place of the program's functions,
callables that send plain-data arguments to the program's process and rebuild its plain-data answer (exact
builtin types, bounded in depth and size: a float subclass, an object with a rigged ``__eq__`` or a huge reply
never get here). Only the entry point (or, without one, the names a test reads that nothing else defines: the host
lists them) comes from the program; helpers the tests use, ``math``, ``random``... are the judge's own.

Records, one JSON object per line on the status fd: ``{"program": "ok"}`` or ``{"program": "failed", "status",
"error"}`` first, then per test ``{"i", "value"}`` (``assert EXPR == LITERAL`` tests: the host compares the
value with the literal, which never reaches the judge), ``{"i", "ok": true}`` or ``{"i", "status", "error"}``.
The judge of model-written tests (the tester's) runs them in the same jail as a program: their records are
only as trustworthy as those tests, and they never share a judge with ground-truth tests.
"""

from __future__ import annotations

import builtins
import json
import os
import random
import signal

import _jail
import _wire

REPLIES_FD, REQUESTS_FD = 5, 6  # the judge reads the program's replies on 5 and sends calls on 6


class ProgramError(Exception):
    """The program's function raised an exception that is not a builtin one (or the program broke)."""


class _TestTimeout(BaseException):
    pass


def _on_alarm(signum: int, frame: object) -> None:
    raise _TestTimeout


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"[:2000]
    except BaseException:  # noqa: B036 - defensive: messages may hold the program's text
        return type(exc).__name__


def _report(record: dict) -> None:
    try:
        os.write(_jail.STATUS_FD, (json.dumps(record) + "\n").encode())
    except OSError:
        pass


def _raised(kind: object, message: object) -> BaseException:
    """The exception a call raises in the judge for the program's ``[type name, message]``."""
    text = str(message)[:2000] if type(message) is str else ""
    builtin = getattr(builtins, kind, None) if type(kind) is str else None
    if isinstance(builtin, type) and issubclass(builtin, Exception) and builtin.__module__ == "builtins":
        try:
            return builtin(text.partition(": ")[2] if text.startswith(f"{kind}: ") else text)
        except Exception:  # noqa: BLE001 - exception classes whose constructor wants more arguments
            pass
    return ProgramError(text or str(kind)[:100])


class Program:
    """The channel to the program's process: one call at a time, hostile replies refused."""

    def __init__(self) -> None:
        self.reader = _wire.FrameReader(REPLIES_FD)
        self.seq = 0
        self.broken = ""

    def hello(self, timeout: float) -> dict:
        """The program's hello after its top level ran: ``{"program": "ok"}`` or why not."""
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            message = self.reader.read()
        except _TestTimeout:
            return {"program": "failed", "status": "timeout", "error": "the program did not finish in time"}
        except (EOFError, OSError, _wire.WireError):
            return {"program": "failed", "status": "error", "error": "the program ended before the tests"}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if type(message) is dict and message.get("hello") == "ok":
            return {"program": "ok"}
        failed = message if type(message) is dict else {}
        status = failed.get("status") if failed.get("status") in ("error", "memory") else "error"
        error = failed.get("error") if type(failed.get("error")) is str else "the program failed"
        return {"program": "failed", "status": status, "error": error[:2000]}

    def call(self, name: str, args: tuple, kwargs: dict, handle: int | None = None) -> object:
        if self.broken:
            raise ProgramError(self.broken)
        try:
            request = {"name": name, "args": _wire.encode_value(list(args)), "kwargs": _wire.encode_value(kwargs)}
        except _wire.WireError as exc:
            raise TypeError(f"{name}() can only be called with plain data: {exc}") from None
        if handle is not None:
            request["handle"] = handle
        self.seq += 1
        request["seq"] = self.seq
        request["budget"] = signal.getitimer(signal.ITIMER_REAL)[0] or 3600.0
        try:
            _wire.write_frame(REQUESTS_FD, request)
            while True:
                reply = self.reader.read()
                if type(reply) is dict and reply.get("seq") == self.seq:
                    break
        except (EOFError, OSError):
            self.broken = f"the program ended during a call to {name}()"
            raise ProgramError(self.broken) from None
        except _wire.WireError as exc:
            self.broken = f"the program's answer was unreadable ({exc})"
            raise ProgramError(self.broken) from None
        if reply.get("timeout") is True:
            raise _TestTimeout
        if "raise" in reply:
            raised = reply["raise"]
            kind, message = (raised + [None, None])[:2] if type(raised) is list else (None, None)
            raise _raised(kind, message)
        if handle is None and type(reply.get("handle")) is int:
            return Remote(self, reply["handle"], name)
        try:
            value = _wire.decode_value(reply["value"])
        except (KeyError, _wire.WireError) as exc:
            raise ProgramError(f"{name}() returned no plain value ({exc})") from None
        self._write_back(args, reply.get("args"))
        self._write_back(kwargs, reply.get("kwargs"))
        return value

    @staticmethod
    def _write_back(sent: tuple | dict, after: object) -> None:
        """Apply the program's in-place changes to list, dict and set arguments."""
        if type(sent) is tuple and type(after) is list and len(after) == len(sent):
            pairs = zip(sent, after)
        elif type(sent) is dict and type(after) is dict:
            pairs = ((sent[k], after[k]) for k in sent if k in after)
        else:
            return
        for original, tagged in pairs:
            if tagged is None or type(original) not in (list, dict, set):
                continue
            try:
                new = _wire.decode_value(tagged)
            except _wire.WireError:
                continue
            if type(new) is not type(original) or new == original:
                continue
            if type(original) is list:
                original[:] = new
            else:
                original.clear()
                original.update(new)


class Remote:
    """An object of the program (made by calling one of its classes), left in the program's process.

    Its methods are called like the program's functions (plain data in and out); nothing else of it is
    reachable from here: it compares, hashes and prints as this stand-in, never as the program's object.
    """

    __slots__ = ("_program", "_handle", "_kind")

    def __init__(self, program: Program, handle: int, kind: str):
        self._program, self._handle, self._kind = program, handle, kind

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        program, handle = self._program, self._handle

        def method(*args: object, **kwargs: object) -> object:
            return program.call(name, args, kwargs, handle)

        method.__name__ = method.__qualname__ = name
        return method

    def __repr__(self) -> str:
        return f"<{self._kind} object of the program>"


def _callee(program: Program, name: str):
    def call(*args: object, **kwargs: object) -> object:
        return program.call(name, args, kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def run(spec: dict) -> int:
    """Judge ``spec["tests"]`` against the program; records go to the status fd. Returns the exit code.

    The global ``random`` is seeded (0) first, so tests that draw inputs from it draw the same ones every time.
    """
    signal.signal(signal.SIGALRM, _on_alarm)
    random.seed(0)
    tests, test_timeout = spec["tests"], float(spec["test_timeout"])
    entry_point = spec.get("entry_point")
    program = Program()
    base: dict = {"__name__": "__judge__", "__builtins__": builtins}
    try:  # the problem's own code, compiled and run while the program runs its top level
        signal.setitimer(signal.ITIMER_REAL, test_timeout)
        setup = compile(spec.get("setup") or "", "test_setup", "exec")
        compiled = [_compile(index, test) for index, test in enumerate(tests)]
        exec(compile(spec.get("prelude") or "", "prelude", "exec"), base)
        signal.setitimer(signal.ITIMER_REAL, 0)
    except BaseException as exc:  # noqa: B036 - a broken setup fails every test, it does not crash the judge
        signal.setitimer(signal.ITIMER_REAL, 0)
        setup, failure = None, exc
    hello = program.hello(float(spec["program_timeout"]))
    _report(hello)
    if hello["program"] != "ok":
        return 0
    if setup is not None:
        try:
            signal.setitimer(signal.ITIMER_REAL, test_timeout)
            if entry_point:
                base[entry_point] = base["candidate"] = _callee(program, entry_point)
            exec(setup, base)
            if entry_point:  # the setup may define a stub of the same name: the program's function wins
                base[entry_point] = base["candidate"] = _callee(program, entry_point)
            signal.setitimer(signal.ITIMER_REAL, 0)
        except BaseException as exc:  # noqa: B036
            signal.setitimer(signal.ITIMER_REAL, 0)
            setup, failure = None, exc
    if setup is None:
        for index in range(len(tests)):
            _report({"i": index, "status": "error", "error": "test setup failed: " + _describe(failure)})
        return 0
    for index, (test, code) in enumerate(zip(tests, compiled)):
        _report(_judge_one(index, test, code, base, program, entry_point, test_timeout))
    return 0


def _compile(index: int, test: dict) -> object:
    """A test's code object, or the SyntaxError (or other error) compiling it raised (it fails that test)."""
    if test["kind"] == "call":  # ENTRY(literals...): called as it is, no code
        return None
    value = test["kind"] == "value"
    try:
        return compile(test["expr"] if value else test["code"], f"test_{index}", "eval" if value else "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return exc


def _judge_one(
    index: int, test: dict, code: object, base: dict, program: Program, entry_point: str | None, budget: float
) -> dict:
    if isinstance(code, BaseException):
        return {"i": index, "status": "error", "error": _describe(code)}
    scope = dict(base)
    for name in test.get("names", ()):  # without an entry point: the program's functions the test calls
        if name not in scope:
            scope[name] = _callee(program, name)
    try:
        signal.setitimer(signal.ITIMER_REAL, budget)
        try:
            if test["kind"] == "call":
                value = scope[entry_point](*_wire.decode_value(test["args"]), **_wire.decode_value(test["kwargs"]))
            elif test["kind"] == "value":
                value = eval(code, scope)
            else:
                exec(code, scope)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _TestTimeout:
        return {"i": index, "status": "timeout", "error": f"the test ran past its time budget ({budget:g} s)"}
    except MemoryError:
        return {"i": index, "status": "memory", "error": "MemoryError"}
    except BaseException as exc:  # noqa: B036 - SystemExit inside a test fails that test, nothing more
        return {"i": index, "status": "error", "error": _describe(exc)}
    if test["kind"] == "exec":
        return {"i": index, "ok": True}
    try:
        return {"i": index, "value": _wire.encode_value(value)}
    except _wire.WireError as exc:
        return {"i": index, "status": "error", "error": f"the tested value is not plain data: {exc}"}
