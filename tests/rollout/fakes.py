"""Test doubles: a scripted sampler and fake vLLM engines following vLLM's offline API.

The fakes are importable module-level classes so that Ray actors can build them (``FakeEngineFactory``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace

from teamgym.rollout.sampling import Completion, SamplingParams
from teamgym.rollout.vllm import VLLMSampler


class ScriptedSampler:
    """``text_fn(prompt, j)`` gives the j-th of the n completions for a prompt; records every call."""

    def __init__(self, text_fn: Callable[[str, int], str]):
        self.text_fn = text_fn
        self.calls: list[tuple[list[str], int]] = []

    def generate(self, prompts: Sequence[str], n: int, sampling: SamplingParams) -> list[list[Completion]]:
        self.calls.append((list(prompts), n))
        out = []
        for prompt in prompts:
            group = []
            for j in range(n):
                text = self.text_fn(prompt, j)
                ids = [ord(c) % 256 for c in text]
                group.append(Completion(text, [ord(c) % 256 for c in prompt][-32:], ids, [-1.0] * len(ids)))
            out.append(group)
        return out


@dataclass
class FakeLogprob:
    logprob: float


@dataclass
class FakeVLLMSamplingParams:
    """Same constructor keywords as ``vllm.SamplingParams`` for the ones the policy passes."""

    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 16
    stop: list[str] | None = None
    include_stop_str_in_output: bool = False
    seed: int | None = None
    logprobs: int | None = None


@dataclass
class FakeModel:
    loaded: list[tuple[str, object]] = field(default_factory=list)

    def load_weights(self, weights):
        self.loaded = list(weights)


class FakeLLM:
    """``LLM.generate(prompts, params, use_tqdm=...) -> [RequestOutput]`` with per-token logprob dicts."""

    def __init__(self, tokenizer=None):
        self.tokenizer = tokenizer
        self.model = FakeModel()
        self.llm_engine = SimpleNamespace(
            model_executor=SimpleNamespace(driver_worker=SimpleNamespace(model_runner=SimpleNamespace(model=self.model)))
        )
        self.calls = []
        self.cache_resets = 0

    def get_tokenizer(self):
        return self.tokenizer if self.tokenizer is not None else _OrdTokenizer()

    def generate(self, prompts, params, use_tqdm=True):
        self.calls.append((list(prompts), params))
        outputs = []
        for prompt in prompts:
            prompt_ids = list(prompt["prompt_token_ids"]) if isinstance(prompt, dict) else self._encode(prompt)
            samples = []
            for j in range(params.n):
                ids = self._encode(chr(65 + j) + "\n")
                samples.append(SimpleNamespace(
                    text=chr(65 + j) + "\n", token_ids=ids, finish_reason="stop",
                    logprobs=[{tok: FakeLogprob(-0.5 * (k + 1))} for k, tok in enumerate(ids)],
                ))
            outputs.append(SimpleNamespace(prompt_token_ids=prompt_ids, outputs=samples))
        return outputs

    def _encode(self, text):
        if self.tokenizer is None:
            return [ord(c) for c in text]
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def reset_prefix_cache(self):
        self.cache_resets += 1


class _OrdTokenizer:
    """One token per character, its code point (the fake engine's default tokenizer)."""

    def __call__(self, texts, add_special_tokens=True):
        return {"input_ids": [[ord(c) for c in text] for text in texts]}


def weights_fingerprint(weights) -> str:
    """A short text that changes with the values of ``(name, tensor)`` pairs (``"none"`` for no weights)."""
    if not weights:
        return "none"
    return f"{sum(float(tensor.double().sum()) for _, tensor in weights):.6g}"


class EchoLLM(FakeLLM):
    """A FakeLLM whose j-th completion is ``"<engine_index>|<fingerprint of the last loaded weights>|<A+j>"``."""

    def __init__(self, engine_index: int, tokenizer=None):
        super().__init__(tokenizer)
        self.engine_index = engine_index

    def generate(self, prompts, params, use_tqdm=True):
        outputs = super().generate(prompts, params, use_tqdm)
        tag = f"{self.engine_index}|{weights_fingerprint(self.model.loaded)}|"
        for request in outputs:
            for j, sample in enumerate(request.outputs):
                sample.text = tag + chr(65 + j)
                sample.token_ids = self._encode(sample.text)
                sample.logprobs = [{tok: FakeLogprob(-0.5)} for tok in sample.token_ids]
        return outputs


@dataclass(frozen=True)
class FakeEngineFactory:
    """``(engine_index) -> VLLMSampler`` over an :class:`EchoLLM`, built inside a Ray actor (picklable).

    ``char_tokenizer=True`` tokenizes as the tiny model does, so the trainer can score the completions.
    """

    char_tokenizer: bool = False

    def __call__(self, engine_index: int) -> VLLMSampler:
        tokenizer = None
        if self.char_tokenizer:
            from teamgym.rollout.tiny import char_tokenizer

            tokenizer = char_tokenizer()
        return VLLMSampler(EchoLLM(engine_index, tokenizer), sampling_params_cls=FakeVLLMSamplingParams)


class TensorParallelFakeLLM(FakeLLM):
    """A FakeLLM whose workers are out of process: no ``driver_worker``, only ``collective_rpc`` to each rank."""

    def __init__(self, ranks: int = 2):
        super().__init__()
        self.workers = [SimpleNamespace(model_runner=SimpleNamespace(model=FakeModel())) for _ in range(ranks)]
        self.llm_engine = SimpleNamespace()

    def collective_rpc(self, method, args=()):
        return [method(worker, *args) for worker in self.workers]
