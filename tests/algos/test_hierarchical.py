import re

import numpy as np
import pytest
import torch

from teamgym.algos import combine_ids, discounted_returns, gigpo, grpo, team_gigpo
from teamgym.errors import InvalidArgumentError
from tests.algos.reference import discounted_returns_loop, gigpo_loop, grpo_loop, team_gigpo_loop


def episodes(seed: int, n_agents: int = 1):
    """Random multi-turn team episodes, rows shuffled: groups x trajectories x turns x agents."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in rng.choice(10**6, int(rng.integers(1, 5)), replace=False):
        for t in range(int(rng.integers(1, 5))):
            returns = {a: float(rng.integers(0, 3)) for a in range(n_agents)}
            for turn in range(int(rng.integers(1, 5))):
                for a in range(n_agents):
                    anchor = int(rng.integers(0, 3))  # few anchors: step groups form, some singletons
                    rows.append((int(g), t, a, turn, anchor, returns[a], float(rng.integers(0, 2))))
    rng.shuffle(rows)
    cols = list(zip(*rows, strict=True))
    g, t, a, turn, anchor = (torch.tensor(c, dtype=torch.int64) for c in cols[:5])
    episode_return, step_reward = (torch.tensor(c, dtype=torch.float64) for c in cols[5:])
    return g, t, a, turn, anchor, episode_return, step_reward


@pytest.mark.parametrize("seed", range(25))
def test_discounted_returns_matches_loop(seed):
    g, t, a, turn, _, _, r = episodes(seed, n_agents=2)
    traj = combine_ids(g, t, a)
    ours = discounted_returns(r, traj, turn, gamma=0.9)
    np.testing.assert_allclose(
        ours.numpy(), discounted_returns_loop(r.tolist(), traj.tolist(), turn.tolist(), 0.9)
    )


def test_discounted_returns_long_chain_and_errors():
    r = torch.ones(1000, dtype=torch.float64)
    ours = discounted_returns(r, torch.zeros(1000, dtype=torch.int64), torch.arange(1000), gamma=0.5)
    assert abs(ours[0].item() - 2.0) < 1e-12 and ours[-1].item() == 1.0
    with pytest.raises(InvalidArgumentError, match="distinct turn"):
        discounted_returns(
            torch.ones(2), torch.zeros(2, dtype=torch.int64), torch.zeros(2, dtype=torch.int64)
        )


@pytest.mark.parametrize("seed", range(25))
def test_gigpo_matches_loop(seed):
    g, t, _, turn, anchor, ep, r = episodes(seed)
    step = discounted_returns(r, combine_ids(g, t), turn)
    for omega, scale in [(1.0, True), (0.5, False)]:
        ours = gigpo(ep, step, g, t, anchor, omega=omega, scale_by_std=scale)
        ref = gigpo_loop(ep.tolist(), step.tolist(), g.tolist(), t.tolist(), anchor.tolist(), omega, scale)
        np.testing.assert_allclose(ours.numpy(), ref, atol=1e-9)


def test_gigpo_invariants():
    g, t, _, turn, anchor, ep, r = episodes(3)
    step = discounted_returns(r, combine_ids(g, t), turn)
    first = {}
    for i, key in enumerate(zip(g.tolist(), t.tolist(), strict=True)):
        first.setdefault(key, i)
    episode_grpo = grpo(ep[list(first.values())], g[list(first.values())])
    expected = torch.tensor(
        [episode_grpo[list(first).index(k)].item() for k in zip(g.tolist(), t.tolist(), strict=True)]
    )
    distinct = torch.arange(len(g))
    assert torch.allclose(gigpo(ep, step, g, t, distinct).float(), expected.float(), atol=1e-6)  # A^S = 0
    assert torch.allclose(gigpo(ep, step, g, t, anchor, omega=0.0).float(), expected.float(), atol=1e-6)
    # groups never cross prompt groups: changing group 0 leaves every other row unchanged
    other = g != g[0]
    changed_ep, changed_step = ep.clone(), step.clone()
    changed_ep[~other] += 5.0
    changed_step[~other] *= 3.0
    assert torch.equal(
        gigpo(ep, step, g, t, anchor)[other], gigpo(changed_ep, changed_step, g, t, anchor)[other]
    )


def test_gigpo_rejects_inconsistent_episode_returns():
    ids = torch.zeros(2, dtype=torch.int64)
    with pytest.raises(InvalidArgumentError, match="constant within a trajectory"):
        gigpo(torch.tensor([0.0, 1.0]), torch.zeros(2), ids, ids, torch.tensor([0, 1]))


@pytest.mark.parametrize("seed", range(25))
def test_team_gigpo_matches_loop(seed):
    g, t, a, turn, anchor, ep, r = episodes(seed, n_agents=3)
    step = discounted_returns(r, combine_ids(g, t, a), turn)
    ours = team_gigpo(ep, step, g, t, a, anchor)
    ref = team_gigpo_loop(ep.tolist(), step.tolist(), g.tolist(), t.tolist(), a.tolist(), anchor.tolist())
    np.testing.assert_allclose(ours.numpy(), ref, atol=1e-9)


@pytest.mark.parametrize("seed", range(10))
def test_team_gigpo_with_one_agent_is_gigpo(seed):
    g, t, a, turn, anchor, ep, r = episodes(seed, n_agents=1)
    step = discounted_returns(r, combine_ids(g, t, a), turn)
    assert torch.equal(team_gigpo(ep, step, g, t, a + 42, anchor), gigpo(ep, step, g, t, anchor))


def test_team_gigpo_affine_invariance_per_agent():
    g, t, a, turn, anchor, ep, r = episodes(11, n_agents=2)
    step = discounted_returns(r, combine_ids(g, t, a), turn)
    base = team_gigpo(ep, step, g, t, a, anchor)
    ep2, step2 = ep.clone(), step.clone()
    ep2[a == 1] = 4.0 * ep2[a == 1] + 2.0
    step2[a == 1] = 4.0 * step2[a == 1] - 1.0
    assert torch.allclose(team_gigpo(ep2, step2, g, t, a, anchor), base, rtol=1e-4, atol=1e-4)
    # and the per-agent step groups never mix agents
    keys = list(zip(g.tolist(), a.tolist(), anchor.tolist(), strict=True))
    assert len(grpo_loop(step.tolist(), keys)) == len(keys)


def test_discounted_returns_uneven_lengths_use_the_scan_path():
    """Many one-turn trajectories and one long one: the padded table would be too big, the scan is used."""
    rng = np.random.default_rng(0)
    traj = np.concatenate([np.arange(70_000), np.full(300, 70_000)])
    turn = np.concatenate([np.zeros(70_000, dtype=np.int64), rng.permutation(300) * 7])
    order = rng.permutation(len(traj))
    traj, turn = torch.from_numpy(traj[order]), torch.from_numpy(turn[order])
    r = torch.from_numpy(rng.random(len(traj)))
    ours = discounted_returns(r, traj, turn, gamma=0.9)
    ref = discounted_returns_loop(r.tolist(), traj.tolist(), turn.tolist(), 0.9)
    np.testing.assert_allclose(ours.numpy(), ref, rtol=1e-12)


def large_episodes(seed: int, anchors: str, n_agents: int = 1):
    """Enough rows (2,000 groups x 4 trajectories x 5 turns) that the step-group keys do not fold by radix:
    anchors built per group (nested: no remap needed), or drawn from one pool shared by all groups (not nested:
    the remap and sort fallback). Trajectory ids are globally unique and sparse, so the unit codes do not fold
    either."""
    rng = np.random.default_rng(seed)
    n_groups, n_traj, n_turns = 2_000, 4, 5
    g = np.repeat(np.arange(n_groups), n_traj * n_turns * n_agents)
    local_t = np.tile(np.repeat(np.arange(n_traj), n_turns * n_agents), n_groups)
    a = np.tile(np.arange(n_agents), n_groups * n_traj * n_turns)
    t = (g * n_traj + local_t) * 1_000_003 + 10**12  # unique per (group, trajectory), sparse
    if anchors == "nested":
        anchor = g * 10 + rng.integers(0, 4, g.size)
    else:
        anchor = rng.integers(0, 5_000, g.size)
    returns = rng.integers(0, 3, (n_groups * n_traj, n_agents)).astype(np.float64)
    ep = returns[g * n_traj + local_t, a]
    step = rng.random(g.size)
    order = rng.permutation(g.size)
    return tuple(torch.from_numpy(c[order]) for c in (g, t, a, anchor, ep, step))


@pytest.mark.parametrize("anchors", ["nested", "shared"])
def test_gigpo_and_team_gigpo_match_loop_on_large_keys(anchors):
    g, t, a, anchor, ep, step = large_episodes(0, anchors)
    ours = gigpo(ep, step, g, t, anchor)
    ref = gigpo_loop(ep.tolist(), step.tolist(), g.tolist(), t.tolist(), anchor.tolist())
    np.testing.assert_allclose(ours.numpy(), ref, atol=1e-9)
    g, t, a, anchor, ep, step = large_episodes(1, anchors, n_agents=2)
    ours = team_gigpo(ep, step, g, t, a, anchor)
    ref = team_gigpo_loop(ep.tolist(), step.tolist(), g.tolist(), t.tolist(), a.tolist(), anchor.tolist())
    np.testing.assert_allclose(ours.numpy(), ref, atol=1e-9)


@pytest.mark.parametrize("sparse_trajectories", [False, True])
@pytest.mark.parametrize("n_agents", [1, 2])
def test_gigpo_and_team_gigpo_reject_inconsistent_episode_returns_on_any_unit_codes(sparse_trajectories, n_agents):
    """The constancy check fires whether unit codes fold by radix (small trajectory ids) or not (unique sparse
    ones), and names a row of the bad trajectory (of the bad agent, for team GiGPO)."""
    g, t, a, anchor, ep, step = large_episodes(2, "nested", n_agents=n_agents)
    if not sparse_trajectories:
        t = torch.unique(t, return_inverse=True)[1] % 4  # the trajectory within its group: small ids
    bad = int(torch.nonzero(a == n_agents - 1)[7])
    ep = ep.clone()
    ep[bad] += 0.5
    unit = (g == g[bad]) & (t == t[bad]) & (a == a[bad])
    estimator = (lambda: gigpo(ep, step, g, t, anchor)) if n_agents == 1 else lambda: team_gigpo(ep, step, g, t, a,
                                                                                                 anchor)
    with pytest.raises(InvalidArgumentError, match="constant within a trajectory") as raised:
        estimator()
    assert unit[int(re.search(r"row (\d+)", str(raised.value)).group(1))]


@pytest.mark.parametrize("layout", ["from zero", "shifted starts", "gaps", "sparse ids"])
def test_discounted_returns_matches_loop_on_every_table_layout(layout):
    """Consecutive turn ids (from 0 or any start) take the table indexed by the ids themselves; gaps or sparse ids
    take the ranked table. Both give the loop's returns, and both refuse repeated turn ids."""
    rng = np.random.default_rng(4)
    lengths = rng.integers(1, 9, 300)
    traj = np.repeat(np.arange(300), lengths)
    offset = np.concatenate([np.arange(k) for k in lengths])
    turn = {"from zero": offset, "shifted starts": offset + rng.integers(0, 4, 300)[traj],
            "gaps": offset * rng.integers(1, 3, 300)[traj], "sparse ids": offset * 10**9}[layout]
    order = rng.permutation(traj.size)
    traj, turn = torch.from_numpy(traj[order]), torch.from_numpy(turn[order])
    r = torch.from_numpy(rng.normal(size=traj.numel()))
    ours = discounted_returns(r, traj, turn, gamma=0.9)
    np.testing.assert_allclose(ours.numpy(), discounted_returns_loop(r.tolist(), traj.tolist(), turn.tolist(), 0.9))
    first = int(torch.nonzero(torch.from_numpy(lengths)[traj] > 1)[0])  # a row of a trajectory of 2+ turns
    repeated = turn.clone()
    repeated[(traj == traj[first]) & (turn != turn[first])] = turn[first]
    with pytest.raises(InvalidArgumentError, match="distinct turn"):
        discounted_returns(r, traj, repeated)
