"""The trained policies of a run, one per role or one shared, and their optimizers, keyed by policy name.

A policy is named ``shared`` when every role uses it (``shared_model=True``) and after its role otherwise; the
optimizers, the checkpoints' model and optimizer states, and the per-role learning rates (``ppo.role_lr``) are keyed
by that name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from teamgym.rollout.hf import HFPolicy
from teamgym.rollout.samplers import distinct_policies
from teamgym.train.config import TrainConfig

__all__ = ["build_optimizers", "build_policies"]


def build_policies(config: TrainConfig, roles: Sequence[str]) -> dict[str, HFPolicy]:
    """``{role: policy}``: one ``shared`` policy for every role, or one per role (seeded ``seed + i``)."""
    if config.shared_model:
        shared = _new_policy(config, "shared", config.seed)
        return {role: shared for role in roles}
    return {role: _new_policy(config, role, config.seed + i) for i, role in enumerate(roles)}


def _new_policy(config: TrainConfig, name: str, seed: int) -> HFPolicy:
    if config.model == "tiny":
        return HFPolicy.tiny(seed=seed, n_layer=config.n_layer, n_embd=config.n_embd, n_head=config.n_head,
                             device=config.device, name=name)
    return HFPolicy.from_pretrained(config.model, device=config.device, lora_rank=config.lora_rank, seed=seed,
                                    name=name)


def build_optimizers(policies: Mapping[str, HFPolicy], lr: Mapping[str, float] | float, *,
                     weight_decay: float = 0.0) -> dict[str, torch.optim.Optimizer]:
    """``{policy name: AdamW}`` over each distinct policy's trainable parameters.

    Args:
        policies: ``{role: policy}``.
        lr: one learning rate, or one per policy name.
        weight_decay: AdamW weight decay.
    """
    out = {}
    for name, policy in distinct_policies(policies).items():
        params = [p for p in policy.model.parameters() if p.requires_grad]
        rate = lr[name] if isinstance(lr, Mapping) else lr
        out[name] = torch.optim.AdamW(params, lr=rate, weight_decay=weight_decay)
    return out
