"""The JSONL loader: each supported schema, and errors that name file, line, field and fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from teamgym.envs.math_tool.answers import is_equivalent
from teamgym.envs.math_tool.data import load_problems
from teamgym.errors import DatasetError

DATA = Path(__file__).parent / "data"


def test_gsm8k_answers_come_after_the_hashes() -> None:
    problems = load_problems(DATA / "gsm8k.jsonl")
    assert [p.answer for p in problems] == ["72", "2500"]
    assert [p.task_id for p in problems] == ["gsm8k:1", "gsm8k:2"]
    assert {p.family for p in problems} == {"gsm8k"}


def test_math_answers_come_from_the_last_box() -> None:
    problems = load_problems(DATA / "math.jsonl")
    assert problems[0].task_id == "test/prealgebra/1.json"
    assert problems[0].answer == r"\frac{5}{6}"
    assert is_equivalent(problems[1].answer_plain, r"\sqrt{8}")
    assert problems[1].task_id == "math:2"


def test_aime_answers_may_be_numbers() -> None:
    problems = load_problems(DATA / "aime.jsonl")
    expected = [("2024-I-1", "24", "aime"), ("2024-I-2", "1001", "aime")]
    assert [(p.task_id, p.answer, p.family) for p in problems] == expected


def test_teamgym_schema_skips_blank_lines() -> None:
    problems = load_problems(DATA / "teamgym.jsonl")
    assert [p.task_id for p in problems] == ["half", 7, "root"]
    assert problems[0].answer_plain == "1/2"


def test_bad_gsm8k_line_is_named() -> None:
    with pytest.raises(DatasetError, match=r"bad_gsm8k.jsonl:2: field 'answer' has no '####'"):
        load_problems(DATA / "bad_gsm8k.jsonl")


@pytest.mark.parametrize(("line", "match"), [
    ("{not json", "line|:1: not valid JSON"),
    ("[1, 2]", ":1: a list, expected a JSON object"),
    (json.dumps({"task_id": "a", "question": "", "answer": "1"}), ":1: field 'question'"),
    (json.dumps({"task_id": "a", "question": "q"}), ":1: field 'answer' is missing"),
    (json.dumps({"problem": "p", "solution": "no box"}), r":1: field 'solution' has no \\boxed"),
    (json.dumps({"text": "hello"}), ":1: fields \\['text'\\] match no known schema"),
    (json.dumps({"task_id": True, "question": "q", "answer": "1"}), ":1: field 'task_id' is True"),
])
def test_malformed_lines_raise_dataset_error(tmp_path: Path, line: str, match: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=match):
        load_problems(path)


def test_duplicate_ids_missing_and_empty_files(tmp_path: Path) -> None:
    path = tmp_path / "dup.jsonl"
    record = json.dumps({"task_id": "a", "question": "q", "answer": "1"})
    path.write_text(f"{record}\n{record}\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="dup.jsonl:2: field 'task_id' 'a' repeats line 1"):
        load_problems(path)
    with pytest.raises(DatasetError, match="no such file"):
        load_problems(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="no problems"):
        load_problems(tmp_path / "empty.jsonl")
