import numpy as np
import pytest
import torch

from teamgym.algos import (
    at_grpo,
    at_grpo_group_ids,
    dr_grpo,
    dr_mas,
    get_advantage,
    group_ids,
    grpo,
    list_advantages,
    mhgpo,
    register_advantage,
    rloo,
)
from teamgym.errors import InvalidArgumentError, RegistrationError, UnknownNameError
from tests.algos.reference import grpo_loop, rloo_loop


def random_batch(seed: int):
    """Rewards with ties (0/1 and a few levels), singletons, and sparse negative group ids."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    ids = rng.choice(rng.integers(-(10**9), 10**9, max(1, n // 3)), n)
    kind = seed % 3
    rewards = (
        rng.integers(0, 2, n)
        if kind == 0
        else rng.integers(0, 4, n) / 3
        if kind == 1
        else rng.normal(0, 5, n)
    )
    return torch.tensor(rewards, dtype=torch.float64), torch.from_numpy(ids.astype(np.int64))


@pytest.mark.parametrize("seed", range(40))
def test_grpo_family_matches_loop(seed):
    rewards, ids = random_batch(seed)
    r, g = rewards.tolist(), ids.tolist()
    np.testing.assert_allclose(grpo(rewards, ids).numpy(), grpo_loop(r, g), atol=1e-9)
    np.testing.assert_allclose(dr_grpo(rewards, ids).numpy(), grpo_loop(r, g, scale_by_std=False), atol=1e-9)
    np.testing.assert_allclose(rloo(rewards, ids).numpy(), rloo_loop(r, g), atol=1e-9)


def test_grpo_invariants():
    a = grpo(torch.tensor([0.0, 1.0]), torch.tensor([4, 4]))
    assert torch.allclose(a, torch.tensor([-0.70710678, 0.70710678]), atol=1e-5)
    assert grpo(torch.full((5,), 3.0), torch.zeros(5, dtype=torch.int64)).abs().max() == 0
    assert grpo(torch.tensor([2.0]), torch.tensor([1])).item() == 0.0  # singleton
    rewards, ids = random_batch(7)
    perm = torch.randperm(len(rewards), generator=torch.Generator().manual_seed(0))
    assert torch.allclose(grpo(rewards[perm], ids[perm]), grpo(rewards, ids)[perm])
    assert grpo(torch.tensor([0.0, 1.0], dtype=torch.float32), torch.tensor([0, 0])).dtype == torch.float32


def test_rloo_leaves_one_out():
    assert rloo(torch.tensor([1.0, 0.0, 0.0]), torch.tensor([0, 0, 0])).tolist() == [1.0, -0.5, -0.5]


@pytest.mark.parametrize("seed", range(10))
def test_at_grpo_one_agent_one_turn_is_grpo(seed):
    rewards, tasks = random_batch(seed)
    zeros = torch.zeros_like(tasks)
    assert torch.allclose(at_grpo(rewards, tasks, zeros + 3, zeros), grpo(rewards, tasks))


def test_at_grpo_groups_never_cross_tasks_defect_1():
    """AT-GRPO reference defect 1: ids were row_index // K // K, merging the nodes of different tasks."""
    k, tasks, agents, turns = 4, 3, 2, 3
    rows = [(t, a, u, b) for t in range(tasks) for u in range(turns) for a in range(agents) for b in range(k)]
    task, agent, turn, _branch = (torch.tensor(c) for c in zip(*rows, strict=True))
    ids = at_grpo_group_ids(task, agent, turn)
    for g in ids.unique():
        members = ids == g
        assert task[members].unique().numel() == 1
        assert agent[members].unique().numel() == 1 and turn[members].unique().numel() == 1
        assert int(members.sum()) == k  # exactly the K candidates of one node
    defective = torch.arange(len(rows)) // k // k
    assert any(
        task[defective == g].unique().numel() > 1 for g in defective.unique()
    )  # the bug would be caught
    rewards = torch.rand(len(rows), generator=torch.Generator().manual_seed(1))
    # changing one task's rewards never changes another task's advantages
    shifted = rewards.clone()
    shifted[task == 0] += 10.0 * torch.rand(
        int((task == 0).sum()), generator=torch.Generator().manual_seed(2)
    )
    assert torch.equal(
        at_grpo(rewards, task, agent, turn)[task != 0], at_grpo(shifted, task, agent, turn)[task != 0]
    )


@pytest.mark.parametrize("seed", range(10))
def test_dr_mas_is_grpo_per_group_and_agent_and_affine_invariant(seed):
    rng = np.random.default_rng(seed)
    n = 120
    rewards = torch.tensor(rng.normal(0, 1, n))
    groups = torch.tensor(rng.integers(0, 6, n))
    agents = torch.tensor(rng.integers(0, 3, n))
    ours = dr_mas(rewards, groups, agents)
    keys = list(zip(groups.tolist(), agents.tolist(), strict=True))
    np.testing.assert_allclose(ours.numpy(), grpo_loop(rewards.tolist(), keys), atol=1e-9)
    changed = rewards.clone()
    changed[agents == 1] = 7.5 * changed[agents == 1] - 3.0
    # exact up to the 1e-6 added to the std
    assert torch.allclose(dr_mas(changed, groups, agents), ours, rtol=1e-4, atol=1e-4)


def test_mhgpo_one_agent_is_grpo():
    rewards, roots = random_batch(3)
    assert torch.allclose(mhgpo(rewards, roots, torch.zeros_like(roots)), grpo(rewards, roots))


def test_registry_lookup_and_errors(monkeypatch):
    from teamgym.algos import registry

    monkeypatch.setattr(registry, "_ESTIMATORS", dict(registry._ESTIMATORS))  # the test's registration stays here
    names = list_advantages()
    for name in ["grpo", "dr_grpo", "rloo", "at_grpo", "dr_mas", "mhgpo", "gigpo", "team_gigpo", "treerl"]:
        assert name in names
    assert get_advantage("grpo") is grpo
    with pytest.raises(UnknownNameError) as info:
        get_advantage("gpro")
    assert "grpo" in info.value.suggestions and "did you mean" in str(info.value)
    with pytest.raises(RegistrationError):
        register_advantage("grpo", lambda r, g: r)
    with pytest.raises(RegistrationError):
        register_advantage("Bad Name", lambda r, g: r)
    register_advantage("test_only_identity", lambda r, g: r)
    assert "test_only_identity" in list_advantages()


def test_validation_errors_name_bad_values():
    with pytest.raises(InvalidArgumentError, match="1-D"):
        grpo(torch.zeros(2, 2), torch.zeros(2, dtype=torch.int64))
    with pytest.raises(InvalidArgumentError, match="lengths"):
        grpo(torch.zeros(3), torch.zeros(2, dtype=torch.int64))
    with pytest.raises(InvalidArgumentError, match="finite"):
        grpo(torch.tensor([0.0, float("nan")]), torch.zeros(2, dtype=torch.int64))
    with pytest.raises(InvalidArgumentError, match="integers"):
        grpo(torch.zeros(2), torch.zeros(2))
    with pytest.raises(InvalidArgumentError, match="torch.Tensor"):
        grpo([0.0, 1.0], torch.zeros(2, dtype=torch.int64))


@pytest.mark.parametrize("seed", range(10))
def test_estimators_on_ids_built_from_string_keys_match_loop(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 150))
    tasks = [f"task-{i}" for i in rng.integers(0, 8, n)]
    agents = [["coder", "tester"][i] for i in rng.integers(0, 2, n)]
    turns = rng.integers(0, 3, n).tolist()
    rewards = torch.tensor(rng.integers(0, 3, n) / 2.0)  # ties
    ids = group_ids(tasks, agents, turns)
    keys = list(zip(tasks, agents, turns, strict=True))
    np.testing.assert_allclose(grpo(rewards, ids).numpy(), grpo_loop(rewards.tolist(), keys), atol=1e-9)
    np.testing.assert_allclose(rloo(rewards, ids).numpy(), rloo_loop(rewards.tolist(), keys), atol=1e-9)
    agent_codes = group_ids(agents)
    at = at_grpo(rewards, group_ids(tasks), agent_codes, torch.tensor(turns))
    np.testing.assert_allclose(at.numpy(), grpo_loop(rewards.tolist(), keys), atol=1e-9)
    mas = dr_mas(rewards, group_ids(tasks), agent_codes)
    np.testing.assert_allclose(
        mas.numpy(), grpo_loop(rewards.tolist(), list(zip(tasks, agents, strict=True))), atol=1e-9
    )
