"""Partner policies for the adapters that train one role: callables, or the env's own scripted policies by name.

Every adapter that exposes one role of a team (TRL with partners, verl, OpenRLHF, verifiers) takes
``partners={role: spec}``, where ``spec`` is one of

* a callable ``policy(observation) -> str`` (:data:`teamgym.core.outcome.Policy`), used as is;
* ``"scripted"`` or ``"scripted:NAME"``: the env's scripted policy for that role (its default, or the one named),
  made from the env instance it plays in, since a scripted policy may read that env's state (an oracle does).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from teamgym.core.outcome import Policy
from teamgym.errors import InvalidArgumentError

__all__ = ["PartnerSpec", "check_partners", "resolve_partners"]

PartnerSpec = Policy | str


def check_partners(partners: Mapping[str, PartnerSpec]) -> None:
    """Raise :class:`InvalidArgumentError` for a spec that is neither callable nor ``"scripted[:NAME]"``."""
    for role, spec in partners.items():
        if callable(spec):
            continue
        if isinstance(spec, str) and (spec == "scripted" or spec.startswith("scripted:")):
            continue
        raise InvalidArgumentError(
            f"partners[{role!r}]={spec!r}: expected a callable policy(observation) -> str, 'scripted' or "
            "'scripted:NAME' (the env's scripted policy)"
        )


def resolve_partners(env: Any, partners: Mapping[str, PartnerSpec]) -> dict[str, Policy]:
    """``{role: policy}`` for ``env``: callables as given, scripted names made from ``env.unwrapped``."""
    check_partners(partners)
    return {role: _resolve(env, role, spec) for role, spec in partners.items()}


def _resolve(env: Any, role: str, spec: PartnerSpec) -> Callable[[Mapping[str, Any]], str]:
    if callable(spec):
        return spec
    name = spec.partition(":")[2] or None
    return env.unwrapped.scripted_policy(role, name)
