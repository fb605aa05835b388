"""``EnvSlot``: one env and the per-env half of a rollout step, and the pools that run many of them.

The engine keeps everything that needs the policies (batched generation, the rows); a slot keeps the env and does
what touches it: reset, render the acting agent's prompt and snapshot the node state, score candidates with
:func:`teamgym.algos.tree_step` (each from a fresh restore of the node state) and advance to the chosen child. Slots
exchange only plain data (strings, floats, dicts), so the same slot runs in the calling thread, in a thread pool
(:class:`LocalSlots`) or inside a Ray actor (:class:`teamgym.rollout.ray_backend.RaySlots`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import numpy as np

from teamgym.algos import Branch, choose_greedy, choose_top_m, tree_step

__all__ = ["NodeView", "Scored", "EnvSlot", "SlotPool", "LocalSlots"]


@dataclass(frozen=True)
class NodeView:
    """What the engine needs to generate at a node: who acts, in which turn, the prompt and the state's anchor."""

    agent: str
    turn: int
    prompt: str
    anchor: str


@dataclass(frozen=True)
class Scored:
    """One candidate's result: the acting agent's mixed reward, its reward terms, any infrastructure error."""

    reward: float
    terms: dict[str, float]
    infra_error: str


class EnvSlot:
    """One env driven node by node (see the module docstring).

    Args:
        env_fn: makes the env (an AEC env with ``snapshot``/``restore``).
        prompt_formatter: ``(env, agent) -> prompt``.
    """

    def __init__(self, env_fn: Callable[[], Any], prompt_formatter: Callable[[Any, str], str]):
        self.env = env_fn()
        self.prompt_formatter = prompt_formatter
        self._state: Any = None
        self._agent = ""
        self._branches: list[Branch] = []

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
        self._branches = []
        anchor = hashlib.sha1(env.observe(agent)["prompt"].encode("utf-8")).hexdigest()[:16]
        return NodeView(agent, int(getattr(env, "turn", 0)), self.prompt_formatter(env, agent), anchor)

    def expand(self, texts: Sequence[str], strategy: str, choose_args: dict[str, Any]) -> tuple[list[Scored], int]:
        """Score ``texts`` from the node state, add them to the node's branches, advance to the chosen one.

        Called again at the same node (adaptive K), the new candidates join the earlier ones and the choice is
        made over all of them. Returns the new candidates' results and the chosen index among all branches.
        """
        env, agent = self.env, self._agent
        results: list[Scored] = []

        def act(text: str) -> float:
            env.step(text)
            info = env.infos.get(agent, {})
            reward = float(env.rewards.get(agent, 0.0))
            results.append(Scored(reward, dict(info.get("reward_terms", {})), str(info.get("infra_error", "") or "")))
            return reward

        # tree_step scores every candidate from a fresh restore of the node state; the choice is made below over
        # all of the node's branches (adaptive K adds candidates in a second call).
        step = tree_step(self._state, list(texts), restore=partial(_restore, env), act=act,
                         take_snapshot=partial(_snapshot, env), choose=choose_greedy)
        self._branches.extend(step.branches)
        chosen = _chooser(strategy, choose_args)([b.reward for b in self._branches])
        _restore(env, self._branches[chosen].snapshot)
        return results, chosen

    def done(self) -> bool:
        env = self.env
        return all(env.terminations.get(a, False) or env.truncations.get(a, False) for a in env.agents)

    def summary(self, episode_id: str) -> dict[str, Any]:
        """The env's episode summary (``infos[agent]["episode"]``) with ``episode_id`` added."""
        for agent in self.env.agents:
            episode = self.env.infos.get(agent, {}).get("episode")
            if episode is not None:
                return {**episode, "episode_id": episode_id}
        return {"episode_id": episode_id, "task_id": getattr(self.env, "task_id", None), "success": False}

    def close(self) -> None:
        self.env.close()


def _chooser(strategy: str, args: dict[str, Any]) -> Callable[[Sequence[float]], int]:
    if strategy == "top_m":
        return partial(choose_top_m, generator=np.random.default_rng(args["seed"]), m=args["m"],
                       temperature=args["temperature"])
    return choose_greedy


def _snapshot(env: Any) -> Any:
    return env.snapshot() if hasattr(env, "snapshot") else env.unwrapped.snapshot()


def _restore(env: Any, snapshot: Any) -> None:
    if hasattr(env, "restore"):
        env.restore(snapshot)
    else:
        env.unwrapped.restore(snapshot)


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
