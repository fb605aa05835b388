"""Turn-level GAE (Turn-PPO) and the clipped value loss: loop references, invariants, errors."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from teamgym.algos import combine_ids, discounted_returns, turn_gae, value_loss
from teamgym.errors import InvalidArgumentError
from tests.algos.reference import token_gae_loop, turn_gae_loop


def random_chains(seed: int):
    """Ragged episodes of 1-7 turns by 1-3 agents in a random, env-chosen order; rows shuffled; random dones."""
    rng = random.Random(seed)
    episodes, agents, steps, rewards, values, dones = [], [], [], [], [], []
    for episode in range(rng.randint(1, 6)):
        roles = rng.randint(1, 3)
        for step in rng.sample(range(20), rng.randint(1, 7)):  # gaps between step ids, as after dropped rows
            episodes.append(episode)
            agents.append(rng.randrange(roles))
            steps.append(step)
            rewards.append(rng.uniform(-1, 2))
            values.append(rng.uniform(-1, 1))
            dones.append(rng.random() < 0.2)
    order = list(range(len(episodes)))
    rng.shuffle(order)
    pick = lambda column, dtype: torch.tensor([column[i] for i in order], dtype=dtype)  # noqa: E731
    return (pick(episodes, torch.long), pick(agents, torch.long), pick(steps, torch.long),
            pick(rewards, torch.float64), pick(values, torch.float64), pick(dones, torch.bool))


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("per_agent", [False, True])
def test_turn_gae_matches_the_loop_on_ragged_chains(seed, per_agent):
    episodes, agents, steps, rewards, values, dones = random_chains(seed)
    chains = combine_ids(episodes, agents) if per_agent else episodes
    gamma, lam = random.Random(seed).choice([(0.99, 0.9), (0.9, 0.5), (1.0, 1.0), (0.5, 0.0)])
    advantages, returns = turn_gae(rewards, values, chains, steps, dones, gamma=gamma, lam=lam)
    expected, expected_returns = turn_gae_loop(rewards.tolist(), values.tolist(), chains.tolist(), steps.tolist(),
                                               dones.tolist(), gamma, lam)
    np.testing.assert_allclose(advantages.numpy(), expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(returns.numpy(), expected_returns, rtol=1e-10, atol=1e-10)


def test_single_token_turns_reduce_to_token_level_gae():
    """Each turn one token: the turn-level GAE of the chain is verl's token-level GAE over the token sequence."""
    rng = torch.Generator().manual_seed(0)
    lengths = [5, 1, 3, 7]
    width = max(lengths)
    token_rewards = torch.rand(len(lengths), width, generator=rng, dtype=torch.float64)
    token_values = torch.rand(len(lengths), width, generator=rng, dtype=torch.float64)
    mask = torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]
    expected = token_gae_loop(token_rewards.tolist(), token_values.tolist(), mask.tolist(), 0.99, 0.9)
    rows, positions = mask.nonzero(as_tuple=True)
    advantages, _ = turn_gae(token_rewards[mask], token_values[mask], rows, positions, gamma=0.99, lam=0.9)
    np.testing.assert_allclose(advantages.numpy(), [expected[r][t] for r, t in zip(rows.tolist(),
                                                                                  positions.tolist(), strict=True)])


def test_lambda_one_gives_discounted_returns_minus_values():
    episodes, agents, steps, rewards, values, _ = random_chains(3)
    advantages, returns = turn_gae(rewards, values, episodes, steps, gamma=0.9, lam=1.0)
    np.testing.assert_allclose(returns.numpy(), discounted_returns(rewards, episodes, steps, gamma=0.9).numpy())
    np.testing.assert_allclose(advantages.numpy(), (returns - values).numpy())


def test_lambda_zero_is_one_step_td_and_dones_cut_the_bootstrap():
    rewards, values = torch.tensor([1.0, 0.0, 2.0]), torch.tensor([0.5, 0.25, 1.0])
    chain, turns = torch.zeros(3, dtype=torch.long), torch.tensor([0, 1, 2])
    advantages, _ = turn_gae(rewards, values, chain, turns, gamma=0.5, lam=0.0)
    assert advantages.tolist() == [1.0 + 0.5 * 0.25 - 0.5, 0.0 + 0.5 * 1.0 - 0.25, 2.0 - 1.0]
    cut, _ = turn_gae(rewards, values, chain, turns, torch.tensor([False, True, False]), gamma=0.5, lam=0.0)
    assert cut.tolist() == [1.0 + 0.5 * 0.25 - 0.5, 0.0 - 0.25, 2.0 - 1.0]


def test_permuting_rows_permutes_the_result_and_dtypes_follow_the_inputs():
    episodes, agents, steps, rewards, values, dones = random_chains(7)
    base, _ = turn_gae(rewards, values, episodes, steps, dones)
    perm = torch.randperm(len(rewards), generator=torch.Generator().manual_seed(1))
    permuted, _ = turn_gae(rewards[perm], values[perm], episodes[perm], steps[perm], dones[perm])
    torch.testing.assert_close(permuted, base[perm])
    assert base.dtype == torch.float64
    assert turn_gae(rewards.float(), values.float(), episodes, steps)[0].dtype == torch.float32
    empty = torch.zeros(0)
    assert turn_gae(empty, empty, empty.long(), empty.long())[0].shape == (0,)


def test_turn_gae_errors_name_the_value_and_the_fix():
    r, ids = torch.zeros(2), torch.zeros(2, dtype=torch.long)
    with pytest.raises(InvalidArgumentError, match=r"gamma=1\.5: expected a float in \[0, 1\] \(Turn-PPO: 0\.99\)"):
        turn_gae(r, r, ids, torch.arange(2), gamma=1.5)
    with pytest.raises(InvalidArgumentError, match=r"lam=-0\.1.*Turn-PPO: 0\.9"):
        turn_gae(r, r, ids, torch.arange(2), lam=-0.1)
    with pytest.raises(InvalidArgumentError, match="turn_ids repeat within a chain .*distinct turn id"):
        turn_gae(r, r, ids, ids)
    with pytest.raises(InvalidArgumentError, match="dones must be a bool"):
        turn_gae(r, r, ids, torch.arange(2), torch.zeros(2))
    with pytest.raises(InvalidArgumentError, match="one row per agent-turn"):
        turn_gae(r, torch.zeros(3), ids, torch.arange(2))
    with pytest.raises(InvalidArgumentError, match="values must be finite"):
        turn_gae(r, torch.tensor([0.0, float("nan")]), ids, torch.arange(2))


def test_value_loss_clips_against_the_old_values():
    old, returns = torch.tensor([0.0, 0.0]), torch.tensor([1.0, -1.0])
    values = torch.tensor([0.5, 0.5], requires_grad=True)
    loss = value_loss(values, old, returns, clip=0.2)
    # row 0: unclipped 0.25, clipped (0.2 - 1)^2 = 0.64 -> 0.64; row 1: unclipped 2.25, clipped 1.44 -> 2.25
    assert loss.item() == pytest.approx(0.5 * (0.64 + 2.25) / 2)
    loss.backward()
    assert values.grad.tolist() == pytest.approx([0.0, 0.5 * 2 * 1.5 / 2])  # the clipped row passes no gradient
    assert value_loss(values, old, returns, clip=None).item() == pytest.approx(0.5 * (0.25 + 2.25) / 2)
    with pytest.raises(InvalidArgumentError, match=r"value clip=0: expected a float > 0 .* or None"):
        value_loss(values, old, returns, clip=0)
