"""One program against many tests, a verdict per test; and the codes x tests execution matrix (CURE).

Two kinds of tests:

* ``"stdio"``: each test is ``(input, expected_output)`` (or a dict with ``input``/``output``). Every test is
  one sandbox job; the host compares outputs whitespace-normalised (CURE: lines stripped, trailing empty
  lines dropped), falling back to a token-wise comparison. The expected output never enters the sandbox.
* ``"assert"``: each test is a Python statement, e.g. ``assert candidate(2) == 4`` (HumanEval;
  ``entry_point`` names the function bound to ``candidate``) or ``assert add(1, 2) == 3`` (MBPP).

**Judging is not running.** An assert job is two jailed processes: the *program*, which runs the model's code
and then only answers calls, and the *judge*, which runs the tests (and the problem's own ``prelude`` and
``setup``) and never runs model-written program code. Each call of the program's function from a test sends
plain data (exact builtin types, bounded in depth and size) to the program's process and rebuilds its plain
answer in the judge, so no object the program made (a float subclass, a rigged ``__eq__``, a patched module, a
frame to read the expected value from) ever reaches the test; helpers such as HumanEval's ``poly`` or
``encode_cyclic`` and modules such as ``random`` are the judge's own. Tests of the form ``assert EXPR ==
LITERAL`` go further: the judge only evaluates ``EXPR`` and the host compares its value with the literal,
which never enters the sandbox. A program can only earn a pass by answering calls correctly.

Nothing a program writes can raise here: records are parsed defensively and any malformed one fails its test.
Model-written tests (a tester's) run in a judge of their own, never beside ground-truth tests.
"""

from __future__ import annotations

import ast
import builtins
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from teamgym.errors import InvalidArgumentError
from teamgym.sandbox import _wire
from teamgym.sandbox.pool import Sandbox
from teamgym.sandbox.prefetch import run_wire
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

    def __post_init__(self) -> None:
        # A program's text reaches the verdict through its records (JSON, whose escapes can spell a lone surrogate,
        # e.g. an exception message); verdicts end up in prompts, which must encode as UTF-8 for any tokenizer.
        for name in ("actual", "error"):
            value = getattr(self, name)
            if value is not None and not value.isascii():
                object.__setattr__(self, name, value.encode("utf-8", "replace").decode("utf-8"))


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
    """``(expr_source, expected)`` for ``assert EXPR == LITERAL`` (either side literal), else ``None``."""
    try:
        tree = ast.parse(statement)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if len(tree.body) != 1:
        return None
    return _split(tree.body[0])


def _split(node: ast.stmt) -> tuple[str, Any] | None:
    if not isinstance(node, ast.Assert):
        return None
    test = node.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return None
    left, right = test.left, test.comparators[0]
    for expr, literal in ((left, right), (right, left)):
        try:
            return ast.unparse(expr), constant_value(literal)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return None


#: Integers folded on the host stay within this many bits (operands and results): a test cannot make the host
#: compute ``10 ** 10 ** 10`` or a billion-element list while its constants are folded.
FOLD_BITS = 256
_FOLD_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
             ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b}
#: Builtins a test may wrap a literal or a call's value in (``tuple(f(x)) == (1, 2)``): each turns plain data into
#: plain data, and runs no code of the program's.
WRAPPERS = {"tuple": tuple, "list": list, "set": set, "frozenset": frozenset, "sorted": sorted}


def constant_value(node: ast.expr) -> Any:
    """The value of a constant expression: literals, their containers, ``-x``, ``+x``, arithmetic between numbers
    (``5 * 17``, ``2.0 / 3.0``; integers of at most :data:`FOLD_BITS` bits, finite floats), ``+`` between strings,
    bytes, lists or tuples (``'ab' + 'cd'``: never longer than the source) and :data:`WRAPPERS` of constants.
    Anything else raises ``ValueError`` (the test then needs a judge)."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (int, float, complex, str, bytes, bool, type(None))):
            return _bounded(node.value)
        raise ValueError("not a plain constant")
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            raise ValueError("starred element")
        items = [constant_value(e) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items if isinstance(node, ast.List) else set(items)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("dict unpacking")
        return {constant_value(k): constant_value(v) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _number(constant_value(node.operand))
        return _bounded(-value if isinstance(node.op, ast.USub) else +value)
    if isinstance(node, ast.BinOp) and type(node.op) in _FOLD_OPS:
        left, right = constant_value(node.left), constant_value(node.right)
        if isinstance(node.op, ast.Add) and type(left) is type(right) and type(left) in (str, bytes, list, tuple):
            return left + right  # no longer than the test's own source
        left, right = _number(left), _number(right)
        if isinstance(node.op, ast.Mult) and isinstance(left, int) and isinstance(right, int):
            if left.bit_length() + right.bit_length() > FOLD_BITS + 1:
                raise ValueError("product too large to fold")
        try:
            return _bounded(_FOLD_OPS[type(node.op)](left, right))
        except (ZeroDivisionError, OverflowError) as exc:
            raise ValueError(str(exc)) from None
    wrapped = _wrapped(node)
    if wrapped is not None:
        try:
            return WRAPPERS[wrapped[1]](constant_value(wrapped[0]))
        except TypeError as exc:
            raise ValueError(str(exc)) from None
    raise ValueError(f"not a constant: {type(node).__name__}")


def _number(value: Any) -> int | float:
    if type(value) not in (int, float, bool):
        raise ValueError("arithmetic on a non-number")
    return value


def _bounded(value: Any) -> Any:
    if type(value) is int and value.bit_length() > FOLD_BITS:
        raise ValueError("integer too large to fold")
    if type(value) is float and not math.isfinite(value):
        raise ValueError("non-finite float")
    return value


def _wrapped(node: ast.expr) -> tuple[ast.expr, str] | None:
    """``(inner, name)`` for ``name(inner)`` with ``name`` one of :data:`WRAPPERS`, else ``None``."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in WRAPPERS
            and len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred)):
        return node.args[0], node.func.id
    return None


def literal_call(expr: str, entry_point: str | None) -> tuple[list[Any], dict[str, Any]] | None:
    """``(args, kwargs)`` when ``expr`` calls the entry point (or ``candidate``) with constant arguments only
    (literals and :func:`constant_value` expressions such as ``5 * 17``)."""
    found = _entry_call(expr, entry_point)
    return None if found is None else found[:2]


def _entry_call(expr: str, entry_point: str | None) -> tuple[list[Any], dict[str, Any], str | None] | None:
    """``(args, kwargs, wrapper)`` for ``ENTRY(constants...)`` or ``WRAPPER(ENTRY(constants...))``."""
    if not entry_point:
        return None
    try:
        node = ast.parse(expr, mode="eval").body
        wrapper = None
        wrapped = _wrapped(node)
        if wrapped is not None:
            node, wrapper = wrapped
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            return None
        if node.func.id not in (entry_point, "candidate") or any(k.arg is None for k in node.keywords):
            return None
        if any(isinstance(a, ast.Starred) for a in node.args):
            return None
        args = [constant_value(a) for a in node.args]
        kwargs = {k.arg: constant_value(k.value) for k in node.keywords}
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return args, kwargs, wrapper


def plan_test(statement: str, entry_point: str | None) -> tuple[dict[str, Any], tuple[Any, ...] | None]:
    """How the sandbox runs an assert test, and the ``(expr, expected, post)`` the host compares (``None``: the test
    checks itself).

    * ``assert ENTRY(constants...) == CONSTANT``: a *call*: no test code runs anywhere; the server calls the program
      and the host compares. The call may be wrapped in one of :data:`WRAPPERS` (``tuple(f([1, 2])) == (1, 2)``),
      or compared within a tolerance (``assert abs(f(1.0) - 2.0 / 3.0) < 1e-6``): the host applies the wrapper or
      the tolerance (``post``) to the plain value that came back. Constants may be folded arithmetic
      (:func:`constant_value`). Assignments of literals before it (a tester's ``METADATA = {...}``) cannot change
      that call and are dropped, unless they rebind a name the test reads (the entry point, a wrapper, ``abs``).
    * ``assert EXPR == CONSTANT``: a *value*: the judge evaluates ``EXPR``, the host compares.
    * anything else: *code* the judge runs; it passes when it finishes.
    """
    body = _literal_prefix(statement, entry_point)  # parsed once; None: not (literal assignments then) one statement
    plan: tuple[Any, ...] | None = _split(body[-1]) if body else None
    if plan is not None and len(body) > 1 and literal_call(plan[0], entry_point) is None:
        plan = None  # after assignments, only a call is planned: the judge needs them for anything else
    if plan is None:
        plan = _close_call(body, entry_point) if body else None
        if plan is None:
            return {"kind": "exec", "code": statement, "names": _free_names(statement, entry_point)}, None
    close = plan[2] if len(plan) > 2 else None
    found = _entry_call(plan[0], entry_point)
    if found is not None:
        try:
            wire = {"kind": "call", "args": _wire.encode_value(found[0]), "kwargs": _wire.encode_value(found[1])}
            return wire, (plan[0], plan[1], close or found[2])
        except _wire.WireError:
            pass
    return {"kind": "value", "expr": plan[0], "names": _free_names(plan[0], entry_point)}, (plan[0], plan[1], close)


def _free_names(source: str, entry_point: str | None) -> list[str]:
    """Without an entry point: the names ``source`` reads and does not define itself, builtins aside (the judge
    binds those that its prelude and setup did not define to the program's functions)."""
    if entry_point:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    loaded, stored = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else stored).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stored.add(node.name)
        elif isinstance(node, ast.alias):
            stored.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.arg):
            stored.add(node.arg)
    return sorted(n for n in loaded - stored if not hasattr(builtins, n))


def _literal_prefix(statement: str, entry_point: str | None) -> list[ast.stmt] | None:
    """The statements of ``statement`` when all but the last are ``NAME = LITERAL`` binding none of the names a
    call test reads (the entry point, ``candidate``, the wrappers, ``abs``), else ``None``."""
    reserved = {entry_point, "candidate", "abs", *WRAPPERS}
    try:
        body = ast.parse(statement).body
        for node in body[:-1]:
            if not (isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets)):
                return None
            if any(t.id in reserved for t in node.targets):
                return None
            ast.literal_eval(node.value)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None
    return body or None


def _close_call(body: list[ast.stmt], entry_point: str | None) -> tuple[str, Any, tuple[str, float, str]] | None:
    """``(call, expected, ("close", tolerance, op))`` when the last of ``body`` (see :func:`_literal_prefix`) is
    ``assert abs(ENTRY(constants...) - CONSTANT) < TOL`` (or ``CONSTANT - ENTRY(...)``, or ``<=``); else ``None``."""
    node = body[-1]
    if not isinstance(node, ast.Assert):
        return None
    test = node.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Lt, ast.LtE))):
        return None
    left = test.left
    if not (isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "abs"
            and len(left.args) == 1 and not left.keywords and isinstance(left.args[0], ast.BinOp)
            and isinstance(left.args[0].op, ast.Sub)):
        return None
    try:
        tolerance = _number(constant_value(test.comparators[0]))
        for call, other in ((left.args[0].left, left.args[0].right), (left.args[0].right, left.args[0].left)):
            source = ast.unparse(call)
            found = _entry_call(source, entry_point)
            if found is not None and found[2] is None:
                expected = _number(constant_value(other))
                return source, expected, ("close", float(tolerance), "<" if isinstance(test.ops[0], ast.Lt) else "<=")
    except (ValueError, TypeError, MemoryError, RecursionError):
        return None
    return None


def humaneval_tests(test_source: str) -> tuple[str, list[str]]:
    """Split a HumanEval ``def check(candidate): ...`` test into ``(setup, statements)``.

    When ``check`` is a flat list of asserts, each becomes its own test (and ``assert candidate(x) == lit``
    gets host-side comparison); otherwise the whole check is one test. Pass ``setup`` to :func:`run_tests`.
    """
    tree = ast.parse(test_source)
    check = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None)
    if check is None:
        raise InvalidArgumentError(
            "the HumanEval test source has no `def check(candidate):`; pass the dataset's "
            "'test' field, or give plain assert statements to run_tests"
        )
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
    prelude: str = "",
    setup: str = "",
    timeout: float = 1.0,
    memory_mb: int = 512,
    sandbox: Sandbox | None = None,
) -> list[TestVerdict]:
    """Run one program against its tests; one :class:`TestVerdict` per test, in order.

    Args:
        code: the program.
        tests: ``(input, output)`` pairs or ``{"input", "output"}`` dicts (stdio); statements (assert).
        kind: ``"stdio"`` or ``"assert"``.
        entry_point: assert kind: the program's function the tests call, by its name or as ``candidate``.
            Without one, the tests may call any function of the program that nothing else defines.
        prelude: assert kind: trusted code the judge runs first (the problem's imports and helpers; it may
            define a stub of the entry point, which the program's function replaces).
        setup: assert kind: trusted code the judge runs next, with the entry point bound (imports, values).
        timeout: seconds per test (stdio: per run; assert: the program's top level and each test get this much).
        memory_mb: memory limit of the program (and of the judge).
        sandbox: the pool to use (default: the shared one).
    """
    return run_matrix(
        [code],
        tests,
        kind=kind,
        entry_point=entry_point,
        prelude=prelude,
        setup=setup,
        timeout=timeout,
        memory_mb=memory_mb,
        sandbox=sandbox,
    )[0]


def run_matrix(
    codes: Sequence[str],
    tests: Sequence[Any],
    *,
    kind: TestKind = "stdio",
    entry_point: str | None = None,
    prelude: str = "",
    setup: str = "",
    timeout: float = 1.0,
    memory_mb: int = 512,
    sandbox: Sandbox | None = None,
) -> list[list[TestVerdict]]:
    """The execution matrix ``codes x tests`` (CURE), all through the pool in one go: ``[code][test]``.

    Keywords as :func:`run_tests`.
    """
    jobs, verdicts = matrix_jobs(
        codes,
        tests,
        kind=kind,
        entry_point=entry_point,
        prelude=prelude,
        setup=setup,
        timeout=timeout,
        memory_mb=memory_mb,
    )
    # The shared sandbox serves results prefetched for a rollout's tree level (teamgym.sandbox.prefetch).
    return verdicts(sandbox.run_wire(jobs) if sandbox is not None else run_wire(jobs))


def matrix_jobs(
    codes: Sequence[str],
    tests: Sequence[Any],
    *,
    kind: TestKind = "stdio",
    entry_point: str | None = None,
    prelude: str = "",
    setup: str = "",
    timeout: float = 1.0,
    memory_mb: int = 512,
) -> tuple[list[dict[str, Any]], Callable[[list[dict[str, Any]]], list[list[TestVerdict]]]]:
    """The sandbox jobs of a ``codes x tests`` matrix and the function that reads their results.

    For callers that send several matrices in one :meth:`Sandbox.run_wire` call (e.g. ground-truth tests and a
    tester's tests, which must not share a judge): ``jobs, read = matrix_jobs(...)``, then
    ``read(results[i:i + len(jobs)])``. Keywords as :func:`run_tests`.
    """
    if isinstance(codes, str):
        raise InvalidArgumentError(
            "codes must be a sequence of programs, got one str: wrap it as [code] or use "
            "run_tests(code, tests)"
        )
    if kind == "stdio":
        pairs = [_stdio_pair(t, i) for i, t in enumerate(tests)]
        jobs = [
            Job(code=c, stdin=inp, timeout=timeout, memory_mb=memory_mb).to_wire() for c in codes for inp, _ in pairs
        ]
        n = len(pairs)

        def read_stdio(raw: list[dict[str, Any]]) -> list[list[TestVerdict]]:
            return [[_stdio_verdict(raw[ci * n + ti], *pairs[ti]) for ti in range(n)] for ci in range(len(codes))]

        return jobs, read_stdio
    if kind == "assert":
        if entry_point is not None and not (isinstance(entry_point, str) and entry_point.isidentifier()):
            raise InvalidArgumentError(
                f"entry_point={entry_point!r}: expected the name of the program's function, e.g. 'add', or None"
            )
        statements = [_statement(t, i) for i, t in enumerate(tests)]
        planned = [plan_test(s, entry_point) for s in statements]
        wire_tests, plans = [w for w, _ in planned], [p for _, p in planned]
        budget = min(600.0, timeout * (len(statements) + 1))
        jobs = []
        for c in codes:
            job = Job(code=c, timeout=budget, memory_mb=memory_mb).to_wire()
            job.update(tests=wire_tests, entry_point=entry_point, prelude=prelude, setup=setup, test_timeout=timeout)
            jobs.append(job)

        def read_assert(raw: list[dict[str, Any]]) -> list[list[TestVerdict]]:
            return [_assert_verdicts(r, statements, plans) for r in raw]

        return jobs, read_assert
    raise InvalidArgumentError(f"kind={kind!r}: expected 'stdio' (input/output pairs) or 'assert' (statements)")


def _stdio_pair(test: Any, index: int) -> tuple[str, str]:
    if isinstance(test, Mapping) and "input" in test and "output" in test:
        test = (test["input"], test["output"])
    if isinstance(test, (tuple, list)) and len(test) == 2 and all(isinstance(x, str) for x in test):
        return test[0], test[1]
    raise InvalidArgumentError(
        f"stdio test #{index} is {test!r:.80}: expected an (input, output) pair of str "
        "or a dict with 'input' and 'output'"
    )


def _statement(test: Any, index: int) -> str:
    if not isinstance(test, str):
        raise InvalidArgumentError(
            f"assert test #{index} is {type(test).__name__}: expected a Python statement "
            "as str, e.g. 'assert candidate(2) == 4'"
        )
    return test


def _failure(raw: dict[str, Any], inp: str, expected: str, actual: str) -> TestVerdict:
    if raw.get("infra_error"):
        return TestVerdict(
            False, "infra_error", inp, expected, actual, raw["infra_error"], raw["infra_error"]
        )
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


def _records(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The judge's records, parsed defensively: anything malformed is dropped (and so fails its test)."""
    records = []
    for line in raw.get("records") or []:
        try:
            record = _wire.loads(line)
        except _wire.WireError:
            continue
        if type(record) is dict:
            records.append(record)
    return records


def _assert_verdicts(raw: dict[str, Any], statements: list[str], plans: list[Any]) -> list[TestVerdict]:
    records = _records(raw)
    program = [r for r in records if "program" in r]
    by_index: dict[int, list[dict[str, Any]]] = {}
    for r in records:
        if type(r.get("i")) is int:
            by_index.setdefault(r["i"], []).append(r)
    verdicts = []
    for i, (statement, plan) in enumerate(zip(statements, plans, strict=True)):
        expected = _shown_expected(plan)
        got = by_index.get(i, [])
        if raw.get("infra_error"):
            verdicts.append(_failure(raw, statement, expected, ""))
        elif len(program) != 1 or program[0].get("program") != "ok":
            failed = program[0] if len(program) == 1 else {}
            status = failed.get("status") if failed.get("status") in ("error", "timeout", "memory") else "error"
            if status == "error" and raw["status"] in ("timeout", "memory", "output_limit", "killed"):
                status = raw["status"]
            reason = failed.get("error") if type(failed.get("error")) is str else None
            if reason is None:
                tail = (raw.get("stderr") or "").strip().splitlines()
                reason = tail[-1] if tail else "the program did not finish"
            verdicts.append(TestVerdict(False, status, statement, expected, "", reason[:ACTUAL_CAP]))
        elif len(got) != 1:  # none: the job ended during this test; several: model-written tests forged records
            if got:
                status, reason = "error", "duplicate test records"
            elif raw["status"] not in ("ok", "error"):
                status, reason = raw["status"], f"no result: the program ended ({raw['status']})"
            elif raw.get("judge_status") in ("timeout", "memory"):
                status, reason = raw["judge_status"], f"no result: the judge ended ({raw['judge_status']})"
            else:
                status, reason = "error", "no result: the test ended its judge"
            verdicts.append(TestVerdict(False, status, statement, expected, "", reason))
        else:
            verdicts.append(_record_verdict(got[0], statement, plan, expected))
    return verdicts


def _shown_expected(plan: tuple[Any, ...] | None) -> str:
    if not plan:
        return ""
    post = plan[2] if len(plan) > 2 else None
    if isinstance(post, tuple):  # ("close", tolerance, op)
        return f"{_safe_repr(plan[1])} (abs difference {post[2]} {post[1]!r})"
    return _safe_repr(plan[1])


def _record_verdict(record: dict[str, Any], statement: str, plan: Any, expected: str) -> TestVerdict:
    if "status" in record:
        status = record["status"] if record["status"] in ("error", "timeout", "memory") else "error"
        error = record.get("error") if type(record.get("error")) is str else status
        return TestVerdict(False, status, statement, expected, "", error[:ACTUAL_CAP])
    if plan is None:
        if record.get("ok") is True:
            return TestVerdict(True, "passed", statement, expected, "")
        return TestVerdict(False, "error", statement, expected, "", "malformed test record")
    try:
        actual = _wire.decode_value(record["value"])
    except (KeyError, _wire.WireError) as exc:
        return TestVerdict(False, "error", statement, expected, "", f"unreadable value: {exc}")
    post = plan[2] if len(plan) > 2 else None
    shown = _safe_repr(actual)[:ACTUAL_CAP]
    try:  # both sides are plain host-built values: the program's own __eq__ never runs here
        if isinstance(post, tuple):  # within a tolerance, as abs(value - expected) < tolerance would decide
            if type(actual) not in (int, float, bool):
                return TestVerdict(False, "error", statement, expected, shown,
                                   f"TypeError: unsupported operand type for -: {type(actual).__name__!r}")
            gap = abs(actual - plan[1])
            same = bool(gap < post[1] if post[2] == "<" else gap <= post[1])
        else:
            if post is not None:  # the wrapper the test applies to the call's value
                try:
                    actual = WRAPPERS[post](actual)
                except TypeError as exc:
                    return TestVerdict(False, "error", statement, expected, shown, f"TypeError: {exc}"[:ACTUAL_CAP])
                shown = _safe_repr(actual)[:ACTUAL_CAP]
            same = bool(actual == plan[1])
    except (RecursionError, MemoryError, TypeError, ValueError, OverflowError):
        same = False
    if same:
        return TestVerdict(True, "passed", statement, expected, shown)
    return TestVerdict(False, "wrong_answer", statement, expected, shown, "value differs from the expected one")


def _safe_repr(value: Any) -> str:
    """``repr`` of a plain value, or a stand-in when it cannot be shown (a huge int, deep nesting)."""
    try:
        return repr(value)[: ACTUAL_CAP * 2]
    except (ValueError, RecursionError, MemoryError):
        return f"<a {type(value).__name__} too large to show>"


decode_value = _wire.decode_value
