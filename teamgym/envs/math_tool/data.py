r"""Load math problems from JSONL files in the GSM8K, MATH, AIME-style or teamgym schema.

One JSON object per line; the schema is recognised per line from its fields:

===========  ===================================  ======================================================  =============
format       fields                               answer taken from                                       task id
===========  ===================================  ======================================================  =============
teamgym      ``task_id``, ``question``,           ``answer``                                              ``task_id``
             ``answer``
gsm8k        ``question``, ``answer``             the text after ``####`` in ``answer``                   ``<file>:<n>``
math         ``problem``, ``solution``            the last ``\boxed{}`` in ``solution``                   ``unique_id``
                                                  (or ``answer`` when present)                            or
                                                                                                          ``<file>:<n>``
aime         ``problem``, ``answer``              ``answer`` (a string or a number)                       ``id``/``ID``
                                                                                                          or
                                                                                                          ``<file>:<n>``
===========  ===================================  ======================================================  =============

Blank lines are skipped. Anything else wrong (bad JSON, a missing or empty field, a GSM8K answer without ``####``,
a MATH solution without ``\boxed{}``, a duplicate id) raises :class:`~teamgym.errors.DatasetError` naming the file,
the line, the field and the fix.

>>> problems = load_problems("tests/envs/math_tool/data/gsm8k.jsonl")  # doctest: +SKIP
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from teamgym.core.text import extract_boxed
from teamgym.envs.math_tool.answers import parse_answer
from teamgym.envs.math_tool.problems import MathProblem
from teamgym.errors import DatasetError

__all__ = ["load_problems"]


def load_problems(path: str | Path) -> list[MathProblem]:
    """Every problem in a JSONL file, in file order.

    Args:
        path: a ``.jsonl`` file in any of the supported schemas (they may be mixed line by line).

    Raises:
        DatasetError: the file is missing, empty or malformed (the message names file, line and field).
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"dataset={str(path)!r}: no such file: pass the path of an existing .jsonl file")
    problems: list[MathProblem] = []
    seen: dict[int | str, int] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise DatasetError(f"{where}: not valid JSON ({err.msg}): write one JSON object per line") from err
            if not isinstance(record, dict):
                raise DatasetError(f"{where}: a {type(record).__name__}, expected a JSON object per line")
            problem = _parse_record(record, where, default_id=f"{path.stem}:{number}")
            if problem.task_id in seen:
                raise DatasetError(
                    f"{where}: field 'task_id' {problem.task_id!r} repeats line {seen[problem.task_id]}: "
                    "give every problem a distinct id"
                )
            seen[problem.task_id] = number
            problems.append(problem)
    if not problems:
        raise DatasetError(f"{path}: no problems in the file: add one JSON object per line")
    return problems


def _parse_record(record: dict[str, Any], where: str, default_id: str) -> MathProblem:
    if "task_id" in record:
        task_id = record["task_id"]
        if not isinstance(task_id, (str, int)) or isinstance(task_id, bool) or task_id == "":
            raise DatasetError(f"{where}: field 'task_id' is {task_id!r}: expected a non-empty string or an int")
        question = _text(record, "question", where, "the teamgym schema has task_id, question, answer")
        answer = _answer(record, "answer", where)
        return _problem(task_id, question, answer, "teamgym")
    if "question" in record:
        question = _text(record, "question", where, "GSM8K lines have 'question' and 'answer'")
        solution = _text(record, "answer", where, "GSM8K lines have 'question' and 'answer' ending in '#### N'")
        if "####" not in solution:
            raise DatasetError(
                f"{where}: field 'answer' has no '####': GSM8K answers end with '#### <final answer>' "
                "(or use the teamgym schema: task_id, question, answer)"
            )
        answer = solution.rsplit("####", 1)[1].strip().replace(",", "")
        if not answer:
            raise DatasetError(f"{where}: field 'answer' has nothing after '####': write the final answer after it")
        return _problem(default_id, question, answer, "gsm8k")
    if "problem" in record:
        question = _text(record, "problem", where, "MATH lines have 'problem' and 'solution'; AIME 'problem', 'answer'")
        task_id = record.get("unique_id", record.get("id", record.get("ID", default_id)))
        if not isinstance(task_id, (str, int)) or isinstance(task_id, bool):
            task_id = default_id
        if "answer" in record:
            family = "math" if "solution" in record else "aime"
            return _problem(task_id, question, _answer(record, "answer", where), family)
        solution = _text(record, "solution", where, "MATH lines have 'problem' and 'solution' (or an 'answer')")
        boxed = extract_boxed(solution)
        if not boxed:
            raise DatasetError(
                f"{where}: field 'solution' has no \\boxed{{...}} answer: MATH solutions put the final answer in "
                "\\boxed{}; add one, or give the answer in an 'answer' field"
            )
        return _problem(task_id, question, boxed, "math")
    raise DatasetError(
        f"{where}: fields {sorted(record)} match no known schema: expected (task_id, question, answer), "
        "GSM8K (question, answer), MATH (problem, solution) or AIME (problem, answer)"
    )


def _text(record: dict[str, Any], field: str, where: str, hint: str) -> str:
    value = record.get(field)
    if not isinstance(value, str) or not value.strip():
        state = "missing" if field not in record else f"{type(value).__name__} {value!r}"[:80]
        raise DatasetError(f"{where}: field {field!r} is {state}: expected a non-empty string ({hint})")
    return value


def _answer(record: dict[str, Any], field: str, where: str) -> str:
    value = record.get(field)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return _text(record, field, where, "the final answer, e.g. '42' or '\\frac{1}{2}'").strip()


def _problem(task_id: int | str, question: str, answer: str, family: str) -> MathProblem:
    parsed = parse_answer(answer)
    plain = ", ".join(str(v) for v in parsed.values) if parsed is not None else answer
    if parsed is not None and parsed.ordered:
        plain = f"({plain})"
    return MathProblem(task_id=task_id, question=question, answer=answer, family=family, difficulty=0,
                       answer_plain=plain)
