"""``EnvSnapshot``: the saved episode state of a text env, for tree sampling and Monte-Carlo rollouts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["EnvSnapshot"]


@dataclass(frozen=True)
class EnvSnapshot:
    """An opaque, immutable copy of an env's episode state, returned by ``env.snapshot()``.

    It holds the mutable episode state (deep-copied), the RNG state, and a *reference* to the task (tasks are
    immutable and may be large, e.g. a problem with its tests): taking one never copies a dataset or a model.
    Restoring one snapshot any number of times, into the env it came from or any env made with the same id and
    arguments, gives the same episode.

    Attributes:
        owner: identifies the env class and the settings the snapshot is only valid for.
        task_id: the task's id.
        task: the task object (shared, never mutated).
        rng_state: the env RNG's bit-generator state.
        fields: the env's episode attributes by name.
    """

    owner: tuple[Any, ...]
    task_id: Any
    task: Any
    rng_state: dict[str, Any]
    fields: dict[str, Any]
