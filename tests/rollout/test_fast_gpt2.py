"""The plain-torch GPT-2 decoder gives transformers' logits and the policy samples the same tokens with it."""

from __future__ import annotations

import random

import pytest
import torch

from teamgym.rollout import HFPolicy, SamplingParams
from teamgym.rollout.fast_gpt2 import GPT2Decoder
from teamgym.rollout.hf import _left_pad


def _prompts(count: int, seed: int, padded: bool) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(3, 95) for _ in range(rng.randrange(1, 40) if padded else 17)] for _ in range(count)]


@pytest.mark.parametrize("padded", [True, False])  # transformers drops the mask without padding: another kernel
@pytest.mark.parametrize(("n_layer", "n_embd", "n_head", "activation"),
                         [(2, 64, 2, "gelu_new"), (3, 48, 4, "gelu_new"), (2, 64, 2, "gelu_pytorch_tanh"),
                          (2, 64, 2, "relu")])
def test_decoder_logits_equal_the_models_forward(n_layer, n_embd, n_head, activation, padded):
    from transformers.activations import ACT2FN

    policy = HFPolicy.tiny(seed=1, n_layer=n_layer, n_embd=n_embd, n_head=n_head)
    model = policy.model.eval()
    for block in model.transformer.h:  # GPT-2 configs name other activations: the decoder follows the module
        block.mlp.act = ACT2FN[activation]
    assert GPT2Decoder.supports(model)
    ids, mask = _left_pad(_prompts(9, n_layer, padded), policy.pad_id, torch.device("cpu"))
    assert bool((mask == 0).any()) == padded
    positions = (mask.cumsum(-1) - 1).clamp_min(0)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True)
        decoder = GPT2Decoder(model, ids, mask, positions, 12)
        torch.testing.assert_close(decoder.first_logits(), out.logits[:, -1], rtol=0, atol=1e-5)
        last = positions[:, -1:]
        for _ in range(12):
            tokens = torch.randint(3, 95, (ids.shape[0],), generator=generator)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
            last = last + 1
            out = model(input_ids=tokens[:, None], attention_mask=mask, position_ids=last, use_cache=True,
                        **policy._cache_kwarg(out))
            torch.testing.assert_close(decoder.step(tokens), out.logits[:, -1], rtol=0, atol=1e-5)


def _completions(policy: HFPolicy, fast: bool, sampling: SamplingParams, monkeypatch) -> list:
    with monkeypatch.context() as patch:
        if not fast:
            patch.setattr(GPT2Decoder, "supports", staticmethod(lambda model: False))
        groups = policy.generate(["....\n.#..\n@..G\nT>", "G...\n..@.\nP>", "ab", "x" * 30], 3, sampling)
        groups += policy.generate(["....\n.#..\n@..G\nT>", "G...\n..@.\n.#..\nT>"], 2, sampling)  # no padding
    return [[(c.text, c.token_ids, c.logprobs, c.finish_reason) for c in group] for group in groups]


@pytest.mark.parametrize("sampling", [SamplingParams(max_tokens=24, temperature=1.0, top_p=0.9, seed=5),
                                      SamplingParams(max_tokens=24, temperature=0.0),
                                      SamplingParams(max_tokens=24, temperature=1.5, stop=("a", "\n\n"))])
def test_policy_samples_the_same_tokens_with_and_without_the_decoder(sampling, monkeypatch):
    runs = []
    for fast in (True, False):
        policy = HFPolicy.tiny(seed=3)
        # the same sampling RNG stream: two calls in a row give the same two batches on both paths
        runs.append([_completions(policy, fast, sampling, monkeypatch) for _ in range(2)])
    assert runs[0] == runs[1]
    assert any(c[3] == "length" for group in runs[0][0] for c in group)


def test_models_the_decoder_does_not_reproduce_keep_their_own_forward():
    policy = HFPolicy.tiny(seed=0)
    assert not GPT2Decoder.supports(policy.model.train())  # dropout and friends: only eval mode
    policy.model.eval()
    policy.model.config._attn_implementation = "eager"  # other attention kernels round differently
    assert not GPT2Decoder.supports(policy.model)
    assert not GPT2Decoder.supports(torch.nn.Linear(2, 2))
