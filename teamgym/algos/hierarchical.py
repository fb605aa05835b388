"""Hierarchical (episode + step) advantages: GiGPO and its multi-agent version ``team_gigpo``.

Both read per-row columns: the episode return of the row's trajectory, the row's discounted step return (see
:func:`discounted_returns`), the prompt group, the trajectory, and an anchor id (the env state the row acted
in, hashed without history; build it with ``group_ids(anchor_texts)``).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from teamgym.algos._checks import check_ids, check_output, check_positive, check_same_length, check_values
from teamgym.algos.grouping import (
    _bincount_limit,
    _normalize_codes,
    _partition_codes,
    _radix_codes,
    dense_ids,
)
from teamgym.algos.registry import register_advantage
from teamgym.errors import InvalidArgumentError

__all__ = ["discounted_returns", "gigpo", "team_gigpo"]


def discounted_returns(
    rewards: torch.Tensor, trajectory_ids: torch.Tensor, turn_ids: torch.Tensor, *, gamma: float = 0.95
) -> torch.Tensor:
    """Per-row discounted return ``G_t = r_t + gamma * G_{t+1}`` along each trajectory, ordered by turn.

    GiGPO (arXiv 2505.10978) uses gamma = 0.95. For per-agent returns (``team_gigpo``) pass
    ``trajectory_ids = combine_ids(trajectory_ids, agent_ids)`` so each agent's turns form their own chain.
    Rows may come in any order; turn ids must be distinct within a trajectory. No sort: the dense id of
    (trajectory, turn) is each row's rank; then a padded table filled backwards (O(N) for even lengths) or,
    for very uneven lengths, a segmented doubling scan (O(N log T)).
    """
    rewards = check_values("rewards", rewards)
    trajectory_ids = check_ids("trajectory_ids", trajectory_ids)
    turn_ids = check_ids("turn_ids", turn_ids)
    n = check_same_length(rewards=rewards, trajectory_ids=trajectory_ids, turn_ids=turn_ids)
    if not 0.0 <= gamma <= 1.0:
        raise InvalidArgumentError(f"gamma must be in [0, 1], got {gamma}: GiGPO uses 0.95")
    if n == 0:
        return rewards.clone()
    fast = _returns_by_turn_table(rewards, trajectory_ids, turn_ids, float(gamma))
    if fast is not None:
        return fast
    traj, n_traj = dense_ids(trajectory_ids)
    turn, n_turn = _radix_codes(turn_ids)
    if n_traj * n_turn >= _bincount_limit(n):
        turn, n_turn = dense_ids(turn)
    key = traj * n_turn + turn  # sorted order of key = by trajectory, then turn
    if n_traj * n_turn < _bincount_limit(n):
        position, n_distinct = dense_ids(key)  # unique keys: the dense id is the sorted position (no sort)
    else:
        position = torch.empty(n, dtype=torch.int64, device=key.device)
        sorted_key, order = torch.sort(key)
        position.scatter_(0, order, torch.arange(n, device=key.device))
        n_distinct = n - int((sorted_key[1:] == sorted_key[:-1]).sum())
    if n_distinct < n:
        raise InvalidArgumentError(_REPEATED_TURNS)
    # trajectories occupy consecutive sorted positions; a row's offset in its chain is its rank among them
    length = torch.bincount(traj, minlength=n_traj)
    block_end = torch.cumsum(length, 0)
    max_length = int(length.max())
    if n_traj * max_length <= 4 * n + (1 << 16):
        # padded (max_length, n_traj) table, filled backwards one turn at a time: O(n_traj * max_length)
        offset = position - (block_end - length).index_select(0, traj)
        cell = offset * n_traj + traj
        # float32 (as verl-agent) or float64 as given; half precision is widened
        dtype = torch.promote_types(rewards.dtype, torch.float32)
        table = torch.zeros(max_length * n_traj, dtype=dtype, device=key.device)
        table.scatter_(0, cell, rewards.to(dtype))
        table = table.view(max_length, n_traj)
        for t in range(max_length - 2, -1, -1):
            table[t].add_(table[t + 1], alpha=float(gamma))
        return check_output("discounted returns", table.view(-1).index_select(0, cell).to(rewards.dtype))
    # very uneven lengths: segmented doubling scan over sorted positions, O(N log max_length)
    seg_end = torch.empty(n, dtype=torch.int64, device=key.device)
    seg_end.scatter_(0, position, block_end.index_select(0, traj))
    values = torch.empty(n, dtype=torch.float64, device=key.device)
    values.scatter_(0, position, rewards.to(torch.float64))
    index = torch.arange(n, device=key.device)
    span, factor = 1, float(gamma)
    while span < max_length:
        ahead = index + span
        inside = ahead < seg_end
        values = values + factor * values.index_select(0, ahead.clamp_max(n - 1)) * inside
        span, factor = span * 2, factor * factor
    return check_output("discounted returns", values.index_select(0, position).to(rewards.dtype))


_REPEATED_TURNS = (
    "turn_ids repeat within a trajectory, so the return order is ambiguous: give each row of a "
    "trajectory a distinct turn id (for per-agent returns combine trajectory and agent ids)"
)


def _returns_by_turn_table(
    rewards: torch.Tensor, trajectory_ids: torch.Tensor, turn_ids: torch.Tensor, gamma: float
) -> torch.Tensor | None:
    """:func:`discounted_returns` for the common layout, or None: small non-negative ids whose (turn, trajectory)
    table fits the padded-table budget, and turn ids consecutive within each trajectory (no gap), so a row's turn
    id is its offset in its chain plus a per-trajectory constant. Then the table is indexed by the ids themselves
    (no dense ids, no ranks); leading empty rows of a trajectory are never read, trailing ones are zero padding as
    in the ranked table. Repeated turn ids raise here as there.
    """
    n = rewards.numel()
    budget = 4 * n + (1 << 16)
    traj, n_traj = _radix_codes(trajectory_ids)
    turn, n_turn = _radix_codes(turn_ids)
    if traj is not trajectory_ids or turn is not turn_ids or n_traj * n_turn > budget:
        return None  # remapped (sparse or negative) ids, or too large a table: the ranked path
    cell = torch.add(traj, turn, alpha=n_traj)  # turn * n_traj + traj
    occupied = torch.bincount(cell, minlength=n_turn * n_traj)
    if int(occupied.max()) > 1:
        raise InvalidArgumentError(_REPEATED_TURNS)
    occupied = occupied.view(n_turn, n_traj).bool()
    # a gap within a trajectory starts a second run of occupied turns in its column
    runs = int(occupied[0].sum()) + int((occupied[1:] & ~occupied[:-1]).sum())
    if runs != int(occupied.any(0).sum()):
        return None
    # float32 (as verl-agent) or float64 as given; half precision is widened
    dtype = torch.promote_types(rewards.dtype, torch.float32)
    table = torch.zeros(n_turn * n_traj, dtype=dtype, device=cell.device)
    table.scatter_(0, cell, rewards.to(dtype))
    table = table.view(n_turn, n_traj)
    for t in range(n_turn - 2, -1, -1):
        table[t].add_(table[t + 1], alpha=gamma)
    return check_output("discounted returns", table.view(-1).index_select(0, cell).to(rewards.dtype))


def _flat_nonzero(mask: torch.Tensor) -> torch.Tensor:
    """Indices of the True entries of a 1-D mask, increasing; on CPU by numpy (torch.nonzero is ~8x slower there)."""
    if mask.device.type == "cpu":
        return torch.from_numpy(np.flatnonzero(mask.numpy()))
    return mask.nonzero().squeeze(1)


def _episode_advantages(
    episode_returns: torch.Tensor,
    episode_groups: tuple[torch.Tensor, int],
    trajectory_ids: torch.Tensor,
    scale_by_std: bool,
) -> torch.Tensor:
    """``A^E`` per row (float64): GRPO over one return per unit (episode group, trajectory) within its episode group.

    ``episode_groups`` is a ``(codes, size)`` pair over the rows (:func:`_partition_codes`); pass it inline, so its
    codes can be freed once the unit codes are built (fewer fresh pages for the step level).
    """
    group, n_groups = episode_groups
    del episode_groups
    trajectory, n_trajectories = _radix_codes(trajectory_ids)
    shift = max(n_trajectories - 1, 0).bit_length()  # trajectory codes fit in `shift` bits
    if n_groups << shift < _bincount_limit(group.numel()):
        # unit code = group * 2**shift + trajectory, so a unit's group is its code >> shift (no division)
        unit, n_units = torch.add(trajectory, group, alpha=1 << shift), n_groups << shift
        group_of_unit = None
    else:
        unit, n_units = _partition_codes(group, trajectory)
        group_of_unit = torch.zeros(n_units, dtype=torch.int64, device=unit.device).scatter_(0, unit, group)
    del group, trajectory
    # one episode return per unit, its last row's; NaN marks codes without rows (the returns are finite)
    unit_return = torch.full((n_units,), math.nan, dtype=episode_returns.dtype, device=unit.device)
    unit_return.scatter_(0, unit, episode_returns)
    spread = unit_return.index_select(0, unit)  # each row against its unit's return
    if not torch.equal(spread, episode_returns) and not torch.allclose(
        spread, episode_returns, rtol=1e-6, atol=1e-6
    ):
        bad = int((~torch.isclose(episode_returns, spread, rtol=1e-6, atol=1e-6)).nonzero()[0])
        raise InvalidArgumentError(
            f"episode_returns must be constant within a trajectory, but row {bad} has "
            f"{episode_returns[bad].item()} and another row of its trajectory has {spread[bad].item()}: repeat the "
            "episode return on every row"
        )
    del spread
    present = _flat_nonzero(unit_return == unit_return)  # not NaN: the codes with rows, in increasing order
    episode_adv = _normalize_codes(
        unit_return.index_select(0, present),
        present >> shift if group_of_unit is None else group_of_unit.index_select(0, present),
        n_groups,
        scale_by_std=scale_by_std,
        eps=1e-6,
    )
    by_unit = torch.zeros(n_units, dtype=torch.float64, device=unit.device).index_copy_(0, present, episode_adv)
    return by_unit.index_select(0, unit)


def _plus_step_level(
    episode_adv: torch.Tensor,
    step_returns: torch.Tensor,
    step_groups: tuple[torch.Tensor, int],
    omega: float,
    scale_by_std: bool,
    dtype: torch.dtype,
) -> torch.Tensor:
    """``A^E + omega * A^S`` in ``dtype``, written over ``episode_adv`` (float64 per row), checked finite."""
    step_adv = _normalize_codes(step_returns, *step_groups, scale_by_std=scale_by_std, eps=1e-6)
    if omega != 1.0:  # x * 1.0 is x: skip the pass
        step_adv.mul_(omega)
    return check_output("advantages", episode_adv.add_(step_adv).to(dtype))


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
    """GiGPO two-level advantage ``A = A^E + omega * A^S`` (arXiv 2505.10978; verl-agent).

    Episode level ``A^E``: GRPO over one return per (group, trajectory) (repeated on each of its rows), so
    long trajectories do not weigh more. Step level ``A^S``: GRPO of ``step_returns`` over the step group
    (group, anchor): rows of the same prompt group that acted in an identical env state. Singleton groups give
    0 at both levels (verl-agent gives 0 at the step level but the raw return for a prompt with a single
    trajectory), so all-distinct anchors or ``omega = 0`` reduce to episode-level GRPO. eps = 1e-6.
    verl-agent's function default is ``mode="mean_norm"`` but its scripts use ``mean_std_norm``, our default.

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
    groups = _radix_codes(group_ids)
    episode_adv = _episode_advantages(episode_returns, groups, trajectory_ids, scale_by_std)
    step_groups = _partition_codes(groups[0], anchor_ids)
    return _plus_step_level(episode_adv, step_returns, step_groups, omega, scale_by_std, episode_returns.dtype)


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
    trajectory (its mixed return, e.g. ``alpha*team + local``), standardised across the group's trajectories
    among agent k's returns only: ``A^E = (R_k - mu_{g,k}) / (sigma_{g,k} + eps)``. Inner level: step groups
    are (group, agent, anchor), i.e. the same agent acting in an identical state; ``step_returns`` are
    per-agent discounted returns over that agent's own turns (``discounted_returns(r, combine_ids(traj,
    agent), turn)``). ``A = A^E + omega * A^S``. Per-agent statistics keep each agent invariant to affine
    changes of its own rewards (Dr.MAS, arXiv 2602.08847) and never compare a coder's state with a tester's.
    With one agent this is exactly :func:`gigpo`.

    Args:
        episode_returns: ``(N,)`` the row's agent's return in its trajectory (constant per (trajectory,
        agent)).
        step_returns: ``(N,)`` the row's agent's discounted return from this turn.
        group_ids, trajectory_ids, agent_ids, anchor_ids: ``(N,)`` int64 ids.
        omega: weight of the step-level term.
        scale_by_std: divide by group stds (both levels).
    """
    episode_returns = check_values("episode_returns", episode_returns)
    step_returns = check_values("step_returns", step_returns)
    group_ids = check_ids("group_ids", group_ids)
    trajectory_ids = check_ids("trajectory_ids", trajectory_ids)
    agent_ids = check_ids("agent_ids", agent_ids)
    anchor_ids = check_ids("anchor_ids", anchor_ids)
    n = check_same_length(
        episode_returns=episode_returns,
        step_returns=step_returns,
        group_ids=group_ids,
        trajectory_ids=trajectory_ids,
        agent_ids=agent_ids,
        anchor_ids=anchor_ids,
    )
    check_positive("omega", omega, allow_zero=True)
    if n == 0:
        return episode_returns.clone()
    groups = _radix_codes(group_ids)[0]
    episode_adv = _episode_advantages(
        episode_returns, _partition_codes(groups, agent_ids), trajectory_ids, scale_by_std
    )
    # (group, anchor) first: anchors are usually built per group, so that fold needs no sort
    step_groups = _partition_codes(_partition_codes(groups, anchor_ids)[0], agent_ids)
    return _plus_step_level(episode_adv, step_returns, step_groups, omega, scale_by_std, episode_returns.dtype)
