"""Scripted policies for ``coder_tester-v0``: baselines for ``teamgym play``, tests and benchmarks.

They read the env they were made from (the ground truth), so make them from the env they play in:

=========  ========  ==========================================================================================
role       name      writes
=========  ========  ==========================================================================================
coder      oracle    the golden solution (an empty program when the dataset has none)
coder      buggy     a mutant of the golden solution (a different one each turn; a stub when there is none)
tester     oracle    the ground-truth tests in the tester's format (loops wrapped in helper functions), capped
tester     lazy      one test that any program passes (``assert callable(f)``); for stdio problems one guess
                     that the program prints nothing for empty input
=========  ========  ==========================================================================================
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from teamgym.core import Policy

if TYPE_CHECKING:
    from teamgym.envs.coder_tester.env import CoderTesterEnv

__all__ = ["oracle_coder", "buggy_coder", "oracle_tester", "lazy_tester", "ground_truth_asserts"]


def _python(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


def oracle_coder(env: CoderTesterEnv) -> Policy:
    """Writes the problem's golden solution."""

    def policy(observation: Mapping[str, Any]) -> str:
        return "Here is the solution.\n" + _python(env.task.solution or "pass")

    return policy


def buggy_coder(env: CoderTesterEnv) -> Policy:
    """Writes mutant ``turn % len(mutants)`` of the golden solution (every one fails a ground-truth test)."""

    def policy(observation: Mapping[str, Any]) -> str:
        mutants = env.mutants(env.task)
        if mutants:
            return _python(mutants[env.turn % len(mutants)])
        stub = (
            f"def {env.task.entry_point}(*args, **kwargs):\n    return None"
            if env.task.entry_point
            else "pass"
        )
        return _python(stub)

    return policy


class _Rename(ast.NodeTransformer):
    def __init__(self, name: str):
        self.name = name

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return (
            ast.copy_location(ast.Name(id=self.name, ctx=node.ctx), node) if node.id == "candidate" else node
        )


def ground_truth_asserts(env: CoderTesterEnv) -> str:
    """A call-style problem's ground-truth tests as a tester's block: setup, then one assert per test."""
    problem = env.task
    rename = _Rename(problem.entry_point) if problem.entry_point.isidentifier() else None
    lines = []
    if problem.test_setup.strip():
        setup = ast.parse(problem.test_setup)
        lines.append(ast.unparse(rename.visit(setup) if rename else setup))
    for index, test in enumerate(problem.tests[: env.max_tests]):
        tree = ast.parse(test.input)
        tree = rename.visit(tree) if rename else tree
        if len(tree.body) == 1 and isinstance(tree.body[0], ast.Assert):
            lines.append(ast.unparse(tree))
        else:  # a loop of asserts: one test as a helper function
            body = "\n".join("    " + line for line in ast.unparse(tree).splitlines())
            lines.append(
                f"def _ground_truth_{index}():\n{body}\n    return True\nassert _ground_truth_{index}()"
            )
    return "\n".join(lines)


def oracle_tester(env: CoderTesterEnv) -> Policy:
    """Writes the ground-truth tests (the first ``max_tests``)."""

    def policy(observation: Mapping[str, Any]) -> str:
        problem = env.task
        if problem.style == "call":
            return _python(ground_truth_asserts(env))
        tests = [{"input": t.input, "output": t.output} for t in problem.tests[: env.max_tests]]
        return "```json\n" + json.dumps(tests) + "\n```"

    return policy


def lazy_tester(env: CoderTesterEnv) -> Policy:
    """Writes one test that tells nothing apart."""

    def policy(observation: Mapping[str, Any]) -> str:
        problem = env.task
        if problem.style == "call":
            return _python(f"assert callable({problem.entry_point})")
        return '```json\n[{"input": "", "output": ""}]\n```'

    return policy
