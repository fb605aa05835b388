"""Group-free value baselines (direction C): SPO's Beta tracker and a per-agent version.

Usage per batch: ``adv = tracker.advantages(keys, rewards)`` (baseline read *before* the update), then
``tracker.update(keys, rewards)``. Keys are any hashables (prompt id, or ``(task, agent, turn)`` tuples).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import torch

from teamgym.algos._checks import check_values
from teamgym.errors import CheckpointError, InvalidArgumentError

__all__ = ["BetaValueTracker", "PerAgentValueTracker", "adaptive_rho"]


def adaptive_rho(kl: float, *, d_half: float = 0.06, rho_min: float = 0.875, rho_max: float = 0.96) -> float:
    """SPO's KL-adaptive forgetting factor ``clamp(2^(-D / D_half), rho_min, rho_max)`` (arXiv 2509.13232).

    ``kl`` is D, the mean ``|logpi_old - logpi_new|`` over the prompt's last response: a policy that moved
    more forgets the old estimate faster.
    """
    if kl < 0 or not math.isfinite(kl):
        raise InvalidArgumentError(
            f"kl must be a finite number >= 0, got {kl}: pass mean |logp_old - logp_new|"
        )
    return min(max(2.0 ** (-kl / d_half), rho_min), rho_max)


class BetaValueTracker:
    """SPO per-key success-probability tracker: ``p = alpha / (alpha + beta)`` (arXiv 2509.13232).

    Update ``alpha <- rho*alpha + r``, ``beta <- rho*beta + (1 - r)``; with constant rho, ``alpha + beta``
    converges to ``1 / (1 - rho)`` (8 for the default 0.875). New keys start at ``alpha = beta = prior``
    (0.5), or from offline samples via :meth:`init_from_samples`. Rewards must lie in [0, 1]; others are
    mapped linearly from ``reward_range`` (e.g. (-1, 1)) and rejected if outside it.

    Args:
        rho: constant forgetting factor in (0, 1); used when :meth:`update` gets no ``kl``.
        prior: initial alpha and beta for an unseen key.
        reward_range: ``(low, high)`` mapped linearly onto [0, 1].
        d_half, rho_min, rho_max: the KL-adaptive rule of :func:`adaptive_rho`.
    """

    def __init__(
        self,
        rho: float = 0.875,
        *,
        prior: float = 0.5,
        reward_range: tuple[float, float] = (0.0, 1.0),
        d_half: float = 0.06,
        rho_min: float = 0.875,
        rho_max: float = 0.96,
    ):
        if not 0.0 < rho < 1.0:
            raise InvalidArgumentError(f"rho must be in (0, 1), got {rho}: SPO uses 0.875")
        if not prior > 0:
            raise InvalidArgumentError(f"prior must be > 0, got {prior}: SPO uses 0.5")
        low, high = map(float, reward_range)
        if not high > low:
            raise InvalidArgumentError(
                f"reward_range must be (low, high) with high > low, got {reward_range}"
            )
        if not 0.0 < rho_min <= rho_max < 1.0:
            raise InvalidArgumentError(f"need 0 < rho_min <= rho_max < 1, got {rho_min}, {rho_max}")
        self.rho, self.prior, self.reward_range = float(rho), float(prior), (low, high)
        self.d_half, self.rho_min, self.rho_max = float(d_half), float(rho_min), float(rho_max)
        self._state: dict[Hashable, list[float]] = {}

    def __len__(self) -> int:
        return len(self._state)

    def _scaled(self, rewards: torch.Tensor | Sequence[float]) -> list[float]:
        values = check_values("rewards", torch.as_tensor(rewards, dtype=torch.float64)).tolist()
        low, high = self.reward_range
        for value in values:
            if not low <= value <= high:
                raise InvalidArgumentError(
                    f"reward {value} is outside reward_range {self.reward_range}: widen reward_range"
                )
        return [(value - low) / (high - low) for value in values]

    def alpha_beta(self, key: Hashable) -> tuple[float, float]:
        """The current ``(alpha, beta)`` of ``key`` (the prior if unseen)."""
        alpha, beta = self._state.get(key, (self.prior, self.prior))
        return float(alpha), float(beta)

    def baseline(self, keys: Sequence[Hashable]) -> torch.Tensor:
        """``p = alpha/(alpha+beta)`` per key in [0, 1] units, without updating; ``(N,)`` float64."""
        out = [a / (a + b) for a, b in map(self.alpha_beta, keys)]
        return torch.tensor(out, dtype=torch.float64)

    def update(
        self,
        keys: Sequence[Hashable],
        rewards: torch.Tensor | Sequence[float],
        *,
        kl: Sequence[float] | None = None,
    ) -> None:
        """Fold each reward into its key's Beta, in order; ``kl`` per row switches to the adaptive rho."""
        scaled = self._scaled(rewards)
        if len(keys) != len(scaled) or (kl is not None and len(kl) != len(scaled)):
            raise InvalidArgumentError(
                f"keys ({len(keys)}), rewards ({len(scaled)}) and kl must have one entry per row: align them"
            )
        for i, (key, r) in enumerate(zip(keys, scaled, strict=True)):
            rho = (
                self.rho
                if kl is None
                else adaptive_rho(
                    float(kl[i]), d_half=self.d_half, rho_min=self.rho_min, rho_max=self.rho_max
                )
            )
            alpha, beta = self.alpha_beta(key)
            self._state[key] = [rho * alpha + r, rho * beta + (1.0 - r)]

    def advantages(
        self, keys: Sequence[Hashable], rewards: torch.Tensor | Sequence[float], *, eps: float = 1e-8
    ) -> torch.Tensor:
        """SPO advantage ``r - p`` (p read before any update), batch-normalised ``(A - mean)/(std + eps)``.

        Does not update the tracker. ``(N,)`` float64; a batch of one gives 0.
        """
        raw = torch.tensor(self._scaled(rewards), dtype=torch.float64) - self.baseline(keys)
        if raw.numel() < 2:
            return torch.zeros_like(raw)
        return (raw - raw.mean()) / (raw.std() + eps)

    def sampling_weights(self, keys: Sequence[Hashable]) -> torch.Tensor:
        """Prioritised-sampling weights ``sqrt(p(1-p)) + 0.05`` (SPO): uncertain prompts first."""
        p = self.baseline(keys)
        return torch.sqrt(p * (1 - p)) + 0.05

    def init_from_samples(self, key: Hashable, successes: float, samples: int) -> None:
        """Warm-start ``key`` from ``samples`` offline tries with ``successes`` of them correct (SPO).

        ``alpha0 = N0 (s + 0.5)/(N + 1)``, ``beta0 = N0 (N - s + 0.5)/(N + 1)``, ``N0 = 1/(1 - rho_min)``.
        """
        if samples < 1 or not 0 <= successes <= samples:
            raise InvalidArgumentError(
                f"need samples >= 1 and 0 <= successes <= samples, got {successes}/{samples}"
            )
        n0 = 1.0 / (1.0 - self.rho_min)
        self._state[key] = [
            n0 * (successes + 0.5) / (samples + 1),
            n0 * (samples - successes + 0.5) / (samples + 1),
        ]

    def state_dict(self) -> dict:
        """Plain-Python state (keys kept as they are; pickle with torch.save)."""
        return {
            "config": {
                "rho": self.rho,
                "prior": self.prior,
                "reward_range": self.reward_range,
                "d_half": self.d_half,
                "rho_min": self.rho_min,
                "rho_max": self.rho_max,
            },
            "keys": list(self._state),
            "alpha_beta": [list(v) for v in self._state.values()],
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore from :meth:`state_dict`; raises ``CheckpointError`` if the dict is malformed."""
        try:
            config, keys, values = state["config"], state["keys"], state["alpha_beta"]
            if len(keys) != len(values):
                raise ValueError("keys and alpha_beta differ in length")
            self.__init__(
                config["rho"],
                prior=config["prior"],
                reward_range=tuple(config["reward_range"]),
                d_half=config["d_half"],
                rho_min=config["rho_min"],
                rho_max=config["rho_max"],
            )
            self._state = {key: [float(a), float(b)] for key, (a, b) in zip(keys, values, strict=True)}
        except (KeyError, TypeError, ValueError) as err:
            raise CheckpointError(
                f"not a BetaValueTracker state_dict ({err}): save it with state_dict()"
            ) from None


class PerAgentValueTracker(BetaValueTracker):
    """Per-agent SPO tracker (teamgym design, direction C): one Beta per (task, agent, sub-key).

    The sub-key is the turn index or an anchor-state id, so each agent's baseline tracks its own success
    probability in its own situations. Advantages are batch-normalised per agent (as Dr.MAS), so an agent with
    rare successes is not drowned by one with frequent successes. With one agent (and ``sub_keys=None``) every
    method equals :class:`BetaValueTracker` keyed by task.
    """

    @staticmethod
    def keys_for(
        tasks: Sequence[Hashable], agents: Sequence[Hashable], sub_keys: Sequence[Hashable] | None = None
    ):
        """The per-row tracker keys ``(task, agent[, sub_key])``."""
        lengths = {len(tasks), len(agents)} | ({len(sub_keys)} if sub_keys is not None else set())
        if len(lengths) > 1:
            raise InvalidArgumentError(
                f"tasks, agents and sub_keys must have equal lengths, got {sorted(lengths)}"
            )
        if sub_keys is None:
            return list(zip(tasks, agents, strict=True))
        return list(zip(tasks, agents, sub_keys, strict=True))

    def agent_advantages(
        self,
        tasks: Sequence[Hashable],
        agents: Sequence[Hashable],
        rewards: torch.Tensor | Sequence[float],
        sub_keys: Sequence[Hashable] | None = None,
        *,
        eps: float = 1e-8,
    ) -> torch.Tensor:
        """``r - p`` (p before the update), standardised within each agent's rows of the batch; ``(N,)``."""
        keys = self.keys_for(tasks, agents, sub_keys)
        raw = torch.tensor(self._scaled(rewards), dtype=torch.float64) - self.baseline(keys)
        out = torch.zeros_like(raw)
        by_agent: dict[Hashable, list[int]] = {}
        for i, agent in enumerate(agents):
            by_agent.setdefault(agent, []).append(i)
        for rows in by_agent.values():
            if len(rows) > 1:
                index = torch.tensor(rows)
                part = raw[index]
                out[index] = (part - part.mean()) / (part.std() + eps)
        return out

    def agent_update(
        self,
        tasks: Sequence[Hashable],
        agents: Sequence[Hashable],
        rewards: torch.Tensor | Sequence[float],
        sub_keys: Sequence[Hashable] | None = None,
        *,
        kl: Sequence[float] | None = None,
    ) -> None:
        """:meth:`update` with keys ``(task, agent[, sub_key])``."""
        self.update(self.keys_for(tasks, agents, sub_keys), rewards, kl=kl)
