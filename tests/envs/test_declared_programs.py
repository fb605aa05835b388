"""Envs that run programs declare them: ``env.programs(action)`` names exactly the jobs ``step(action)`` runs."""

from __future__ import annotations

import pytest

import teamgym
from teamgym.sandbox import Program, prefetched, run_programs
from tests.support.sandbox_batches import record_batches

ACTIONS = {
    "plan_path-v0": ["```\nprint('Actions: R,D')\n```", "```\n1/0\n```", "no code", "Actions: R"],
    "sudoku-v0": ["```\nprint('hello')\n```", "nothing"],
    "math_tool-v0": ["```python\nprint(6 * 7)\n```", "```\nimport sympy\nprint(sympy.Integer(2) ** 5)\n```",
                     "The answer is \\boxed{4}"],
}


@pytest.mark.parametrize("env_id", sorted(ACTIONS))
def test_declared_programs_are_the_ones_the_step_runs(env_id, monkeypatch):
    batches = record_batches(monkeypatch)
    declared_any = False
    for action in ACTIONS[env_id]:
        env = teamgym.make(env_id)
        env.reset(seed=3)
        for _ in range(4):  # act with every role in turn
            if all(env.terminations.values()) or all(env.truncations.values()):
                break
            declared = env.programs(action)
            declared_any = declared_any or bool(declared)
            assert all(isinstance(p, Program) for p in declared)
            batches.clear()
            env.step(action)
            assert [code for batch in batches for code in batch] == [p.job.code for p in declared]
    assert declared_any


def test_a_prefetched_step_gives_the_steps_own_result(monkeypatch):
    action = "```\nprint('Actions: R,D')\n```"
    outcomes = []
    for prefetch in (False, True):
        env = teamgym.make("plan_path-v0")
        env.reset(seed=5)
        declared = env.programs(action)
        results = run_programs(declared) if prefetch else []
        batches = record_batches(monkeypatch)
        with prefetched(declared if prefetch else [], results):
            env.step(action)
        outcomes.append((env.rewards, env.infos["tool"]["reward_terms"], env.observe("planner")["prompt"]))
        assert batches == ([] if prefetch else [[declared[0].job.code]])
    assert outcomes[0] == outcomes[1]
