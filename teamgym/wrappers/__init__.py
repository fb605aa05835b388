"""Wrappers that expose turn-level and process rewards on any teamgym env (docs: docs/wrappers.md)."""

from __future__ import annotations

from teamgym.wrappers.base import RewardWrapper, TextEnvWrapper, WrapperSnapshot
from teamgym.wrappers.mixing import RewardMixing, team_return
from teamgym.wrappers.prm import TransformersPRM
from teamgym.wrappers.process import ProcessReward, ProcessStep, Scorer, StepScorer
from teamgym.wrappers.recorder import RECORD_KEYS, Recorder, load_records, to_batch
from teamgym.wrappers.scorers import PROGRESS_KEY, EnvProgressScorer, MonteCarloScorer, TextScorer
from teamgym.wrappers.single_agent import SingleAgentView
from teamgym.wrappers.turn_limit import TurnLimit

__all__ = [
    "TextEnvWrapper",
    "RewardWrapper",
    "WrapperSnapshot",
    "RewardMixing",
    "team_return",
    "ProcessReward",
    "ProcessStep",
    "Scorer",
    "StepScorer",
    "PROGRESS_KEY",
    "EnvProgressScorer",
    "MonteCarloScorer",
    "TextScorer",
    "Recorder",
    "load_records",
    "to_batch",
    "RECORD_KEYS",
    "SingleAgentView",
    "TransformersPRM",
    "TurnLimit",
]
