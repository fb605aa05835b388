"""The compact presets of sokoban-v0 and sudoku-v0: their prompts show the env's board and never the answer, their
demonstrations solve the tasks when replayed in the env, fit the completion budget, and the main job trains on them.
"""

from __future__ import annotations

import pytest

import teamgym
from teamgym.rollout.tiny import char_tokenizer
from teamgym.sandbox._literal import answer
from teamgym.sandbox.result import Job
from teamgym.train import TrainConfig, train
from teamgym.train.presets import PRESETS, get_preset
from teamgym.train.sft import Demonstration, collect_demonstrations

ENVS = ("sokoban-v0", "sudoku-v0")


def make(env_id: str):
    return teamgym.make(env_id, **PRESETS[env_id].env_kwargs)


def shown_board(env) -> str:
    """The board as the env's own prompt shows it (its ``_show``), without the column header, the box rules, the row
    numbers and the spaces and bars between cells: the rows the compact prompt should hold."""
    base = env.unwrapped
    rows = []
    for line in base._show(base.state.board).splitlines()[1:]:
        if set(line.strip()) <= set("-+"):  # a sudoku box rule
            continue
        rows.append(line[3:].replace(" ", "").replace("|", ""))
    return "\n".join(rows)


def oracle_line(env) -> str:
    answer_text = env.unwrapped.scripted_policy("planner", "oracle")(env.observe("planner"))
    return next(line.strip() for line in answer_text.splitlines() if line.startswith("Actions"))


def replay(env_id: str, task_ids) -> tuple[list[Demonstration], list[bool]]:
    """The preset's expert played through the preset's formats, as the SFT stage collects it: the demonstrations,
    and whether each task was solved."""
    envs, demos, solved = [], [], []

    def env_fn():
        envs.append(make(env_id))
        return envs[-1]

    for task_id in task_ids:  # one task per call, to read its env's end state after it
        demos += collect_demonstrations(env_fn, PRESETS[env_id], [task_id])
        solved.append(envs[-1].unwrapped.state.solved)
    return demos, solved


@pytest.mark.parametrize("env_id", ENVS)
def test_compact_preset_is_the_default_and_env_prompts_are_not_changed(env_id):
    assert get_preset(env_id, "compact") is PRESETS[env_id]
    assert get_preset(env_id, "env").demonstration is None


@pytest.mark.parametrize("env_id", ENVS)
def test_prompts_show_the_envs_board_and_no_answer(env_id):
    """Over episodes of 3 turns (a random tool, a planner that does nothing), at every turn: the tool sees the board
    and ``T>``, never the oracle's plan; the planner sees the board, the tool's printed plan line and ``P>``."""
    prompt = PRESETS[env_id].prompt
    seen = 0
    for task_id in range(20):
        env = make(env_id)
        env.reset(seed=0, options={"task_id": task_id})
        random_tool = env.unwrapped.scripted_policy("tool", "random")
        for agent in env.agent_iter():
            if env.terminations[agent] or env.truncations[agent]:
                env.step(None)
                continue
            text, board = prompt(env, agent), shown_board(env)
            if agent == "tool":
                assert text == f"{board}\nT>"
                assert oracle_line(env) not in text and "Actions" not in text
                env.step(random_tool(env.observe(agent)))
            else:
                printed = next(line.strip() for line in env.unwrapped.state.tool_output.splitlines()
                               if line.startswith("Actions"))
                assert text == f"{board}\n{printed}\nP>"
                env.step("no plan")
                seen += 1
    assert seen == 60  # every episode ran its 3 turns


@pytest.mark.parametrize("env_id", ENVS)
def test_demonstrations_replay_to_success_through_the_literal_fast_path(env_id):
    demos, solved = replay(env_id, range(50))
    assert all(solved)
    tools = [d.completion for d in demos if d.agent == "tool"]
    assert len(tools) == 50  # each task solved at its first turn
    env = make(env_id)
    for task_id, completion in enumerate(tools[:5]):
        assert completion.startswith("```\nprint('Actions: ") and completion.endswith("')\n```")
        env.reset(seed=0, options={"task_id": task_id})
        program = env.unwrapped._preamble(env.unwrapped.state.board) + completion[len("```\n"):-len("```")]
        assert answer(Job(program)) is not None  # the sandbox answers it without running it
    planners = [d for d in demos if d.agent == "planner"]
    assert all(d.prompt.endswith(f"\n{d.completion}\nP>") for d in planners)  # it copies the tool's line


@pytest.mark.parametrize("env_id", ENVS)
def test_longest_demonstration_fits_max_tokens(env_id):
    demos, _ = replay(env_id, range(500))
    tokenizer = char_tokenizer()
    longest = max(len(tokenizer(d.completion, add_special_tokens=False)["input_ids"]) for d in demos)
    assert longest + 1 <= PRESETS[env_id].max_tokens  # and its end-of-sequence token


@pytest.mark.parametrize("env_id", ENVS)
def test_main_job_trains_end_to_end_on_the_preset(tmp_path, env_id):
    config = TrainConfig.from_dict({
        "env_id": env_id, "steps": 1, "sft_steps": 2, "sft_tasks": 4, "eval_tasks": 2, "tasks_per_step": 2,
        "n_layer": 1, "n_embd": 16, "n_head": 1, "output_dir": str(tmp_path / "run"), "plot": False,
        "progress_bar": False, "torch_threads": 1,
    })
    summary = train(config)
    assert summary["env_id"] == env_id and summary["steps"] == 1 and summary["sft_steps"] == 2
    for key in ("heldout_success_before", "heldout_success_after_sft", "heldout_success_after"):
        assert 0.0 <= summary[key] <= 1.0
    assert summary["completions_used"] > 0


def test_plan_paths_longest_tool_program_fits_max_tokens():
    """A tool program cut short by ``max_tokens`` never closes its code block, so a task whose shortest path is
    longer than the budget allows could not be solved at all (40 tokens cut every plan of 8 moves or more)."""
    from teamgym.envs.planning.plan_path import generate_path_task

    lengths = {task_id: generate_path_task(task_id, size=4).optimal_length for task_id in range(5000)}
    longest = max(lengths, key=lengths.get)
    assert lengths[longest] >= 10  # the longest shortest path of a 4x4 grid in these tasks
    demos, _ = replay("plan_path-v0", [longest])
    tool = next(d.completion for d in demos if d.agent == "tool")
    assert tool.count(",") == lengths[longest] - 1
    assert len(char_tokenizer()(tool, add_special_tokens=False)["input_ids"]) + 1 <= PRESETS["plan_path-v0"].max_tokens



def test_sokoban_v1_shares_v0s_preset():
    """v1 changes the rewards only: the same prompts, demonstrations, options and budget (so v0's tests cover it)."""
    assert PRESETS["sokoban-v1"] == PRESETS["sokoban-v0"]
    v0, v1 = make("sokoban-v0"), make("sokoban-v1")
    for env in (v0, v1):
        env.reset(seed=7)
    preset = PRESETS["sokoban-v1"]
    for agent in ("tool", "planner"):
        assert preset.prompt(v0.unwrapped, agent) == preset.prompt(v1.unwrapped, agent)
        assert preset.demonstration(v0.unwrapped, agent) == preset.demonstration(v1.unwrapped, agent)
