"""Turn-level GAE (Turn-PPO) and the clipped value loss of its critic.

Turn-PPO (arXiv 2512.17008; no public code, details unverified) runs PPO on a turn-level MDP: a state is what an
agent sees when its turn starts, an action is its whole completion, and a learned critic scores each state. The
advantage is GAE (Schulman et al. 2016, arXiv 1506.02438, eq. 16) over agent-turns instead of tokens:

    delta_t = r_t + gamma * V(s_{t+1}) - V(s_t)          (V(s_{t+1}) = 0 after the chain's last turn or a done)
    A_t     = delta_t + gamma * lambda * A_{t+1}
    R_t     = A_t + V(s_t)                              (the critic's regression target)

with gamma 0.99 and lambda 0.9 (ALGORITHMS.md). A *chain* is the sequence of turns one decision maker takes in one
episode, ordered by turn id: for per-agent chains pass ``trajectory_ids = combine_ids(episode_ids, agent_ids)`` (the
next own turn is one gamma away). When every turn is one token this is token-level GAE over that token sequence
(verl's ``compute_gae_advantage_return``), the invariant the tests check.
"""

from __future__ import annotations

import torch

from teamgym.algos._checks import check_ids, check_same_length, check_values
from teamgym.algos.grouping import dense_ids
from teamgym.algos.hierarchical import discounted_returns
from teamgym.errors import InvalidArgumentError

__all__ = ["turn_gae", "value_loss"]


def turn_gae(rewards: torch.Tensor, values: torch.Tensor, trajectory_ids: torch.Tensor, turn_ids: torch.Tensor,
             dones: torch.Tensor | None = None, *, gamma: float = 0.99,
             lam: float = 0.9) -> tuple[torch.Tensor, torch.Tensor]:
    """``(advantages, returns)``, each ``(N,)``: GAE along each chain of agent-turns (see the module docstring).

    Args:
        rewards: ``(N,)`` the reward credited to each turn.
        values: ``(N,)`` the critic's value of the state each turn acted in.
        trajectory_ids: ``(N,)`` the chain of each row (an episode, or an (episode, agent) pair).
        turn_ids: ``(N,)`` the order within a chain (distinct within a chain; rows may come in any order).
        dones: ``(N,)`` bool, optional: the episode ended after this turn, so nothing is bootstrapped from the
            chain's next row (which then starts a new episode). The last row of every chain is terminal whatever
            its flag: a chain holds no state to bootstrap from after it.
        gamma: discount per turn, in [0, 1] (Turn-PPO: 0.99).
        lam: GAE's lambda, in [0, 1] (Turn-PPO: 0.9; 1 gives Monte-Carlo returns minus values, 0 one-step TD).

    Raises:
        InvalidArgumentError: mismatched lengths, non-finite values, repeated turn ids within a chain, or gamma or
            lam outside [0, 1].
    """
    rewards = check_values("rewards", rewards)
    values = check_values("values", values)
    trajectory_ids = check_ids("trajectory_ids", trajectory_ids)
    turn_ids = check_ids("turn_ids", turn_ids)
    if dones is None:
        dones = torch.zeros(rewards.shape[0], dtype=torch.bool, device=rewards.device)
    elif not isinstance(dones, torch.Tensor) or dones.dtype != torch.bool:
        raise InvalidArgumentError(f"dones must be a bool torch.Tensor (one flag per row), got "
                                   f"{getattr(dones, 'dtype', type(dones).__name__)}: pass dones.bool()")
    n = check_same_length(rewards=rewards, values=values, trajectory_ids=trajectory_ids, turn_ids=turn_ids,
                          dones=dones)
    for name, value, source in (("gamma", gamma, "0.99"), ("lam", lam, "0.9")):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
            raise InvalidArgumentError(f"{name}={value!r}: expected a float in [0, 1] (Turn-PPO: {source})")
    dtype = torch.promote_types(torch.promote_types(rewards.dtype, values.dtype), torch.float32)
    if n == 0:
        empty = torch.zeros(0, dtype=dtype, device=rewards.device)
        return empty, empty.clone()
    chain = dense_ids(trajectory_ids)[0]
    order = torch.argsort(turn_ids, stable=True)
    order = order.index_select(0, torch.argsort(chain.index_select(0, order), stable=True))  # by chain, then turn
    chain_sorted, turn_sorted = chain.index_select(0, order), turn_ids.index_select(0, order)
    same_chain = chain_sorted[1:] == chain_sorted[:-1]  # (N-1,) the next sorted row continues the chain
    repeated = same_chain & (turn_sorted[1:] == turn_sorted[:-1])
    if bool(repeated.any()):
        row = int(order[int(repeated.nonzero()[0]) + 1])
        raise InvalidArgumentError(
            f"turn_ids repeat within a chain (turn {int(turn_ids[row])} at row {row}), so the turn order is "
            "ambiguous: give each row of a chain a distinct turn id (for per-agent chains combine episode and "
            "agent ids)"
        )
    value_sorted = values.index_select(0, order).to(dtype)
    continues = torch.zeros(n, dtype=torch.bool, device=rewards.device)
    continues[:-1] = same_chain & ~dones.index_select(0, order)[:-1]
    next_values = torch.zeros(n, dtype=dtype, device=rewards.device)
    next_values[:-1] = value_sorted[1:]
    deltas = rewards.index_select(0, order).to(dtype) + gamma * next_values * continues - value_sorted
    starts = torch.ones(n, dtype=torch.int64, device=rewards.device)
    starts[1:] = (~continues[:-1]).to(torch.int64)
    segment = torch.cumsum(starts, 0)  # one id per run of turns that bootstrap from each other
    sorted_advantages = discounted_returns(deltas, segment, torch.arange(n, device=rewards.device),
                                           gamma=gamma * lam)
    advantages = torch.empty(n, dtype=dtype, device=rewards.device).index_copy_(0, order, sorted_advantages)
    return advantages, advantages + values.to(dtype)


def value_loss(values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, *,
               clip: float | None = 0.2) -> torch.Tensor:
    """The critic's clipped value loss, a scalar: ``0.5 * mean(max((V - R)^2, (V_clip - R)^2))``.

    ``V_clip = old + clamp(V - old, -clip, clip)`` keeps one update from moving a value further than ``clip`` from
    the value the advantages were computed with (PPO2's value clipping; verl ``compute_value_loss``, whose
    ``cliprange_value`` defaults to 0.5; ours 0.2 for rewards in [0, 1]).

    Args:
        values: ``(N,)`` the critic's current values (with gradients).
        old_values: ``(N,)`` the values before the update (the ones GAE used).
        returns: ``(N,)`` the GAE returns (targets).
        clip: the clip range (> 0), or None for the plain squared error.
    """
    n = check_same_length(values=values, old_values=old_values, returns=returns)
    if clip is not None and not (not isinstance(clip, bool) and isinstance(clip, (int, float)) and clip > 0):
        raise InvalidArgumentError(f"value clip={clip!r}: expected a float > 0 (e.g. 0.2) or None for no clipping")
    if n == 0:
        return values.sum() * 0.0
    unclipped = (values - returns) ** 2
    if clip is None:
        return 0.5 * unclipped.mean()
    clipped = (old_values + (values - old_values).clamp(-clip, clip) - returns) ** 2
    return 0.5 * torch.maximum(unclipped, clipped).mean()
