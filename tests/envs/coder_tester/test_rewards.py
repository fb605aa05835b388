from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from teamgym.envs.coder_tester.rewards import (
    correct_programs,
    cure_test_rewards,
    cure_test_rewards_reference,
    pass_rate,
    precision,
    suite_kill_rate,
    validity,
)


@st.composite
def matrices(draw):
    programs = draw(st.integers(1, 6))
    tests = draw(st.integers(0, 6))
    matrix = [[draw(st.booleans()) for _ in range(tests)] for _ in range(programs)]
    correct = [draw(st.booleans()) for _ in range(programs)]
    return matrix, correct


@given(matrices())
def test_fast_cure_rewards_equal_the_reference(case):
    matrix, correct = case
    fast = cure_test_rewards(matrix, correct)
    slow = cure_test_rewards_reference(matrix, correct)
    assert fast == pytest.approx(slow)
    assert all(-1.0 <= r <= 1.0 for r in fast)


def test_cure_rewards_by_hand():
    # programs: golden (correct), two mutants (wrong). Tests: catches both, catches one, trivial, wrong.
    matrix = [[True, True, True, False], [False, True, True, True], [False, False, True, False]]
    correct = [True, False, False]
    assert cure_test_rewards(matrix, correct) == [1.0, 0.5, 0.0, -0.5]
    assert validity(matrix, correct) == [True, True, True, False]
    assert suite_kill_rate(matrix, correct, validity(matrix, correct)) == 1.0
    assert precision(matrix, correct, validity(matrix, correct)) == {"p_01": 0.5, "p_00": 0.5}


def test_edge_cases_are_documented_choices():
    assert cure_test_rewards([[True, False]], [False]) == [0.0, 0.0]  # no correct program: unjudgeable
    assert validity([[True, False]], [False]) == [None, None]
    assert cure_test_rewards([[True, False]], [True]) == [0.0, 0.0]  # no wrong program: nothing separated
    assert suite_kill_rate([[True]], [True], [True]) is None
    assert pass_rate([]) == 0.0 and pass_rate([True, False, True, True]) == 0.75
    assert correct_programs([[True, True], [True, False], []]) == [True, False, False]
