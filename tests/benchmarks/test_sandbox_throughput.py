"""benchmarks/sandbox_throughput.py: its per-process breakdown adds up and checks the outputs, on a few jobs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _table(*args: str) -> list[list[str]]:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sandbox_throughput.py"), *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("| ") and not line.startswith("| program")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


@pytest.mark.timeout(300)
def test_breakdown_counts_every_kind_of_process():
    from teamgym.sandbox import Sandbox

    with Sandbox(workers=1) as box:
        has_zygote = box.isolation["zygote"]
    rows = _table("--breakdown", "--jobs", "40")
    assert [(r[0], r[1]) for r in rows] == [("trivial", "(a)"), ("trivial", "(c)"), ("HumanEval 8 asserts", "(a)"),
                                           ("HumanEval 8 asserts", "(c)")]
    for _program, runner, total, host, server, zygote, jobs, faults in rows:
        parts = [float(host), float(server), float(jobs)] + ([float(zygote)] if runner == "(a)" else [])
        assert float(total) == pytest.approx(sum(parts), abs=0.005 * (len(parts) + 1))
        # every job is a process of its own in both runners, and (a)'s are cloned by the zygote where there is one
        assert float(jobs) > 0 and float(faults) > 10
        assert (zygote == "") if runner == "(c)" else (float(zygote) > 0) == has_zygote


@pytest.mark.timeout(300)
def test_breakdown_runs_the_runners_asked_for():
    assert [(r[0], r[1]) for r in _table("--breakdown", "--jobs", "20", "--runners", "c")] == [
        ("trivial", "(c)"), ("HumanEval 8 asserts", "(c)")]


@pytest.mark.parametrize("args", [["--workers", "2"], ["--latency-jobs", "5"], ["--json"], ["--runners", "b"],
                                  ["--runners", ""]])
def test_breakdown_refuses_what_it_would_ignore(args):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sandbox_throughput.py"), "--breakdown", *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2 and args[0] in done.stderr and "--breakdown" in done.stderr
