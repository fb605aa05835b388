from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from teamgym.envs.coder_tester.adapters import guess_format, load_problems
from teamgym.envs.coder_tester.data import (
    load_bundled_stdio,
    load_humaneval,
    load_jsonl,
    split_check_function,
)
from teamgym.errors import DatasetError, DependencyNotInstalled, InvalidArgumentError

FIXTURES = Path(__file__).with_name("fixtures")


def test_humaneval_has_164_problems_split_per_assert():
    problems = load_humaneval()
    assert len(problems) == 164
    assert all(p.style == "call" and p.solution and p.entry_point and p.tests for p in problems)
    first = problems[0]
    assert first.task_id == "HumanEval/0" and len(first.tests) == 7
    assert all(t.input.startswith("assert candidate(") for t in first.tests)


def test_split_check_keeps_setup_and_drops_constant_asserts():
    source = (
        "X = 1\n\ndef check(candidate):\n    import math\n    assert True\n    assert candidate(1) == X\n"
        "    for i in range(2):\n        assert candidate(i) == i\n"
    )
    setup, tests = split_check_function(source, "f")
    assert "X = 1" in setup and "import math" in setup
    assert [t.shown.splitlines()[0] for t in tests] == ["assert candidate(1) == X", "for i in range(2):"]


def test_bundled_stdio_problems_have_solutions_and_tests():
    problems = load_bundled_stdio()
    assert 20 <= len(problems) <= 40
    assert all(p.style == "stdio" and p.solution and len(p.tests) >= 4 for p in problems)
    assert len({p.task_id for p in problems}) == len(problems)


def test_contract_loader_reads_stdio_and_call_records():
    problems = load_problems(str(FIXTURES / "contract.jsonl"))
    assert [p.task_id for p in problems] == ["add", "7"]
    assert problems[0].style == "stdio" and problems[0].tests[0].output == "3\n"
    assert problems[1].style == "call" and problems[1].tests[0].input == "assert double(2) == 4\n"


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"question": "q", "tests": [{"input": "", "output": ""}]}, "task_id"),
        ({"task_id": "a", "tests": [{"input": "", "output": ""}]}, "question"),
        ({"task_id": "a", "question": "q", "tests": []}, "tests"),
        ({"task_id": "a", "question": "q", "tests": [{"input": 1, "output": ""}]}, "tests[0]"),
        (
            {"task_id": "a", "question": "q", "tests": [{"input": "", "output": ""}], "entry_point": "1x"},
            "entry_point",
        ),
    ],
)
def test_contract_errors_name_file_line_and_field(tmp_path, line, field):
    path = tmp_path / "bad.jsonl"
    good = {"task_id": "ok", "question": "q", "tests": [{"input": "", "output": ""}]}
    path.write_text(json.dumps(good) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(DatasetError) as err:
        load_jsonl(path)
    assert "bad.jsonl" in str(err.value) and "line 2" in str(err.value) and repr(field) in str(err.value)


def test_contract_rejects_bad_json_duplicates_and_missing_files(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"task_id": 1\n')
    with pytest.raises(DatasetError, match="line 1"):
        load_jsonl(path)
    record = json.dumps({"task_id": "a", "question": "q", "tests": [{"input": "", "output": ""}]})
    path.write_text(record + "\n" + record + "\n")
    with pytest.raises(DatasetError, match="already used on line 1"):
        load_jsonl(path)
    with pytest.raises(DatasetError, match="does not exist"):
        load_problems(str(tmp_path / "missing.jsonl"))


@pytest.mark.parametrize(
    ("name", "expected_ids", "styles"),
    [
        ("codecontests.jsonl", ["1_A. Max of two"], ["stdio"]),
        ("apps.jsonl", ["10", "11"], ["stdio", "call"]),
        ("livecodebench.jsonl", ["abc001_a", "lc1"], ["stdio", "call"]),
        ("cure.json", ["1"], ["stdio"]),
    ],
)
def test_adapters_read_fixtures_with_auto_format(name, expected_ids, styles):
    problems = load_problems(str(FIXTURES / name))
    assert [p.task_id for p in problems] == expected_ids
    assert [p.style for p in problems] == styles


def test_adapter_details():
    (contest,) = load_problems(str(FIXTURES / "codecontests.jsonl"))
    assert len(contest.tests) == 3 and contest.solution.startswith("a, b")  # the Python 3 solution
    apps = load_problems(str(FIXTURES / "apps.jsonl"))
    assert apps[1].tests[0].input == "assert square(2) == 4\n"  # one-item output list unwrapped
    lcb = load_problems(str(FIXTURES / "livecodebench.jsonl"))
    assert [t.input for t in lcb[0].tests] == ["3\n", "4\n"]  # the compressed private test is decoded
    assert lcb[1].tests[0].input == "assert Solution().add(1, 2) == 3\n"
    assert load_problems(str(FIXTURES / "cure.json"))[0].tests[1].output == "42\n"


def test_guess_format_and_limit():
    assert guess_format({"public_tests": {}}) == "codecontests"
    assert guess_format({"nothing": 1}) is None
    assert len(load_problems("humaneval", limit=5)) == 5
    assert len(load_problems("all")) == 164 + len(load_bundled_stdio())
    with pytest.raises(InvalidArgumentError, match="dataset_format"):
        load_problems("humaneval", dataset_format="parquet")


def test_hub_name_without_datasets_library(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(DependencyNotInstalled, match="teamgym\\[datasets\\]"):
        load_problems("deepmind/code_contests")


def test_hub_name_goes_through_datasets_load_dataset(monkeypatch):
    rows = [json.loads(line) for line in (FIXTURES / "codecontests.jsonl").read_text().splitlines()]
    calls = []

    def load_dataset(name, split):
        calls.append((name, split))
        return rows

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    problems = load_problems("deepmind/code_contests", split="valid")
    assert calls == [("deepmind/code_contests", "valid")]
    assert [p.source for p in problems] == ["codecontests"]
