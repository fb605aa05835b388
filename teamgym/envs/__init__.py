"""The built-in envs. Each family lives in its own folder; registering one here imports nothing heavy (so each
registration says its one-line description itself, for ``teamgym.spec(id).description`` and ``teamgym list``).

The catalogue lists them, a page per id generated from each env's docstring: docs/envs/README.md. A new family
starts with ``teamgym new-env NAME``, which adds its ``register`` line here (CONTRIBUTING.md).
"""

from __future__ import annotations

from importlib.util import find_spec

from teamgym.registry import register

register("coder_tester-v0", "teamgym.envs.coder_tester.env:CoderTesterEnv",
         description="A coder and a tester write a solution and unit tests for a coding problem")
register("coder_tester-v1", "teamgym.envs.coder_tester.env:CoderTesterEnv", pay="bounded",
         description="A coder and a tester write a solution and unit tests for a coding problem (each term's "
                     "episode total bounded; the episode ends once the code is right)")
register("plan_path-v0", "teamgym.envs.planning.plan_path:PlanPathEnv",
         description="A tool agent and a planner find a shortest path on a grid with obstacles")
register("plan_path-v1", "teamgym.envs.planning.plan_path:PlanPathEnv", ends_on_goal=True,
         description="A tool agent and a planner find a shortest path on a grid with obstacles (a plan must end on "
                     "the goal)")
register("plan_path-v2", "teamgym.envs.planning.plan_path:PlanPathEnv", ends_on_goal=True, tool_plan="best",
         description="A tool agent and a planner find a shortest path on a grid with obstacles (a plan must end on "
                     "the goal; the tool is paid for its best plan, not every turn)")
register("sudoku-v0", "teamgym.envs.planning.sudoku:SudokuEnv",
         description="A tool agent and a planner fill a 4x4 or 9x9 sudoku")
register("sudoku-v1", "teamgym.envs.planning.sudoku:SudokuEnv", ends_on_goal=True, tool_plan="best",
         description="A tool agent and a planner fill a 4x4 or 9x9 sudoku (an answer must leave it solved, with no "
                     "more placements than empty cells; the tool is paid for its best plan)")
register("sokoban-v0", "teamgym.envs.planning.sokoban:SokobanEnv",
         description="A tool agent and a planner push every box onto a goal")
register("sokoban-v1", "teamgym.envs.planning.sokoban:SokobanEnv", progress="solution",
         description="A tool agent and a planner push every box onto a goal (progress: the share of a shortest "
                     "solution done)")
register("sokoban-v2", "teamgym.envs.planning.sokoban:SokobanEnv", progress="solution", tool_plan="best",
         description="A tool agent and a planner push every box onto a goal (progress: the share of a shortest "
                     "solution done; the tool is paid for its best plan, not every turn)")
register("math_tool-v0", "teamgym.envs.math_tool.env:MathToolEnv",
         description="A reasoner and a tool agent (Python) solve an exact-answer math problem")
register("math_tool-v1", "teamgym.envs.math_tool.env:MathToolEnv", pay_correct="once", strict_answers=True,
         description="A reasoner and a tool agent (Python) solve an exact-answer math problem (each agent's "
                     "correct term paid once; the strict answer checker)")
register("discussion-v0", "teamgym.envs.discussion.env:DiscussionEnv",
         description="N agents answer a math problem, discuss, then vote; the majority answer counts")
register("discussion-v1", "teamgym.envs.discussion.env:DiscussionEnv", strict_answers=True,
         description="N agents answer a math problem, discuss, then vote; the majority answer counts (the strict "
                     "answer checker)")
register("sanity_bandit-v0", "teamgym.envs.sanity.env:BanditEnv",
         description="Learning sanity check: one player answers the cue it sees (a one-turn contextual bandit)")
register("sanity_relay-v0", "teamgym.envs.sanity.env:RelayEnv",
         description="Learning sanity check: a speaker sees a cue, a listener hears the speaker and must repeat it")
register("sanity_two_turn-v0", "teamgym.envs.sanity.env:TwoTurnEnv",
         description="Learning sanity check: two turns, only the second turn's answer earns a reward")

# TextArena's games when its package is installed (`pip install 'teamgym[textarena]'`): without it they are not listed.
if find_spec("textarena") is not None:
    from teamgym.envs.textarena.env import GAMES

    for _game in GAMES:
        register(f"textarena/{_game}", "teamgym.envs.textarena.env:TextArenaEnv", game_id=_game,
                 description=f"TextArena's {_game} game, its {GAMES[_game]} players as roles")
