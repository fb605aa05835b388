"""The columns advantage estimators read, each defined once, and the one function that builds them from a batch.

An estimator (:mod:`teamgym.train.estimators`) declares the columns it reads by name; :func:`batch_columns` builds
those columns, and only those, from an :class:`~teamgym.rollout.batch.AgentTurnBatch` for the rollout that produced
it. Names say what a column holds; ``*_ids`` columns are dense int64 ids (equal exactly where the keys are equal).

==========================  ===========  ===========================================================================
column                      rollouts     what it holds, ``(N,)`` unless said
==========================  ===========  ===========================================================================
``rewards``                 both         the row's mixed reward ``alpha * team + local`` on its own step
``node_ids``                both         the tree node: AT-GRPO's (task, agent, turn) key as the engine realises it
                                         (:meth:`~teamgym.rollout.batch.AgentTurnBatch.node_ids`): the K candidates
                                         sampled from one env state
``episode_ids``             both         the row's episode (a trajectory)
``task_ids``                both         the row's env task (a trajectory rollout's group: every repeat of a task)
``agent_ids``               both         the acting role
``anchor_ids``              both         (task, anchor): rows of one task whose agent acted on the same env state
                                         (the env's ``state_key``, else an identical prompt)
``steps``                   both         the env step within the episode (int64, not dense)
``turns``                   both         the round within the episode (int64, not dense)
``success``                 both         the episode's success along its chosen path (bool)
``task_keys``               both         the env's task ids as hashable values (a list): keys that recur across
                                         batches, for stateful estimators
``agent_names``             both         the acting role's name (a list)
``prompt_ids``              both         the prompt token ids the row's agent saw (a list of lists): the state a
                                         critic scores
``team_rewards``            trajectory   team level: ``r_t``, everything the row's step paid every agent (its reward
                                         plus its ``others_rewards``), float64: the reward of the team's chain of
                                         agent-turns (``marft``)
``agent_rewards``           trajectory   per agent: the row's reward credited as for ``agent_step_returns`` (what
                                         its agent received up to its next own turn), float64
``episode_returns``         trajectory   team level: the undiscounted sum of everything the episode paid
``step_returns``            trajectory   team level: ``G_t = r_t + gamma * G_{t+1}`` along the episode's rows in
                                         step order (GiGPO, gamma 0.95)
``agent_episode_returns``   trajectory   per agent: everything the row's agent received in the episode
``agent_step_returns``      trajectory   per agent: ``G_t`` along that agent's own rows, the next own turn one
                                         gamma away
``tree_parents``            tree         the sampling forest, ``(N + E,)``: each row's parent, then one virtual root
                                         per sampling tree (parent -1)
``tree_leaf_rewards``       tree         ``(N + E,)``: each node's path return (roots hold 0)
==========================  ===========  ===========================================================================

A *trajectory rollout* plays each task ``group_size`` times from the same env seed with one candidate per node, so
every row lies on its episode's path (:func:`check_trajectory_batch`); a *tree rollout* samples K candidates per
node and advances with one. Returns and the forest need one or the other; every other column exists in both.

**Which rewards.** An env may pay an agent on *another* agent's step (``plan_path``'s tool gets the team term on the
planner's step; ``discussion`` pays every agent on the round's last step); the batch keeps those payments in
``others_rewards`` (after the trainer's alpha mixer, each with the receiving agent's alpha).

* Team level (``episode_returns`` / ``step_returns`` / ``team_rewards``, ``gigpo``, ``marft``): ``r_t`` is everything
  step t paid, to every agent: the row's reward plus its ``others_rewards``. The team's return is then the sum of the
  agents' returns (the env's episode summary ``returns``, summed), whichever agent's step a term arrives on; a term
  paid to each of N agents counts N times, as each agent is paid it. This is GiGPO's ``r_t`` (ALGORITHMS.md) for the
  team seen as one decision maker whose reward is the sum of its members'. Counting only the acting agent's reward
  would drop whatever an env pays non-acting agents (``discussion``'s persuasion credit) and make the objective depend
  on which step an env books a term on.
* Per agent (``agent_episode_returns`` / ``agent_step_returns``, ``team_gigpo``): agent a's reward at its own turn
  is what it received at that step plus everything it received on other agents' steps after that turn and before
  its next own turn: credit goes to its most recent own action. What it receives before its first own turn goes to
  its first turn. An agent with no row in the episode (its rows dropped for infrastructure errors, or it never
  acted) has no turn to credit: its payments are left out of its (absent) returns, though still in the team return.

So when every agent that was paid has a row in the episode, the per-agent episode returns sum to the team return,
and (without an alpha mixer) each equals the env's own ``returns[agent]`` in the episode summary.

**Infrastructure errors** (``infra_error``: the sandbox failed scoring a candidate; its terms are 0, which says
nothing about the action). The tree never advances on such a candidate while a sibling is healthy
(:class:`~teamgym.rollout.slot.EnvSlot`), nor continues it. Before any column is built, :func:`usable_rows` drops
the failed rows, and **whole episodes** whose chosen path holds one (a trajectory rollout's failed row, or a tree
node whose candidates all failed), with their continuations: their returns, outcome and later states are partly the
infrastructure's doing, and keeping their other rows would score those rows (and, through the group statistics,
every row of their group) by it. Dropping only the affected tail would not do: the returns of the rows before it
would then be cut short. A failed continuation goes with the candidate it continues (an unfinished leaf otherwise).
A tree node's other candidates stay when one failed: their own-step rewards are intact.

**The sampling forest** (a *tree rollout*): every candidate is a node; its parent is the chosen candidate of the
closest earlier step of its episode (the one the env advanced with); step-0 candidates hang below one virtual root
per sampling tree (the initial state), appended after the rows. With ``TreeSampling.continue_unchosen`` (on for
``treerl``) every unchosen candidate that did not end its episode is played on to the end as an episode of its own,
one candidate per node (its rows' ``fork`` names the candidate); that episode's first row hangs below the candidate,
and the tree is the rollout episode with all its continuations. A node's leaf reward is its **path return**: the
team-level rewards (as for ``gigpo`` above: what the step paid every agent) of the nodes above it plus its own.
Every leaf is then the last step of a finished episode (a chosen path's end, a continuation's end, or a candidate
whose step ended the episode), its path return that episode's return, and ``V(s)`` (TreeRL: the mean leaf reward
below s) the mean return of the finished episodes sampled through s, in return units at every depth. Without
continuations (a tree estimator other than ``treerl``) an unchosen candidate is a leaf holding the return the episode
would have had had it stopped there: the greedy branch collects every later reward, which is why ``treerl`` refuses
``tree.continue_unchosen=false``. (Tree *groups*, AT-GRPO's, compare the K candidates of a node by the acting agent's
own reward, as AT-GRPO defines.)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from teamgym.algos import combine_ids, discounted_returns, factorize
from teamgym.errors import InvalidArgumentError, check_choice
from teamgym.rollout.batch import AgentTurnBatch

__all__ = [
    "COLUMNS",
    "ROLLOUTS",
    "Columns",
    "batch_columns",
    "check_trajectory_batch",
    "credited_rewards",
    "sampling_forest",
    "trajectory_returns",
    "usable_rows",
]

#: Rollout kinds, in order of preference when an estimator can use several.
ROLLOUTS = ("tree", "trajectory")
_TRAJECTORY_ONLY = ("episode_returns", "step_returns", "agent_episode_returns", "agent_step_returns",
                    "agent_rewards", "team_rewards")
_TREE_ONLY = ("tree_parents", "tree_leaf_rewards")
#: Every column name -> the rollouts that provide it (meanings in the module docstring).
COLUMNS: dict[str, tuple[str, ...]] = {
    **{name: ROLLOUTS for name in ("rewards", "node_ids", "episode_ids", "task_ids", "agent_ids", "anchor_ids",
                                   "steps", "turns", "success", "task_keys", "agent_names", "prompt_ids")},
    **{name: ("trajectory",) for name in _TRAJECTORY_ONLY},
    **{name: ("tree",) for name in _TREE_ONLY},
}


@dataclass(frozen=True)
class Columns(Mapping[str, Any]):
    """The named columns of one batch, as an estimator receives them.

    Attributes:
        rows: N, the batch's rows (``tree_*`` columns hold N rows and then the virtual roots).
        values: column name -> tensor or list.
    """

    rows: int
    values: dict[str, Any]

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


def batch_columns(batch: AgentTurnBatch, names: Sequence[str], *, rollout: str, gamma: float = 0.95) -> Columns:
    """The columns ``names`` of ``batch``, a ``rollout`` batch (see the module docstring for each column).

    Args:
        batch: the rows (already without infrastructure errors).
        names: the columns to build.
        rollout: ``"tree"`` or ``"trajectory"``: which rollout produced ``batch``.
        gamma: discount of the step returns (GiGPO: 0.95).
    """
    check_choice("rollout", rollout, ROLLOUTS)
    unknown = sorted(set(names) - set(COLUMNS))
    if unknown:
        raise InvalidArgumentError(f"unknown estimator columns {unknown}: expected names from {sorted(COLUMNS)}")
    missing = [name for name in names if rollout not in COLUMNS[name]]
    if missing:
        raise InvalidArgumentError(f"the columns {missing} need a {' or '.join(COLUMNS[missing[0]])} rollout, not a "
                                   f"{rollout} one")
    if rollout == "trajectory":
        check_trajectory_batch(batch)
    values: dict[str, Any] = {}
    for name in names:
        if name in values:
            continue
        if name in ("agent_rewards", "team_rewards"):
            values[name] = credited_rewards(batch, per_agent=name == "agent_rewards")
        elif name in _TRAJECTORY_ONLY:
            per_agent = name.startswith("agent_")
            prefix = "agent_" if per_agent else ""
            episode, step = trajectory_returns(batch, gamma=gamma, per_agent=per_agent)
            values[f"{prefix}episode_returns"], values[f"{prefix}step_returns"] = episode, step
        elif name in _TREE_ONLY:
            values["tree_parents"], values["tree_leaf_rewards"] = sampling_forest(batch)
        else:
            values[name] = _ROW_COLUMNS[name](batch)
    return Columns(len(batch), {name: values[name] for name in names})


def _hashable(values: Sequence[Any]) -> list[Hashable]:
    return [v if isinstance(v, (str, int, tuple)) else repr(v) for v in values]


_ROW_COLUMNS = {
    "rewards": lambda batch: batch.rewards,
    "node_ids": lambda batch: batch.node_ids(),
    "episode_ids": lambda batch: factorize(batch.episode_id)[0],
    "task_ids": lambda batch: batch.group_ids(("task_id",)),
    "agent_ids": lambda batch: factorize(batch.agent)[0],
    "anchor_ids": lambda batch: batch.group_ids(("task_id", "anchor")),
    "steps": lambda batch: batch.step.clone(),
    "turns": lambda batch: batch.turn.clone(),
    "success": lambda batch: batch.success,
    "task_keys": lambda batch: _hashable(batch.task_id),
    "agent_names": lambda batch: list(batch.agent),
    "prompt_ids": lambda batch: list(batch.prompt_ids),
}


def usable_rows(batch: AgentTurnBatch) -> torch.Tensor:
    """``(N,)`` bool: the rows training may use, given the infrastructure errors (the rule in the module docstring).

    A row whose scoring failed (``infra_error``) is dropped; so is every row of an episode whose chosen path holds
    such a row (the env advanced on it: a trajectory rollout's only candidate, or a tree node whose candidates all
    failed), since that episode's returns and outcome are partly the infrastructure's doing; and with it the
    continuations forked from it. A broken continuation also takes the candidate it continues with it (left alone,
    that candidate would be an unfinished leaf of the sampling forest).
    """
    failed = [bool(error) for error in batch.infra_error]
    origins = _fork_origins(batch)
    broken = {episode for episode, bad, took in zip(batch.episode_id, failed, batch.chosen.tolist(), strict=True)
              if bad and took}
    for episode in sorted(origins, key=lambda e: _depth(e, origins)):  # forks after the episodes they fork from
        if origins[episode]["episode_id"] in broken:
            broken.add(episode)
    cut = {_fork_key(origins[episode]) for episode in broken if episode in origins}
    keys = zip(batch.episode_id, batch.step.tolist(), batch.branch.tolist(), strict=True)
    return torch.tensor([not bad and key[0] not in broken and key not in cut for key, bad in zip(keys, failed,
                                                                                                 strict=True)],
                        dtype=torch.bool)


def _fork_origins(batch: AgentTurnBatch) -> dict[str, dict[str, Any]]:
    """Episode -> the ``fork`` it continues (``{"episode_id", "step", "branch"}``), for continued candidates."""
    origins: dict[str, dict[str, Any]] = {}
    for episode, fork in zip(batch.episode_id, batch.fork, strict=True):
        if fork:
            origins.setdefault(episode, fork)
    return origins


def _fork_key(fork: Mapping[str, Any]) -> tuple[str, int, int]:
    return str(fork["episode_id"]), int(fork["step"]), int(fork["branch"])


def _depth(episode: str, origins: Mapping[str, Mapping[str, Any]]) -> int:
    """How many forks lead from a rollout episode to ``episode`` (0 for the episode itself)."""
    depth = 0
    while episode in origins:
        episode, depth = str(origins[episode]["episode_id"]), depth + 1
        if depth > len(origins):
            raise InvalidArgumentError(f"the fork links of episode {episode!r} form a cycle: each continued "
                                       "candidate's episode must fork from an earlier episode")
    return depth


def _tree_of(episode: str, origins: Mapping[str, Mapping[str, Any]]) -> str:
    """The rollout episode whose sampling tree ``episode`` belongs to (itself, or the one its forks lead to)."""
    for _ in range(_depth(episode, origins)):
        episode = str(origins[episode]["episode_id"])
    return episode


def check_trajectory_batch(batch: AgentTurnBatch) -> None:
    """Raise unless every (episode, step) has exactly one row (a trajectory rollout: one candidate per node)."""
    if len(batch) == 0:
        return
    nodes = batch.node_ids()
    if int(nodes.max()) + 1 != len(batch):
        counts = torch.bincount(nodes)
        row = int((counts > 1).nonzero()[0])
        raise InvalidArgumentError(
            f"tree node {row} of the batch holds {int(counts[row])} candidates: trajectory columns (GiGPO) need one "
            "candidate per (episode, step); roll out with TreeSampling(k=1), as the trainer's trajectory rollout does"
        )


def trajectory_returns(batch: AgentTurnBatch, *, gamma: float, per_agent: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``(episode returns, discounted step returns)`` of a trajectory batch, each ``(N,)`` in the rewards' dtype.

    Team level (``per_agent=False``): over the episode's rows; per agent: over the row's agent's own rows. Rewards
    are credited as the module docstring says.
    """
    rewards = batch.rewards
    if len(batch) == 0:
        return rewards.clone(), rewards.clone()
    trajectory_ids = factorize(batch.episode_id)[0]
    chain = combine_ids(trajectory_ids, factorize(batch.agent)[0]) if per_agent else trajectory_ids
    credited = credited_rewards(batch, per_agent=per_agent)  # (N,) float64
    step_returns = discounted_returns(credited.to(rewards.dtype), chain, batch.step, gamma=gamma)
    totals = torch.zeros(int(chain.max()) + 1, dtype=torch.float64).index_add_(0, chain, credited)
    return totals.index_select(0, chain).to(rewards.dtype), step_returns


def credited_rewards(batch: AgentTurnBatch, *, per_agent: bool) -> torch.Tensor:
    """Each row's reward ``r_t`` for the trajectory returns, ``(N,)`` float64 (rules in the module docstring).

    ``per_agent=False``: the row's reward plus its ``others_rewards``. ``per_agent=True``: the row's reward plus
    what its agent received on other agents' steps after this row and before its next own row (before its first
    own row: credited to that first row). Rows may come in any order; steps must be distinct within an episode.
    """
    rewards = batch.rewards.tolist()
    if not per_agent:
        return torch.tensor([r + sum(others.values()) for r, others in zip(rewards, batch.others_rewards, strict=True)],
                            dtype=torch.float64)
    credit = list(rewards)
    episodes, steps = factorize(batch.episode_id)[0].tolist(), batch.step.tolist()
    order = sorted(range(len(batch)), key=lambda i: (episodes[i], steps[i]))
    last_own: dict[str, int] = {}  # agent -> its latest row so far in the current episode
    early: dict[str, float] = {}  # agent -> received before its first own row
    for position, i in enumerate(order):
        if position == 0 or episodes[i] != episodes[order[position - 1]]:
            last_own, early = {}, {}
        agent = batch.agent[i]
        if agent not in last_own:
            credit[i] += early.pop(agent, 0.0)
        last_own[agent] = i
        for other, reward in batch.others_rewards[i].items():
            if other in last_own:
                credit[last_own[other]] += reward
            else:
                early[other] = early.get(other, 0.0) + reward
    return torch.tensor(credit, dtype=torch.float64)


def sampling_forest(batch: AgentTurnBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """``(parents, leaf_rewards)``, each ``(N + E,)``: the N rows, then one virtual root per sampling tree (E trees:
    a rollout episode with its continued candidates' episodes).

    See the module docstring for the parent and leaf-reward rules. A row whose earlier chosen candidates were all
    dropped hangs below its tree's root; ``leaf_rewards`` holds every node's path return (the estimators read it at
    leaves only; roots hold 0).
    """
    n = len(batch)
    origins = _fork_origins(batch)
    episodes = sorted(dict.fromkeys(batch.episode_id), key=lambda e: _depth(e, origins))  # stable: forks last
    trees = list(dict.fromkeys(_tree_of(episode, origins) for episode in batch.episode_id))
    root_of = {tree: n + t for t, tree in enumerate(trees)}
    rows_of: dict[str, list[int]] = {episode: [] for episode in episodes}
    for i, episode in enumerate(batch.episode_id):
        rows_of[episode].append(i)
    steps, branches = batch.step.tolist(), batch.branch.tolist()
    chosen = batch.chosen.tolist()
    row_at = {(batch.episode_id[i], steps[i], branches[i]): i for i in range(n)}
    rewards = credited_rewards(batch, per_agent=False).tolist() if n else []
    parents = [-1] * (n + len(trees))
    path_return = [0.0] * (n + len(trees))
    for episode in episodes:
        parent, above = root_of[_tree_of(episode, origins)], 0.0
        forked_at = row_at.get(_fork_key(origins[episode])) if episode in origins else None
        if forked_at is not None:  # a continued candidate's episode starts in that candidate's state
            parent, above = forked_at, path_return[forked_at]
        by_step: dict[int, list[int]] = {}
        for i in rows_of[episode]:
            by_step.setdefault(steps[i], []).append(i)
        for step in sorted(by_step):
            advanced = None
            for i in by_step[step]:
                parents[i] = parent
                path_return[i] = above + rewards[i]
                if chosen[i]:
                    advanced = i
            if advanced is not None:
                parent, above = advanced, path_return[advanced]
    return (torch.tensor(parents, dtype=torch.long),
            torch.tensor(path_return, dtype=batch.rewards.dtype if n else torch.float32))
