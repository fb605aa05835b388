"""Programs the host answers without running them (``teamgym.sandbox._literal``) give what the jail gives."""

from __future__ import annotations

import pytest

from teamgym.sandbox import ExecResult, Job, Sandbox
from teamgym.sandbox._literal import MAX_CODE, answer

PREAMBLE = ("grid = ['#...', '..#.', '...#', '....']\nstart = (0, 2)\ngoal = (3, 0)\n"
            "MOVES = {'U': (-1, 0), 'D': (1, 0), 'L': (0, -1), 'R': (0, 1)}\n")

SYNTAX_ERRORS = [
    "print('Actions: U,#U,L",
    "print('Actions: D,D\n",
    "x = 1\nprint('a'",
    "  print(1)",
    "if True:\nprint(1)",
    "if True:\n\tx = 1\n        y = 2",
    "def f(:\n    pass",
    "print('Actions: R,U,R')\n```,D')\n`",
    "x = (1,\n2,\n",
    "1 = x",
    "f(**)",
    "print('a')\nprint('b'c)",
    "print(" * 300 + ")" * 300,  # too deeply nested for the parser
    "x = 1\0",  # a NUL byte
]

ANSWERED = SYNTAX_ERRORS + [
    "print(1)",
    "print()",
    PREAMBLE + "print('Actions: D,D,D')\n",
    PREAMBLE + "print(grid, start, goal)\nprint(MOVES)",
    "'''a docstring'''\nprint('x')",
    "x = 'a'\nx = 'b'\nprint(x, x)",
    "print('tab\\there', 'cr\\rz', 'nul\\x00', 'bs\\\\')",
    "print(1e400, -0.0, 0.1, 10000000000000000.0, -7, True, None)",
    "x = -5\ny = (1, [2, {'k': (None, False)}], 'z')\nprint(y, x)",
    "d = {1: 'a', 1.0: 'b', True: 'c'}\nprint(d)",
    "big = " + "9" * 2000 + "\nprint(big)",
    "print('a'); print('b')",
    "...\nprint(0)",
    "",
    "print(-0.0, [-1, (2,)], {'a': -3})",
]

DECLINED = [
    "print = len\nprint('x')",  # print rebound
    "print(x)",  # unbound name
    "print(len)",  # a builtin, not a bound literal
    "s = {1, 2}\nprint(s)",  # set order follows the hash seed
    "print(b'x')",  # bytes
    "c = 1j\nprint(c)",
    "print('a', end='')",  # keywords
    "x = (1, 2)\nprint(*x)",  # starred
    "print('\u00e9')",  # not ASCII
    "print('\\u00e9')",  # ASCII source, non-ASCII output
    "print('\\ud800')",  # a lone surrogate
    "print(f'{1}')",
    "print(1 + 1)",
    "x = [1]\nx.append(2)\nprint(x)",
    "import os\nprint('x')",
    "print('a')\nraise SystemExit(3)",
    "print(input())",
    "x = y = 1\nprint(x)",
    "a, b = 1, 2\nprint(a)",
    "x: int = 1\nprint(x)",
    "x = {[]: 1}\nprint(x)",  # builds nothing: TypeError in the jail
    "if True:\n    print(1)",
    "pass",
    "print('x' * 3)",
    "return 1",  # found by the compiler after parsing
    "print('\\d'",  # a backslash that is not an escape (newer Pythons warn on stderr)
    "print('\\d')",
    "x = r'\\d'\nprint(x)",
    "print('" + "x" * MAX_CODE + "')",
]


def _jail(box: Sandbox, job: Job) -> ExecResult:
    """The jail's result for ``job`` (run_wire never asks the host)."""
    wire = box.run_wire([job.to_wire()])[0]
    return ExecResult(**{k: v for k, v in wire.items() if k != "records"})


def _same(a: ExecResult, b: ExecResult) -> bool:
    return (a.status, a.stdout, a.stderr, a.returncode, a.infra_error) == (
        b.status, b.stdout, b.stderr, b.returncode, b.infra_error)


@pytest.mark.parametrize("code", ANSWERED)
def test_answered_programs_match_the_jail(box: Sandbox, code: str) -> None:
    job = Job(code=code)
    host = answer(job)
    assert host is not None, code
    assert host.duration == 0.0
    assert _same(host, _jail(box, job)), (host, _jail(box, job))


@pytest.mark.parametrize("code", DECLINED)
def test_other_programs_run_in_the_jail(box: Sandbox, code: str) -> None:
    job = Job(code=code)
    assert answer(job) is None
    ran = box.run_many([job])[0]
    assert ran.duration > 0 or ran.infra_error is not None  # it went to a server
    assert _same(ran, _jail(box, job))


def test_output_over_the_limit_runs_in_the_jail(box: Sandbox) -> None:
    job = Job(code="print('" + "x" * 40 + "')", output_limit=10)
    assert answer(job) is None
    assert box.run_many([job])[0].status == "output_limit"


def test_run_many_mixes_answered_and_jailed_jobs_in_order(box: Sandbox) -> None:
    codes = ["print(1)", "print(input())", PREAMBLE + "print('Actions: U')", "1/0", "print('z')"]
    results = box.run_many([Job(code=c, stdin="s") for c in codes])
    assert [r.stdout for r in results] == ["1\n", "s\n", "Actions: U\n", "", "z\n"]
    assert [r.status for r in results] == ["ok", "ok", "ok", "error", "ok"]
    assert [r.duration == 0.0 for r in results] == [True, False, True, False, True]


def test_a_closed_sandbox_refuses_answered_programs_too() -> None:
    from teamgym.errors import SandboxError

    box = Sandbox(workers=1)
    box.close()
    with pytest.raises(SandboxError, match="closed"):
        box.run_many(["print(1)"])
