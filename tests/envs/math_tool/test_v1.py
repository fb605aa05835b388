"""math_tool-v1 and discussion-v1: the attacks on v0 that v1 closes, played through the envs.

v0 pays each agent's ``correct`` term at every turn and ends an episode only when the reasoner is right *and* agrees
with the tool, so a team that knows the answer earns more by never agreeing. And v0's answer checker reads ``033``
as ``0*33``, which lets a constant ``0`` score on zero-padded (AIME-style) references.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import teamgym
from teamgym.envs.math_tool.answers import is_equivalent, parse_answer

TASKS = range(40)
Role = Callable[[object], str]


def _print(value: str) -> str:
    return f"```python\nprint({value!r})\n```"


TOOLS: dict[str, Role] = {
    "oracle": lambda task: _print(task.answer_plain),
    "unreadable": lambda task: _print("Answer: " + task.answer_plain),  # a right value the checker cannot read
    "wrong": lambda task: _print("-123457"),
}


def _shifted(task) -> str:
    """A form of the answer that the reference accepts and the tool's printed value may be judged not to agree with
    (v0's tolerance was relative to whichever answer was the reference)."""
    value = parse_answer(task.answer).values[0]
    sign = "-" if value > 0 else "+"
    return rf"\boxed{{({task.answer_plain}) {sign} (1+{abs(value)})*(1-pi/10^50)/10^40}}"


REASONERS: dict[str, Role] = {
    "oracle": lambda task: rf"\boxed{{{task.answer}}}",
    "shifted": _shifted,
    "wrong": lambda task: r"\boxed{-123457}",
}


def _returns(env_id: str, tool: Role, reasoner: Role, task_id: int, **kwargs) -> dict[str, float]:
    env = teamgym.make(env_id, **kwargs)
    env.reset(seed=0, options={"task_id": task_id})
    task = env.unwrapped.task
    returns = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else (tool if agent == "tool" else reasoner)(task))
        for name, reward in env.rewards.items():
            returns[name] += reward
    return returns


def _mean_summed(env_id: str, tool: str, reasoner: str) -> float:
    return sum(sum(_returns(env_id, TOOLS[tool], REASONERS[reasoner], t).values()) for t in TASKS) / len(TASKS)


def test_v0_pays_a_team_that_never_agrees_more_than_the_oracle() -> None:
    """The attack, on v0: a tool printing a right answer the checker cannot read keeps the episode going, and the
    reasoner's ``correct`` is paid at each of the three turns (5 summed against the oracle's 4)."""
    oracle = _mean_summed("math_tool-v0", "oracle", "oracle")
    assert oracle == pytest.approx(4.0)
    assert _mean_summed("math_tool-v0", "unreadable", "oracle") == pytest.approx(5.0)


@pytest.mark.parametrize("tool", sorted(TOOLS))
@pytest.mark.parametrize("reasoner", sorted(REASONERS))
def test_v1_pays_no_team_more_than_the_oracle(tool: str, reasoner: str) -> None:
    for task_id in TASKS:
        returns = _returns("math_tool-v1", TOOLS[tool], REASONERS[reasoner], task_id)
        assert max(returns.values()) <= 2.0 and sum(returns.values()) <= 4.0, (task_id, returns)
    if (tool, reasoner) == ("oracle", "oracle"):
        assert _mean_summed("math_tool-v1", tool, reasoner) == pytest.approx(4.0)


def test_v1_pays_each_right_answer_once_and_still_credits_a_late_one() -> None:
    """A tool right from turn 0 is paid once; a reasoner right only at the last turn is still paid (and the team)."""
    turn = {"n": 0}

    def late_reasoner(task) -> str:
        turn["n"] += 1
        return rf"\boxed{{{task.answer}}}" if turn["n"] == 3 else r"\boxed{-123457}"

    returns = _returns("math_tool-v1", TOOLS["oracle"], late_reasoner, 0)
    assert returns == {"tool": 2.0, "reasoner": 2.0}
    turn["n"] = 0
    assert _returns("math_tool-v0", TOOLS["oracle"], late_reasoner, 0) == {"tool": 4.0, "reasoner": 2.0}


@pytest.fixture
def padded_dataset(tmp_path: Path) -> Path:
    path = tmp_path / "aime.jsonl"
    rows = [{"id": f"p{i}", "problem": f"Problem {i}: what is {v}?", "answer": f"{v:03d}"}
            for i, v in enumerate([33, 7, 450, 0, 99])]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.mark.parametrize(("env_id", "zero_scores"), [("math_tool-v0", 4), ("math_tool-v1", 1)])
def test_a_constant_zero_scores_on_zero_padded_references_only_in_v0(padded_dataset: Path, env_id: str,
                                                                     zero_scores: int) -> None:
    """v0 read ``033`` as ``0*33``: ``\\boxed{0}`` was right on every reference with a leading zero (4 of the 5:
    ``450`` has none), and ``33`` wrong; v1 only on ``000``."""
    env = teamgym.make(env_id, dataset=str(padded_dataset))
    scored = 0
    for task_id in env.unwrapped.task_ids():
        env.reset(seed=0, options={"task_id": task_id})
        env.step(_print("0"))
        env.step(r"\boxed{0}")
        scored += env.infos["reasoner"]["correct"]
    assert scored == zero_scores
    env.reset(seed=0, options={"task_id": "p0"})
    env.step(_print("33"))
    env.step(r"\boxed{33}")
    assert env.infos["reasoner"]["correct"] is (env_id == "math_tool-v1")


STRICT_EQUIVALENT = [
    ("033", "33"), ("007", "7"), ("00.5", "1/2"), ("45{,}360", "45360"), ("3+\u221a22", r"3+\sqrt{22}"),
    ("-5/2 + 3\u221a17/2", "(3*sqrt(17) - 5)/2"), (r"2\frac14", "9/4"), (r"-2\dfrac{1}{4}", "-9/4"),
    (r"2\frac{\pi}{3}", "2pi/3"), ("12 apples", "12"), ("5 cm", "5"), ("x+1", "1+x"), ("2xy", "2yx"),
    ("(2,5]", "(2,5]"), (r"\{5,2\}", r"\{2,5\}"), ("(1,2)", "1, 2"), ("2, 3", "3, 2"), ("x = 0.5", "1/2"),
    ("1e05", "100000"), ("0", "0"), ("10^{-3}", "0.001"),
]
#: Right answers in a form the reference is not written in (the other way round they differ: see below).
STRICT_ACCEPTED = [
    ("[-2, 3]", "-2, 3"), ("[3, 4]", "(3, 4)"), ("[1, 2]", r"\{1, 2\}"), ("(3, -2)", "-2, 3"), ("[2,5]", "2, 5"),
    ("12 times", "12"), ("3 more", "3"), ("15 more minutes", "15"), ("4 fewer students", "4"), ("3 at a time", "3"),
    ("9 more than Tom", "9"), ("5 min", "5"), (r"(2, 5]\text{ s}", "(2, 5]"), (r"x^2\frac{1}{2}", "x^2/2"),
    (r"2^3\frac12", "4"), (r"1/2\frac13", "1/6"), (r"3\cdot2\frac12", "15/2"), (r"3\cdot 2\frac12", "15/2"),
    (r"\left[2,5\right]\!", "(2,5)"),
]
STRICT_DIFFERENT = [
    ("0768", "0"), ("45 360", "45360"), ("45 360", "16200"), ("3+\u221a22", r"3 + 2\sqrt{2}"), (r"2\frac14", "1/2"),
    ("768 or more", "768"), ("768 or less", "768"), ("at least 768", "768"), ("about 768", "768"),
    ("more than 768", "768"), (r"768\text{ or more}", "768"), (r"768 \text{or more}", "768"), (r"768 or\ more", "768"),
    (r"768 at\,least", "768"), ("768 minimum", "768"), ("768 approx", "768"), ("768 upwards", "768"),
    ("b - a", "1"), ("y", "x + 1"), ("a+b+c+d+e+f+g+h + (h-8a)(b+c+d+e+f+g)", "a+b+c+d+e+f+g+h"),
    ("(2,5]", "[2,5)"), ("2, 5", "[2,5]"), ("(1, 2)", "(2, 1)"), (r"[2, 5)\%", "(2, 5)"),
    (r"(2, 5]\text{ s}", "(2, 5)"), ("0,033", "33"), ("1{,}5", "1.5"),
]


@pytest.mark.parametrize(("candidate", "reference"), STRICT_EQUIVALENT)
def test_the_strict_checker_accepts_right_forms_v0_misread(candidate: str, reference: str) -> None:
    assert is_equivalent(candidate, reference, strict=True)
    assert is_equivalent(reference, candidate, strict=True)


@pytest.mark.parametrize(("candidate", "reference"), STRICT_ACCEPTED)
def test_the_strict_checker_accepts_a_right_answer_in_another_form(candidate: str, reference: str) -> None:
    assert is_equivalent(candidate, reference, strict=True)


@pytest.mark.parametrize(("candidate", "reference"), STRICT_DIFFERENT)
def test_the_strict_checker_rejects_what_v0_misread(candidate: str, reference: str) -> None:
    assert not is_equivalent(candidate, reference, strict=True)


def test_the_strict_checker_keeps_the_default_verdicts_on_the_default_tables() -> None:
    """Everything the default checker's own tables hold stays so, but for what the strict one exists to fix."""
    from tests.envs.math_tool.test_answers import DIFFERENT, EQUIVALENT, GARBAGE

    for candidate, reference in EQUIVALENT:
        assert is_equivalent(candidate, reference, strict=True), (candidate, reference)
    for candidate, reference in DIFFERENT:
        assert not is_equivalent(candidate, reference, strict=True), (candidate, reference)
    for text in GARBAGE:
        assert parse_answer(text, strict=True) is None, text


def test_strict_closed_forms_are_symmetric() -> None:
    """v0's tolerance was relative to the reference only, so ``a`` could equal ``b`` while ``b`` did not equal ``a``."""
    shifted = "768 - 769*(1-pi/10^50)/10^40"
    assert is_equivalent(shifted, "768", strict=True) == is_equivalent("768", shifted, strict=True)
    assert is_equivalent(shifted, "768") != is_equivalent("768", shifted)


def test_discussion_v1_groups_votes_with_the_strict_checker() -> None:
    """Three agents box ``0768``, ``0`` and ``5``: v0 counts the first two as one group (``0768`` read as 0), a
    majority for 0; v1 finds no majority."""
    for env_id, majority in (("discussion-v0", "0768"), ("discussion-v1", None)):
        env = teamgym.make(env_id, num_agents=3, rounds=0)
        env.reset(seed=0)
        for answer in ("0768", "0", "5"):
            env.step(rf"\boxed{{{answer}}}")
        assert env.infos["agent_0"]["round_majority"] == majority, env_id


_PIECES = [*"0123456789{}[]()\\,.^_/ -+xy", r"\frac", r"\{", r"\}", "\u221a", r"\text{", "or", r"\cdot", r"\left"]


@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
@settings(max_examples=300, deadline=None)
def test_the_strict_checker_never_raises(text: str) -> None:
    assert isinstance(is_equivalent(text, "(2, 5]", strict=True), bool)
    assert isinstance(is_equivalent("12", text, strict=True), bool)


@pytest.mark.parametrize(("env_id", "penalty"), [("math_tool-v0", 0.0), ("math_tool-v1", -0.5)])
def test_an_empty_box_is_no_answer_in_v1(env_id: str, penalty: float) -> None:
    """v0 paid an empty ``\\boxed{}`` what it paid an honest wrong answer (0); v1 gives it the format penalty."""
    env = teamgym.make(env_id)
    env.reset(seed=0)
    env.step(_print("-123457"))
    env.step(r"I give up. \boxed{ }")
    assert env.rewards["reasoner"] == penalty


@pytest.mark.parametrize(("env_id", "penalty"), [("discussion-v0", 0.0), ("discussion-v1", -0.5)])
def test_an_empty_box_is_no_answer_in_discussion_v1(env_id: str, penalty: float) -> None:
    env = teamgym.make(env_id, num_agents=2, rounds=1)
    env.reset(seed=0)
    env.step(r"\boxed{}")
    assert env.rewards["agent_0"] == penalty
