"""What the coder and the tester read: system prompts (the action formats) and per-turn user prompts.

Agents see each other's *extracted* code or tests, never the prose around them, so text written to manipulate the
other agent ("ignore your instructions...") reaches it only inside a code block, as code. The golden solution, the
ground-truth tests and the mutants never appear in a prompt as such; a problem's statement may show examples that are
also ground-truth tests (HumanEval's docstrings: by a string match, 281 of its 1,133 ground-truth tests, on 106 of its
164 problems), so a program that hard-codes the statement's examples passes those.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from teamgym.core.text import clip_text
from teamgym.envs.coder_tester.data import Problem, TestCase
from teamgym.envs.coder_tester.execution import Verdict

__all__ = ["coder_system", "tester_system", "coder_user", "tester_user", "format_failures"]


def coder_system(problem: Problem) -> str:
    """The coder's instructions for ``problem``'s style."""
    if problem.style == "call":
        how = (
            f"Write the complete Python function `{problem.entry_point}` (with any imports and helpers it needs). "
            "The imports and helper functions shown in the problem are available."
        )
    else:
        how = "Write a complete Python program that reads standard input and prints the answer to standard output."
    return (
        "You are the coder in a two-agent team: a tester writes unit tests for the same problem, and you see "
        f"which of them your code fails. {how} Reply with your code in one ```python block; if you write "
        "several blocks, the last one is used."
    )


def tester_system(problem: Problem, max_tests: int) -> str:
    """The tester's instructions for ``problem``'s style (the test format)."""
    if problem.style == "call":
        how = (
            f"Reply with one ```python block of `assert` statements that call `{problem.entry_point}`; each "
            "top-level assert is one test (other statements, e.g. imports or helpers, are shared by the asserts "
            "after them). Example:\n```python\n"
            f"assert {problem.entry_point}(...) == ...\n```"
        )
    else:
        how = (
            'Reply with one ```json block holding a list of tests, each {"input": "<stdin>", "output": '
            '"<expected stdout>"}. Example:\n```json\n[{"input": "1 2\\n", "output": "3\\n"}]\n```'
        )
    return (
        "You are the tester in a two-agent team: a coder writes the solution. Write unit tests that a correct "
        "solution passes and wrong solutions fail; you are rewarded for tests that are right and that catch "
        f"bugs. {how}\nAt most {max_tests} tests are read; if you write several blocks, the last one is used."
    )


# Object addresses in error messages (``<Foo object at 0x7f...>``) change from run to run; prompts must not.
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def format_failures(tests: Sequence[TestCase], verdicts: Sequence[Verdict], limit: int) -> str:
    """The failing tests as ``input / expected / actual`` entries, clipped to ``limit`` characters in all."""
    failing = [(t, v) for t, v in zip(tests, verdicts) if not v.passed]
    if not failing:
        return ""
    each = max(120, limit // len(failing))
    entries = []
    for test, verdict in failing:
        lines = [f"Test: {clip_text(test.shown or test.input, each // 2)}"]
        if verdict.expected or test.output:
            lines.append(f"Expected: {clip_text(verdict.expected or test.output, each // 4)}")
        got = verdict.actual if verdict.status == "wrong_answer" else f"{verdict.status}: {verdict.error}"
        lines.append(f"Actual: {clip_text(_ADDRESS.sub('0x...', got), each // 4)}")
        entries.append("\n".join(lines))
    return clip_text("\n\n".join(entries), limit)


def _tests_block(problem: Problem, tests: Sequence[TestCase]) -> str:
    if problem.style == "call":
        return "```python\n" + "\n".join(t.shown for t in tests) + "\n```"
    return (
        "```json\n" + json.dumps([{"input": t.input, "output": t.output} for t in tests], indent=1) + "\n```"
    )


def coder_user(
    problem: Problem,
    *,
    code: str,
    tests: Sequence[TestCase],
    verdicts: Sequence[Verdict],
    feedback_chars: int,
    turn: int,
) -> str:
    """The coder's prompt: the problem, then (after turn 0) its code and the tester's tests it fails."""
    parts = [f"Problem:\n{problem.question.strip()}"]
    if turn == 0 and not tests:
        parts.append("Write your solution.")
        return "\n\n".join(parts)
    parts.append(
        f"Your current code:\n```python\n{code.rstrip()}\n```" if code else "You have no working code yet."
    )
    if not tests:
        parts.append("The tester has not written any test that could be read.")
    elif not code:
        parts.append(
            f"The tester's tests ({len(tests)}):\n{clip_text(_tests_block(problem, tests), feedback_chars)}"
        )
    else:
        failed = sum(not v.passed for v in verdicts)
        parts.append(f"Your code passes {len(tests) - failed} of the tester's {len(tests)} tests.")
        failures = format_failures(tests, verdicts, feedback_chars)
        if failures:
            parts.append(f"Failing tests (the tests may be wrong, too):\n{failures}")
    parts.append("Revise your solution.")
    return "\n\n".join(parts)


def tester_user(
    problem: Problem,
    *,
    code: str,
    show_code: bool,
    tests: Sequence[TestCase],
    verdicts: Sequence[Verdict],
    feedback_chars: int,
    max_tests: int,
) -> str:
    """The tester's prompt: the problem, the coder's code (when shown) and how it did on the last tests."""
    parts = [f"Problem:\n{problem.question.strip()}"]
    if show_code:
        parts.append(
            f"The coder's current code:\n```python\n{clip_text(code.rstrip(), feedback_chars * 2)}\n```"
            if code
            else "The coder has no working code yet."
        )
    if tests:
        block = clip_text(_tests_block(problem, tests), feedback_chars)
        parts.append(f"Your previous tests:\n{block}")
        if code and verdicts:
            failures = format_failures(tests, verdicts, feedback_chars)
            failed = sum(not v.passed for v in verdicts)
            parts.append(f"The coder's code fails {failed} of them." + (f"\n{failures}" if failures else ""))
    parts.append(f"Write up to {max_tests} unit tests for this problem.")
    return "\n\n".join(parts)
