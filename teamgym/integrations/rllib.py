"""RLlib: PPO per role on a :class:`~teamgym.integrations.marl.CandidateChoiceEnv`, through RLlib's PettingZoo wrapper.

``pip install 'teamgym[rllib]'`` (``ray[rllib]``). The candidate-choice env goes through
``ray.rllib.env.wrappers.pettingzoo_env.PettingZooEnv`` (an AEC env as RLlib's ``MultiAgentEnv``), each role
mapped to its own PPO module (``policy_mapping_fn``: the agent id is the module id):

>>> from teamgym.integrations.marl import candidate_env, success_rate
>>> from teamgym.integrations.rllib import PPOSettings, train_ppo
>>> make_env = lambda: candidate_env("plan_path-v0", max_turns=2)
>>> selectors = train_ppo(make_env, PPOSettings(seed=0))  # doctest: +SKIP
>>> success_rate(make_env, selectors.choose, task_ids=range(2**31, 2**31 + 100))  # doctest: +SKIP

Credit: RLlib's wrapper reads ``last()``, so a role is paid everything it earned since it last acted (the tool
gets the team reward of the planner's step on its next turn, or at the end); discounting works as usual.
``train_ppo`` starts a local Ray (``ray.init(num_cpus=...)``) when none is running and shuts it down after.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from teamgym.errors import DependencyNotInstalled, check_int, check_number
from teamgym.integrations.marl import CandidateChoiceEnv, numeric_info

__all__ = ["PPOSettings", "RLlibSelectors", "rllib_env", "train_ppo"]


def _rllib() -> Any:
    try:
        import ray
        from ray.rllib.algorithms.ppo import PPOConfig  # noqa: F401 (RLlib's own dependencies import here)
    except ImportError as err:
        raise DependencyNotInstalled("ray[rllib]", "rllib", f"training selectors with RLlib ({err})") from None
    return ray


@dataclass
class PPOSettings:
    """Knobs of :func:`train_ppo`.

    Attributes:
        iterations: ``algo.train()`` calls. Default 8.
        batch_size: env steps per iteration (``train_batch_size_per_learner``). Default 400.
        minibatch_size: PPO minibatch. Default 100.
        epochs: passes over each batch. Default 6.
        lr: learning rate. Default 1e-3.
        gamma: discount. Default 0.9.
        entropy_coeff: entropy bonus. Default 0.0.
        hidden_sizes: each role's network (``fcnet_hiddens``). Default ``(64,)``.
        num_cpus: CPUs of the local Ray started when none runs. Default 2.
        seed: RLlib's seed. Default 0.
    """

    iterations: int = 8
    batch_size: int = 400
    minibatch_size: int = 100
    epochs: int = 6
    lr: float = 1e-3
    gamma: float = 0.9
    entropy_coeff: float = 0.0
    hidden_sizes: tuple[int, ...] = (64,)
    num_cpus: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("iterations", "batch_size", "minibatch_size", "epochs", "num_cpus"):
            check_int(name, getattr(self, name), 1)
        check_int("seed", self.seed, 0)
        check_number("lr", self.lr, low=0.0, inclusive=False, hint="1e-3")
        check_number("gamma", self.gamma, low=0.0)
        check_number("entropy_coeff", self.entropy_coeff, low=0.0)
        for size in self.hidden_sizes:
            check_int("hidden_sizes[i]", size, 1)


class RLlibSelectors:
    """The trained per-role PPO modules; :meth:`choose` plays the most probable candidate."""

    def __init__(self, modules: dict[str, Any]):
        self.modules = modules

    def choose(self, agent: str, observation: np.ndarray) -> int:
        import torch

        with torch.no_grad():
            out = self.modules[agent].forward_inference({"obs": torch.as_tensor(observation[None])})
        return int(out["action_dist_inputs"].argmax(dim=-1)[0])


def rllib_env(env: CandidateChoiceEnv) -> Any:
    """``env`` as RLlib's ``MultiAgentEnv`` (its ``PettingZooEnv`` wrapper), with infos cut to numbers.

    RLlib keeps each step's infos with the episode; a teamgym info's chat messages and transcripts would be carried
    along for nothing, so only ``team``, ``local`` and ``success`` are passed on (``.env.infos`` has them all).
    """
    _rllib()
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    class TeamgymRLlibEnv(PettingZooEnv):
        def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
            observations, _ = super().reset(seed=seed, options=options)
            return observations, {}

        def step(self, action: dict) -> tuple[dict, dict, dict, dict, dict]:
            observations, rewards, terminated, truncated, infos = super().step(action)
            return observations, rewards, terminated, truncated, {a: numeric_info(i) for a, i in infos.items()}

    return TeamgymRLlibEnv(env)


def train_ppo(make_env: Callable[[], CandidateChoiceEnv], settings: PPOSettings | None = None) -> RLlibSelectors:
    """Train one PPO module per role with RLlib on a local Ray; returns the greedy selectors."""
    ray = _rllib()
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.tune.registry import register_env

    settings = settings or PPOSettings()
    roles = list(make_env().possible_agents)
    name = f"teamgym_candidates_{id(make_env)}"
    register_env(name, lambda _config: rllib_env(make_env()))
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=settings.num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        model = {"fcnet_hiddens": list(settings.hidden_sizes), "vf_share_layers": False}
        config = (
            PPOConfig()
            .environment(name)
            .env_runners(num_env_runners=0, num_envs_per_env_runner=1)
            .learners(num_learners=0)
            .multi_agent(policies=set(roles), policy_mapping_fn=lambda agent_id, *args, **kwargs: agent_id)
            .rl_module(
                rl_module_spec=MultiRLModuleSpec(
                    rl_module_specs={role: RLModuleSpec(model_config=model) for role in roles}
                )
            )
            .training(
                train_batch_size_per_learner=settings.batch_size,
                minibatch_size=settings.minibatch_size,
                num_epochs=settings.epochs,
                lr=settings.lr,
                gamma=settings.gamma,
                entropy_coeff=settings.entropy_coeff,
            )
            .debugging(seed=settings.seed)
        )
        algo = config.build_algo()
        for _ in range(settings.iterations):
            algo.train()
        modules = {role: algo.get_module(role) for role in roles}
        algo.stop()
        return RLlibSelectors(modules)
    finally:
        if started:
            ray.shutdown()
