r"""``math_tool-v0``: a tool agent writes Python, a reasoner answers in ``\boxed{}``; exact-answer math problems.

After AT-GRPO's math environment (Zhao et al., 2025, "Stronger Together: On-Policy Reinforcement Learning for
Collaborative LLMs", arXiv:2510.11062): a tool-using agent and a reasoning agent solve a problem together.

Agents and turn protocol
    ``tool`` then ``reasoner``, each turn. In turn ``t`` the tool writes a program (one ```` ```python ```` block;
    the last closed one counts) that prints the answer; it runs in :mod:`teamgym.sandbox` (one call per tool step)
    and the last non-empty line of its output is the tool's answer. The reasoner then sees the program and its
    output and answers with ``\boxed{...}``. From turn 1 on, the tool also sees its last program, its output and
    the reasoner's last answer, and the reasoner its own last answer. The episode **terminates** when the
    reasoner's answer is correct and equivalent to the tool's answer of the same turn; it is **truncated** after
    ``max_turns`` turns. (Through ``teamgym.make_parallel`` both agents decide at the start of the turn, so the
    reasoner answers without that turn's program; the AEC env gives the tool-then-reasoner protocol.)

Problems
    By default procedural (:mod:`teamgym.envs.math_tool.problems`): arithmetic, algebra, number theory and counting
    at difficulty 1-3, built from the task id (an int seed), so there is nothing to download and every problem is
    solvable. ``dataset="file.jsonl"`` uses a GSM8K, MATH, AIME-style or teamgym-schema file instead
    (:mod:`teamgym.envs.math_tool.data`). Answers are checked by value, never by string alone
    (:func:`~teamgym.envs.math_tool.answers.is_equivalent`: ``\frac12`` = ``0.5`` = ``1/2``).

Spaces
    Observation: ``Dict({"prompt": TextSpace(max_prompt_chars), "turn": Discrete(max_turns + 1)})``; action:
    ``TextSpace(max_action_chars)``, the raw completion.

Rewards (``rewards[agent] == alpha * team + local``; ``local`` is the sum of the agent's other terms)

    ================  ==========  ======================  ==================  ======================================
    term              agent       range                   default weight      meaning
    ================  ==========  ======================  ==================  ======================================
    ``team``          both        {0, 1}                  ``alpha`` = 1       the reasoner's current answer is
                                                                              correct, paid to both agents in the
                                                                              episode's last step (the reasoner's
                                                                              step that ends it); 0 before
    ``correct``       tool        {0, 1}                  1                   the program's printed answer is correct
                                                                              (v1: the first time only)
    ``format``        tool        {-format_penalty, 0}    ``format_penalty``  no (non-empty) Python code block
                                                          = 0.5
    ``exec_error``    tool        {-exec_penalty, 0}      ``exec_penalty``    the program failed (error, timeout,
                                                          = 0.25              memory, output limit, killed) or
                                                                              printed nothing
    ``correct``       reasoner    {0, 1}                  1                   its ``\boxed{}`` answer is correct
                                                                              (v1: the first time only)
    ``format``        reasoner    {-format_penalty, 0}    ``format_penalty``  no ``\boxed{...}`` in the reply (v1:
                                                                              or an empty one)
    ================  ==========  ======================  ==================  ======================================

    If the sandbox itself fails, the tool's step scores nothing and ``infos[agent]["infra_error"]`` says why (drop
    the sample). Why the team term waits for the end: the episode goes on while the tool disagrees, so a team term
    paid every turn would pay a right reasoner more the longer its tool stays wrong; paid once, the team return is
    the final answer's correctness (at most 1, which the oracle earns in turn 0). The ``correct`` terms stay
    turn-level, for per-turn credit as in AT-GRPO.

    **Why v1 pays ``correct`` once** (``pay_correct="once"``). In v0 it is paid at every turn, and the episode ends
    only when the reasoner is right *and* agrees with the tool, so a team that knows the answer earns more by never
    agreeing: a tool that prints an unreadable answer (``Answer: R``) after the reasoner's right one earns the
    reasoner 4 and the tool 1 over three turns, against 2 and 2 for the oracle (5 summed against 4); a reasoner
    that boxes a form of the answer the tool's printed value is judged not to agree with earned both agents 3.99.
    A policy trained on the summed reward learns to disagree. In v1 each agent's ``correct`` is paid the first time
    its answer is right, so an episode pays each agent at most 2, the oracle's return in turn 0. v1 also checks
    answers with the strict checker (``strict_answers=True``: :mod:`teamgym.envs.math_tool.answers` lists what it
    fixes: ``033`` read as 0, ``768 or more`` as 768, ``b - a`` as 1, ``\u221a22`` as ``2\sqrt2``...).

Infos (besides the base's ``reward_terms``, ``messages``...)
    tool: ``tool_status`` (the sandbox status or ``"no_code"``), ``tool_answer``, ``tool_correct``;
    reasoner: ``answer``, ``correct``, ``agrees_with_tool``. ``tool_answer`` and ``answer`` are ``None`` when no
    answer could be read (``""`` in :class:`~teamgym.wrappers.SingleAgentView`'s infos, which carry every key from
    ``reset``, ``tool_status`` then ``"not_run"``). Episode summary: ``final_correct``, ``agreed``,
    ``family``, ``difficulty``, ``answer`` (the reference).

Options (keyword-only)
    ``max_turns`` (3; or ``max_cycles``, PettingZoo's name for it), ``alpha`` (1.0, or a dict per agent),
    ``render_mode`` (``None``/``"ansi"``/``"human"``),
    ``difficulty`` (``None`` = drawn from the seed, or 1-3), ``families`` (``None`` = all, or a subset of
    ``arithmetic``, ``algebra``, ``number_theory``, ``counting``), ``dataset`` (``None`` or a JSONL path),
    ``code_timeout`` (1.0 s wall per program, the sandbox's default: the problems need milliseconds, but raise it
    if your tool imports sympy, which takes 0.3-0.7 s to load), ``code_memory_mb`` (512), ``code_packages``
    (``("sympy", "mpmath")``: the installed distributions a tool program may import besides the standard library;
    the sandbox shows it nothing else), ``format_penalty`` (0.5),
    ``exec_penalty`` (0.25), ``max_prompt_chars`` (16384), ``max_action_chars`` (16384), ``pay_correct``
    (``"every_turn"``, v0; ``"once"``, v1), ``strict_answers`` (``False``, v0; ``True``, v1: the strict checker,
    and an empty ``\boxed{}`` is no answer).

Scripted policies
    ``oracle`` (default; the tool prints the reference answer, the reasoner boxes it: team reward 1 in turn 0) and
    ``random`` (random small integers, sometimes no code block or no box), for both roles.

Version history
    v0: first version.
    v1: each agent's ``correct`` is paid once (v0 paid it every turn, and a team that knew the answer earned more
    by never agreeing); answers are checked with the strict checker, and an empty ``\boxed{}`` earns the format
    penalty (in v0 it cost nothing, as much as an honest wrong answer).

>>> import teamgym
>>> env = teamgym.make("math_tool-v0", difficulty=1)
>>> env.reset(seed=0)
>>> env.agent_selection
'tool'
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from teamgym import sandbox
from teamgym.core import Outcome, Policy, TurnBasedTextEnv, TurnRecord, clip_text, extract_boxed, reward_terms
from teamgym.core.text import select_code_block
from teamgym.envs.math_tool.answers import boxed_answer, is_equivalent
from teamgym.envs.math_tool.problems import MathProblem
from teamgym.envs.math_tool.prompts import REASONER_SYSTEM, TOOL_SYSTEM, reasoner_prompt, tool_prompt
from teamgym.envs.math_tool.source import ProblemSource
from teamgym.errors import InvalidArgumentError, SandboxError

__all__ = ["MathToolEnv", "MathToolState", "tool_answer_from_output"]


@dataclass
class MathToolState:
    """The mutable episode state: one entry per turn for each list."""

    tool_code: list[str | None] = field(default_factory=list)
    tool_output: list[str] = field(default_factory=list)
    tool_answer: list[str | None] = field(default_factory=list)
    answers: list[str | None] = field(default_factory=list)
    correct: bool = False
    agreed: bool = False
    infra_errors: int = 0
    #: the agents whose ``correct`` term has been paid (``pay_correct="once"`` pays it only the first time)
    paid: set[str] = field(default_factory=set)


def tool_answer_from_output(stdout: str) -> str | None:
    r"""The answer a program printed: the last non-empty line (a ``\boxed{}`` in it wins), or ``None``."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    if not lines:
        return None
    return extract_boxed(lines[-1]) or lines[-1]


class MathToolEnv(TurnBasedTextEnv[MathProblem, MathToolState]):
    """A tool agent (Python) and a reasoner (a boxed answer) solve an exact-answer math problem together."""

    metadata = {"name": "math_tool-v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}
    roles = ("tool", "reasoner")

    def __init__(
        self,
        *,
        max_turns: int = 3,
        alpha: float | Mapping[str, float] = 1.0,
        render_mode: str | None = None,
        difficulty: int | None = None,
        families: Sequence[str] | None = None,
        dataset: str | None = None,
        code_timeout: float = 1.0,
        code_memory_mb: int = 512,
        code_packages: Sequence[str] = ("sympy", "mpmath"),
        format_penalty: float = 0.5,
        exec_penalty: float = 0.25,
        max_prompt_chars: int = 16_384,
        max_action_chars: int = 16_384,
        max_cycles: int | None = None,
        pay_correct: str = "every_turn",
        strict_answers: bool = False,
    ):
        super().__init__(max_turns=max_turns, alpha=alpha, render_mode=render_mode,
                         max_prompt_chars=max_prompt_chars, max_action_chars=max_action_chars, max_cycles=max_cycles)
        self.source = ProblemSource(difficulty=difficulty, families=families, dataset=dataset)
        if isinstance(code_timeout, bool) or not isinstance(code_timeout, (int, float)) or not 0 < code_timeout <= 60:
            raise InvalidArgumentError(f"code_timeout={code_timeout!r}: expected seconds in (0, 60], e.g. 1.0")
        if isinstance(code_memory_mb, bool) or not isinstance(code_memory_mb, int) or code_memory_mb < 64:
            raise InvalidArgumentError(f"code_memory_mb={code_memory_mb!r}: expected an int >= 64, e.g. 512")
        for name, value in (("format_penalty", format_penalty), ("exec_penalty", exec_penalty)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise InvalidArgumentError(f"{name}={value!r}: expected a finite float >= 0 (0 turns the term off)")
        if isinstance(code_packages, str) or not all(isinstance(p, str) for p in code_packages):
            raise InvalidArgumentError(
                f"code_packages={code_packages!r}: expected a sequence of installed distribution names, "
                "e.g. ('sympy', 'mpmath'), or () for the standard library only"
            )
        if pay_correct not in ("every_turn", "once"):
            raise InvalidArgumentError(
                f"pay_correct={pay_correct!r}: expected 'once' (each agent's correct term is paid the first time its "
                "answer is right, math_tool-v1) or 'every_turn' (math_tool-v0)"
            )
        if not isinstance(strict_answers, bool):
            raise InvalidArgumentError(f"strict_answers={strict_answers!r}: expected True (math_tool-v1) or False")
        self.pay_correct = pay_correct
        self.strict_answers = strict_answers
        version = "v1" if pay_correct == "once" and strict_answers else "v0"
        self.metadata = {**self.metadata, "name": f"math_tool-{version}"}
        self.code_timeout = float(code_timeout)
        self.code_memory_mb = code_memory_mb
        self.code_packages = tuple(code_packages)
        self.format_penalty = float(format_penalty)
        self.exec_penalty = float(exec_penalty)

    # ------------------------------------------------------------------ tasks and prompts
    def task_ids(self) -> tuple[int | str, ...] | None:
        return self.source.task_ids()

    def _task_from_id(self, task_id: Any) -> MathProblem:
        return self.source.problem(task_id)

    def _initial_state(self, task: MathProblem) -> MathToolState:
        return MathToolState()

    def _system_prompt(self, agent: str) -> str:
        return TOOL_SYSTEM if agent == "tool" else REASONER_SYSTEM

    def _user_prompt(self, agent: str) -> str:
        state, turn = self.state, min(self.turn, self.max_turns - 1)
        if agent == "tool":
            last = turn - 1
            return tool_prompt(self.task.question, turn, _at(state.tool_code, last), _at(state.tool_output, last),
                               _at(state.answers, last))
        if len(state.tool_output) <= turn:  # the reasoner's prompt before the tool has acted in this turn
            return reasoner_prompt(self.task.question, turn, None, "(the tool has not acted yet this turn)",
                                   _at(state.answers, turn - 1))
        return reasoner_prompt(self.task.question, turn, _at(state.tool_code, turn), _at(state.tool_output, turn),
                               _at(state.answers, turn - 1))

    # ------------------------------------------------------------------ actions
    def _apply_action(self, agent: str, action: str) -> Outcome:
        return self._tool_step(action) if agent == "tool" else self._reasoner_step(action)

    def _programs(self, agent: str, action: str) -> list[sandbox.Program]:
        block = select_code_block(action) if agent == "tool" else None
        if block is None or not block.code.strip():
            return []
        return [sandbox.Program.of(block.code, timeout=self.code_timeout, memory_mb=self.code_memory_mb,
                                   packages=self.code_packages)]

    def _tool_step(self, action: str) -> Outcome:
        block = select_code_block(action)
        code = block.code if block is not None and block.code.strip() else None
        if code is None:
            self._record_tool(None, "(no code block)", None)
            terms = reward_terms(correct=0.0, format=-self.format_penalty, exec_error=0.0)
            return Outcome({"tool": terms}, info={"tool": {"tool_status": "no_code", "tool_answer": None,
                                                           "tool_correct": False}})
        try:
            result = sandbox.run_python(
                code, timeout=self.code_timeout, memory_mb=self.code_memory_mb, packages=self.code_packages
            )
            infra_error = result.infra_error or ""
        except SandboxError as err:
            result, infra_error = None, f"sandbox failed: {err}"
        if infra_error or result is None:
            self.state.infra_errors += 1
            self._record_tool(code, "(the sandbox failed; the program could not be run)", None)
            return Outcome({"tool": reward_terms()}, info={"tool": {"tool_status": "infra_error", "tool_answer": None,
                                                                    "tool_correct": False}},
                           infra_error=infra_error)
        answer = tool_answer_from_output(result.stdout) if result.status == "ok" else None
        output = result.stdout if result.status == "ok" else f"[{result.status}]\n{result.stdout}\n{result.stderr}"
        self._record_tool(code, output.strip(), answer)
        correct = self._is_correct(answer)
        failed = result.status != "ok" or answer is None
        terms = reward_terms(correct=self._pay("tool", correct), format=0.0,
                             exec_error=-self.exec_penalty if failed else 0.0)
        return Outcome({"tool": terms}, info={"tool": {"tool_status": result.status, "tool_answer": answer,
                                                       "tool_correct": correct}})

    def _record_tool(self, code: str | None, output: str, answer: str | None) -> None:
        self.state.tool_code.append(code)
        self.state.tool_output.append(clip_text(output, 4 * 1024))
        self.state.tool_answer.append(answer)

    def _reasoner_step(self, action: str) -> Outcome:
        answer = boxed_answer(action, strict=self.strict_answers)
        correct = self._is_correct(answer)
        tool_answer = _at(self.state.tool_answer, self.turn)
        agrees = answer is not None and tool_answer is not None and is_equivalent(tool_answer, answer,
                                                                                  strict=self.strict_answers)
        self.state.answers.append(answer)
        self.state.correct = correct
        self.state.agreed = agrees
        terminated = correct and agrees
        # The reasoner closes each turn, so its step in the last allowed turn is the episode's last step.
        last_step = terminated or self.turn + 1 >= self.max_turns
        team = float(correct) if last_step else 0.0
        format_term = -self.format_penalty if answer is None else 0.0
        terms = {"reasoner": reward_terms(team=team, correct=self._pay("reasoner", correct), format=format_term),
                 "tool": reward_terms(team=team)}
        info = {"reasoner": {"answer": answer, "correct": correct, "agrees_with_tool": agrees}}
        return Outcome(terms, terminated=terminated, info=info)

    def _is_correct(self, answer: str | None) -> bool:
        return is_equivalent(answer, self.task.answer, strict=self.strict_answers)

    def _pay(self, agent: str, correct: bool) -> float:
        """The ``correct`` term: 1.0 for a right answer, only the first time under ``pay_correct="once"``."""
        if not correct or (self.pay_correct == "once" and agent in self.state.paid):
            return 0.0
        self.state.paid.add(agent)
        return 1.0

    def _info_defaults(self, agent: str) -> dict[str, Any]:
        if agent == "tool":
            return {"tool_status": "not_run", "tool_answer": "", "tool_correct": False}
        return {"answer": "", "correct": False, "agrees_with_tool": False}

    # ------------------------------------------------------------------ episode summary
    def _is_success(self) -> bool:
        return self.state.correct

    def _team_progress(self) -> float:
        """1.0 once the reasoner's current answer is correct, else 0.0."""
        return float(self.state.correct)

    def _episode_extras(self) -> dict[str, Any]:
        return {"final_correct": self.state.correct, "agreed": self.state.agreed, "family": self.task.family,
                "difficulty": self.task.difficulty, "answer": self.task.answer,
                "infra_errors": self.state.infra_errors}

    # ------------------------------------------------------------------ scripted policies
    def _scripted_policies(self) -> dict[str, dict[str, Callable[[], Policy]]]:
        return {
            "tool": {"oracle": lambda: self._oracle_tool, "random": lambda: _random_policy(self, "tool")},
            "reasoner": {"oracle": lambda: self._oracle_reasoner, "random": lambda: _random_policy(self, "reasoner")},
        }

    def _oracle_tool(self, observation: Mapping[str, Any]) -> str:
        return f"```python\nprint({self.task.answer_plain!r})\n```"

    def _oracle_reasoner(self, observation: Mapping[str, Any]) -> str:
        return f"The program's output matches my derivation.\n\nFinal answer: \\boxed{{{self.task.answer}}}"

    # ------------------------------------------------------------------ rendering
    def _render_header(self) -> str:
        return (f"{super()._render_header()}\nproblem ({self.task.family}, level {self.task.difficulty}): "
                f"{self.task.question}\nreference answer: {self.task.answer}")

    def _render_record(self, record: TurnRecord) -> str:
        text = super()._render_record(record)
        if record.agent == "tool":
            output = _at(self.state.tool_output, record.turn) or ""
            answer = _at(self.state.tool_answer, record.turn)
            return f"{text}\n  [program output] {clip_text(output, 500)}\n  [tool answer] {answer}"
        answer = _at(self.state.answers, record.turn)
        verdict = "correct" if self._is_correct(answer) else "wrong"
        return f"{text}\n  [reasoner answer] {answer} ({verdict})"


def _at(values: list[Any], index: int) -> Any:
    return values[index] if 0 <= index < len(values) else None


def _random_policy(env: MathToolEnv, role: str) -> Policy:
    """Random small integers (a program printing one, or a boxed one); one reply in five is malformed.

    Seeded by the role, the task and the step, so that episodes are reproducible and differ from task to task.
    """

    def policy(observation: Mapping[str, Any]) -> str:
        rng = np.random.default_rng([zlib.crc32(role.encode()), zlib.crc32(str(env.task_id).encode()), env.num_steps])
        number = int(rng.integers(0, 100))
        if rng.random() < 0.2:
            return f"I think it is {number}."
        return f"```python\nprint({number})\n```" if role == "tool" else f"\\boxed{{{number}}}"

    return policy
