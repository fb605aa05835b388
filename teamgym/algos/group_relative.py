"""Group-relative advantage estimators: GRPO, Dr.GRPO, RLOO, and their multi-agent groupings.

All functions take 1-D tensors, one row per agent-turn, and explicit int64 ids of any values. Singleton groups
get advantage 0; std is Bessel-corrected (as ``torch.std``, verl and TRL). Outputs keep the rewards' float
dtype.
"""

from __future__ import annotations

import torch

from teamgym.algos._checks import check_ids, check_output, check_positive, check_same_length, check_values
from teamgym.algos.grouping import (
    Column,
    _centre,
    _normalize_codes,
    _partition_codes,
    _radix_codes,
    group_ids,
    normalize_in_groups,
)
from teamgym.algos.registry import register_advantage

__all__ = ["grpo", "dr_grpo", "rloo", "at_grpo", "at_grpo_group_ids", "dr_mas", "mhgpo"]


def _normalize_tuples(
    rewards: torch.Tensor, *id_columns: torch.Tensor, scale_by_std: bool, eps: float
) -> torch.Tensor:
    """:func:`grpo` over the groups of the key tuples, for checked columns: the codes of the tuples (not necessarily
    dense; cheaper than ``combine_ids``) go straight to the statistics, with no second check or remap."""
    codes, size = _partition_codes(*id_columns)
    normalized = _normalize_codes(rewards, codes, size, scale_by_std=scale_by_std, eps=eps).to(rewards.dtype)
    return normalized if scale_by_std else check_output("the advantages", normalized)


@register_advantage("grpo")
def grpo(
    rewards: torch.Tensor, group_ids: torch.Tensor, *, scale_by_std: bool = True, eps: float = 1e-6
) -> torch.Tensor:
    """GRPO outcome advantage: reward standardised within its group.

    ``A_i = (r_i - mean_g) / (std_g + eps)`` (DeepSeekMath, arXiv 2402.03300, Sec. 4.1.2; verl
    ``compute_grpo_outcome_advantage``). Unlike verl, singleton groups give 0 rather than ``r_i``; groups
    whose rewards are all equal give 0 for any ``eps``.

    Args:
        rewards: ``(N,)`` scalar reward per sample.
        group_ids: ``(N,)`` int64; samples with equal ids (e.g. same prompt) form a group.
        scale_by_std: divide by the group std (False gives Dr.GRPO).
        eps: added to the std.

    Returns:
        ``(N,)`` advantages.
    """
    rewards = check_values("rewards", rewards)
    group_ids = check_ids("group_ids", group_ids)
    check_same_length(rewards=rewards, group_ids=group_ids)
    check_positive("eps", eps, allow_zero=True)
    return normalize_in_groups(rewards, group_ids, scale_by_std=scale_by_std, eps=eps)


@register_advantage("dr_grpo")
def dr_grpo(rewards: torch.Tensor, group_ids: torch.Tensor) -> torch.Tensor:
    """Dr.GRPO advantage ``A_i = r_i - mean_g`` (no std division; arXiv 2503.20783).

    Pair it with the ``seq-mean-token-sum-norm`` loss aggregation (constant length normaliser).
    """
    return grpo(rewards, group_ids, scale_by_std=False)


@register_advantage("rloo")
def rloo(rewards: torch.Tensor, group_ids: torch.Tensor) -> torch.Tensor:
    """REINFORCE leave-one-out advantage ``A_i = r_i - (sum_g - r_i) / (G - 1)``.

    Source: Ahmadian et al., "Back to Basics", arXiv 2402.14740. Singleton groups give 0.
    """
    rewards = check_values("rewards", rewards)
    group_ids = check_ids("group_ids", group_ids)
    check_same_length(rewards=rewards, group_ids=group_ids)
    # r_i - (S - r_i)/(G - 1) == G/(G - 1) * (r_i - S/G): one centring pass, one per-group factor
    codes, size = _radix_codes(group_ids)
    count, centred = _centre(rewards, codes, size)
    factor = torch.where(count > 1, count / (count - 1).clamp_min(1.0), 0.0)
    return check_output("rloo advantages", (centred * factor.index_select(0, codes)).to(rewards.dtype))


def at_grpo_group_ids(task_ids: Column, agent_ids: Column, turn_ids: Column) -> torch.Tensor:
    """AT-GRPO group ids: one group per (task, agent, turn) node of the sampling tree; the one definition of the key.

    The ``branch`` column (which of the K candidates) is deliberately not a key: the K candidates sampled at
    one node share one env state and form one group. Ids are built from explicit columns, never from row
    positions, so groups cannot mix tasks (the reference code divided a row index by K twice and did). Columns may
    be int ids or hashable values (task ids, agent names), as for :func:`~teamgym.algos.group_ids`: the rollout
    batch passes (episode, agent, env step) for its tree nodes, the recorder (task, agent, turn).

    Returns:
        ``(N,)`` dense int64 ids.
    """
    return group_ids(task_ids, agent_ids, turn_ids)


@register_advantage("at_grpo")
def at_grpo(
    rewards: torch.Tensor,
    task_ids: torch.Tensor,
    agent_ids: torch.Tensor,
    turn_ids: torch.Tensor,
    *,
    scale_by_std: bool = True,
) -> torch.Tensor:
    """AT-GRPO: GRPO with groups = (task, agent, turn) (Stronger-MAS, arXiv 2510.11062).

    Rewards are usually already mixed, ``r = alpha * r_team + r_local`` with alpha = 1. One agent and one turn
    give exactly :func:`grpo` over the K candidates.
    """
    rewards = check_values("rewards", rewards)
    task_ids = check_ids("task_ids", task_ids)
    agent_ids = check_ids("agent_ids", agent_ids)
    turn_ids = check_ids("turn_ids", turn_ids)
    check_same_length(task_ids=task_ids, agent_ids=agent_ids, turn_ids=turn_ids)
    check_same_length(rewards=rewards, group_ids=task_ids)
    return _normalize_tuples(rewards, task_ids, agent_ids, turn_ids, scale_by_std=scale_by_std, eps=1e-6)


@register_advantage("dr_mas")
def dr_mas(rewards: torch.Tensor, group_ids: torch.Tensor, agent_ids: torch.Tensor) -> torch.Tensor:
    """Dr.MAS: ``A = (R - mu_{g,k}) / (sigma_{g,k} + 1e-6)`` over every invocation of agent k in group g.

    Source: arXiv 2602.08847 (code langfengQ/DrMAS). Per-agent statistics make A_k invariant to any affine
    change ``a*R + b`` (a > 0) of agent k's rewards, so agents with different reward scales train at one rate.
    """
    rewards = check_values("rewards", rewards)
    group_ids = check_ids("group_ids", group_ids)
    agent_ids = check_ids("agent_ids", agent_ids)
    check_same_length(rewards=rewards, group_ids=group_ids, agent_ids=agent_ids)
    return _normalize_tuples(rewards, group_ids, agent_ids, scale_by_std=True, eps=1e-6)


@register_advantage("mhgpo")
def mhgpo(
    rewards: torch.Tensor,
    group_ids: torch.Tensor,
    agent_ids: torch.Tensor,
    *,
    scale_by_std: bool = True,
    eps: float = 1e-6,
) -> torch.Tensor:
    """MHGPO (fork-on-first): each agent's samples standardised among the rollouts of one root query.

    Source: arXiv 2506.02718 (no public code; details unverified). With fork-on-first sampling the first
    agent branches G ways from the root query and every later agent acts once per branch, so for each agent
    the G rollouts sharing the root form its group: ids are (root group, agent), and each sample's reward is
    the outcome of its branch. With independent sampling and one agent this is :func:`grpo`. Pass
    ``group_ids`` = root query id.
    """
    rewards = check_values("rewards", rewards)
    group_ids = check_ids("group_ids", group_ids)
    agent_ids = check_ids("agent_ids", agent_ids)
    check_same_length(rewards=rewards, group_ids=group_ids, agent_ids=agent_ids)
    check_positive("eps", eps, allow_zero=True)
    return _normalize_tuples(rewards, group_ids, agent_ids, scale_by_std=scale_by_std, eps=eps)
