"""Each estimator in the trainer gets the groups, anchors and rewards its paper defines.

Every test builds a batch whose correct groups differ from the tree nodes the old wiring fed (a trajectory batch has
one row per node, so node groups are all singletons), computes the paper's advantage with a slow loop over that
batch's rows, and compares it with what the trainer's estimator returns.
"""

from __future__ import annotations

import itertools
import random
import statistics
from functools import partial

import pytest
import torch

import teamgym
from teamgym.rollout import AgentTurnBatch, LocalSlots, RolloutEngine, TreeSampling, default_prompt, task_seed
from teamgym.train import TrainConfig
from teamgym.train.columns import batch_columns
from teamgym.train.estimators import estimate, make_estimator
from tests.rollout.fakes import ScriptedSampler

AGENTS = ("tool", "planner")


def trajectory_batch(seed: int) -> AgentTurnBatch:
    """Two tasks x four trajectories; each trajectory a random sequence of agent turns (an agent may act 0-3 times),
    rewards on own steps and payments to the other agent."""
    rng = random.Random(seed)
    rows = []
    for task in (7, 9):
        for repeat in range(4):
            episode = f"t{task}-{repeat}"
            for step in range(rng.randint(1, 5)):
                agent = rng.choice(AGENTS)
                other = next(a for a in AGENTS if a != agent)
                paid = round(rng.uniform(-1, 1), 2) if rng.random() < 0.5 else 0.0
                reward = round(rng.uniform(-1, 2), 2)
                rows.append({"episode_id": episode, "task_id": task, "agent": agent, "turn": step // 2,
                             "step": step, "branch": 0, "chosen": True, "prompt_ids": [1], "completion_ids": [2],
                             "logprobs": [-1.0], "text": "x", "reward_terms": {"team": 0.0, "local": reward},
                             "rewards": reward, "anchor": rng.choice("ab"), "success": rng.random() < 0.5,
                             "infra_error": "",
                             "others_terms": {other: {"team": paid, "local": 0.0}} if paid else {},
                             "others_rewards": {other: paid} if paid else {}})
    rng.shuffle(rows)
    return AgentTurnBatch.from_rows(rows)


def team_return(rows: list[dict], episode: str) -> float:
    """Everything the episode paid, to every agent."""
    return sum(r["rewards"] + sum(r["others_rewards"].values()) for r in rows if r["episode_id"] == episode)


def agent_return(rows: list[dict], episode: str, agent: str) -> float:
    """Everything ``agent`` received in the episode (an agent with no row gets nothing credited)."""
    if not any(r["agent"] == agent and r["episode_id"] == episode for r in rows):
        return 0.0
    own = sum(r["rewards"] for r in rows if r["episode_id"] == episode and r["agent"] == agent)
    return own + sum(r["others_rewards"].get(agent, 0.0) for r in rows if r["episode_id"] == episode)


def standardise(value: float, sample: list[float], *, scale: bool = True) -> float:
    if len(sample) < 2 or max(sample) == min(sample):
        return 0.0
    centred = value - statistics.fmean(sample)
    return centred / (statistics.stdev(sample) + 1e-6) if scale else centred


def trainer_advantages(algo: str, batch: AgentTurnBatch, **config) -> list[float]:
    return estimate(make_estimator(TrainConfig(algo=algo, **config)), batch, rollout="trajectory").tolist()


@pytest.mark.parametrize("seed", range(5))
def test_grpo_family_compares_one_outcome_per_trajectory_among_the_tasks_trajectories(seed):
    """GRPO, Dr.GRPO, RLOO sample G complete responses per prompt with one scalar reward each: here the team
    trajectories of one task and their returns; a long trajectory weighs as much as a short one."""
    batch = trajectory_batch(seed)
    rows = batch.rows()
    episodes = {r["episode_id"]: r["task_id"] for r in rows}
    outcome = {e: team_return(rows, e) for e in episodes}
    for algo in ("grpo", "dr_grpo", "rloo"):
        expected = []
        for row in rows:
            sample = [outcome[e] for e, t in episodes.items() if t == row["task_id"]]
            mine = outcome[row["episode_id"]]
            if algo == "rloo":
                others = len(sample) - 1
                expected.append(mine - (sum(sample) - mine) / others if others else 0.0)
            else:
                expected.append(standardise(mine, sample, scale=algo == "grpo"))
        assert trainer_advantages(algo, batch) == pytest.approx(expected, abs=1e-5), algo


@pytest.mark.parametrize("seed", range(5))
def test_dr_mas_normalises_per_task_and_agent_over_every_invocation(seed):
    """Dr.MAS (langfengQ/DrMAS ``group_by_agent_id``): each invocation of agent k carries its trajectory's reward;
    mean and std over every invocation of agent k among the task's trajectories."""
    batch = trajectory_batch(seed)
    rows = batch.rows()
    expected = []
    for row in rows:
        sample = [team_return(rows, r["episode_id"]) for r in rows
                  if r["task_id"] == row["task_id"] and r["agent"] == row["agent"]]
        expected.append(standardise(team_return(rows, row["episode_id"]), sample))
    assert trainer_advantages("dr_mas", batch) == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("seed", range(5))
def test_mhgpo_groups_by_task_and_agent_type_one_sample_per_trajectory(seed):
    """MHGPO: each agent type's samples under one root query form its group; a sample's reward is what its agent
    got from the rollout (one sample per (trajectory, agent), whatever the number of turns)."""
    batch = trajectory_batch(seed)
    rows = batch.rows()
    expected = []
    for row in rows:
        episodes = {r["episode_id"] for r in rows if r["task_id"] == row["task_id"] and r["agent"] == row["agent"]}
        sample = [agent_return(rows, e, row["agent"]) for e in sorted(episodes)]
        expected.append(standardise(agent_return(rows, row["episode_id"], row["agent"]), sample))
    assert trainer_advantages("mhgpo", batch) == pytest.approx(expected, abs=1e-5)


def test_grpo_and_mhgpo_are_the_episode_levels_of_gigpo_and_team_gigpo():
    batch = trajectory_batch(11)
    assert trainer_advantages("grpo", batch) == pytest.approx(trainer_advantages("gigpo", batch, omega=0.0), abs=1e-6)
    assert trainer_advantages("mhgpo", batch) == pytest.approx(trainer_advantages("team_gigpo", batch, omega=0.0),
                                                               abs=1e-6)


PROGRAMS = itertools.count()


def tool_text(prompt: str, j: int) -> str:
    """Programs that differ from call to call (the planners then see different programs and outputs)."""
    return f"```python\nprint('Actions: {'RDLU'[len(prompt) % 4]}')  # program {next(PROGRAMS)}\n```"


def planner_text(prompt: str, j: int) -> str:
    return ["Actions: R", "Actions: D,D", "nothing readable", "Actions: L"][hash(prompt) % 4]


def test_gigpo_anchors_the_planner_on_the_board_it_acts_on():
    """The old anchors hashed the whole prompt (turn counter, last feedback, the tool's program): planners on the same
    board never shared a step group. The env's ``state_key`` is the role and the board."""
    env_fn = partial(teamgym.make, "plan_path-v0", size=4, max_turns=3)
    engine = RolloutEngine(LocalSlots(env_fn, default_prompt),
                           {"tool": ScriptedSampler(tool_text), "planner": ScriptedSampler(planner_text)},
                           tree=TreeSampling(k=1))
    tasks = [t for t in (1, 2) for _ in range(4)]
    batch = engine.rollout(tasks, seeds=[task_seed(t) for t in tasks]).batch
    engine.close()
    rows = batch.rows()
    columns = batch_columns(batch, ("anchor_ids",), rollout="trajectory")
    first_planners = [i for i, r in enumerate(rows) if r["agent"] == "planner" and r["step"] == 1]
    for task in (1, 2):
        mine = [i for i in first_planners if rows[i]["task_id"] == task]
        assert len(mine) == 4 and len({int(columns["anchor_ids"][i]) for i in mine}) == 1
        programs = {r["text"] for r in rows if r["task_id"] == task and r["agent"] == "tool" and r["step"] == 0}
        assert len(programs) == 4  # each planner saw another program: their prompts differ
    planners = [i for i, r in enumerate(rows) if r["agent"] == "planner"]
    tools = [i for i, r in enumerate(rows) if r["agent"] == "tool"]
    assert not {int(columns["anchor_ids"][i]) for i in planners} & {int(columns["anchor_ids"][i]) for i in tools}
    step_level = torch.tensor(trainer_advantages("gigpo", batch)) - torch.tensor(trainer_advantages(
        "gigpo", batch, omega=0.0))
    assert step_level[planners].abs().sum() > 0, "the planner gets a step-level term"


def test_spo_draws_from_a_task_pool_that_recurs():
    """The old SPO trainer drew tasks from a million ids: over 80 steps 0 of 640 came back, so every baseline stayed
    at its prior."""
    config = TrainConfig(algo="spo")
    assert config.task_pool_size == round(config.tasks_per_step / (1 - config.spo_rho)) == 64
    assert TrainConfig().task_pool_size == 0 and TrainConfig(algo="spo", task_pool=0).task_pool_size == 0
    from teamgym.train.evaluation import TaskSplit

    split = TaskSplit(None, eval_tasks=5, heldout_offset=1_000_000, seed=0, pool=config.task_pool_size)
    draws = [t for step in range(80) for t in split.for_step(step, config.tasks_per_step)]
    assert len(set(draws)) <= 64 and len(draws) - len(set(draws)) >= 576
    assert all(t < 1_000_000 for t in draws) and split.for_step(3, 8) == split.for_step(3, 8)


def test_spo_baselines_leave_their_prior_as_tasks_recur():
    estimator = make_estimator(TrainConfig(algo="spo"))
    batch = trajectory_batch(2)
    batch.success = torch.tensor([r["episode_id"].endswith(("0", "1", "2")) for r in batch.rows()])
    columns = batch_columns(batch, estimator.columns, rollout="trajectory")
    first = estimator.advantages(columns)
    for _ in range(6):
        again = estimator.advantages(columns)
    baseline = estimator.tracker.baseline([7, 9])
    assert all(0.6 < p < 0.9 for p in baseline.tolist())  # 3 of each task's 4 trajectories succeed
    assert not torch.allclose(first, again)
