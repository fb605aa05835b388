"""math_tool-v0: conformance, the turn protocol, every reward term, oracle and random policies, datasets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import teamgym
from teamgym.envs.math_tool.env import MathToolEnv, tool_answer_from_output
from teamgym.errors import InvalidArgumentError
from teamgym.sandbox import ExecResult
from teamgym.testing import check_env, play_episode

DATA = Path(__file__).parent / "data"


def _play(env: Any, policy_name: str, seed: int) -> dict[str, Any]:
    """One episode with a scripted policy for both roles; returns the episode summary."""
    base = env.unwrapped
    env.reset(seed=seed)
    policies = {role: base.scripted_policy(role, policy_name) for role in base.roles}
    summary: dict[str, Any] = {}

    def policy(agent: str, observation: Any, info: dict[str, Any]) -> str:
        return policies[agent](observation)

    for row in play_episode(env, policy, seed=seed):
        summary = row["infos"]["reasoner"].get("teamgym_episode", summary)
    return summary


def _step(env: Any, *actions: str) -> None:
    for action in actions:
        env.step(action)


@pytest.mark.slow
def test_check_env_passes_with_full_garbage() -> None:
    check_env("math_tool-v0", num_garbage=1000, env_kwargs={"code_timeout": 0.5})


def test_oracle_reaches_the_maximum_team_reward_on_100_seeds() -> None:
    env = teamgym.make("math_tool-v0")
    for seed in range(100):
        summary = _play(env, "oracle", seed)
        assert summary["success"] and summary["final_correct"] and summary["agreed"], (seed, summary)
        assert summary["team_returns"] == {"tool": 1.0, "reasoner": 1.0}
        assert summary["returns"] == {"tool": 2.0, "reasoner": 2.0}
        assert summary["turns"] == 1 and not summary["truncated"]


def test_random_policies_stay_far_below() -> None:
    env = teamgym.make("math_tool-v0")
    successes = sum(_play(env, "random", seed)["success"] for seed in range(100))
    assert successes <= 20


def test_tool_then_reasoner_and_the_reasoner_sees_the_program_output() -> None:
    env = teamgym.make("math_tool-v0", difficulty=1, families=("number_theory",))
    env.reset(seed=1)
    assert env.agent_selection == "tool"
    env.step("```python\nprint(6 * 7)\n```")
    assert env.agent_selection == "reasoner"
    prompt = env.observe("reasoner")["prompt"]
    assert "print(6 * 7)" in prompt and "Its output:\n42" in prompt
    assert env.infos["tool"]["tool_answer"] == "42"
    assert env.infos["tool"]["tool_status"] == "ok"


def test_wrong_answers_continue_and_prompts_carry_the_last_turn() -> None:
    env = teamgym.make("math_tool-v0", max_turns=2)
    env.reset(seed=5)
    _step(env, "```python\nprint(-123456)\n```", r"\boxed{-123456}")
    assert not any(env.terminations.values()) and not any(env.truncations.values())
    assert env.infos["reasoner"]["reward_terms"] == {"team": 0.0, "local": 0.0, "correct": 0.0, "format": 0.0}
    assert env.infos["reasoner"]["agrees_with_tool"] is True
    prompt = env.observe("tool")["prompt"]
    assert "print(-123456)" in prompt and r"The reasoner's answer in turn 0: \boxed{-123456}" in prompt
    _step(env, "no code", "no box")
    assert all(env.truncations.values())
    assert env.infos["tool"]["teamgym_episode"]["success"] is False


def test_correct_reasoner_disagreeing_with_the_tool_does_not_end_the_episode() -> None:
    env = teamgym.make("math_tool-v0")
    env.reset(seed=2)
    answer = env.unwrapped.task.answer
    env.step("```python\nprint(-987654)\n```")
    env.step(rf"\boxed{{{answer}}}")
    assert env.infos["reasoner"]["reward_terms"] == {"team": 0.0, "local": 1.0, "correct": 1.0, "format": 0.0}
    assert env.infos["tool"]["reward_terms"] == {"team": 0.0, "local": 0.0}
    assert not any(env.terminations.values())
    env.step(f"```python\nprint({env.unwrapped.task.answer_plain!r})\n```")
    assert env.infos["tool"]["reward_terms"]["correct"] == 1.0
    env.step(rf"\boxed{{{answer}}}")
    assert all(env.terminations.values())
    assert env.infos["tool"]["reward_terms"] == {"team": 1.0, "local": 0.0}
    assert env.infos["tool"]["teamgym_episode"]["team_returns"] == {"tool": 1.0, "reasoner": 1.0}


def test_team_term_is_paid_once_at_truncation() -> None:
    env = teamgym.make("math_tool-v0", max_turns=2)
    env.reset(seed=3)
    answer = env.unwrapped.task.answer
    _step(env, "```python\nprint(-1)\n```", rf"\boxed{{{answer}}}")
    assert env.infos["reasoner"]["reward_terms"]["team"] == 0.0
    _step(env, "```python\nprint(-1)\n```", rf"\boxed{{{answer}}}")
    assert all(env.truncations.values())
    assert env.infos["reasoner"]["reward_terms"]["team"] == 1.0
    summary = env.infos["reasoner"]["teamgym_episode"]
    assert summary["team_returns"] == {"tool": 1.0, "reasoner": 1.0} and summary["success"]


@pytest.mark.parametrize(("action", "status", "terms"), [
    ("just words", "no_code", {"team": 0.0, "local": -0.5, "correct": 0.0, "format": -0.5, "exec_error": 0.0}),
    ("```python\n\n```", "no_code", {"team": 0.0, "local": -0.5, "correct": 0.0, "format": -0.5, "exec_error": 0.0}),
    ("```python\n1/0\n```", "error", {"team": 0.0, "local": -0.25, "correct": 0.0, "format": 0.0, "exec_error": -0.25}),
    ("```python\nx = 1\n```", "ok", {"team": 0.0, "local": -0.25, "correct": 0.0, "format": 0.0, "exec_error": -0.25}),
    ("```python\nwhile True: pass\n```", "timeout",
     {"team": 0.0, "local": -0.25, "correct": 0.0, "format": 0.0, "exec_error": -0.25}),
])
def test_tool_format_and_exec_terms(action: str, status: str, terms: dict[str, float]) -> None:
    env = teamgym.make("math_tool-v0", code_timeout=0.3)
    env.reset(seed=0)
    env.step(action)
    assert env.infos["tool"]["tool_status"] == status
    assert env.infos["tool"]["reward_terms"] == terms
    assert env.rewards["tool"] == terms["local"]


def test_reasoner_without_a_box_gets_the_format_penalty() -> None:
    env = teamgym.make("math_tool-v0", format_penalty=0.3)
    env.reset(seed=0)
    _step(env, "```python\nprint(1)\n```", "the answer is 4")
    assert env.infos["reasoner"]["reward_terms"]["format"] == -0.3
    assert env.infos["reasoner"]["answer"] is None


def test_equivalent_forms_are_accepted() -> None:
    env = teamgym.make("math_tool-v0", difficulty=2, families=("arithmetic",))
    env.reset(seed=11)
    task = env.unwrapped.task
    env.step(f"```python\nfrom fractions import Fraction\nprint(Fraction({task.answer_plain!r}))\n```")
    assert env.infos["tool"]["tool_correct"]
    env.step(rf"So $x = {task.answer}$, i.e. \boxed{{{float(__import__('sympy').sympify(task.answer_plain)):.12f}}}")
    assert env.infos["reasoner"]["answer"] is not None


def test_sandbox_infrastructure_failure_is_reported_not_scored(monkeypatch: pytest.MonkeyPatch) -> None:
    import teamgym.sandbox

    monkeypatch.setattr(teamgym.sandbox, "run_python",
                        lambda *args, **kwargs: ExecResult(status="killed", infra_error="fork failed: EAGAIN"))
    env = teamgym.make("math_tool-v0")
    env.reset(seed=0)
    env.step("```python\nprint(1)\n```")
    assert env.infos["tool"]["infra_error"] == "fork failed: EAGAIN"
    assert env.infos["reasoner"]["infra_error"] == "fork failed: EAGAIN"
    assert env.infos["tool"]["reward_terms"] == {"team": 0.0, "local": 0.0}
    env.step(r"\boxed{1}")
    assert "infra_error" not in env.infos["reasoner"]


def test_same_seed_same_problem_and_task_id_option() -> None:
    a, b = teamgym.make("math_tool-v0"), teamgym.make("math_tool-v0")
    a.reset(seed=123)
    b.reset(seed=123)
    assert a.unwrapped.task == b.unwrapped.task
    a.reset(options={"task_id": 42})
    assert a.unwrapped.task.task_id == 42
    with pytest.raises(InvalidArgumentError, match="int seed"):
        a.reset(options={"task_id": "nope"})


def test_dataset_option_uses_the_file_ids() -> None:
    env = teamgym.make("math_tool-v0", dataset=str(DATA / "teamgym.jsonl"))
    assert env.unwrapped.task_ids() == ("half", 7, "root")
    env.reset(options={"task_id": "half"})
    _step(env, "```python\nprint(0.5)\n```", r"\boxed{\dfrac12}")
    assert all(env.terminations.values())
    assert env.infos["tool"]["teamgym_episode"]["success"]


def test_ansi_render_shows_problem_program_output_and_verdicts() -> None:
    env = teamgym.make("math_tool-v0", render_mode="ansi")
    env.reset(seed=4)
    _step(env, "```python\nprint(2 + 2)\n```", r"\boxed{4}")
    text = env.render()
    for part in ("problem (", "reference answer:", "| tool |", "[program output] 4", "[reasoner answer] 4"):
        assert part in text


@pytest.mark.parametrize("kwargs", [
    {"code_timeout": 0}, {"code_timeout": "1"}, {"code_memory_mb": 10}, {"format_penalty": -1.0},
    {"exec_penalty": float("nan")}, {"difficulty": 0}, {"families": ("poetry",)},
])
def test_bad_options_raise(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError):
        MathToolEnv(**kwargs)


def test_tool_answer_is_the_last_printed_line() -> None:
    assert tool_answer_from_output("work\n\n 3/7 \n\n") == "3/7"
    assert tool_answer_from_output(r"answer: \boxed{5}") == "5"
    assert tool_answer_from_output(" \n") is None


def test_tool_programs_may_import_sympy_and_nothing_else_installed():
    import teamgym

    env = teamgym.make("math_tool-v0", code_timeout=10.0)
    env.reset(seed=0)
    program = (
        "```python\nimport sympy\ntry:\n    import numpy\n    print('numpy')\nexcept ImportError:\n"
        "    print(sympy.Integer(6) * 7)\n```"
    )
    env.step(program)
    info = env.infos["tool"]
    assert info["tool_status"] == "ok" and "infra_error" not in info and info["tool_answer"] == "42"
