"""Readers for CodeContests, APPS, LiveCodeBench and CURE data, from local files or the HF hub.

``load_problems(dataset, ...)`` is what the env calls. ``dataset`` is one of:

* ``"humaneval"`` (default), ``"stdio"`` or ``"all"``: bundled, no network;
* a path to a ``.jsonl``/``.json`` file: its format is ``dataset_format`` or, with ``"auto"``, guessed from the first
  record's fields (``tests`` -> the JSONL contract, ``public_tests`` -> CodeContests, ``input_output`` -> APPS,
  ``public_test_cases`` -> LiveCodeBench, ``test_input`` -> CURE);
* a hub name (``"deepmind/code_contests"``): read with the optional ``datasets`` library (``split`` picks the
  split); the format comes from ``dataset_format`` or the name.

Per format (records that cannot be used, e.g. without any test, are skipped and counted in a log message):

============== ================================ ============================================ ==================
format         id                               tests                                        solution
============== ================================ ============================================ ==================
codecontests   ``name``                         public + private (stdio)                     first Python 3 one
apps           ``problem_id``                   ``input_output``: stdio, or call with        first of
                                                ``fn_name`` (inputs: JSON argument lists)     ``solutions``
livecodebench  ``question_id``                  public + private test cases; ``stdin`` ones  none
                                                stdio, ``functional`` ones call
                                                ``Solution().<func_name>(...)``
cure           ``task_id`` or the record index  ``test_input`` / ``test_output`` (stdio)      ``solution`` if any
============== ================================ ============================================ ==================
"""

from __future__ import annotations

import base64
import io
import json
import logging
import pickle
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from teamgym.envs.coder_tester.data import (
    Problem,
    TestCase,
    call_test,
    load_bundled_stdio,
    load_humaneval,
    problem_from_record,
    read_records,
    unique_ids,
)
from teamgym.errors import DatasetError, DependencyNotInstalled, InvalidArgumentError

__all__ = ["FORMATS", "load_problems", "guess_format"]

logger = logging.getLogger(__name__)

BUNDLED = ("humaneval", "stdio", "all")
_PYTHON3 = 3  # CodeContests' language id for Python 3


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _json_field(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) and value.strip() else value


def _codecontests(record: Mapping[str, Any], index: int) -> Problem | None:
    tests = []
    for key in ("public_tests", "private_tests"):
        group = record.get(key) or {}
        tests += [
            TestCase(i, o, i) for i, o in zip(_strings(group.get("input")), _strings(group.get("output")))
        ]
    solutions = record.get("solutions") or {}
    languages = solutions.get("language") or []
    codes = _strings(solutions.get("solution"))
    python = [c for lang, c in zip(languages, codes) if lang == _PYTHON3]
    if not tests or not isinstance(record.get("description"), str):
        return None
    return Problem(
        str(record.get("name", index)),
        record["description"],
        "stdio",
        tuple(tests),
        python[0] if python else None,
        source="codecontests",
    )


def _apps(record: Mapping[str, Any], index: int) -> Problem | None:
    io_spec = _json_field(record.get("input_output"))
    if not isinstance(io_spec, dict):
        return None
    inputs, outputs = io_spec.get("inputs") or [], io_spec.get("outputs") or []
    solutions = _json_field(record.get("solutions")) or []
    solution = (
        solutions[0] if isinstance(solutions, list) and solutions and isinstance(solutions[0], str) else None
    )
    fn_name = io_spec.get("fn_name")
    question = record.get("question")
    if not isinstance(question, str):
        return None
    if isinstance(fn_name, str) and fn_name.isidentifier():
        tests = []
        for args, expected in zip(inputs, outputs):
            if isinstance(args, list):
                # APPS wraps the expected value in a one-item list for most call-style problems.
                value = expected[0] if isinstance(expected, list) and len(expected) == 1 else expected
                tests.append(call_test(fn_name, ", ".join(repr(a) for a in args), repr(value)))
        starter = record.get("starter_code") or ""
        question = question + (f"\n\n{starter}" if starter else "")
        return (
            Problem(
                str(record.get("problem_id", index)),
                question,
                "call",
                tuple(tests),
                solution,
                entry_point=fn_name,
                source="apps",
            )
            if tests
            else None
        )
    tests = [TestCase(_text(i), _text(o), _text(i)) for i, o in zip(inputs, outputs)]
    return (
        Problem(
            str(record.get("problem_id", index)), question, "stdio", tuple(tests), solution, source="apps"
        )
        if tests
        else None
    )


def _text(value: Any) -> str:
    return "\n".join(map(str, value)) if isinstance(value, list) else str(value)


class _StringsOnly(pickle.Unpickler):
    """Unpickles plain data only (LiveCodeBench's private tests are a pickled JSON string)."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: only plain data is accepted")


def _lcb_cases(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if not isinstance(value, str) or not value.strip():
        return []
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        raw = _StringsOnly(io.BytesIO(zlib.decompress(base64.b64decode(value)))).load()
        return json.loads(raw) if isinstance(raw, (str, bytes)) else []


def _livecodebench(record: Mapping[str, Any], index: int) -> Problem | None:
    cases = _lcb_cases(record.get("public_test_cases")) + _lcb_cases(record.get("private_test_cases"))
    metadata = _json_field(record.get("metadata")) or {}
    func_name = metadata.get("func_name") if isinstance(metadata, dict) else None
    question = record.get("question_content")
    if not isinstance(question, str):
        return None
    functional = [c for c in cases if isinstance(c, dict) and c.get("testtype") == "functional"]
    if functional and isinstance(func_name, str) and func_name.isidentifier():
        tests = []
        for case in functional:
            args = [line for line in str(case.get("input", "")).split("\n") if line.strip()]
            tests.append(
                call_test(f"Solution().{func_name}", ", ".join(args), str(case.get("output", "")).strip())
            )
        starter = record.get("starter_code") or ""
        return Problem(
            str(record.get("question_id", index)),
            f"{question}\n\n{starter}".strip(),
            "call",
            tuple(tests),
            None,
            entry_point="Solution",
            source="livecodebench",
        )
    stdin = [c for c in cases if isinstance(c, dict) and c.get("testtype", "stdin") == "stdin"]
    tests = [
        TestCase(str(c.get("input", "")), str(c.get("output", "")), str(c.get("input", ""))) for c in stdin
    ]
    return (
        Problem(
            str(record.get("question_id", index)),
            question,
            "stdio",
            tuple(tests),
            None,
            source="livecodebench",
        )
        if tests
        else None
    )


def _cure(record: Mapping[str, Any], index: int) -> Problem | None:
    inputs, outputs = _strings(record.get("test_input")), _strings(record.get("test_output"))
    question = record.get("question")
    if not inputs or len(inputs) != len(outputs) or not isinstance(question, str):
        return None
    solution = record.get("solution") if isinstance(record.get("solution"), str) else None
    tests = tuple(TestCase(i, o, i) for i, o in zip(inputs, outputs))
    return Problem(str(record.get("task_id", index)), question, "stdio", tests, solution, source="cure")


FORMATS: dict[str, Callable[[Mapping[str, Any], int], Problem | None]] = {
    "codecontests": _codecontests,
    "apps": _apps,
    "livecodebench": _livecodebench,
    "cure": _cure,
}
_MARKERS = (
    ("tests", "jsonl"),
    ("public_tests", "codecontests"),
    ("input_output", "apps"),
    ("public_test_cases", "livecodebench"),
    ("test_input", "cure"),
)
_HUB_NAMES = (
    ("code_contests", "codecontests"),
    ("apps", "apps"),
    ("livecodebench", "livecodebench"),
    ("cure", "cure"),
    ("codecontests", "cure"),
)


def guess_format(record: Mapping[str, Any]) -> str | None:
    """The format whose marker field ``record`` has (see the module docstring), or ``None``."""
    return next((fmt for key, fmt in _MARKERS if key in record), None)


def _convert(records: Iterable[tuple[int, Mapping[str, Any]]], fmt: str, where: str) -> list[Problem]:
    problems, skipped = [], 0
    for number, record in records:
        if fmt == "auto":
            fmt = guess_format(record) or ""
            if not fmt:
                raise DatasetError(
                    f"{where}, record {number}: cannot tell the format from fields {sorted(record)[:8]}: "
                    f"pass dataset_format= one of {['jsonl', *FORMATS]}"
                )
        if fmt == "jsonl":
            problems.append(problem_from_record(record, f"{where}, line {number}", source="jsonl"))
            continue
        try:
            problem = FORMATS[fmt](record, number)
        except (ValueError, TypeError, KeyError, zlib.error, pickle.UnpicklingError) as err:
            raise DatasetError(
                f"{where}, record {number}: not a valid {fmt} record ({type(err).__name__}: {err}): "
                f"check the file's format or pass another dataset_format"
            ) from err
        if problem is None:
            skipped += 1
        else:
            problems.append(problem)
    if skipped:
        logger.warning("%s: skipped %d record(s) without a statement or usable tests", where, skipped)
    if not problems:
        raise DatasetError(
            f"{where}: no usable problem ({skipped} records skipped): expected {fmt} records "
            "with a statement and tests"
        )
    unique_ids(problems, where)
    return problems


def _hub_records(name: str, split: str) -> Iterable[tuple[int, Mapping[str, Any]]]:
    try:
        import datasets
    except ImportError as err:
        raise DependencyNotInstalled(
            "datasets", "datasets", f"loading {name!r} from the Hugging Face hub"
        ) from err
    return enumerate(datasets.load_dataset(name, split=split), 1)


def load_problems(
    dataset: str, *, dataset_format: str = "auto", split: str = "test", limit: int | None = None
) -> tuple[Problem, ...]:
    """The problems of ``dataset`` (see the module docstring), the first ``limit`` of them when given."""
    if not isinstance(dataset, str) or not dataset:
        raise InvalidArgumentError(
            f"dataset={dataset!r}: expected {list(BUNDLED)}, a .jsonl/.json path or a hub name"
        )
    if dataset_format not in ("auto", "jsonl", *FORMATS):
        raise InvalidArgumentError(
            f"dataset_format={dataset_format!r}: expected one of {['auto', 'jsonl', *FORMATS]}"
        )
    if dataset in BUNDLED:
        problems: Sequence[Problem] = {
            "humaneval": load_humaneval,
            "stdio": load_bundled_stdio,
            "all": lambda: load_humaneval() + load_bundled_stdio(),
        }[dataset]()
    elif Path(dataset).suffix in (".jsonl", ".json") or Path(dataset).exists():
        problems = _convert(read_records(dataset), dataset_format, dataset)
    else:
        fmt = dataset_format
        if fmt == "auto":
            fmt = next((f for key, f in _HUB_NAMES if key in dataset.lower()), "auto")
        problems = _convert(_hub_records(dataset, split), fmt, f"{dataset} [{split}]")
    if limit is not None:
        problems = problems[:limit]
    return tuple(problems)
