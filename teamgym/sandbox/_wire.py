"""Plain data across process walls: tagged JSON values and length-prefixed frames (stdlib only).

Used on both sides of every wall of the sandbox: the judge and the program it calls, the program and the host.
Nothing here trusts its input: :func:`decode_value` builds only exact builtin types, bounded in depth and size,
and raises :class:`WireError` (never anything else) on any malformed input.

A tagged value is JSON where ``None``, ``bool``, ``str`` and small ``int`` stand for themselves and every other
value is a one-key object: ``{"int": "-1f..."}`` (hexadecimal), ``{"float": "1.5"}``, ``{"list" | "tuple" | "set" |
"frozenset": [...]}``, ``{"dict": [[k, v], ...]}``, ``{"bytes": "hex"}``, ``{"complex": ["re", "im"]}``.
"""

from __future__ import annotations

import json
import os
import struct

MAX_DEPTH = 64  # nesting levels of a value
MAX_NODES = 1_000_000  # values inside one value (all levels)
MAX_FRAME = 16 << 20  # bytes in one frame
_SEQUENCES = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}
_HEADER = struct.Struct(">I")


class WireError(ValueError):
    """Malformed, too deep, too large or not plain data."""


class _Budget:
    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_NODES

    def take(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise WireError(f"more than {MAX_NODES} values")


def encode_value(value: object) -> object:
    """Tag a plain value (exact builtin types only) as JSON.

    Raises:
        WireError: a value of another type (subclasses too), nested deeper than ``MAX_DEPTH`` or holding more
            than ``MAX_NODES`` values.
    """
    return _encode(value, 0, _Budget())


def _encode(value: object, depth: int, budget: _Budget) -> object:
    if depth > MAX_DEPTH:
        raise WireError(f"nested deeper than {MAX_DEPTH} levels")
    budget.take()
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:  # hexadecimal: no digit limit on the way out (str() of a huge int raises)
        return {"int": format(value, "x")} if abs(value) > 2**53 else value
    if kind is float:
        return {"float": repr(value)}
    if kind is list or kind is tuple or kind is set or kind is frozenset:
        return {kind.__name__: [_encode(v, depth + 1, budget) for v in value]}
    if kind is dict:
        return {"dict": [[_encode(k, depth + 1, budget), _encode(v, depth + 1, budget)] for k, v in value.items()]}
    if kind is bytes:
        return {"bytes": value.hex()}
    if kind is complex:
        return {"complex": [repr(value.real), repr(value.imag)]}
    raise WireError(f"a {kind.__name__} is not plain data (only builtin values cross the sandbox's walls)")


def decode_value(tagged: object) -> object:
    """Rebuild a value tagged by :func:`encode_value`; only plain builtin types come out.

    Raises:
        WireError: for anything malformed (and only that), so callers need one ``except``.
    """
    try:
        return _decode(tagged, 0, _Budget())
    except WireError:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError, KeyError, IndexError) as exc:
        raise WireError(f"unreadable value: {type(exc).__name__}") from None


def _decode(tagged: object, depth: int, budget: _Budget) -> object:
    if depth > MAX_DEPTH:
        raise WireError(f"nested deeper than {MAX_DEPTH} levels")
    budget.take()
    kind = type(tagged)
    if tagged is None or kind is bool or kind is str:
        return tagged
    if kind is int:
        if abs(tagged) > 2**53:
            raise WireError("a large int must be tagged")
        return tagged
    if kind is not dict or len(tagged) != 1:
        raise WireError(f"not a tagged value: {type(tagged).__name__}")
    ((tag, payload),) = tagged.items()
    if tag == "int" and type(payload) is str:
        return int(payload, 16)
    if tag == "float" and type(payload) is str:
        return float(payload)
    if tag in _SEQUENCES and type(payload) is list:
        return _SEQUENCES[tag](_decode(v, depth + 1, budget) for v in payload)
    if tag == "dict" and type(payload) is list:
        out = {}
        for pair in payload:
            if type(pair) is not list or len(pair) != 2:
                raise WireError("a dict item must be a [key, value] pair")
            out[_decode(pair[0], depth + 1, budget)] = _decode(pair[1], depth + 1, budget)
        return out
    if tag == "bytes" and type(payload) is str:
        return bytes.fromhex(payload)
    if tag == "complex" and type(payload) is list and len(payload) == 2:
        if type(payload[0]) is not str or type(payload[1]) is not str:
            raise WireError("complex parts must be strings")
        return complex(float(payload[0]), float(payload[1]))
    raise WireError(f"unknown value tag {str(tag)[:40]!r}")


def loads(data: bytes | str) -> object:
    """``json.loads`` that raises only :class:`WireError` (deep nesting, bad UTF-8, bad JSON...)."""
    try:
        return json.loads(data)
    except (ValueError, TypeError, RecursionError, MemoryError) as exc:
        raise WireError(f"not JSON: {type(exc).__name__}") from None


def write_frame(fd: int, message: object) -> None:
    """Send ``message`` as JSON behind a 4-byte big-endian length."""
    body = json.dumps(message, separators=(",", ":")).encode()
    data = memoryview(_HEADER.pack(len(body)) + body)
    while data:
        data = data[os.write(fd, data) :]


class FrameReader:
    """Reads the frames written by :func:`write_frame` from ``fd``.

    Bytes are kept in a buffer between calls, so a signal that interrupts a read (a test's time budget) loses
    nothing: the next call goes on where the last one stopped.
    """

    def __init__(self, fd: int, limit: int = MAX_FRAME):
        self.fd, self.limit = fd, limit
        self.buffer = bytearray()

    def read(self) -> object:
        """The next frame's message.

        Raises:
            EOFError: the writer closed the channel.
            WireError: a frame over ``limit`` bytes, or not JSON.
        """
        while True:
            if len(self.buffer) >= _HEADER.size:
                (size,) = _HEADER.unpack_from(self.buffer)
                if size > self.limit:
                    raise WireError(f"a frame of {size} bytes is over the {self.limit}-byte limit")
                end = _HEADER.size + size
                if len(self.buffer) >= end:
                    body = bytes(self.buffer[_HEADER.size : end])
                    del self.buffer[:end]
                    return loads(body)
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                raise EOFError("the channel was closed")
            self.buffer += chunk
