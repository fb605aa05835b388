"""``EnvSnapshot``: the saved episode state of a text env, for tree sampling and Monte-Carlo rollouts.

The episode state is frozen as one pickle (protocol 5): taking a snapshot serialises once and each restore
deserialises once, both in C, which is several times cheaper than a ``copy.deepcopy`` of the same dicts and lists on
each side (tree sampling takes K + 1 snapshots and K + 1 restores per node). State that pickle cannot hold (a lambda,
a lock) falls back to a deep copy, with the same semantics.

A *handed-off* snapshot (``env.snapshot(handoff=True)``) copies nothing: it takes the env's episode objects, and its
one restore gives them back. Tree search uses it for a child state it keeps aside while the env is restored to the
node for the siblings (the env then holds fresh objects and never touches the handed-off ones).
"""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass
from typing import Any

from teamgym.errors import SnapshotError

__all__ = ["EnvSnapshot", "freeze", "thaw", "Handoff"]


class Handoff:
    """Episode objects handed over by reference, to be taken back once (see the module doc)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value: Any = value

    def take(self) -> Any:
        if self.value is None:
            raise SnapshotError("this snapshot was taken with handoff=True and is already restored: a handed-off "
                                "snapshot restores once (take a plain snapshot() to restore it several times)")
        value, self.value = self.value, None
        return value


def freeze(value: Any) -> bytes | tuple[str, Any]:
    """An independent frozen copy of ``value`` (pickle bytes, or a deep copy where pickle cannot serialise it)."""
    try:
        return pickle.dumps(value, protocol=5)
    except (pickle.PicklingError, TypeError, AttributeError):
        return ("deepcopy", copy.deepcopy(value))


def thaw(frozen: bytes | tuple[str, Any] | Handoff) -> Any:
    """A fresh copy of the value :func:`freeze` froze (each call returns new objects), or a handoff's objects."""
    if isinstance(frozen, bytes):
        return pickle.loads(frozen)
    if isinstance(frozen, Handoff):
        return frozen.take()
    return copy.deepcopy(frozen[1])


@dataclass(frozen=True)
class EnvSnapshot:
    """An opaque, immutable copy of an env's episode state, returned by ``env.snapshot()``.

    It holds the mutable episode state (frozen, see the module doc), the RNG state, and a *reference* to the task
    (tasks are immutable and may be large, e.g. a problem with its tests): taking one never copies a dataset or a
    model. Restoring one snapshot any number of times, into the env it came from or any env made with the same id and
    arguments, gives the same episode.

    Attributes:
        owner: identifies the env class and the settings the snapshot is only valid for.
        task_id: the task's id.
        task: the task object (shared, never mutated).
        rng_state: the env RNG's bit-generator state.
        frozen: the env's episode attributes by name, frozen by :func:`freeze`.
    """

    owner: tuple[Any, ...]
    task_id: Any
    task: Any
    rng_state: dict[str, Any]
    frozen: bytes | tuple[str, Any] | Handoff

    @property
    def fields(self) -> dict[str, Any]:
        """A fresh copy of the saved episode attributes by name."""
        return thaw(self.frozen)
