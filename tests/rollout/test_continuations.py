"""Continued candidates (``TreeSampling.continue_unchosen``): every leaf of the sampling tree is a finished episode."""

from __future__ import annotations

from functools import partial

import pytest
import torch

import teamgym
from teamgym.algos import tree_values
from teamgym.rollout import LocalSlots, RolloutEngine, TreeSampling, default_prompt
from teamgym.train.columns import sampling_forest
from tests.rollout.fakes import ScriptedSampler
from tests.rollout.test_engine import ReferenceSlots, plan_text
from tests.support.relay_env import RelayEnv

ENV = partial(teamgym.make, "plan_path-v0", size=4, max_turns=3)


def engine(tree: TreeSampling, slots_cls=LocalSlots, **kwargs) -> RolloutEngine:
    return RolloutEngine(slots_cls(ENV, default_prompt),
                         {"tool": ScriptedSampler(plan_text), "planner": ScriptedSampler(plan_text)}, tree=tree,
                         seed=5, **kwargs)


def replay(rows: list[dict], row: dict) -> tuple[float, dict[str, float]]:
    """``row``'s reward and what it paid the others, from a fresh env that replays the actions leading to it: its
    tree's chosen path up to the fork, the continued candidate, then its own episode's earlier rows."""
    env = replay_env(rows, row)
    return env.rewards[row["agent"]], {a: env.rewards[a] for a in env.agents if a != row["agent"]}


def replay_env(rows: list[dict], row: dict):
    """A fresh env that has replayed the actions leading to ``row`` (see :func:`replay`), then ``row``'s own."""
    path: list[dict] = []
    episode, before = row["episode_id"], row["step"]
    while True:
        own = sorted((r for r in rows if r["episode_id"] == episode and r["chosen"] and r["step"] < before),
                     key=lambda r: r["step"])
        path = own + path
        fork = next((r["fork"] for r in rows if r["episode_id"] == episode and r["fork"]), None)
        if not fork:
            break
        path = [next(r for r in rows if (r["episode_id"], r["step"], r["branch"]) ==
                     (fork["episode_id"], fork["step"], fork["branch"]))] + path
        episode, before = fork["episode_id"], fork["step"]
    env = ENV()
    root = next(r for r in rows if r["episode_id"] == episode)
    env.reset(seed=root["_seed"], options={"task_id": row["task_id"]})
    for r in path:
        env.step(r["text"])
    assert env.agent_selection == row["agent"]
    env.step(row["text"])
    return env


def relay_text(prompt: str, j: int) -> str:
    """The speaker names the word (or not); the listener echoes the speaker (or says nothing useful)."""
    if "secret word is" in prompt:
        return f"The word is {prompt.split('secret word is ')[1].split('.')[0]}" if j % 2 == 0 else "hmm"
    return prompt.split("said: ")[1].split("\n")[0] if j % 3 != 1 else "no"


def test_each_row_that_ends_an_episode_carries_that_episodes_verdict():
    """``outcome``: an unchosen candidate that ended its episode has its own verdict (the episode's ``success``
    follows the chosen path); the PRM's tree-value targets read it at the leaves."""
    eng = RolloutEngine(LocalSlots(lambda: RelayEnv(max_turns=1), default_prompt),
                        {"speaker": ScriptedSampler(relay_text), "listener": ScriptedSampler(relay_text)},
                        tree=TreeSampling(k=3, continue_unchosen=True), seed=5)
    result = eng.rollout(["apple", "river", "copper"])
    eng.close()
    rows = result.batch.rows()
    finished = {e["episode_id"]: e for e in result.episodes + result.continuations}
    for row in rows:
        said = row["agent"] == "listener" and row["task_id"] in row["text"].lower().split()
        last_turn = row["agent"] == "listener"  # one turn: the listener ends the episode
        assert row["outcome"] == ({"success": said} if said or last_turn else {}), row
        if row["outcome"] and row["chosen"]:
            assert row["outcome"]["success"] == finished[row["episode_id"]]["success"]
    unchosen = [r["outcome"]["success"] for r in rows if r["outcome"] and not r["chosen"]]
    assert True in unchosen and False in unchosen  # unchosen ends of both kinds, each with its own verdict


def rollout_rows(tree: TreeSampling, tasks=(1, 2, 3), **kwargs):
    eng = engine(tree, **kwargs)
    result = eng.rollout(list(tasks))
    eng.close()
    from teamgym.rollout.engine import _seed_of

    rows = result.batch.rows()
    seeds = {f"ep-{i}": _seed_of(t, i) for i, t in enumerate(tasks)}
    for r in rows:
        r["_seed"] = seeds[r["episode_id"].split("/")[0]]
    return result, rows


@pytest.mark.parametrize("strategy", ["greedy", "top_m", "adaptive", "budget"])
def test_every_leaf_is_a_finished_episode_and_its_return(strategy):
    """The old forest left unchosen candidates as leaves holding a truncated return (the chosen child collected
    every later reward): TreeRL's values then reinforced the greedy pick."""
    tree = TreeSampling(k=3, strategy=strategy, top_m=3, k0=2, k_max=5, continue_unchosen=True)
    result, rows = rollout_rows(tree)
    parents, leaf_rewards = sampling_forest(result.batch)
    values = tree_values(parents, leaf_rewards)
    finished = {e["episode_id"]: e for e in result.episodes + result.continuations}
    n = len(rows)
    leaves = values.is_leaf[:n].nonzero().flatten().tolist()
    assert leaves and len(result.continuations) > 0
    for i in leaves:
        row = rows[i]
        last = max(r["step"] for r in rows if r["episode_id"] == row["episode_id"])
        assert row["step"] == last, "a leaf is the last step of its episode"
        if row["chosen"]:  # the end of an episode: its path return is what the whole episode paid
            assert float(leaf_rewards[i]) == pytest.approx(sum(finished[row["episode_id"]]["returns"].values()),
                                                           abs=1e-5)
    # every unchosen candidate that could go on was continued, once
    continued = {(r["fork"]["episode_id"], r["fork"]["step"], r["fork"]["branch"]) for r in rows if r["fork"]}
    for row in rows:
        if not row["chosen"] and row["step"] < max(r["step"] for r in rows if r["episode_id"] == row["episode_id"]):
            assert (row["episode_id"], row["step"], row["branch"]) in continued
    assert len(continued) == len(result.continuations)
    assert all(len([r for r in rows if r["episode_id"] == e and r["step"] == s]) == 1
               for e, s in {(r["episode_id"], r["step"]) for r in rows if r["fork"]})  # one candidate per node


def test_continued_episodes_replay_from_a_fresh_env():
    """Each continuation plays on from its candidate's state (no stale env): its rewards are those of a fresh env
    replaying the tree's path to the fork, the candidate, then the continuation's own steps."""
    _, rows = rollout_rows(TreeSampling(k=3, continue_unchosen=True), tasks=(4, 5))
    checked = 0
    for row in rows:
        if row["fork"] or not row["chosen"]:
            reward, others = replay(rows, row)
            assert reward == pytest.approx(row["rewards"])
            assert {a: v for a, v in others.items() if a in row["others_rewards"]} == pytest.approx(
                row["others_rewards"])
            checked += 1
    assert checked > 10


@pytest.mark.parametrize("strategy", ["greedy", "top_m", "adaptive", "budget"])
def test_the_slot_keeps_the_children_the_reference_keeps(strategy):
    tree = TreeSampling(k=3, strategy=strategy, top_m=3, top_m_temperature=2.0, k0=2, k_max=5,
                        continue_unchosen=True)
    outputs = []
    for slots_cls in (LocalSlots, ReferenceSlots):
        eng = engine(tree, slots_cls)
        result = eng.rollout([1, 2, 3])
        outputs.append((result.batch.rows(), result.episodes, result.continuations))
        eng.close()
    assert outputs[0] == outputs[1]


def test_continuations_give_the_same_batch_at_any_number_of_waves():
    batches = []
    for waves in (1, 2):
        eng = engine(TreeSampling(k=3, continue_unchosen=True), waves=waves)
        result = eng.rollout([1, 2, 3, 4])
        batches.append((result.batch.rows(), result.continuations))
        eng.close()
    assert batches[0] == batches[1]


def test_without_continuations_nothing_changes():
    off, on = (rollout_rows(TreeSampling(k=3, continue_unchosen=flag))[0] for flag in (None, True))
    assert not off.continuations and all(not f for f in off.batch.fork)
    roots = torch.tensor([not f for f in on.batch.fork])
    assert on.batch.select(roots).rows() == off.batch.rows()
    assert on.completions > off.completions


def path_to(rows: list[dict], i: int) -> list[int]:
    """The rows from the tree's root down to row ``i``: its fork's path, its episode's chosen rows above it, itself."""
    row = rows[i]
    above = sorted((j for j, r in enumerate(rows) if r["episode_id"] == row["episode_id"] and r["chosen"]
                    and r["step"] < row["step"]), key=lambda j: rows[j]["step"])
    fork = next((r["fork"] for r in rows if r["episode_id"] == row["episode_id"] and r["fork"]), None)
    prefix = []
    if fork:
        prefix = path_to(rows, next(j for j, r in enumerate(rows) if (r["episode_id"], r["step"], r["branch"]) ==
                                    (fork["episode_id"], fork["step"], fork["branch"])))
    return prefix + above + [i]


def test_the_forest_matches_a_path_walk():
    result, rows = rollout_rows(TreeSampling(k=3, continue_unchosen=True), tasks=(6, 7))
    parents, leaf_rewards = sampling_forest(result.batch)
    n = len(rows)
    trees = list(dict.fromkeys(r["episode_id"].split("/")[0] for r in rows))
    assert len(parents) == n + len(trees)
    for i, row in enumerate(rows):
        path = path_to(rows, i)
        expected_parent = path[-2] if len(path) > 1 else n + trees.index(row["episode_id"].split("/")[0])
        assert int(parents[i]) == expected_parent
        paid = sum(rows[j]["rewards"] + sum(rows[j]["others_rewards"].values()) for j in path)
        assert float(leaf_rewards[i]) == pytest.approx(paid, abs=1e-5)
