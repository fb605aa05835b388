"""Reward terms: the named parts of the reward an agent gets in one step.

Every teamgym env reports, for every agent at every step, ``infos[agent]["reward_terms"]``: a dict of floats with at
least ``team`` and ``local``. ``local`` is the sum of the agent's own parts (``format``, ``pass_rate``, ...), which are
listed beside it under their own names; the reward is ``alpha * team + local``.

>>> terms = reward_terms(team=0.5, pass_rate=0.25, format=-0.1)
>>> terms["local"]
0.15
>>> mix(terms, alpha=2.0)
1.15
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = ["RewardTerms", "reward_terms", "zero_terms", "mix", "add_terms", "RESERVED_TERMS"]

RewardTerms = dict[str, float]

#: Term names with a fixed meaning; every other name is a part of ``local``.
RESERVED_TERMS = frozenset({"team", "local"})


def reward_terms(team: float = 0.0, local: float | None = None, **parts: float) -> RewardTerms:
    """Build a reward-terms dict.

    Args:
        team: the team term (shared objective, as the env defines it for this agent-turn).
        local: the agent's own term. Defaults to the sum of ``parts``; when both are given it must equal that sum.
        **parts: the named components of ``local`` (e.g. ``format=-0.5``).

    Returns:
        ``{"team": team, "local": local, **parts}`` as plain floats, rounded to 12 decimals so that sums are
        reproducible bit for bit whatever order they were added in.
    """
    total = math.fsum(parts.values())
    if local is None:
        local = total
    elif parts:
        assert math.isclose(local, total, abs_tol=1e-9), f"local={local} but its parts sum to {total}"
    terms = {"team": _clean(team), "local": _clean(local)}
    terms.update({name: _clean(value) for name, value in parts.items()})
    return terms


def zero_terms() -> RewardTerms:
    """The terms of an agent that received nothing this step."""
    return {"team": 0.0, "local": 0.0}


def mix(terms: Mapping[str, float], alpha: float = 1.0) -> float:
    """The reward ``alpha * team + local`` (AT-GRPO's mixing; alpha = 1 by default)."""
    return _clean(alpha * terms["team"] + terms["local"])


def add_terms(total: Mapping[str, float], more: Mapping[str, float]) -> RewardTerms:
    """Term-wise sum of two reward-terms dicts (names missing on one side count as 0)."""
    out = dict(total)
    for name, value in more.items():
        if value or name not in out:  # a zero leaves a term unchanged (terms are cleaned when they are made)
            out[name] = _clean(out.get(name, 0.0) + value)
    return out


def _clean(value: float) -> float:
    value = float(value)
    if value == 0.0:  # the most common term by far (and -0.0 becomes 0.0)
        return 0.0
    assert math.isfinite(value), f"reward term is not finite: {value}"
    return round(value, 12) + 0.0  # + 0.0 turns a rounded-away -1e-13 into 0.0
