"""The prompts of ``discussion-v0``: the same for every agent but for its name (the env is symmetric)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from teamgym.core.text import clip_text

__all__ = ["system_prompt", "user_prompt"]


def system_prompt(agent: str, agents: Sequence[str], rounds: int) -> str:
    """The system prompt of ``agent`` in a team of ``agents`` discussing for ``rounds`` rounds."""
    return (
        f"You are {agent}, one of {len(agents)} agents ({', '.join(agents)}) solving a math problem together. In "
        f"round 0 everyone answers on their own; then, for {rounds} discussion round(s), everyone sees the others' "
        "latest answers and reasoning and answers again: keep your answer if you are confident in it, change it if "
        "another argument convinces you. The team's answer is the majority of the final answers. Reason step by step "
        "and end every reply with your exact final answer in \\boxed{...}."
    )


def user_prompt(question: str, agent: str, round_index: int, own_last: str | None,
                others_last: Mapping[str, tuple[str | None, str]], rationale_chars: int) -> str:
    """What ``agent`` sees in ``round_index``: the problem and, from round 1, everyone's answers of the last round.

    Args:
        question: the problem.
        agent: the agent's name.
        round_index: the round (0 = the independent answers).
        own_last: the agent's own answer of the last round.
        others_last: ``{name: (answer, reply)}`` of the other agents in the last round.
        rationale_chars: how much of each reply to show.
    """
    parts = [f"Problem:\n{question}"]
    if round_index == 0:
        parts.append("Round 0: answer on your own.")
        return "\n\n".join(parts)
    parts.append(f"Round {round_index}. Your answer in round {round_index - 1}: {_show(own_last)}")
    for name, (answer, reply) in others_last.items():
        parts.append(f"{name} answered {_show(answer)} and wrote:\n{clip_text(reply.strip(), rationale_chars)}")
    parts.append(f"As {agent}, weigh these arguments and give your answer for round {round_index} in \\boxed{{...}}.")
    return "\n\n".join(parts)


def _show(answer: str | None) -> str:
    return "(no \\boxed{} answer)" if answer is None else f"\\boxed{{{clip_text(answer, 200)}}}"
