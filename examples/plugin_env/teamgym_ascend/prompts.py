"""The prompts of ``ascend-v0``: the same for every agent but for its name and what it can see."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["system_prompt", "user_prompt"]


def system_prompt(agent: str, agents: Sequence[str], card_max: int) -> str:
    """The rules, as ``agent`` in a team of ``agents`` is told them."""
    return (
        f"You are {agent}, one of {len(agents)} players ({', '.join(agents)}) of a cooperative card game. Every player "
        f"holds a few cards numbered 1 to {card_max}, seen by nobody else. Together you must play every card onto "
        "one pile in ascending order. Players act in turn; on yours, either play your lowest card or wait. You "
        "cannot tell the others your cards: they only see whether you played or waited. Playing a card while a "
        "lower one is still held by someone costs the team a life and discards every lower card. Think about the "
        "gap between the pile and your lowest card, then end your reply with 'Action: PLAY' or 'Action: WAIT'."
    )


def user_prompt(hand: Sequence[int], pile_top: int | None, lives: int, others: Mapping[str, int],
                last_actions: Sequence[str]) -> str:
    """What an agent sees: its hand, the pile's top card, the lives left, the others' card counts, recent actions."""
    parts = [
        f"Your cards: {', '.join(map(str, hand))}",
        f"Top of the pile: {'nothing yet' if pile_top is None else pile_top}. Lives left: {lives}.",
        "Cards the others still hold: " + ", ".join(f"{name} {count}" for name, count in others.items()),
    ]
    if last_actions:
        parts.append("Recent actions:\n" + "\n".join(last_actions))
    parts.append("Your move: end with 'Action: PLAY' (your lowest card) or 'Action: WAIT'.")
    return "\n\n".join(parts)
