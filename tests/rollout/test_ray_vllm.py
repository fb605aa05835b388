"""vLLM engines as Ray actors: real local Ray actors around a fake engine (CPU); a real vLLM engine on GPU."""

from __future__ import annotations

import os
import sys
import time
from types import SimpleNamespace

import pytest

from teamgym.errors import DependencyNotInstalled, InvalidArgumentError
from teamgym.rollout import HFPolicy, SamplingParams, VLLMSampler
from teamgym.rollout.ray_vllm import RayVLLMSampler, VLLMEngineSpec, shard_sizes
from teamgym.rollout.vllm import trainer_weights
from tests.rollout.fakes import FakeEngineFactory, FakeVLLMSamplingParams, TensorParallelFakeLLM, weights_fingerprint

pytest.importorskip("ray")

SAMPLING = SamplingParams(max_tokens=4)


@pytest.fixture(scope="module")
def three_engines(local_ray):
    policy = RayVLLMSampler(FakeEngineFactory(), num_engines=3, num_gpus=0)
    yield policy
    policy.close()


def engine_of(completion) -> int:
    return int(completion.text.split("|")[0])


def test_shard_sizes_are_contiguous_and_balanced():
    assert shard_sizes(7, 3) == [3, 2, 2]
    assert shard_sizes(2, 3) == [1, 1, 0]
    assert shard_sizes(0, 2) == [0, 0]


def test_uneven_shards_keep_prompt_order_and_use_every_engine(three_engines):
    prompts = [f"prompt {i}" for i in range(7)]
    out = three_engines.generate(prompts, 1, SAMPLING)
    assert [g[0].prompt_ids for g in out] == [[ord(ch) for ch in p] for p in prompts]
    assert [engine_of(g[0]) for g in out] == [0, 0, 0, 1, 1, 2, 2]
    assert all(len(c.logprobs) == len(c.token_ids) for g in out for c in g)


def test_n_completions_per_prompt_and_fewer_prompts_than_engines(three_engines):
    out = three_engines.generate(["a", "b"], 3, SAMPLING)
    assert [[c.text[-1] for c in g] for g in out] == [["A", "B", "C"]] * 2
    assert [engine_of(g[0]) for g in out] == [0, 1]


def test_no_prompts_give_no_completions(three_engines):
    assert three_engines.generate([], 2, SAMPLING) == []


def test_weights_reach_every_engine(three_engines):
    model = HFPolicy.tiny(seed=3, n_layer=1, n_embd=16, n_head=1).model
    expected = weights_fingerprint(list(trainer_weights(model)))
    assert three_engines.sync_weights(model) == len(model.state_dict())
    out = three_engines.generate(["x", "y", "z"], 1, SAMPLING)
    assert [engine_of(g[0]) for g in out] == [0, 1, 2]
    assert {g[0].text.split("|")[1] for g in out} == {expected}


def test_bad_arguments_name_the_value(three_engines):
    with pytest.raises(InvalidArgumentError, match="num_engines=0"):
        RayVLLMSampler(FakeEngineFactory(), num_engines=0)
    with pytest.raises(InvalidArgumentError, match="num_gpus=-1"):
        RayVLLMSampler(FakeEngineFactory(), num_gpus=-1)
    with pytest.raises(InvalidArgumentError, match="num_gpus=1.5"):
        RayVLLMSampler(FakeEngineFactory(), num_gpus=1.5)
    with pytest.raises(InvalidArgumentError, match="engine_factory="):
        RayVLLMSampler("/models/qwen")
    with pytest.raises(InvalidArgumentError, match="num_gpus=0.5 with tensor_parallel_size=2"):
        RayVLLMSampler.from_model("/models/qwen", tensor_parallel_size=2, num_gpus=0.5)
    with pytest.raises(InvalidArgumentError, match="n=0"):
        three_engines.generate(["a"], 0, SAMPLING)


def test_close_kills_the_actors(local_ray):
    policy = RayVLLMSampler(FakeEngineFactory(), num_engines=1, num_gpus=0)
    (actor,) = policy.actors
    assert policy.generate(["a"], 1, SAMPLING)[0][0].text.startswith("0|")
    policy.close()
    deadline = time.monotonic() + 60
    while True:  # ray.kill is asynchronous: a call made right after it may still be served
        try:
            local_ray.get(actor.generate.remote(["a"], 1, SAMPLING))
        except local_ray.exceptions.RayActorError:
            break
        assert time.monotonic() < deadline, "the actor is still alive a minute after close()"
        time.sleep(0.1)
    with pytest.raises(InvalidArgumentError, match="closed"):
        policy.generate(["a"], 1, SAMPLING)


def test_engine_spec_seeds_each_engine_apart_and_runs_tensor_parallel_in_its_actor():
    spec = VLLMEngineSpec("/models/qwen", seed=7, tensor_parallel_size=2, engine_kwargs={"enforce_eager": True})
    first, second = spec.llm_kwargs(0), spec.llm_kwargs(1)
    assert (first["seed"], second["seed"]) == (7, 8)
    assert first["tensor_parallel_size"] == 2 and first["distributed_executor_backend"] == "mp"
    assert first["enforce_eager"] is True
    assert "distributed_executor_backend" not in VLLMEngineSpec("/m").llm_kwargs(0)


def test_engine_spec_starts_an_in_process_engine_core_with_its_seed(monkeypatch):
    started = []

    def start_llm(**kwargs):
        started.append((os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"], kwargs))

    fake_vllm = SimpleNamespace(SamplingParams=FakeVLLMSamplingParams, LLM=start_llm)
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
    policy = VLLMEngineSpec("/models/qwen", seed=7)(2)
    ((multiprocessing, kwargs),) = started
    assert isinstance(policy, VLLMSampler) and multiprocessing == "0"
    assert kwargs["model"] == "/models/qwen" and kwargs["seed"] == 9 and kwargs["enable_prefix_caching"] is True


def test_tensor_parallel_engine_loads_weights_on_every_rank():
    llm = TensorParallelFakeLLM(ranks=2)
    policy = VLLMSampler(llm, sampling_params_cls=FakeVLLMSamplingParams)
    model = HFPolicy.tiny(seed=0, n_layer=1, n_embd=16, n_head=1).model
    assert policy.sync_weights(model) == len(model.state_dict())
    assert [len(w.model_runner.model.loaded) for w in llm.workers] == [len(model.state_dict())] * 2
    assert llm.cache_resets == 1


def test_missing_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(DependencyNotInstalled, match=r"teamgym\[ray\]"):
        RayVLLMSampler(FakeEngineFactory())


# ---------------------------------------------------------------------------------------------- GPU, real vLLM
def save_tiny_checkpoint(path, *, n_positions: int = 512) -> HFPolicy:
    """The tiny GPT-2 (head size 64, which every vLLM attention backend supports) saved where vLLM can load it."""
    policy = HFPolicy.tiny(seed=0, n_layer=2, n_embd=128, n_head=2, n_positions=n_positions)
    policy.model.save_pretrained(path)
    policy.tokenizer.save_pretrained(path)
    return policy


def mean_logprob(groups) -> float:
    logprobs = [lp for group in groups for c in group for lp in c.logprobs]
    return sum(logprobs) / len(logprobs)


@pytest.mark.gpu
def test_real_vllm_engines_generate_and_take_synced_weights(local_ray, tmp_path):
    pytest.importorskip("vllm")
    source = save_tiny_checkpoint(tmp_path / "tiny")
    policy = RayVLLMSampler.from_model(str(tmp_path / "tiny"), num_engines=2, num_gpus=0.3,
                                      gpu_memory_utilization=0.2, max_model_len=256, enforce_eager=True)
    try:
        prompts = ["go R", "go D", "abc", "a longer prompt"]
        sampling = SamplingParams(max_tokens=8, temperature=1.0)
        before = policy.generate(prompts, 2, sampling)
        assert [len(g) for g in before] == [2] * 4
        for prompt, group in zip(prompts, before):
            for c in group:
                assert c.prompt_ids == source.tokenizer(prompt, add_special_tokens=False)["input_ids"]
                assert 1 <= len(c.token_ids) <= 8 and len(c.logprobs) == len(c.token_ids)
        # A random tiny model is near uniform (logprob ~ -ln(vocab) ~ -4.6); a 50x embedding makes it peaked.
        assert mean_logprob(before) < -3.5
        source.model.transformer.wte.weight.data.mul_(50.0)
        assert policy.sync_weights(source.model) == len(source.model.state_dict())
        after = policy.generate(prompts, 2, sampling)
        assert mean_logprob(after[:2]) > -1.5 and mean_logprob(after[2:]) > -1.5  # engine 0, engine 1
    finally:
        policy.close()
