"""Rollouts: policies behind one ``generate`` protocol, the tree-sampling engine, and the agent-turn batch.

>>> from teamgym.rollout import HFPolicy, RolloutEngine, SamplingParams, TreeSampling  # doctest: +SKIP

Every name is imported on first use: the engine and the batch need torch, the policies transformers, vLLM or Ray,
and the settings a training config holds (:mod:`teamgym.rollout.settings`) must load without any of them.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each public name -> the module that defines it.
_MODULES = {
    "AgentTurnBatch": "batch",
    "ChatPrompt": "engine",
    "RolloutEngine": "engine",
    "RolloutResult": "engine",
    "default_prompt": "engine",
    "task_seed": "engine",
    "Completion": "sampling",
    "Sampler": "sampling",
    "SamplingParams": "sampling",
    "EnvSlot": "slot",
    "LocalSlots": "slot",
    "SlotPool": "slot",
    "HFPolicy": "hf",
    "AdapterPolicy": "adapters",
    "role_adapter_policies": "adapters",
    "Samplers": "samplers",
    "TreeSampling": "settings",
    "VLLMSettings": "settings",
    "RaySlots": "ray_backend",
    "RayVLLMSampler": "ray_vllm",
    "VLLMSampler": "vllm",
}

__all__ = sorted(_MODULES)


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module 'teamgym.rollout' has no attribute {name!r}")
    return getattr(importlib.import_module(f"teamgym.rollout.{_MODULES[name]}"), name)
