"""What a concrete env reports from a step (``Outcome``), the episode transcript entry (``TurnRecord``), and the
scripted ``Policy`` type (an observation in, a completion out)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from teamgym.core.rewards import RewardTerms

__all__ = ["Outcome", "Policy", "TurnRecord"]

#: A policy maps an observation (the env's ``Dict`` observation) to a completion.
Policy = Callable[[Mapping[str, Any]], str]


@dataclass(frozen=True)
class Outcome:
    """What one action did, as a concrete env reports it from ``_apply_action``.

    Attributes:
        terms: reward terms per agent for this step; the acting agent should be present, absent agents get zeros.
        terminated: the episode is over (solved, or failed for good).
        info: extra per-agent entries merged into ``infos[agent]`` (process signals, verdicts...).
        infra_error: non-empty when infrastructure failed while scoring this action (not the model's fault).
    """

    terms: Mapping[str, RewardTerms]
    terminated: bool = False
    info: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    infra_error: str = ""


@dataclass(frozen=True)
class TurnRecord:
    """One entry of the episode transcript: who acted, in which turn, what it wrote and what it earned."""

    agent: str
    turn: int
    action: str
    terms: RewardTerms
