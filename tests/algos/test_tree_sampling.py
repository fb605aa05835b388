"""Tree-sampling driver against a tiny deterministic fake env; AT-GRPO reference defects 2 and 3."""

import math
import zlib

import numpy as np
import pytest
import torch

from teamgym.algos import (
    AdaptiveK,
    adaptive_tree_step,
    advantage_energy_per_completion,
    allocate_level_budget,
    choose_greedy,
    choose_top_m,
    informative_groups_per_1000,
    tree_step,
    tree_turn,
)
from teamgym.errors import InvalidArgumentError


class FakeEnv:
    """State = the tuple of actions so far; reward depends on the whole state and the action; logs every
    step.
    """

    def __init__(self):
        self.history: tuple = ()
        self.log: list[tuple[tuple, str]] = []  # (state the action was applied to, action)

    def snapshot(self):
        return self.history

    def restore(self, snapshot):
        self.history = snapshot

    def step(self, action: str) -> float:
        self.log.append((self.history, action))
        reward = zlib.crc32(repr((self.history, action)).encode()) % 1000 / 1000
        self.history = self.history + (action,)
        return reward


def driver_kwargs(env):
    return {"restore": env.restore, "act": env.step, "take_snapshot": env.snapshot}


def stale_tree_step(env, state, candidates):
    """The reference-code defect: candidates after the first step on from whatever state the env was left
    in.
    """
    env.restore(state)
    rewards = [env.step(c) for c in candidates]
    return int(np.argmax(rewards))


def scored_from(env_log, state, candidates) -> bool:
    """Every candidate was applied to exactly ``state`` (no sibling's action leaked into it)."""
    applied = env_log[-len(candidates) :]
    return [a for _, a in applied] == list(candidates) and all(s == state for s, _ in applied)


def test_each_candidate_is_scored_on_its_own_fresh_state():
    env = FakeEnv()
    state = ("root",)
    step = tree_step(state, ["a", "b", "c", "d"], **driver_kwargs(env))
    assert scored_from(env.log, state, ["a", "b", "c", "d"])
    assert [b.snapshot for b in step.branches] == [state + (c,) for c in "abcd"]
    assert step.chosen == int(np.argmax(step.rewards))
    assert env.history == step.snapshot == state + ("abcd"[step.chosen],)  # env left in the chosen child
    broken = FakeEnv()
    stale_tree_step(broken, state, ["a", "b", "c", "d"])
    assert not scored_from(broken.log, state, ["a", "b", "c", "d"])  # the check catches the defect


def test_later_turns_continue_from_the_chosen_state_defect_2():
    """Defect 2: after copying the best state, steps went to a stale env, so later rewards matched across
    branches.
    """
    env = FakeEnv()
    state, path = (), ()
    for turn in range(3):
        candidates = [f"t{turn}c{i}" for i in range(4)]
        step = tree_step(state, candidates, **driver_kwargs(env))
        assert scored_from(env.log, path, candidates)  # every branch starts from the chosen path so far
        replay = FakeEnv()
        for c in candidates:
            replay.restore(path)
            assert replay.step(c) == step.branches[candidates.index(c)].reward  # rewards of the real state
        assert len(set(step.rewards)) > 1  # not identical across branches
        path = path + (candidates[step.chosen],)
        state = step.snapshot
        assert state == path


def test_second_agent_is_scored_from_the_first_agents_chosen_state_defect_3():
    """Defect 3: the second agent in a turn was scored on states already chosen by the first."""
    env = FakeEnv()
    proposals = {}

    def propose(agent):
        proposals[agent] = env.history  # the observation the agent proposes from
        return [f"{agent}{i}" for i in range(3)]

    steps, final = tree_turn((), ["coder", "tester"], propose=propose, **driver_kwargs(env))
    coder, tester = steps
    after_coder = coder.snapshot
    assert proposals == {"coder": (), "tester": after_coder}
    assert after_coder == ("coder" + str(coder.chosen),)
    tester_log = env.log[-3:]
    assert all(s == after_coder for s, _ in tester_log)  # each tester candidate from the coder's chosen state
    assert [a for _, a in tester_log] == ["tester0", "tester1", "tester2"]
    assert final == after_coder + ("tester" + str(tester.chosen),) == env.history


def test_choosers():
    assert choose_greedy([0.1, 0.9, 0.9]) == 1  # first argmax on ties
    rng = np.random.default_rng(0)
    picks = [choose_top_m([0.0, 1.0, 0.5, 0.2], rng, m=2, temperature=0.5) for _ in range(400)]
    assert set(picks) == {1, 2} and picks.count(1) > picks.count(2)
    assert choose_top_m([0.0, 1.0, 0.9], rng, m=3, temperature=0.0) == 1
    first = [choose_top_m([0.0, 1.0, 0.9], np.random.default_rng(5)) for _ in range(3)]
    assert len(set(first)) == 1  # explicit generator -> reproducible
    with pytest.raises(InvalidArgumentError):
        choose_greedy([])
    env = FakeEnv()
    step = tree_step((), ["a", "b"], choose=lambda r: 0, **driver_kwargs(env))
    assert step.chosen == 0 and env.history == ("a",)
    with pytest.raises(InvalidArgumentError, match="not an index"):
        tree_step((), ["a"], choose=lambda r: 3, **driver_kwargs(FakeEnv()))


def test_adaptive_k_keeps_average_budget_and_spends_where_rewards_differ():
    ak = AdaptiveK(k=4, k0=2, k_max=8)
    rng = np.random.default_rng(1)
    total = 0
    for _ in range(200):
        first = rng.integers(0, 2, ak.initial()).tolist() if rng.random() < 0.5 else [1, 1]
        more = ak.extra(first)
        total += ak.initial() + more
        assert (more == 0) == (first[0] == first[1])
        assert ak.initial() + more <= ak.k_max
    assert total == ak.spent <= 4 * 200
    clone = AdaptiveK()
    clone.load_state_dict(ak.state_dict())
    assert clone.state_dict() == ak.state_dict()
    with pytest.raises(InvalidArgumentError):
        AdaptiveK(k=2, k0=3)


def allocate_slow(first, *, k, k0, k_max, tolerance=0.0):
    """Reference: hand out the level's (k - k0) * nodes candidates one by one, each to the neediest node that can take
    one: disagreeing nodes (below k_max) before agreeing ones (below k), then the fewest given so far, then the widest
    spread, then the lowest index."""
    spread = []
    for rewards in first:
        finite = [r for r in rewards if math.isfinite(r)]
        spread.append(max(finite) - min(finite) if len(finite) > 1 else 0.0)
    more = [0] * len(first)
    for _ in range((k - k0) * len(first)):
        open_nodes = [n for n in range(len(first))
                      if more[n] < (k_max if spread[n] > tolerance else k) - k0]
        n = min(open_nodes, key=lambda n: (spread[n] <= tolerance, more[n], -spread[n], n))
        more[n] += 1
    return more


@pytest.mark.parametrize("trial", range(200))
def test_allocate_level_budget_matches_the_one_by_one_reference_and_spends_k_per_node(trial):
    rng = np.random.default_rng(trial)
    k0 = int(rng.integers(1, 4))
    k = k0 + int(rng.integers(0, 4))
    k_max = k + int(rng.integers(0, 5))
    nodes = int(rng.integers(0, 12))
    first = [[float(v) for v in rng.choice([0.0, 0.5, 1.0, math.nan], k0, p=[0.4, 0.1, 0.45, 0.05])]
             for _ in range(nodes)]
    more = allocate_level_budget(first, k=k, k0=k0, k_max=k_max)
    assert more == allocate_slow(first, k=k, k0=k0, k_max=k_max)
    assert sum(more) == (k - k0) * nodes  # exactly AT-GRPO's k per node over the level
    disagree = [n for n, r in enumerate(first) if len({v for v in r if math.isfinite(v)}) > 1]
    for n, m in enumerate(more):
        assert 0 <= m <= (k_max if n in disagree else k) - k0
        if n not in disagree and m > 0:  # an agreeing node gets some only once every disagreeing one is full
            assert all(more[d] == k_max - k0 for d in disagree)


def test_allocate_level_budget_moves_the_agreeing_nodes_budget_to_the_disagreeing_ones():
    first = [[1.0, 1.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.5], [0.0, 0.0]]
    # budget 2 x 5 = 10: the two disagreeing nodes take 6 each at most (k_max 8): widest spread first, round robin
    assert allocate_level_budget(first, k=4, k0=2, k_max=8) == [0, 5, 0, 5, 0]
    assert allocate_level_budget(first, k=4, k0=2, k_max=5) == [2, 3, 1, 3, 1]  # capped at 3 more: the rest spreads
    assert allocate_level_budget(first, k=4, k0=2, k_max=8, tolerance=0.5) == [1, 6, 1, 1, 1]
    assert allocate_level_budget([], k=4, k0=2, k_max=8) == []
    assert allocate_level_budget(first, k=2, k0=2, k_max=8) == [0] * 5  # k = k0: nothing to move
    with pytest.raises(InvalidArgumentError, match="k0 <= k <= k_max"):
        allocate_level_budget(first, k=4, k0=2, k_max=3)
    with pytest.raises(InvalidArgumentError, match="expected k0=2"):
        allocate_level_budget([[1.0]], k=4, k0=2, k_max=8)


def test_informative_groups_per_1000():
    rewards = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.5, 0.5])
    groups = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    assert informative_groups_per_1000(rewards, groups) == pytest.approx(1000 / 8)


def test_advantage_energy_is_the_squared_centred_reward_per_row():
    rewards = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.5, 0.5, 2.0])
    groups = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3, 4])
    slow = 0.0
    for g in groups.unique():
        members = rewards[groups == g].tolist()
        mean = sum(members) / len(members)
        slow += sum((r - mean) ** 2 for r in members)
    assert advantage_energy_per_completion(rewards, groups) == pytest.approx(slow / len(rewards)) == 0.5 / 9
    assert advantage_energy_per_completion(torch.tensor([]), torch.tensor([], dtype=torch.long)) == 0.0


def test_advantage_energy_does_not_favour_small_groups_where_informative_groups_do():
    """The same Bernoulli(0.7) rewards cut into groups of 2 or of 4: informative groups per 1,000 completions
    prefer 2, the advantage energy prefers 4 and matches s2 * (K - 1) / K."""
    rewards = (torch.rand(40_000, generator=torch.Generator().manual_seed(0)) < 0.7).double()
    by_k = {}
    for k in (2, 4):
        groups = torch.arange(len(rewards)) // k
        by_k[k] = (informative_groups_per_1000(rewards, groups), advantage_energy_per_completion(rewards, groups))
        assert by_k[k][1] == pytest.approx(0.21 * (k - 1) / k, rel=0.03)
    assert by_k[2][0] > by_k[4][0] and by_k[2][1] < by_k[4][1]


def test_adaptive_tree_step_samples_more_only_where_rewards_disagree():
    class Flat(FakeEnv):
        def step(self, action):
            super().step(action)
            return 1.0 if action.startswith("same") else float(len(self.log))

    def proposer(prefix):
        counter = iter(range(100))
        return lambda n: [f"{prefix}{next(counter)}" for _ in range(n)]

    for prefix, expected in [("same", 2), ("diff", 4)]:
        env = Flat()
        budget = AdaptiveK(k=4, k0=2, k_max=8)
        step = adaptive_tree_step(("s",), proposer(prefix), budget, **driver_kwargs(env))
        assert len(step.branches) == expected
        assert all(state == ("s",) for state, _ in env.log)  # every candidate from the node's state
        assert env.history == step.snapshot == ("s", step.branches[step.chosen].candidate)
