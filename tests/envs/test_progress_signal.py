"""Every built-in env reports the progress signal process-reward wrappers read: infos[agent]["progress"] in [0, 1]."""

from __future__ import annotations

import math

import pytest

import teamgym
from teamgym.testing import play_episode

ENVS = ["coder_tester-v0", "plan_path-v0", "plan_path-v1", "sudoku-v0", "sokoban-v0", "sokoban-v1", "math_tool-v0",
        "math_tool-v1", "discussion-v0", "discussion-v1"]


@pytest.mark.parametrize("env_id", ENVS)
def test_oracle_team_ends_at_full_progress_and_every_step_reports_it(env_id):
    env = teamgym.make(env_id)
    env.reset(seed=3)
    table = env.unwrapped.scripted_policies()
    policies = {role: env.unwrapped.scripted_policy(role, "oracle" if "oracle" in names else None)
                for role, names in table.items()}
    rows = play_episode(env, lambda agent, obs, info: policies[agent](obs), seed=3)
    for row in rows:
        for agent, info in row["infos"].items():
            value = info.get("progress")
            assert isinstance(value, float) and 0.0 <= value <= 1.0 and math.isfinite(value), (env_id, agent, value)
    final = rows[-1]["infos"]
    progress = {agent: info["progress"] for agent, info in final.items()}
    assert all(value == 1.0 for value in progress.values()), (env_id, progress)
