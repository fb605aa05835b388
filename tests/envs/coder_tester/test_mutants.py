from __future__ import annotations

import ast

from teamgym.envs.coder_tester.data import load_humaneval
from teamgym.envs.coder_tester.mutants import candidate_mutants, mutation_sites

SOLUTION = """
def helper(x):
    return x + 1

def f(xs, k):
    total = 0
    for x in xs:
        if x > k and x % 2 == 0:
            total += helper(x) * 2
    while total > 100:
        total -= 1
    return max(total, 0)
"""


def test_mutants_are_deterministic_distinct_and_parse():
    first = candidate_mutants(SOLUTION, entry_point="f", limit=8)
    assert first == candidate_mutants(SOLUTION, entry_point="f", limit=8)
    assert len(first) == len(set(first)) == 8
    for mutant in first:
        ast.parse(mutant)
        assert mutant != ast.unparse(ast.parse(SOLUTION)) + "\n"


def test_only_the_entry_point_outside_while_loops_is_mutated():
    original = ast.unparse(ast.parse(SOLUTION))
    helper = original.split("def f")[0]
    loop = original[original.index("while") : original.index("return max")]
    for mutant in candidate_mutants(SOLUTION, entry_point="f", limit=50):
        assert mutant.startswith(helper)
        assert loop in mutant


def test_every_humaneval_solution_has_mutation_sites():
    for problem in load_humaneval():
        tree = ast.parse(problem.solution)
        target = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == problem.entry_point][
            -1
        ]
        assert mutation_sites(target), problem.task_id


def test_unparseable_solution_gives_no_mutants():
    assert candidate_mutants("def f(:\n", entry_point="f") == []
    assert candidate_mutants("pass\n") == []
