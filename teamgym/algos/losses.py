"""Policy-gradient losses over ``(B, T)`` token tensors with a ``(B, T)`` response mask.

``ppo_clip_loss`` (PPO / DAPO clip-higher / dual clip) with three aggregation modes, k1/k3 KL, an entropy
bonus, DAPO overlong shaping, and the dynamic-sampling filter. Advantages may be per sequence ``(B,)`` or per
token.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from teamgym.algos._checks import check_ids, check_same_length, check_values
from teamgym.algos.grouping import group_stats
from teamgym.errors import InvalidArgumentError

__all__ = [
    "AGGREGATIONS",
    "PolicyLoss",
    "aggregate",
    "ppo_clip_loss",
    "kl_penalty",
    "entropy_bonus",
    "overlong_penalty",
    "dynamic_sampling_mask",
]

AGGREGATIONS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm")


def _check_tokens(name: str, tensor: torch.Tensor, shape: torch.Size | None = None) -> torch.Tensor:
    if not isinstance(tensor, torch.Tensor) or tensor.dim() != 2:
        got = tuple(tensor.shape) if isinstance(tensor, torch.Tensor) else type(tensor).__name__
        raise InvalidArgumentError(
            f"{name} must be a (batch, tokens) tensor, got {got}: pad responses to a matrix"
        )
    if shape is not None and tensor.shape != shape:
        raise InvalidArgumentError(
            f"{name} has shape {tuple(tensor.shape)}, expected {tuple(shape)}: align it"
        )
    return tensor


def aggregate(per_token: torch.Tensor, mask: torch.Tensor, mode: str = "token-mean", *, norm_length=None):
    """Reduce a ``(B, T)`` per-token loss to a scalar.

    Modes (verl ``agg_loss``):
      * ``token-mean``: ``sum(l*m) / sum(m)`` over the whole batch (DAPO, arXiv 2503.14476, Eq. 12).
      * ``seq-mean-token-mean``: mean over sequences of each sequence's token mean (original GRPO).
      * ``seq-mean-token-sum-norm``: mean over sequences of ``sum_t l*m / norm_length`` with a constant
        ``norm_length`` (default ``T``, the padded max length) (Dr.GRPO, arXiv 2503.20783).
    Empty sequences contribute 0 to the sequence means.
    """
    _check_tokens("per_token", per_token)
    mask = _check_tokens("mask", mask, per_token.shape).to(per_token.dtype)
    if mode == "token-mean":
        return (per_token * mask).sum() / mask.sum().clamp_min(1.0)
    if mode == "seq-mean-token-mean":
        return ((per_token * mask).sum(-1) / mask.sum(-1).clamp_min(1.0)).mean()
    if mode == "seq-mean-token-sum-norm":
        length = float(per_token.shape[-1] if norm_length is None else norm_length)
        if not length > 0:
            raise InvalidArgumentError(
                f"norm_length must be > 0, got {norm_length}: use the max response length"
            )
        return ((per_token * mask).sum(-1) / length).mean()
    raise InvalidArgumentError(
        f"unknown loss aggregation {mode!r}: expected one of {', '.join(AGGREGATIONS)}"
    )


@dataclass(frozen=True)
class PolicyLoss:
    """Result of :func:`ppo_clip_loss`: the scalar ``loss`` and diagnostics (scalars, no grad)."""

    loss: torch.Tensor
    clip_fraction: torch.Tensor
    dual_clip_fraction: torch.Tensor
    approx_kl: torch.Tensor


def ppo_clip_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    dual_clip: float | None = None,
    aggregation: str = "token-mean",
    norm_length: float | None = None,
) -> PolicyLoss:
    """PPO-clip surrogate, asymmetric bounds, optional dual clip (verl ``compute_policy_loss_vanilla``).

    ``ratio = exp(clamp(logp - logp_old, -20, 20))``; per token ``max(-A*ratio, -A*clip(ratio, 1-clip_low,
    1+clip_high))`` (PPO, arXiv 1707.06347, Eq. 7). DAPO clip-higher uses ``clip_high = 0.28`` (arXiv
    2503.14476, Eq. 10). Dual clip (Ye et al., arXiv 1912.09729) caps the loss at ``-A*dual_clip`` for A < 0
    (3 in AT-GRPO, 10 in DAPO); it must exceed 1.

    Args:
        logprobs, old_logprobs: ``(B, T)`` token log-probs under the current / sampling policy.
        advantages: ``(B,)`` per sequence or ``(B, T)`` per token.
        mask: ``(B, T)`` 1 for response tokens.
    """
    logprobs = _check_tokens("logprobs", logprobs)
    old_logprobs = _check_tokens("old_logprobs", old_logprobs, logprobs.shape)
    if advantages.dim() == 1:
        if advantages.shape[0] != logprobs.shape[0]:
            raise InvalidArgumentError(
                f"advantages has {advantages.shape[0]} rows but logprobs has {logprobs.shape[0]}: "
                "give one advantage per sequence or per token"
            )
        advantages = advantages.unsqueeze(1).expand_as(logprobs)
    advantages = _check_tokens("advantages", advantages, logprobs.shape)
    if not (0 <= clip_low < 1 and clip_high >= 0):
        raise InvalidArgumentError(f"need 0 <= clip_low < 1 and clip_high >= 0, got {clip_low}, {clip_high}")
    if dual_clip is not None and not dual_clip > 1:
        raise InvalidArgumentError(f"dual_clip must be > 1 (3 or 10 are usual) or None, got {dual_clip}")
    mask_f = _check_tokens("mask", mask, logprobs.shape).to(logprobs.dtype)
    log_ratio = torch.clamp(logprobs - old_logprobs, -20.0, 20.0)
    ratio = torch.exp(log_ratio)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    per_token = torch.maximum(unclipped, clipped)
    dual_hit = torch.zeros_like(per_token, dtype=torch.bool)
    if dual_clip is not None:
        cap = -advantages * dual_clip
        dual_hit = (advantages < 0) & (per_token > cap)
        per_token = torch.where(advantages < 0, torch.minimum(per_token, cap), per_token)
    loss = aggregate(per_token, mask_f, aggregation, norm_length=norm_length)
    with torch.no_grad():
        denom = mask_f.sum().clamp_min(1.0)
        clip_fraction = ((clipped > unclipped).to(mask_f.dtype) * mask_f).sum() / denom
        dual_fraction = (dual_hit.to(mask_f.dtype) * mask_f).sum() / denom
        approx_kl = ((-log_ratio) * mask_f).sum() / denom
    return PolicyLoss(loss, clip_fraction, dual_fraction, approx_kl)


def kl_penalty(logprobs: torch.Tensor, ref_logprobs: torch.Tensor, kind: str = "k3") -> torch.Tensor:
    """Per-token KL estimate of the policy from a reference (Schulman, "Approximating KL divergence", 2020).

    ``k1 = logp - ref``; ``k3 = exp(ref - logp) - (ref - logp) - 1`` (>= 0, 0 when equal; GRPO's choice). The
    log ratio is clamped to +-20 as in verl. AT-GRPO and DAPO use no KL term by default.
    """
    if logprobs.shape != ref_logprobs.shape:
        raise InvalidArgumentError(
            f"logprobs {tuple(logprobs.shape)} and ref_logprobs {tuple(ref_logprobs.shape)} differ: "
            "align them"
        )
    if kind == "k1":
        return logprobs - ref_logprobs
    if kind == "k3":
        diff = torch.clamp(ref_logprobs - logprobs, -20.0, 20.0)
        return torch.exp(diff) - diff - 1.0
    raise InvalidArgumentError(f"unknown KL estimator {kind!r}: expected 'k1' or 'k3'")


def entropy_bonus(
    entropy: torch.Tensor, mask: torch.Tensor, *, coef: float = 0.0, aggregation: str = "token-mean"
) -> torch.Tensor:
    """Loss term ``-coef * agg(entropy)`` to add to the policy loss (coef 0 by default, as verl)."""
    return -coef * aggregate(entropy, mask, aggregation)


def overlong_penalty(lengths: torch.Tensor, *, max_length: int, buffer: int) -> torch.Tensor:
    """DAPO soft overlong punishment: ``min(-(len - (L_max - L_buf)) / L_buf, 0)`` (arXiv 2503.14476, Eq. 13).

    0 up to ``L_max - L_buf`` tokens, then linear down to -1 at ``L_max`` (and beyond). Add it to the reward.
    """
    if not 0 < buffer <= max_length:
        raise InvalidArgumentError(
            f"need 0 < buffer <= max_length, got buffer={buffer}, max_length={max_length}"
        )
    lengths = torch.as_tensor(lengths).to(torch.float64)
    exceed = lengths - (max_length - buffer)
    return torch.clamp(-exceed / buffer, max=0.0).to(torch.float32)


def dynamic_sampling_mask(rewards: torch.Tensor, group_ids: torch.Tensor) -> torch.Tensor:
    """DAPO dynamic sampling: keep rows whose group's rewards are not all equal (std > 0); ``(N,)`` bool.

    Zero-variance groups (all right or all wrong) give zero group-relative advantage and no gradient
    (arXiv 2503.14476, Eq. 11). Singleton groups are dropped too.
    """
    rewards = check_values("rewards", rewards)
    group_ids = check_ids("group_ids", group_ids)
    check_same_length(rewards=rewards, group_ids=group_ids)
    stats = group_stats(rewards, group_ids)
    return (stats.std > 0)[stats.inverse]
