"""The trained policies of a run, one per role or one shared, and their optimizers, keyed by policy name.

A policy is named ``shared`` when every role uses it (``shared_model=True``) and after its role otherwise (one model
per role, or one adapter per role on a shared base with ``role_adapters=True``); the optimizers, the checkpoints'
model and optimizer states, and the per-role learning rates (``ppo.role_lr``) are keyed by that name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import torch

from teamgym.rollout.adapters import DEFAULT_RANK, base_policy, role_adapter_policies, unfrozen_base
from teamgym.rollout.hf import HFPolicy
from teamgym.rollout.samplers import distinct_policies
from teamgym.train.config import TrainConfig

__all__ = ["build_optimizers", "build_policies", "warm_start_policies"]


def build_policies(config: TrainConfig, roles: Sequence[str]) -> dict[str, HFPolicy]:
    """``{role: policy}``: one ``shared`` policy for every role, one per role (seeded ``seed + i``), or one LoRA
    adapter per role on one shared base (``role_adapters``; rank ``lora_rank``, or :data:`DEFAULT_RANK` for 0)."""
    if config.role_adapters:
        base = _new_policy(config, "shared", config.seed, lora_rank=0)
        return role_adapter_policies(base, roles, rank=config.lora_rank or DEFAULT_RANK, seed=config.seed)
    if config.shared_model:
        shared = _new_policy(config, "shared", config.seed)
        return {role: shared for role in roles}
    return {role: _new_policy(config, role, config.seed + i) for i, role in enumerate(roles)}


def _new_policy(config: TrainConfig, name: str, seed: int, *, lora_rank: int | None = None) -> HFPolicy:
    if config.model == "tiny":
        return HFPolicy.tiny(seed=seed, n_layer=config.n_layer, n_embd=config.n_embd, n_head=config.n_head,
                             device=config.device, name=name)
    rank = config.lora_rank if lora_rank is None else lora_rank
    return HFPolicy.from_pretrained(config.model, device=config.device, lora_rank=rank, seed=seed, name=name)


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
        params = policy.trainable_parameters()
        rate = lr[name] if isinstance(lr, Mapping) else lr
        out[name] = torch.optim.AdamW(params, lr=rate, weight_decay=weight_decay)
    return out


@contextmanager
def warm_start_policies(policies: Mapping[str, HFPolicy]) -> Iterator[dict[str, HFPolicy]]:
    """``{role: policy}`` that the SFT warm start trains: the run's own policies, or for per-role adapters the shared
    base (adapters off, named ``shared``), unfrozen inside and frozen again after.

    The warm start teaches the base what every role shares (a model built in code starts random, and LoRA on a
    random base learns little); RL then moves each role's adapter, which starts at zero, on that base.
    """
    base = base_policy(policies)
    if base is None:
        yield dict(policies)
        return
    with unfrozen_base(base):
        yield {role: base for role in policies}
