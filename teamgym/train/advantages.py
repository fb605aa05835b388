"""Call any registered advantage estimator on an :class:`AgentTurnBatch`, feeding it the columns it names.

Estimators in ``teamgym.algos`` share one family of signatures (rewards, explicit id columns, keyword knobs) but
differ in which id columns they take. This adapter maps parameter names to batch columns:

================  ===========================================================================================
parameter         column
================  ===========================================================================================
``rewards``       the mixed reward ``alpha * team + local`` of each candidate
``group_ids``     the tree node (episode, agent, turn, step): the K candidates sampled from one state
``task_ids``      the episode (one task per episode, so groups built on it never mix tasks)
``agent_ids``     the acting role
``turn_ids``      the env step within the episode (refines the turn: an agent that acted twice in a turn
                  still gets two groups)
================  ===========================================================================================

Estimators that need trajectory columns (GiGPO's episode and step returns) have no meaning on a tree rollout,
whose branches are siblings rather than whole trajectories; asking for one raises an error naming the usable ones.
"""

from __future__ import annotations

import inspect

import torch

from teamgym.algos import factorize, get_advantage
from teamgym.errors import InvalidArgumentError
from teamgym.rollout.batch import AgentTurnBatch

__all__ = ["compute_advantages", "TREE_ESTIMATORS"]

#: Estimators whose inputs a tree rollout provides.
TREE_ESTIMATORS = ("at_grpo", "grpo", "dr_grpo", "rloo", "dr_mas", "mhgpo")


def _columns(batch: AgentTurnBatch) -> dict[str, torch.Tensor]:
    return {
        "rewards": batch.rewards,
        "group_ids": batch.group_ids(),
        "task_ids": factorize(batch.episode_id)[0],
        "agent_ids": factorize(batch.agent)[0],
        "turn_ids": batch.step.clone(),
    }


def compute_advantages(name: str, batch: AgentTurnBatch) -> torch.Tensor:
    """Advantages ``(N,)`` from the estimator registered as ``name`` (default knobs)."""
    estimator = get_advantage(name)
    required = [p.name for p in inspect.signature(estimator).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    columns = _columns(batch)
    missing = [p for p in required if p not in columns]
    if missing:
        raise InvalidArgumentError(
            f"algo={name!r} needs the columns {missing}, which a tree rollout does not produce: use one of "
            f"{', '.join(TREE_ESTIMATORS)}"
        )
    return estimator(*[columns[p] for p in required]).to(torch.float32)
