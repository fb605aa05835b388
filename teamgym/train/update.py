"""One policy-gradient update over an agent-turn batch: PPO-clip from ``teamgym.algos``, micro-batched.

Each role's rows go to the model that generated them (one model for all roles when it is shared), whose optimizer is
keyed by the model's name (``shared`` or the role); then each optimizer steps once per epoch.

The loss of a model's rows is one aggregation (``ppo.aggregation``) of one per-token loss, the PPO-clip term plus the
KL and entropy terms, so that the whole batch's loss never depends on how it is cut into micro-batches: each
micro-batch's aggregate is weighted by its share of the aggregation's denominator (its tokens for ``token-mean``, its
rows for the sequence means) and the gradients are summed. ``seq-mean-token-sum-norm`` (Dr.GRPO, arXiv 2503.20783)
divides each sequence's token sum by one constant for the whole run, the completion budget
(``norm_length``), not by the longest completion of a micro-batch (what a padded width gives: verl's TODO), which
changed the gradient with ``micro_batch_size``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch

from teamgym.algos import AGGREGATIONS, aggregate, kl_penalty, ppo_clip_loss
from teamgym.errors import InvalidArgumentError, check_choice, check_int, check_number
from teamgym.rollout.batch import AgentTurnBatch
from teamgym.rollout.hf import HFPolicy
from teamgym.train.reference import ReferencePolicies

__all__ = ["KL_REFERENCES", "PPOConfig", "UpdateStats", "policy_update", "pad_logprobs"]

#: What the KL term is taken against (``ppo.kl_reference``).
KL_REFERENCES = ("sampler", "reference")


@dataclass(frozen=True)
class PPOConfig:
    """The policy update: PPO-clip per role, its optimizer and its loss.

    Attributes:
        lr: Adam learning rate of every role (1e-4: over five seeds of the main job 5e-4 fell below the warm start
            on four, 1e-4 rose above it on four; docs/training.md).
        role_lr: per-role learning rates overriding ``lr`` (needs ``shared_model=False``), e.g. ``{"tool": 1e-4}``.
        weight_decay: AdamW weight decay.
        micro_batch_size: rows per forward/backward pass (gradients are accumulated over the batch).
        epochs: passes over each rollout batch (AT-GRPO: 1).
        clip_low: PPO lower clip (0.2).
        clip_high: PPO upper clip (0.2 PPO; 0.28 DAPO clip-higher).
        dual_clip: dual-clip bound for negative advantages (AT-GRPO: 3.0; None disables).
        aggregation: loss aggregation of every loss term: ``token-mean`` (DAPO) | ``seq-mean-token-mean`` (GRPO) |
            ``seq-mean-token-sum-norm`` (Dr.GRPO: each sequence's token sum divided by the completion budget, a
            constant). The loss is the same whatever ``micro_batch_size``.
        kl_coef: weight of the k3 KL term (0 = none, as AT-GRPO and DAPO; GRPO: 0.04 with ``kl_reference=
            "reference"``).
        kl_reference: what the KL is taken against: ``sampler`` (the logprobs the rollout was sampled with: a
            trust-region penalty whose gradient is 0 on-policy, i.e. in the first epoch) or ``reference`` (GRPO's
            ``KL(pi_theta || pi_ref)``: a frozen copy of each model as RL starts, after the warm start, or the base
            model with its LoRA adapters disabled; :mod:`teamgym.train.reference`).
        entropy_coef: entropy bonus weight (0 = none).
        max_grad_norm: gradient clipping norm (also of the SFT warm start).
        drop_zero_variance: DAPO dynamic sampling: drop tree nodes whose rewards are all equal (they carry no
            gradient); tree rollouts only.
    """

    lr: float = 1e-4
    role_lr: dict[str, float] = field(default_factory=dict)
    weight_decay: float = 0.0
    micro_batch_size: int = 64
    epochs: int = 1
    clip_low: float = 0.2
    clip_high: float = 0.2
    dual_clip: float | None = 3.0
    aggregation: str = "token-mean"
    kl_coef: float = 0.0
    kl_reference: str = "sampler"
    entropy_coef: float = 0.0
    max_grad_norm: float = 1.0
    drop_zero_variance: bool = False

    def __post_init__(self) -> None:
        check_int("ppo.micro_batch_size", self.micro_batch_size, 1)
        check_int("ppo.epochs", self.epochs, 1)
        for name in ("lr", "max_grad_norm"):
            check_number(f"ppo.{name}", getattr(self, name), low=0.0, inclusive=False)
        for name in ("weight_decay", "kl_coef", "entropy_coef", "clip_high"):
            check_number(f"ppo.{name}", getattr(self, name), low=0.0)
        check_number("ppo.clip_low", self.clip_low, low=0.0)
        if not self.clip_low < 1:
            raise InvalidArgumentError(f"config field ppo.clip_low={self.clip_low!r}: expected a float in [0, 1), e.g. "
                                       "0.2")
        if self.dual_clip is not None and not (isinstance(self.dual_clip, (int, float)) and self.dual_clip > 1):
            raise InvalidArgumentError(f"config field ppo.dual_clip={self.dual_clip!r}: expected a float > 1 "
                                       "(AT-GRPO: 3.0) or None")
        check_choice("ppo.aggregation", self.aggregation, AGGREGATIONS)
        check_choice("ppo.kl_reference", self.kl_reference, KL_REFERENCES)
        if not isinstance(self.role_lr, dict):
            raise InvalidArgumentError(f"config field ppo.role_lr={self.role_lr!r}: expected a dict of role -> lr")
        for role, value in self.role_lr.items():
            check_number(f"ppo.role_lr[{role!r}]", value, low=0.0, inclusive=False)

    def lr_of(self, name: str) -> float:
        """The learning rate of the policy named ``name`` (a role, or ``shared``)."""
        return self.role_lr.get(name, self.lr)


@dataclass
class UpdateStats:
    """Averages over the update's tokens (``kl``, ``kl_reference``, ``entropy``) or as the loss aggregates them.

    ``kl`` is always the k3 KL to the sampling policy (how far the update went); ``kl_reference`` the k3 KL to the
    reference policies, when ``ppo.kl_reference="reference"`` (None otherwise).
    """

    loss: float = 0.0
    entropy: float = 0.0
    kl: float = 0.0
    kl_reference: float | None = None
    clip_fraction: float = 0.0
    grad_norm: float = 0.0
    rows: int = 0
    tokens: int = 0


def pad_logprobs(logprobs: Sequence[Sequence[float]], width: int) -> torch.Tensor:
    """``(B, width)`` zero-padded tensor of per-token logprobs."""
    out = torch.zeros(len(logprobs), width)
    for i, row in enumerate(logprobs):
        if row:
            out[i, : len(row)] = torch.tensor(row[:width])
    return out


def policy_update(batch: AgentTurnBatch, advantages: torch.Tensor, policies: Mapping[str, HFPolicy],
                  optimizers: Mapping[str, torch.optim.Optimizer], *, ppo: PPOConfig, temperature: float,
                  norm_length: int, reference: ReferencePolicies | None = None) -> UpdateStats:
    """One epoch of PPO-clip over ``batch`` (rows with empty completions carry no tokens and are skipped).

    Args:
        batch: the rows to learn from.
        advantages: ``(N,)`` one per row.
        policies: ``{role: policy}``; roles may share one policy object.
        optimizers: ``{policy name: optimizer}`` (``shared``, or the role).
        ppo: clipping, aggregation, KL and entropy weights, micro-batch size, gradient clipping.
        temperature: the sampling temperature (the rollout logprobs were taken at it).
        norm_length: the constant divisor of ``seq-mean-token-sum-norm`` (the completion budget in tokens).
        reference: the reference policies (needed when ``ppo.kl_reference="reference"``).
    """
    if ppo.kl_reference == "reference" and reference is None:
        raise InvalidArgumentError("ppo.kl_reference='reference' needs the reference policies: pass reference=...")
    stats = UpdateStats(kl_reference=0.0 if ppo.kl_reference == "reference" else None)
    by_model: dict[str, list[int]] = {}
    for i, agent in enumerate(batch.agent):
        if batch.completion_ids[i]:
            by_model.setdefault(policies[agent].name, []).append(i)
    total_tokens = sum(len(batch.completion_ids[i]) for rows in by_model.values() for i in rows)
    for name, rows in by_model.items():
        policy = policies[batch.agent[rows[0]]]
        optimizer = optimizers[name]
        optimizer.zero_grad(set_to_none=True)
        model_tokens = sum(len(batch.completion_ids[i]) for i in rows)
        for start in range(0, len(rows), ppo.micro_batch_size):
            chunk = rows[start:start + ppo.micro_batch_size]
            prompts = [batch.prompt_ids[i] for i in chunk]
            completions = [batch.completion_ids[i] for i in chunk]
            logprobs, entropy, mask = policy.score(prompts, completions, temperature=temperature)
            old = pad_logprobs([batch.logprobs[i] for i in chunk], logprobs.shape[1]).to(logprobs.device)
            adv = advantages[chunk].to(logprobs.device)
            result = ppo_clip_loss(logprobs, old, adv, mask, clip_low=ppo.clip_low, clip_high=ppo.clip_high,
                                   dual_clip=ppo.dual_clip, aggregation=ppo.aggregation, norm_length=norm_length)
            sampler_kl = kl_penalty(logprobs, old)  # (B, T)
            reference_kl = None
            if ppo.kl_reference == "reference":
                reference_kl = kl_penalty(logprobs, reference.logprobs(policy, prompts, completions,
                                                                       temperature=temperature))
            loss = result.loss
            extra = _extra_terms(ppo, entropy, sampler_kl if reference_kl is None else reference_kl)
            if extra is not None:
                loss = loss + aggregate(extra, mask, ppo.aggregation, norm_length=norm_length)
            chunk_tokens = int(mask.sum().item())
            share = chunk_tokens / model_tokens if ppo.aggregation == "token-mean" else len(chunk) / len(rows)
            (loss * share).backward()
            weight = chunk_tokens / max(total_tokens, 1)
            stats.loss += result.loss.item() * share * model_tokens / max(total_tokens, 1)
            stats.entropy += _token_mean(entropy, mask) * weight
            stats.kl += _token_mean(sampler_kl, mask) * weight
            if reference_kl is not None:
                stats.kl_reference += _token_mean(reference_kl, mask) * weight
            stats.clip_fraction += float(result.clip_fraction) * weight
            stats.tokens += chunk_tokens
            stats.rows += len(chunk)
        params = [p for group in optimizer.param_groups for p in group["params"]]
        stats.grad_norm = max(stats.grad_norm, float(torch.nn.utils.clip_grad_norm_(params, ppo.max_grad_norm)))
        optimizer.step()
    return stats


def _extra_terms(ppo: PPOConfig, entropy: torch.Tensor, kl: torch.Tensor) -> torch.Tensor | None:
    """The per-token KL and entropy terms added to the PPO-clip loss, ``(B, T)``; None when both weights are 0."""
    terms = [coef * value for coef, value in ((ppo.kl_coef, kl), (-ppo.entropy_coef, entropy)) if coef != 0]
    return sum(terms[1:], terms[0]) if terms else None


def _token_mean(values: torch.Tensor, mask: torch.Tensor) -> float:
    return float(((values * mask).sum() / mask.sum().clamp_min(1.0)).detach())
