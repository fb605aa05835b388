"""The problem generator: deterministic per seed, every family and level solvable and checkable."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamgym.envs.math_tool.answers import is_equivalent, parse_answer
from teamgym.envs.math_tool.problems import DIFFICULTIES, FAMILIES, generate_problem
from teamgym.errors import InvalidArgumentError


@settings(max_examples=100)
@given(st.integers(-(2**40), 2**40), st.sampled_from((None, *DIFFICULTIES)))
def test_same_seed_same_problem(seed: int, difficulty: int | None) -> None:
    assert generate_problem(seed, difficulty=difficulty) == generate_problem(seed, difficulty=difficulty)


def test_seeds_give_varied_problems() -> None:
    questions = {generate_problem(seed).question for seed in range(200)}
    assert len(questions) > 150


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_every_family_and_level_has_a_checkable_answer(family: str, difficulty: int) -> None:
    for seed in range(25):
        problem = generate_problem(seed, difficulty=difficulty, families=(family,))
        assert (problem.family, problem.difficulty, problem.task_id) == (family, difficulty, seed)
        assert parse_answer(problem.answer) is not None
        assert is_equivalent(problem.answer_plain, problem.answer)
        assert is_equivalent(problem.answer, problem.answer_plain)


def test_mixed_difficulty_covers_all_levels() -> None:
    assert {generate_problem(seed).difficulty for seed in range(60)} == set(DIFFICULTIES)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"difficulty": 4}, "difficulty=4"), ({"difficulty": True}, "difficulty=True"),
    ({"families": ("geometry",)}, "geometry"), ({"families": ()}, "non-empty"),
])
def test_bad_options_raise(kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        generate_problem(0, **kwargs)
