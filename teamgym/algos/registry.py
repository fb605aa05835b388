"""Advantage estimators by name: ``get_advantage("grpo")``, ``list_advantages()``, ``register_advantage``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from teamgym.errors import RegistrationError, UnknownNameError

__all__ = ["register_advantage", "get_advantage", "list_advantages"]

F = TypeVar("F", bound=Callable)
_ESTIMATORS: dict[str, Callable] = {}
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def register_advantage(name: str, fn: Callable | None = None, *, overwrite: bool = False):
    """Register ``fn`` under ``name``; usable as ``@register_advantage("name")`` or a plain call.

    Raises:
        RegistrationError: the name is malformed (lowercase snake_case expected), taken (pass
        ``overwrite=True``),
            or ``fn`` is not callable.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise RegistrationError(f"estimator names are lowercase snake_case like 'my_grpo', got {name!r}")

    def decorate(func: F) -> F:
        if not callable(func):
            raise RegistrationError(f"estimator {name!r} must be callable, got {type(func).__name__}")
        if name in _ESTIMATORS and _ESTIMATORS[name] is not func and not overwrite:
            raise RegistrationError(
                f"an advantage estimator named {name!r} is already registered: pick another name or pass "
                "overwrite=True"
            )
        _ESTIMATORS[name] = func
        return func

    return decorate if fn is None else decorate(fn)


def get_advantage(name: str) -> Callable:
    """The estimator registered as ``name``; raises ``UnknownNameError`` with the closest names otherwise."""
    try:
        return _ESTIMATORS[name]
    except (KeyError, TypeError):
        raise UnknownNameError(
            str(name), "advantage estimator", _ESTIMATORS, hint="See teamgym.algos.list_advantages()."
        ) from None


def list_advantages() -> list[str]:
    """Every registered estimator name, sorted."""
    return sorted(_ESTIMATORS)
