"""The prompts of ``math_tool-v0``: what the tool and the reasoner see each turn."""

from __future__ import annotations

from teamgym.core.text import clip_text

__all__ = ["TOOL_SYSTEM", "REASONER_SYSTEM", "tool_prompt", "reasoner_prompt", "CODE_CHARS", "OUTPUT_CHARS"]

#: How much of a program and of its output the other agent is shown.
CODE_CHARS = 2000
OUTPUT_CHARS = 1000

TOOL_SYSTEM = (
    "You are the tool agent of a two-agent math team (tool, then reasoner, each turn). Write one Python program in "
    "a ```python code block that computes the answer to the problem and prints the final answer, exactly (an "
    "integer, a fraction such as 3/7, or an expression such as 1 + sqrt(2)), on the last line of its output. The "
    "program runs in a sandbox with the standard library; the reasoner sees your program and its output."
)

REASONER_SYSTEM = (
    "You are the reasoner of a two-agent math team (tool, then reasoner, each turn). Solve the problem step by "
    "step. The tool agent has written and run a Python program for it: use its output as evidence, but check it. "
    "End your reply with the exact final answer in \\boxed{...}. The episode ends once your answer is right and "
    "agrees with the tool's."
)


def tool_prompt(question: str, turn: int, last_code: str | None, last_output: str | None,
                last_answer: str | None) -> str:
    """The tool's user prompt in ``turn``: the problem; later, its last program and the reasoner's answer."""
    parts = [f"Problem:\n{question}"]
    if turn > 0:
        code = clip_text((last_code or "").rstrip(), CODE_CHARS)
        parts.append(f"Your program in turn {turn - 1}:\n```python\n{code}\n```")
        parts.append(f"Its output:\n{clip_text(last_output or '(nothing)', OUTPUT_CHARS)}")
        parts.append(f"The reasoner's answer in turn {turn - 1}: {_show(last_answer)}")
        parts.append("The team has not settled on a right answer yet. Check the program and write a corrected one.")
    else:
        parts.append("Write the program.")
    return "\n\n".join(parts)


def reasoner_prompt(question: str, turn: int, code: str | None, output: str | None, last_answer: str | None) -> str:
    """The reasoner's user prompt in ``turn``: the problem, this turn's program and output, its own last answer."""
    parts = [f"Problem:\n{question}"]
    if code is None:
        parts.append("The tool wrote no program this turn.")
    else:
        parts.append(f"The tool's program (turn {turn}):\n```python\n{clip_text(code.rstrip(), CODE_CHARS)}\n```")
    parts.append(f"Its output:\n{clip_text(output or '(nothing)', OUTPUT_CHARS)}")
    if turn > 0:
        parts.append(f"Your answer in turn {turn - 1}: {_show(last_answer)}")
    parts.append("Give your reasoning, then the final answer in \\boxed{...}.")
    return "\n\n".join(parts)


def _show(answer: str | None) -> str:
    return "(no \\boxed{} answer)" if answer is None else f"\\boxed{{{clip_text(answer, 200)}}}"
