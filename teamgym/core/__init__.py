"""The pieces every text env is made of: the base env, the text space, reward terms, snapshots, text parsing."""

from __future__ import annotations

from teamgym.core.env import EPISODE_KEY, TurnBasedTextEnv
from teamgym.core.outcome import Outcome, Policy, TurnRecord
from teamgym.core.parallel import TurnParallelEnv
from teamgym.core.rewards import RewardTerms, add_terms, mix, reward_terms, zero_terms
from teamgym.core.snapshot import EnvSnapshot
from teamgym.core.spaces import TextSpace
from teamgym.core.text import CodeBlock, clip_text, extract_boxed, extract_code_blocks, sanitize_text, select_code_block

__all__ = [
    "EPISODE_KEY",
    "TurnBasedTextEnv",
    "TurnParallelEnv",
    "Outcome",
    "Policy",
    "TurnRecord",
    "EnvSnapshot",
    "TextSpace",
    "RewardTerms",
    "reward_terms",
    "zero_terms",
    "mix",
    "add_terms",
    "CodeBlock",
    "clip_text",
    "extract_boxed",
    "extract_code_blocks",
    "sanitize_text",
    "select_code_block",
]
