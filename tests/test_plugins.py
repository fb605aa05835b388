"""Third-party envs register through the ``teamgym.envs`` entry-point group: build and install a tiny plugin."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PLUGIN_PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "teamgym-echo-plugin"
version = "0.0.1"

[project.entry-points."teamgym.envs"]
echo = "teamgym_echo_plugin:register_envs"
broken = "teamgym_echo_plugin:does_not_exist"
"""

PLUGIN_MODULE = '''
"""A third-party env: one agent must echo a number."""
from teamgym.core import Outcome, TurnBasedTextEnv, reward_terms


class EchoEnv(TurnBasedTextEnv):
    """Echo the number you are shown."""

    metadata = {"name": "echo-v0", "render_modes": ["ansi"], "is_parallelizable": True}
    roles = ("echoer",)

    def __init__(self, *, max_turns: int = 2, render_mode=None):
        super().__init__(max_turns=max_turns, render_mode=render_mode)

    def _task_from_id(self, task_id):
        return int(task_id) % 100

    def _initial_state(self, task):
        return {}

    def _system_prompt(self, agent):
        return ""

    def _user_prompt(self, agent):
        return f"Repeat {self.task}"

    def _apply_action(self, agent, action):
        ok = action.strip() == str(self.task)
        return Outcome({agent: reward_terms(team=float(ok))}, terminated=ok)


def register_envs():
    import teamgym
    teamgym.register("thirdparty/echo-v0", EchoEnv)
'''

CHECK = """
import teamgym
from teamgym.testing import check_env
assert "thirdparty/echo-v0" in teamgym.list_envs(), teamgym.list_envs()
env = teamgym.make("thirdparty/echo")
env.reset(seed=0)
env.step(str(env.task))
assert env.rewards["echoer"] == 1.0
check_env("thirdparty/echo-v0", num_garbage=200)
print("PLUGIN-OK")
"""


@pytest.mark.timeout(300)
def test_plugin_package_registers_envs(tmp_path: Path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "pyproject.toml").write_text(textwrap.dedent(PLUGIN_PYPROJECT))
    (source / "teamgym_echo_plugin.py").write_text(PLUGIN_MODULE)
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), str(source)],
        check=True,
        capture_output=True,
    )
    repo_root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(repo_root)])}
    result = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    assert "PLUGIN-OK" in result.stdout
    assert "skipping env plugin 'broken'" in result.stderr  # a broken plugin is reported, not fatal
