"""``RayVLLMSampler``: several vLLM engines as Ray actors, prompts sharded across them, weights sent to all of them.

The layout OpenRLHF and verl use for rollouts past one GPU: each engine is a Ray actor that holds ``num_gpus`` GPUs
(its tensor parallel size) and wraps one :class:`~teamgym.rollout.vllm.VLLMSampler`, so the request and response
conversion, the logprob checks and the in-place weight loading are those of the one-engine sampler.

- **Sharding.** ``generate(prompts, n, sampling)`` splits the prompts into ``num_engines`` contiguous shards whose
  sizes differ by at most one (neighbouring prompts, often from the same env, keep sharing a prefix cache), sends
  every shard at once, and concatenates the answers in prompt order. Engines that would get no prompt are not called.
- **Weights.** ``sync_weights(model)`` copies the trainer's weights to CPU once (peft adapters merged, as
  :func:`~teamgym.rollout.vllm.trainer_weights`), puts them in Ray's object store once, and every actor loads that one
  object through ``VLLMSampler.load_weights`` (which also drops the stale prefix cache). This is simple, and costs a
  host copy of the model per update: fine for models that fit in host memory several times over; OpenRLHF and verl
  broadcast over NCCL instead, which this module does not do.
- **Determinism.** Engine ``i`` is seeded ``seed + i`` (by :class:`VLLMEngineSpec`), so no two engines draw the same
  random stream (identical prompts on two engines would otherwise get identical samples). Without a request seed a
  run is reproducible for a fixed ``num_engines`` only as far as vLLM itself is. With ``SamplingParams.seed`` set,
  vLLM seeds each request on its own, so a prompt's completions do not depend on which engine serves it (up to
  floating-point differences between batch shapes).
- **GPUs.** ``num_gpus`` per actor is the tensor parallel size by default; a fraction (tensor parallel size 1) lets
  several engines share one GPU, each taking ``gpu_memory_utilization`` of its memory. Ray does not count a GPU the
  trainer uses outside Ray: leave that memory free. No placement groups: Ray places each actor where its GPUs are
  free, and a tensor parallel engine runs its workers as processes inside its actor (``mp`` executor), so
  ``tensor_parallel_size`` must fit on one node.

The engine is built inside its actor by an injected picklable factory ``(engine_index) -> VLLMSampler``
(:class:`VLLMEngineSpec` for a real vLLM engine), so CPU tests run real Ray actors around a fake engine.

>>> import ray                                                                                 # doctest: +SKIP
>>> ray.init()                                                                                 # doctest: +SKIP
>>> sampler = RayVLLMSampler.from_model("/models/Qwen2.5-1.5B-Instruct", num_engines=4)           # doctest: +SKIP
>>> groups = sampler.generate(prompts, 4, SamplingParams(max_tokens=512))                       # doctest: +SKIP
>>> sampler.sync_weights(trained_model)                                                         # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from teamgym.errors import InvalidArgumentError
from teamgym.rollout.ray_backend import _ray
from teamgym.rollout.sampling import Completion, SamplingParams
from teamgym.rollout.vllm import VLLMSampler, trainer_weights

__all__ = ["RayVLLMSampler", "VLLMEngineSpec", "shard_sizes"]


@dataclass(frozen=True)
class VLLMEngineSpec:
    """Builds engine ``i``'s :class:`~teamgym.rollout.vllm.VLLMSampler` inside its Ray actor (picklable).

    Attributes:
        model: local path of the checkpoint every engine loads.
        tensor_parallel_size: GPUs per engine (vLLM's ``tensor_parallel_size``; ``mp`` workers inside the actor).
        gpu_memory_utilization: share of each of its GPUs' memory one engine takes.
        max_model_len: longest prompt plus completion, in tokens (default: the model's context length).
        dtype: weights and activations dtype in vLLM (default: vLLM's choice; the trainer passes its own).
        seed: engine ``i`` is seeded ``seed + i``.
        engine_kwargs: more ``vllm.LLM`` keywords (e.g. ``{"enforce_eager": True}``).
    """

    model: str
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.5
    max_model_len: int | None = None
    dtype: str = "auto"
    seed: int = 0
    engine_kwargs: dict[str, Any] = field(default_factory=dict)

    def llm_kwargs(self, engine_index: int) -> dict[str, Any]:
        """The keywords of :meth:`VLLMSampler.from_model` for engine ``engine_index``."""
        kwargs: dict[str, Any] = dict(
            gpu_memory_utilization=self.gpu_memory_utilization, max_model_len=self.max_model_len, dtype=self.dtype,
            seed=self.seed + engine_index, tensor_parallel_size=self.tensor_parallel_size,
        )
        if self.tensor_parallel_size > 1:
            kwargs["distributed_executor_backend"] = "mp"  # workers on the GPUs Ray gave this actor
        return {**kwargs, **self.engine_kwargs}

    def __call__(self, engine_index: int) -> VLLMSampler:
        return VLLMSampler.from_model(self.model, **self.llm_kwargs(engine_index))


class _EngineActor:
    """One engine inside a Ray actor; only prompts, completions and weights cross the actor boundary."""

    def __init__(self, engine_factory: Callable[[int], VLLMSampler], engine_index: int):
        self.sampler = engine_factory(engine_index)

    def generate(self, prompts: list[str], n: int, sampling: SamplingParams) -> list[list[Completion]]:
        return self.sampler.generate(prompts, n, sampling)

    def load_weights(self, weights: list[tuple[str, Any]]) -> int:
        return self.sampler.load_weights(weights)


class RayVLLMSampler:
    """Sample with ``num_engines`` vLLM engines, one Ray actor each (see the module docstring).

    Args:
        engine_factory: ``(engine_index) -> VLLMSampler``, called inside each actor; must be picklable (a
            :class:`VLLMEngineSpec`, a module-level function or a ``partial``).
        num_engines: engine actors to start.
        num_gpus: Ray GPUs each actor holds: the engine's tensor parallel size, or a fraction of one GPU to let
            several one-GPU engines share it (0 on CPU, e.g. in tests).
        actor_options: more ``ray.remote(...).options`` (e.g. ``{"num_cpus": 1}``; by default an engine reserves no
            CPU, as its work is on the GPU).
        name: a label used in logs.
    """

    def __init__(self, engine_factory: Callable[[int], VLLMSampler], *, num_engines: int = 1, num_gpus: float = 1,
                 actor_options: dict[str, Any] | None = None, name: str = "vllm"):
        if isinstance(num_engines, bool) or not isinstance(num_engines, int) or num_engines < 1:
            raise InvalidArgumentError(f"num_engines={num_engines!r}: expected an int >= 1 vLLM engine actors")
        if isinstance(num_gpus, bool) or not isinstance(num_gpus, (int, float)) or num_gpus < 0:
            raise InvalidArgumentError(
                f"num_gpus={num_gpus!r}: expected a number >= 0 of GPUs per engine (its tensor_parallel_size, a "
                "fraction to share one GPU between engines, or 0 on CPU)"
            )
        if num_gpus > 1 and num_gpus != int(num_gpus):
            raise InvalidArgumentError(
                f"num_gpus={num_gpus!r}: Ray gives more than one GPU only in whole GPUs; use the engine's "
                "tensor_parallel_size, or a fraction <= 1"
            )
        if not callable(engine_factory):
            raise InvalidArgumentError(
                f"engine_factory={engine_factory!r}: expected a picklable callable (engine_index) -> VLLMSampler, "
                "e.g. VLLMEngineSpec(model=<local checkpoint dir>)"
            )
        ray = _ray()
        if not ray.is_initialized():
            ray.init()
        self._ray = ray
        self.name = name
        options = {"num_cpus": 0, "num_gpus": num_gpus, **(actor_options or {})}
        actor_cls = ray.remote(_EngineActor).options(**options)
        self.actors: list[Any] = [actor_cls.remote(engine_factory, i) for i in range(num_engines)]

    @classmethod
    def from_model(cls, model: str, *, num_engines: int = 1, tensor_parallel_size: int = 1,
                   num_gpus: float | None = None, gpu_memory_utilization: float = 0.5,
                   max_model_len: int | None = None, dtype: str = "auto", seed: int = 0, name: str = "vllm",
                   actor_options: dict[str, Any] | None = None, **engine_kwargs: Any) -> RayVLLMSampler:
        """Start ``num_engines`` vLLM engines on a local checkpoint (``num_gpus`` defaults to the TP size)."""
        if isinstance(tensor_parallel_size, bool) or not isinstance(tensor_parallel_size, int) \
                or tensor_parallel_size < 1:
            raise InvalidArgumentError(f"tensor_parallel_size={tensor_parallel_size!r}: expected an int >= 1")
        if num_gpus is None:
            num_gpus = tensor_parallel_size
        elif tensor_parallel_size > 1 and num_gpus != tensor_parallel_size:
            raise InvalidArgumentError(
                f"num_gpus={num_gpus!r} with tensor_parallel_size={tensor_parallel_size}: a tensor parallel engine "
                f"needs one whole GPU per rank: pass num_gpus={tensor_parallel_size} (or leave it unset)"
            )
        spec = VLLMEngineSpec(model, tensor_parallel_size=tensor_parallel_size,
                              gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len, dtype=dtype,
                              seed=seed, engine_kwargs=dict(engine_kwargs))
        return cls(spec, num_engines=num_engines, num_gpus=num_gpus, actor_options=actor_options, name=name)

    @property
    def num_engines(self) -> int:
        return len(self.actors)

    def generate(self, prompts: Sequence[str], n: int, sampling: SamplingParams) -> list[list[Completion]]:
        """``n`` completions per prompt, the prompts sharded across the engines; results in prompt order."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InvalidArgumentError(f"n={n!r}: expected an int >= 1 completions per prompt")
        self._check_open()
        prompts = list(prompts)
        futures, start = [], 0
        for actor, size in zip(self.actors, shard_sizes(len(prompts), len(self.actors))):
            if size:
                futures.append(actor.generate.remote(prompts[start:start + size], n, sampling))
            start += size
        return [group for shard in self._ray.get(futures) for group in shard]

    def sync_weights(self, model: Any) -> int:
        """Send ``model``'s current weights to every engine (one object-store copy); returns the tensors sent."""
        self._check_open()
        weights = [(name, tensor.to("cpu")) for name, tensor in trainer_weights(model)]
        shared = self._ray.put(weights)
        loaded = self._ray.get([actor.load_weights.remote(shared) for actor in self.actors])
        assert all(count == len(weights) for count in loaded), (loaded, len(weights))
        return len(weights)

    def close(self) -> None:
        """Kill the engine actors (asynchronously: Ray frees their GPUs once they have exited); the sampler cannot
        generate afterwards."""
        for actor in self.actors:
            self._ray.kill(actor)
        self.actors = []

    def _check_open(self) -> None:
        if not self.actors:
            raise InvalidArgumentError(f"RayVLLMSampler {self.name!r} is closed: build a new one to generate")


def shard_sizes(total: int, parts: int) -> list[int]:
    """Sizes of ``parts`` contiguous shards of ``total`` items, the first ``total % parts`` one larger."""
    base, extra = divmod(total, parts)
    return [base + (i < extra) for i in range(parts)]
