"""The ``Sampler`` protocol (``generate``), and the sampling settings and completions it speaks in.

A sampler turns prompts into completions that carry what RL needs: the token ids of prompt and completion and the
log-probability of each sampled token under the sampling distribution. ``SamplingParams`` follows the names of
vLLM's ``SamplingParams`` (``n``, ``temperature``, ``top_p``, ``max_tokens``, ``stop``, ``seed``) so that the vLLM
sampler passes them through unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from teamgym.errors import InvalidArgumentError

__all__ = ["SamplingParams", "Completion", "Sampler"]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample completions (names as vLLM's ``SamplingParams``).

    Attributes:
        temperature: softmax temperature; 0 means greedy. Logprobs are those of the tempered distribution (as TRL
            and verl compute them at training time), so the trainer must score with the same temperature.
        top_p: nucleus sampling mass; 1.0 disables it.
        max_tokens: the most tokens one completion may have.
        stop: strings that end a completion (the stop string is kept in the text, as vLLM's ``include_stop_str``).
        seed: when set, sampling is reproducible for the same prompts (the HF policy reseeds its own RNG).
    """

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 64
    stop: tuple[str, ...] = ()
    seed: int | None = None

    def __post_init__(self) -> None:
        if not self.temperature >= 0:
            raise InvalidArgumentError(f"temperature={self.temperature!r}: expected >= 0 (0 = greedy, 1 = plain)")
        if not 0 < self.top_p <= 1:
            raise InvalidArgumentError(f"top_p={self.top_p!r}: expected in (0, 1] (1.0 disables nucleus sampling)")
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise InvalidArgumentError(f"max_tokens={self.max_tokens!r}: expected an int >= 1")
        if isinstance(self.stop, str):
            raise InvalidArgumentError(f"stop={self.stop!r}: expected a tuple of strings, e.g. ({self.stop!r},)")


@dataclass
class Completion:
    """One sampled completion.

    Attributes:
        text: the decoded completion (special tokens removed).
        prompt_ids: the prompt's token ids as the sampler saw them.
        token_ids: the completion's token ids (including a final end-of-sequence token if one was sampled).
        logprobs: one log-probability per completion token under the sampling distribution.
        finish_reason: ``"stop"`` (end token or stop string) or ``"length"`` (``max_tokens`` reached).
    """

    text: str
    prompt_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str = "stop"


@runtime_checkable
class Sampler(Protocol):
    """Anything that samples ``n`` completions for each prompt: the trained :class:`~teamgym.rollout.hf.HFPolicy`
    itself, a vLLM engine (:class:`~teamgym.rollout.vllm.VLLMSampler`) or a scripted fake.

    ``generate(prompts, n, sampling)`` returns one list of ``n`` completions per prompt, in prompt order.
    """

    def generate(self, prompts: Sequence[str], n: int, sampling: SamplingParams) -> list[list[Completion]]: ...
