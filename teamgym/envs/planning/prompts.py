"""Prompts of the planning envs' two roles, in the spirit of AT-GRPO's planning agents (Stronger-MAS, arXiv
2510.11062; code pettingllms-ai/PettingLLMs, ``multi_agent_env/stateful``), reworded.

The ``tool`` writes a program that prints a plan; the ``planner`` reads the task, the program and its output
and answers with the moves that change the env. Every family fills the same templates with its own rules,
state and plan format.
"""

from __future__ import annotations

from teamgym.core.text import clip_text

__all__ = ["TOOL_SYSTEM", "PLANNER_SYSTEM", "tool_prompt", "planner_prompt", "CODE_CHARS", "OUTPUT_CHARS"]

#: How much of the tool's program and of its output the planner is shown (head and tail kept).
CODE_CHARS = 4000
OUTPUT_CHARS = 2000

TOOL_SYSTEM = (
    "You are the tool agent of a two-agent planning team. You solve the task by writing a Python program. "
    "The program runs in a sandbox that first defines the current state as Python variables; whatever it "
    "prints "
    "is shown to your teammate, the planner, who decides the moves. Print the plan in the format asked for; "
    "a search such as breadth-first search is usually the surest way to a correct, short plan."
)

PLANNER_SYSTEM = (
    "You are the planner of a two-agent planning team. You see the task, the program your teammate (the tool "
    "agent) wrote and what it printed. Check the printed plan against the task: adopt it if it is right, fix "
    "it or replace it if it is not. Your moves are applied to the real state, in order; reason briefly, then "
    "give your "
    "moves in the required format. Only the last plan line of your answer counts."
)


def tool_prompt(
    *, rules: str, state: str, preamble: str, plan_format: str, turn: int, max_turns: int, last_turn: str
) -> str:
    """The tool's user prompt: the task, the current state, its program's variables, the output format."""
    return (
        f"Task:\n{rules}\n\n"
        f"Current state (turn {turn + 1} of {max_turns}):\n{state}\n\n"
        f"{last_turn}"
        "Your program starts with these definitions (already made; do not redefine them):\n"
        f"```python\n{preamble}```\n\n"
        f"Output format: your program must print {plan_format}\n"
        "Write the whole program in one ```python code block."
    )


def planner_prompt(
    *,
    rules: str,
    state: str,
    code: str,
    status: str,
    output: str,
    plan_format: str,
    turn: int,
    max_turns: int,
    last_turn: str,
) -> str:
    """The planner's user prompt: the task, the current state, the tool's program and its output."""
    shown_code = clip_text(code, CODE_CHARS) if code.strip() else "(the tool agent wrote no program)"
    shown_output = clip_text(output, OUTPUT_CHARS) if output.strip() else "(no output)"
    return (
        f"Task:\n{rules}\n\n"
        f"Current state (turn {turn + 1} of {max_turns}):\n{state}\n\n"
        f"{last_turn}"
        f"The tool agent's program:\n```python\n{shown_code.rstrip()}\n```\n"
        f"Its output (status: {status}):\n```\n{shown_output}\n```\n\n"
        f"Answer format: end your answer with {plan_format}"
    )
