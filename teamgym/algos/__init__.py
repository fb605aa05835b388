"""RL algorithms for teams of LLM agents: pure torch functions over the columns of an agent-turn batch.

Advantage estimators are registered by name (``get_advantage("grpo")``, ``list_advantages()``); group ids are
built explicitly from key columns (``group_ids(task_ids, agents, turns)``). Formulas and sources:
docs/algorithms.md. This package depends on torch and numpy only.

>>> import torch
>>> from teamgym.algos import get_advantage
>>> [round(a, 4) for a in get_advantage("grpo")(torch.tensor([0.0, 1.0]), torch.tensor([7, 7])).tolist()]
[-0.7071, 0.7071]
"""

from __future__ import annotations

from teamgym.algos.gae import turn_gae, value_loss
from teamgym.algos.group_relative import at_grpo, at_grpo_group_ids, dr_grpo, dr_mas, grpo, mhgpo, rloo
from teamgym.algos.grouping import (
    GroupStats,
    combine_ids,
    dense_ids,
    factorize,
    group_ids,
    group_stats,
    normalize_in_groups,
)
from teamgym.algos.hierarchical import discounted_returns, gigpo, team_gigpo
from teamgym.algos.losses import (
    AGGREGATIONS,
    PolicyLoss,
    aggregate,
    dynamic_sampling_mask,
    entropy_bonus,
    kl_penalty,
    overlong_penalty,
    ppo_clip_loss,
)
from teamgym.algos.mixing import AlphaMixer, BanditAlpha, CorrelationAlpha, StaticAlpha
from teamgym.algos.registry import get_advantage, list_advantages, register_advantage
from teamgym.algos.trackers import BetaValueTracker, PerAgentValueTracker, adaptive_rho
from teamgym.algos.tree import TreeValues, masprm_targets, tree_values, treerl_advantages, treerl_terms
from teamgym.algos.tree_sampling import (
    AdaptiveK,
    Branch,
    TreeStep,
    adaptive_tree_step,
    advantage_energy_per_completion,
    allocate_level_budget,
    choose_greedy,
    choose_top_m,
    informative_groups_per_1000,
    tree_step,
    tree_turn,
)

__all__ = [
    "AGGREGATIONS",
    "AdaptiveK",
    "adaptive_tree_step",
    "allocate_level_budget",
    "AlphaMixer",
    "BanditAlpha",
    "BetaValueTracker",
    "Branch",
    "CorrelationAlpha",
    "GroupStats",
    "PerAgentValueTracker",
    "PolicyLoss",
    "StaticAlpha",
    "TreeStep",
    "TreeValues",
    "adaptive_rho",
    "aggregate",
    "at_grpo",
    "at_grpo_group_ids",
    "choose_greedy",
    "choose_top_m",
    "combine_ids",
    "dense_ids",
    "discounted_returns",
    "dr_grpo",
    "dr_mas",
    "dynamic_sampling_mask",
    "entropy_bonus",
    "factorize",
    "get_advantage",
    "gigpo",
    "group_ids",
    "group_stats",
    "grpo",
    "informative_groups_per_1000",
    "advantage_energy_per_completion",
    "kl_penalty",
    "list_advantages",
    "masprm_targets",
    "mhgpo",
    "normalize_in_groups",
    "overlong_penalty",
    "ppo_clip_loss",
    "register_advantage",
    "rloo",
    "team_gigpo",
    "tree_step",
    "tree_turn",
    "tree_values",
    "treerl_advantages",
    "treerl_terms",
    "turn_gae",
    "value_loss",
]
