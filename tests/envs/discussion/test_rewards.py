"""Majority voting and persuasion credit of discussion-v0."""

from __future__ import annotations

import pytest

from teamgym.envs.discussion.rewards import majority_answer, persuasion_credit


@pytest.mark.parametrize(("answers", "expected"), [
    (["1/2", "0.5", "3"], "1/2"),
    (["3", r"\frac{6}{2}", "1/2", "0.5", "0.5"], "1/2"),
    (["1", "2"], None),
    (["1", "2", "3"], None),
    ([None, None, "7"], "7"),
    ([None, None], None),
    (["x", "y", "x"], "x"),
])
def test_majority_groups_by_value_and_ties_have_no_winner(answers: list, expected: str | None) -> None:
    assert majority_answer(answers) == expected


def test_persuading_to_the_right_answer_is_shared_by_those_who_had_it() -> None:
    previous = {"a": "4", "b": "4", "c": "5"}
    current = {"a": "4", "b": "4", "c": "4"}
    credit = persuasion_credit(previous, current, {"a": True, "b": True, "c": False},
                               {"a": True, "b": True, "c": True}, weight=0.5)
    assert credit == {"a": 0.25, "b": 0.25, "c": 0.0}


def test_misleading_is_charged_to_those_whose_wrong_answer_was_adopted() -> None:
    previous = {"a": "4", "b": "5", "c": "6"}
    current = {"a": "5", "b": "5", "c": "6"}
    credit = persuasion_credit(previous, current, {"a": True, "b": False, "c": False},
                               {"a": False, "b": False, "c": False}, weight=0.5)
    assert credit == {"a": 0.0, "b": -0.5, "c": 0.0}


def test_inventing_a_new_wrong_answer_blames_nobody() -> None:
    credit = persuasion_credit({"a": "4", "b": "5"}, {"a": "7", "b": "5"}, {"a": True, "b": False},
                               {"a": False, "b": False}, weight=1.0)
    assert credit == {"a": 0.0, "b": 0.0}
