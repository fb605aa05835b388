"""A run's tasks (training draws and held-out ids) and held-out evaluation.

Procedural envs train on ids below ``heldout_offset`` and evaluate on ``heldout_offset + i``; a finite dataset holds
out its last ``eval_tasks`` ids. A run may train on a finite pool of those ids (``task_pool``), fixed by the seed.
Each step's fresh training tasks are a function of ``(seed, step)`` alone; with ``task_replay`` a share of them is
replaced by training tasks the run recently failed (:class:`FailureReplay`, whose pool every checkpoint holds), so a
resumed run draws the same ones either way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from teamgym.errors import InvalidArgumentError
from teamgym.rollout.engine import RolloutEngine, TreeSampling
from teamgym.rollout.hf import HFPolicy
from teamgym.rollout.samplers import distinct_policies
from teamgym.rollout.sampling import SamplingParams

__all__ = ["EVAL_CHUNK", "FailureReplay", "TaskSplit", "evaluate"]

#: Envs evaluated together in one lockstep rollout.
EVAL_CHUNK = 50


class TaskSplit:
    """The training and held-out task ids of a run.

    Args:
        task_ids: the env's ``task_ids()``: a finite dataset's ids, or ``None`` for procedural tasks.
        eval_tasks: held-out tasks.
        heldout_offset: procedural envs: held-out ids start here; training draws ids below it.
        seed: the run's seed (with the step, it fixes each step's tasks and the pool).
        pool: > 0: every step draws from a pool of this many distinct training ids (all of a smaller dataset's).
    """

    def __init__(self, task_ids: Sequence[Any] | None, *, eval_tasks: int, heldout_offset: int, seed: int,
                 pool: int = 0):
        self.eval_tasks, self.heldout_offset, self.seed = eval_tasks, heldout_offset, seed
        self.train_ids: list[Any] | None = None
        self.heldout_ids: list[Any] = [heldout_offset + i for i in range(eval_tasks)]
        if task_ids is not None:
            ids = list(task_ids)
            if eval_tasks >= len(ids):
                raise InvalidArgumentError(
                    f"eval_tasks={eval_tasks}: the env has only {len(ids)} tasks and training needs some left: use "
                    f"eval_tasks <= {len(ids) - 1}"
                )
            cut = len(ids) - eval_tasks
            self.train_ids, self.heldout_ids = ids[:cut], ids[cut:]
        self.pool: list[Any] | None = None
        if pool > 0:
            rng = np.random.default_rng([seed, 2**31 - 2])
            if self.train_ids is None:
                self.pool = [int(t) for t in rng.choice(heldout_offset, min(pool, heldout_offset), replace=False)]
            else:
                picked = rng.choice(len(self.train_ids), min(pool, len(self.train_ids)), replace=False)
                self.pool = [self.train_ids[int(i)] for i in picked]

    def for_step(self, step: int, count: int) -> list[Any]:
        """The ``count`` training tasks of ``step`` (a function of the seed and the step only), from the pool if the
        run has one."""
        rng = np.random.default_rng([self.seed, step])
        if self.pool is not None:
            return [self.pool[int(i)] for i in rng.integers(0, len(self.pool), count)]
        return self.draw(rng, count)

    def draw(self, rng: np.random.Generator, count: int) -> list[Any]:
        """``count`` training task ids drawn with ``rng`` (with replacement)."""
        if self.train_ids is not None:
            return [self.train_ids[int(i)] for i in rng.integers(0, len(self.train_ids), count)]
        return [int(t) for t in rng.integers(0, self.heldout_offset, count)]


class FailureReplay:
    """Spend part of each step's rollout on training tasks the policy recently failed.

    After every rollout, :meth:`observe` puts each task with at least one unsuccessful episode at the newest end of
    a pool of at most ``size`` tasks (the oldest fall out) and takes out each task whose episodes all succeeded;
    :meth:`draw` replaces the first ``round(share * len(tasks))`` of a step's fresh tasks by distinct tasks from the
    pool (fewer while the pool is smaller), chosen by ``(seed, step)``. Fresh tasks are unseen, so the gradient
    keeps generalising; replayed ones concentrate it where the policy still fails (a curriculum that follows the
    policy: the hard, long-plan tasks once the short ones are learned). Only training ids ever enter the pool.

    Args:
        share: the share of each step's tasks drawn from the pool, in [0, 1); 0 = off.
        size: the most tasks the pool holds.
        seed: the run's seed.
    """

    def __init__(self, share: float, size: int, seed: int):
        self.share, self.size, self.seed = share, size, seed
        self.pool: list[Any] = []

    def count(self, tasks: int) -> int:
        """How many of a step's ``tasks`` fresh draws :meth:`draw` replaces with the pool as it is now."""
        return min(len(self.pool), round(self.share * tasks))

    def draw(self, step: int, tasks: Sequence[Any]) -> list[Any]:
        """``tasks`` (the step's fresh draws) with the first :meth:`count` replaced by replayed failures."""
        count = self.count(len(tasks))
        if count == 0:
            return list(tasks)
        rng = np.random.default_rng([self.seed, step, 2**31 - 3])
        picked = rng.choice(len(self.pool), count, replace=False)
        return [self.pool[int(i)] for i in picked] + list(tasks[count:])

    def observe(self, episodes: Sequence[Mapping[str, Any]]) -> None:
        """Update the pool with a rollout's episodes (each with ``task_id`` and ``success``)."""
        if self.share == 0:
            return
        solved: dict[Any, bool] = {}
        for episode in episodes:
            task = episode.get("task_id")
            solved[task] = solved.get(task, True) and bool(episode.get("success", False))
        kept = [task for task in self.pool if task not in solved]
        failed = [task for task, ok in solved.items() if not ok]
        self.pool = (kept + failed)[-self.size:] if self.size else []

    def state_dict(self) -> dict[str, Any]:
        return {"pool": list(self.pool)}

    def load_state_dict(self, state: Mapping[str, Any] | None) -> None:
        """Restore :meth:`state_dict`'s pool (``None``, from a checkpoint written without one: an empty pool)."""
        self.pool = list(state["pool"]) if state else []


def evaluate(engine: RolloutEngine, policies: Mapping[str, HFPolicy], task_ids: Sequence[Any], *, max_tokens: int,
             temperature: float, seed: int, progress: Callable[[int], Any] | None = None) -> dict[str, float]:
    """Held-out success, one sample per node: greedy (``success``) and sampled at ``temperature``.

    Each evaluation draws from the policies' RNGs seeded ``seed + 1`` (their states are saved and restored
    around it), so evaluating never shifts the training sampler's random stream. ``progress`` is called with the
    number of episodes played after each chunk of :data:`EVAL_CHUNK` tasks (``2 * len(task_ids)`` in all).
    """
    if not task_ids:
        return {"success": float("nan"), "sampled_success": float("nan")}
    named = distinct_policies(policies)
    saved = {name: policy.rng_state() for name, policy in named.items()}
    out = {}
    for key, tempered in (("success", 0.0), ("sampled_success", temperature)):
        for policy in named.values():
            policy.rng.manual_seed(seed + 1)
        sampling = SamplingParams(temperature=tempered, max_tokens=max_tokens)
        episodes = []
        for start in range(0, len(task_ids), EVAL_CHUNK):
            result = engine.rollout(task_ids[start:start + EVAL_CHUNK], episode_prefix="eval", tree=TreeSampling(k=1),
                                    sampling=sampling)
            episodes.extend(result.episodes)
            if progress is not None:
                progress(len(result.episodes))
        out[key] = float(np.mean([bool(e.get("success")) for e in episodes]))
    for name, policy in named.items():
        policy.set_rng_state(saved[name])
    return out
