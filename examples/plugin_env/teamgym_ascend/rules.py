"""The rules of ``ascend-v0`` as pure functions: the deal, reading an action, and what a play does.

>>> deal(0, num_agents=2, hand_size=2, card_max=100).hands
((27, 51), (63, 83))
>>> parse_action("My lowest is 7, nobody can be lower.\\nAction: PLAY")
'play'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Deal", "Play", "deal", "parse_action", "play_lowest"]

_ACTION = re.compile(r"^\s*action\s*:\s*(play|wait)\s*\.?\s*$", flags=re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class Deal:
    """One task: every agent's hand, sorted, in agent order (immutable: snapshots share it)."""

    task_id: int
    hands: tuple[tuple[int, ...], ...]

    @property
    def num_cards(self) -> int:
        """How many cards the team must play."""
        return sum(len(hand) for hand in self.hands)


@dataclass(frozen=True)
class Play:
    """What playing a lowest card did.

    Attributes:
        card: the card played.
        in_order: no card left in any hand was lower.
        discarded: the lower cards that were still held (a mistake discards them), ascending.
    """

    card: int
    in_order: bool
    discarded: tuple[int, ...]


def deal(task_id: int, *, num_agents: int, hand_size: int, card_max: int) -> Deal:
    """Deal ``hand_size`` distinct cards from 1..``card_max`` to each agent, drawn with ``default_rng(task_id)``."""
    rng = np.random.default_rng(task_id)
    cards = rng.choice(np.arange(1, card_max + 1), size=num_agents * hand_size, replace=False)
    hands = tuple(tuple(sorted(int(c) for c in cards[i * hand_size:(i + 1) * hand_size])) for i in range(num_agents))
    return Deal(task_id, hands)


def parse_action(text: str) -> str | None:
    """``"play"`` or ``"wait"`` from the reply's last ``Action: PLAY|WAIT`` line, or ``None`` when there is none."""
    found = _ACTION.findall(text)
    return found[-1].lower() if found else None


def play_lowest(hands: Sequence[list[int]], player: int) -> Play:
    """Play the lowest card of ``hands[player]`` (changing ``hands``): out of order, every lower card is discarded.

    Args:
        hands: every agent's sorted hand (mutated: the card leaves its hand, discarded cards leave theirs).
        player: the index of the agent that plays; its hand must not be empty.
    """
    card = hands[player].pop(0)
    lower = sorted(c for hand in hands for c in hand if c < card)
    for hand in hands:
        hand[:] = [c for c in hand if c > card]
    return Play(card, not lower, tuple(lower))
