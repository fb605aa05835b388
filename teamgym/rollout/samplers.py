"""What samples each role's rollouts, and keeping it in step with the weights being trained.

A trainer trains :class:`~teamgym.rollout.hf.HFPolicy` objects (one per role, or one shared by every role) and
samples its rollouts with :class:`Samplers`, built from those policies and a backend:

* ``"hf"``: each policy samples itself (nothing to sync);
* ``"vllm"``: one vLLM engine per distinct policy, loaded from the same local checkpoint and sampling in the
  policy's dtype, so the rollout logprobs are the ones the update is taken against. One engine in this process
  (:class:`~teamgym.rollout.vllm.VLLMSampler`), or several as Ray actors
  (:class:`~teamgym.rollout.ray_vllm.RayVLLMSampler`) when :class:`VLLMSettings` asks for more than one engine or
  for tensor parallelism. :meth:`Samplers.sync` loads the trained weights into the engines after each update.
  Per-role LoRA adapters on one base (:mod:`teamgym.rollout.adapters`) share one engine started with LoRA on: each
  role samples with its own ``LoRARequest``, and a sync loads the adapters that changed as new versions
  (:mod:`teamgym.rollout.vllm_lora`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from teamgym.errors import InvalidArgumentError, check_choice
from teamgym.rollout.adapters import AdapterPolicy, base_policy
from teamgym.rollout.hf import HFPolicy
from teamgym.rollout.sampling import Sampler
from teamgym.rollout.settings import BACKENDS, VLLMSettings

__all__ = ["BACKENDS", "Samplers", "VLLMSettings", "distinct_policies"]


def distinct_policies(policies: Mapping[str, HFPolicy]) -> dict[str, HFPolicy]:
    """Each distinct policy of a ``{role: policy}`` map once, keyed by its name (``shared`` or the role)."""
    out: dict[str, HFPolicy] = {}
    for policy in policies.values():
        if out.setdefault(policy.name, policy) is not policy:
            raise InvalidArgumentError(f"two different policies are both named {policy.name!r}: name each distinctly")
    return out


@dataclass
class Samplers:
    """The sampler of every role, built from the trained policies (see the module docstring).

    Args:
        policies: ``{role: policy}``; roles that share one policy object share its sampler.
        backend: ``"hf"`` or ``"vllm"``.
        model: the local checkpoint the policies were loaded from (vLLM engines load it too).
        device: ``"cpu"`` or ``"cuda"``: with ``"cpu"`` Ray engines reserve no GPU (vLLM's CPU build).
        seed: seeds the engines (Ray engine ``i``: ``seed + i``).
        vllm: the engine layout per model.
    """

    policies: Mapping[str, HFPolicy]
    backend: str = "hf"
    model: str = ""
    device: str = "cpu"
    seed: int = 0
    vllm: VLLMSettings = field(default_factory=VLLMSettings)

    def __post_init__(self) -> None:
        check_choice("sampling.backend", self.backend, BACKENDS)
        self.policies = dict(self.policies)
        self.adapters: Any = None  # the vLLM engine's per-role adapters (teamgym.rollout.vllm_lora.VLLMAdapters)
        distinct = distinct_policies(self.policies)
        if self.backend == "vllm" and base_policy(self.policies) is not None:
            self.by_policy: dict[str, Sampler] = self._adapter_samplers(distinct)  # type: ignore[arg-type]
        else:
            self.by_policy = {name: self._sampler(name, policy) for name, policy in distinct.items()}
        self.by_role: dict[str, Sampler] = {role: self.by_policy[p.name] for role, p in self.policies.items()}

    def _sampler(self, name: str, policy: HFPolicy) -> Sampler:
        if self.backend == "hf":
            return policy
        dtype = _dtype(policy)
        settings = self.vllm
        if settings.on_ray:
            from teamgym.rollout.ray_vllm import RayVLLMSampler

            gpus = None if self.device.startswith("cuda") else 0  # None: the tensor parallel size; 0: vLLM's CPU build
            return RayVLLMSampler.from_model(self.model, num_engines=settings.engines,
                                             tensor_parallel_size=settings.tensor_parallel_size,
                                             num_gpus=settings.gpus_per_engine or gpus, seed=self.seed,
                                             gpu_memory_utilization=settings.gpu_memory_utilization, dtype=dtype,
                                             name=name)
        from teamgym.rollout.vllm import VLLMSampler

        return VLLMSampler.from_model(self.model, seed=self.seed, dtype=dtype,
                                      gpu_memory_utilization=settings.gpu_memory_utilization)

    def _adapter_samplers(self, policies: Mapping[str, AdapterPolicy]) -> dict[str, Sampler]:
        """One in-process engine with LoRA on for every role's adapter, and each role's sampler on it."""
        from teamgym.rollout.vllm import VLLMSampler
        from teamgym.rollout.vllm_lora import VLLMAdapters, lora_engine_kwargs

        if self.vllm.on_ray:
            raise InvalidArgumentError(
                f"vllm.engines={self.vllm.engines}, vllm.tensor_parallel_size={self.vllm.tensor_parallel_size} with "
                "per-role adapters: their multi-LoRA engine runs in this process only; leave both 1"
            )
        first = next(iter(policies.values()))
        adapters = [policy.adapter for policy in policies.values()]
        rank = max(first.model.peft_config[name].r for name in adapters)
        engine = VLLMSampler.from_model(self.model, seed=self.seed, dtype=_dtype(first),
                                        gpu_memory_utilization=self.vllm.gpu_memory_utilization,
                                        **lora_engine_kwargs(len(adapters), rank))
        self.adapters = VLLMAdapters(engine, first.model, adapters)
        self.adapters.sync()
        return {name: self.adapters.sampler(policy.adapter) for name, policy in policies.items()}

    def sync(self, *, base: bool = True) -> None:
        """Load every policy's current weights into its engines (nothing to do for ``"hf"``).

        Per-role adapters on vLLM: each adapter that changed is loaded as a new version, and with ``base`` the shared
        base's weights first (the warm start trains the base; an RL update moves the adapters only, so the trainer
        passes ``base=False`` after one). Other policies always sync whole.
        """
        if self.backend == "hf":
            return
        if self.adapters is not None:
            self.adapters.sync(base=base)
            return
        for name, policy in distinct_policies(self.policies).items():
            self.by_policy[name].sync_weights(policy.model)  # type: ignore[attr-defined]

    def close(self) -> None:
        """Close the engines that hold resources (vLLM engines as Ray actors); the policies stay usable."""
        if self.backend == "hf":
            return
        if self.adapters is not None:
            self.adapters.close()
        for sampler in self.by_policy.values():
            close: Any = getattr(sampler, "close", None)
            if callable(close):
                close()


def _dtype(policy: HFPolicy) -> str:
    """The dtype vLLM samples in: the trainer's (its "auto" would turn a float32 checkpoint into float16), so that the
    rollout logprobs are the ones the PPO ratio is taken against."""
    return str(policy.model.dtype).removeprefix("torch.")
