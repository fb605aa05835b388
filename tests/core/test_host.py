import os

import teamgym.core.host as host
from teamgym.sandbox import Sandbox


def test_available_cores_reads_the_affinity_mask_and_falls_back_to_the_cpu_count(monkeypatch):
    monkeypatch.setattr(host.os, "sched_getaffinity", lambda pid: {3}, raising=False)
    assert host.available_cores() == 1
    monkeypatch.delattr(host.os, "sched_getaffinity")
    monkeypatch.setattr(host.os, "cpu_count", lambda: 6)
    assert host.available_cores() == 6
    monkeypatch.setattr(host.os, "cpu_count", lambda: None)
    assert host.available_cores() == 1


def test_the_sandbox_pool_defaults_to_the_cores_the_process_may_use(monkeypatch):
    """A process pinned to one core (taskset, a cpuset) gets one fork server, not one per core of the machine."""
    monkeypatch.setattr(host.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    box = Sandbox()  # servers start lazily: nothing runs here
    try:
        assert box.workers == 1
    finally:
        box.close()
