"""Tianshou: one DQN selector per role on a :class:`~teamgym.integrations.marl.CandidateChoiceEnv`.

``pip install 'teamgym[tianshou]'`` (Tianshou 2.0). The candidate-choice env goes through Tianshou's own
``PettingZooEnv`` and its multi-agent algorithm (``MultiAgentOffPolicyAlgorithm``, which dispatches each
transition to the learner of the role that acted), one ``DQN`` per role:

>>> from teamgym.integrations.marl import candidate_env
>>> from teamgym.integrations.tianshou import SelectorConfig, train_selectors
>>> make_env = lambda: candidate_env("plan_path-v0", max_turns=2)
>>> selectors = train_selectors(make_env, SelectorConfig(seed=0))  # doctest: +SKIP
>>> from teamgym.integrations.marl import success_rate
>>> success_rate(make_env, selectors.choose, task_ids=range(2**31, 2**31 + 100))  # doctest: +SKIP

Credit: Tianshou's ``PettingZooEnv`` stores each step's reward vector in the row of the agent that acted, and its
multi-agent algorithm gives a learner only its own rows; a reward a teammate's step brings this agent (the
planner's step brings the tool its share of the team reward) is not seen by it, and a row's "next observation" is
the teammate's. So the default ``gamma`` is 0: each role learns a reranker of its candidates from the reward of its
own step (the tool from its ``plan`` term, the planner from the team reward of its step).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from teamgym.errors import DependencyNotInstalled, check_int, check_number
from teamgym.integrations.marl import CandidateChoiceEnv, numeric_info

__all__ = ["SelectorConfig", "Selectors", "tianshou_env", "train_selectors"]


def _tianshou() -> Any:
    try:
        import tianshou
    except ImportError:
        raise DependencyNotInstalled("tianshou", "tianshou", "training selectors with Tianshou") from None
    return tianshou


@dataclass
class SelectorConfig:
    """Knobs of :func:`train_selectors`.

    Attributes:
        hidden_sizes: the Q-network's hidden layers (one network per role). Default ``(64,)``.
        lr: Adam's learning rate. Default 1e-3.
        gamma: discount (see the module docstring for why 0 is the default). Default 0.0.
        eps_train: epsilon-greedy exploration while collecting. Default 0.2.
        epochs: training epochs. Default 2.
        steps_per_epoch: env steps collected per epoch (all agents' steps count). Default 1000.
        collect_steps: env steps collected between updates. Default 20.
        updates_per_step: gradient steps per collected env step. Default 0.5.
        batch_size: transitions per gradient step. Default 64.
        buffer_size: replay buffer size (across the training envs). Default 20,000.
        num_envs: training envs stepped together (``DummyVectorEnv``). Default 4.
        seed: seeds torch, the collector's envs and exploration. Default 0.
        torch_threads: torch's intra-op threads while training (restored afterwards); ``None`` leaves torch's
            setting. Default 1: the networks are tiny, and on a shared CPU more threads make each step slower.
    """

    hidden_sizes: tuple[int, ...] = (64,)
    lr: float = 1e-3
    gamma: float = 0.0
    eps_train: float = 0.2
    epochs: int = 2
    steps_per_epoch: int = 1000
    collect_steps: int = 20
    updates_per_step: float = 0.5
    batch_size: int = 64
    buffer_size: int = 20_000
    num_envs: int = 4
    seed: int = 0
    torch_threads: int | None = 1

    def __post_init__(self) -> None:
        for name in ("epochs", "steps_per_epoch", "collect_steps", "batch_size", "buffer_size", "num_envs"):
            check_int(name, getattr(self, name), 1)
        check_int("seed", self.seed, 0)
        check_number("lr", self.lr, low=0.0, inclusive=False, hint="1e-3")
        check_number("gamma", self.gamma, low=0.0)
        check_number("eps_train", self.eps_train, low=0.0)
        check_number("updates_per_step", self.updates_per_step, low=0.0, inclusive=False)
        if self.gamma > 1 or self.eps_train > 1:
            check_number("gamma and eps_train must be <= 1; gamma", min(self.gamma, 2.0), low=3.0)
        for size in self.hidden_sizes:
            check_int("hidden_sizes[i]", size, 1)
        if self.torch_threads is not None:
            check_int("torch_threads", self.torch_threads, 1)


class Selectors:
    """The trained per-role Q-networks: :meth:`choose` plays greedily (the index of the best-valued candidate)."""

    def __init__(self, algorithm: Any, agents: list[str]):
        self.algorithm = algorithm
        self.agents = agents

    def choose(self, agent: str, observation: np.ndarray) -> int:
        import torch

        model = self.algorithm.get_algorithm(agent).policy.model
        with torch.no_grad():
            values, _ = model(torch.as_tensor(observation[None], dtype=torch.float32))
        return int(values.argmax(dim=-1)[0])


def tianshou_env(env: CandidateChoiceEnv) -> Any:
    """``env`` wrapped in Tianshou's ``PettingZooEnv`` (identical spaces per agent, as it requires).

    The info a step returns is cut to numbers (``team``, ``local`` and, at the end, ``success``): Tianshou stores it
    in its replay buffer, which refuses the text, nested dicts and ``None`` of a teamgym info. The full infos stay
    on the wrapped env (``.env.infos``).
    """
    _tianshou()
    from tianshou.env.pettingzoo_env import PettingZooEnv

    class TeamgymPettingZooEnv(PettingZooEnv):
        def reset(self, *args: Any, **kwargs: Any) -> tuple[dict, dict]:
            observation, info = super().reset(*args, **kwargs)
            return observation, numeric_info(info)

        def step(self, action: Any) -> tuple[dict, list[float], bool, bool, dict]:
            observation, rewards, terminated, truncated, info = super().step(action)
            return observation, rewards, terminated, truncated, numeric_info(info)

    return TeamgymPettingZooEnv(env)


def train_selectors(make_env: Callable[[], CandidateChoiceEnv], config: SelectorConfig | None = None) -> Selectors:
    """Train one DQN per role with Tianshou's multi-agent off-policy algorithm; returns the greedy selectors."""
    _tianshou()
    import torch

    config = config or SelectorConfig()
    threads = torch.get_num_threads()
    if config.torch_threads is not None:
        torch.set_num_threads(config.torch_threads)
    try:
        return _train(make_env, config)
    finally:
        torch.set_num_threads(threads)


def _train(make_env: Callable[[], CandidateChoiceEnv], config: SelectorConfig) -> Selectors:
    import torch
    from tianshou.algorithm import DQN, MultiAgentOffPolicyAlgorithm
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector, CollectStats, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.trainer import OffPolicyTrainerParams
    from tianshou.utils.net.common import Net

    torch.manual_seed(config.seed)
    probe = tianshou_env(make_env())
    learners = []
    for _ in probe.agents:
        net = Net(
            state_shape=probe.observation_space.shape,
            action_shape=int(probe.action_space.n),
            hidden_sizes=list(config.hidden_sizes),
        )
        policy = DiscreteQLearningPolicy(model=net, action_space=probe.action_space, eps_training=config.eps_train)
        learners.append(DQN(policy=policy, optim=AdamOptimizerFactory(lr=config.lr), gamma=config.gamma))
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=learners, env=probe)
    train_envs = DummyVectorEnv([lambda: tianshou_env(make_env()) for _ in range(config.num_envs)])
    train_envs.seed(config.seed)
    collector = Collector[CollectStats](
        algorithm, train_envs, VectorReplayBuffer(config.buffer_size, config.num_envs), exploration_noise=True
    )
    collector.reset()
    collector.collect(n_step=config.batch_size * config.num_envs)
    algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=collector,
            test_collector=None,
            max_epochs=config.epochs,
            epoch_num_steps=config.steps_per_epoch,
            collection_step_num_env_steps=config.collect_steps,
            batch_size=config.batch_size,
            update_step_num_gradient_steps_per_sample=config.updates_per_step,
            multi_agent_return_reduction=lambda returns: returns.mean(axis=-1),
            verbose=False,
            show_progress=False,
        )
    )
    train_envs.close()
    return Selectors(algorithm, list(probe.agents))
