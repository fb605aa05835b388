"""Reading the agents' completions: the coder's program and the tester's tests. Never raises on model output.

Coder: the **last** closed fenced block tagged ``python``/``py``/``python3`` or untagged (an unclosed one only
when there is no closed one), via :func:`teamgym.core.text.select_code_block`. It must parse as Python.

Tester, call-style problems: the **last** Python block; each top-level ``assert`` in it is one test. The other
top-level statements (imports, helper functions, variables) are setup: each test runs the setup statements
that come before it, then its assert, so tests stay independent of one another and of the ground-truth tests.

Tester, stdio problems: the **last** ``json`` block holding a list of ``{"input": str, "output": str}``
objects; if there is none, ``input``/``output`` blocks read in pairs (a block tagged ``input`` followed by one
tagged ``output``). Items that do not fit are skipped and counted.

At most ``max_tests`` tests are kept (the first ones); duplicates count once.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass

from teamgym.core.text import extract_code_blocks, select_code_block
from teamgym.envs.coder_tester.data import TestCase

__all__ = ["ParsedCode", "ParsedTests", "parse_code", "parse_tests"]

_MAX_SOURCE = 200_000  # characters: longer blocks are not parsed (ast.parse on megabytes is slow)


@dataclass(frozen=True)
class ParsedCode:
    """The coder's program; ``problem`` is ``""``, ``"no_code_block"`` or ``"syntax_error"``."""

    code: str
    problem: str = ""


@dataclass(frozen=True)
class ParsedTests:
    """The tester's tests; ``skipped``: items that did not parse; ``problem``: ``""``, ``"no_test_block"``,
    ``"no_tests"``."""

    tests: tuple[TestCase, ...]
    skipped: int = 0
    problem: str = ""


def _parses(source: str) -> ast.Module | None:
    if len(source) > _MAX_SOURCE:
        return None
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


def parse_code(text: str) -> ParsedCode:
    """The program in a coder's completion (see the module docstring for which block is used)."""
    block = select_code_block(text)
    if block is None or not block.code.strip():
        return ParsedCode("", "no_code_block")
    if _parses(block.code) is None:
        return ParsedCode(block.code, "syntax_error")
    return ParsedCode(block.code)


def parse_tests(text: str, *, style: str, max_tests: int) -> ParsedTests:
    """The tests in a tester's completion for a ``"call"`` or ``"stdio"`` problem."""
    parsed = _call_tests(text) if style == "call" else _stdio_tests(text)
    if parsed.problem:
        return parsed
    unique: list[TestCase] = []
    seen: set[tuple[str, str]] = set()
    for test in parsed.tests:
        if (test.input, test.output) not in seen:
            seen.add((test.input, test.output))
            unique.append(test)
    kept = tuple(unique[:max_tests])
    return ParsedTests(kept, parsed.skipped, "" if kept else "no_tests")


def _call_tests(text: str) -> ParsedTests:
    block = select_code_block(text)
    if block is None:
        return ParsedTests((), 0, "no_test_block")
    module = _parses(block.code)
    if module is None:
        # Salvage: read the block line by line, keeping the top-level asserts that parse on their own.
        return _salvage_asserts(block.code)
    setup: list[str] = []
    tests: list[TestCase] = []
    for statement in module.body:
        source = ast.unparse(statement)
        if isinstance(statement, ast.Assert):
            tests.append(TestCase(input="\n".join([*setup, source]) + "\n", shown=source))
        else:
            setup.append(source)
    return ParsedTests(tuple(tests), 0, "" if tests else "no_tests")


def _salvage_asserts(code: str) -> ParsedTests:
    tests: list[TestCase] = []
    skipped = 0
    for line in code[:_MAX_SOURCE].splitlines():
        if not line.startswith("assert"):
            continue
        module = _parses(line)
        if module is not None and len(module.body) == 1 and isinstance(module.body[0], ast.Assert):
            source = ast.unparse(module.body[0])
            tests.append(TestCase(input=source + "\n", shown=source))
        else:
            skipped += 1
    return ParsedTests(tuple(tests), skipped, "" if tests else "no_tests")


def _stdio_tests(text: str) -> ParsedTests:
    blocks = extract_code_blocks(text)
    json_blocks = [b for b in blocks if b.language == "json"]
    if json_blocks:
        return _json_tests(json_blocks[-1].code)
    tests: list[TestCase] = []
    pending: str | None = None
    for block in blocks:
        if block.language == "input":
            pending = block.code
        elif block.language == "output" and pending is not None:
            tests.append(TestCase(input=pending, output=block.code, shown=pending))
            pending = None
    if not tests:
        return ParsedTests((), 0, "no_test_block")
    return ParsedTests(tuple(tests))


def _json_tests(code: str) -> ParsedTests:
    try:
        items = json.loads(code[:_MAX_SOURCE])
    except (json.JSONDecodeError, RecursionError, ValueError):
        return ParsedTests((), 1, "no_tests")
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list):
        return ParsedTests((), 1, "no_tests")
    tests: list[TestCase] = []
    skipped = 0
    for item in items:
        if (
            isinstance(item, dict)
            and isinstance(item.get("input"), str)
            and isinstance(item.get("output"), str)
        ):
            tests.append(TestCase(input=item["input"], output=item["output"], shown=item["input"]))
        else:
            skipped += 1
    return ParsedTests(tuple(tests), skipped, "" if tests else "no_tests")
