"""Hierarchical (episode + step) advantages: GiGPO and its multi-agent version ``team_gigpo``.

Both read per-row columns: the episode return of the row's trajectory, the row's discounted step return (see
:func:`discounted_returns`), the prompt group, the trajectory, and an anchor id (the env state the row acted in,
hashed without history; build it with ``group_ids(anchor_texts)``).
"""

from __future__ import annotations

import torch

from teamgym.algos._checks import check_ids, check_positive, check_same_length, check_values
from teamgym.algos.grouping import combine_ids, dense_ids, normalize_in_groups
from teamgym.algos.registry import register_advantage
from teamgym.errors import InvalidArgumentError

__all__ = ["discounted_returns", "gigpo", "team_gigpo"]


def discounted_returns(
    rewards: torch.Tensor, trajectory_ids: torch.Tensor, turn_ids: torch.Tensor, *, gamma: float = 0.95
) -> torch.Tensor:
    """Per-row discounted return ``G_t = r_t + gamma * G_{t+1}`` along each trajectory, ordered by turn.

    GiGPO (arXiv 2505.10978, Eq. 6) uses gamma = 0.95. For per-agent returns (``team_gigpo``) pass
    ``trajectory_ids = combine_ids(trajectory_ids, agent_ids)`` so each agent's turns form their own chain. Rows may
    come in any order; turn ids must be distinct within a trajectory. A segmented doubling scan: O(N log T).
    """
    rewards = check_values("rewards", rewards)
    trajectory_ids = check_ids("trajectory_ids", trajectory_ids)
    turn_ids = check_ids("turn_ids", turn_ids)
    n = check_same_length(rewards=rewards, trajectory_ids=trajectory_ids, turn_ids=turn_ids)
    if not 0.0 <= gamma <= 1.0:
        raise InvalidArgumentError(f"gamma must be in [0, 1], got {gamma}: GiGPO uses 0.95")
    if n == 0:
        return rewards.clone()
    traj, _ = dense_ids(trajectory_ids)
    order = torch.argsort(turn_ids, stable=True)
    order = order[torch.argsort(traj[order], stable=True)]
    traj_sorted, turn_sorted = traj[order], turn_ids[order]
    same_next = traj_sorted[1:] == traj_sorted[:-1]
    if bool((same_next & (turn_sorted[1:] == turn_sorted[:-1])).any()):
        raise InvalidArgumentError(
            "turn_ids repeat within a trajectory, so the return order is ambiguous: give each row of a "
            "trajectory a distinct turn id (for per-agent returns combine trajectory and agent ids)"
        )
    # segment end (exclusive) per sorted row
    starts = torch.ones(n, dtype=torch.bool)
    starts[1:] = ~same_next
    seg_index = torch.cumsum(starts, 0) - 1
    seg_start = torch.nonzero(starts).squeeze(1)
    seg_end = torch.cat([seg_start[1:], torch.tensor([n])])[seg_index]
    values = rewards.to(torch.float64)[order]
    position = torch.arange(n)
    span, factor = 1, float(gamma)
    while span < n:
        ahead = position + span
        inside = ahead < seg_end
        if not bool(inside.any()):
            break
        shifted = torch.zeros_like(values)
        shifted[inside] = values[ahead[inside]]
        values = values + factor * shifted
        span, factor = span * 2, factor * factor
    out = torch.empty_like(values)
    out[order] = values
    return out.to(rewards.dtype)


def _one_value_per_unit(values: torch.Tensor, unit: torch.Tensor, name: str) -> torch.Tensor:
    """Index of the first row of each dense unit id; checks that ``values`` is constant within each unit."""
    n_units = int(unit.max()) + 1
    first = torch.full((n_units,), unit.numel(), dtype=torch.int64)
    first.scatter_reduce_(0, unit, torch.arange(unit.numel()), reduce="amin")
    if not torch.allclose(values, values[first][unit], rtol=1e-6, atol=1e-6):
        bad = int((~torch.isclose(values, values[first][unit], rtol=1e-6, atol=1e-6)).nonzero()[0])
        raise InvalidArgumentError(
            f"{name} must be constant within a trajectory, but row {bad} has {values[bad].item()} and its "
            f"trajectory's first row has {values[first][unit][bad].item()}: repeat the episode return on every row"
        )
    return first


@register_advantage("gigpo")
def gigpo(
    episode_returns: torch.Tensor,
    step_returns: torch.Tensor,
    group_ids: torch.Tensor,
    trajectory_ids: torch.Tensor,
    anchor_ids: torch.Tensor,
    *,
    omega: float = 1.0,
    scale_by_std: bool = True,
) -> torch.Tensor:
    """GiGPO two-level advantage ``A = A^E + omega * A^S`` (arXiv 2505.10978, Eqs. 4, 7, 8; verl-agent).

    Episode level ``A^E``: GRPO over one return per (group, trajectory) (repeated on each of its rows), so long
    trajectories do not weigh more. Step level ``A^S``: GRPO of ``step_returns`` over the step group (group, anchor):
    rows of the same prompt group that acted in an identical env state. Singleton groups give 0 (verl-agent gives
    the raw value), so all-distinct anchors or ``omega = 0`` reduce to episode-level GRPO. eps = 1e-6.

    Args:
        episode_returns: ``(N,)`` return of the row's trajectory (constant within a trajectory).
        step_returns: ``(N,)`` discounted return from the row's step (:func:`discounted_returns`).
        group_ids: ``(N,)`` prompt group (same task/seed).
        trajectory_ids: ``(N,)`` trajectory within the group (ids may repeat across groups).
        anchor_ids: ``(N,)`` anchor state id (equal ids = identical state).
        omega: weight of the step-level term.
        scale_by_std: divide both levels by their group std ("mean_std_norm"); False is "mean_norm".
    """
    episode_returns = check_values("episode_returns", episode_returns)
    step_returns = check_values("step_returns", step_returns)
    group_ids = check_ids("group_ids", group_ids)
    trajectory_ids = check_ids("trajectory_ids", trajectory_ids)
    anchor_ids = check_ids("anchor_ids", anchor_ids)
    n = check_same_length(
        episode_returns=episode_returns,
        step_returns=step_returns,
        group_ids=group_ids,
        trajectory_ids=trajectory_ids,
        anchor_ids=anchor_ids,
    )
    check_positive("omega", omega, allow_zero=True)
    if n == 0:
        return episode_returns.clone()
    trajectory = combine_ids(group_ids, trajectory_ids)
    first = _one_value_per_unit(episode_returns, trajectory, "episode_returns")
    episode_adv = normalize_in_groups(episode_returns[first], group_ids[first], scale_by_std=scale_by_std)
    step_adv = normalize_in_groups(
        step_returns, combine_ids(group_ids, anchor_ids), scale_by_std=scale_by_std
    )
    return (episode_adv[trajectory].to(torch.float64) + omega * step_adv.to(torch.float64)).to(
        episode_returns.dtype
    )


@register_advantage("team_gigpo")
def team_gigpo(
    episode_returns: torch.Tensor,
    step_returns: torch.Tensor,
    group_ids: torch.Tensor,
    trajectory_ids: torch.Tensor,
    agent_ids: torch.Tensor,
    anchor_ids: torch.Tensor,
    *,
    omega: float = 1.0,
    scale_by_std: bool = True,
) -> torch.Tensor:
    """Multi-agent GiGPO (teamgym design, direction A): GiGPO's two levels, normalised per agent as Dr.MAS.

    Outer level: the team trajectories of one task (``group_ids``). Each agent k has one episode return per
    trajectory (its mixed return, e.g. ``alpha*team + local``), standardised across the group's trajectories among
    agent k's returns only: ``A^E = (R_k - mu_{g,k}) / (sigma_{g,k} + eps)``. Inner level: step groups are
    (group, agent, anchor), i.e. the same agent acting in an identical state; ``step_returns`` are per-agent
    discounted returns over that agent's own turns (``discounted_returns(r, combine_ids(traj, agent), turn)``).
    ``A = A^E + omega * A^S``. Per-agent statistics keep each agent invariant to affine changes of its own rewards
    (Dr.MAS, arXiv 2602.08847) and never compare a coder's state with a tester's. With one agent this is exactly
    :func:`gigpo`.

    Args:
        episode_returns: ``(N,)`` the row's agent's return in its trajectory (constant per (trajectory, agent)).
        step_returns: ``(N,)`` the row's agent's discounted return from this turn.
        group_ids, trajectory_ids, agent_ids, anchor_ids: ``(N,)`` int64 ids.
        omega: weight of the step-level term.
        scale_by_std: divide by group stds (both levels).
    """
    agent_ids = check_ids("agent_ids", agent_ids)
    trajectory_ids = check_ids("trajectory_ids", trajectory_ids)
    group_ids = check_ids("group_ids", group_ids)
    anchor_ids = check_ids("anchor_ids", anchor_ids)
    check_same_length(trajectory_ids=trajectory_ids, agent_ids=agent_ids, group_ids=group_ids)
    return gigpo(
        episode_returns,
        step_returns,
        combine_ids(group_ids, agent_ids),
        trajectory_ids,
        anchor_ids,
        omega=omega,
        scale_by_std=scale_by_std,
    )
