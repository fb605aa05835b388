"""One program against many tests, a verdict per test; and the codes x tests execution matrix (CURE).

Two kinds of tests:

* ``"stdio"``: each test is ``(input, expected_output)`` (or a dict with ``input``/``output``). Every test is
  one sandbox job; the host compares outputs whitespace-normalised (CURE: lines stripped, trailing empty
  lines dropped), falling back to a token-wise comparison.
* ``"assert"``: each test is a Python statement run after the program, e.g. ``assert candidate(2) == 4``
  (HumanEval; ``entry_point`` names the function bound to ``candidate``) or ``assert add(1, 2) == 3``
  (MBPP). One job runs the program once, then each test under its own time budget.

Reward hacking: tests of the form ``assert EXPR == LITERAL`` are split by the host: the job only evaluates
``EXPR`` and sends back its value (plain builtin types only, tagged JSON); the host compares it with the
literal, which never enters the sandbox. Such verdicts cannot be faked by ``__eq__`` tricks, patched
builtins, fake output or early exits. Other statements run inside the job with the builtins as they were
before the program ran; their pass records could be forged by a program that writes our record format to
fd 3 and exits (documented residual risk, see docs/sandbox.md).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from teamgym.errors import InvalidArgumentError
from teamgym.sandbox.pool import Sandbox, default_sandbox
from teamgym.sandbox.result import Job

TestKind = Literal["stdio", "assert"]
ACTUAL_CAP = 2000  # characters of actual output kept in a verdict
_MISSING = object()


@dataclass(frozen=True)
class TestVerdict:
    """The verdict of one test.

    Attributes:
        passed: True only for a correct answer with a clean run.
        status: ``passed``, ``wrong_answer``, or why it did not get that far: ``error``, ``timeout``,
            ``memory``, ``output_limit``, ``killed``, ``infra_error`` (the sandbox failed; drop the sample).
        input: the test's stdin (stdio) or statement (assert).
        expected: the expected output, or ``repr`` of the expected value ("" when the test checks itself).
        actual: what the program produced (stdout, or ``repr`` of the value), capped at ``ACTUAL_CAP`` chars.
        error: a short reason when not passed (exception, stderr tail...), else ``None``.
        infra_error: set when the sandbox itself failed; never the program's fault.
    """

    passed: bool
    status: str
    input: str
    expected: str
    actual: str = ""
    error: str | None = None
    infra_error: str | None = None


def normalize_output(text: str) -> list[str]:
    """CURE's normalisation: split lines, strip each, drop trailing empty lines."""
    lines = [line.strip() for line in text.strip("\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def outputs_match(actual: str, expected: str) -> bool:
    """Whitespace-normalised comparison: line by line, else token by token."""
    return normalize_output(actual) == normalize_output(expected) or actual.split() == expected.split()


def split_assert(statement: str) -> tuple[str, Any] | None:
    """``(expr_source, expected_value)`` for ``assert EXPR == LITERAL`` (either side literal), else ``None``."""
    try:
        tree = ast.parse(statement)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        return None
    test = tree.body[0].test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return None
    left, right = test.left, test.comparators[0]
    for expr, literal in ((left, right), (right, left)):
        try:
            return ast.unparse(expr), ast.literal_eval(literal)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return None


def humaneval_tests(test_source: str) -> tuple[str, list[str]]:
    """Split a HumanEval ``def check(candidate): ...`` test into ``(setup, statements)``.

    When ``check`` is a flat list of asserts, each becomes its own test (and ``assert candidate(x) == lit``
    gets host-side comparison); otherwise the whole check is one test. Pass ``setup`` to :func:`run_tests`.
    """
    tree = ast.parse(test_source)
    check = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None)
    if check is None:
        raise InvalidArgumentError("the HumanEval test source has no `def check(candidate):`; pass the dataset's "
                                   "'test' field, or give plain assert statements to run_tests")
    rest = [n for n in tree.body if n is not check]
    body = [n for n in check.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if body and all(isinstance(n, ast.Assert) for n in body):
        return ast.unparse(ast.Module(body=rest, type_ignores=[])), [ast.unparse(n) for n in body]
    return test_source, ["check(candidate)"]


def run_tests(
    code: str,
    tests: Sequence[Any],
    *,
    kind: TestKind = "stdio",
    entry_point: str | None = None,
    setup: str = "",
    timeout: float = 1.0,
    memory_mb: int = 512,
    sandbox: Sandbox | None = None,
) -> list[TestVerdict]:
    """Run one program against its tests; one :class:`TestVerdict` per test, in order.

    Args:
        code: the program.
        tests: ``(input, output)`` pairs or ``{"input", "output"}`` dicts for ``stdio``; statements for ``assert``.
        kind: ``"stdio"`` or ``"assert"``.
        entry_point: assert kind: the function the program defines, bound to ``candidate`` for the tests.
        setup: assert kind: code run once after the program, before the tests (imports, helpers).
        timeout: seconds per test (stdio: per run; assert: the program and each test get this much).
        memory_mb: address-space limit.
        sandbox: the pool to use (default: the shared one).
    """
    return run_matrix([code], tests, kind=kind, entry_point=entry_point, setup=setup, timeout=timeout,
                      memory_mb=memory_mb, sandbox=sandbox)[0]


def run_matrix(
    codes: Sequence[str],
    tests: Sequence[Any],
    *,
    kind: TestKind = "stdio",
    entry_point: str | None = None,
    setup: str = "",
    timeout: float = 1.0,
    memory_mb: int = 512,
    sandbox: Sandbox | None = None,
) -> list[list[TestVerdict]]:
    """The execution matrix ``codes x tests`` (CURE), all through the pool in one go: ``[code][test]``."""
    box = sandbox or default_sandbox()
    if isinstance(codes, str):
        raise InvalidArgumentError("codes must be a sequence of programs, got one str: wrap it as [code] or use "
                                   "run_tests(code, tests)")
    if kind == "stdio":
        pairs = [_stdio_pair(t, i) for i, t in enumerate(tests)]
        jobs = [Job(code=c, stdin=inp, timeout=timeout, memory_mb=memory_mb).to_wire()
                for c in codes for inp, _ in pairs]
        raw = box.run_wire(jobs)
        n = len(pairs)
        return [[_stdio_verdict(raw[ci * n + ti], *pairs[ti]) for ti in range(n)] for ci in range(len(codes))]
    if kind == "assert":
        statements = [_statement(t, i) for i, t in enumerate(tests)]
        plans = [split_assert(s) for s in statements]
        wire_tests = [{"kind": "value", "expr": p[0]} if p else {"kind": "exec", "code": s}
                      for s, p in zip(statements, plans)]
        budget = min(600.0, timeout * (len(statements) + 1))
        jobs = []
        for c in codes:
            job = Job(code=c, timeout=budget, memory_mb=memory_mb).to_wire()
            job.update(tests=wire_tests, entry_point=entry_point, setup=setup, test_timeout=timeout)
            jobs.append(job)
        return [_assert_verdicts(r, statements, plans) for r in box.run_wire(jobs)]
    raise InvalidArgumentError(f"kind={kind!r}: expected 'stdio' (input/output pairs) or 'assert' (statements)")


def _stdio_pair(test: Any, index: int) -> tuple[str, str]:
    if isinstance(test, Mapping) and "input" in test and "output" in test:
        test = (test["input"], test["output"])
    if isinstance(test, (tuple, list)) and len(test) == 2 and all(isinstance(x, str) for x in test):
        return test[0], test[1]
    raise InvalidArgumentError(f"stdio test #{index} is {test!r:.80}: expected an (input, output) pair of str "
                               "or a dict with 'input' and 'output'")


def _statement(test: Any, index: int) -> str:
    if not isinstance(test, str):
        raise InvalidArgumentError(f"assert test #{index} is {type(test).__name__}: expected a Python statement "
                                   "as str, e.g. 'assert candidate(2) == 4'")
    return test


def _failure(raw: dict[str, Any], inp: str, expected: str, actual: str) -> TestVerdict:
    if raw.get("infra_error"):
        return TestVerdict(False, "infra_error", inp, expected, actual, raw["infra_error"], raw["infra_error"])
    tail = (raw.get("stderr") or "").strip().splitlines()
    reason = tail[-1] if tail else f"exit code {raw.get('returncode')}"
    return TestVerdict(False, raw["status"], inp, expected, actual, reason[:ACTUAL_CAP])


def _stdio_verdict(raw: dict[str, Any], inp: str, expected: str) -> TestVerdict:
    actual = raw.get("stdout") or ""
    if raw["status"] != "ok" or raw.get("infra_error"):
        return _failure(raw, inp, expected, actual[:ACTUAL_CAP])
    if outputs_match(actual, expected):
        return TestVerdict(True, "passed", inp, expected, actual[:ACTUAL_CAP])
    return TestVerdict(False, "wrong_answer", inp, expected, actual[:ACTUAL_CAP], "output differs")


def _assert_verdicts(raw: dict[str, Any], statements: list[str], plans: list[Any]) -> list[TestVerdict]:
    records = [r for r in (raw.get("records") or []) if isinstance(r, Mapping)]
    by_index: dict[int, list[Mapping[str, Any]]] = {}
    program = [r for r in records if "program" in r]
    for r in records:
        if isinstance(r.get("i"), int):
            by_index.setdefault(r["i"], []).append(r)
    verdicts = []
    for i, (statement, plan) in enumerate(zip(statements, plans)):
        expected = repr(plan[1]) if plan else ""
        got = by_index.get(i, [])
        if raw.get("infra_error"):
            verdicts.append(_failure(raw, statement, expected, ""))
        elif len(program) != 1 or program[0].get("program") != "ok":
            reason = program[0].get("error") if len(program) == 1 else None
            verdict = _failure(raw, statement, expected, "")
            status = verdict.status if verdict.status != "ok" else "error"
            verdicts.append(TestVerdict(False, status, statement, expected, "",
                                        str(reason or verdict.error or "the program did not finish")[:ACTUAL_CAP]))
        elif len(got) != 1:  # none: the process died or ran out of time; several: the program forged records
            status = raw["status"] if not got and raw["status"] != "ok" else "error"
            reason = "no result: the process ended during this test" if not got else "duplicate test records"
            verdicts.append(TestVerdict(False, status, statement, expected, "", reason))
        else:
            verdicts.append(_record_verdict(got[0], statement, plan, expected))
    return verdicts


def _record_verdict(record: Mapping[str, Any], statement: str, plan: Any, expected: str) -> TestVerdict:
    if "status" in record:
        status = record["status"] if record["status"] in ("error", "timeout", "memory") else "error"
        return TestVerdict(False, status, statement, expected, "", str(record.get("error"))[:ACTUAL_CAP])
    if plan is None:
        if record.get("ok") is True:
            return TestVerdict(True, "passed", statement, expected, "")
        return TestVerdict(False, "error", statement, expected, "", "malformed test record")
    try:
        actual = decode_value(record["value"])
    except (KeyError, ValueError, TypeError, RecursionError) as exc:
        return TestVerdict(False, "error", statement, expected, "", f"unreadable value: {exc}")
    shown = repr(actual)[:ACTUAL_CAP]
    try:  # both sides are plain host-built values: the program's own __eq__ never runs here
        same = bool(actual == plan[1])
    except RecursionError:
        same = False
    if same:
        return TestVerdict(True, "passed", statement, expected, shown)
    return TestVerdict(False, "wrong_answer", statement, expected, shown, "value differs from the expected one")


def decode_value(tagged: Any) -> Any:
    """Rebuild a value tagged by the job (see ``_jail.encode_value``); only plain builtin types come out."""
    if tagged is None or type(tagged) in (bool, int, str):
        return tagged
    if type(tagged) is dict and len(tagged) == 1:
        (tag, payload), = tagged.items()
        if tag == "int":
            return int(payload)
        if tag == "float":
            return float(payload)
        if tag in ("list", "tuple", "set", "frozenset"):
            return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](
                decode_value(v) for v in payload)
        if tag == "dict":
            return {decode_value(k): decode_value(v) for k, v in payload}
        if tag == "bytes":
            return bytes.fromhex(payload)
        if tag == "complex":
            return complex(float(payload[0]), float(payload[1]))
    raise ValueError(f"unknown value tag {str(tagged)[:80]}")
