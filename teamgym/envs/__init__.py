"""The built-in envs. Each family lives in its own folder; registering one here imports nothing heavy.

========================  ==============================  ====================================================
id                        agents                          task
========================  ==============================  ====================================================
``coder_tester-v0``       coder, tester                   write a solution and unit tests for a coding problem
``plan_path-v0``          tool, planner                   shortest path on a grid with obstacles
``sudoku-v0``             tool, planner                   fill a 4x4 or 9x9 sudoku
``sokoban-v0``            tool, planner                   push boxes onto goals
``math_tool-v0``          reasoner, tool                  exact-answer math problems
``discussion-v0``         agent_0 ... agent_{N-1}         answer, then discuss, then vote on a math problem
========================  ==============================  ====================================================
"""

from __future__ import annotations

from teamgym.registry import register

register("coder_tester-v0", "teamgym.envs.coder_tester.env:CoderTesterEnv")
register("plan_path-v0", "teamgym.envs.planning.plan_path:PlanPathEnv")
register("sudoku-v0", "teamgym.envs.planning.sudoku:SudokuEnv")
register("sokoban-v0", "teamgym.envs.planning.sokoban:SokobanEnv")
register("math_tool-v0", "teamgym.envs.math_tool.env:MathToolEnv")
register("discussion-v0", "teamgym.envs.discussion.env:DiscussionEnv")
register("bandit-v0", "teamgym.envs.sanity.env:BanditEnv")
register("relay-v0", "teamgym.envs.sanity.env:RelayEnv")
register("two_turn-v0", "teamgym.envs.sanity.env:TwoTurnEnv")
