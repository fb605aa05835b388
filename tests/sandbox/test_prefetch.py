"""Prefetched programs: a batch run ahead of the steps that need it, each step handed its program's result."""

from __future__ import annotations

import threading

import teamgym.sandbox as sandbox
from teamgym.sandbox import ExecResult, Job, Program, prefetched, run_programs
from tests.support.sandbox_batches import record_batches


def test_run_programs_runs_identical_programs_once_in_order(monkeypatch) -> None:
    ran = record_batches(monkeypatch)
    programs = [Program.of("print(1)"), Program.of("print(input())", "2"), Program.of("print(1)"),
                Program.of("1/0", timeout=2.0)]
    results = run_programs(programs)
    assert [(r.status, r.stdout) for r in results] == [("ok", "1\n"), ("ok", "2\n"), ("ok", "1\n"), ("error", "")]
    assert ran == [["print(1)", "print(input())", "1/0"]]  # one batch, each distinct program once


def test_inside_prefetched_only_the_identical_job_gets_the_result() -> None:
    marker = ExecResult("ok", "from the batch\n", returncode=0)
    program = Program.of("print(1)", timeout=2.0, memory_mb=256)
    with prefetched([program], [marker]):
        assert sandbox.run_python("print(1)", timeout=2.0, memory_mb=256) is marker
        assert sandbox.run_many([Job("print(2)"), Job("print(1)", timeout=2.0, memory_mb=256)])[1] is marker
        # any other code, stdin, limit or package set runs for real
        assert sandbox.run_python("print(1)", timeout=2.0, memory_mb=300).stdout == "1\n"
        assert sandbox.run_python("print(1)", "x", timeout=2.0, memory_mb=256).stdout == "1\n"
        assert sandbox.run_many([Job("print(2)")])[0].stdout == "2\n"
        seen_elsewhere = []
        thread = threading.Thread(target=lambda: seen_elsewhere.append(
            sandbox.run_python("print(1)", timeout=2.0, memory_mb=256).stdout))
        thread.start()
        thread.join()
        assert seen_elsewhere == ["1\n"]  # results are installed for this thread only
    assert sandbox.run_python("print(1)", timeout=2.0, memory_mb=256).stdout == "1\n"


def test_an_infrastructure_failure_in_the_batch_is_retried_by_the_step() -> None:
    broken = ExecResult("error", infra_error="the sandbox server died")
    with prefetched([Program.of("print(5)")], [broken]):
        assert sandbox.run_python("print(5)").ok
