"""``TurnBasedTextEnv``: the PettingZoo ``AECEnv`` base class every teamgym env subclasses.

A concrete env describes *what* happens (tasks, prompts, the effect of an action and its reward terms); this class
does the PettingZoo bookkeeping (agents, rewards, cumulative rewards, terminations, truncations, infos, dead steps),
turn order, turn limits, seeding, snapshots, observations, chat messages, rendering and the episode summary.

A subclass fills in at least:

* ``roles``: the agent names, in default turn order (or pass ``agents=`` to ``__init__`` for a variable team).
* ``_task_from_id(task_id)``: the task with that id (procedural envs: build it from an integer seed).
* ``_initial_state(task)``: a fresh mutable episode state (anything ``copy.deepcopy`` can copy; keep the immutable task
  out of it so that snapshots stay cheap).
* ``_system_prompt(agent)`` and ``_user_prompt(agent)``: what the agent sees.
* ``_apply_action(agent, action) -> Outcome``: apply the (sanitised) completion, return the reward terms.

and may override ``task_ids()`` (a finite dataset), ``_select_first()``/``_select_next(agent)`` (env-chosen order),
``_is_success()``, ``_episode_extras()`` and ``_scripted_policies()``. The hooks and their defaults are
:class:`teamgym.core.hooks.EnvHooks`; ``Outcome``, ``TurnRecord`` and the scripted ``Policy`` type are in
:mod:`teamgym.core.outcome`.

Turns: a *turn* is a round in which the agents act in order (AT-GRPO: coder then tester = turn 0). ``max_turns``
rounds truncate the episode. Observations are ``Dict({"prompt": TextSpace, "turn": Discrete(max_turns + 1)})``.

Rewards: the agent that acts receives the reward terms its action earned (the env may also give terms to other agents
in the same step, e.g. a tester rewarded when the coder's code is run against its tests). For every agent at every
step ``rewards[agent] == alpha[agent] * terms["team"] + terms["local"]``. ``infos[agent]`` holds:

========================== ==========================================================================================
key                        meaning
========================== ==========================================================================================
``reward_terms``           this step's terms for the agent (``team``, ``local`` and the named parts of ``local``)
``cumulative_reward_terms`` terms summed since the agent last acted (they add up to the reward ``last()`` returns)
``messages``               the agent's prompt in chat format: ``[{"role": "system", ...}, {"role": "user", ...}]``
``turn``, ``task_id``      the round index and the task's id
``action_flags``           (acting agent) what was done to its action: ``sanitized``, ``clipped``
``progress``               (envs that report it) how far the team is towards solving the task, in [0, 1]
``state_key``              (envs that report it) the env state the agent is about to act on, as text, without the
                           episode's history (``_state_key``): equal keys, same decision problem; the anchor of
                           GiGPO's step groups
``infra_error``            present and non-empty when the env's infrastructure (the sandbox) failed in this step:
                           the sample is not the model's fault, and a trainer should drop it; every agent's terms
                           for the step are 0
``teamgym_episode``        (at the end) ``{"task_id", "turns", "steps", "returns", "success", ...}``
                           (:data:`EPISODE_KEY`; ``episode``, its old name, is a deprecated alias until 0.3: Gymnasium
                           reserves ``info["episode"]`` for ``RecordEpisodeStatistics``)
========================== ==========================================================================================

``reward_terms``, ``cumulative_reward_terms``, ``messages``, ``turn`` and ``task_id`` are present at every step, and
``progress`` and ``state_key`` at every step of an env that reports them; the others come and go, and so do the env's
own diagnostics (``answer``, ``test_valid``...), which it declares with their values before any report
(:meth:`TurnBasedTextEnv.info_defaults`, the ``_info_defaults`` hook; ``teamgym check`` holds the env to it).
:class:`teamgym.wrappers.SingleAgentView` gives libraries that need one key set for every step (Tianshou's buffer)
every one of these keys at every step, from ``reset`` on.

``max_cycles`` is PettingZoo's name for the turn limit: one cycle is one step of every agent, which is one turn here,
so ``max_cycles=N`` (when given) sets ``max_turns=N`` (``make`` refuses both at once).
"""

from __future__ import annotations

import copy
import logging
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv

from teamgym.core.hooks import EnvHooks, StateT, TaskT
from teamgym.core.outcome import TurnRecord
from teamgym.core.rewards import RewardTerms, add_terms, mix, zero_terms
from teamgym.core.snapshot import EnvSnapshot, Handoff, freeze
from teamgym.core.spaces import TextSpace
from teamgym.core.text import clip_text, sanitize_text
from teamgym.errors import EnvStateError, InvalidActionError, InvalidArgumentError, SnapshotError

__all__ = ["DEPRECATED_EPISODE_KEY", "EPISODE_KEY", "STEP_INFO_KEYS", "EpisodeInfo", "TurnBasedTextEnv",
           "dead_step_infos", "episode_info", "require_episode"]

logger = logging.getLogger(__name__)

EPISODE_KEY = "teamgym_episode"
"""The key of the episode summary in ``infos[agent]`` (at the end of an episode)."""
DEPRECATED_EPISODE_KEY = "episode"
"""The summary's old key, kept as an alias until teamgym 0.3; Gymnasium's ``RecordEpisodeStatistics`` owns it."""
STEP_INFO_KEYS = frozenset({
    "reward_terms", "cumulative_reward_terms", "messages", "turn", "task_id", "action_flags", "progress", "state_key",
    "infra_error", EPISODE_KEY, DEPRECATED_EPISODE_KEY,
})
"""The keys of ``infos[agent]`` the base class manages; an env's own diagnostics are the others (``_info_defaults``)."""


class EpisodeInfo(dict):
    """An agent's info dict holding the episode summary under :data:`EPISODE_KEY` and its deprecated alias.

    Reading the alias (``info["episode"]``, ``info.get("episode")``) still works and warns (``FutureWarning``);
    ``"episode" in info`` stays true so that old checks keep finding the summary until the alias is removed.
    """

    def __getitem__(self, key: Any) -> Any:
        if key == DEPRECATED_EPISODE_KEY:
            _warn_alias()
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        if key == DEPRECATED_EPISODE_KEY:
            _warn_alias()
        return super().get(key, default)


def _warn_alias() -> None:
    warnings.warn(
        f'infos[agent]["{DEPRECATED_EPISODE_KEY}"] is deprecated and goes in teamgym 0.3: read '
        f'infos[agent]["{EPISODE_KEY}"] (teamgym.core.EPISODE_KEY); Gymnasium reserves "episode" for '
        "RecordEpisodeStatistics",
        FutureWarning,
        stacklevel=3,
    )


def episode_info(info: Mapping[str, Any], summary: Mapping[str, Any]) -> EpisodeInfo:
    """A copy of ``info`` with ``summary`` under :data:`EPISODE_KEY` (and the deprecated alias)."""
    out = EpisodeInfo({k: v for k, v in info.items() if k != DEPRECATED_EPISODE_KEY})
    out[EPISODE_KEY] = summary
    dict.__setitem__(out, DEPRECATED_EPISODE_KEY, summary)
    return out

class TurnBasedTextEnv(AECEnv, EnvHooks[TaskT, StateT]):
    """Base class of turn-based cooperative text envs whose agents are LLM roles.

    Args:
        max_turns: rounds before truncation.
        max_cycles: PettingZoo's name for the same limit (one cycle = one step of every agent = one turn); when
            given, it sets ``max_turns``.
        alpha: weight of the team term, one float or a dict per agent (missing agents: 1.0).
        render_mode: ``None``, ``"ansi"`` (``render()`` returns the transcript) or ``"human"`` (prints it).
        max_prompt_chars: observations longer than this are clipped in the middle.
        max_action_chars: completions longer than this are clipped (flagged in ``action_flags``).
        agents: agent names, for envs whose team size is a parameter (default: the class's ``roles``).
    """

    metadata: ClassVar[dict[str, Any]] = {"name": "turn_based_text", "render_modes": ["ansi", "human"],
                                          "is_parallelizable": True}
    roles: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        *,
        max_turns: int = 4,
        alpha: float | Mapping[str, float] = 1.0,
        render_mode: str | None = None,
        max_prompt_chars: int = 32_768,
        max_action_chars: int = 65_536,
        agents: Sequence[str] | None = None,
        max_cycles: int | None = None,
    ):
        super().__init__()
        if max_cycles is not None:
            _check_int("max_cycles", max_cycles, 1)
            max_turns = max_cycles
        names = tuple(agents) if agents is not None else tuple(self.roles)
        if not names or len(set(names)) != len(names) or not all(isinstance(a, str) and a for a in names):
            raise InvalidArgumentError(f"agents={names!r}: expected distinct non-empty names, e.g. ('coder', 'tester')")
        _check_int("max_turns", max_turns, 1)
        _check_int("max_prompt_chars", max_prompt_chars, 64)
        _check_int("max_action_chars", max_action_chars, 1)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise InvalidArgumentError(
                f"render_mode={render_mode!r}: expected one of {self.metadata['render_modes']} or None"
            )
        self.possible_agents = list(names)
        self.max_turns = max_turns
        self.alpha = _check_alpha(alpha, self.possible_agents)
        self.render_mode = render_mode
        self.max_prompt_chars = max_prompt_chars
        self.max_action_chars = max_action_chars
        self._observation_space = spaces.Dict(
            {"prompt": TextSpace(max_prompt_chars), "turn": spaces.Discrete(max_turns + 1)}
        )
        self._action_space = TextSpace(max_action_chars)
        self._observation_spaces = {a: self._observation_space for a in self.possible_agents}
        self._action_spaces = {a: self._action_space for a in self.possible_agents}
        self._np_random, self._np_random_seed = seeding.np_random(None)
        self._has_reset = False
        self._handed_off = False
        self._joined_prompts: dict[str, tuple[str, str, str]] = {}  # agent -> (system, user, prompt) last joined
        self.agents = []

    # ------------------------------------------------------------------ PettingZoo API
    def observation_space(self, agent: str) -> spaces.Dict:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> TextSpace:
        return self._action_spaces[agent]

    @property
    def np_random(self) -> np.random.Generator:
        """The env's own RNG (seeded by ``reset(seed=...)``); no process-global RNG is ever used."""
        return self._np_random

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start an episode.

        Args:
            seed: seeds the env's RNG; the same seed gives the same task and the same episode for the same actions.
            options: ``{"task_id": id}`` picks the task (an id from ``task_ids()``, or any int for procedural envs).
        """
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
        options = dict(options or {})
        if "task_id" in options:
            task_id = options.pop("task_id")
            known = self.task_ids()
            if known is not None and task_id not in set(known):
                raise InvalidArgumentError(
                    f"options['task_id']={task_id!r} is not a task of {type(self).__name__}: "
                    f"expected one of its {len(known)} ids (see env.task_ids())"
                )
        else:
            known = self.task_ids()
            if known is None:
                task_id = int(self._np_random.integers(2**31 - 1))
            else:
                task_id = known[int(self._np_random.integers(len(known)))]
        if options:
            # Gymnasium's convention is to ignore options an env does not know (PettingZoo's api_test relies on it).
            logger.warning(
                "%s.reset ignores unknown options %s (known: 'task_id')", type(self).__name__, sorted(options)
            )
        self.task_id = task_id
        self.task = self._task_from_id(task_id)
        self.state = self._initial_state(self.task)
        self.agents = list(self.possible_agents)
        self.turn = 0
        self.num_steps = 0
        self.history: list[TurnRecord] = []
        # Every agent's terms summed over the episode, including terms given to agents other than the actor.
        self._episode_terms = {a: zero_terms() for a in self.agents}
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self._cumulative_terms = {a: zero_terms() for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self._skip_agent_selection = None
        self.agent_selection = self._select_first()
        self._has_reset = True
        self._handed_off = False
        self._refresh({a: zero_terms() for a in self.agents}, extra={})

    def observe(self, agent: str) -> dict[str, Any]:
        self._require_reset("observe")
        return {"prompt": self._prompts[agent], "turn": min(self.turn, self.max_turns)}

    def last(self, observe: bool = True) -> tuple[dict[str, Any] | None, float, bool, bool, dict[str, Any]]:
        """PettingZoo's ``last()``: the selected agent's observation, cumulative reward, flags and info."""
        require_episode(self, "last")
        return super().last(observe)

    def step(self, action: str | None) -> None:
        require_episode(self, "step")
        self._require_own_state("step")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                raise InvalidActionError(
                    f"step({_preview(action)}) for {agent!r}, whose episode is over: pass None for a finished agent "
                    "(PettingZoo's convention), or call reset()"
                )
            self._was_dead_step(action)
            self.infos = dead_step_infos(self.infos)
            return
        text, flags = self._coerce_action(action)
        self._cumulative_rewards[agent] = 0.0
        self._cumulative_terms[agent] = zero_terms()
        outcome = self._apply_action(agent, text)
        terms = {a: dict(outcome.terms.get(a, zero_terms())) for a in self.agents}
        if outcome.infra_error:  # the infrastructure failed: no agent earns anything for this step
            terms = {a: dict.fromkeys(terms[a], 0.0) for a in self.agents}
        self.history.append(TurnRecord(agent, self.turn, text, terms[agent]))
        for a in self.agents:
            self._episode_terms[a] = add_terms(self._episode_terms[a], terms[a])
        self.num_steps += 1

        next_agent = self._select_next(agent)
        if next_agent is None:
            self.turn += 1
            next_agent = self._select_first()
        if outcome.terminated:
            self.terminations = {a: True for a in self.agents}
        elif self.turn >= self.max_turns:
            self.truncations = {a: True for a in self.agents}
        self.agent_selection = next_agent

        extra: dict[str, dict[str, Any]] = {a: dict(outcome.info.get(a, {})) for a in self.agents}
        extra[agent]["action_flags"] = flags
        if outcome.infra_error:
            for a in self.agents:
                extra[a]["infra_error"] = outcome.infra_error
        self._refresh(terms, extra)
        self._accumulate_rewards()
        if self.render_mode == "human":
            print(self._render_record(self.history[-1]))

    def render(self) -> str | None:
        """The transcript so far as text (``"ansi"``), or print it (``"human"``); ``None`` without a render mode."""
        if self.render_mode is None:
            return None
        self._require_reset("render")
        lines = [self._render_header()]
        lines += [self._render_record(record) for record in self.history]
        if not self.agents or all(self.terminations[a] or self.truncations[a] for a in self.agents):
            lines.append(self._render_footer())
        text = "\n".join(lines)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Release resources (subclasses holding pools or files override this and call super)."""

    # ------------------------------------------------------------------ snapshots
    def snapshot(self, *, handoff: bool = False) -> EnvSnapshot:
        """A copy of the episode state (not of datasets or models): ``restore`` brings the env back to it.

        Args:
            handoff: copy nothing; hand the episode objects themselves to the snapshot, which restores once. Until
                the env is restored (to any snapshot) or reset it has no episode state of its own: ``step`` and
                ``snapshot`` raise :class:`~teamgym.errors.EnvStateError`. For tree search keeping a child state
                aside while the siblings act from the restored node (:class:`teamgym.rollout.slot.EnvSlot`).
        """
        self._require_reset("snapshot")
        self._require_own_state("snapshot")
        fields = {
            "state": self.state,
            "agents": self.agents,
            "turn": self.turn,
            "num_steps": self.num_steps,
            "history": self.history,
            "_episode_terms": self._episode_terms,
            "rewards": self.rewards,
            "_cumulative_rewards": self._cumulative_rewards,
            "_cumulative_terms": self._cumulative_terms,
            "terminations": self.terminations,
            "truncations": self.truncations,
            "infos": self.infos,
            "_prompts": self._prompts,
            "agent_selection": self.agent_selection,
            "_skip_agent_selection": self._skip_agent_selection,
        }
        snapshot = EnvSnapshot(
            owner=self._snapshot_owner(),
            task_id=self.task_id,
            task=self.task,
            rng_state=self._np_random.bit_generator.state,  # a fresh dict on every read
            frozen=Handoff(fields) if handoff else freeze(fields),
        )
        self._handed_off = handoff
        return snapshot

    def restore(self, snapshot: EnvSnapshot) -> None:
        """Bring the env back to ``snapshot``; the same actions then give identical observations, rewards and infos."""
        if not isinstance(snapshot, EnvSnapshot):
            raise SnapshotError(f"restore({type(snapshot).__name__}): expected an object returned by env.snapshot()")
        if snapshot.owner != self._snapshot_owner():
            raise SnapshotError(
                f"this snapshot was taken from {snapshot.owner[0]} with other settings than this env "
                f"({self._snapshot_owner()[0]}): restore it into an env made with the same id and arguments"
            )
        self.task_id = snapshot.task_id
        self.task = snapshot.task
        self._np_random.bit_generator.state = snapshot.rng_state  # the setter copies the values
        for name, value in snapshot.fields.items():
            setattr(self, name, value)
        self._has_reset = True
        self._handed_off = False

    def info_defaults(self, agent: str) -> dict[str, Any]:
        """The env's own diagnostics for ``agent`` with their values before a step reports them (the
        ``_info_defaults`` hook): the keys :class:`~teamgym.wrappers.SingleAgentView` keeps in every info."""
        self._require_reset("info_defaults")
        if agent not in self.possible_agents:
            raise InvalidArgumentError(f"info_defaults(agent={agent!r}): expected one of {self.possible_agents}")
        return copy.deepcopy(self._info_defaults(agent))

    def programs(self, action: str) -> list[Any]:
        """The sandbox programs ``step(action)`` would run now (``_programs`` of the acting agent), without running
        or changing anything; ``[]`` when the agent's episode is over or the action is not text.

        The rollout engine runs the programs of every candidate of a tree level together
        (:func:`teamgym.sandbox.run_programs`) and steps the candidates inside :func:`teamgym.sandbox.prefetched`.
        """
        if not self._has_reset or not isinstance(action, str):
            return []
        self._require_own_state("programs")
        agent = self.agent_selection
        if self.terminations.get(agent) or self.truncations.get(agent):
            return []
        return list(self._programs(agent, self._coerce_action(action)[0]))

    # ------------------------------------------------------------------ internals
    def _coerce_action(self, action: Any) -> tuple[str, dict[str, bool]]:
        if not isinstance(action, str):
            raise InvalidActionError(
                f"action {_preview(action)} of type {type(action).__name__} for {self.agent_selection!r}: "
                "text envs take the completion as a str (decode token ids with your tokenizer first)"
            )
        flags = {"sanitized": False, "clipped": False}
        clean = sanitize_text(action)
        if clean != action:
            flags["sanitized"] = True
        if len(clean) > self.max_action_chars:
            clean = clean[: self.max_action_chars]
            flags["clipped"] = True
        return clean, flags

    def _refresh(self, terms: Mapping[str, RewardTerms], extra: Mapping[str, Mapping[str, Any]]) -> None:
        """Recompute prompts, rewards and infos of every live agent after a reset or a step."""
        self._prompts = {}
        self.infos = {}
        finished = all(self.terminations[a] or self.truncations[a] for a in self.agents)
        summary = self.episode_summary() if finished else None
        progress = self._team_progress()
        joined = self._joined_prompts
        for a in self.agents:
            system = self._system_prompt(a)
            user = self._user_prompt(a)
            last = joined.get(a)
            if last is not None and last[0] is system and last[1] is user:  # an env that remembers its prompts
                self._prompts[a] = last[2]
            else:
                self._prompts[a] = clip_text(f"{system}\n\n{user}" if system else user, self.max_prompt_chars)
                joined[a] = (system, user, self._prompts[a])
            self.rewards[a] = mix(terms[a], self.alpha[a])
            self._cumulative_terms[a] = add_terms(self._cumulative_terms[a], terms[a])
            info: dict[str, Any] = {
                "reward_terms": dict(terms[a]),
                "cumulative_reward_terms": dict(self._cumulative_terms[a]),
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                "turn": min(self.turn, self.max_turns),
                "task_id": self.task_id,
            }
            if progress is not None:
                info["progress"] = progress
            state_key = self._state_key(a)
            if state_key is not None:
                info["state_key"] = state_key
            info.update(extra.get(a, {}))
            self.infos[a] = episode_info(info, summary) if summary is not None else info

    def episode_summary(self) -> dict[str, Any]:
        """The episode so far: task id, turns, steps, returns and team returns per agent, success, truncation,
        and the env's own extras (the same dict the last step puts in ``infos[agent]["teamgym_episode"]``)."""
        returns = {a: mix(self._episode_terms.get(a, zero_terms()), self.alpha[a]) for a in self.possible_agents}
        team = {a: self._episode_terms.get(a, zero_terms())["team"] for a in self.possible_agents}
        summary = {
            "task_id": self.task_id,
            "turns": len({record.turn for record in self.history}),
            "steps": self.num_steps,
            "returns": returns,
            "team_returns": team,
            "success": bool(self._is_success()),
            "truncated": any(self.truncations.values()),
        }
        summary.update(self._episode_extras())
        return summary

    def _snapshot_owner(self) -> tuple[str, tuple[str, ...], int, tuple[tuple[str, float], ...], str]:
        # The metadata name tells versions of one class apart (coder_tester-v0 and -v1 pay differently: an episode
        # of one must not go on under the other's rules).
        return (type(self).__name__, tuple(self.possible_agents), self.max_turns, tuple(sorted(self.alpha.items())),
                str(self.metadata.get("name", "")))

    def _require_own_state(self, method: str) -> None:
        if self._handed_off:
            raise EnvStateError(
                f"{type(self).__name__}.{method}() after snapshot(handoff=True) handed the episode state away: "
                "restore a snapshot (or reset) first"
            )

    def _require_reset(self, method: str) -> None:
        if not self._has_reset:
            raise _before_reset(self, method)


def require_episode(env: AECEnv, method: str) -> None:
    """Raise :class:`~teamgym.errors.EnvStateError` naming ``method`` unless ``env`` is inside an episode.

    Inside means reset (or restored) and some agent still in it: PettingZoo's own ``step``/``last`` would fail with
    a bare ``AttributeError`` before ``reset()`` and a ``KeyError`` once every agent has left. For the base class
    and for wrappers that keep their own views of the episode.
    """
    if getattr(env, "agent_selection", None) is None:
        raise _before_reset(env, method)
    if not env.agents:
        raise EnvStateError(
            f"{type(env).__name__}.{method}() after the episode ended (every agent is done and has left): "
            "call env.reset(seed=...) to start a new one"
        )


def dead_step_infos(infos: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``infos`` after a dead step: PettingZoo's dead step clears every reward, so the reward terms that explain them
    are cleared too (``rewards == alpha * team + local`` holds), keeping their names (a dead step changes values in
    ``infos``, never keys). For the base class and for wrappers that keep their own views."""
    cleared = {a: {**info, "reward_terms": dict.fromkeys(info["reward_terms"], 0.0)} for a, info in infos.items()}
    return {a: episode_info(info, info[EPISODE_KEY]) if EPISODE_KEY in info else info for a, info in cleared.items()}


def _before_reset(env: AECEnv, method: str) -> EnvStateError:
    return EnvStateError(f"{type(env).__name__}.{method}() called before reset(): call env.reset(seed=...) first")


def _check_int(name: str, value: Any, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise InvalidArgumentError(f"{name}={value!r}: expected an int >= {minimum}")


def _check_alpha(alpha: float | Mapping[str, float], agents: Sequence[str]) -> dict[str, float]:
    if isinstance(alpha, Mapping):
        unknown = sorted(set(alpha) - set(agents))
        if unknown:
            raise InvalidArgumentError(
                f"alpha has agents {unknown} that this env does not have: agents are {list(agents)}"
            )
        values = {a: alpha.get(a, 1.0) for a in agents}
    else:
        values = {a: alpha for a in agents}
    for a, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
            raise InvalidArgumentError(f"alpha[{a!r}]={v!r}: expected a finite float (1.0 = AT-GRPO's mixing)")
    return {a: float(v) for a, v in values.items()}


def _preview(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
