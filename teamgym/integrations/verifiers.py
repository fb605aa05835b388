"""verifiers: one role of a teamgym env as a verifiers (0.4, ``verifiers.v1``) taskset and multi-turn env.

verifiers 0.4 builds a run from a **taskset** (where tasks come from) and an **env** (how one task becomes an
episode, with its agents declared as ``vf.AgentConfig`` fields of the env's config). It finds both by the taskset
id: ``--env.taskset.id teamgym-verifiers`` imports the top-level module ``teamgym_verifiers`` (installed with
teamgym), whose ``__all__`` exports :class:`TeamgymTaskset` and :class:`TeamgymEnv`, so ``vf.load_environment``
(and ``vf-eval``) build them from a config alone.

* :class:`TeamgymTaskset` yields one task per env task id, ``info`` holding the env id, task id and role. Its
  tasks have no prompt (verifiers' "prompt-less task", opened by the caller's first message): the env renders the
  role's first observation itself, with the same partners that play the rest of the episode.
* :class:`TeamgymEnv` plays one episode per task with one agent, ``player`` (the trained role; its harness is
  verifiers' tool-less chat harness ``null``), the other roles played by ``partners`` (the env's scripted
  policies by name in the config, or callables given to the constructor). It steps the env host-side through
  :class:`~teamgym.wrappers.SingleAgentView`, as verifiers' own TextArena env steps its game: each reply of the
  player is the role's action, the role's next observation is the next user turn, and the episode's end (or
  ``max_turns``) ends the exchange. The trace's reward ``teamgym_reward`` (weight 1) is the role's episode return,
  the sum of the env's ``alpha * team + local``; ``trace.info`` holds the per-turn rewards and the success.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from typing import Any

from teamgym.core.env import EPISODE_KEY
from teamgym.errors import DependencyNotInstalled, InvalidArgumentError
from teamgym.integrations.partners import PartnerSpec, check_partners, resolve_partners

__all__ = ["TASKSET_ID", "TeamgymEnv", "TeamgymEnvConfig", "TeamgymTaskset", "TeamgymTasksetConfig"]

#: The taskset id that makes verifiers import ``teamgym_verifiers`` (``--env.taskset.id teamgym-verifiers``).
TASKSET_ID = "teamgym-verifiers"

try:
    import verifiers.v1 as vf
    from verifiers.v1.harnesses.null.harness import NullHarnessConfig
    from verifiers.v1.runtimes import SubprocessConfig
except ImportError as err:
    raise DependencyNotInstalled(err.name or "verifiers", "verifiers", "the verifiers environment") from None


def _make_env(config: TeamgymTasksetConfig) -> Any:
    import teamgym

    return teamgym.make(config.env_id, **config.env_kwargs)


def _view(env: Any, config: TeamgymTasksetConfig, partners: Mapping[str, PartnerSpec]) -> Any:
    from teamgym.wrappers import SingleAgentView

    others = {role: spec for role, spec in partners.items() if role != config.role}
    return SingleAgentView(env, config.role, resolve_partners(env, others))


def _reset(view: Any, task_id: Any) -> dict[str, Any]:
    from teamgym.rollout.engine import task_seed

    observation, _ = view.reset(seed=task_seed(task_id), options={"task_id": task_id})
    return observation


class TeamgymTasksetConfig(vf.TasksetConfig):
    """Which teamgym env, role and tasks (``--env.taskset.<field>`` on verifiers' command line)."""

    env_id: str = "plan_path-v0"
    """The teamgym env id (``teamgym.make(env_id, **env_kwargs)``)."""
    env_kwargs: dict[str, Any] = {}
    """Options for ``teamgym.make``."""
    role: str = "planner"
    """The role the model plays."""
    partners: dict[str, str] = {"tool": "scripted"}
    """``{role: "scripted" | "scripted:NAME"}`` for every other role (callables: ``TeamgymEnv(partners=...)``)."""
    task_ids: list[Any] | None = None
    """The env's task ids to play (None: the env's own list, ``env.unwrapped.task_ids()``, else seeds 0..63)."""


class TeamgymData(vf.TaskData):
    info: dict
    """``{"env_id", "task_id", "role"}``: what the env replays the episode from."""


class TeamgymTask(vf.Task[TeamgymData, vf.State, vf.TaskConfig]):
    pass


class TeamgymTaskset(vf.Taskset[TeamgymTask, TeamgymTasksetConfig]):
    """One prompt-less task per env task id (the env renders the role's observations)."""

    def load(self) -> Iterator[TeamgymTask]:
        config = self.config
        check_partners(config.partners)
        env = _make_env(config)
        if config.role not in env.possible_agents:
            raise InvalidArgumentError(
                f"role={config.role!r}: {config.env_id} has roles {list(env.possible_agents)}; set "
                "--env.taskset.role to one of them"
            )
        task_ids = config.task_ids
        if task_ids is None:
            task_ids = list(env.unwrapped.task_ids() or range(64))
        env.close()
        for task_id in task_ids:
            yield TeamgymTask(
                TeamgymData(name=f"{config.env_id}#{task_id}#{config.role}",
                            info={"env_id": config.env_id, "task_id": task_id, "role": config.role}),
                config.task,
            )


class TeamgymEnvConfig(vf.EnvConfig):
    """The env's one agent and its turn limit."""

    player: vf.AgentConfig = vf.AgentConfig(harness=NullHarnessConfig(id="null"), runtime=SubprocessConfig())
    """The trained role's agent: verifiers' tool-less chat harness, run locally."""
    max_turns: int = 16
    """The most turns of the role per episode; the exchange ends after it."""


class TeamgymEnv(vf.Env[TeamgymEnvConfig]):
    """One episode of the taskset's role per task, the env stepped host-side (see the module docstring).

    Args:
        config: verifiers' env config (its ``taskset`` a :class:`TeamgymTasksetConfig`).
        partners: callables (or scripted names) that replace the config's partners, for runs built in Python.
    """

    def __init__(self, config: TeamgymEnvConfig, partners: Mapping[str, PartnerSpec] | None = None) -> None:
        super().__init__(config)
        self.partners: dict[str, PartnerSpec] = {**self.taskset.config.partners, **dict(partners or {})}
        check_partners(self.partners)

    async def run(self, task: TeamgymTask, agents: vf.Agents) -> None:
        config = self.taskset.config
        env = _make_env(config)
        view = _view(env, config, self.partners)
        observation = await asyncio.to_thread(_reset, view, task.data.info["task_id"])
        rewards: list[float] = []
        info: dict[str, Any] = {}
        # A prompt-less task: the role's first observation opens the exchange as the user's first message.
        async with agents.player.interaction(task) as interaction:
            segment = await interaction.turn(observation["prompt"])
            while not segment.terminated:
                observation, reward, terminated, truncated, info = await asyncio.to_thread(
                    view.step, segment.last_reply)
                rewards.append(float(reward))
                if terminated or truncated or len(rewards) >= self.config.max_turns:
                    break
                segment = await interaction.turn(observation["prompt"])
        view.close()
        trace = interaction.trace
        trace.record_reward("teamgym_reward", sum(rewards), 1.0)
        trace.info["teamgym_turn_rewards"] = rewards
        trace.info["teamgym_success"] = bool(info.get(EPISODE_KEY, {}).get("success", False))
