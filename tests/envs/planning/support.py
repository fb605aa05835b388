"""Helpers shared by the planning env tests: play an episode with named scripted policies."""

from __future__ import annotations

from typing import Any

from teamgym.testing import play_episode


def play(
    env: Any, seed: int, tool: str = "oracle", planner: str = "copy_tool"
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Play one episode with the named scripted policies; returns the episode summary and the step rows."""
    base = env.unwrapped
    policies = {
        "tool": base.scripted_policy("tool", tool),
        "planner": base.scripted_policy("planner", planner),
    }
    rows = play_episode(env, lambda agent, obs, info: policies[agent](obs), seed=seed)
    return rows[-1]["infos"][rows[-1]["agent"]]["teamgym_episode"], rows


def act(env: Any, action: str) -> dict[str, Any]:
    """Step the acting agent with ``action``; returns its infos after the step."""
    agent = env.agent_selection
    env.step(action)
    return env.infos[agent]
