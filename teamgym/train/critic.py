"""The learned critics of ``--algo turn_ppo`` and ``--algo marft``: a small separate model that scores the state of each
agent-turn, and the estimators that turn its values into GAE advantages and train it.

Turn-PPO (arXiv 2512.17008; no public code, details unverified) is PPO on a turn-level MDP with a learned critic and
GAE over turns (gamma 0.99, lambda 0.9). Here:

* **The state** of a row is the prompt its agent saw (its token ids) and the agent's role: what the policy
  conditions on.
* **The critic** is one model shared by every role, separate from the policies (:class:`TurnCritic`): hashed unigram
  and bigram features of the prompt tokens plus a role feature, averaged, then a two-layer MLP. Separate, so that it
  works the same whatever generates and trains the policies (one shared model, one per role, per-role adapters, vLLM)
  and never perturbs the policy update; shared across roles with the role as a feature, so that one optimizer state
  holds it and roles with few turns borrow from the others. docs/training.md, "Turn-PPO's critic", says why not a
  value head on the base.
* **The chains**: each role's own turns in an episode, in step order, the next own turn one gamma away; a turn's
  reward is what its agent received up to its next own turn (the ``agent_rewards`` column, the credit rule of
  ``team_gigpo``). With one agent this is the single-agent turn-level MDP. Every chain ends with its episode (a
  trajectory rollout plays episodes to their end; a cut-off episode is terminal too).
* **Per batch** (:meth:`CriticEstimator.advantages`): the values ``V_old`` of every row (no gradient) -> GAE
  advantages and returns (:func:`teamgym.algos.turn_gae`) -> ``critic.epochs`` full-batch updates of the clipped
  value loss (:func:`teamgym.algos.value_loss`) towards the returns -> the advantages, whitened (``critic.whiten``).
  The critic and its Adam state are the estimator's state: every checkpoint holds them and ``--resume`` restores
  them exactly.

MARFT (arXiv 2504.16129; its code, ``SII-MARFT/MARFT``, read for the details) differs in the chain
(:class:`TeamCriticEstimator`): its agents act one after another within a step of a Flex-MG, each seeing the actions
before it, and its critic values ``V(s, a^{1:i-1})``, the state each agent acts in; GAE then runs over the team's
whole sequence of agent-turns (agent 1, agent 2, ... of step t, then step t + 1), gamma and lambda applying between
agents too (its defaults: 0.99 and 0.95). Here that chain is the episode's rows in step order (each env step is one
agent's turn, the env choosing who acts next), the state is the prompt the acting agent saw (which holds its
partners' earlier actions) and its role, and a turn's reward is what its step paid the team (the ``team_rewards``
column; MARFT's math env pays the team's score on the last agent's turn). docs/training.md, "MARFT", lists the
differences from MARFT's code.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from teamgym.algos import combine_ids, turn_gae, value_loss
from teamgym.errors import InvalidArgumentError
from teamgym.train.columns import Columns
from teamgym.train.sections import CriticConfig

__all__ = ["CriticEstimator", "TeamCriticEstimator", "TurnCritic"]

_MIX = 2654435761  # Knuth's multiplicative hash: neighbouring token ids land in distant buckets


class TurnCritic(nn.Module):
    """``V(s)`` of agent-turn states: mean of hashed feature embeddings (prompt tokens, token pairs, role) -> MLP.

    Args:
        buckets: hashed feature buckets.
        width: embedding and hidden width.
    """

    def __init__(self, *, buckets: int = 4096, width: int = 64):
        super().__init__()
        self.buckets = buckets
        self.embedding = nn.EmbeddingBag(buckets, width, mode="mean")
        self.hidden = nn.Linear(width, width)
        self.out = nn.Linear(width, 1)
        nn.init.zeros_(self.out.weight)  # every value starts at 0
        nn.init.zeros_(self.out.bias)

    def features(self, prompts: Sequence[Sequence[int]], roles: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(indices, offsets)`` of the rows' feature bags for :meth:`forward` (a stable hash: the same buckets in
        every process)."""
        indices: list[int] = []
        offsets: list[int] = []
        for prompt, role in zip(prompts, roles, strict=True):
            offsets.append(len(indices))
            tokens = [int(t) + 1 for t in prompt]
            indices.append(zlib.crc32(f"role:{role}".encode()) % self.buckets)
            indices.extend(t * _MIX % self.buckets for t in tokens)
            indices.extend((a * 1_000_003 + b) * _MIX % self.buckets for a, b in zip(tokens, tokens[1:]))
        return torch.tensor(indices, dtype=torch.long), torch.tensor(offsets, dtype=torch.long)

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        """``(N,)`` values of the feature bags."""
        return self.out(torch.tanh(self.hidden(self.embedding(indices, offsets)))).squeeze(-1)


class CriticEstimator:
    """``turn_ppo``: GAE advantages over each role's agent-turns from a learned critic, trained on each batch (module
    docstring).

    Args:
        config: the ``critic`` section.
        seed: seeds the critic's initial weights (without touching torch's global RNG).
    """

    name = "turn_ppo"
    rollouts = ("trajectory",)  # GAE needs each chain's next state on the episode's path
    columns = ("agent_rewards", "episode_ids", "agent_ids", "steps", "prompt_ids", "agent_names")

    def __init__(self, config: CriticConfig, *, seed: int = 0):
        self.config = config
        with torch.random.fork_rng(devices=[]):  # the CPU generator only: the trainer's streams stay as they were
            torch.default_generator.manual_seed(seed)
            self.critic = TurnCritic(buckets=config.buckets, width=config.width)
        self.optimizer = torch.optim.Adam(self.critic.parameters(), lr=config.lr)
        #: the last batch's critic numbers, for the step's metrics row
        self.metrics: dict[str, float] = {}

    def values(self, columns: Columns) -> torch.Tensor:
        """``(N,)`` the critic's current values of the rows' states (no gradient)."""
        with torch.no_grad():
            return self.critic(*self.critic.features(columns["prompt_ids"], columns["agent_names"]))

    def advantages(self, columns: Columns) -> torch.Tensor:
        """``(N,)`` float32 advantages from the critic before this batch; then the critic learns the batch's returns."""
        if columns.rows == 0:
            return torch.zeros(0)
        c = self.config
        features = self.critic.features(columns["prompt_ids"], columns["agent_names"])
        with torch.no_grad():
            old_values = self.critic(*features)  # (N,)
        rewards, chains = self.chains(columns)
        advantages, returns = turn_gae(rewards, old_values, chains, columns["steps"], gamma=c.gamma, lam=c.lam)
        returns = returns.to(old_values.dtype)
        losses = []
        for _ in range(c.epochs):
            self.optimizer.zero_grad(set_to_none=True)
            loss = value_loss(self.critic(*features), old_values, returns, clip=c.value_clip)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.critic.parameters(), c.max_grad_norm)
            self.optimizer.step()
            losses.append(float(loss.detach()))
        variance = float(returns.var()) if columns.rows > 1 else 0.0
        self.metrics = {
            "critic/loss": losses[0],
            "critic/value_mean": float(old_values.mean()),
            "critic/return_mean": float(returns.mean()),
            "critic/explained_variance": 1.0 - float((returns - old_values).var()) / variance if variance > 0
            else 0.0,
        }
        if c.whiten:
            advantages = whiten(advantages)
        return advantages.to(torch.float32)

    def chains(self, columns: Columns) -> tuple[torch.Tensor, torch.Tensor]:
        """``(rewards, chain ids)`` of the rows for the GAE: each role's own turns in its episode, credited with what
        its agent received up to its next own turn."""
        return columns["agent_rewards"], combine_ids(columns["episode_ids"], columns["agent_ids"])

    def state_dict(self) -> dict[str, Any]:
        return {"name": self.name, "critic": self.critic.state_dict(), "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state.get("name") != self.name or "critic" not in state:
            raise InvalidArgumentError(
                f"the checkpoint's estimator state is {state.get('name')!r}, not {self.name!r}'s critic: resume with "
                "the run's own config.json"
            )
        self.critic.load_state_dict(state["critic"])
        self.optimizer.load_state_dict(state["optimizer"])


class TeamCriticEstimator(CriticEstimator):
    """``marft``: GAE over the team's sequence of agent-turns in each episode, from the shared critic's
    ``V(s, a^{1:i-1})`` (module docstring); the critic, its training and its state as :class:`CriticEstimator`'s."""

    name = "marft"
    columns = ("team_rewards", "episode_ids", "steps", "prompt_ids", "agent_names")

    def chains(self, columns: Columns) -> tuple[torch.Tensor, torch.Tensor]:
        """``(rewards, chain ids)``: one chain per episode, every agent's turns in step order, each credited with
        what its step paid the team."""
        return columns["team_rewards"], columns["episode_ids"]


def whiten(values: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """``(values - mean) / sqrt(var + eps)``, the variance Bessel-corrected (verl's ``masked_whiten``); a single
    value is only centred (to 0)."""
    if values.numel() < 2:
        return values - values.mean() if values.numel() else values
    return (values - values.mean()) * torch.rsqrt(values.var() + eps)
