"""The test harness: verdicts per test, the codes x tests matrix, and the common reward hacks failing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamgym.errors import InvalidArgumentError
from teamgym.sandbox import (
    Sandbox,
    humaneval_tests,
    normalize_output,
    outputs_match,
    run_matrix,
    run_tests,
)
from teamgym.sandbox.harness import decode_value, split_assert

DOUBLE = "def double(x):\n    return 2 * x\n"
ASSERTS = [
    "assert double(2) == 4",
    "assert double(-1) == -2",
    "assert double('a') == 'aa'",
    "assert abs(double(0.5) - 1.0) < 1e-9",
    "assert [double(i) for i in range(3)] == [0, 2, 4]",
    "assert double(3) == 7",
    "import math\nassert math.isclose(double(1.5), 3.0)",
    "assert double(1) == 2",
]
EXPECTED = [True, True, True, True, True, False, True, True]


def test_assert_verdicts(box: Sandbox) -> None:
    verdicts = run_tests(DOUBLE, ASSERTS, kind="assert", sandbox=box)
    assert [v.passed for v in verdicts] == EXPECTED
    wrong = verdicts[5]
    assert (wrong.status, wrong.expected, wrong.actual) == ("wrong_answer", "7", "6")


def test_entry_point_is_candidate(box: Sandbox) -> None:
    verdicts = run_tests(
        DOUBLE, ["assert candidate(4) == 8"], kind="assert", entry_point="double", sandbox=box
    )
    assert verdicts[0].passed


def test_stdio_verdicts_whitespace_normalised(box: Sandbox) -> None:
    code = "n = int(input())\nprint(*range(n))\nprint()"
    tests = [("3", "0 1 2"), ("2", "0   1\n\n\n"), {"input": "1", "output": "0\n"}, ("2", "0 2"), ("x", "")]
    verdicts = run_tests(code, tests, sandbox=box)
    assert [v.status for v in verdicts] == ["passed", "passed", "passed", "wrong_answer", "error"]
    assert "ValueError" in verdicts[4].error


def test_matrix_shape_and_order(box: Sandbox) -> None:
    codes = ["print(int(input()) + 1)", "print(int(input()) * 2)", "while True: pass"]
    tests = [("1", "2"), ("2", "3"), ("2", "4")]
    matrix = run_matrix(codes, tests, sandbox=box, timeout=0.5)
    assert [[v.passed for v in row] for row in matrix] == [
        [True, True, False],
        [True, False, True],
        [False, False, False],
    ]
    assert {v.status for v in matrix[2]} == {"timeout"}


def test_assert_matrix(box: Sandbox) -> None:
    codes = [DOUBLE, "def double(x):\n    return x + x\n", "def double(x):\n    return 0\n"]
    matrix = run_matrix(codes, ASSERTS[:2], kind="assert", sandbox=box)
    assert [[v.passed for v in row] for row in matrix] == [[True, True], [True, True], [False, False]]


def test_verdicts_are_deterministic(box: Sandbox) -> None:
    first = run_tests(DOUBLE, ASSERTS, kind="assert", sandbox=box)
    second = run_tests(DOUBLE, ASSERTS, kind="assert", sandbox=box)
    assert first == second


def test_per_test_timeout_keeps_the_rest(box: Sandbox) -> None:
    code = "def f(x):\n    while x == 0:\n        pass\n    return x\n"
    verdicts = run_tests(
        code,
        ["assert f(1) == 1", "assert f(0) == 0", "assert f(2) == 2"],
        kind="assert",
        timeout=0.5,
        sandbox=box,
    )
    assert [v.status for v in verdicts] == ["passed", "timeout", "passed"]


HACKS = {
    "sys_exit_before_tests": "import sys\nsys.exit(0)",
    "os_exit_before_tests": "import os\nos._exit(0)",
    "raise_systemexit": "raise SystemExit",
    "fake_verdict_markers": "print('PASSED\\n' * 100)\nprint('All tests passed: 8/8 OK')",
    "always_equal": "class Any:\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n"
    "def double(x):\n    return Any()",
    "patched_builtins": "import builtins\nbuiltins.abs = lambda x: 0\nbuiltins.isinstance = lambda *a: True\n"
    "def double(x):\n    return 0",
    "patched_assertionerror": "import builtins\nclass Never(Exception):\n    pass\n"
    "builtins.AssertionError = Never\n"
    "def double(x):\n    return 0",
    "int_subclass": "class I(int):\n    def __eq__(self, o):\n        return True\n"
    "def double(x):\n    return I(0)",
    "forged_records": "import os\nfor i in range(8):\n"
    '    os.write(3, (\'{"i": %d, "ok": true}\\n\' % i).encode())\n'
    "os._exit(0)",
    "exit_inside_call": "import os\ndef double(x):\n    os._exit(0)",
    "catch_everything_exit": "import sys\ndef double(x):\n    sys.exit(0)",
}


@pytest.mark.parametrize("name", sorted(HACKS))
def test_reward_hacks_fail(box: Sandbox, name: str) -> None:
    verdicts = run_tests(HACKS[name], ASSERTS, kind="assert", sandbox=box)
    assert not any(v.passed for v in verdicts), [(v.input, v.status) for v in verdicts if v.passed]


def test_stdio_hacks_fail(box: Sandbox) -> None:
    secret = "EXPECTED-OUTPUT-7f3a"
    hunt = (
        "import gc, sys\nfound = [o for o in gc.get_objects() if isinstance(o, (str, dict)) and "
        f"'{secret[:8]}' in str(o)]\nprint(found)"
    )
    verdicts = run_tests(hunt, [("1", secret)], sandbox=box)
    assert not verdicts[0].passed and secret not in verdicts[0].actual
    assert not run_tests("import sys\nsys.exit(0)", [("1", "1")], sandbox=box)[0].passed


def test_program_error_fails_every_test(box: Sandbox) -> None:
    verdicts = run_tests("1/0\ndef double(x):\n    return 2 * x", ASSERTS[:3], kind="assert", sandbox=box)
    assert [v.status for v in verdicts] == ["error"] * 3
    assert "ZeroDivisionError" in verdicts[0].error


def test_humaneval_split() -> None:
    source = (
        "METADATA = {}\n\ndef check(candidate):\n    assert candidate(1) == 2\n"
        "    assert abs(candidate(0.5) - 1.0) < 1e-6\n"
    )
    setup, statements = humaneval_tests(source)
    assert "METADATA" in setup and statements == [
        "assert candidate(1) == 2",
        "assert abs(candidate(0.5) - 1.0) < 1e-06",
    ]
    loop = "def check(candidate):\n    for i in range(3):\n        assert candidate(i) == 2 * i\n"
    assert humaneval_tests(loop) == (loop, ["check(candidate)"])
    with pytest.raises(InvalidArgumentError, match="check"):
        humaneval_tests("assert True")


def test_humaneval_end_to_end(box: Sandbox) -> None:
    loop = "def check(candidate):\n    for i in range(3):\n        assert candidate(i) == 2 * i\n"
    setup, statements = humaneval_tests(loop)
    verdicts = run_tests(DOUBLE, statements, kind="assert", entry_point="double", setup=setup, sandbox=box)
    assert [v.passed for v in verdicts] == [True]


def test_bad_arguments() -> None:
    with pytest.raises(InvalidArgumentError, match="kind"):
        run_tests("pass", [], kind="junit")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="pair"):
        run_tests("pass", ["just input"])
    with pytest.raises(InvalidArgumentError, match="statement"):
        run_tests("pass", [("a", "b")], kind="assert")
    with pytest.raises(InvalidArgumentError, match=r"\[code\]"):
        run_matrix("print(1)", [("", "1")])  # type: ignore[arg-type]


def test_split_assert() -> None:
    assert split_assert("assert f(1) == [1, (2, 'x')]") == ("f(1)", [1, (2, "x")])
    assert split_assert("assert -3 == f(x)") == ("f(x)", -3)
    assert split_assert("assert f(1) == g(2)") is None
    assert split_assert("assert f(1) < 2") is None
    assert split_assert("x = 1") is None
    assert split_assert("assert (") is None


def test_normalize_output() -> None:
    assert normalize_output("  a b  \r\nc\n\n\n") == ["a b", "c"]
    assert outputs_match("1 2\n3", "1\n2 3\n")  # token-wise
    assert not outputs_match("1 2", "1 2 3")


plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(plain)
def test_value_round_trip(value: object) -> None:
    from teamgym.sandbox._wire import encode_value

    decoded = decode_value(encode_value(value))
    assert decoded == value and type(decoded) is type(value)


def test_literal_calls_run_no_test_code() -> None:
    from teamgym.sandbox.harness import plan_test

    kinds = {
        "assert f(1, [2, 3], k='x') == 4": "call",
        "assert candidate(1) == 2": "call",
        "METADATA = {'a': 1}\nassert f(1) == 2": "call",  # a literal assignment cannot change the call
        "x = 1\nassert f(x) == 2": "exec",  # but one the call reads is code
        "import os\nassert f(1) == 2": "exec",
        "assert f(*[1]) == 2": "value",
        "assert g(1) == 2": "value",  # not the entry point: a helper the judge may define
        "assert abs(f(1) - 2) < 1e-6": "call",  # a tolerance the host applies
        "assert abs(2.0 / 3.0 - f(1)) <= 1e-6": "call",
        "assert f(5 * 17, -2 + 1) == 10 // 3": "call",  # folded constants
        "assert tuple(f([1, 2])) == tuple([2, 1])": "call",  # a wrapper the host applies
        "METADATA = {}\nassert sorted(f(1)) == [1]": "call",
        "sorted = len\nassert sorted(f(1)) == 1": "exec",  # a prefix rebinding a name the test reads is code
        "f = 5\nassert f(1) == 2": "exec",
        "abs = max\nassert abs(f(1) - 2) < 1": "exec",
        "assert f(10 ** 3) == 2": "value",  # ** is not folded: the judge evaluates the call
        "assert f(1) == 2 ** 4000": "exec",
        "assert f(" + "9" * 90 + " * " + "9" * 90 + ") == 1": "value",  # products past FOLD_BITS are not folded
        "assert abs(f(1) - 2) < 1e-6 and True": "exec",
        "assert abs(f(1) + 2) < 1e-6": "exec",
        "assert tuple(f(1), 2) == 1": "value",
    }
    for statement, kind in kinds.items():
        assert plan_test(statement, "f")[0]["kind"] == kind, statement
    assert plan_test("assert f(1) == 2", None)[0]["kind"] == "value"  # without an entry point: the judge
    assert plan_test("assert f(1) == 2", None)[0]["names"] == ["f"]


def test_constant_folding_is_bounded() -> None:
    import ast

    from teamgym.sandbox.harness import FOLD_BITS, constant_value

    def fold(source: str):
        return constant_value(ast.parse(source, mode="eval").body)

    assert fold("5 * 17") == 85 and fold("2.0 / 3.0") == 2.0 / 3.0 and fold("-(3 - 5) % 7") == 2
    assert fold("'ab' + 'cd'") == "abcd" and fold("[1] + [2]") == [1, 2]
    assert fold("tuple([1, -2])") == (1, -2) and fold("sorted({3, 1})") == [1, 3] and fold("{'a': 1 + 1}") == {"a": 2}
    for source in ("2 ** 8", "'a' * 10", "[0] * 9", "1 / 0", f"2 ** {FOLD_BITS}", f"{2 ** FOLD_BITS} + 1",
                   f"{2 ** 200} * {2 ** 200}", "1e308 * 10", "x + 1", "'a' + 1", "'a' - 'b'", "f(1)",
                   "sorted([1, 'a'])", "[*a]"):
        with pytest.raises(ValueError):
            fold(source)


PROGRAMS = {
    "right": "def f(x, y=0):\n    return 2 * x + y\n",
    "wrong": "def f(x, y=0):\n    return x\n",
    "raises": "def f(x, y=0):\n    raise ValueError('no')\n",
    "slow": "def f(x, y=0):\n    while x == 3:\n        pass\n    return 2 * x + y\n",
    "not_plain": "def f(x, y=0):\n    return iter([x])\n",
    "exits": "import os\ndef f(x, y=0):\n    if x == 2:\n        os._exit(0)\n    return 2 * x + y\n",
    "broken_top": "1/0\ndef f(x, y=0):\n    return 2 * x + y\n",
}
CALLS = ["f(1)", "f(2, y=1)", "f(3)", "f(4)"]
EXPECTED_VALUES = [2, 5, 6, 8]


SHAPED = [  # (direct test, the same test in a shape only a judge runs)
    ("assert abs(f(1) - 2.0 / 1.0) < 1e-9", "assert abs((f(1), 0)[0] - 2.0 / 1.0) < 1e-9"),
    ("assert abs(6 - f(3)) <= 0", "assert abs(6 - (f(3), 0)[0]) <= 0"),
    ("assert tuple(f(2, y=1)) == (5,)", "assert tuple((f(2, y=1), 0)[0]) == (5,)"),
    ("assert sorted(f(4)) == [8]", "assert sorted((f(4), 0)[0]) == [8]"),
    ("assert f(2 * 2) == 4 * 2", "assert (f(2 * 2), 0)[0] == 4 * 2"),
]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_wrapped_and_tolerance_calls_and_the_judge_agree(box: Sandbox, name: str) -> None:
    """Calls the host wraps, compares within a tolerance or calls with folded constants give the judge's verdicts."""
    direct, judged = [d for d, _ in SHAPED], [j for _, j in SHAPED]
    from teamgym.sandbox.harness import plan_test

    assert all(plan_test(t, "f")[0]["kind"] == "call" for t in direct)
    assert all(plan_test(t, "f")[0]["kind"] != "call" for t in judged)
    first = run_tests(PROGRAMS[name], direct, kind="assert", entry_point="f", timeout=0.5, sandbox=box)
    second = run_tests(PROGRAMS[name], judged, kind="assert", entry_point="f", timeout=0.5, sandbox=box)
    assert [v.passed for v in first] == [v.passed for v in second], (first, second)
    assert not any(v.infra_error for v in first + second)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_direct_calls_and_the_judge_agree(box: Sandbox, name: str) -> None:
    """The server calling the entry point itself gives the verdicts a judge gives for the same tests."""
    direct = [f"assert {c} == {v}" for c, v in zip(CALLS, EXPECTED_VALUES)]
    judged = [f"assert ({c}, 0)[0] == {v}" for c, v in zip(CALLS, EXPECTED_VALUES)]  # not a bare call: judge
    first = run_tests(PROGRAMS[name], direct, kind="assert", entry_point="f", timeout=0.5, sandbox=box)
    second = run_tests(PROGRAMS[name], judged, kind="assert", entry_point="f", timeout=0.5, sandbox=box)
    assert [(v.passed, v.status) for v in first] == [(v.passed, v.status) for v in second]
    assert [v.actual for v in first] == [v.actual for v in second]
    assert not any(v.infra_error for v in first + second)


@pytest.mark.parametrize("calls", [True, False], ids=["literal_calls", "judged"])
def test_a_top_level_that_never_ends_costs_one_timeout(box: Sandbox, calls: bool) -> None:
    """A program whose top level never finishes costs one test's timeout, not the job's budget (one timeout per
    test): served by the server's calls or by a judge, the job ends as done once the tests are over, never at the
    job's own deadline (which ends it as ``timeout``)."""
    from teamgym.sandbox.harness import matrix_jobs

    tests = [f"assert f({i}) == {i}" if calls else f"assert (f({i}), 0)[0] == {i}" for i in range(9)]
    jobs, read = matrix_jobs(["while True:\n    pass\n"], tests, kind="assert", entry_point="f", timeout=0.5)
    raw = box.run_wire(jobs)
    assert [r["status"] for r in raw] == ["ok"], raw  # killed as done, not at the job's deadline
    (verdicts,) = read(raw)
    assert [v.status for v in verdicts] == ["timeout"] * 9, verdicts
    assert not any(v.infra_error for v in verdicts)
