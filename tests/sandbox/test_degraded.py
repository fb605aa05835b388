"""The degraded mode (no namespaces, as on a kernel that refuses them): one warning, and as root the
per-server uid still kills escaping daemons and leaves nothing behind. Writes to world-writable folders
(/tmp, /dev/shm) are NOT stopped in this mode (documented in docs/sandbox.md), so no test tries them here."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator

import pytest

from teamgym.sandbox import Sandbox

from .conftest import OuterGuard, wait_clean
from .test_hostile import CANARY_DIR, HOSTILE, LEAVE_BEHIND, canary_dir  # noqa: F401 - the fixture

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="without root and namespaces nothing is contained")


@pytest.fixture(scope="module")
def degraded(guard: OuterGuard) -> Iterator[Sandbox]:
    with Sandbox(workers=1, namespaces=False) as box:
        box.run_python("pass")
        if guard.active:
            guard.adopt(box)
        yield box


def test_degraded_mode_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="teamgym.sandbox.pool"),
        Sandbox(workers=2, namespaces=False) as box,
    ):
        box.run_many(["pass"] * 4)
        assert box.isolation["pid_ns"] is False and box.isolation["warning"]
    assert len([r for r in caplog.records if "degraded" in r.getMessage()]) <= 1


@pytest.mark.parametrize(
    "name",
    [
        "daemonized_grandchild",
        "fork_bomb",
        "infinite_loop",
        "sigterm_ignored",
        "kill_parent",
        "close_all_fds",
    ],
)
def test_degraded_contains(degraded: Sandbox, name: str) -> None:
    code, statuses = HOSTILE[name]
    start = time.monotonic()
    result = degraded.run_python(code, timeout=1.0)
    assert result.status in statuses and time.monotonic() - start < 3.0
    assert wait_clean(degraded) == ([], [])


def test_degraded_daemon_never_writes(degraded: Sandbox) -> None:
    degraded.run_python(HOSTILE["daemonized_grandchild"][0])
    time.sleep(1.5)
    assert os.listdir(CANARY_DIR) == []


@pytest.mark.parametrize("name", sorted(LEAVE_BEHIND))
def test_degraded_jobs_leave_nothing_and_no_infra_error(degraded: Sandbox, name: str) -> None:
    result = degraded.run_python(LEAVE_BEHIND[name] + "print('done')", timeout=5.0)
    assert (result.status, result.stdout, result.infra_error) == ("ok", "done\n", None)
    after = degraded.run_python("import os\nprint(sorted(os.listdir('.')))")
    assert (after.stdout, after.infra_error) == ("[]\n", None)
