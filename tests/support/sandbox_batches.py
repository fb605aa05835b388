"""Record what reaches the sandbox pool: the code of every ``Sandbox.run_many`` batch, in order."""

from __future__ import annotations

import pytest

from teamgym.sandbox import Sandbox


def record_batches(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Patch ``Sandbox.run_many`` to append each batch's job code to the returned list, then run it."""
    batches: list[list[str]] = []
    original = Sandbox.run_many

    def recorded(self: Sandbox, jobs):
        jobs = list(jobs)
        batches.append([job.code for job in jobs])
        return original(self, jobs)

    monkeypatch.setattr(Sandbox, "run_many", recorded)
    return batches
