"""The job's clock starts when its jail is up: a host too busy to bring the jail up in time is never the job's fault.

The server's modules import each other by their bare names (the server runs ``-s -S`` with the package folder on its
path), so these tests put that folder on ``sys.path`` the same way.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

import teamgym.sandbox

sys.path.insert(0, str(Path(teamgym.sandbox.__file__).parent))
import _jail  # noqa: E402
import _supervise  # noqa: E402


def _child(delay_ready: float | None, run: float) -> _supervise.Proc:
    """A process that writes READY after ``delay_ready`` seconds (never if None), then runs ``run`` seconds."""
    out, status = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(out[0])
            os.close(status[0])
            if delay_ready is not None:
                time.sleep(delay_ready)
                os.write(status[1], _jail.READY)
            time.sleep(run)
        finally:
            os._exit(0)
    os.close(out[1])
    os.close(status[1])
    return _supervise.Proc("program", pid, {"stdout": out[0], "status": status[0]}, {"stdout": 1 << 16, "status": 64})


def _close(proc: _supervise.Proc) -> None:
    os.close(proc.pidfd)
    for fd in proc.pipes.values():
        os.close(fd)


def test_the_timeout_counts_from_ready_not_from_the_start():
    proc = _child(delay_ready=0.6, run=0.3)  # 0.9 s in all, 0.3 s of it its own
    try:
        _supervise.supervise([proc], timeout=0.6)
        assert proc.verdict is None and proc.ready
        assert os.waitstatus_to_exitcode(proc.status) == 0
    finally:
        _close(proc)


def test_a_job_still_times_out_on_its_own_time():
    proc = _child(delay_ready=0.0, run=5.0)
    try:
        tic = time.monotonic()
        _supervise.supervise([proc], timeout=0.3)
        assert proc.verdict == "timeout" and time.monotonic() - tic < 3.0
    finally:
        _close(proc)


def test_a_jail_that_never_comes_up_is_killed_unready(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(_supervise, "SETUP_SECONDS", 0.3)
    proc = _child(delay_ready=None, run=5.0)
    try:
        _supervise.supervise([proc], timeout=10.0)
        assert proc.verdict == "setup" and not proc.ready
    finally:
        _close(proc)
