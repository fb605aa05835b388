"""Call any registered advantage estimator on an :class:`AgentTurnBatch`, feeding it the columns it names.

Estimators in ``teamgym.algos`` share one family of signatures (rewards or returns, explicit id columns, keyword
knobs) but differ in which columns they take. Each rollout provides a set of columns; an estimator is usable with a
rollout when that rollout provides every parameter it requires.

**Tree rollout** (K candidates per (agent, step) node, the env advanced with the chosen one):

================  ===========================================================================================
parameter         column
================  ===========================================================================================
``rewards``       the mixed reward ``alpha * team + local`` of each candidate
``group_ids``     the tree node (episode, agent, turn, step): the K candidates sampled from one state
``task_ids``      the episode (one task per episode, so groups built on it never mix tasks)
``agent_ids``     the acting role
``turn_ids``      the env step within the episode (refines the turn: an agent that acted twice in a turn
                  still gets two groups)
``parents``       the sampling forest (:func:`teamgym.train.columns.sampling_forest`): rows, then one virtual
``leaf_rewards``  root per episode; leaf reward = path return. The estimator's output is cut back to the rows
================  ===========================================================================================

**Trajectory rollout** (each task played ``group_size`` times from the same env seed, one candidate per node):
``episode_returns``, ``step_returns``, ``group_ids`` (the task), ``trajectory_ids``, ``agent_ids``, ``anchor_ids``
(:func:`teamgym.train.columns.trajectory_columns`; returns are per agent when the estimator also takes
``agent_ids``, as ``team_gigpo``, else per trajectory, as ``gigpo``).

The knobs ``gamma`` (discount of the step returns) and ``omega`` (weight of GiGPO's step level) are passed to
estimators that take them. The stateful SPO trackers (``spo``, ``spo_per_agent``) are listed here as usable with
both rollouts but run in :mod:`teamgym.train.stateful`.
"""

from __future__ import annotations

import inspect

import torch

from teamgym.algos import factorize, get_advantage, list_advantages
from teamgym.errors import InvalidArgumentError
from teamgym.rollout.batch import AgentTurnBatch
from teamgym.train.columns import sampling_forest, trajectory_columns
from teamgym.train.stateful import STATEFUL_ESTIMATORS

__all__ = [
    "compute_advantages",
    "rollouts_for",
    "usable_estimators",
    "usable_names_text",
    "ROLLOUTS",
    "TREE_ESTIMATORS",
    "TRAJECTORY_ESTIMATORS",
]

#: Rollout kinds, in order of preference when an estimator can use several.
ROLLOUTS = ("tree", "trajectory")
#: Built-in estimators whose inputs a tree rollout provides (TreeRL reads the sampling forest).
TREE_ESTIMATORS = ("at_grpo", "grpo", "dr_grpo", "rloo", "dr_mas", "mhgpo", "treerl")
#: Built-in estimators that need whole trajectories of the same task (a trajectory rollout).
TRAJECTORY_ESTIMATORS = ("gigpo", "team_gigpo")

_COLUMNS = {
    "tree": frozenset({"rewards", "group_ids", "task_ids", "agent_ids", "turn_ids", "parents", "leaf_rewards"}),
    "trajectory": frozenset({"episode_returns", "step_returns", "group_ids", "trajectory_ids", "agent_ids",
                             "anchor_ids"}),
}


def _required(name: str) -> list[str]:
    estimator = get_advantage(name)
    return [p.name for p in inspect.signature(estimator).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]


def rollouts_for(name: str) -> tuple[str, ...]:
    """The rollouts that can feed estimator ``name``, preferred first (empty if none can).

    SPO trackers prefer the trajectory rollout: their default signal, episode success, is a row's own outcome only
    there.
    """
    if name in STATEFUL_ESTIMATORS:
        return ("trajectory", "tree")
    required = set(_required(name))
    return tuple(r for r in ROLLOUTS if required <= _COLUMNS[r])


def usable_estimators() -> dict[str, tuple[str, ...]]:
    """Every estimator name the trainer can run (registered ones it can feed, and the stateful ones) -> rollouts."""
    names = {name: rollouts_for(name) for name in list_advantages()}
    names.update({name: rollouts_for(name) for name in STATEFUL_ESTIMATORS})
    return {name: rollouts for name, rollouts in sorted(names.items()) if rollouts}


def usable_names_text(rollout: str | None = None) -> str:
    """``"at_grpo (tree), gigpo (trajectory), ..."``: the usable names (for one rollout if given), for errors."""
    usable = usable_estimators()
    if rollout is not None:
        return ", ".join(name for name, rollouts in usable.items() if rollout in rollouts)
    return ", ".join(f"{name} ({'|'.join(rollouts)})" for name, rollouts in usable.items())


def _tree_columns(batch: AgentTurnBatch, required: list[str]) -> dict[str, torch.Tensor]:
    columns = {
        "rewards": batch.rewards,
        "group_ids": batch.group_ids(),
        "task_ids": factorize(batch.episode_id)[0],
        "agent_ids": factorize(batch.agent)[0],
        "turn_ids": batch.step.clone(),
    }
    if "parents" in required or "leaf_rewards" in required:
        columns["parents"], columns["leaf_rewards"] = sampling_forest(batch)
    return columns


def compute_advantages(name: str, batch: AgentTurnBatch, *, rollout: str = "tree", gamma: float = 0.95,
                       omega: float = 1.0) -> torch.Tensor:
    """Advantages ``(N,)`` from the estimator registered as ``name`` on a ``rollout`` batch.

    Args:
        name: a registered estimator (``teamgym.algos.list_advantages()``) the rollout can feed.
        batch: the rows to score.
        rollout: ``"tree"`` or ``"trajectory"``: which rollout produced ``batch`` (see the module docstring).
        gamma: discount of the trajectory step returns (GiGPO: 0.95).
        omega: passed to estimators with an ``omega`` knob (GiGPO's step-level weight, 1.0).
    """
    if name in STATEFUL_ESTIMATORS:
        raise InvalidArgumentError(
            f"algo={name!r} keeps a tracker across batches: use teamgym.train.stateful.TrackerEstimator (the Trainer "
            "does), not compute_advantages"
        )
    if rollout not in ROLLOUTS:
        raise InvalidArgumentError(f"rollout={rollout!r}: expected one of {', '.join(ROLLOUTS)}")
    estimator = get_advantage(name)
    required = _required(name)
    missing = [p for p in required if p not in _COLUMNS[rollout]]
    if missing:
        raise InvalidArgumentError(
            f"algo={name!r} needs the columns {missing}, which a {rollout} rollout does not produce: with a {rollout} "
            f"rollout use one of {usable_names_text(rollout)}; all usable estimators (rollout): {usable_names_text()}"
        )
    if rollout == "tree":
        columns = _tree_columns(batch, required)
    else:
        columns = trajectory_columns(batch, gamma=gamma, per_agent="agent_ids" in required)
    knobs = inspect.signature(estimator).parameters
    kwargs = {"omega": omega} if "omega" in knobs and knobs["omega"].kind is inspect.Parameter.KEYWORD_ONLY else {}
    return estimator(*[columns[p] for p in required], **kwargs)[: len(batch)].to(torch.float32)
