"""Readers for CodeContests, APPS, LiveCodeBench, CURE and MBPP data, from local files or the HF hub.

``load_problems(dataset, ...)`` is what the env calls. ``dataset`` is one of:

* ``"humaneval"`` (default), ``"stdio"`` or ``"all"``: bundled, no network;
* a path to a ``.jsonl``/``.json`` file: its format is ``dataset_format`` or, with ``"auto"``, guessed from the first
  record's fields (``tests`` -> the JSONL contract, ``public_tests`` -> CodeContests, ``input_output`` -> APPS,
  ``public_test_cases`` -> LiveCodeBench, ``test_input`` -> CURE, ``test_list`` -> MBPP);
* a hub name (``"deepmind/code_contests"``): read with the optional ``datasets`` library (``split`` picks the
  split); the format comes from ``dataset_format`` or the name. When the hub cannot be reached (a TCP probe of
  ``HF_ENDPOINT`` for ``HUB_PROBE_TIMEOUT`` s) or ``HF_DATASETS_OFFLINE``/``HF_HUB_OFFLINE`` is set and there is
  no cached copy, a :class:`~teamgym.errors.DatasetError` says how to load a local file instead.

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
mbpp           ``task_id``                      ``test_list`` + ``challenge_test_list``:     ``code``
                                                asserts (call style; ``test_setup_code`` and
                                                ``test_imports`` run before them)
============== ================================ ============================================ ==================

MBPP: the statement is ``text`` (original MBPP) or ``prompt`` (sanitized MBPP, MBPP+); as in the MBPP paper's
prompt the first test is shown with it (MBPP+'s prompt already holds it), as the statement alone does not name the
function. The entry point is the function of ``code`` that the first test calls. MBPP+ (``evalplus/mbppplus``) is
read through its ``test_list``; its ``test`` script and EvalPlus' own ``base_input``/``plus_input``/``atol`` fields
(inputs without expected outputs, which EvalPlus computes by running the reference) are not used.
"""

from __future__ import annotations

import ast
import base64
import builtins
import io
import json
import logging
import os
import pickle
import socket
import urllib.parse
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


def _called_names(source: str) -> list[str]:
    """The names of the plain functions ``source`` calls, in the order they appear (``[]`` if it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    calls = sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    return [call.func.id for call in calls]  # type: ignore[attr-defined]


def _defined_functions(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _mbpp(record: Mapping[str, Any], index: int) -> Problem | None:
    asserts = _strings(record.get("test_list")) + _strings(record.get("challenge_test_list"))
    question = record.get("text") if isinstance(record.get("text"), str) else record.get("prompt")
    if not asserts or not isinstance(question, str) or not question.strip():
        return None
    code = record.get("code") if isinstance(record.get("code"), str) else None
    defined = _defined_functions(code or "")
    called = [name for name in _called_names(asserts[0]) if not hasattr(builtins, name)]
    entry_point = next((name for name in called if name in defined), called[0] if called else "")
    if not entry_point:
        return None
    # MBPP's statements do not name the function; like the MBPP paper's prompt, show one test (MBPP+'s prompt
    # already holds it).
    if asserts[0].strip() not in question:
        question = f"{question.strip()}\nYour code should pass tests like this one:\n{asserts[0].strip()}"
    setup = [record.get("test_setup_code"), *_strings(record.get("test_imports"))]
    return Problem(
        str(record.get("task_id", index)),
        question,
        "call",
        tuple(TestCase(input=a.strip() + "\n", shown=a.strip()) for a in asserts),
        code,
        entry_point=entry_point,
        test_setup="\n".join(s for s in setup if isinstance(s, str) and s.strip()),
        source="mbpp",
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
    "mbpp": _mbpp,
}
_MARKERS = (
    ("tests", "jsonl"),
    ("public_tests", "codecontests"),
    ("input_output", "apps"),
    ("public_test_cases", "livecodebench"),
    ("test_input", "cure"),
    ("test_list", "mbpp"),
)
_HUB_NAMES = (
    ("code_contests", "codecontests"),
    ("apps", "apps"),
    ("livecodebench", "livecodebench"),
    ("cure", "cure"),
    ("codecontests", "cure"),
    ("mbpp", "mbpp"),
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


#: Seconds to wait for the hub's host to answer before declaring it unreachable (instead of the libraries' retries).
HUB_PROBE_TIMEOUT = 3.0
_TRUE = ("1", "on", "yes", "true")


def _hub_offline() -> bool:
    """Whether the user asked the Hugging Face libraries to stay offline (cached copies only)."""
    return any(os.environ.get(var, "").strip().lower() in _TRUE for var in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"))


def hub_reachable(timeout: float = HUB_PROBE_TIMEOUT) -> bool:
    """Whether a TCP connection to the hub's host (``HF_ENDPOINT``, default huggingface.co) opens within ``timeout``."""
    url = urllib.parse.urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = url.port or (80 if url.scheme == "http" else 443)
    try:
        socket.create_connection((url.hostname or "huggingface.co", port), timeout=timeout).close()
    except OSError:
        return False
    return True


def _local_copy_hint(name: str) -> str:
    stem = name.split("/")[-1]
    return (
        f"save a local copy where there is network (datasets.load_dataset({name!r}, split=...)"
        f'.to_json("{stem}.jsonl")) and pass dataset="path/to/{stem}.jsonl" (coder_tester-v0 docs, "Data"), '
        "or set HF_DATASETS_OFFLINE=1 to read the datasets cache"
    )


def _hub_records(name: str, split: str) -> Iterable[tuple[int, Mapping[str, Any]]]:
    try:
        import datasets
    except ImportError as err:
        raise DependencyNotInstalled(
            "datasets", "datasets", f"loading {name!r} from the Hugging Face hub"
        ) from err
    offline = _hub_offline()
    if not offline and not hub_reachable():
        # Fail now rather than after the hub client's retries (~24 s) with a raw ConnectionError.
        raise DatasetError(f"dataset={name!r}: the Hugging Face hub cannot be reached: {_local_copy_hint(name)}")
    try:
        rows = datasets.load_dataset(name, split=split)
    except Exception as err:  # the hub client's errors have no common base class (requests, httpx, datasets)
        where = "offline mode (HF_DATASETS_OFFLINE/HF_HUB_OFFLINE): no cached copy" if offline else "loading failed"
        raise DatasetError(
            f"dataset={name!r} split={split!r}: {where} ({type(err).__name__}: {str(err)[:200]}): "
            f"check the name and split, or {_local_copy_hint(name)}"
        ) from err
    return enumerate(rows, 1)


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
