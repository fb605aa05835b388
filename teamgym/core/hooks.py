"""``EnvHooks``: what a concrete env fills in (tasks, state, prompts, the effect of an action), with the defaults.

:class:`~teamgym.core.env.TurnBasedTextEnv` inherits these hooks and does the PettingZoo bookkeeping around them; the
table in docs/ARCHITECTURE.md ("The env base class") lists them. The scripted-policy lookups built on
``_scripted_policies`` live here too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from teamgym.core.outcome import Outcome, Policy, TurnRecord
from teamgym.core.text import clip_text
from teamgym.errors import InvalidArgumentError

__all__ = ["EnvHooks", "StateT", "TaskT"]

TaskT = TypeVar("TaskT")
StateT = TypeVar("StateT")


class EnvHooks(Generic[TaskT, StateT]):
    """The hooks of a turn-based text env; each raises or returns its default until a concrete env overrides it.

    Hooks read the env's attributes (``self.agents``, ``self.state``...) and methods (``episode_summary``), which the
    base class maintains.
    """

    metadata: dict[str, Any]
    possible_agents: list[str]
    agents: list[str]
    task_id: Any

    def task_ids(self) -> Sequence[Any] | None:
        """The ids of a finite task set (a dataset), or ``None`` for procedural tasks built from integer ids."""
        return None

    def _task_from_id(self, task_id: Any) -> TaskT:
        raise NotImplementedError

    def _initial_state(self, task: TaskT) -> StateT:
        raise NotImplementedError

    def _system_prompt(self, agent: str) -> str:
        raise NotImplementedError

    def _user_prompt(self, agent: str) -> str:
        raise NotImplementedError

    def _apply_action(self, agent: str, action: str) -> Outcome:
        raise NotImplementedError

    def _programs(self, agent: str, action: str) -> list[Any]:
        """The sandbox programs (:class:`teamgym.sandbox.Program`, or :class:`teamgym.sandbox.WireProgram` for the
        server-format jobs of a test matrix) ``_apply_action(agent, action)`` would run from the current state, for
        the rollout engine to run many steps' programs as one batch (default: none). Declaring must not run or
        change anything.

        A hint only: a program the step runs without declaring it runs as usual.
        """
        return []

    def _select_first(self) -> str:
        """The agent that opens each turn (default: the first name in ``agents``)."""
        return self.agents[0]

    def _select_next(self, agent: str) -> str | None:
        """The agent to act after ``agent`` in the same turn, or ``None`` when the turn is over (default: in order)."""
        index = self.agents.index(agent)
        return self.agents[index + 1] if index + 1 < len(self.agents) else None

    def _is_success(self) -> bool:
        """Whether the episode so far counts as solved (reported in the episode summary)."""
        return False

    def _team_progress(self) -> float | None:
        """How far the team is towards solving the task, in [0, 1], or ``None`` if the env does not say.

        Reported as ``infos[agent]["progress"]`` for every agent after every step (process-reward wrappers read
        it); an env may instead, or also, set ``progress`` per agent through ``Outcome.info``, which wins.
        """
        return None

    def _state_key(self, agent: str) -> str | None:
        """The env state ``agent`` is about to act on, as text, or ``None`` if the env does not say.

        Reported as ``infos[agent]["state_key"]`` for every live agent after every reset and step. Two situations
        with equal keys are the same decision problem for that agent: what the env's state is (a board, a program
        under test), not how the episode got there (the turn counter, last turn's feedback). Grouping estimators
        anchor on it (GiGPO's anchor states, arXiv 2505.10978, Sec. 3.2); envs without one are anchored on the
        agent's whole prompt.
        """
        return None

    def _info_defaults(self, agent: str) -> dict[str, Any]:
        """The env's own diagnostics for ``agent``: every key its steps may put in ``infos[agent]`` (through
        ``Outcome.info``) beyond the per-step keys, each with the value it has before a step reports it.

        Called after ``reset``, so a value may read the state (a board's distance to the goal). A value has the
        type every report of the key has, and is never ``None``: an undefined number reads ``-1`` or ``-1.0``, a
        missing answer ``""``. :class:`~teamgym.wrappers.SingleAgentView` puts these keys in every info from
        ``reset`` on, which libraries that stack infos into arrays need (Tianshou's replay buffer), and reads a
        report of ``None`` as the default; ``teamgym check`` fails on a key a step reports that is not declared here.
        """
        return {}

    def _episode_extras(self) -> dict[str, Any]:
        """Env-specific entries for the episode summary (numbers, strings, bools; never ``None``)."""
        return {}

    def _render_header(self) -> str:
        """The first line(s) of the ansi transcript."""
        return f"=== {self.metadata['name']} | task {self.task_id} | agents: {', '.join(self.possible_agents)} ==="

    def _render_record(self, record: TurnRecord) -> str:
        """One transcript entry of the ansi rendering."""
        terms = ", ".join(f"{k}={v:+.3f}" for k, v in record.terms.items())
        return f"--- turn {record.turn} | {record.agent} | {terms}\n{clip_text(record.action, 2000)}"

    def _render_footer(self) -> str:
        """The last line of the ansi transcript of a finished episode."""
        summary = self.episode_summary()
        returns = ", ".join(f"{a}={r:+.3f}" for a, r in summary["returns"].items())
        return f"=== end: success={summary['success']} | steps={summary['steps']} | returns: {returns} ==="

    def _scripted_policies(self) -> dict[str, dict[str, Callable[[], Policy]]]:
        """Scripted policies this env provides: ``{role: {name: factory}}``; the first name is the default."""
        return {}

    def scripted_policies(self) -> dict[str, list[str]]:
        """``{role: [policy names]}`` of the scripted policies this env provides (first name = default)."""
        return {role: list(named) for role, named in self._scripted_policies().items()}

    def scripted_policy(self, role: str, name: str | None = None) -> Policy:
        """A scripted policy for ``role`` (``name`` from :meth:`scripted_policies`, default its first).

        The policy reads the env it was made from (e.g. the ground truth for an oracle), so make it from the env
        instance it will play in.
        """
        table = self._scripted_policies()
        if role not in table:
            raise InvalidArgumentError(
                f"no scripted policy for role {role!r} in {type(self).__name__}: roles with one: {sorted(table)}"
            )
        named = table[role]
        chosen = name if name is not None else next(iter(named))
        if chosen not in named:
            raise InvalidArgumentError(
                f"scripted policy {chosen!r} for role {role!r}: expected one of {list(named)}"
            )
        return named[chosen]()
