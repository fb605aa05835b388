"""Estimator inputs from a batch: trajectory columns and the sampling forest, against slow obvious references."""

from __future__ import annotations

import math
import random
import zlib
from functools import partial

import pytest
import torch

import teamgym
from teamgym.algos import gigpo, team_gigpo, tree_values, treerl_advantages
from teamgym.envs.planning.plan_path import PlanPathEnv
from teamgym.errors import InvalidArgumentError
from teamgym.rollout import AgentTurnBatch, LocalSlots, RolloutEngine, TreeSampling, default_prompt, task_seed
from teamgym.train import TrainConfig
from teamgym.train.alpha import remix_rewards
from teamgym.train.columns import batch_columns, credited_rewards, sampling_forest, trajectory_returns
from teamgym.train.estimators import estimate, make_estimator
from tests.rollout.fakes import ScriptedSampler

AGENTS = ("coder", "tester", "judge")


def _row(episode: str, task: object, agent: str, step: int, reward: float, *, branch: int = 0, chosen: bool = True,
         anchor: str = "a", others: dict[str, float] | None = None) -> dict:
    """A row; ``others``: what other agents received on its step (left out of the row when None)."""
    row = {"episode_id": episode, "task_id": task, "agent": agent, "turn": step // 2, "step": step, "branch": branch,
           "chosen": chosen, "prompt_ids": [1], "completion_ids": [2], "logprobs": [-1.0], "text": "x",
           "reward_terms": {"team": 0.0, "local": reward}, "rewards": reward, "anchor": anchor, "success": False,
           "infra_error": ""}
    if others is not None:
        row["others_terms"] = {a: {"team": r, "local": 0.0} for a, r in others.items()}
        row["others_rewards"] = dict(others)
    return row


def _random_others(rng: random.Random, agent: str) -> dict[str, float] | None:
    if rng.random() < 0.2:
        return None
    return {a: round(rng.uniform(-1, 2), 3) for a in AGENTS if a != agent and rng.random() < 0.5}


def random_trajectory_batch(seed: int) -> AgentTurnBatch:
    """Episodes of 1-6 steps by random agents; some rows pay other agents (some of whom never act)."""
    rng = random.Random(seed)
    rows = []
    for e in range(rng.randint(1, 7)):
        task = rng.choice([3, 5, "word"])
        for step in range(rng.randint(1, 6)):
            agent = rng.choice(AGENTS)
            rows.append(_row(f"ep-{e}", task, agent, step, round(rng.uniform(-1, 2), 3), anchor=rng.choice("abc"),
                             others=_random_others(rng, agent)))
    rng.shuffle(rows)
    return AgentTurnBatch.from_rows(rows)


def reference_credit(batch: AgentTurnBatch, per_agent: bool) -> list[float]:
    """Each row's credited reward, by scanning every payment of the batch (see the columns module docstring)."""
    rows = batch.rows()
    credit = [row["rewards"] for row in rows]
    for j, payer in enumerate(rows):
        for agent, reward in payer["others_rewards"].items():
            if not per_agent:
                credit[j] += reward
                continue
            own = [i for i, r in enumerate(rows) if r["episode_id"] == payer["episode_id"] and r["agent"] == agent]
            if not own:
                continue  # the agent never acted in the episode: no turn to credit
            before = [i for i in own if rows[i]["step"] < payer["step"]]
            if before:
                target = max(before, key=lambda i: rows[i]["step"])
            else:
                target = min(own, key=lambda i: rows[i]["step"])
            credit[target] += reward
    return credit


def random_tree_batch(seed: int, drop: float = 0.0) -> AgentTurnBatch:
    rng = random.Random(seed)
    rows = []
    for e in range(rng.randint(1, 5)):
        for step in range(rng.randint(1, 5)):
            k = rng.randint(1, 4)
            chosen = rng.randrange(k)
            for b in range(k):
                agent = "ab"[step % 2]
                rows.append(_row(f"ep-{e}", e, agent, step, round(rng.uniform(-1, 2), 3), branch=b,
                                 chosen=b == chosen, others=_random_others(rng, agent)))
    kept = [r for r in rows if rng.random() >= drop] or rows[:1]
    rng.shuffle(kept)
    return AgentTurnBatch.from_rows(kept)


def reference_returns(batch: AgentTurnBatch, gamma: float, per_agent: bool) -> tuple[list[float], list[float]]:
    """(episode returns, discounted step returns) per row, by scanning every row of the batch."""
    rows = batch.rows()
    credit = reference_credit(batch, per_agent)
    episode, step = [], []
    for row in rows:
        same = [i for i, r in enumerate(rows) if r["episode_id"] == row["episode_id"]
                and (not per_agent or r["agent"] == row["agent"])]
        episode.append(sum(credit[i] for i in same))
        later = sorted((i for i in same if rows[i]["step"] >= row["step"]), key=lambda i: rows[i]["step"])
        step.append(sum(gamma ** j * credit[i] for j, i in enumerate(later)))
    return episode, step


def reference_forest(batch: AgentTurnBatch) -> tuple[list[int], list[float]]:
    """Parents and path returns per row (virtual roots appended per episode, first appearance order)."""
    rows = batch.rows()
    episodes = list(dict.fromkeys(r["episode_id"] for r in rows))
    parents, leaf = [], []
    for i, row in enumerate(rows):
        above = sorted((j for j, r in enumerate(rows) if r["episode_id"] == row["episode_id"] and r["chosen"]
                        and r["step"] < row["step"]), key=lambda j: rows[j]["step"])
        parents.append(above[-1] if above else len(rows) + episodes.index(row["episode_id"]))
        paid = [rows[j]["rewards"] + sum(rows[j]["others_rewards"].values()) for j in [*above, i]]
        leaf.append(sum(paid))
    return parents + [-1] * len(episodes), leaf + [0.0] * len(episodes)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("per_agent", [False, True])
def test_trajectory_columns_match_the_reference(seed, per_agent):
    batch = random_trajectory_batch(seed)
    gamma = [0.0, 0.5, 0.95, 1.0][seed % 4]
    prefix = "agent_" if per_agent else ""
    names = (f"{prefix}episode_returns", f"{prefix}step_returns", "task_ids", "episode_ids", "anchor_ids")
    columns = batch_columns(batch, names, rollout="trajectory", gamma=gamma)
    episode, step = reference_returns(batch, gamma, per_agent)
    assert torch.allclose(columns[f"{prefix}episode_returns"], torch.tensor(episode), atol=1e-5)
    assert torch.allclose(columns[f"{prefix}step_returns"], torch.tensor(step), atol=1e-5)
    rows = batch.rows()
    for i, a in enumerate(rows):
        for j, b in enumerate(rows):
            assert (columns["task_ids"][i] == columns["task_ids"][j]) == (a["task_id"] == b["task_id"])
            assert (columns["episode_ids"][i] == columns["episode_ids"][j]) == (a["episode_id"] ==
                                                                                 b["episode_id"])
            same_anchor = a["task_id"] == b["task_id"] and a["anchor"] == b["anchor"]
            assert (columns["anchor_ids"][i] == columns["anchor_ids"][j]) == same_anchor


def test_trajectory_estimators_accept_the_columns():
    batch = random_trajectory_batch(3)
    for name, fn, per_agent in (("gigpo", gigpo, False), ("team_gigpo", team_gigpo, True)):
        prefix = "agent_" if per_agent else ""
        c = batch_columns(batch, (f"{prefix}episode_returns", f"{prefix}step_returns", "task_ids", "episode_ids",
                                  "agent_ids", "anchor_ids"), rollout="trajectory", gamma=0.9)
        ids = [c["task_ids"], c["episode_ids"]] + ([c["agent_ids"]] if per_agent else []) + [c["anchor_ids"]]
        expected = fn(c[f"{prefix}episode_returns"], c[f"{prefix}step_returns"], *ids, omega=0.5)
        got = estimate(make_estimator(TrainConfig(algo=name, omega=0.5)), batch, rollout="trajectory", gamma=0.9)
        assert torch.allclose(got, expected.float()) and torch.isfinite(got).all()


def test_trajectory_columns_refuse_a_tree_batch():
    with pytest.raises(InvalidArgumentError, match="k=1"):
        batch_columns(random_tree_batch(0), ("episode_returns",), rollout="trajectory")


@pytest.mark.parametrize("seed", range(20))
def test_sampling_forest_matches_the_reference(seed):
    batch = random_tree_batch(seed, drop=0.2 if seed % 2 else 0.0)
    parents, leaf = sampling_forest(batch)
    ref_parents, ref_leaf = reference_forest(batch)
    assert parents.tolist() == ref_parents
    assert torch.allclose(leaf, torch.tensor(ref_leaf), atol=1e-5)


def test_forest_values_mean_the_outcome_below_a_node():
    # one episode, K = 2: step 0 candidates r = (0, 1), chosen 1; step 1 candidates r = (2, 0), chosen 0 (last)
    rows = [_row("e", 0, "a", 0, 0.0, branch=0, chosen=False), _row("e", 0, "a", 0, 1.0, branch=1),
            _row("e", 0, "b", 1, 2.0, branch=0), _row("e", 0, "b", 1, 0.0, branch=1, chosen=False)]
    batch = AgentTurnBatch.from_rows(rows)
    parents, leaf = sampling_forest(batch)
    assert parents.tolist() == [4, 4, 1, 1, -1]
    assert leaf.tolist() == [0.0, 1.0, 3.0, 1.0, 0.0]  # the last chosen leaf holds the episode return 1 + 2
    values = tree_values(parents, leaf).value
    assert values.tolist() == [0.0, 2.0, 3.0, 1.0, 4.0 / 3.0]  # root: mean outcome of the 3 leaves
    advantages = estimate(make_estimator(TrainConfig(algo="treerl")), batch, rollout="tree")
    assert advantages.shape == (4,)
    # one row per node: the chosen candidate (2 leaves below) carries what its 2 leaf paths carry in TreeRL,
    # 2 (GA + LA) / sqrt(2) = (2/3 + 2/3) sqrt(2), not (GA + LA) / sqrt(2)
    expected = [-8 / 3, 4 / 3 * math.sqrt(2), 3 - 4 / 3 + 3 - 2, 1 - 4 / 3 + 1 - 2]
    assert advantages.tolist() == pytest.approx(expected, rel=1e-6)
    assert torch.allclose(advantages, treerl_advantages(parents, leaf, samples="nodes")[:4])
    assert advantages[1] > 0 > advantages[0]  # the branch whose continuations did better gets the credit


@pytest.mark.parametrize("seed", range(20))
def test_per_agent_returns_sum_to_the_team_return(seed):
    rows = random_trajectory_batch(seed).rows()
    acting = {(r["episode_id"], r["agent"]) for r in rows}
    for r in rows:  # pay only agents that act in the episode
        r["others_rewards"] = {a: v for a, v in r["others_rewards"].items() if (r["episode_id"], a) in acting}
    batch = AgentTurnBatch.from_rows(rows)
    team = trajectory_returns(batch, gamma=0.9, per_agent=False)[0]
    agents = trajectory_returns(batch, gamma=0.9, per_agent=True)[0]
    for episode in set(batch.episode_id):
        rows = [i for i, e in enumerate(batch.episode_id) if e == episode]
        first = {batch.agent[i]: i for i in reversed(rows)}  # one row per agent
        total = sum(float(agents[i]) for i in first.values())
        assert total == pytest.approx(float(team[rows[0]]), abs=1e-4)


def test_credit_goes_to_the_most_recent_own_turn():
    # steps: 0 b (pays a 1, before a's first turn), 1 a, 2 b (pays a 2), 3 b (pays a 4), 4 a, 5 b (pays a 8)
    rows = [_row("e", 0, "b", 0, 0.0, others={"a": 1.0}), _row("e", 0, "a", 1, 0.5),
            _row("e", 0, "b", 2, 0.0, others={"a": 2.0}), _row("e", 0, "b", 3, 0.0, others={"a": 4.0, "c": 9.0}),
            _row("e", 0, "a", 4, 0.25), _row("e", 0, "b", 5, 0.0, others={"a": 8.0})]
    batch = AgentTurnBatch.from_rows(rows)
    assert credited_rewards(batch, per_agent=True).tolist() == [0.0, 7.5, 0.0, 0.0, 8.25, 0.0]  # c never acts
    assert credited_rewards(batch, per_agent=False).tolist() == [1.0, 0.5, 2.0, 13.0, 0.25, 8.0]
    episode_returns, step_returns = trajectory_returns(batch, gamma=0.5, per_agent=True)
    assert episode_returns[1] == 15.75 and step_returns[1] == 7.5 + 0.5 * 8.25


TOOL_TEXTS = ["```python\nprint('Actions: D,R')\n```", "Actions: D,R", "```python\nraise SystemExit(1)\n```", "oracle",
              "oracle"]
PLANNER_TEXTS = ["Actions: D,R", "Actions: R,D,D", "no plan", "Actions: D,D,R,R,R", "Actions: L,U", "copy", "copy"]


def plan_tool(prompt: str, j: int) -> str:
    """Scripted by the prompt's hash: a program printing a plan, the env's oracle search, a crash, or no program."""
    text = TOOL_TEXTS[zlib.crc32(prompt.encode()) % len(TOOL_TEXTS)]
    return f"```python\n{PlanPathEnv.oracle_program}```" if text == "oracle" else text


def plan_planner(prompt: str, j: int) -> str:
    """A fixed plan by the prompt's hash, or a copy of the plan the tool's program printed."""
    text = PLANNER_TEXTS[zlib.crc32(prompt.encode()) % len(PLANNER_TEXTS)]
    printed = prompt.split("Its output (status: ok):\n```\n")[-1].split("\n")[0]
    return printed if text == "copy" and printed.startswith("Actions:") else text


def plan_path_rollout(alpha: float | dict[str, float]):
    env_fn = partial(teamgym.make, "plan_path-v0", size=4, max_turns=3, alpha=alpha)
    engine = RolloutEngine(LocalSlots(env_fn, default_prompt),
                           {"tool": ScriptedSampler(plan_tool), "planner": ScriptedSampler(plan_planner)},
                           tree=TreeSampling(k=1))
    tasks = [t for t in range(6) for _ in range(2)]
    try:
        return engine.rollout(tasks, seeds=[task_seed(t) for t in tasks])
    finally:
        engine.close()


def assert_returns_match_the_summaries(batch: AgentTurnBatch, episodes: list[dict]) -> None:
    agents = trajectory_returns(batch, gamma=0.95, per_agent=True)[0]
    team = trajectory_returns(batch, gamma=0.95, per_agent=False)[0]
    by_id = {e["episode_id"]: e for e in episodes}
    for i, (episode, agent) in enumerate(zip(batch.episode_id, batch.agent, strict=True)):
        returns = by_id[episode]["returns"]
        assert float(agents[i]) == pytest.approx(returns[agent], abs=1e-5)
        assert float(team[i]) == pytest.approx(sum(returns.values()), abs=1e-5)


def test_plan_path_per_agent_returns_equal_the_env_summary():
    result = plan_path_rollout(1.0)
    batch = result.batch
    assert not any(batch.infra_error) and len(result.episodes) == 12
    assert {e["success"] for e in result.episodes} == {True, False}, "the script must solve some tasks, not all"
    assert len({e["team_returns"]["tool"] for e in result.episodes}) > 2
    assert_returns_match_the_summaries(batch, result.episodes)
    # the tool's own rows hold no team term: it all comes on the planner's steps
    assert all(terms["team"] == 0.0 for terms, a in zip(batch.reward_terms, batch.agent, strict=True) if a == "tool")


def test_alpha_mixer_remixes_what_other_agents_received():
    alphas = {"tool": 0.5, "planner": 2.0}
    mixed = plan_path_rollout(1.0).batch
    remix_rewards(mixed, alphas)
    reference = plan_path_rollout(alphas)  # the env itself mixing with those alphas
    assert mixed.text == reference.batch.text
    assert torch.allclose(mixed.rewards, reference.batch.rewards)
    assert len(mixed.others_rewards) == len(reference.batch.others_rewards)
    for got, want in zip(mixed.others_rewards, reference.batch.others_rewards, strict=True):
        assert got == pytest.approx(want)
    assert any(others for others in mixed.others_rewards)
    assert_returns_match_the_summaries(mixed, reference.episodes)
