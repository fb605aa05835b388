"""One policy-gradient update over an agent-turn batch: PPO-clip from ``teamgym.algos``, micro-batched.

Each role's rows go to the model that generated them (one model for all roles when it is shared), whose optimizer is
keyed by the model's name (``shared`` or the role); gradients of the micro-batches are accumulated with weights that
make the sum equal the loss of the whole batch under the chosen aggregation (tokens for ``token-mean``, rows for the
sequence means), then each optimizer steps once per epoch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from teamgym.algos import entropy_bonus, kl_penalty, ppo_clip_loss
from teamgym.rollout.batch import AgentTurnBatch
from teamgym.rollout.hf import HFPolicy
from teamgym.train.sections import PPOConfig

__all__ = ["PPOConfig", "UpdateStats", "policy_update", "pad_logprobs"]


@dataclass
class UpdateStats:
    """Averages over the update's rows (weighted as the loss)."""

    loss: float = 0.0
    entropy: float = 0.0
    kl: float = 0.0
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
                  optimizers: Mapping[str, torch.optim.Optimizer], *, ppo: PPOConfig,
                  temperature: float) -> UpdateStats:
    """One epoch of PPO-clip over ``batch`` (rows with empty completions carry no tokens and are skipped).

    Args:
        batch: the rows to learn from.
        advantages: ``(N,)`` one per row.
        policies: ``{role: policy}``; roles may share one policy object.
        optimizers: ``{policy name: optimizer}`` (``shared``, or the role).
        ppo: clipping, aggregation, KL and entropy weights, micro-batch size, gradient clipping.
        temperature: the sampling temperature (the rollout logprobs were taken at it).
    """
    stats = UpdateStats()
    by_model: dict[str, list[int]] = {}
    for i, agent in enumerate(batch.agent):
        if batch.completion_ids[i]:
            by_model.setdefault(policies[agent].name, []).append(i)
    total_tokens = sum(len(batch.completion_ids[i]) for rows in by_model.values() for i in rows)
    weight_sum = 0.0
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
                                   dual_clip=ppo.dual_clip, aggregation=ppo.aggregation)
            loss = result.loss + entropy_bonus(entropy, mask, coef=ppo.entropy_coef, aggregation="token-mean")
            kl = (kl_penalty(logprobs, old) * mask).sum() / mask.sum().clamp_min(1.0)
            if ppo.kl_coef > 0:
                loss = loss + ppo.kl_coef * kl
            chunk_tokens = int(mask.sum().item())
            share = chunk_tokens / model_tokens if ppo.aggregation == "token-mean" else len(chunk) / len(rows)
            (loss * share).backward()
            weight = chunk_tokens / max(total_tokens, 1)
            weight_sum += weight
            stats.loss += result.loss.item() * weight
            stats.entropy += ((entropy * mask).sum() / mask.sum().clamp_min(1.0)).item() * weight
            stats.kl += kl.item() * weight
            stats.clip_fraction += float(result.clip_fraction) * weight
            stats.tokens += chunk_tokens
            stats.rows += len(chunk)
        params = [p for group in optimizer.param_groups for p in group["params"]]
        stats.grad_norm = max(stats.grad_norm, float(torch.nn.utils.clip_grad_norm_(params, ppo.max_grad_norm)))
        optimizer.step()
    if weight_sum > 0:
        for name in ("loss", "entropy", "kl", "clip_fraction"):
            setattr(stats, name, getattr(stats, name) / weight_sum)
    return stats
