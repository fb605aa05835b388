"""One exception hierarchy for everything a user controls.

Every message says three things: the bad value, what was expected, and how to fix it. Internal invariants use
``assert``; anything a caller can get wrong raises one of these classes, all subclasses of :class:`TeamGymError`,
each also subclassing the built-in exception a caller would naturally catch (``ValueError``, ``LookupError``...).

>>> import teamgym
>>> try:
...     teamgym.make("coder_testr-v0")
... except teamgym.errors.UnknownEnvError as err:
...     print(err.suggestions[0])
coder_tester-v0
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from typing import Any

__all__ = [
    "TeamGymError",
    "UnknownNameError",
    "UnknownEnvError",
    "RegistrationError",
    "InvalidArgumentError",
    "InvalidActionError",
    "EnvStateError",
    "SnapshotError",
    "DatasetError",
    "SandboxError",
    "DependencyNotInstalled",
    "CheckpointError",
    "closest_names",
    "check_int",
    "check_number",
    "check_choice",
]


#: How similar (difflib's ratio) a registered name must be to a mistyped one to be suggested: at 0.7 a typo or a
#: missing separator is suggested (``coder_testr-v0``, ``gpro``, ``outputdir``), a different word is not
#: (``nope-v0`` is 0.53 from ``plan_path-v0``, ``nope`` 0.5 from ``entropy_coef``).
SUGGESTION_CUTOFF = 0.7


def closest_names(name: str, candidates: Iterable[str], n: int = 3, cutoff: float = SUGGESTION_CUTOFF) -> list[str]:
    """The registered names most similar to ``name``, best first (difflib ratio >= ``cutoff``)."""
    return difflib.get_close_matches(name, sorted(set(candidates)), n=n, cutoff=cutoff)


class TeamGymError(Exception):
    """Base class of every error teamgym raises on purpose."""


class UnknownNameError(TeamGymError, LookupError):
    """A name looked up in a registry (env id, estimator, scorer...) is not registered.

    Attributes:
        name: the name that was asked for.
        kind: what sort of thing was looked up ("environment", "advantage estimator"...).
        suggestions: the closest registered names, best first (possibly empty).
        available: every registered name.
    """

    def __init__(self, name: str, kind: str, available: Iterable[str], hint: str = ""):
        self.name = name
        self.kind = kind
        self.available = sorted(set(available))
        self.suggestions = closest_names(name, self.available)
        if self.suggestions:
            fix = "did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        else:
            fix = "registered: " + (", ".join(self.available) if self.available else "(none)") + "."
        message = f"unknown {kind} {name!r}: {fix}"
        if hint:
            message += f" {hint}"
        super().__init__(message)

    def __str__(self) -> str:  # LookupError/KeyError would quote the message; keep it readable
        return str(self.args[0])


class UnknownEnvError(UnknownNameError):
    """``make``/``spec`` was given an env id that no registered env matches."""

    def __init__(self, name: str, available: Iterable[str]):
        super().__init__(name, "environment", available, hint="See teamgym.list_envs() or `teamgym list`.")


class RegistrationError(TeamGymError, ValueError):
    """An env or estimator could not be registered (malformed id, duplicate, bad entry point)."""


class InvalidArgumentError(TeamGymError, ValueError):
    """A user-supplied argument or config value is out of range, of the wrong type, or not accepted."""


class InvalidActionError(TeamGymError, TypeError):
    """An action of the wrong *type* reached an env (text envs take ``str``; any string content is legal)."""


class EnvStateError(TeamGymError, RuntimeError):
    """An env method was called in a state that does not allow it (e.g. ``step`` before ``reset``)."""


class SnapshotError(TeamGymError, ValueError):
    """``restore`` was given a snapshot taken from a different env or env configuration."""


class DatasetError(TeamGymError, ValueError):
    """A dataset file or record does not follow the documented schema."""


class SandboxError(TeamGymError, RuntimeError):
    """The sandbox itself failed (not the untrusted program): an infrastructure error, never the model's fault."""


class CheckpointError(TeamGymError, RuntimeError):
    """A checkpoint is missing, truncated or corrupt."""


class DependencyNotInstalled(TeamGymError, ImportError):
    """An optional dependency is missing; the message names the extra that installs it (or ``install``, how to)."""

    def __init__(self, package: str, extra: str, purpose: str = "", *, install: str = ""):
        self.package = package
        self.extra = extra
        what = f" (needed for {purpose})" if purpose else ""
        fix = install or f"install it with `pip install 'teamgym[{extra}]'`"
        super().__init__(f"the optional dependency {package!r} is not installed{what}: {fix}")


def check_int(name: str, value: Any, minimum: int, *, hint: str = "") -> None:
    """Raise :class:`InvalidArgumentError` naming ``name=value`` unless ``value`` is an int ``>= minimum``.

    ``hint`` (e.g. ``"e.g. --prm-epochs 2"``) is appended to the message, as :func:`check_number` does.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgumentError(f"config field {name}={value!r}: expected an int >= {minimum}"
                                   + (f" ({hint})" if hint else ""))


def check_number(name: str, value: Any, *, low: float | None = None, inclusive: bool = True, hint: str = "") -> None:
    """Raise :class:`InvalidArgumentError` unless ``value`` is a finite number (``>= low``, or ``> low``).

    ``hint`` (e.g. ``"GiGPO: 0.95"``) is appended to the message as the recommended value.
    """
    number = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
    if number and (low is None or (value >= low if inclusive else value > low)):
        return
    bound = "" if low is None else f" {'>=' if inclusive else '>'} {low}"
    raise InvalidArgumentError(f"config field {name}={value!r}: expected a finite number{bound}"
                               + (f" ({hint})" if hint else ""))


def check_choice(name: str, value: Any, choices: Iterable[str]) -> None:
    """Raise :class:`InvalidArgumentError` unless ``value`` is one of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        raise InvalidArgumentError(f"config field {name}={value!r}: expected one of {', '.join(choices)}")
