"""Stateful advantage estimators the trainer owns: SPO's value trackers (``spo``, ``spo_per_agent``).

They are not pure functions (each batch updates a tracker the next batch reads), so they live here rather than in the
``teamgym.algos`` registry; the trainer keeps one, saves its ``state_dict()`` in every checkpoint and restores it on
``--resume``.

Per batch (SPO, arXiv 2509.13232; verl recipe ``spo/``): each row's signal ``r`` in [0, 1] is compared with the
tracked baseline ``p`` of its key read **before** the batch's update, ``A = r - p``, batch-normalised
``(A - mean)/(std + 1e-8)``; then the tracker folds in the batch, one update per (key, episode) with the mean signal
of the episode's rows under that key (an episode is one observation of each key it visits, whatever K or the number
of turns; with one row per (key, episode), e.g. SPO's one response per prompt, this is SPO's update). Constant
forgetting factor ``rho`` (SPO's constant-rho variant, 0.875).

==================  ==============================  =============================================================
name                tracker, key                    batch normalisation
==================  ==============================  =============================================================
``spo``             ``BetaValueTracker``, the task  over the whole batch (SPO's per-prompt tracker: the prompt is
                                                    the task an episode starts from)
``spo_per_agent``   ``PerAgentValueTracker``,       within each agent's rows (Dr.MAS-style); with one agent and one
                    (task, agent, turn)             turn per episode it equals ``spo``
==================  ==============================  =============================================================

Signals (``spo_reward``): ``"success"`` (default): the row's episode success, 0 or 1, SPO's binary outcome reward;
it is the row's own outcome only when the row lies on its episode's path, i.e. in a trajectory rollout (one candidate
per node). ``"mixed"``: the row's own reward (``alpha * team + local``, after the alpha mixer), mapped linearly from
``spo_reward_range = (low, high)`` onto [0, 1]; a reward outside that range is an error naming the field. Works with
tree rollouts (each candidate its own reward) and trajectory rollouts.

The ``mixed`` signal is the row's own-step reward only: what its agent received on *other* agents' steps
(``others_rewards``, credited to the receiving agent's turns by the trajectory columns of ``team_gigpo``) is left out
on purpose. In a tree rollout only the chosen candidate has later steps, so crediting them would compare a chosen
candidate's continuation with its siblings' nothing, and the signal (and ``spo_reward_range``) would mean different
things in the two rollouts. So ``plan_path``'s tool, whose team term arrives on the planner's step, tracks only its
local terms under ``mixed``; to track the team's outcome use ``spo_reward="success"``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import torch

from teamgym.algos import BetaValueTracker, PerAgentValueTracker
from teamgym.errors import InvalidArgumentError
from teamgym.rollout.batch import AgentTurnBatch

__all__ = ["STATEFUL_ESTIMATORS", "SPO_SIGNALS", "TrackerEstimator"]

#: Trainer-side estimators with state (name -> one-line description).
STATEFUL_ESTIMATORS = {
    "spo": "SPO: one Beta tracker per task, advantage = signal - tracked success probability",
    "spo_per_agent": "per-agent SPO: one Beta tracker per (task, agent, turn), normalised per agent",
}
#: What the trackers track.
SPO_SIGNALS = ("success", "mixed")


class TrackerEstimator:
    """``spo`` or ``spo_per_agent`` (see the module docstring).

    Args:
        name: ``"spo"`` or ``"spo_per_agent"``.
        signal: ``"success"`` or ``"mixed"``.
        reward_range: ``(low, high)`` of the mixed rewards (``signal="mixed"``), mapped onto [0, 1].
        rho: the tracker's constant forgetting factor in (0, 1).
    """

    def __init__(self, name: str, *, signal: str = "success", reward_range: Sequence[float] = (0.0, 1.0),
                 rho: float = 0.875):
        if name not in STATEFUL_ESTIMATORS:
            raise InvalidArgumentError(f"stateful estimator {name!r}: expected one of {', '.join(STATEFUL_ESTIMATORS)}")
        if signal not in SPO_SIGNALS:
            raise InvalidArgumentError(f"signal={signal!r}: expected one of {', '.join(SPO_SIGNALS)}")
        self.name, self.signal = name, signal
        low, high = (float(v) for v in reward_range) if signal == "mixed" else (0.0, 1.0)
        tracker_cls = PerAgentValueTracker if name == "spo_per_agent" else BetaValueTracker
        self.tracker = tracker_cls(rho, reward_range=(low, high))

    def keys(self, batch: AgentTurnBatch) -> list[Hashable]:
        """The tracker key of every row."""
        tasks = _hashable(batch.task_id)
        if self.name == "spo":
            return tasks
        return PerAgentValueTracker.keys_for(tasks, list(batch.agent), batch.turn.tolist())

    def signals(self, batch: AgentTurnBatch) -> torch.Tensor:
        """Each row's tracked signal in reward units (``(N,)`` float64): success 0/1 or the mixed reward."""
        if self.signal == "success":
            return batch.success.to(torch.float64)
        values = batch.rewards.to(torch.float64)
        low, high = self.tracker.reward_range
        outside = ((values < low) | (values > high)).nonzero()
        if outside.numel():
            bad = values[int(outside[0])].item()
            raise InvalidArgumentError(
                f"config field spo_reward_range=({low}, {high}) does not hold the mixed reward {bad} of agent "
                f"{batch.agent[int(outside[0])]!r}: widen spo_reward_range to the env's range of alpha * team + "
                "local (its docstring lists each term's range), or use spo_reward='success'"
            )
        return values

    def advantages(self, batch: AgentTurnBatch) -> torch.Tensor:
        """``(N,)`` float32 advantages from the baselines before this batch, then fold the batch into the tracker."""
        if len(batch) == 0:
            return torch.zeros(0)
        keys, signals = self.keys(batch), self.signals(batch)
        if self.name == "spo":
            advantages = self.tracker.advantages(keys, signals)
        else:
            tasks, agents, turns = zip(*keys, strict=True)
            advantages = self.tracker.agent_advantages(tasks, agents, signals, turns)
        update_keys, update_values = _per_episode(keys, batch.episode_id, signals.tolist())
        self.tracker.update(update_keys, update_values)
        return advantages.to(torch.float32)

    def state_dict(self) -> dict[str, Any]:
        return {"name": self.name, "signal": self.signal, "tracker": self.tracker.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("name") != self.name or state.get("signal") != self.signal:
            raise InvalidArgumentError(
                f"the checkpoint's estimator state is {state.get('name')!r} with signal {state.get('signal')!r} but "
                f"this config uses {self.name!r} with {self.signal!r}: resume with the run's own config.json"
            )
        self.tracker.load_state_dict(state["tracker"])


def _hashable(values: Sequence[Any]) -> list[Hashable]:
    return [v if isinstance(v, (str, int, tuple)) else repr(v) for v in values]


def _per_episode(keys: Sequence[Hashable], episodes: Sequence[str],
                 values: Sequence[float]) -> tuple[list[Hashable], list[float]]:
    """One (key, mean value) per distinct (key, episode), in order of first appearance."""
    sums: dict[tuple[Hashable, str], list[float]] = {}
    for key, episode, value in zip(keys, episodes, values, strict=True):
        entry = sums.setdefault((key, episode), [0.0, 0.0])
        entry[0] += value
        entry[1] += 1.0
    return [key for key, _ in sums], [total / count for total, count in sums.values()]
