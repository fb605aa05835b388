"""Scripted policies of ``ascend-v0``: an oracle that sees every hand, a fair estimator, and a random player."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from teamgym.core import Policy

if TYPE_CHECKING:
    from .env import AscendEnv

__all__ = ["estimate_policy", "oracle_policy", "random_policy"]


def oracle_policy(env: AscendEnv, agent: str) -> Policy:
    """Plays exactly when its lowest card is the lowest one left anywhere (it reads every hand: no model can)."""

    def policy(observation: Mapping[str, Any]) -> str:
        hand = env.hand(agent)
        lowest_left = min(card for other in env.possible_agents for card in env.hand(other))
        return "Action: PLAY" if hand and hand[0] == lowest_left else "Action: WAIT"

    return policy


def estimate_policy(env: AscendEnv, agent: str) -> Policy:
    """Plays when fewer than half a card is expected below its lowest one, from what a player may see.

    The others' cards are spread evenly over the cards above the pile that it does not hold itself; it also plays
    when it holds the last cards, and when a whole round has passed without a play (someone must move).
    """

    def policy(observation: Mapping[str, Any]) -> str:
        hand = env.hand(agent)
        if not hand:
            return "Action: WAIT"
        top = env.state.pile[-1] if env.state.pile else 0
        unseen = sum(len(env.hand(other)) for other in env.possible_agents if other != agent)
        free = env.card_max - top - len(hand)
        expected_lower = unseen * (hand[0] - top - 1) / max(free, 1)
        stalled = env.state.waits_in_a_row >= len(env.agents_with_cards())
        play = expected_lower < 0.5 or unseen == 0 or stalled
        return f"About {expected_lower:.1f} cards may be lower than my {hand[0]}.\nAction: {'PLAY' if play else 'WAIT'}"

    return policy


def random_policy(env: AscendEnv, agent: str) -> Policy:
    """Plays or waits at random; one reply in five has no action line (seeded by agent, task and step)."""

    def policy(observation: Mapping[str, Any]) -> str:
        rng = np.random.default_rng([zlib.crc32(agent.encode()), zlib.crc32(str(env.task_id).encode()), env.num_steps])
        if rng.random() < 0.2:
            return "I am not sure."
        return "Action: PLAY" if rng.random() < 0.5 else "Action: WAIT"

    return policy
