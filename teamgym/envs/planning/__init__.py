"""Planning envs (AT-GRPO's planning benchmarks): a ``tool`` agent writes a program that prints a plan, a
``planner`` agent reads it and makes the moves.

=================  ==========================================================================================
id                 task
=================  ==========================================================================================
``plan_path-v1``   shortest path on a 4x4 to 10x10 grid with obstacles (:mod:`.plan_path`; v0: a plan stops as soon
                   as it passes the goal)
``sudoku-v0``      fill a 4x4 or 9x9 sudoku with a unique solution (:mod:`.sudoku`)
``sokoban-v1``     push boxes onto goals in a small warehouse (:mod:`.sokoban`; v0: progress counts boxes on goals)
=================  ==========================================================================================

The protocol, the shared reward table and the plan format are documented in :mod:`.base` and :mod:`.parsing`.
"""
