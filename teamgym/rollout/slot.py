"""``EnvSlot``: one env and the per-env half of a rollout step, and the pools that run many of them.

The engine keeps everything that needs the policies (batched generation, the rows); a slot keeps the env and does
what touches it: reset, render the acting agent's prompt and snapshot the node state, score candidates with
the semantics of :func:`teamgym.algos.tree_step` (each from the node state) and advance to the chosen child. Slots
exchange only plain data (strings, floats, dicts), so the same slot runs in the calling thread, in a thread pool
(:class:`LocalSlots`) or inside a Ray actor (:class:`teamgym.rollout.ray_backend.RaySlots`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

import numpy as np

from teamgym import sandbox
from teamgym.algos import choose_greedy, choose_top_m
from teamgym.core import TurnBasedTextEnv
from teamgym.core.env import EPISODE_KEY
from teamgym.core.rewards import mix
from teamgym.rollout.settings import TWO_ROUND_STRATEGIES

__all__ = ["NodeView", "Scored", "EnvSlot", "SlotPool", "LocalSlots", "anchor_of"]


@dataclass(frozen=True)
class NodeView:
    """What the engine needs to generate at a node: who acts, in which turn, the prompt and the state's anchor (a hash
    of the env's ``infos[agent]["state_key"]``, or of the whole prompt for envs without one)."""

    agent: str
    turn: int
    prompt: str
    anchor: str


@dataclass(frozen=True)
class Scored:
    """One candidate's result.

    Attributes:
        reward: the acting agent's mixed reward (the env's ``rewards[agent]``).
        terms: the acting agent's reward terms.
        infra_error: non-empty when the env's infrastructure failed scoring the candidate.
        others_terms: the reward terms the same step gave each other live agent (only those that received
            anything: some term or their reward not 0).
        others_rewards: those agents' rewards (same keys as ``others_terms``).
        outcome: ``{}``, or ``{"success": bool}`` when the candidate's step ended the episode: the env's verdict on
            the episode that step finished (its summary's ``success``), which an unchosen candidate has nowhere else
            (the episode's own ``success`` follows the chosen path). Process-reward targets read it at the leaves of
            the sampling tree.
    """

    reward: float
    terms: dict[str, float]
    infra_error: str
    others_terms: dict[str, dict[str, float]] = field(default_factory=dict)
    others_rewards: dict[str, float] = field(default_factory=dict)
    outcome: dict[str, bool] = field(default_factory=dict)


class EnvSlot:
    """One env driven node by node (see the module docstring).

    Args:
        env_fn: makes the env (an AEC env with ``snapshot``/``restore``).
        prompt_formatter: ``(env, agent) -> prompt``.
    """

    def __init__(self, env_fn: Callable[[], Any], prompt_formatter: Callable[[Any, str], str]):
        self.env = env_fn()
        # Handed-off snapshots need the base class's snapshot(handoff=True); wrappers with state take plain ones.
        self._handoff = isinstance(_snapshot_target(self.env), TurnBasedTextEnv)
        self.prompt_formatter = prompt_formatter
        self._state: Any = None
        self._agent = ""
        self._at_node = False
        self._rewards: list[float] = []  # every branch of the open node, in candidate order
        self._failed: list[bool] = []  # every branch: whether the infrastructure failed scoring it
        self._snapshots: dict[int, Any] = {}  # branch index -> its child state, for those that can be chosen
        self._scored: dict[int, Scored] = {}  # branch index -> its result, for the branches that were stepped
        self._seen: dict[str, int] = {}  # candidate text -> the first branch stepped with it
        self._best: tuple[bool, float, int] | None = None  # (healthy, reward, -index) of the best branch so far
        self._current = -1  # the branch whose child state the env is in (-1: the node state or none)
        self._ended: list[bool] = []  # every branch: whether its step ended the episode
        self._chosen = -1

    def reset(self, task_id: Any, seed: int) -> list[str]:
        """Start an episode on ``task_id``; returns the env's agents."""
        self.env.reset(seed=seed, options={"task_id": task_id})
        return list(self.env.possible_agents)

    def open_node(self) -> NodeView:
        """Snapshot the node state and describe the acting agent's situation."""
        env = self.env
        agent = env.agent_selection
        self._state = _snapshot(env)
        self._agent = agent
        self._at_node = True  # the env has not acted since the snapshot
        self._rewards = []
        self._failed = []
        self._ended = []
        self._chosen = -1
        self._snapshots = {}
        self._scored = {}
        self._seen = {}
        self._best = None
        self._current = -1
        return NodeView(agent, int(getattr(env, "turn", 0)), self.prompt_formatter(env, agent), anchor_of(env, agent))

    def programs(self, texts: Sequence[str]) -> list[Any]:
        """The sandbox programs (:class:`teamgym.sandbox.Program`) that :meth:`expand` with ``texts`` will run: each
        new text's ``programs`` from the node state (the env is put back in it; texts already stepped at this node
        are not stepped again, so they need none)."""
        declare = getattr(self.env.unwrapped, "programs", None)
        new = [text for text in dict.fromkeys(texts) if text not in self._seen]
        if declare is None or not new:
            return []
        if not self._at_node:
            _restore(self.env, self._state)
            self._at_node = True
            self._current = -1
        return [program for text in new for program in declare(text)]

    def expand(self, texts: Sequence[str], strategy: str, choose_args: dict[str, Any],
               prefetched: tuple[Sequence[Any], Sequence[Any]] = ((), ())) -> tuple[list[Scored], int]:
        """Score ``texts`` from the node state, add them to the node's branches, advance to the chosen one.

        Called again at the same node (adaptive K), the new candidates join the earlier ones and the choice is
        made over all of them. Returns the new candidates' results and the chosen index among all branches.
        ``choose_args``: the strategy's ``seed``, ``m`` and ``temperature``; ``alphas`` (``{agent: alpha}`` or
        None): mix each reward ``alpha * team + local`` with these instead of the env's alpha; ``keep``: keep every
        branch's child state (plain snapshots) for :meth:`unchosen_children`.

        The semantics are :func:`teamgym.algos.tree_step`'s (every candidate acts on the node state, never on a
        sibling's result; the env ends in the chosen child's state; greedy takes the first of tied best rewards)
        without the work it does not need:

        * a candidate whose scoring failed for infrastructure reasons (``infra_error``: the sandbox died) is never
          chosen while another candidate of the node is healthy: its 0 reward says nothing about the action, and
          advancing on it would steer the episode by an accident (all candidates failed: the rule applies as usual);
        * candidates act from the node state, so the order they act in does not change their results; they act in
          the order 2, 3, ..., K, 1, so that when rewards tie (common: early in training every candidate earns the
          same format penalty) the chosen first candidate acted last and the env is already in its state;
        * the first to act uses the live env, still in the node state it was just snapshotted in;
        * under the greedy rule a candidate that ranks below one that already acted can never be chosen, so only
          those that rank first when they act are snapshotted (``top_m`` keeps every snapshot; ``adaptive`` also
          keeps the last one's, since more candidates may follow), and the last to act needs none: if chosen, the
          env is already in its state;
        * a child's snapshot is handed the env's episode objects instead of a copy (``snapshot(handoff=True)`` of
          a :class:`~teamgym.core.TurnBasedTextEnv`): the env is restored to the node before the next candidate
          acts, so nothing touches them until the chosen child's one restore;
        * a candidate whose text repeats an earlier one at this node is not stepped again: the env contract (the
          same action from a restored state gives identical rewards and infos, checked by ``check_env``) makes its
          result the earlier one's, and its child state is the earlier one's snapshot. A trained policy often
          repeats itself, and a repeated program then costs no second sandbox run.
        """
        alphas, keep = choose_args.get("alphas"), bool(choose_args.get("keep"))
        base = len(self._rewards)
        order = list(range(1, len(texts))) + [0] if texts else []
        with sandbox.prefetched(*prefetched):
            results = self._step_all(texts, order, base, strategy, alphas, keep)
        chosen = _chooser(strategy, choose_args)(_choice_rewards(self._rewards, self._failed))
        if chosen != self._current:
            _restore(self.env, self._snapshots[chosen])
            self._current = chosen
        self._chosen = chosen
        return [r for r in results if r is not None], chosen

    def _step_all(self, texts: Sequence[str], order: list[int], base: int, strategy: str,
                  alphas: dict[str, float] | None, keep: bool) -> list[Scored | None]:
        """Step every new candidate from the node state in ``order`` (see :meth:`expand`); their results."""
        env, agent = self.env, self._agent
        results: list[Scored | None] = [None] * len(texts)
        self._rewards.extend([math.nan] * len(texts))
        self._failed.extend([False] * len(texts))
        self._ended.extend([False] * len(texts))
        for position, j in enumerate(order):
            index = base + j
            last = position == len(order) - 1 and strategy not in TWO_ROUND_STRATEGIES
            earlier = self._seen.get(texts[j])
            if earlier is not None:
                reward, failed = self._rewards[earlier], self._failed[earlier]
                best = self._leads(reward, index, failed)
                if not best or earlier in self._snapshots:  # never chosen, or its state is already saved
                    results[j] = _copy(self._scored[earlier])
                    self._rewards[index], self._failed[index] = reward, failed
                    self._ended[index] = self._ended[earlier]
                    if best:
                        self._best = (not failed, reward, -index)
                    if earlier in self._snapshots:
                        self._snapshots[index] = self._snapshots[earlier]
                    continue
            if not self._at_node:
                _restore(env, self._state)
            self._at_node = False
            env.step(texts[j])
            info = env.infos.get(agent, {})
            terms = dict(info.get("reward_terms", {}))
            reward = float(env.rewards.get(agent, 0.0)) if alphas is None else mix(terms, alphas[agent])
            others_terms, others_rewards = _others(env, agent, alphas)
            ended = self.done()
            outcome = {"success": bool(self._episode_summary().get("success", False))} if ended else {}
            results[j] = Scored(reward, terms, str(info.get("infra_error", "") or ""), others_terms, others_rewards,
                                outcome)
            self._ended[index] = ended
            self._scored[index] = results[j]
            self._seen.setdefault(texts[j], index)
            self._rewards[index] = reward
            self._failed[index] = failed = bool(results[j].infra_error)
            self._current = index
            best = self._leads(reward, index, failed)
            if best:
                self._best = (not failed, reward, -index)
            if keep or (not last and (best or strategy == "top_m")):
                # The env is restored to the node before the next candidate acts, so this child's objects can be
                # handed to the snapshot instead of copied (not under adaptive K, which may restore it twice, nor
                # when kept for a continuation, which another slot restores).
                handoff = self._handoff and strategy not in TWO_ROUND_STRATEGIES and not keep
                self._snapshots[index] = _snapshot(env, handoff=handoff)
                if handoff:
                    self._current = -1  # the env holds no state of its own until the next restore
        return results

    def unchosen_children(self) -> list[tuple[int, Any]]:
        """``(branch, child state)`` of the open node's unchosen branches that can go on: healthy and not ended
        (after :meth:`expand` with ``keep``); each state restores into any slot of the same env (:meth:`adopt`)."""
        return [(b, self._snapshots[b]) for b in range(len(self._rewards))
                if b != self._chosen and not self._failed[b] and not self._ended[b]]

    def adopt(self, snapshot: Any) -> None:
        """Continue an episode from another slot's child state (:meth:`unchosen_children`)."""
        _restore(self.env, snapshot)
        self._at_node = False

    def _leads(self, reward: float, index: int, failed: bool) -> bool:
        """Whether branch ``index`` with ``reward`` ranks above every branch so far (greedy: a healthy branch above a
        failed one, then the higher reward, then the lower index; a NaN reward always counts, as argmax may pick
        it)."""
        return not math.isfinite(reward) or self._best is None or (not failed, reward, -index) > self._best

    def done(self) -> bool:
        env = self.env
        return all(env.terminations.get(a, False) or env.truncations.get(a, False) for a in env.agents)

    def summary(self, episode_id: str) -> dict[str, Any]:
        """The env's episode summary (``infos[agent]["teamgym_episode"]``) with ``episode_id`` added."""
        return {**self._episode_summary(), "episode_id": episode_id}

    def _episode_summary(self) -> dict[str, Any]:
        """The ended episode's summary from the env's infos (a stand-in without success when the env gives none)."""
        for agent in self.env.agents:
            episode = self.env.infos.get(agent, {}).get(EPISODE_KEY)
            if episode is not None:
                return dict(episode)
        return {"task_id": getattr(self.env, "task_id", None), "success": False}

    def close(self) -> None:
        self.env.close()


def anchor_of(env: Any, agent: str) -> str:
    """GiGPO's anchor of the state ``agent`` acts on now: a hash of the env's ``infos[agent]["state_key"]``, else of
    the agent's whole prompt (equal states, equal anchors)."""
    state = env.infos.get(agent, {}).get("state_key")
    anchor = hashlib.sha1((state if state is not None else env.observe(agent)["prompt"]).encode("utf-8"))
    return anchor.hexdigest()[:16]


def _copy(scored: Scored) -> Scored:
    """An equal result with its own dicts (rows never share mutable terms)."""
    return Scored(scored.reward, dict(scored.terms), scored.infra_error,
                  {a: dict(t) for a, t in scored.others_terms.items()}, dict(scored.others_rewards),
                  dict(scored.outcome))


def _others(env: Any, agent: str, alphas: dict[str, float] | None) -> tuple[dict[str, dict[str, float]],
                                                                          dict[str, float]]:
    """The terms and rewards the step just taken gave every live agent but ``agent``, those that received anything
    (rewards mixed with ``alphas`` when given, else the env's).

    A terms dict is kept whole (``mix`` needs ``team`` and ``local``) when any of its terms or the reward is not 0.
    """
    terms: dict[str, dict[str, float]] = {}
    rewards: dict[str, float] = {}
    for other in env.agents:
        if other == agent:
            continue
        received = {name: float(v) for name, v in env.infos.get(other, {}).get("reward_terms", {}).items()}
        reward = float(env.rewards.get(other, 0.0))
        if reward != 0.0 or any(v != 0.0 for v in received.values()):
            terms[other] = received
            rewards[other] = reward if alphas is None else mix(received, alphas[other])
    return terms, rewards


def _choice_rewards(rewards: Sequence[float], failed: Sequence[bool]) -> list[float]:
    """The rewards the strategy chooses by: a failed branch's is -inf while any branch is healthy."""
    if all(failed) or not any(failed):
        return list(rewards)
    return [-math.inf if bad else reward for reward, bad in zip(rewards, failed, strict=True)]


def _chooser(strategy: str, args: dict[str, Any]) -> Callable[[Sequence[float]], int]:
    if strategy == "top_m":
        return partial(choose_top_m, generator=np.random.default_rng(args["seed"]), m=args["m"],
                       temperature=args["temperature"])
    return choose_greedy


def _snapshot_target(env: Any) -> Any:
    """What takes and restores snapshots: ``env`` itself (a teamgym env or wrapper), or the env a PettingZoo wrapper
    without them wraps."""
    return env if hasattr(env, "snapshot") else env.unwrapped


def _snapshot(env: Any, handoff: bool = False) -> Any:
    target = _snapshot_target(env)
    return target.snapshot(handoff=True) if handoff else target.snapshot()


def _restore(env: Any, snapshot: Any) -> None:
    _snapshot_target(env).restore(snapshot)


class SlotPool(Protocol):
    """Runs slot methods over many slots: ``call(method, [(slot index, args), ...]) -> results`` in order."""

    def ensure(self, count: int) -> None: ...

    def call(self, method: str, calls: Sequence[tuple[int, tuple[Any, ...]]]) -> list[Any]: ...

    def close(self) -> None: ...


class LocalSlots:
    """Slots in this process, run in order or from a thread pool (``workers > 0``; sandbox envs release the GIL)."""

    def __init__(self, env_fn: Callable[[], Any], prompt_formatter: Callable[[Any, str], str], *, workers: int = 0):
        self.env_fn = env_fn
        self.prompt_formatter = prompt_formatter
        self.slots: list[EnvSlot] = []
        self._pool = ThreadPoolExecutor(workers) if workers > 0 else None

    def ensure(self, count: int) -> None:
        while len(self.slots) < count:
            self.slots.append(EnvSlot(self.env_fn, self.prompt_formatter))

    def call(self, method: str, calls: Sequence[tuple[int, tuple[Any, ...]]]) -> list[Any]:
        jobs = [partial(getattr(self.slots[i], method), *args) for i, args in calls]
        if self._pool is not None and len(jobs) > 1:
            return list(self._pool.map(lambda job: job(), jobs))
        return [job() for job in jobs]

    def close(self) -> None:
        for slot in self.slots:
            slot.close()
        if self._pool is not None:
            self._pool.shutdown()
