"""``teamgym check``: run every ``check_env`` check on an env and say, for each, what it expects and how to fix it.

::

    teamgym check my_game-v0                      # a registered id (built-in or from a plugin package)
    teamgym check my_package.env:MyGameEnv        # a class (or factory) that is not registered
    teamgym check my_game-v0 --garbage 200 --json # fewer garbage actions; one JSON object for CI

The exit status is 0 when every check passes and 1 otherwise. The checks are those of
:func:`teamgym.testing.check_env`, run one by one so that a failure does not hide the next; a first ``build`` check
makes sure the env can be built at all.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import io
import json
import logging
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pettingzoo
from pettingzoo import AECEnv

from teamgym.errors import InvalidArgumentError
from teamgym.registry import load_entry_point, make

__all__ = ["CHECKS", "CheckReport", "CheckResult", "add_arguments", "check", "run"]


@dataclass(frozen=True)
class Expectation:
    """What one check expects of an env, and the usual fix when it fails."""

    expected: str
    fix: str


#: Every check ``teamgym check`` runs, in order: ``build`` and then those of ``teamgym.testing.env_checks``.
CHECKS: dict[str, Expectation] = {
    "build": Expectation(
        "the id resolves to a registered env (or module:Class imports) and building it gives a pettingzoo.AECEnv",
        "register the env with teamgym.register (a plugin package: its 'teamgym.envs' entry point) and make sure its "
        "module imports; `teamgym list` shows what is registered",
    ),
    "api_test": Expectation(
        "PettingZoo's api_test passes: agent_iter/last/step bookkeeping, every observation inside "
        "observation_space(agent), rewards, terminations, truncations and infos for every agent",
        "subclass teamgym.core.TurnBasedTextEnv, which keeps that bookkeeping; run "
        "pettingzoo.test.api_test(teamgym.make(ID)) for the full traceback",
    ),
    "parallel_api_test": Expectation(
        "the ParallelEnv view (teamgym.make_parallel) passes PettingZoo's parallel_api_test",
        "keep metadata['is_parallelizable'] = True and the base class's step/reset bookkeeping",
    ),
    "seed_test": Expectation(
        "two envs reset with the same seed and given the same actions play identical episodes (PettingZoo's seed_test)",
        "draw every random choice from self.np_random (seeded by reset) or from the task id, never from random, "
        "numpy's global RNG or the clock",
    ),
    "misuse": Expectation(
        "step() before reset() raises teamgym.errors.EnvStateError; an action that is not a str (None, 42, bytes) "
        "for a live agent raises teamgym.errors.InvalidActionError",
        "keep TurnBasedTextEnv's step and reset; if you override them, raise the teamgym.errors classes",
    ),
    "garbage": Expectation(
        "garbage completions (random unicode, empty, 1 MB, control characters, unclosed fences, prompt injection) "
        "never raise; every agent's reward_terms hold team and local, rewards == alpha * team + local, the named "
        "parts add up to local, and infos carry chat-format messages",
        "parse completions defensively: a reply you cannot read earns the documented format penalty (a named part "
        "of local, built with teamgym.core.reward_terms) and the episode goes on",
    ),
    "snapshots": Expectation(
        "snapshot() -> actions -> restore() -> the same actions gives identical observations, rewards and infos, "
        "also when restored into a second env",
        "keep every mutable episode value in the state _initial_state returns (snapshot deep-copies it) and the "
        "task immutable; keep no episode state in other attributes of self",
    ),
    "seeded_resets": Expectation(
        "reset(seed=s) in two envs gives the same task, observations and infos, and the same actions then give "
        "the same episode",
        "build the task deterministically from its id (_task_from_id) and draw anything else from self.np_random",
    ),
    "render": Expectation(
        "with render_mode='ansi', render() returns the episode so far as non-empty text",
        "accept render_mode in __init__ and pass it on to TurnBasedTextEnv; override _render_record for a "
        "transcript that shows what matters",
    ),
    "scripted": Expectation(
        "every scripted policy of every role plays a full episode (the other roles play garbage) without raising",
        "make _scripted_policies() return {role: {name: factory}}; a policy reads the observation and the env's "
        "task, and always returns a str",
    ),
}


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check.

    Attributes:
        name: the check (a key of :data:`CHECKS`).
        passed: whether it passed.
        seconds: how long it ran.
        expected: what it expects of an env.
        happened: for a failure, what went wrong (the assertion or the exception raised).
        where: for a failure, the innermost source line of the error (``path:line in function``).
        fix: for a failure, the usual fix.
    """

    name: str
    passed: bool
    seconds: float
    expected: str
    happened: str = ""
    where: str = ""
    fix: str = ""


@dataclass(frozen=True)
class CheckReport:
    """Every check's result for one env."""

    env: str
    num_garbage: int
    results: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        """Whether every check passed."""
        return all(result.passed for result in self.results)

    def to_text(self) -> str:
        """The report as a person reads it: one line per check, and for a failure what, where and the fix."""
        lines = [f"teamgym check {self.env} (garbage actions: {self.num_garbage})"]
        for result in self.results:
            lines.append(f"  {'PASS' if result.passed else 'FAIL'}  {result.name:<18} {result.seconds:6.2f}s")
            if not result.passed:
                lines.append(f"        expected: {result.expected}")
                lines.append(f"        happened: {result.happened}")
                if result.where:
                    lines.append(f"        where:    {result.where}")
                lines.append(f"        fix:      {result.fix}")
        failed = sum(not result.passed for result in self.results)
        if len(self.results) == 1 and failed:
            lines.append(f"the other {len(CHECKS) - 1} checks need an env: fix the build first")
        else:
            lines.append(f"{len(self.results)} checks: {'all passed' if not failed else f'{failed} failed'}")
        return "\n".join(lines)

    def to_json(self) -> str:
        """The report as one JSON object: ``env``, ``passed``, ``num_garbage`` and ``checks`` (one per check)."""
        return json.dumps({"env": self.env, "passed": self.passed, "num_garbage": self.num_garbage,
                           "checks": [asdict(result) for result in self.results]}, indent=2)


def check(target: str, *, num_garbage: int = 1000, seed: int = 0) -> CheckReport:
    """Run every check on ``target`` (a registered id, or ``package.module:Class``) and collect the results.

    Args:
        target: ``name-vN`` (or ``name`` for its newest version), or ``module:Callable`` returning an ``AECEnv``.
        num_garbage: garbage actions to play (>= 1,000 for a full check, as the test suite does).
        seed: base seed of every check.
    """
    from teamgym.testing import env_checks  # PettingZoo's test suite: imported when a check runs, not by every CLI call

    if isinstance(num_garbage, bool) or not isinstance(num_garbage, int) or num_garbage < 1:
        raise InvalidArgumentError(f"--garbage {num_garbage!r}: expected an int >= 1 (1000 for a full check)")
    results: list[CheckResult] = []
    started = time.perf_counter()
    try:
        subject = _subject(target)
    except Exception as err:  # the build check reports any failure to build, whatever raised it
        results.append(_result("build", started, err))
        return CheckReport(target, num_garbage, tuple(results))
    results.append(_result("build", started, None))
    for name, run_check in env_checks(subject, num_garbage=num_garbage, seed=seed):
        started = time.perf_counter()
        try:
            with contextlib.redirect_stdout(io.StringIO()), _without_pettingzoo_probe_warning():
                run_check()  # PettingZoo's tests print progress lines, and probe reset with a made-up option
        except Exception as err:  # a check fails by raising; the next one still runs
            results.append(_result(name, started, err))
        else:
            results.append(_result(name, started, None))
    return CheckReport(target, num_garbage, tuple(results))


class _PettingZooProbe(logging.Filter):
    """Drops the warning of ``reset(options={"options": 1})``: PettingZoo's api tests send it on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.msg.startswith("%s.reset ignores unknown options") and isinstance(record.args, tuple)
                    and len(record.args) > 1 and record.args[1] == ["options"])


@contextlib.contextmanager
def _without_pettingzoo_probe_warning():
    """While a check runs, the base env does not warn of the option PettingZoo's tests make up (any other, it does)."""
    logger = logging.getLogger("teamgym.core.env")
    probe = _PettingZooProbe()
    logger.addFilter(probe)
    try:
        yield
    finally:
        logger.removeFilter(probe)


def _subject(target: str) -> str | Callable[[], AECEnv]:
    """What ``env_checks`` is given: the id itself once it builds, or a factory for ``module:Callable``."""
    if ":" not in target:
        make(target).close()
        return target
    try:
        built = load_entry_point(target)
    except (ImportError, AttributeError) as err:
        raise InvalidArgumentError(
            f"{target!r} cannot be imported ({err}): expected 'package.module:Class', importable from here"
        ) from err
    if not callable(built):
        raise InvalidArgumentError(f"{target!r} is a {type(built).__name__}, expected a class or factory")
    # Built with render_mode="ansi" where it accepts one, so that the render check runs too.
    accepts_render = "render_mode" in _parameters(built)

    def factory() -> AECEnv:
        return built(render_mode="ansi") if accepts_render else built()

    env = factory()
    if not isinstance(env, AECEnv):
        raise InvalidArgumentError(f"{target!r} built a {type(env).__name__}, expected a pettingzoo.AECEnv")
    env.close()
    return factory


def _parameters(target: Callable[..., Any]) -> set[str]:
    try:
        return set(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        return set()


def _result(name: str, started: float, err: BaseException | None) -> CheckResult:
    expectation = CHECKS.get(name, Expectation(f"the {name} check of teamgym.testing passes", "see the message"))
    seconds = round(time.perf_counter() - started, 3)
    if err is None:
        return CheckResult(name, True, seconds, expectation.expected)
    return CheckResult(name, False, seconds, expectation.expected, _happened(err), _where(err), expectation.fix)


def _happened(err: BaseException) -> str:
    message = str(err).strip()
    if isinstance(err, AssertionError):
        return message or "an assertion failed (no message)"
    return f"{type(err).__name__}: {message}" if message else type(err).__name__


def _where(err: BaseException) -> str:
    """The source line that raised: the innermost frame in the env's own code, else the innermost of all."""
    cause = err.__cause__ or err
    frames = traceback.extract_tb(cause.__traceback__)
    if not frames:
        return ""
    package = Path(__file__).resolve().parents[1]
    library = (package / "core", package / "testing.py", Path(pettingzoo.__file__).parent)
    own = [f for f in frames if not any(Path(f.filename).is_relative_to(root) for root in library)]
    frame = (own or frames)[-1]
    path = Path(frame.filename)
    shown = str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)
    return f"{shown}:{frame.lineno} in {frame.name}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``check`` options on ``parser``."""
    parser.add_argument("env", metavar="ENV_ID|module:Class",
                        help="a registered env id (e.g. my_game-v0), or a class or factory as package.module:Name")
    parser.add_argument("--garbage", type=int, default=1000, metavar="N",
                        help="garbage actions to play (default 1000, as the test suite)")
    parser.add_argument("--seed", type=int, default=0, help="base seed of every check (default 0)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the text report")


def run(args: argparse.Namespace) -> int:
    """``teamgym check``: print the report; 0 when every check passed, else 1."""
    report = check(args.env, num_garbage=args.garbage, seed=args.seed)
    print(report.to_json() if args.json else report.to_text())
    return 0 if report.passed else 1
