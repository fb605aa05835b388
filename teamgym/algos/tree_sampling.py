"""Tree-sampling decisions for AT-GRPO-style rollouts, as pure functions over an abstract env interface.

The rollout engine owns the env and the policy; this module owns only the decisions and their order. It sees
the env through three callables the engine passes in:

* ``restore(snapshot)``: put the env in the state ``snapshot`` was taken from;
* ``act(candidate) -> float``: step the env with one candidate action from its *current* state, return the
  reward;
* ``take_snapshot() -> snapshot``: capture the current state (``env.snapshot()``).

Contract of :func:`tree_step`: every candidate is scored from a fresh ``restore(state)`` (never from a
sibling's result), and on return the env is in the chosen child's state, which is also returned so every
branch continues from it. :func:`tree_turn` runs the agents of one turn in order, each proposing from the
state the previous agent's chosen action produced. Randomness comes only from a generator passed in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from teamgym.algos._checks import check_ids, check_same_length, check_values
from teamgym.algos.grouping import group_stats
from teamgym.errors import InvalidArgumentError

__all__ = [
    "Branch",
    "TreeStep",
    "choose_greedy",
    "choose_top_m",
    "tree_step",
    "tree_turn",
    "adaptive_tree_step",
    "AdaptiveK",
    "allocate_level_budget",
    "informative_groups_per_1000",
    "advantage_energy_per_completion",
]


@dataclass(frozen=True)
class Branch:
    """One scored candidate: the action, its reward, and the env state right after it."""

    candidate: Any
    reward: float
    snapshot: Any


@dataclass(frozen=True)
class TreeStep:
    """One expanded node: its branches (candidate order), the chosen index, the state to continue from."""

    branches: list[Branch]
    chosen: int
    snapshot: Any

    @property
    def rewards(self) -> list[float]:
        return [b.reward for b in self.branches]


def choose_greedy(rewards: Sequence[float], generator: np.random.Generator | None = None) -> int:
    """AT-GRPO's rule: advance the argmax (the first one on ties). ``generator`` is ignored."""
    if len(rewards) == 0:
        raise InvalidArgumentError("cannot choose among zero candidates: sample at least one")
    return int(np.argmax(np.asarray(rewards, dtype=np.float64)))


def choose_top_m(
    rewards: Sequence[float], generator: np.random.Generator, *, m: int = 2, temperature: float = 1.0
) -> int:
    """Stochastic top-m advance (gap 1): sample among the m best by ``softmax(r / temperature)``.

    Keeps exploring second-best continuations instead of always the argmax; ``temperature = 0`` or ``m = 1``
    is greedy. Ties in the top-m cut are broken by candidate order.
    """
    if len(rewards) == 0:
        raise InvalidArgumentError("cannot choose among zero candidates: sample at least one")
    if m < 1 or temperature < 0:
        raise InvalidArgumentError(f"need m >= 1 and temperature >= 0, got m={m}, temperature={temperature}")
    r = np.asarray(rewards, dtype=np.float64)
    top = np.argsort(-r, kind="stable")[: min(m, len(r))]
    if temperature == 0 or len(top) == 1:
        return int(top[0])
    logits = (r[top] - r[top].max()) / temperature
    p = np.exp(logits) / np.exp(logits).sum()
    return int(top[generator.choice(len(top), p=p)])


def tree_step(
    state: Any,
    candidates: Sequence[Any],
    *,
    restore: Callable[[Any], None],
    act: Callable[[Any], float],
    take_snapshot: Callable[[], Any],
    choose: Callable[[Sequence[float]], int] = choose_greedy,
) -> TreeStep:
    """Expand one (agent, turn) node: score every candidate from ``state`` and advance to the chosen one.

    For each candidate: ``restore(state)``, ``reward = act(candidate)``, ``child = take_snapshot()``. Then
    ``chosen = choose(rewards)`` and ``restore(child[chosen])``: the env, and every branch that continues, is
    in the chosen child's state (AT-GRPO's "copy the best state to all branches", without a stale env). The
    K rewards form one AT-GRPO group (task, agent, turn).

    Example (stochastic advance)::

        rng = numpy.random.default_rng(seed)
        choose = functools.partial(choose_top_m, generator=rng, m=2, temperature=0.5)
        step = tree_step(env.snapshot(), candidates, restore=env.restore, act=score,
                         take_snapshot=env.snapshot, choose=choose)
    """
    if len(candidates) == 0:
        raise InvalidArgumentError("tree_step needs at least one candidate: sample K >= 1 actions")
    branches = _expand(state, candidates, restore, act, take_snapshot)
    return _advance(branches, restore, choose)


def _expand(state, candidates, restore, act, take_snapshot) -> list[Branch]:
    branches = []
    for candidate in candidates:
        restore(state)
        reward = float(act(candidate))
        branches.append(Branch(candidate, reward, take_snapshot()))
    return branches


def _advance(branches: list[Branch], restore, choose) -> TreeStep:
    chosen = int(choose([b.reward for b in branches]))
    if not 0 <= chosen < len(branches):
        raise InvalidArgumentError(f"choose returned {chosen}, not an index in [0, {len(branches)})")
    restore(branches[chosen].snapshot)
    return TreeStep(branches, chosen, branches[chosen].snapshot)


def adaptive_tree_step(
    state: Any,
    propose: Callable[[int], Sequence[Any]],
    budget: AdaptiveK,
    *,
    restore: Callable[[Any], None],
    act: Callable[[Any], float],
    take_snapshot: Callable[[], Any],
    choose: Callable[[Sequence[float]], int] = choose_greedy,
) -> TreeStep:
    """:func:`tree_step` with an adaptive number of candidates decided by ``budget`` (:class:`AdaptiveK`).

    ``propose(n)`` returns n new candidates for this node (called with the env restored to ``state``): first
    ``budget.initial()``, then ``budget.extra(rewards)`` more if the first rewards disagree. Every candidate
    is scored from ``state``; the choice is over all of them; the env is left in the chosen child's state.
    """
    restore(state)
    branches = _expand(state, propose(budget.initial()), restore, act, take_snapshot)
    more = budget.extra([b.reward for b in branches])
    if more:
        restore(state)
        branches += _expand(state, propose(more), restore, act, take_snapshot)
    return _advance(branches, restore, choose)


def tree_turn(
    state: Any,
    agents: Sequence[Hashable],
    *,
    propose: Callable[[Hashable], Sequence[Any]],
    restore: Callable[[Any], None],
    act: Callable[[Any], float],
    take_snapshot: Callable[[], Any],
    choose: Callable[[Sequence[float]], int] = choose_greedy,
) -> tuple[list[TreeStep], Any]:
    """Run one turn: each agent in order expands a node from the state the previous agent's choice produced.

    ``propose(agent)`` is called with the env restored to the state that agent acts in (so it may read the
    observation); agent i+1's node starts from agent i's chosen child. Returns the steps and the final state.
    """
    steps = []
    for agent in agents:
        restore(state)
        step = tree_step(
            state, propose(agent), restore=restore, act=act, take_snapshot=take_snapshot, choose=choose
        )
        steps.append(step)
        state = step.snapshot
    return steps, state


@dataclass
class AdaptiveK:
    """Adaptive K (gap 1): stop after ``k0`` samples that agree; spend the saved budget where they disagree.

    Average spend stays at most ``k`` per node: every node that stops at ``k0`` banks ``k - k0`` samples; a
    node whose first ``k0`` rewards differ may draw up to ``k_max`` total, taking the excess over ``k`` from
    the bank. Usage per node: ``n = ak.initial()``; sample n; ``more = ak.extra(rewards)``; sample ``more``.
    """

    k: int = 4
    k0: int = 2
    k_max: int = 8
    tolerance: float = 0.0
    bank: int = 0
    spent: int = field(default=0)
    nodes: int = field(default=0)

    def __post_init__(self) -> None:
        if not 1 <= self.k0 <= self.k <= self.k_max:
            raise InvalidArgumentError(
                f"adaptive K needs 1 <= k0 <= k <= k_max, got k0={self.k0}, k={self.k}, k_max={self.k_max}: "
                "lower k0 or raise k_max"
            )

    def initial(self) -> int:
        """How many candidates to sample first at a new node (``k0``)."""
        return self.k0

    def extra(self, rewards: Sequence[float]) -> int:
        """Further candidates to sample after seeing the first ``k0`` rewards (0 when they agree)."""
        if len(rewards) != self.k0:
            raise InvalidArgumentError(f"extra() expects the first k0={self.k0} rewards, got {len(rewards)}")
        self.nodes += 1
        r = np.asarray(rewards, dtype=np.float64)
        if r.max() - r.min() <= self.tolerance:
            self.bank += self.k - self.k0
            self.spent += self.k0
            return 0
        borrowed = min(self.bank, self.k_max - self.k)
        self.bank -= borrowed
        self.spent += self.k + borrowed
        return self.k - self.k0 + borrowed

    def state_dict(self) -> dict:
        return {
            "k": self.k,
            "k0": self.k0,
            "k_max": self.k_max,
            "tolerance": self.tolerance,
            "bank": self.bank,
            "spent": self.spent,
            "nodes": self.nodes,
        }

    def load_state_dict(self, state: dict) -> None:
        for name in ("k", "k0", "k_max", "tolerance", "bank", "spent", "nodes"):
            setattr(self, name, state[name])


def allocate_level_budget(first_rewards: Sequence[Sequence[float]], *, k: int, k0: int, k_max: int,
                          tolerance: float = 0.0) -> list[int]:
    """Budget-aware tree sampling (gap 1): each node's further candidates after its first ``k0``, for one tree level.

    AT-GRPO spends ``k`` candidates at every node. Here every node of a level (all the episodes that reach it
    together) first gets ``k0``; the level's remaining ``(k - k0) * nodes`` candidates are then dealt out one at a
    time, round robin, first to the nodes whose first rewards disagree (spread ``max - min`` above ``tolerance``: they
    have a group with a gradient, and more candidates sharpen it), widest spread first, up to ``k_max`` each;
    whatever is left goes round robin to the nodes whose first rewards agree, widest spread first too, up to ``k``
    each (a node that agreed on ``k0`` may still disagree on ``k``). So the level spends exactly AT-GRPO's ``k`` per
    node, as no other strategy here does: :class:`AdaptiveK` banks what agreeing nodes save and may leave it
    unspent. Equal completions per step, by construction, so any difference against greedy ``k`` is the
    allocation's.

    Args:
        first_rewards: per node, the rewards of its first ``k0`` candidates (non-finite ones are ignored in the spread).
        k: the budget per node (AT-GRPO's K).
        k0: candidates each node got first.
        k_max: the most candidates one node may get.
        tolerance: spreads at most this are agreement.

    Returns:
        Per node, how many more candidates to sample; they sum to ``(k - k0) * len(first_rewards)``.
    """
    if not 1 <= k0 <= k <= k_max:
        raise InvalidArgumentError(f"budget-aware tree sampling needs 1 <= k0 <= k <= k_max, got k0={k0}, k={k}, "
                                   f"k_max={k_max}: lower tree.k0 or raise tree.k_max")
    spreads = []
    for node, rewards in enumerate(first_rewards):
        if len(rewards) != k0:
            raise InvalidArgumentError(f"node {node} has {len(rewards)} first rewards, expected k0={k0}")
        finite = [float(r) for r in rewards if math.isfinite(r)]
        spreads.append(max(finite) - min(finite) if len(finite) >= 2 else 0.0)
    more = [0] * len(spreads)
    budget = (k - k0) * len(spreads)
    by_spread = sorted(range(len(spreads)), key=lambda n: (-spreads[n], n))
    disagree = [n for n in by_spread if spreads[n] > tolerance]
    agree = [n for n in by_spread if spreads[n] <= tolerance]
    for nodes, cap in ((disagree, k_max - k0), (agree, k - k0)):
        while budget > 0 and nodes:
            for n in nodes:
                if budget == 0:
                    break
                more[n] += 1
                budget -= 1
            nodes = [n for n in nodes if more[n] < cap]
    return more


def informative_groups_per_1000(rewards: torch.Tensor, group_ids: torch.Tensor) -> float:
    """Groups whose reward std is > 0, per 1,000 completions (rows): the gap-1 efficiency metric."""
    rewards = check_values("rewards", rewards)
    group_ids = check_ids("group_ids", group_ids)
    n = check_same_length(rewards=rewards, group_ids=group_ids)
    if n == 0:
        return 0.0
    return float((group_stats(rewards, group_ids).std > 0).sum()) * 1000.0 / n


def advantage_energy_per_completion(rewards: torch.Tensor, group_ids: torch.Tensor) -> float:
    """The learning signal per completion that does not favour small groups: ``sum_g sum_{i in g} (r_i - mean_g)^2 /
    N``, the squared norm of the group-mean-baseline advantages (before any std normalisation) per row.

    :func:`informative_groups_per_1000` counts a group of two that disagrees as much as a group of eight, so a tree
    of K = 2 scores higher per completion than one of K = 4 while its groups carry less. Here every row counts
    by how far its reward is from its group's baseline: for rewards drawn independently with variance ``s2`` in
    groups of K, the expectation is ``s2 * (K - 1) / K`` (K = 2: ``s2 / 2``; K = 4: ``3 s2 / 4``), so smaller groups
    never score higher for the same rewards; a group whose rewards agree contributes 0.
    """
    rewards = check_values("rewards", rewards)
    group_ids = check_ids("group_ids", group_ids)
    n = check_same_length(rewards=rewards, group_ids=group_ids)
    if n == 0:
        return 0.0
    return float((group_stats(rewards, group_ids).centred ** 2).sum()) / n

