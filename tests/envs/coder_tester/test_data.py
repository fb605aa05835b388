from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from teamgym.envs.coder_tester import adapters
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
        ("mbpp.jsonl", ["2", "3", "17"], ["call", "call", "call"]),
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
    monkeypatch.setattr(adapters, "hub_reachable", lambda timeout=0: True)
    for var in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    problems = load_problems("deepmind/code_contests", split="valid")
    assert calls == [("deepmind/code_contests", "valid")]
    assert [p.source for p in problems] == ["codecontests"]


def test_mbpp_records_become_call_problems():
    similar, prime, perimeter = load_problems(str(FIXTURES / "mbpp.jsonl"))
    assert similar.entry_point == "similar_elements" and similar.source == "mbpp"
    assert similar.solution.startswith("def similar_elements")
    # MBPP's text does not name the function: the first test is shown with it.
    assert similar.question.endswith("assert similar_elements((3, 4, 5, 6),(5, 7, 4, 10)) == (4, 5)")
    assert prime.tests[-1].input == "assert is_not_prime(37) == False\n"  # challenge tests are tests too
    assert len(prime.tests) == 4
    # Sanitized MBPP / MBPP+: prompt, test_imports; the entry point is the called function `code` defines.
    assert perimeter.question.startswith("Write a function that returns the perimeter")
    assert perimeter.test_setup == "import math" and perimeter.entry_point == "square_perimeter"


def _fake_datasets(monkeypatch, load_dataset):
    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))


def _never_called(*args, **kwargs):
    raise AssertionError("the hub must not be contacted")


def test_unreachable_hub_fails_fast_with_the_local_file_fix(monkeypatch):
    for var in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    _fake_datasets(monkeypatch, _never_called)

    def refuse(address, timeout=None):
        assert timeout is not None and timeout <= adapters.HUB_PROBE_TIMEOUT  # one short probe, no retries
        raise OSError("Network is unreachable")

    monkeypatch.setattr(adapters.socket, "create_connection", refuse)
    with pytest.raises(DatasetError, match="cannot be reached") as err:
        load_problems("google-research-datasets/mbpp")
    assert "dataset=\"path/to/mbpp.jsonl\"" in str(err.value) and "HF_DATASETS_OFFLINE" in str(err.value)


@pytest.mark.parametrize("var", ["HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"])
def test_offline_mode_without_a_cached_copy_is_a_dataset_error(monkeypatch, var):
    for other in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(var, "1")
    monkeypatch.setattr(adapters.socket, "create_connection", _never_called)

    def load_dataset(name, split):
        raise ConnectionError("Couldn't reach the Hugging Face Hub for dataset 'mbpp' (offline mode is enabled)")

    _fake_datasets(monkeypatch, load_dataset)
    with pytest.raises(DatasetError, match="no cached copy.*ConnectionError.*local copy"):
        load_problems("mbpp")


def test_offline_mode_reads_a_cached_copy(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(adapters.socket, "create_connection", _never_called)
    rows = [json.loads(line) for line in (FIXTURES / "mbpp.jsonl").read_text().splitlines()]
    _fake_datasets(monkeypatch, lambda name, split: rows)
    assert [p.task_id for p in load_problems("mbpp")] == ["2", "3", "17"]


def test_program_puts_the_prelude_first_and_future_imports_above_it():
    problem = load_humaneval()[0]
    program = problem.program(
        "from __future__ import annotations\ndef has_close_elements(a, b):\n    return 1"
    )
    assert program.startswith("from __future__ import annotations\n" + problem.prelude)
    compile(program, "solution.py", "exec")
    assert load_bundled_stdio()[0].program("print(1)") == "print(1)"
