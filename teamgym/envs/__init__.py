"""The built-in envs. Each family lives in its own folder; registering one here imports nothing heavy.

The catalogue lists them, a page per id generated from each env's docstring: docs/envs/README.md. A new family
starts with ``teamgym new-env NAME``, which adds its ``register`` line here (CONTRIBUTING.md).
"""

from __future__ import annotations

from teamgym.registry import register

register("coder_tester-v0", "teamgym.envs.coder_tester.env:CoderTesterEnv")
register("plan_path-v0", "teamgym.envs.planning.plan_path:PlanPathEnv")
register("sudoku-v0", "teamgym.envs.planning.sudoku:SudokuEnv")
register("sokoban-v0", "teamgym.envs.planning.sokoban:SokobanEnv")
register("math_tool-v0", "teamgym.envs.math_tool.env:MathToolEnv")
register("discussion-v0", "teamgym.envs.discussion.env:DiscussionEnv")
