"""Rollouts: policies behind one ``generate`` protocol, the tree-sampling engine, and the agent-turn batch.

>>> from teamgym.rollout import HFPolicy, RolloutEngine, SamplingParams, TreeSampling  # doctest: +SKIP
"""

from __future__ import annotations

from teamgym.rollout.batch import AgentTurnBatch
from teamgym.rollout.engine import ChatPrompt, RolloutEngine, RolloutResult, TreeSampling, default_prompt, task_seed
from teamgym.rollout.sampling import Completion, Sampler, SamplingParams
from teamgym.rollout.slot import EnvSlot, LocalSlots, SlotPool

__all__ = [
    "AgentTurnBatch",
    "ChatPrompt",
    "Completion",
    "EnvSlot",
    "LocalSlots",
    "RaySlots",
    "RayVLLMSampler",
    "SlotPool",
    "HFPolicy",
    "RolloutEngine",
    "RolloutResult",
    "Sampler",
    "Samplers",
    "SamplingParams",
    "TreeSampling",
    "VLLMSampler",
    "VLLMSettings",
    "default_prompt",
    "task_seed",
]


def __getattr__(name: str):
    # The transformers, vLLM and Ray classes import heavy optional packages: load them on first use only.
    if name == "HFPolicy":
        from teamgym.rollout.hf import HFPolicy

        return HFPolicy
    if name in ("Samplers", "VLLMSettings"):
        from teamgym.rollout import samplers

        return getattr(samplers, name)
    if name == "RaySlots":
        from teamgym.rollout.ray_backend import RaySlots

        return RaySlots
    if name == "RayVLLMSampler":
        from teamgym.rollout.ray_vllm import RayVLLMSampler

        return RayVLLMSampler
    if name == "VLLMSampler":
        from teamgym.rollout.vllm import VLLMSampler

        return VLLMSampler
    raise AttributeError(f"module 'teamgym.rollout' has no attribute {name!r}")
