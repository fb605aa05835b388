"""The advantage estimators the trainer runs, behind one protocol for stateless and stateful ones alike.

An :class:`Estimator` declares the rollouts that can feed it (``rollouts``, preferred first) and the columns it reads
(``columns``, names from :mod:`teamgym.train.columns`); :func:`estimate` builds those columns from a batch and calls
it. Stateless estimators are the pure functions of ``teamgym.algos`` (:class:`FunctionEstimator`: which column feeds
which parameter is written down per estimator, below); stateful ones keep state across batches and save it in every
checkpoint (:class:`TrackerEstimator`: SPO's value trackers; :class:`~teamgym.train.critic.CriticEstimator`:
Turn-PPO's learned critic and its optimizer).

Each estimator is fed the groups, anchors and rewards its paper defines (docs/algorithms.md, "In the trainer", gives
each one's equation and source).

**Tree rollout** (K candidates per (agent, step) node, the env advanced with the chosen one):

=================================  ===================================================================================
``--algo``                         parameters <- columns
=================================  ===================================================================================
``at_grpo``                        ``rewards``; ``task_ids`` <- ``episode_ids`` (one tree per episode, so a task drawn
                                   twice gives two trees); ``agent_ids``; ``turn_ids`` <- ``steps`` (an agent that
                                   acted twice in a round gets two groups): the groups are the tree nodes
``treerl``                         ``parents`` <- ``tree_parents``; ``leaf_rewards`` <- ``tree_leaf_rewards``: the
                                   sampling forest with every unchosen candidate continued to the end
                                   (``continue_unchosen``), so that every leaf is a finished episode;
                                   ``samples="nodes"``: TreeRL trains one sequence per leaf path, where a node
                                   recurs once per leaf below it; here each node is one row, which gets what
                                   its copies get together (``sqrt(|L(s)|)`` times TreeRL's ``GA + LA``)
=================================  ===================================================================================

**Trajectory rollout** (each task played ``group_size`` times from the same env seed, one candidate per node; a
*unit* is one sample as the estimator's function sees it, broadcast to its rows):

=================================  ===================================================================================
``--algo``                         parameters <- columns
=================================  ===================================================================================
``grpo``, ``dr_grpo``, ``rloo``    one unit per trajectory: ``rewards`` <- ``episode_returns`` (the team's return),
                                   ``group_ids`` <- ``task_ids``: G responses to one prompt, one outcome each
``dr_mas``                         every row: ``rewards`` <- ``episode_returns`` (each invocation carries its
                                   trajectory's reward), ``group_ids`` <- ``task_ids``, ``agent_ids``: statistics per
                                   (task, agent) over every invocation of the agent
``mhgpo``                          one unit per (trajectory, agent): ``rewards`` <- ``agent_episode_returns`` (what
                                   the agent got from the rollout), ``group_ids`` <- ``task_ids``, ``agent_ids``: the
                                   agent type's samples under one root query
``gigpo``                          ``episode_returns``, ``step_returns``, ``group_ids`` <- ``task_ids``,
                                   ``trajectory_ids`` <- ``episode_ids``, ``anchor_ids`` (the env's ``state_key``)
``team_gigpo``                     the same with ``agent_episode_returns``, ``agent_step_returns`` and ``agent_ids``
=================================  ===================================================================================

``gigpo`` and ``team_gigpo`` take ``omega`` (GiGPO's step-level weight); with ``omega = 0`` they are ``grpo`` and
``mhgpo``.

**SPO trackers** (either rollout; trajectory preferred), per batch (SPO, arXiv 2509.13232; verl recipe ``spo/``):
each row's signal ``r`` in [0, 1] is compared with the tracked baseline ``p`` of its key read **before** the batch's
update, ``A = r - p``, batch-normalised ``(A - mean)/(std + 1e-8)``; then the tracker folds in the batch, one update
per (key, episode) with the mean signal of the episode's rows under that key (an episode is one observation of each
key it visits, whatever K or the number of turns; with one row per (key, episode), e.g. SPO's one response per
prompt, this is SPO's update). Constant forgetting factor ``rho`` (SPO's constant-rho variant, 0.875).

==================  ==============================  =============================================================
name                tracker, key                    batch normalisation
==================  ==============================  =============================================================
``spo``             ``BetaValueTracker``, the task  over the whole batch (SPO's per-prompt tracker: the prompt is
                                                    the task an episode starts from; the run draws its tasks from a
                                                    finite pool, ``task_pool``, so that they come back)
``spo_per_agent``   ``PerAgentValueTracker``,       within each agent's rows (Dr.MAS-style); with one agent and one
                    (task, agent, turn)             turn per episode it equals ``spo``
==================  ==============================  =============================================================

Signals (``spo_reward``): ``"success"`` (default): the row's episode success, 0 or 1, SPO's binary outcome reward;
it is the row's own outcome only when the row lies on its episode's path, i.e. in a trajectory rollout (one candidate
per node). ``"mixed"``: the row's own reward (``alpha * team + local``, after the trainer's alpha), mapped linearly
from ``spo_reward_range = (low, high)`` onto [0, 1]; a reward outside that range is an error naming the field. Works
with tree rollouts (each candidate its own reward) and trajectory rollouts.

The ``mixed`` signal is the row's own-step reward only: what its agent received on *other* agents' steps is left out
on purpose. In a tree rollout only the chosen candidate has later steps, so crediting them would compare a chosen
candidate's continuation with its siblings' nothing, and the signal (and ``spo_reward_range``) would mean different
things in the two rollouts. So ``plan_path``'s tool, whose team term arrives on the planner's step, tracks only its
local terms under ``mixed``; to track the team's outcome use ``spo_reward="success"``.

**Learned critic** (trajectory rollout): ``turn_ppo`` (Turn-PPO, arXiv 2512.17008): GAE over each role's own turns
(``critic.gamma`` 0.99, ``critic.lam`` 0.9) from a small critic shared by the roles, trained on every batch with a
clipped value loss; ``agent_rewards``, ``episode_ids``, ``agent_ids``, ``steps`` and the state's ``prompt_ids`` and
``agent_names``. :mod:`teamgym.train.critic` says what the critic sees and why it is a separate model.

**MARFT** (trajectory rollout): ``marft`` (arXiv 2504.16129): agent-level PPO of one LoRA adapter per role on a shared
frozen base (``role_adapters``, which it needs), with the same kind of shared critic valuing the state each agent acts
in, ``V(s, a^{1:i-1})``, and GAE over the team's sequence of agent-turns in each episode (``critic.lam`` 0.95);
``team_rewards``, ``episode_ids``, ``steps``, ``prompt_ids`` and ``agent_names``. Its spec's ``defaults`` (its entry
of :data:`teamgym.train.config.ALGO_RECIPES`) carry the rest of its recipe (one PPO ratio per action, an entropy bonus
of 0.01, no dual clip): ``TrainConfig.from_dict`` (hence the CLI and config files) applies them to the fields a config
leaves unset.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import torch

from teamgym.algos import BetaValueTracker, PerAgentValueTracker, combine_ids, dense_ids, get_advantage
from teamgym.errors import InvalidArgumentError, RegistrationError, UnknownNameError, check_choice
from teamgym.rollout.batch import AgentTurnBatch
from teamgym.train.columns import COLUMNS, ROLLOUTS, Columns, batch_columns
from teamgym.train.config import ALGO_RECIPES
from teamgym.train.critic import CriticEstimator, TeamCriticEstimator

if TYPE_CHECKING:
    from teamgym.train.config import TrainConfig

__all__ = [
    "ESTIMATORS",
    "EstimatorSpec",
    "SPO_SIGNALS",
    "Estimator",
    "FunctionEstimator",
    "TrackerEstimator",
    "estimate",
    "make_estimator",
    "register_estimator",
    "rollouts_for",
    "spec_for",
    "usable_names_text",
]

#: What the SPO trackers track.
SPO_SIGNALS = ("success", "mixed")


@runtime_checkable
class Estimator(Protocol):
    """An advantage estimator as the trainer runs it (see the module docstring).

    Attributes:
        name: the ``--algo`` name.
        rollouts: the rollouts that can feed it, preferred first (``"tree"``, ``"trajectory"``).
        columns: the columns it reads (names from :data:`teamgym.train.columns.COLUMNS`).
    """

    name: str
    rollouts: tuple[str, ...]
    columns: tuple[str, ...]

    def advantages(self, columns: Columns) -> torch.Tensor:
        """``(N,)`` float32 advantages of the batch's rows; a stateful estimator reads its state, then updates it."""

    def state_dict(self) -> dict[str, Any]:
        """Everything :meth:`load_state_dict` needs to continue exactly (saved in every checkpoint)."""

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the state of :meth:`state_dict`."""


@dataclass(frozen=True)
class FunctionEstimator:
    """A pure estimator of ``teamgym.algos`` (stateless), fed the columns its table names.

    With ``units``, the function sees one sample per unit (the rows that agree on every ``units`` column: a
    trajectory, or one agent's part of it) rather than one per row, as the group-relative papers sample one
    response per trajectory; each row gets its unit's advantage. The inputs must be constant within a unit (an
    episode return is); the unit's first row is read.

    Attributes:
        name: the registered estimator (``teamgym.algos.get_advantage(name)``).
        rollouts: the rollouts that can feed it.
        inputs: each positional parameter of the function, in order -> the column fed to it.
        knobs: keyword arguments passed as they are (e.g. ``{"omega": 1.0}``).
        units: the columns whose values make a unit; empty: every row is a sample.
    """

    name: str
    rollouts: tuple[str, ...]
    inputs: Mapping[str, str]
    knobs: Mapping[str, Any] = field(default_factory=dict)
    units: tuple[str, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.inputs.values(), *self.units)))

    def advantages(self, columns: Columns) -> torch.Tensor:
        function = get_advantage(self.name)
        if not self.units:
            values = function(*[columns[column] for column in self.inputs.values()], **self.knobs)
            return values[: columns.rows].to(torch.float32)  # tree_* columns end with the virtual roots
        if columns.rows == 0:
            return torch.zeros(0)
        unit, count = dense_ids(combine_ids(*[columns[column] for column in self.units]))
        first = torch.full((count,), columns.rows, dtype=torch.long).scatter_reduce_(
            0, unit, torch.arange(columns.rows), "amin")  # each unit's first row
        values = function(*[columns[column].index_select(0, first) for column in self.inputs.values()], **self.knobs)
        return values.index_select(0, unit).to(torch.float32)

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Nothing to restore: the estimator has no state."""


class TrackerEstimator:
    """``spo`` or ``spo_per_agent``: SPO's value trackers (see the module docstring).

    Args:
        name: ``"spo"`` or ``"spo_per_agent"``.
        signal: ``"success"`` or ``"mixed"``.
        reward_range: ``(low, high)`` of the mixed rewards (``signal="mixed"``), mapped onto [0, 1].
        rho: the tracker's constant forgetting factor in (0, 1).
    """

    rollouts = ("trajectory", "tree")  # the success signal is a row's own outcome only in a trajectory rollout

    def __init__(self, name: str, *, signal: str = "success", reward_range: Sequence[float] = (0.0, 1.0),
                 rho: float = 0.875):
        check_choice("algo", name, ("spo", "spo_per_agent"))
        check_choice("spo_reward", signal, SPO_SIGNALS)
        self.name, self.signal = name, signal
        low, high = (float(v) for v in reward_range) if signal == "mixed" else (0.0, 1.0)
        tracker_cls = PerAgentValueTracker if name == "spo_per_agent" else BetaValueTracker
        self.tracker = tracker_cls(rho, reward_range=(low, high))
        keys = ("task_keys",) if name == "spo" else ("task_keys", "agent_names", "turns")
        signal_column = "success" if signal == "success" else "rewards"
        self.columns = tuple(dict.fromkeys((*keys, "agent_names", "episode_ids", signal_column)))

    def keys(self, columns: Columns) -> list[Hashable]:
        """The tracker key of every row."""
        if self.name == "spo":
            return list(columns["task_keys"])
        return PerAgentValueTracker.keys_for(columns["task_keys"], columns["agent_names"], columns["turns"].tolist())

    def signals(self, columns: Columns) -> torch.Tensor:
        """Each row's tracked signal in reward units (``(N,)`` float64): success 0/1 or the mixed reward."""
        if self.signal == "success":
            return columns["success"].to(torch.float64)
        values = columns["rewards"].to(torch.float64)
        low, high = self.tracker.reward_range
        outside = ((values < low) | (values > high)).nonzero()
        if outside.numel():
            bad = values[int(outside[0])].item()
            raise InvalidArgumentError(
                f"config field spo_reward_range=({low}, {high}) does not hold the mixed reward {bad} of agent "
                f"{columns['agent_names'][int(outside[0])]!r}: widen spo_reward_range to the env's range of alpha * "
                "team + local (its docstring lists each term's range), or use spo_reward='success'"
            )
        return values

    def advantages(self, columns: Columns) -> torch.Tensor:
        """``(N,)`` float32 advantages from the baselines before this batch, then fold the batch into the tracker."""
        if columns.rows == 0:
            return torch.zeros(0)
        keys, signals = self.keys(columns), self.signals(columns)
        if self.name == "spo":
            advantages = self.tracker.advantages(keys, signals)
        else:
            tasks, agents, turns = zip(*keys, strict=True)
            advantages = self.tracker.agent_advantages(tasks, agents, signals, turns)
        update_keys, update_values = _per_episode(keys, columns["episode_ids"].tolist(), signals.tolist())
        self.tracker.update(update_keys, update_values)
        return advantages.to(torch.float32)

    def state_dict(self) -> dict[str, Any]:
        return {"name": self.name, "signal": self.signal, "tracker": self.tracker.state_dict()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state.get("name") != self.name or state.get("signal") != self.signal:
            raise InvalidArgumentError(
                f"the checkpoint's estimator state is {state.get('name')!r} with signal {state.get('signal')!r} but "
                f"this config uses {self.name!r} with {self.signal!r}: resume with the run's own config.json"
            )
        self.tracker.load_state_dict(state["tracker"])


def _per_episode(keys: Sequence[Hashable], episodes: Sequence[int],
                 values: Sequence[float]) -> tuple[list[Hashable], list[float]]:
    """One (key, mean value) per distinct (key, episode), in order of first appearance."""
    sums: dict[tuple[Hashable, int], list[float]] = {}
    for key, episode, value in zip(keys, episodes, values, strict=True):
        entry = sums.setdefault((key, episode), [0.0, 0.0])
        entry[0] += value
        entry[1] += 1.0
    return [key for key, _ in sums], [total / count for total, count in sums.values()]


@dataclass(frozen=True)
class EstimatorSpec:
    """How the trainer builds the estimator of one ``--algo`` name.

    Attributes:
        rollouts: the rollouts that can feed it, preferred first (the built estimator's ``rollouts``).
        build: the estimator from the run's config (its knobs: ``omega``, ``spo_*``); a fresh state each call.
        recurring_tasks: it keeps state per task, so the run's training tasks must come back: the config's
            ``task_pool`` then defaults to a finite pool (:attr:`TrainConfig.task_pool_size`).
        continue_unchosen: it needs every leaf of the sampling tree to be a finished episode, so a tree rollout
            continues the unchosen candidates (``tree.continue_unchosen`` defaults to on).
        role_adapters: it trains one LoRA adapter per role on a shared base: a config for it needs
            ``role_adapters=True`` (which ``defaults`` then holds).
        defaults: ``{field path: value}``, the rest of the algorithm's recipe: ``TrainConfig.from_dict`` applies each
            to a config that leaves the field unset (a ``TrainConfig(...)`` built directly keeps the dataclass
            defaults); :func:`register_estimator` puts it in :data:`teamgym.train.config.ALGO_RECIPES`.
    """

    rollouts: tuple[str, ...]
    build: Callable[[TrainConfig], Estimator]
    recurring_tasks: bool = False
    continue_unchosen: bool = False
    role_adapters: bool = False
    defaults: Mapping[str, Any] = field(default_factory=dict)


def _function(name: str, rollout: str, knobs: Sequence[str] = (), units: Sequence[str] = (),
              **inputs: str) -> EstimatorSpec:
    """The spec of a pure estimator fed ``inputs`` (parameter=column), with the config's ``knobs`` by name, one
    sample per unit of ``units`` (all rows: none)."""
    return EstimatorSpec((rollout,), lambda config: FunctionEstimator(
        name, (rollout,), inputs, {knob: getattr(config, knob) for knob in knobs}, tuple(units)))


def _spo(name: str) -> EstimatorSpec:
    return EstimatorSpec(TrackerEstimator.rollouts, lambda config: TrackerEstimator(
        name, signal=config.spo_reward, reward_range=config.spo_reward_range, rho=config.spo_rho),
        recurring_tasks=True)


_TRAJECTORIES = {"group_ids": "task_ids", "trajectory_ids": "episode_ids"}
#: One outcome per trajectory, compared among the trajectories of its task (GRPO, Dr.GRPO, RLOO as their papers
#: sample: G complete responses to one prompt, one scalar reward each).
_OUTCOMES = {"units": ("episode_ids",), "rewards": "episode_returns", "group_ids": "task_ids"}

#: Every estimator the trainer can run, by ``--algo`` name (the module docstring says what each is fed and why).
ESTIMATORS: dict[str, EstimatorSpec] = {
    "at_grpo": _function("at_grpo", "tree", rewards="rewards", task_ids="episode_ids", agent_ids="agent_ids",
                         turn_ids="steps"),
    "grpo": _function("grpo", "trajectory", **_OUTCOMES),
    "dr_grpo": _function("dr_grpo", "trajectory", **_OUTCOMES),
    "rloo": _function("rloo", "trajectory", **_OUTCOMES),
    "dr_mas": _function("dr_mas", "trajectory", rewards="episode_returns", group_ids="task_ids",
                        agent_ids="agent_ids"),
    "mhgpo": _function("mhgpo", "trajectory", units=("episode_ids", "agent_ids"), rewards="agent_episode_returns",
                       group_ids="task_ids", agent_ids="agent_ids"),
    # every candidate is one row, so each node gets what its leaf paths carry together in TreeRL (samples="nodes")
    "treerl": EstimatorSpec(("tree",), lambda config: FunctionEstimator(
        "treerl", ("tree",), {"parents": "tree_parents", "leaf_rewards": "tree_leaf_rewards"}, {"samples": "nodes"}),
        continue_unchosen=True),
    "gigpo": _function("gigpo", "trajectory", ("omega",), episode_returns="episode_returns",
                       step_returns="step_returns", **_TRAJECTORIES, anchor_ids="anchor_ids"),
    "team_gigpo": _function("team_gigpo", "trajectory", ("omega",), episode_returns="agent_episode_returns",
                            step_returns="agent_step_returns", **_TRAJECTORIES, agent_ids="agent_ids",
                            anchor_ids="anchor_ids"),
    "spo": _spo("spo"),
    "spo_per_agent": _spo("spo_per_agent"),
    "turn_ppo": EstimatorSpec(CriticEstimator.rollouts, lambda config: CriticEstimator(config.critic,
                                                                                       seed=config.seed)),
    "marft": EstimatorSpec(
        TeamCriticEstimator.rollouts, lambda config: TeamCriticEstimator(config.critic, seed=config.seed),
        role_adapters=True, defaults=ALGO_RECIPES["marft"]),
}


def register_estimator(name: str, spec: EstimatorSpec, *, overwrite: bool = False) -> None:
    """Make ``--algo name`` run the estimator ``spec`` builds (e.g. a :class:`FunctionEstimator` over an estimator
    registered in ``teamgym.algos``, or a stateful one of your own)."""
    if name in ESTIMATORS and not overwrite:
        raise RegistrationError(f"an estimator named {name!r} is already registered: pick another name or pass "
                                "overwrite=True")
    ESTIMATORS[name] = spec
    if spec.defaults:
        ALGO_RECIPES[name] = dict(spec.defaults)
    else:
        ALGO_RECIPES.pop(name, None)


def make_estimator(config: TrainConfig) -> Estimator:
    """The estimator ``config.algo`` names, built with the config's knobs, in its initial state."""
    spec = spec_for(config.algo)
    estimator = spec.build(config)
    unfed = [(name, rollout) for rollout in estimator.rollouts for name in estimator.columns
             if rollout not in COLUMNS.get(name, ())]
    assert estimator.rollouts == spec.rollouts and not unfed, (config.algo, estimator.rollouts, unfed)
    return estimator


def spec_for(name: str) -> EstimatorSpec:
    """The spec of the estimator ``name``; an unknown name is refused with the list of usable ones."""
    if name not in ESTIMATORS:
        raise UnknownNameError(str(name), "advantage estimator (config field 'algo')", ESTIMATORS,
                               hint=f"Usable estimators (rollout): {usable_names_text()}.")
    return ESTIMATORS[name]


def rollouts_for(name: str) -> tuple[str, ...]:
    """The rollouts that can feed the estimator ``name``, preferred first (an unknown name is refused)."""
    return spec_for(name).rollouts


def usable_names_text(rollout: str | None = None) -> str:
    """``"at_grpo (tree), gigpo (trajectory), ..."``: the estimator names (for one rollout if given), for errors."""
    names = sorted(ESTIMATORS)
    if rollout is not None:
        return ", ".join(name for name in names if rollout in ESTIMATORS[name].rollouts)
    return ", ".join(f"{name} ({'|'.join(ESTIMATORS[name].rollouts)})" for name in names)


def estimate(estimator: Estimator, batch: AgentTurnBatch, *, rollout: str, gamma: float = 0.95) -> torch.Tensor:
    """Advantages ``(N,)`` float32 of ``batch``'s rows: build the columns ``estimator`` reads, then call it.

    Args:
        estimator: any :class:`Estimator`.
        batch: the rows to score (a ``rollout`` batch, without infrastructure errors).
        rollout: ``"tree"`` or ``"trajectory"``: which rollout produced ``batch``.
        gamma: discount of the trajectory step returns (GiGPO: 0.95).
    """
    check_choice("rollout", rollout, ROLLOUTS)
    if rollout not in estimator.rollouts:
        raise InvalidArgumentError(
            f"algo={estimator.name!r} needs a {' or '.join(estimator.rollouts)} rollout, not a {rollout} one: with a "
            f"{rollout} rollout use one of {usable_names_text(rollout)}; all usable estimators (rollout): "
            f"{usable_names_text()}"
        )
    return estimator.advantages(batch_columns(batch, estimator.columns, rollout=rollout, gamma=gamma))
