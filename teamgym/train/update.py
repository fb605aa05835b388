"""One policy-gradient update over an agent-turn batch: PPO-clip from ``teamgym.algos``, micro-batched, with one ratio
per token or, ``ppo.ratio="action"``, per completion (:func:`action_logprobs`).

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

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import torch

from teamgym.algos import aggregate, kl_penalty, ppo_clip_loss
from teamgym.errors import InvalidArgumentError
from teamgym.rollout.batch import AgentTurnBatch
from teamgym.rollout.hf import HFPolicy
from teamgym.train.reference import ReferencePolicies
from teamgym.train.sections import KL_REFERENCES, PPOConfig

__all__ = ["KL_REFERENCES", "PPOConfig", "UpdateStats", "action_logprobs", "policy_update", "pad_logprobs"]


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
                  norm_length: int, reference: ReferencePolicies | None = None,
                  models: Collection[str] | None = None) -> UpdateStats:
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
        models: the names of the models to update (``ppo.agent_iteration_interval``: one role's); the rows of the
            others are left out and their optimizers do not step. None: every model.
    """
    if ppo.kl_reference == "reference" and reference is None:
        raise InvalidArgumentError("ppo.kl_reference='reference' needs the reference policies: pass reference=...")
    stats = UpdateStats(kl_reference=0.0 if ppo.kl_reference == "reference" else None)
    by_model: dict[str, list[int]] = {}
    for i, agent in enumerate(batch.agent):
        if batch.completion_ids[i] and (models is None or policies[agent].name in models):
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
            new_ratio, old_ratio = (logprobs, old) if ppo.ratio == "token" else action_logprobs(logprobs, old, mask)
            result = ppo_clip_loss(new_ratio, old_ratio, adv, mask, clip_low=ppo.clip_low, clip_high=ppo.clip_high,
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


def action_logprobs(logprobs: torch.Tensor, old_logprobs: torch.Tensor,
                    mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``ppo.ratio="action"`` (MARFT's action-level PPO): each row's summed token log-probs, the action's, at every
    token of the row, ``(B, T)`` each. PPO-clip over them then clips one ratio per action, the same at each of its
    tokens; a per-row aggregation (``seq-mean-token-mean``) makes that one term per action."""
    mask = mask.to(logprobs.dtype)
    new = (logprobs * mask).sum(dim=1, keepdim=True).expand_as(logprobs)
    old = (old_logprobs * mask).sum(dim=1, keepdim=True).expand_as(old_logprobs)
    return new, old


def _extra_terms(ppo: PPOConfig, entropy: torch.Tensor, kl: torch.Tensor) -> torch.Tensor | None:
    """The per-token KL and entropy terms added to the PPO-clip loss, ``(B, T)``; None when both weights are 0."""
    terms = [coef * value for coef, value in ((ppo.kl_coef, kl), (-ppo.entropy_coef, entropy)) if coef != 0]
    return sum(terms[1:], terms[0]) if terms else None


def _token_mean(values: torch.Tensor, mask: torch.Tensor) -> float:
    return float(((values * mask).sum() / mask.sum().clamp_min(1.0)).detach())
