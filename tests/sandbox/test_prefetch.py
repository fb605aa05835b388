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


def test_test_matrices_are_prefetched_as_wire_programs(monkeypatch) -> None:
    """``WireProgram``: a test matrix's server-format jobs run once ahead of time; inside ``prefetched``,
    ``run_wire`` and ``run_matrix`` on the shared sandbox get those results, other matrices run for real."""
    jobs, read = sandbox.matrix_jobs(["def f(x):\n    return 2 * x\n"], ["assert f(2) == 4", "assert f(3) == 7"],
                                     kind="assert", entry_point="f")
    programs = [sandbox.WireProgram.of(job) for job in jobs]
    assert programs == [sandbox.WireProgram.of(dict(reversed(list(job.items())))) for job in jobs]  # key order
    results = run_programs(programs + programs)
    assert [v.passed for v in read(results[:len(jobs)])[0]] == [True, False]
    calls = []
    original = sandbox.Sandbox.run_wire
    monkeypatch.setattr(sandbox.Sandbox, "run_wire", lambda self, wire: calls.append(len(wire)) or original(self, wire))
    with prefetched(programs, results[:len(jobs)]):
        served = sandbox.run_wire(jobs)
        verdicts = sandbox.run_matrix(["def f(x):\n    return 2 * x\n"], ["assert f(2) == 4", "assert f(3) == 7"],
                                      kind="assert", entry_point="f")
        assert calls == []  # nothing ran
        served[0]["stdout"] = "changed"  # a copy: the table is not touched
        assert sandbox.run_wire(jobs)[0]["stdout"] != "changed"
        other = sandbox.run_matrix(["def f(x):\n    return 3 * x\n"], ["assert f(2) == 4"], kind="assert",
                                   entry_point="f")
        assert calls == [1] and [v.passed for v in other[0]] == [False]
    assert [v.passed for v in verdicts[0]] == [True, False]
    broken = dict(results[0], infra_error="the sandbox server died")
    with prefetched(programs, [broken]):
        assert sandbox.run_wire(jobs)[0].get("infra_error") is None  # retried for real
