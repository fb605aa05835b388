"""What samples each role's rollouts, and keeping it in step with the weights being trained.

A trainer trains :class:`~teamgym.rollout.hf.HFPolicy` objects (one per role, or one shared by every role) and
samples its rollouts with :class:`Samplers`, built from those policies and a backend:

* ``"hf"``: each policy samples itself (nothing to sync);
* ``"vllm"``: one vLLM engine per distinct policy, loaded from the same local checkpoint and sampling in the
  policy's dtype, so the rollout logprobs are the ones the update is taken against. One engine in this process
  (:class:`~teamgym.rollout.vllm.VLLMSampler`), or several as Ray actors
  (:class:`~teamgym.rollout.ray_vllm.RayVLLMSampler`) when :class:`VLLMSettings` asks for more than one engine or
  for tensor parallelism. :meth:`Samplers.sync` loads the trained weights into the engines after each update.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from teamgym.errors import InvalidArgumentError, check_choice, check_int, check_number
from teamgym.rollout.hf import HFPolicy
from teamgym.rollout.sampling import Sampler

__all__ = ["BACKENDS", "Samplers", "VLLMSettings", "distinct_policies"]

#: What can sample rollouts.
BACKENDS = ("hf", "vllm")


@dataclass(frozen=True)
class VLLMSettings:
    """The vLLM engines of each trained model (``backend="vllm"``; also the trainer's ``vllm`` config section).

    Attributes:
        gpu_memory_utilization: share of GPU memory each vLLM engine may take (the trainer needs the rest).
        engines: vLLM engines per model. 1 (default): one engine in the trainer's process. More: each engine is a Ray
            actor (``RayVLLMSampler``, ``pip install 'teamgym[ray]'``), every ``generate`` call's prompts are split
            into contiguous shards across them and the weights are sent to all of them after each update. Engine
            ``i`` is seeded ``seed + i``.
        tensor_parallel_size: GPUs per vLLM engine (vLLM's ``tensor_parallel_size``); above 1 the engines run as Ray
            actors (even a single one), each holding that many whole GPUs of one node.
        gpus_per_engine: Ray engines: GPUs each engine actor reserves from Ray. 0 (default) = whole GPUs,
            ``tensor_parallel_size`` of them (none with ``device="cpu"``, for vLLM's CPU build); with tensor parallel
            size 1 a share in (0, 1] lets several engines share one GPU (e.g. 0.3 with
            ``gpu_memory_utilization=0.25``: two engines and the trainer on one GPU). Ray does not count the
            trainer's own GPU.
    """

    gpu_memory_utilization: float = 0.4
    engines: int = 1
    tensor_parallel_size: int = 1
    gpus_per_engine: float = 0.0

    def __post_init__(self) -> None:
        check_number("vllm.gpu_memory_utilization", self.gpu_memory_utilization, low=0.0, inclusive=False)
        if not self.gpu_memory_utilization < 1:
            raise InvalidArgumentError(f"config field vllm.gpu_memory_utilization={self.gpu_memory_utilization!r}: "
                                       "expected a float in (0, 1), e.g. 0.4")
        check_int("vllm.engines", self.engines, 1)
        check_int("vllm.tensor_parallel_size", self.tensor_parallel_size, 1)
        check_number("vllm.gpus_per_engine", self.gpus_per_engine, low=0.0)
        share, tp = self.gpus_per_engine, self.tensor_parallel_size
        if tp > 1 and share not in (0, tp):
            raise InvalidArgumentError(
                f"config field vllm.gpus_per_engine={share!r} with vllm.tensor_parallel_size={tp}: a tensor parallel "
                f"engine needs one whole GPU per rank: use 0 (= {tp} GPUs) or {tp}"
            )
        if tp == 1 and share > 1:
            raise InvalidArgumentError(
                f"config field vllm.gpus_per_engine={share!r}: a one-GPU engine takes a share in (0, 1] of a GPU, or 0 "
                "for a whole one; for more GPUs per engine set vllm.tensor_parallel_size"
            )
        if share and not self.on_ray:
            raise InvalidArgumentError(
                f"config field vllm.gpus_per_engine={share!r} applies to Ray engines only: set vllm.engines > 1 (or "
                "vllm.tensor_parallel_size > 1), or leave it 0 for the in-process engine"
            )

    @property
    def on_ray(self) -> bool:
        """Whether the engines run as Ray actors (several engines, or tensor parallel ones)."""
        return self.engines > 1 or self.tensor_parallel_size > 1


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
        self.by_policy: dict[str, Sampler] = {name: self._sampler(name, policy)
                                              for name, policy in distinct_policies(self.policies).items()}
        self.by_role: dict[str, Sampler] = {role: self.by_policy[p.name] for role, p in self.policies.items()}

    def _sampler(self, name: str, policy: HFPolicy) -> Sampler:
        if self.backend == "hf":
            return policy
        # vLLM samples in the trainer's dtype (its "auto" would turn a float32 checkpoint into float16): the rollout
        # logprobs are then the ones the PPO ratio is taken against.
        dtype = str(policy.model.dtype).removeprefix("torch.")
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

    def sync(self) -> None:
        """Load every policy's current weights into its engines (nothing to do for ``"hf"``)."""
        if self.backend == "hf":
            return
        for name, policy in distinct_policies(self.policies).items():
            self.by_policy[name].sync_weights(policy.model)  # type: ignore[attr-defined]

    def close(self) -> None:
        """Close the engines that hold resources (vLLM engines as Ray actors); the policies stay usable."""
        if self.backend == "hf":
            return
        for sampler in self.by_policy.values():
            close: Any = getattr(sampler, "close", None)
            if callable(close):
                close()
