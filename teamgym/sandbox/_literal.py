"""Programs whose outcome is known without running them: literal bindings and prints of literals, syntax errors.

A tool agent often writes a program that only prints a constant (``print('Actions: U,R,R')``), after the env's
preamble of literal bindings (``grid = ['#...', ...]``, ``start = (0, 2)``). Such a program reads nothing, calls
nothing but the built-in ``print`` and cannot fail: its output is a function of its text. :func:`answer` computes
that output in the host **without executing anything** (``ast.parse``, then :func:`ast.literal_eval` of each bound
value), so the job skips its jail: a fork, namespaces and an interpreter's work, several milliseconds of CPU each.

A source that does not parse gets the jail's answer too: ``ast.parse`` runs the parser that the jail's ``compile``
runs first (nothing runs) and raises the same ``SyntaxError``, which the host formats as the jail's runner prints it
(status ``error``, exit code 1). Errors the compiler finds after parsing (``return`` outside a function) go to the
jail.

The accepted shape is narrow on purpose; anything else returns ``None`` and runs in the sandbox as usual:

- the source is ASCII, at most :data:`MAX_CODE` characters, has no backslash that is not a valid escape, and
  parses;
- every statement is ``NAME = <literal>`` (a literal as :func:`ast.literal_eval` reads it, whose ``str`` is the
  same in every process: strings, ints, floats, bools, ``None``, and tuples, lists and dicts of these; no sets, whose
  order follows the string hash seed, no bytes, no complex numbers), a bare literal (a docstring), or
  ``print(arg, ...)`` without keywords whose arguments are such literals or names bound above;
- no statement binds ``print``;
- the output is ASCII (so no encoding question arises) and within the job's ``output_limit``.

The result is what the jail returns for the same program (``tests/sandbox/test_literal.py`` runs a corpus, odd
escapes and near misses included, both ways), except ``duration``, which is 0.
"""

from __future__ import annotations

import ast
import re
import traceback
from typing import Any

from teamgym.sandbox.result import ExecResult, Job

__all__ = ["MAX_CODE", "answer"]

MAX_CODE = 4096
"""Longer sources go to the sandbox (this also keeps every int literal under Python's 4,300-digit ``str`` limit)."""

_PLAIN_SCALARS = (str, int, float, bool, type(None))


def answer(job: Job) -> ExecResult | None:
    """The result of ``job`` when its program is literal bindings and prints of them; ``None`` otherwise."""
    code = job.code
    if len(code) > MAX_CODE or not code.isascii() or _ODD_ESCAPE.search(code):
        return None
    try:
        tree = ast.parse(code, "solution.py")  # the parser the jail's compile() runs first
    except SyntaxError as exc:  # IndentationError and TabError too
        return _syntax_error(job, exc)
    except Exception:  # ValueError, RecursionError, MemoryError: the jail reports those
        return None
    bound: dict[str, Any] = {}
    lines: list[str] = []
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            if len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
                return None
            name = statement.targets[0].id
            if name == "print":
                return None
            value = _literal(statement.value, {})
            if value is _NOT_LITERAL:
                return None
            bound[name] = value
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a bare literal (a docstring) does nothing
        elif isinstance(statement, ast.Expr) and _is_print(statement.value):
            values = [_literal(arg, bound) for arg in statement.value.args]  # type: ignore[attr-defined]
            if any(value is _NOT_LITERAL for value in values):
                return None
            lines.append(" ".join(map(str, values)) + "\n")
        else:
            return None
    stdout = "".join(lines)
    if not stdout.isascii() or len(stdout) > job.output_limit:
        return None
    return ExecResult(status="ok", stdout=stdout, stderr="", returncode=0, duration=0.0)


_NOT_LITERAL = object()

# A backslash that is not a valid escape compiles with a warning, which newer Pythons print to stderr: such sources
# (raw strings and comments included, to keep this simple) go to the sandbox.
_ODD_ESCAPE = re.compile(r"\\(?![\n\\'\"abfnrtvxNuU0-7])")


def _syntax_error(job: Job, exc: SyntaxError) -> ExecResult | None:
    """What the jail reports for a source that does not parse: the program's runner compiles it as ``solution.py``
    and prints the exception without its own frame or context (``_program.run``)."""
    stderr = "".join(traceback.format_exception(type(exc), exc, None, chain=False))
    if not stderr.isascii() or len(stderr) > job.output_limit:
        return None
    return ExecResult(status="error", stdout="", stderr=stderr, returncode=1, duration=0.0)


def _literal(node: ast.expr, bound: dict[str, Any]) -> Any:
    """The value of a name bound above or of a literal whose ``str`` is the same in every process, else
    ``_NOT_LITERAL``."""
    if isinstance(node, ast.Name):
        return bound.get(node.id, _NOT_LITERAL)
    try:
        value = ast.literal_eval(node)
    except Exception:  # not a literal, or one that fails to build (an unhashable dict key)
        return _NOT_LITERAL
    return value if _plain(value) else _NOT_LITERAL


def _is_print(node: ast.expr) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
            and not node.keywords and not any(isinstance(arg, ast.Starred) for arg in node.args))


def _plain(value: Any, depth: int = 0) -> bool:
    """True for values whose ``str`` does not depend on the process (no sets: their order follows the hash seed)."""
    if depth > 100:
        return False
    if type(value) in _PLAIN_SCALARS:
        return True
    if type(value) in (tuple, list):
        return all(_plain(item, depth + 1) for item in value)
    if type(value) is dict:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    return False
