"""Estimator inputs from a batch: trajectory columns and the sampling forest, against slow obvious references."""

from __future__ import annotations

import random

import pytest
import torch

from teamgym.algos import gigpo, team_gigpo, tree_values, treerl_advantages
from teamgym.errors import InvalidArgumentError
from teamgym.rollout import AgentTurnBatch
from teamgym.train.advantages import compute_advantages
from teamgym.train.columns import sampling_forest, trajectory_columns


def _row(episode: str, task: object, agent: str, step: int, reward: float, *, branch: int = 0, chosen: bool = True,
         anchor: str = "a") -> dict:
    return {"episode_id": episode, "task_id": task, "agent": agent, "turn": step // 2, "step": step, "branch": branch,
            "chosen": chosen, "prompt_ids": [1], "completion_ids": [2], "logprobs": [-1.0], "text": "x",
            "reward_terms": {"team": 0.0, "local": reward}, "rewards": reward, "anchor": anchor, "success": False,
            "infra_error": ""}


def random_trajectory_batch(seed: int) -> AgentTurnBatch:
    rng = random.Random(seed)
    rows = []
    for e in range(rng.randint(1, 7)):
        task = rng.choice([3, 5, "word"])
        for step in range(rng.randint(1, 6)):
            rows.append(_row(f"ep-{e}", task, rng.choice(["coder", "tester", "judge"]), step,
                             round(rng.uniform(-1, 2), 3), anchor=rng.choice("abc")))
    rng.shuffle(rows)
    return AgentTurnBatch.from_rows(rows)


def random_tree_batch(seed: int, drop: float = 0.0) -> AgentTurnBatch:
    rng = random.Random(seed)
    rows = []
    for e in range(rng.randint(1, 5)):
        for step in range(rng.randint(1, 5)):
            k = rng.randint(1, 4)
            chosen = rng.randrange(k)
            for b in range(k):
                rows.append(_row(f"ep-{e}", e, "ab"[step % 2], step, round(rng.uniform(-1, 2), 3), branch=b,
                                 chosen=b == chosen))
    kept = [r for r in rows if rng.random() >= drop] or rows[:1]
    rng.shuffle(kept)
    return AgentTurnBatch.from_rows(kept)


def reference_returns(batch: AgentTurnBatch, gamma: float, per_agent: bool) -> tuple[list[float], list[float]]:
    """(episode returns, discounted step returns) per row, by scanning every row of the batch."""
    rows = batch.rows()
    episode, step = [], []
    for row in rows:
        same = [r for r in rows if r["episode_id"] == row["episode_id"]
                and (not per_agent or r["agent"] == row["agent"])]
        episode.append(sum(r["rewards"] for r in same))
        later = sorted((r for r in same if r["step"] >= row["step"]), key=lambda r: r["step"])
        step.append(sum(gamma ** j * r["rewards"] for j, r in enumerate(later)))
    return episode, step


def reference_forest(batch: AgentTurnBatch) -> tuple[list[int], list[float]]:
    """Parents and path returns per row (virtual roots appended per episode, first appearance order)."""
    rows = batch.rows()
    episodes = list(dict.fromkeys(r["episode_id"] for r in rows))
    parents, leaf = [], []
    for row in rows:
        above = sorted((j for j, r in enumerate(rows) if r["episode_id"] == row["episode_id"] and r["chosen"]
                        and r["step"] < row["step"]), key=lambda j: rows[j]["step"])
        parents.append(above[-1] if above else len(rows) + episodes.index(row["episode_id"]))
        leaf.append(sum(rows[j]["rewards"] for j in above) + row["rewards"])
    return parents + [-1] * len(episodes), leaf + [0.0] * len(episodes)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("per_agent", [False, True])
def test_trajectory_columns_match_the_reference(seed, per_agent):
    batch = random_trajectory_batch(seed)
    gamma = [0.0, 0.5, 0.95, 1.0][seed % 4]
    columns = trajectory_columns(batch, gamma=gamma, per_agent=per_agent)
    episode, step = reference_returns(batch, gamma, per_agent)
    assert torch.allclose(columns["episode_returns"], torch.tensor(episode), atol=1e-5)
    assert torch.allclose(columns["step_returns"], torch.tensor(step), atol=1e-5)
    rows = batch.rows()
    for i, a in enumerate(rows):
        for j, b in enumerate(rows):
            assert (columns["group_ids"][i] == columns["group_ids"][j]) == (a["task_id"] == b["task_id"])
            assert (columns["trajectory_ids"][i] == columns["trajectory_ids"][j]) == (a["episode_id"] ==
                                                                                       b["episode_id"])
            same_anchor = a["task_id"] == b["task_id"] and a["anchor"] == b["anchor"]
            assert (columns["anchor_ids"][i] == columns["anchor_ids"][j]) == same_anchor


def test_trajectory_estimators_accept_the_columns():
    batch = random_trajectory_batch(3)
    for name, fn, per_agent in (("gigpo", gigpo, False), ("team_gigpo", team_gigpo, True)):
        c = trajectory_columns(batch, gamma=0.9, per_agent=per_agent)
        ids = [c["group_ids"], c["trajectory_ids"]] + ([c["agent_ids"]] if per_agent else []) + [c["anchor_ids"]]
        expected = fn(c["episode_returns"], c["step_returns"], *ids, omega=0.5)
        got = compute_advantages(name, batch, rollout="trajectory", gamma=0.9, omega=0.5)
        assert torch.allclose(got, expected.float()) and torch.isfinite(got).all()


def test_trajectory_columns_refuse_a_tree_batch():
    with pytest.raises(InvalidArgumentError, match="k=1"):
        trajectory_columns(random_tree_batch(0), gamma=0.95, per_agent=False)


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
    advantages = compute_advantages("treerl", batch)
    assert advantages.shape == (4,)
    assert torch.allclose(advantages, treerl_advantages(parents, leaf)[:4])
    assert advantages[1] > 0 > advantages[0]  # the branch whose continuations did better gets the credit
