"""``coder_tester-v0``: a coder writes a solution, a tester writes unit tests, each learns from the other's.

>>> import teamgym
>>> env = teamgym.make("coder_tester-v0")
>>> env.reset(seed=0, options={"task_id": "HumanEval/0"})
>>> env.agent_selection
'coder'

Anchors: AT-GRPO's code env (Stronger-MAS, arXiv 2510.11062; pettingllms-ai/PettingLLMs), whose turn structure
this follows, and CURE (arXiv 2506.03136), whose execution-matrix rewards score the tester. Unlike AT-GRPO's
env, the tester is judged against the golden solution (tests must be *right*) and against wrong programs made
by the env (tests must *discriminate*), so neither vacuous nor wrong tests pay.

**Agents** ``coder`` and ``tester``, one problem per episode. Turn 0: the coder writes a solution, the tester
writes unit tests. Later turns: each sees the execution feedback (which of the tester's latest tests the
current code fails, with input / expected / actual, clipped to ``feedback_chars``) and revises. Default order
(AT-GRPO): coder, then tester, who sees the coder's current code. The episode **terminates** at the end of a
turn in which the current code passes every test of the tester's latest suite, provided that suite has at
least one test (no test written is never "all passed"), and in v1 also at the end of a turn in which it passes
every ground-truth test; otherwise it is truncated after ``max_turns``.

**Spaces**: observations ``Dict(prompt: TextSpace, turn: Discrete(max_turns + 1))``; actions: the raw
completion. Action formats (details in :mod:`~teamgym.envs.coder_tester.parsing`): the coder's program is its
*last* ``python`` block; the tester's tests are, for function problems, the top-level ``assert`` statements of
its *last* ``python`` block, for stdin/stdout problems the *last* ``json`` block (a list of ``{"input",
"output"}``). At most ``max_tests``.

**Rewards** (per agent-turn; ``reward = alpha * team + local``, ``local`` = the sum of the agent's other
terms):

=================  ======  ==========  ======  ==============================================================
term               agent   range       weight  meaning
=================  ======  ==========  ======  ==============================================================
``team``           both    [0, 1]      alpha   fraction of the ground-truth tests the current code passes
                                               (v1: its change, in [-1, 1], paid to both on the coder's
                                               step)
``pass_rate``      coder   [0, 1]      1       fraction of the tester's latest tests the code passes, counting
                                               only *valid* ones (the golden solution passes them) when the
                                               problem has a solution; 0 while there are none (v1: what
                                               it adds to its best earlier value, also when new tests
                                               judge the same code, on the tester's step)
``format``         coder   {-1, 0}     1       -1: no code block, or the code does not parse (the code then
                                               counts as absent: ``team`` 0)
``discrimination`` tester  [-1, 1]     1       mean over its tests of CURE's test reward (see ``rewards``):
                                               +share of wrong programs a right test fails, -share of wrong
                                               programs a wrong test lets pass; 0 without a correct program
                                               (v1: a positive value only beyond its best earlier one)
``validity``       tester  [-1, 0]     1       -share of its tests that a correct program fails (catches the
                                               wrong tests CURE scores 0, e.g. ones every program fails)
``format``         tester  {-1, 0}     1       -1: no test could be read
=================  ======  ==========  ======  ==============================================================

**Why v1 bounds the pay** (``pay="bounded"``). v0 pays ``team`` (a level) to both agents at every step, and
``pass_rate`` and ``discrimination`` every turn, while the episode goes on until the code passes the tester's latest
suite, so a team earns more the longer it keeps an episode open. A tester that adds one failing test (``assert
False``, or one on behaviour the statement leaves open) to an honest suite keeps a right coder's episode going to the
turn limit: 12.6 summed over both agents against 2.7 for the same team ending at once, over all 194 bundled problems
(192 of them pay more). A coder wrong at turn 0 and right at turn 1 earned 2 against 1 for right at once, and one
right except on one of the tester's inputs most (5.7). Every estimator that scores the summed reward learns that.
In v1 ``team`` is paid as its change (an episode's ``team`` terms add up to the final pass rate), ``pass_rate`` and
``discrimination`` only beyond the best value the agent was paid earlier in the episode (so their totals are at
most 1 each), penalties every turn, and the episode also ends at the end of a turn in which the code passes every
ground-truth test. The coder's wrong attempts are no longer programs the tester is judged on (a coder wrong on
purpose gave its tester another program to catch, and more ``discrimination``); its right ones still are. The
coder's code is judged on each new suite as well (its ``pass_rate`` then arrives on the tester's step), so a coder
right at turn 0 earns what one right later earns. What is left: a coder that hard-codes the tester's visible tests
still earns ``pass_rate`` (at most 1 per episode in v1) without ``team``.

Programs in the tester's matrix: correct ones (the golden solution, coder attempts passing every ground-truth
test) and wrong ones (``num_mutants`` deterministic mutants of the golden solution, each failing some
ground-truth test; in v0 every earlier failing coder attempt; attempts that time out on a ground-truth test are
left out as they would reward any test). Trivial tests (``assert True``) pass everything: no discrimination. Tests
that every program fails are invalid. A tester cannot see or import the golden solution (it is in no prompt,
and golden and mutants are formatted alike, so source inspection does not tell them apart).

**Bad input** never raises. No code block / unparseable code: coder ``format`` -1 and no code. Several blocks:
the last one. Code that never halts: each test times out after ``timeout`` s (fails). Huge outputs: capped by
the sandbox, the test fails. Tests that do not parse: skipped (salvaged line by line when the block as a whole
does not parse); none left: tester ``format`` -1. Prompt injection: agents only see each other's extracted
code or tests. Sandbox failures: ``infos[agent]["infra_error"]`` is set, every agent's terms are 0
and the action is not adopted (drop the sample).

**Process signals** (``infos[agent]``): coder: ``gt_verdicts`` (per ground-truth test), ``test_verdicts`` (per
tester test), ``pass_rate_delta`` (change of the ground-truth pass rate this step), ``code_problem``; tester:
``test_valid`` (per test; ``None`` = unjudgeable), ``test_rewards`` (CURE, per test), ``kill_rate`` (share of
wrong programs failing a valid test), ``p_01``/``p_00`` (CURE's precision diagnostics), ``num_tests``,
``skipped_tests``, ``code_verdicts``, ``tests_problem``. ``kill_rate``, ``p_01`` and ``p_00`` are ``None`` when
undefined (no wrong program, no valid test): ``-1.0`` in :class:`~teamgym.wrappers.SingleAgentView`'s infos, which
carry every key from ``reset``; the per-test lists change length from step to step.

**Options**: ``dataset`` (``"humaneval"``, ``"stdio"``, ``"all"``, a file or a hub name; see ``adapters``),
``dataset_format``, ``split`` (hub split), ``limit`` (first N problems), ``max_turns`` (4;
or ``max_cycles``, PettingZoo's name for it), ``turn_order``
(``"coder_first"`` as AT-GRPO, or ``"tester_first"``: tests written from the statement alone, then code),
``tester_sees_code`` (True), ``feedback_chars`` (2000), ``timeout`` (1.0 s per test, CURE's limit),
``num_mutants`` (4), ``max_tests`` (20), ``alpha`` (1.0), ``render_mode``, ``pay`` (``"every_turn"``, v0;
``"bounded"``, v1).

**Data** (``load_problems`` in :mod:`~teamgym.envs.coder_tester.adapters`): HumanEval and the ``stdio``
problems are bundled. Any other dataset is best used from a local copy (no network at ``make``), saved once with
``datasets.load_dataset(name, split=...).to_json("copy.jsonl")`` and passed as ``dataset="copy.jsonl"``; its
format is guessed from its fields (or set ``dataset_format``):

=================  ========================================  =================  ===================================
dataset            hub name                                  format             notes
=================  ========================================  =================  ===================================
CodeContests       ``deepmind/code_contests``                ``codecontests``   stdio; public + private tests
APPS               ``codeparrot/apps``                       ``apps``           stdio, or call style (``fn_name``)
LiveCodeBench      ``livecodebench/code_generation_lite``    ``livecodebench``  no solutions: tests are judged by
                                                                                correct coder attempts (v1: and
                                                                                no wrong program, so the tester's
                                                                                ``discrimination`` is 0)
CURE               ``Gen-Verse/CodeContests``                ``cure``           stdio
MBPP, sanitized    ``google-research-datasets/mbpp``         ``mbpp``           call style; the first test is shown
                                                                                with the statement
MBPP+              ``evalplus/mbppplus``                     ``mbpp``           read through its ``test_list``
your own           (none)                                    ``jsonl``          the JSONL contract of ``data``
=================  ========================================  =================  ===================================

A hub name works too when the hub is reachable (or cached, with ``HF_DATASETS_OFFLINE=1``); when it is not, a
``DatasetError`` says so within seconds and names this fix.

**Judging**: every test runs in the sandbox's judge, a jailed process apart from the program that calls the
program's entry point with plain data (see :mod:`teamgym.sandbox.harness`); the problem's helpers (HumanEval's
``poly``, ``encode_cyclic``...) and modules are the judge's own, so a program earns a pass only by answering
calls correctly. The tester's tests get a judge of their own, never the ground truth's. A test sees only the
entry point's behaviour (not the program's source), so it cannot target how a mutant was written.

Version history: v0, the first version; v1 (``pay="bounded"``): each term's episode total is bounded by what one
turn can earn, and the episode ends once the code passes every ground-truth test (above, "Why v1 bounds the pay").
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from teamgym import sandbox
from teamgym.core import Outcome, Policy, TurnBasedTextEnv, reward_terms
from teamgym.envs.coder_tester import policies, prompts
from teamgym.envs.coder_tester.adapters import load_problems
from teamgym.envs.coder_tester.data import Problem, TestCase
from teamgym.envs.coder_tester.execution import Verdict, declare, execute, execute_suites, first_infra_error
from teamgym.envs.coder_tester.mutants import candidate_mutants
from teamgym.envs.coder_tester.parsing import parse_code, parse_tests
from teamgym.envs.coder_tester.rewards import (
    cure_test_rewards,
    pass_rate,
    precision,
    suite_kill_rate,
    validity,
)
from teamgym.errors import InvalidArgumentError

__all__ = ["CoderTesterEnv", "EpisodeState", "Attempt"]

TURN_ORDERS = {"coder_first": ("coder", "tester"), "tester_first": ("tester", "coder")}
#: How the terms are paid (``CoderTesterEnv(pay=...)``; module docstring, "Why v1 bounds the pay").
PAYMENTS = ("every_turn", "bounded")

# (problem, num_mutants, timeout) -> the mutants kept; problems are frozen and hashable. Only successful
# computations are stored (a sandbox failure is retried next time).
_MUTANT_CACHE: dict[tuple[Problem, int, float], tuple[str, ...]] = {}


@dataclass(frozen=True)
class Attempt:
    """A program the coder submitted: does it pass every ground-truth test, may it be scored."""

    code: str
    correct: bool
    scored: bool


@dataclass
class EpisodeState:
    """The mutable part of an episode (the problem itself is the env's immutable task)."""

    code: str = ""
    team: float = 0.0
    #: under ``pay="bounded"``: the best ``pass_rate`` and ``discrimination`` paid so far this episode
    best: dict[str, float] = field(default_factory=dict)
    attempts: list[Attempt] = field(default_factory=list)
    tests: tuple[TestCase, ...] = ()
    test_valid: list[bool | None] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    passed_tests: bool = False


class CoderTesterEnv(TurnBasedTextEnv[Problem, EpisodeState]):
    """A coder and a tester solve a coding problem together; see the module docstring."""

    metadata = {"name": "coder_tester-v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}
    roles = ("coder", "tester")

    def __init__(
        self,
        *,
        dataset: str = "humaneval",
        dataset_format: str = "auto",
        split: str = "test",
        limit: int | None = None,
        max_turns: int = 4,
        turn_order: str = "coder_first",
        tester_sees_code: bool = True,
        feedback_chars: int = 2000,
        timeout: float = 1.0,
        num_mutants: int = 4,
        max_tests: int = 20,
        alpha: float | dict[str, float] = 1.0,
        render_mode: str | None = None,
        max_cycles: int | None = None,
        pay: str = "every_turn",
    ):
        if pay not in PAYMENTS:
            raise InvalidArgumentError(
                f"pay={pay!r}: expected 'bounded' (coder_tester-v1: each term's episode total is bounded by what one "
                "turn can earn, and the episode ends once the code is right) or 'every_turn' (coder_tester-v0)"
            )
        self.pay = pay
        self.metadata = {**self.metadata, "name": "coder_tester-v1" if pay == "bounded" else "coder_tester-v0"}
        if turn_order not in TURN_ORDERS:
            raise InvalidArgumentError(f"turn_order={turn_order!r}: expected one of {sorted(TURN_ORDERS)}")
        for name, value, low in (
            ("feedback_chars", feedback_chars, 100),
            ("num_mutants", num_mutants, 0),
            ("max_tests", max_tests, 1),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise InvalidArgumentError(f"{name}={value!r}: expected an int >= {low}")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise InvalidArgumentError(f"limit={limit!r}: expected None (all problems) or an int >= 1")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 60:
            raise InvalidArgumentError(f"timeout={timeout!r}: expected seconds per test in (0, 60], e.g. 1.0")
        super().__init__(
            max_turns=max_turns, alpha=alpha, render_mode=render_mode, agents=TURN_ORDERS[turn_order],
            max_cycles=max_cycles,
        )
        self.problems = load_problems(dataset, dataset_format=dataset_format, split=split, limit=limit)
        self._by_id = {p.task_id: p for p in self.problems}
        self._ids = tuple(self._by_id)
        self.tester_sees_code = bool(tester_sees_code)
        self.feedback_chars = feedback_chars
        self.timeout = float(timeout)
        self.num_mutants = num_mutants
        self.max_tests = max_tests
        self._mutant_infra = ""

    # ------------------------------------------------------------------ tasks
    def task_ids(self) -> tuple[str, ...]:
        return self._ids

    def _task_from_id(self, task_id: str) -> Problem:
        return self._by_id[task_id]

    def _initial_state(self, task: Problem) -> EpisodeState:
        self.mutants(task)
        return EpisodeState()

    def _team_progress(self) -> float:
        """The share of ground-truth tests the current code passes (the ``team`` term)."""
        return self.state.team

    def golden(self, problem: Problem) -> str | None:
        """The golden solution, formatted as the mutants are (``ast.unparse``), or ``None``."""
        if problem.solution is None:
            return None
        try:
            return ast.unparse(ast.parse(problem.solution)) + "\n"
        except (SyntaxError, ValueError, RecursionError):
            return problem.solution

    def _mutant_key(self, problem: Problem) -> tuple[Problem, int, float]:
        return problem, self.num_mutants, self.timeout

    def mutants(self, problem: Problem) -> tuple[str, ...]:
        """Up to ``num_mutants`` golden-solution mutants that fail a ground-truth test.

        Cached per (problem, num_mutants, timeout) for the whole process, so that the many env copies of a rollout
        (or of ``check_env``) compute each problem's mutants once.

        Candidates that pass every test, time out, or meet a sandbox failure are dropped; a sandbox failure is
        also reported as ``infra_error`` at the tester's next step and the list is recomputed next time.
        """
        key = self._mutant_key(problem)
        if key in _MUTANT_CACHE:
            return _MUTANT_CACHE[key]
        golden = self.golden(problem)
        if golden is None or self.num_mutants == 0:
            return ()
        candidates = candidate_mutants(golden, entry_point=problem.entry_point, limit=3 * self.num_mutants)
        matrix = execute(problem, candidates, problem.tests, timeout=self.timeout)
        infra = first_infra_error(matrix)
        if infra:
            self._mutant_infra = infra
            return ()
        kept = tuple(
            code
            for code, row in zip(candidates, matrix)
            if not all(v.passed for v in row) and not any(v.status == "timeout" for v in row)
        )
        _MUTANT_CACHE[key] = kept[: self.num_mutants]
        return _MUTANT_CACHE[key]

    # ------------------------------------------------------------------ prompts
    def _system_prompt(self, agent: str) -> str:
        if agent == "coder":
            return prompts.coder_system(self.task)
        return prompts.tester_system(self.task, self.max_tests)

    def _user_prompt(self, agent: str) -> str:
        state = self.state
        if agent == "coder":
            return prompts.coder_user(
                self.task,
                code=state.code,
                tests=state.tests,
                verdicts=state.verdicts,
                feedback_chars=self.feedback_chars,
                turn=self.turn,
            )
        return prompts.tester_user(
            self.task,
            code=state.code,
            show_code=self.tester_sees_code,
            tests=state.tests,
            verdicts=state.verdicts,
            feedback_chars=self.feedback_chars,
            max_tests=self.max_tests,
        )

    # ------------------------------------------------------------------ steps
    def _apply_action(self, agent: str, action: str) -> Outcome:
        outcome = self._coder_step(action) if agent == "coder" else self._tester_step(action)
        ends_turn = agent == self.agents[-1]
        state = self.state
        if ends_turn and not outcome.infra_error:
            state.passed_tests = bool(state.code and state.tests and state.verdicts) and all(
                v.passed for v in state.verdicts
            )
            if state.passed_tests or (self.pay == "bounded" and state.team == 1.0):
                return Outcome(outcome.terms, terminated=True, info=outcome.info)
        return outcome

    def _coder_step(self, action: str) -> Outcome:
        problem, state = self.task, self.state
        parsed = parse_code(action)
        before = state.team
        if parsed.problem:
            state.code, state.team, state.verdicts = "", 0.0, []
            info = {
                "gt_verdicts": [False] * len(problem.tests),
                "test_verdicts": [],
                "pass_rate_delta": -before,
                "code_problem": parsed.problem,
            }
            if self.pay == "bounded":
                return Outcome({"coder": reward_terms(team=-before, pass_rate=0.0, format=-1.0),
                                "tester": reward_terms(team=-before)}, info={"coder": info})
            terms = reward_terms(team=0.0, pass_rate=0.0, format=-1.0)
            return Outcome({"coder": terms}, info={"coder": info})
        # The ground truth and the tester's (model-written) tests go to separate judges.
        gt_matrix, tester_matrix = execute_suites(
            problem, [parsed.code], [problem.tests, state.tests], timeout=self.timeout
        )
        infra = first_infra_error(gt_matrix, tester_matrix)
        if infra:
            return Outcome(
                {"coder": reward_terms(team=0.0, pass_rate=0.0, format=0.0)},
                info={"coder": {"code_problem": "infra_error"}},
                infra_error=infra,
            )
        gt, generated = gt_matrix[0], tester_matrix[0]
        state.code, state.team, state.verdicts = parsed.code, pass_rate([v.passed for v in gt]), generated
        if all(a.code != parsed.code for a in state.attempts):
            state.attempts.append(
                Attempt(
                    parsed.code,
                    correct=all(v.passed for v in gt),
                    scored=not any(v.status == "timeout" for v in gt),
                )
            )
        info = {
            "gt_verdicts": [v.passed for v in gt],
            "test_verdicts": [v.passed for v in generated],
            "pass_rate_delta": state.team - before,
            "code_problem": "",
        }
        if self.pay == "bounded":
            delta = state.team - before
            terms = reward_terms(team=delta, pass_rate=self._beyond_best("pass_rate", self._code_pass_rate()),
                                 format=0.0)
            return Outcome({"coder": terms, "tester": reward_terms(team=delta)}, info={"coder": info})
        terms = reward_terms(team=state.team, pass_rate=self._code_pass_rate(), format=0.0)
        return Outcome({"coder": terms}, info={"coder": info})

    def _code_pass_rate(self) -> float:
        """The share of the tester's latest tests the current code passes, valid ones only (0 without any)."""
        state = self.state
        return pass_rate([v.passed for v, ok in zip(state.verdicts, state.test_valid) if ok is not False])

    def _tester_team(self) -> float:
        """The ``team`` term of the tester's own step: v0 pays the level again, v1 paid its change on the coder's."""
        return 0.0 if self.pay == "bounded" else self.state.team

    def _beyond_best(self, term: str, value: float) -> float:
        """Under ``pay="bounded"``: what ``value`` adds to the best value of ``term`` paid earlier this episode (a
        negative value is paid as it is: a penalty never farms)."""
        if value <= 0.0:
            return value
        best = self.state.best.get(term, 0.0)
        self.state.best[term] = max(best, value)
        return max(0.0, value - best)

    def _programs(self, agent: str, action: str) -> list[sandbox.WireProgram]:
        """The test matrices ``step(action)`` would run: the coder's code against the ground truth and the
        tester's tests, or the tester's tests against the judged programs (nothing for a malformed answer)."""
        problem, state = self.task, self.state
        if agent == "coder":
            parsed = parse_code(action)
            if parsed.problem:
                return []
            return declare(problem, [parsed.code], [problem.tests, state.tests], timeout=self.timeout)
        parsed_tests = parse_tests(action, style=problem.style, max_tests=self.max_tests)
        if parsed_tests.problem:
            return []
        if self._mutant_key(problem) not in _MUTANT_CACHE and self.num_mutants and self.golden(problem) is not None:
            return []  # the step finds the mutants first, in the sandbox: declaring must not run or change anything
        return declare(problem, self._judged_programs()[0], [parsed_tests.tests], timeout=self.timeout)

    def _judged_programs(self) -> tuple[list[str], list[bool], int]:
        """The tester's matrix rows: (programs, correct flags, leading rows left unscored: 0 or 1)."""
        problem, state = self.task, self.state
        programs: list[str] = []
        correct: list[bool] = []
        current = next((a for a in state.attempts if a.code == state.code), None) if state.code else None
        skip = 0
        # Under pay="bounded" the coder's wrong attempts are not judged: one would give the tester another wrong
        # program to catch, so a coder wrong on purpose could raise its teammate's discrimination.
        judged = [a for a in state.attempts if a.scored and (a.correct or self.pay != "bounded")]
        if current is not None:
            programs.append(current.code)
            correct.append(current.correct)
            skip = 0 if current in judged else 1
        golden = self.golden(problem)
        candidates = [(golden, True)] if golden is not None else []
        candidates += [(m, False) for m in self.mutants(problem)]
        candidates += [(a.code, a.correct) for a in judged]
        for code, ok in candidates:
            if code not in programs[skip:]:  # an unscored current attempt must not stand in for a mutant
                programs.append(code)
                correct.append(ok)
        return programs, correct, skip

    def _tester_step(self, action: str) -> Outcome:
        problem, state = self.task, self.state
        parsed = parse_tests(action, style=problem.style, max_tests=self.max_tests)
        base = {
            "num_tests": len(parsed.tests),
            "skipped_tests": parsed.skipped,
            "tests_problem": parsed.problem,
        }
        if parsed.problem:
            state.tests, state.test_valid, state.verdicts = (), [], []
            terms = reward_terms(team=self._tester_team(), discrimination=0.0, validity=0.0, format=-1.0)
            return Outcome(
                {"tester": terms},
                info={"tester": {**base, "test_valid": [], "test_rewards": [], "code_verdicts": []}},
            )
        programs, correct, skip = self._judged_programs()
        matrix = execute(problem, programs, parsed.tests, timeout=self.timeout)
        infra = first_infra_error(matrix) or self._mutant_infra
        if infra:
            self._mutant_infra = ""
            return Outcome(
                {"tester": reward_terms(team=self._tester_team(), discrimination=0.0, validity=0.0, format=0.0)},
                info={"tester": base},
                infra_error=infra,
            )
        passes = [[v.passed for v in row] for row in matrix[skip:]]
        flags = correct[skip:]
        if flags:
            test_rewards = cure_test_rewards(passes, flags)
            valid = validity(passes, flags)
            diagnostics = {"kill_rate": suite_kill_rate(passes, flags, valid), **precision(passes, flags, valid)}
        else:  # no program to judge the tests on (no golden solution, no scored attempt yet): nothing to pay
            test_rewards, valid = [0.0] * len(parsed.tests), [None] * len(parsed.tests)
            diagnostics = {"kill_rate": None, "p_01": None, "p_00": None}
        invalid_share = sum(v is False for v in valid) / len(valid)
        state.tests, state.test_valid = parsed.tests, valid
        state.verdicts = list(matrix[0]) if state.code else []
        discrimination = sum(test_rewards) / len(test_rewards)
        terms = {"tester": reward_terms(
            team=self._tester_team(),
            discrimination=self._beyond_best("discrimination", discrimination) if self.pay == "bounded"
            else discrimination,
            validity=-invalid_share,
            format=0.0,
        )}
        if self.pay == "bounded" and state.code:  # the code, judged on the new tests, may pass more of them
            terms["coder"] = reward_terms(pass_rate=self._beyond_best("pass_rate", self._code_pass_rate()))
        info = {
            **base,
            "test_valid": valid,
            "test_rewards": test_rewards,
            **diagnostics,
            "code_verdicts": [v.passed for v in state.verdicts],
            "num_correct_programs": sum(flags),
            "num_wrong_programs": len(flags) - sum(flags),
        }
        return Outcome(terms, info={"tester": info})

    def _info_defaults(self, agent: str) -> dict[str, Any]:
        if agent == "coder":
            return {"gt_verdicts": [], "test_verdicts": [], "pass_rate_delta": 0.0, "code_problem": ""}
        return {"num_tests": 0, "skipped_tests": 0, "tests_problem": "", "test_valid": [], "test_rewards": [],
                "kill_rate": -1.0, "p_01": -1.0, "p_00": -1.0, "code_verdicts": [], "num_correct_programs": 0,
                "num_wrong_programs": 0}

    # ------------------------------------------------------------------ episode summary, policies
    def _is_success(self) -> bool:
        return self.state.team == 1.0

    def _episode_extras(self) -> dict[str, object]:
        return {
            "final_pass_rate": self.state.team,
            "passed_generated_tests": self.state.passed_tests,
            "num_attempts": len(self.state.attempts),
        }

    def _scripted_policies(self) -> dict[str, dict[str, Callable[[], Policy]]]:
        return {
            "coder": {
                "oracle": lambda: policies.oracle_coder(self),
                "buggy": lambda: policies.buggy_coder(self),
            },
            "tester": {
                "oracle": lambda: policies.oracle_tester(self),
                "lazy": lambda: policies.lazy_tester(self),
            },
        }
