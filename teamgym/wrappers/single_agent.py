"""``SingleAgentView``: one role of a teamgym env as a ``gymnasium.Env``, its partners played by given
policies.

Single-agent RL libraries (TRL-style trainers, Stable-Baselines-like loops, Tianshou) take a
``gymnasium.Env``. This view exposes one agent of any teamgym env: ``reset`` plays the partners until it is
the agent's turn, ``step(action)`` applies the agent's completion, then plays the partners until it is the
agent's turn again or the episode ends. The reward is the agent's cumulative reward since its last action
(what PettingZoo's ``last()`` hands it: its own step's reward plus what it received at its partners' steps; what
it received at the partners' steps ``reset`` played, before its first turn, comes with its first step's reward);
``info`` is the agent's ``infos`` entry. Observation and action spaces are the agent's. Passes
``gymnasium.utils.env_checker.check_env``.

Infos keep one key set for the whole episode, as libraries that stack them into arrays need (Tianshou's buffer
flags a key that appears only at the end as missing values): at ``reset`` and every ``step`` the info holds the env's
per-step keys (``reward_terms``, ``cumulative_reward_terms``, ``messages``, ``turn``, ``task_id``, and ``progress`` /
``state_key`` where the env reports them), always

* ``action_flags``: what was done to the agent's last completion (``sanitized``, ``clipped``; both false at reset);
* ``infra_error``: ``""``, or why the infrastructure failed since the agent's last info (during its own step or a
  partner's: either way the reward it receives is not its doing, and a trainer should drop the sample);
* ``teamgym_episode``: the episode so far (the base env's ``episode_summary()``), and at the end the final summary;
* ``skipped_episodes``: how many episodes ``reset`` started before this one gave the agent a turn (usually 0);

and the env's own diagnostics, every one of them from ``reset`` on: a teamgym env declares them with the value they
have before a step reports them (``env.info_defaults(agent)``: the ``_info_defaults`` hook, which ``teamgym check``
holds every reported key to). A diagnostic keeps its last reported value until the next report; a report of ``None``
(nothing readable, a rate with nothing to measure) reads as the declared default (``""``, ``-1``...), and so does a
``None`` inside a list or dict whose default has an item for it (discussion's ``round_answers``). Each env's docstring
lists its diagnostics.

A library that stores every info in fixed-shape arrays (Tianshou's replay buffer) also needs each value's shape
fixed for the episode: lists whose length changes from step to step (coder_tester's per-test verdicts) do not fit.
``info_keys`` keeps only the named keys. ``info["episode"]`` stays free for Gymnasium's
``RecordEpisodeStatistics``: the view never carries the base env's deprecated alias.

If the partners end an episode before the agent's first turn (possible with env-chosen order), ``reset``
starts another one (unseeded, so the env's RNG carries on from the seed: still deterministic), up to
``max_resets`` times; ``info["skipped_episodes"]`` counts them.

>>> from tests.support.relay_env import RelayEnv
>>> base = RelayEnv()
>>> env = SingleAgentView(base, "listener", partners={"speaker": base.scripted_policy("speaker")})
>>> observation, info = env.reset(seed=0, options={"task_id": "apple"})
>>> observation["prompt"].splitlines()[-2]
'The speaker said: The word is apple'
>>> env.step("apple")[1:4]
(1.0, True, False)
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from typing import Any

import gymnasium
from pettingzoo import AECEnv

from teamgym.core.env import DEPRECATED_EPISODE_KEY, EPISODE_KEY, STEP_INFO_KEYS
from teamgym.core.outcome import Policy
from teamgym.errors import EnvStateError, InvalidArgumentError

__all__ = ["SingleAgentView"]

_NO_FLAGS = {"sanitized": False, "clipped": False}


class SingleAgentView(gymnasium.Env):
    """A ``gymnasium.Env`` for ``agent`` of a multi-agent text env; ``partners`` play every other agent.

    Args:
        env: a teamgym env or wrapper (PettingZoo ``AECEnv``).
        agent: the agent this view plays.
        partners: ``{agent: policy}`` with ``policy(observation) -> str`` for every other agent.
        max_partner_steps: partner steps at most between two of the agent's turns (guards against an env that
            never hands the turn back).
        max_resets: episodes ``reset`` may start before one gives the agent a turn.
        info_keys: keep only these keys of each info (``None``: all of them), e.g. for a library that stores infos
            in fixed-shape arrays; an unknown name raises at ``reset``.

    Example:
        >>> from tests.support.tally_env import TallyEnv
        >>> partners = {"bob": lambda observation: "1", "carol": lambda observation: "1"}
        >>> env = SingleAgentView(TallyEnv(), "alice", partners)
        >>> observation, info = env.reset(seed=0, options={"task_id": 0})
        >>> observation["prompt"]
        'You are alice. Write one digit.\\n\\nTarget 10, total so far 0.'
        >>> observation, reward, terminated, truncated, info = env.step("5")  # carol adds 1: alice's turn
        >>> reward, terminated, observation["prompt"][-15:]
        (0.0, False, 'total so far 6.')
        >>> observation, reward, terminated, truncated, info = env.step("4")
        >>> reward, terminated
        (1.0, True)
    """

    def __init__(
        self,
        env: AECEnv,
        agent: str,
        partners: Mapping[str, Policy],
        *,
        max_partner_steps: int = 10_000,
        max_resets: int = 100,
        info_keys: Collection[str] | None = None,
    ):
        if not isinstance(env, AECEnv):
            raise InvalidArgumentError(
                f"SingleAgentView(env={type(env).__name__}): expected a PettingZoo AECEnv, e.g. "
                "teamgym.make(...)"
            )
        agents = list(env.possible_agents)
        if agent not in agents:
            raise InvalidArgumentError(
                f"SingleAgentView agent={agent!r}: expected one of the env's agents {agents}"
            )
        others = [a for a in agents if a != agent]
        missing = [a for a in others if a not in partners]
        unknown = sorted(set(partners) - set(others))
        if missing or unknown:
            raise InvalidArgumentError(
                f"SingleAgentView partners for {sorted(partners)}: give exactly one policy per other "
                f"agent {others} (missing {missing}, unexpected {unknown}); "
                "e.g. env.unwrapped.scripted_policy(role)"
            )
        if not all(callable(policy) for policy in partners.values()):
            raise InvalidArgumentError(
                "SingleAgentView partners: every policy must be callable policy(obs) -> str"
            )
        self.env = env
        self.agent = agent
        self.partners = dict(partners)
        self.max_partner_steps = max_partner_steps
        self.max_resets = max_resets
        self.observation_space = env.observation_space(agent)
        self.action_space = env.action_space(agent)
        self.render_mode = getattr(env, "render_mode", None)
        self.metadata = {"render_modes": list(getattr(env, "metadata", {}).get("render_modes", []))}
        if info_keys is not None and (isinstance(info_keys, str) or not all(isinstance(k, str) for k in info_keys)):
            raise InvalidArgumentError(
                f"SingleAgentView info_keys={info_keys!r}: expected a collection of key names, e.g. "
                '["reward_terms", "turn", "teamgym_episode"], or None for every key'
            )
        self.info_keys = None if info_keys is None else frozenset(info_keys)
        self._action_flags = dict(_NO_FLAGS)
        self._last_info: dict[str, Any] = {}
        self._reports: dict[str, Any] = {}  # the env's diagnostics for the agent since the last info handed out
        self._defaults: dict[str, Any] = {}
        self._skipped = 0
        self._carry = 0.0  # what the agent received before its first turn, handed over with its first step

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the env, play the partners until the agent's turn; returns ``(observation, info)``."""
        super().reset(seed=seed)
        self._action_flags = dict(_NO_FLAGS)
        self._last_info, self._reports = {}, {}
        self.env.reset(seed=seed, options=options)
        self._play_partners()
        skipped = 0
        while not self._agent_live():
            if skipped >= self.max_resets:
                raise EnvStateError(
                    f"the partners ended {skipped + 1} episodes in a row before {self.agent!r} had a turn: "
                    "give partners that leave it a turn, or raise max_resets"
                )
            skipped += 1
            self._reports = {}
            self.env.reset(options=options)
            self._play_partners()
        self._skipped = skipped
        # Partners' steps before the agent's first turn may already have paid it (coder_tester-v1 pays the team's
        # progress on the coder's step): Gymnasium's reset returns no reward, so the first step hands it over.
        self._carry = float(self.env._cumulative_rewards.get(self.agent, 0.0))
        declared = getattr(self.env.unwrapped, "info_defaults", None)
        self._defaults = declared(self.agent) if callable(declared) else {}
        info = self._info()
        if self.info_keys is not None and not self.info_keys <= set(info):
            raise InvalidArgumentError(
                f"SingleAgentView info_keys: {sorted(self.info_keys - set(info))} are not keys of this env's infos "
                f"for {self.agent!r}; its keys are {sorted(info)}"
            )
        return self._observation(), copy.deepcopy(info)

    def step(self, action: str) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Apply the agent's completion, play the partners; returns Gymnasium's 5-tuple."""
        if not self._agent_live():
            raise EnvStateError(
                f"SingleAgentView.step for {self.agent!r}, whose episode is over (or before reset): call "
                "reset()"
            )
        carry, self._carry = self._carry, 0.0
        self.env.step(action)
        self._action_flags = dict(self.env.infos.get(self.agent, {}).get("action_flags", _NO_FLAGS))
        self._note_reports()
        self._play_partners()
        reward = carry + float(self.env._cumulative_rewards.get(self.agent, 0.0))
        terminated = bool(self.env.terminations.get(self.agent, True))
        truncated = bool(self.env.truncations.get(self.agent, False)) and not terminated
        return self._observation(), reward, terminated, truncated, copy.deepcopy(self._info())

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def _agent_live(self) -> bool:
        env = self.env
        return (
            getattr(env, "agent_selection", None) == self.agent
            and self.agent in env.agents
            and not (env.terminations[self.agent] or env.truncations[self.agent])
        )

    def _play_partners(self) -> None:
        env = self.env
        for _ in range(self.max_partner_steps):
            if self.agent not in env.agents or env.terminations[self.agent] or env.truncations[self.agent]:
                return
            current = env.agent_selection
            if current == self.agent:
                return
            if env.terminations[current] or env.truncations[current]:
                env.step(None)
            else:
                env.step(self.partners[current](env.observe(current)))
            self._note_reports()
        raise EnvStateError(
            f"the partners of {self.agent!r} took {self.max_partner_steps} steps without handing it "
            "the turn: raise max_partner_steps or check the env's turn order"
        )

    def _observation(self) -> Any:
        return copy.deepcopy(self.env.observe(self.agent))

    def _note_reports(self) -> None:
        """Keep the diagnostics the last env step gave the agent: the next step (a partner's) rebuilds its infos."""
        infos = self.env.infos.get(self.agent, {})
        self._reports.update({k: infos[k] for k in infos if k not in STEP_INFO_KEYS})
        if infos.get("infra_error") and not self._reports.get("infra_error"):  # the first failure since the last info
            self._reports["infra_error"] = infos["infra_error"]

    def _info(self) -> dict[str, Any]:
        current = {k: v for k, v in self.env.infos.get(self.agent, {}).items() if k != DEPRECATED_EPISODE_KEY}
        reports, self._reports = self._reports, {}
        info = {**reports, **current}
        info["infra_error"] = current.get("infra_error") or reports.get("infra_error", "")
        info["action_flags"] = dict(self._action_flags)
        info["skipped_episodes"] = self._skipped
        summary = getattr(self.env.unwrapped, "episode_summary", None)
        if EPISODE_KEY not in info and summary is not None:
            info[EPISODE_KEY] = summary()
        for key, default in self._defaults.items():
            if key in info:
                info[key] = _filled(info[key], default)
        info = {**self._defaults, **self._last_info, **info}  # a diagnostic keeps its last value until reported
        self._last_info = info
        if self.info_keys is not None:
            return {k: v for k, v in info.items() if k in self.info_keys}
        return info


def _filled(value: Any, default: Any) -> Any:
    """``value`` with each ``None`` in it (also inside lists and dicts) replaced by the matching part of
    ``default``: a list's items by the default list's first item, a dict's values by the default dict's."""
    if value is None:
        return copy.deepcopy(default)
    if isinstance(value, list) and isinstance(default, list) and default:
        return [_filled(item, default[0]) for item in value]
    if isinstance(value, dict) and isinstance(default, dict):
        return {k: _filled(v, default[k]) if k in default else v for k, v in value.items()}
    return value
