"""The program side of a job: run model-written code as ``__main__``, then (for tests) serve calls (stdlib only).

A plain job runs the code and exits with its exit code. A job with tests runs the code's top level, says hello to
its judge (``{"hello": "ok"}`` or ``{"hello": "failed", ...}``) and then answers calls until the judge is done:
each request ``{"seq", "name", "args", "kwargs", "budget"}`` calls the program's global ``name`` with plain-data
arguments under a time budget, and each reply is ``{"seq", "value"}`` (plus ``"args"``/``"kwargs"``: the list,
dict and set arguments as the call left them, so that in-place changes reach the judge), ``{"seq", "raise":
[type name, message]}`` or ``{"seq", "timeout": true}``. Calling one of the program's classes (LeetCode's
``Solution()``) answers ``{"seq", "handle": n}`` instead: the object stays here, and ``{"handle": n, "name":
method}`` calls its methods. Nothing in this process is trusted: the judge treats
every reply as hostile data.
"""

from __future__ import annotations

import json
import linecache
import os
import signal
import sys
import traceback
import types

import _jail
import _wire

REQUESTS_FD, REPLIES_FD = 5, 6  # a serving program reads calls on 5 and answers on 6
_MUTABLE = (list, dict, set)


def describe(exc: BaseException) -> str:
    """``Type: message`` of an exception, capped, whatever its ``__str__`` does."""
    try:
        return f"{type(exc).__name__}: {exc}"[:2000]
    except BaseException:  # noqa: B036 - a hostile __str__
        return f"{type(exc).__name__} (its message could not be read)"


def _print_exception(exc: BaseException) -> None:
    """Print the traceback without the sandbox's own frame, as ``python solution.py`` would."""
    try:
        traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None)
    except BaseException:  # noqa: B036 - hostile exception objects or a closed stderr
        pass


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    try:
        print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: B036
        pass
    return 1


def _report(record: dict) -> None:
    try:
        os.write(_jail.STATUS_FD, (json.dumps(record) + "\n").encode())
    except OSError:
        pass


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:  # noqa: B036 - a closed or hijacked stream must not stop the exit
            pass


def _module(code: str) -> types.ModuleType:
    module = types.ModuleType("__main__")
    module.__file__ = "solution.py"
    sys.modules["__main__"] = module
    sys.argv = ["solution.py"]
    linecache.cache["solution.py"] = (len(code), None, code.splitlines(True), "solution.py")
    return module


def run(spec: dict) -> int:
    """Run ``spec["code"]``; with ``spec["serve"]``, then answer the judge's calls. Returns the exit code."""
    code = spec["code"]
    module = _module(code)
    serving = bool(spec.get("serve"))
    # Kept before the program runs: it may patch any module, but not these references.
    hello = Server(module) if serving else None
    try:
        exec(compile(code, "solution.py", "exec"), module.__dict__)
    except SystemExit as exc:
        exit_code = _exit_code(exc)
        if hello is not None:
            hello.failed("error", f"the program exited (SystemExit({exc.code!r:.200})) before the tests")
            exit_code = exit_code or 1
    except MemoryError as exc:
        _report({"memory": True})
        _print_exception(exc)
        exit_code = 1
        if hello is not None:
            hello.failed("memory", "MemoryError")
    except BaseException as exc:  # noqa: B036 - the program's own error: shown to it as Python would
        _print_exception(exc)
        exit_code = 1
        if hello is not None:
            hello.failed("error", describe(exc))
    else:
        exit_code = 0
        if hello is not None:
            _flush()
            hello.serve()
    _flush()
    return exit_code


class _CallTimeout(BaseException):
    pass


def _on_alarm(signum: int, frame: object) -> None:
    raise _CallTimeout


class Server:
    """Answers the judge's calls; every reference it uses is taken before the program runs."""

    def __init__(self, module: types.ModuleType):
        self.globals = module.__dict__
        self.reader = _wire.FrameReader(REQUESTS_FD)
        self.write = _wire.write_frame
        self.encode, self.decode, self.wire_error = _wire.encode_value, _wire.decode_value, _wire.WireError
        self.set_handler, self.setitimer, self.timer = signal.signal, signal.setitimer, signal.ITIMER_REAL
        self.callable, self.type, self.isinstance = callable, type, isinstance
        self.handles: dict[int, object] = {}  # objects made by calling the program's classes, by handle

    def failed(self, status: str, error: str) -> None:
        self._send({"hello": "failed", "status": status, "error": error})

    def _send(self, message: dict) -> None:
        try:
            self.write(REPLIES_FD, message)
        except (OSError, ValueError, TypeError):
            pass

    def serve(self) -> None:
        self._send({"hello": "ok"})
        while True:
            try:
                request = self.reader.read()
            except (EOFError, OSError, self.wire_error):
                return
            if self.type(request) is not dict:
                return
            self._send(self._answer(request))

    def _answer(self, request: dict) -> dict:
        seq = request.get("seq")
        try:
            name, budget = request["name"], float(request["budget"])
            args, kwargs = self.decode(request["args"]), self.decode(request["kwargs"])
            if self.type(name) is not str or self.type(args) is not list or self.type(kwargs) is not dict:
                raise TypeError
            owner = request.get("handle")
        except (KeyError, TypeError, ValueError):
            return {"seq": seq, "raise": ["TypeError", "malformed call"]}
        if owner is None:
            function = self.globals.get(name)
        elif owner in self.handles and not name.startswith("__"):
            try:
                function = getattr(self.handles[owner], name)
            except BaseException as exc:  # noqa: B036 - the program's own attribute lookup failed
                return {"seq": seq, "raise": [self.type(exc).__name__[:100], describe(exc)]}
        else:
            function = None
        if function is None or not self.callable(function):
            return {"seq": seq, "raise": ["NameError", f"the program defines no function {str(name)[:100]!r}"]}
        try:
            self.set_handler(signal.SIGALRM, _on_alarm)
            self.setitimer(self.timer, max(budget, 1e-3))
            try:
                value = function(*args, **kwargs)
            finally:
                self.setitimer(self.timer, 0)
        except _CallTimeout:
            return {"seq": seq, "timeout": True}
        except BaseException as exc:  # noqa: B036 - any failure of the call is reported, never fatal here
            return {"seq": seq, "raise": [self.type(exc).__name__[:100], describe(exc)]}
        if owner is None and self.isinstance(function, type):  # a class (LeetCode's Solution): an opaque handle
            self.handles[len(self.handles) + 1] = value
            return {"seq": seq, "handle": len(self.handles)}
        try:
            reply = {"seq": seq, "value": self.encode(value)}
        except self.wire_error as exc:
            return {"seq": seq, "raise": ["TypeError", f"the return value: {exc}"]}
        reply["args"] = [self._after(a) for a in args]
        reply["kwargs"] = {k: self._after(v) for k, v in kwargs.items()}
        return reply

    def _after(self, value: object) -> object:
        if self.type(value) not in _MUTABLE:
            return None
        try:
            return self.encode(value)
        except self.wire_error:
            return None
