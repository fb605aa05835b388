"""Deterministic mutants of a golden solution: the wrong programs a tester's tests must catch.

Classic mutation operators (DeMillo et al. 1978; the ``mutmut``/``PIT`` operator sets), one change per mutant:
comparison swaps (``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``, ``in`` <-> ``not in``, ``is`` <->
``is not``), arithmetic swaps (``+`` <-> ``-``, ``*`` -> ``+``, ``/`` and ``//`` -> ``*``, ``%`` -> ``//``),
``and`` <-> ``or``, dropping a ``not``, integer constants ``n`` -> ``n + 1``, ``True`` <-> ``False``, ``min``
<-> ``max``, ``any`` <-> ``all``, ``sum`` <-> ``len``, ``sorted``/``set`` -> ``list``, ``.upper`` <->
``.lower``, ``.startswith`` <-> ``.endswith``, swapping a call's first two arguments, and ``return value`` ->
``return None``.

Only the entry-point function is mutated for call-style problems (helpers from the prompt stay intact); the
whole program for stdio problems. Code inside ``while`` loops is left alone: mutating a loop condition or
counter mostly yields programs that never halt, which catch nothing and make scoring slow.
:func:`candidate_mutants` lists the mutation sites in AST order and picks up to ``limit`` of them spread
evenly over the program; the env then keeps those that fail at least one ground-truth test without timing out
(a mutant that passes every test is equivalent or undetectable, and would punish right tests).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

__all__ = ["candidate_mutants", "mutation_sites"]

_COMPARE_SWAPS: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_BINOP_SWAPS: dict[type, type] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
}
_BOOL_SWAPS: dict[type, type] = {ast.And: ast.Or, ast.Or: ast.And}
_NAME_SWAPS = {
    "min": "max",
    "max": "min",
    "any": "all",
    "all": "any",
    "sum": "len",
    "len": "sum",
    "sorted": "list",
    "set": "list",
}
_ATTRIBUTE_SWAPS = {"upper": "lower", "lower": "upper", "startswith": "endswith", "endswith": "startswith"}


def _mutable_nodes(root: ast.AST) -> Iterator[ast.AST]:
    """Nodes under ``root`` in a fixed order, not descending into ``while`` loops or nested docstrings."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        children = [c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.While)]
        stack.extend(reversed(children))


def mutation_sites(tree: ast.AST) -> list[tuple[int, str]]:
    """``(node index, operator)`` for every place a mutation applies, in ``_mutable_nodes`` order."""
    sites: list[tuple[int, str]] = []
    for index, node in enumerate(_mutable_nodes(tree)):
        if isinstance(node, ast.Compare):
            sites += [(index, f"compare:{i}") for i, op in enumerate(node.ops) if type(op) in _COMPARE_SWAPS]
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP_SWAPS:
            sites.append((index, "binop"))
        elif isinstance(node, ast.BoolOp) and type(node.op) in _BOOL_SWAPS:
            sites.append((index, "boolop"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            sites.append((index, "not"))
        elif isinstance(node, ast.Constant) and type(node.value) in (int, bool):
            sites.append((index, "constant"))
        elif isinstance(node, ast.Name) and node.id in _NAME_SWAPS and isinstance(node.ctx, ast.Load):
            sites.append((index, "name"))
        elif isinstance(node, ast.Attribute) and node.attr in _ATTRIBUTE_SWAPS:
            sites.append((index, "attribute"))
        elif (
            isinstance(node, ast.Call)
            and len(node.args) >= 2
            and not any(isinstance(a, ast.Starred) for a in node.args[:2])
        ):
            sites.append((index, "swap_args"))
        elif (
            isinstance(node, ast.Return)
            and node.value is not None
            and not (isinstance(node.value, ast.Constant) and node.value.value is None)
        ):
            sites.append((index, "return"))
    return sites


def _apply(tree: ast.AST, index: int, operator: str) -> ast.AST:
    """A copy of ``tree`` with one mutation applied at node ``index``."""
    mutated = copy.deepcopy(tree)
    parents: dict[int, tuple[ast.AST, str, int | None]] = {}
    nodes = list(_mutable_nodes(mutated))
    for parent in nodes:
        for name, value in ast.iter_fields(parent):
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, ast.AST):
                        parents[id(item)] = (parent, name, i)
            elif isinstance(value, ast.AST):
                parents[id(value)] = (parent, name, None)
    node = nodes[index]
    if operator.startswith("compare:"):
        i = int(operator.split(":")[1])
        node.ops[i] = _COMPARE_SWAPS[type(node.ops[i])]()
    elif operator == "binop":
        node.op = _BINOP_SWAPS[type(node.op)]()
    elif operator == "boolop":
        node.op = _BOOL_SWAPS[type(node.op)]()
    elif operator == "constant":
        node.value = (not node.value) if type(node.value) is bool else node.value + 1
    elif operator == "name":
        node.id = _NAME_SWAPS[node.id]
    elif operator == "attribute":
        node.attr = _ATTRIBUTE_SWAPS[node.attr]
    elif operator == "swap_args":
        node.args[0], node.args[1] = node.args[1], node.args[0]
    elif operator == "return":
        node.value = ast.Constant(value=None)
    elif operator == "not":
        parent, name, i = parents[id(node)]
        if i is None:
            setattr(parent, name, node.operand)
        else:
            getattr(parent, name)[i] = node.operand
    return mutated


def _target(module: ast.Module, entry_point: str) -> ast.AST:
    """The subtree to mutate: the last top-level ``def entry_point``, else the whole module."""
    if entry_point:
        defs = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == entry_point]
        if defs:
            return defs[-1]
    return module


def candidate_mutants(solution: str, *, entry_point: str = "", limit: int = 12) -> list[str]:
    """Up to ``limit`` distinct single-change mutants of ``solution``, spread evenly over its mutation sites.

    Deterministic: the same solution always gives the same list. Mutants identical in source to the solution
    (or to each other) are dropped. Returns ``[]`` when the solution does not parse or offers no site.
    """
    try:
        module = ast.parse(solution)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    target = _target(module, entry_point)
    sites = mutation_sites(target)
    if not sites or limit <= 0:
        return []
    if len(sites) > limit:
        sites = [sites[(i * len(sites)) // limit] for i in range(limit)]
    original = ast.unparse(module)
    seen = {original}
    mutants = []
    for index, operator in sites:
        mutated_target = _apply(target, index, operator)
        if target is module:
            mutated_module = mutated_target
        else:
            mutated_module = copy.copy(module)
            mutated_module.body = [mutated_target if n is target else n for n in module.body]
        source = ast.unparse(ast.fix_missing_locations(mutated_module))
        if source not in seen:
            seen.add(source)
            mutants.append(source + "\n")
    return mutants
