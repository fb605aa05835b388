"""``TurnParallelEnv``: the PettingZoo ``ParallelEnv`` view of a turn-based text env, one parallel step per turn.

Semantics (documented because PettingZoo's converters get them wrong for text teams): a parallel step is one *turn*
(round). Every live agent submits a completion written from the observation it had at the start of the turn - the
agents decide simultaneously, as in CURE, where coder and tester generate independently. The completions are then
applied in the env's turn order (coder, then tester...), so the env's scoring is exactly the AEC env's. If the
episode ends part-way through the turn, the remaining completions are ignored. Rewards and reward terms are summed
over the turn per agent, so ``rewards[agent] == alpha * team + local`` still holds.

``pettingzoo.utils.aec_to_parallel`` has the same simultaneous-decision semantics but needs every agent to act every
step; ``turn_based_aec_to_parallel`` keeps strict turns but discards all but one agent's action per step (and returns
a 4-tuple when no agents are left). For exact sequential semantics (the tester sees the coder's code of the same
turn) use the AEC env.
"""

from __future__ import annotations

from typing import Any

from pettingzoo import ParallelEnv

from teamgym.core.env import TurnBasedTextEnv
from teamgym.core.rewards import add_terms, zero_terms
from teamgym.core.snapshot import EnvSnapshot
from teamgym.errors import InvalidActionError

__all__ = ["TurnParallelEnv"]


class TurnParallelEnv(ParallelEnv):
    """Parallel view of ``aec_env``; each ``step(actions)`` plays one turn. See the module docstring."""

    def __init__(self, aec_env: TurnBasedTextEnv):
        self.aec_env = aec_env
        self.metadata = dict(aec_env.metadata)
        self.possible_agents = list(aec_env.possible_agents)
        self.render_mode = aec_env.render_mode
        self.agents: list[str] = []

    @property
    def unwrapped(self) -> TurnParallelEnv:
        return self

    def observation_space(self, agent: str):
        return self.aec_env.observation_space(agent)

    def action_space(self, agent: str):
        return self.aec_env.action_space(agent)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        self.aec_env.reset(seed=seed, options=options)
        self.agents = list(self.aec_env.agents)
        return {a: self.aec_env.observe(a) for a in self.agents}, {a: dict(self.aec_env.infos[a]) for a in self.agents}

    def step(self, actions: dict[str, str]) -> tuple[dict, dict, dict, dict, dict]:
        env = self.aec_env
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise InvalidActionError(
                f"step() got actions for {sorted(actions)} but not for live agents {missing}: "
                "pass one completion per agent in env.agents"
            )
        live = list(self.agents)
        rewards = {a: 0.0 for a in live}
        terms = {a: zero_terms() for a in live}
        infos: dict[str, dict[str, Any]] = {a: {} for a in live}
        acted: set[str] = set()
        start_turn = env.turn
        while env.agents and env.turn == start_turn:
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent] or agent in acted:
                break
            env.step(actions[agent])
            acted.add(agent)
            for a in live:
                rewards[a] += env.rewards[a]
                terms[a] = add_terms(terms[a], env.infos[a]["reward_terms"])
                infos[a] = {**infos[a], **env.infos[a]}
        observations = {a: env.observe(a) for a in live}
        terminations = {a: env.terminations[a] for a in live}
        truncations = {a: env.truncations[a] for a in live}
        for a in live:
            infos[a]["reward_terms"] = terms[a]
        while env.agents and (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
            env.step(None)
        self.agents = list(env.agents)
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        return self.aec_env.render()

    def close(self) -> None:
        self.aec_env.close()

    def snapshot(self) -> EnvSnapshot:
        return self.aec_env.snapshot()

    def restore(self, snapshot: EnvSnapshot) -> None:
        self.aec_env.restore(snapshot)
        self.agents = list(self.aec_env.agents)
