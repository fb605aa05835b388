"""Majority voting and MAPoRL-style persuasion credit for ``discussion-v0`` (pure functions of the answers)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from teamgym.envs.math_tool.answers import is_equivalent

__all__ = ["majority_answer", "persuasion_credit"]


def majority_answer(answers: Sequence[str | None], *, strict: bool = False) -> str | None:
    """The plurality answer, grouping answers by value; ``None`` when two or more groups tie for the most votes.

    Missing answers (``None``) do not vote. Each group is represented by its first answer in ``answers`` order.
    ``strict`` groups with the strict checker (``discussion-v1``; see :mod:`teamgym.envs.math_tool.answers`).

    >>> majority_answer(["1/2", "0.5", "3"])
    '1/2'
    >>> majority_answer(["1", "2", None]) is None
    True
    """
    groups: list[tuple[str, int]] = []
    for answer in answers:
        if answer is None:
            continue
        for i, (representative, votes) in enumerate(groups):
            if is_equivalent(answer, representative, strict=strict):
                groups[i] = (representative, votes + 1)
                break
        else:
            groups.append((answer, 1))
    if not groups:
        return None
    most = max(votes for _, votes in groups)
    leaders = [representative for representative, votes in groups if votes == most]
    return leaders[0] if len(leaders) == 1 else None


def persuasion_credit(
    previous: Mapping[str, str | None],
    current: Mapping[str, str | None],
    correct_previous: Mapping[str, bool],
    correct_current: Mapping[str, bool],
    weight: float,
    *,
    strict: bool = False,
) -> dict[str, float]:
    """Credit for changing other agents' minds between two consecutive rounds (MAPoRL-style influence terms).

    For every agent ``j`` that went from wrong to right, the agents other than ``j`` whose previous answer was right
    share ``+weight``; for every agent ``j`` that went from right to wrong, the agents other than ``j`` whose previous
    answer equals ``j``'s new wrong answer share ``-weight`` (an agent inventing a new wrong answer blames nobody).

    Args:
        previous: each agent's answer in the previous round.
        current: each agent's answer in this round.
        correct_previous: whether each previous answer was right.
        correct_current: whether each current answer is right.
        weight: the credit for one changed mind.
        strict: compare answers with the strict checker (``discussion-v1``).

    Returns:
        ``{agent: credit}`` for every agent in ``previous``.
    """
    credit = {agent: 0.0 for agent in previous}
    for j in previous:
        if not correct_previous[j] and correct_current[j]:
            sharers = [k for k in previous if k != j and correct_previous[k]]
            sign = 1.0
        elif correct_previous[j] and not correct_current[j] and current[j] is not None:
            sharers = [k for k in previous if k != j and previous[k] is not None
                       and is_equivalent(previous[k], current[j], strict=strict)]
            sign = -1.0
        else:
            continue
        for k in sharers:
            credit[k] += sign * weight / len(sharers)
    return credit
