"""Gymnasium's vector-space functions for :class:`~teamgym.core.spaces.TextSpace`.

Gymnasium's vector envs (``SyncVectorEnv``, ``AsyncVectorEnv``) and the libraries built on them (SuperSuit's
``pettingzoo_env_to_vec_env_v1`` / ``concat_vec_envs_v1``) batch a space with singledispatch functions from
``gymnasium.vector.utils``, and some of them dispatch on the exact type of a subspace: a ``Text`` subclass has to
register its own. The batch of ``n`` texts is a :class:`TextBatch` (a ``Tuple`` of ``n`` copies of the space) and a
batch of values a ``tuple`` of ``n`` strings, as Gymnasium batches its own ``Text``. ``iterate`` takes either the
batched space (Gymnasium's vector envs) or the single one (SuperSuit's ``MarkovVectorEnv``) and yields the strings.

Shared memory (``AsyncVectorEnv``'s default) holds each string as code points, its length first, so any unicode a
prompt holds goes through (Gymnasium's ``Text`` version carries only its charset's characters). Gymnasium reads the
buffer once, when the vector env is built, and relies on getting live views back: the strings come back as a
:class:`SharedTexts` view that decodes the buffer when read, and whose copy (``AsyncVectorEnv(copy=True)``, the
default) is a plain ``tuple``.

Registered on import of :mod:`teamgym.core.spaces`.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable, Iterable, Iterator, Sequence
from copy import deepcopy
from types import ModuleType
from typing import Any

import numpy as np
from gymnasium.spaces import Tuple
from gymnasium.vector.utils import (
    batch_space,
    concatenate,
    create_empty_array,
    create_shared_memory,
    iterate,
    read_from_shared_memory,
    write_to_shared_memory,
)

from teamgym.core.spaces import TextSpace

__all__ = ["SharedTexts", "TextBatch"]


class TextBatch(Tuple):
    """The space of a batch of texts: one :class:`TextSpace` per sub-env; its values are tuples of strings."""


class SharedTexts(Sequence[str]):
    """``n`` strings read from a shared-memory buffer when accessed; ``copy.deepcopy`` gives a plain tuple."""

    def __init__(self, buffer: np.ndarray):
        self._buffer = buffer  # (n, max_length + 1) int32: length, then code points

    def __len__(self) -> int:
        return len(self._buffer)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self)[index]
        row = self._buffer[index]
        return "".join(map(chr, row[1 : 1 + row[0]]))

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]  # the strings change with the buffer

    def __repr__(self) -> str:
        return repr(tuple(self))


@batch_space.register(TextSpace)
def _batch_space(space: TextSpace, n: int = 1) -> TextBatch:
    batched = TextBatch(tuple(deepcopy(space) for _ in range(n)), seed=deepcopy(space.np_random))
    batched.seed(list(map(int, deepcopy(space.np_random).integers(0, int(1e8), n))))  # independent samples
    return batched


@iterate.register(TextSpace)
@iterate.register(TextBatch)
def _iterate(space: TextSpace | TextBatch, items: Iterable[str]) -> Iterator[str]:
    return iter(items)


@concatenate.register(TextSpace)
def _concatenate(space: TextSpace, items: Iterable[str], out: Any) -> tuple[str, ...]:
    return tuple(items)


@create_empty_array.register(TextSpace)
def _create_empty_array(space: TextSpace, n: int = 1, fn: Callable[..., Any] = np.zeros) -> tuple[str, ...]:
    return tuple(" " * space.min_length for _ in range(n))


@create_shared_memory.register(TextSpace)
def _create_shared_memory(space: TextSpace, n: int = 1, ctx: ModuleType = mp) -> Any:
    return ctx.Array(np.dtype(np.int32).char, n * (space.max_length + 1))


@read_from_shared_memory.register(TextSpace)
def _read_from_shared_memory(space: TextSpace, shared_memory: Any, n: int = 1) -> SharedTexts:
    return SharedTexts(np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape((n, space.max_length + 1)))


@write_to_shared_memory.register(TextSpace)
def _write_to_shared_memory(space: TextSpace, index: int, value: str, shared_memory: Any) -> None:
    size = space.max_length + 1
    row = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)[index * size : (index + 1) * size]
    codes = np.fromiter(map(ord, value), dtype=np.int32, count=len(value))
    row[0] = len(codes)
    row[1 : 1 + len(codes)] = codes
