"""``TextSpace``: a Gymnasium space of arbitrary Python strings.

Gymnasium's ``spaces.Text`` only contains strings over a fixed charset (alphanumeric by default) with at least one
character, and building a charset of every code point takes over a second. An LLM completion is any string: empty,
multi-line, emoji, control characters. ``TextSpace`` subclasses ``Text`` (so tools that dispatch on ``Text`` still
recognise it) but ``contains`` accepts any ``str`` whose length is within bounds, and ``sample`` draws varied unicode,
the kind of garbage a policy emits early in training.

>>> space = TextSpace(max_length=64, seed=0)
>>> space.contains("def f():\\n    return 1  # ✓")
True
>>> space.contains("")
True
>>> space.contains(b"bytes")
False
>>> isinstance(space.sample(), str)
True
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium import spaces

from teamgym.errors import InvalidArgumentError

__all__ = ["TextSpace"]

# Fragments sampled to build garbage completions: ordinary text, code syntax, whitespace, and the unicode ranges that
# tend to break naive text handling (combining marks, RTL, CJK, emoji, control characters, lone surrogates).
_FRAGMENTS: tuple[str, ...] = (
    "```",
    "```python\n",
    "```\n",
    "def f(x):\n    return x\n",
    "print(",
    "assert ",
    "\\boxed{",
    "}",
    "<|im_end|>",
    "\n",
    "\r\n",
    "\t",
    "    ",
    "\x00",
    "\x1b[31m",
    "\u202e",  # right-to-left override
    "\ufeff",  # byte-order mark
    "\ud800",  # lone surrogate: not encodable as UTF-8
    "e\u0301",  # combining acute accent
    "数学",
    "😀",
    "Ω≈ç√∫",
)
_RANGES: tuple[tuple[int, int], ...] = (
    (0x20, 0x7E),  # printable ASCII
    (0x00, 0x1F),  # C0 control characters
    (0xA0, 0x24F),  # Latin-1 supplement and extended Latin
    (0x370, 0x3FF),  # Greek
    (0x590, 0x6FF),  # Hebrew, Arabic
    (0x4E00, 0x4FFF),  # CJK ideographs
    (0x1F300, 0x1F64F),  # emoji
)


class TextSpace(spaces.Text):
    """Any ``str`` with ``min_length <= len(s) <= max_length`` (code points).

    Args:
        max_length: the longest string in the space.
        min_length: the shortest string in the space (default 0: the empty completion is a legal action).
        seed: seed for :meth:`sample`.
    """

    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | np.random.Generator | None = None):
        if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 0:
            raise InvalidArgumentError(f"TextSpace max_length={max_length!r}: expected an int >= 0")
        if not isinstance(min_length, int) or isinstance(min_length, bool) or not 0 <= min_length <= max_length:
            raise InvalidArgumentError(
                f"TextSpace min_length={min_length!r}: expected an int in [0, max_length={max_length}]"
            )
        # The parent builds its charset lookup from this small string; ``contains`` below does not use it.
        super().__init__(max_length, min_length=min_length, charset=string.printable, seed=seed)

    def contains(self, x: Any) -> bool:
        """True for every ``str`` whose length is within ``[min_length, max_length]``."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A random string of varied unicode: text, code fences, whitespace, control characters, emoji.

        ``mask`` may be ``(length, None)`` to fix the length (Gymnasium's convention); charset masks do not apply
        to an unbounded alphabet and are ignored.
        """
        rng = self.np_random
        cap = min(self.max_length, 512)  # long garbage is tested explicitly by check_env, not by random samples
        if mask is not None and mask[0] is not None:
            length = int(mask[0])
        else:
            length = int(rng.integers(self.min_length, max(self.min_length, cap) + 1))
        pieces: list[str] = []
        size = 0
        while size < length:
            if rng.random() < 0.3:
                piece = _FRAGMENTS[int(rng.integers(len(_FRAGMENTS)))]
            else:
                lo, hi = _RANGES[int(rng.integers(len(_RANGES)))]
                piece = "".join(chr(c) for c in rng.integers(lo, hi + 1, size=int(rng.integers(1, 9))))
            pieces.append(piece)
            size += len(piece)
        return "".join(pieces)[:length]

    def __repr__(self) -> str:
        return f"TextSpace(max_length={self.max_length}, min_length={self.min_length})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, TextSpace)
            and self.max_length == other.max_length
            and self.min_length == other.min_length
        )

    __hash__ = None  # type: ignore[assignment]  # mutable (RNG state), like Gymnasium spaces

import teamgym.core.vector  # noqa: E402,F401  (registers TextSpace with gymnasium.vector.utils)
