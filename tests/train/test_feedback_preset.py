"""``prompt_format="compact_feedback"`` and ``sft_perturb``: plan_path's compact prompts plus the turn and the last
answer's outcome (what the env's own prompts say), and demonstrations of later turns after a random first turn."""

from __future__ import annotations

import re

import pytest

import teamgym
from teamgym.errors import InvalidArgumentError
from teamgym.train import TrainConfig, train
from teamgym.train.presets import FEEDBACK_PRESETS, PRESETS, get_preset
from teamgym.train.sft import collect_demonstrations

LINE = re.compile(r"^t\d ok(\d+|-) bad(\d+|-)$")


def make(env_id: str = "plan_path-v1"):
    return teamgym.make(env_id, **PRESETS[env_id].env_kwargs)


def tool(moves: str) -> str:
    return f"```\nprint('Actions: {moves}')\n```"


def blocked_moves(env) -> str:
    """Moves that are all invalid from the current position (off the grid or into an obstacle), 3 of them."""
    base = env.unwrapped
    for name in "UDLR":
        if base._move(base.state.board, name) is None:
            return ",".join([name] * 3)
    raise AssertionError("no blocked move from here")


def start(env, task_id: int) -> None:
    env.reset(seed=0, options={"task_id": task_id})


def find_task(env, condition) -> int:
    for task_id in range(500):
        start(env, task_id)
        if condition(env):
            return task_id
    raise AssertionError("no such task")


def test_first_turn_prompts_are_the_compact_ones_so_the_demonstrations_are_unchanged():
    env, feedback = make(), FEEDBACK_PRESETS["plan_path-v1"]
    for task_id in range(20):
        start(env, task_id)
        for agent in ("tool", "planner"):
            if agent == "planner":
                env.step(tool("R"))
            assert feedback.prompt(env, agent) == PRESETS["plan_path-v1"].prompt(env, agent)
    demos = collect_demonstrations(make, PRESETS["plan_path-v1"], list(range(10)))
    assert collect_demonstrations(make, feedback, list(range(10))) == demos


def test_later_turns_say_the_turn_and_what_the_last_answer_did():
    env, feedback = make(), FEEDBACK_PRESETS["plan_path-v1"]
    find_task(env, lambda e: any(e.unwrapped._move(e.unwrapped.state.board, m) is None for m in "UDLR"))
    before = feedback.prompt(env, "tool")
    moves = blocked_moves(env)
    env.step(tool(moves))
    env.step(f"Actions: {moves}")  # nothing applies: the board is the same
    after = feedback.prompt(env, "tool")
    assert after == before.replace("\nT>", "\nt1 ok0 bad3\nT>")  # greedy decoding is no longer handed the same prompt
    assert feedback.prompt(env, "tool").splitlines()[-2] == "t1 ok0 bad3"
    env.step(tool(moves))
    env.step("no plan here")
    lines = feedback.prompt(env, "tool").splitlines()
    assert lines[-2] == "t2 ok- bad-" and lines[:-2] == after.splitlines()[:-2]
    planner_lines = (env.step(tool("U")), feedback.prompt(env, "planner").splitlines())[1]
    assert planner_lines[-3] == "t2 ok- bad-" and planner_lines[-2] == "Actions: U"


def test_the_line_holds_counts_only_never_moves():
    env, feedback = make(), FEEDBACK_PRESETS["plan_path-v1"]
    for task_id in range(30):
        start(env, task_id)
        env.step(tool("R,D"))
        env.step("Actions: R,D")
        if env.unwrapped.state.solved:
            continue
        line = feedback.prompt(env, "tool").splitlines()[-2]
        assert LINE.match(line), line


def test_perturbed_tasks_add_demonstrations_of_later_turns_that_solve_them():
    feedback = FEEDBACK_PRESETS["plan_path-v1"]
    envs = []

    def env_fn():
        envs.append(make())
        return envs[-1]

    ids = list(range(12))
    plain = collect_demonstrations(env_fn, feedback, ids)
    demos = collect_demonstrations(env_fn, feedback, ids, perturbed=ids[:6])
    assert demos[:len(plain)] == plain  # the unperturbed pass first, as before
    later = demos[len(plain):]
    assert later and all(LINE.match(d.prompt.splitlines()[-2 if d.agent == "tool" else -3]) for d in later)
    assert len(later) % 2 == 0 and len(later) <= 12  # a tool and a planner demonstration per unsolved task
    assert envs[-1].unwrapped.state.solved  # the expert takes over and solves it
    assert collect_demonstrations(make, feedback, ids, perturbed=ids[:6]) == demos  # the same random turns


def test_bad_settings_are_refused_naming_the_value():
    with pytest.raises(InvalidArgumentError, match="sft_perturb=1.5"):
        TrainConfig(sft_perturb=1.5)
    with pytest.raises(InvalidArgumentError, match="sft_perturb"):
        TrainConfig(sft_perturb=-0.1)
    with pytest.raises(InvalidArgumentError, match="prompt_format='compact_feedback' with env_id='sokoban-v0'"):
        get_preset("sokoban-v0", "compact_feedback")
    with pytest.raises(InvalidArgumentError, match="sft_perturb > 0"):
        collect_demonstrations(make, PRESETS["plan_path-v1"], [1], perturbed=[1])


def test_the_trainer_refuses_sft_perturb_without_a_random_first_turn_before_it_starts(tmp_path):
    from teamgym.train import Trainer

    config = TrainConfig.from_dict({"sft_perturb": 0.5, "output_dir": str(tmp_path / "run")})
    with pytest.raises(InvalidArgumentError, match="sft_perturb=0.5 but plan_path-v1's 'compact' preset"):
        Trainer(config)
    assert not (tmp_path / "run").exists()


def test_the_trainer_warm_starts_on_them(tmp_path):
    config = TrainConfig.from_dict({"prompt_format": "compact_feedback", "sft_perturb": 0.5, "n_layer": 1,
                                    "n_embd": 16, "n_head": 1, "sft_tasks": 8, "sft_steps": 2, "steps": 1,
                                    "eval_tasks": 2, "eval_every": 0, "tasks_per_step": 2, "plot": False,
                                    "progress_bar": False, "output_dir": str(tmp_path / "run")})
    summary = train(config)
    assert summary["steps"] == 1 and summary["sft_steps"] == 2
