"""Per-env training presets: compact prompts for the tiny CPU model and scripted demonstrations for a warm start.

A character-level 2-layer model cannot read a 1,500-character prompt in useful time, so a preset may render the
same information compactly on the policy side (the env is unchanged and still scores the raw completion). Every
preset is documented with what its prompt shows; none derives the answer for the model.

``plan_path-v0`` (compact): the grid rows with ``@`` (current position) and ``G`` (goal), one row per line, then
``T>`` for the tool or, for the planner, the plan line the tool's program printed and ``P>``. The tool answers with
a program that prints a plan (```` ```\\nprint('Actions: R,D')\\n``` ````) and the planner with ``Actions: R,D``.
Demonstrations come from the env's ``oracle`` planner (a shortest path from the current state), written in those
two formats.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from teamgym.rollout.engine import default_prompt

__all__ = ["Preset", "get_preset", "PRESETS"]


@dataclass(frozen=True)
class Preset:
    """How the trainer talks to one env by default.

    Attributes:
        prompt: ``(env, agent) -> prompt text`` given to the policy.
        demonstration: ``(env, agent) -> completion`` of a scripted expert for the warm-start SFT stage, or None.
        env_kwargs: env options the preset is tuned for (overridable from the config).
        max_tokens: completion budget that fits the preset's answers.
    """

    prompt: Callable[[Any, str], str] = default_prompt
    demonstration: Callable[[Any, str], str] | None = None
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    max_tokens: int = 256


def _plan_path_grid(env: Any) -> str:
    base = env.unwrapped
    board, goal = base.state.board, base.task.goal
    rows = []
    for r, row in enumerate(base.task.grid):
        rows.append("".join("@" if (r, c) == board else "G" if (r, c) == goal else ch for c, ch in enumerate(row)))
    return "\n".join(rows)


def _plan_line(text: str) -> str:
    for line in text.splitlines():
        if "Actions" in line:
            return line.strip()[:40]
    return "-"


def plan_path_prompt(env: Any, agent: str) -> str:
    """Compact ``plan_path`` prompt: the grid, then ``T>`` (tool) or the tool's printed plan line and ``P>``."""
    grid = _plan_path_grid(env)
    if agent == "tool":
        return f"{grid}\nT>"
    return f"{grid}\n{_plan_line(env.unwrapped.state.tool_output)}\nP>"


def plan_path_demonstration(env: Any, agent: str) -> str:
    """The oracle planner's shortest plan, as the tool's program or as the planner's answer."""
    plan = _plan_line(env.unwrapped.scripted_policy("planner", "oracle")(env.observe("planner")))
    if agent == "tool":
        return f"```\nprint('{plan}')\n```"
    return plan


PRESETS: dict[str, Preset] = {
    "plan_path-v0": Preset(prompt=plan_path_prompt, demonstration=plan_path_demonstration,
                           env_kwargs={"size": 4, "max_turns": 3}, max_tokens=40),
    # The learning sanity envs: their own prompts are already a few characters; answers are one character.
    **{env_id: Preset(max_tokens=2) for env_id in ("sanity_bandit-v0", "sanity_relay-v0", "sanity_two_turn-v0")},
}


def get_preset(env_id: str, prompt_format: str) -> Preset:
    """The preset of ``env_id`` for ``prompt_format`` (``"compact"`` when one exists, else the env's prompts)."""
    if prompt_format == "compact" and env_id in PRESETS:
        return PRESETS[env_id]
    return Preset()
