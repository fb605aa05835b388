"""Per-role LoRA adapters sampled by a real vLLM engine with multi-LoRA (skipped where vLLM is not installed).

vLLM serves LoRA only on model classes with its ``SupportsLoRA`` (Llama, Qwen2...), not GPT-2, so the base here is a
tiny Llama built in code with the character tokenizer (no download). What they pin down: each role samples through
vLLM with its own adapter, greedy tokens and logprobs as the transformers model with that adapter active; an update
loads only the changed adapter, as a new version, and removes the old one; a base sync (the warm start) reloads the
base and every adapter; the trainer runs with ``role_adapters`` on vLLM (and resumes, and warm-starts the base),
its logprobs those vLLM sampled with.
Run by ``scripts/test_vllm_cpu.sh`` on CPU.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from teamgym.rollout import HFPolicy, SamplingParams

vllm = pytest.importorskip("vllm")
pytest.importorskip("peft")

from teamgym.rollout.adapters import adapter_of, role_adapter_policies  # noqa: E402
from teamgym.rollout.samplers import Samplers, VLLMSettings  # noqa: E402
from teamgym.rollout.vllm_lora import base_weights  # noqa: E402

pytestmark = pytest.mark.vllm
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache (the CPU default is sized for servers)
PROMPTS = ["Move from @ to G.", "Actions: R", "a longer prompt that shares a prefix"]
ROLES = ["coder", "tester"]
GREEDY = SamplingParams(temperature=0.0, max_tokens=12)


def tiny_llama_checkpoint(path: Path, seed: int = 0, *, tied: bool = False) -> str:
    """A 2-layer Llama with the character tokenizer, saved to ``path`` (float32); ``tied``: its output layer is its
    input embeddings (as Qwen2.5-0.5B's)."""
    import transformers

    from teamgym.rollout.tiny import char_tokenizer

    tokenizer = char_tokenizer()
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=512, bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=tied)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = transformers.LlamaForCausalLM(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def perturb(policy, *, adapter: str | None, scale: float, seed: int, layer: str = "") -> None:
    """Move one adapter's weights (``None``: the base's), as an update would; ``layer``: only that layer's."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            moves = adapter is None or "lora_B" in name
            if adapter_of(name) == adapter and moves and (not layer or f".{layer}." in name):
                param.add_(scale * torch.randn(param.shape, generator=generator))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """Tied input and output embeddings (as Qwen2.5-0.5B's): the adapters' output-layer part must reach vLLM there
    too (one engine per process at a time: closing one tears down vLLM's process-wide state, so one checkpoint)."""
    return tiny_llama_checkpoint(tmp_path_factory.mktemp("llama"), tied=True)


@pytest.fixture(scope="module")
def setup(checkpoint):
    """Role adapters of rank 4 (B moved off zero, differently per role) and one vLLM engine sampling every role."""
    policies = role_adapter_policies(HFPolicy.from_pretrained(checkpoint, dtype="float32"), ROLES, rank=4)
    for i, role in enumerate(ROLES):
        perturb(policies[role], adapter=role, scale=0.3, seed=i)
    samplers = Samplers(policies, "vllm", model=checkpoint, vllm=VLLMSettings(gpu_memory_utilization=0.2))
    yield policies, samplers
    samplers.close()


def greedy(sampler) -> list[list[int]]:
    return [g[0].token_ids for g in sampler.generate(PROMPTS, 1, GREEDY)]


def assert_samples_as_transformers(policies, samplers, role: str) -> None:
    """vLLM with ``role``'s LoRA request: the greedy tokens of the transformers model with that adapter, and sampled
    logprobs equal to its scores (float32, within 2e-3)."""
    policy = policies[role]
    assert greedy(samplers.by_role[role]) == greedy(policy)
    completions = [g[0] for g in samplers.by_role[role].generate(PROMPTS, 1, SamplingParams(max_tokens=10, seed=3))]
    with torch.no_grad():
        logprobs, _, mask = policy.score([c.prompt_ids for c in completions], [c.token_ids for c in completions])
    for i, c in enumerate(completions):
        scored = logprobs[i, : int(mask[i].sum())]
        assert torch.allclose(torch.tensor(c.logprobs), scored, atol=2e-3), (role, c.logprobs, scored.tolist())


def test_each_role_samples_with_its_own_adapter_as_the_transformers_model(setup):
    policies, samplers = setup
    assert samplers.adapters is not None and set(samplers.by_role) == set(ROLES)
    for role in ROLES:
        assert_samples_as_transformers(policies, samplers, role)
    assert greedy(samplers.by_role["coder"]) != greedy(samplers.by_role["tester"])


def test_an_update_loads_the_changed_adapter_as_a_new_version(setup):
    policies, samplers = setup
    adapters = samplers.adapters
    engine = adapters.engine.llm.llm_engine
    before = dict(adapters.requests)
    old_tokens = greedy(samplers.by_role["coder"])
    perturb(policies["coder"], adapter="coder", scale=0.5, seed=7, layer="lm_head")  # the output layer's part only
    samplers.sync(base=False)
    after = adapters.requests
    assert after["tester"] is before["tester"]  # unchanged: not reloaded
    assert after["coder"].lora_int_id != before["coder"].lora_int_id and after["coder"].lora_name != "coder"
    assert engine.list_loras() >= {after["coder"].lora_int_id, after["tester"].lora_int_id}
    assert before["coder"].lora_int_id not in engine.list_loras()
    assert not Path(before["coder"].lora_path).exists()
    assert_samples_as_transformers(policies, samplers, "coder")
    assert greedy(samplers.by_role["coder"]) != old_tokens
    assert_samples_as_transformers(policies, samplers, "tester")


def test_a_base_sync_reloads_the_base_and_every_adapter(setup):
    """The warm start trains the shared base: a sync with ``base`` loads it, then every adapter again."""
    policies, samplers = setup
    before = dict(samplers.adapters.requests)
    perturb(policies["coder"], adapter=None, scale=0.05, seed=11)
    samplers.sync()
    for role in ROLES:
        assert samplers.adapters.requests[role].lora_int_id != before[role].lora_int_id
        assert_samples_as_transformers(policies, samplers, role)


def test_trainer_trains_role_adapters_sampled_by_vllm_and_resumes(tmp_path, monkeypatch, checkpoint):
    """AT-GRPO with per-role adapters on vLLM, one step then a resume for the second: each rollout's trainer logprobs
    equal vLLM's (KL ~ 0 before each update, so the synced adapters reached the engine, the resumed one's too), and
    an update loads changed adapters as new versions."""
    import teamgym
    from teamgym import registry
    from teamgym.train import TrainConfig, Trainer
    from teamgym.train.metrics import read_metrics

    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("relay-v0", "tests.support.relay_env:RelayEnv")

    def run(steps: int, resume: bool) -> None:
        config = TrainConfig.from_dict(dict(
            algo="at_grpo",
            env_id="relay-v0", env_kwargs={"max_turns": 2}, model=checkpoint, generator="vllm", role_adapters=True,
            lora_rank=4, vllm_gpu_memory_utilization=0.2, steps=steps, lr=3e-3, entropy_coef=0.05, tasks_per_step=4,
            k=2, epochs=1, micro_batch_size=4096, max_new_tokens=8, sft_steps=0, eval_tasks=2, checkpoint_every=1,
            output_dir=str(tmp_path / "run"), progress_bar=False, plot=False, torch_threads=1))
        trainer = Trainer(config, resume=resume)
        try:
            start = {role: trainer.samplers.adapters.requests[role].lora_int_id for role in trainer.roles}
            trainer.train()
            assert any(trainer.samplers.adapters.requests[role].lora_int_id != start[role] for role in trainer.roles)
        finally:
            trainer.close()

    run(1, resume=False)
    run(2, resume=True)
    rows = read_metrics(str(tmp_path / "run"))
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        assert row["completions"] > 0 and abs(row["kl"]) < 1e-4 and row["clip_fraction"] == 0.0, row


def test_the_warm_started_base_reaches_vllm(tmp_path, checkpoint):
    """The SFT warm start trains the shared base: the sync after it loads the base into the engine, so the first RL
    step's trainer logprobs still equal vLLM's (KL ~ 0; the checkpoint's base would give a KL far from 0)."""
    from teamgym.train import TrainConfig, Trainer
    from teamgym.train.metrics import read_metrics

    config = TrainConfig.from_dict(dict(
        algo="at_grpo",
        env_id="plan_path-v0", model=checkpoint, generator="vllm", role_adapters=True, lora_rank=4,
        vllm_gpu_memory_utilization=0.2, steps=1, sft_steps=3, sft_lr=3e-3, sft_batch_size=4, tasks_per_step=2, k=2,
        max_new_tokens=8, eval_tasks=1, eval_every=0, output_dir=str(tmp_path / "run"), progress_bar=False,
        plot=False, torch_threads=1, checkpoint_every=1))
    trainer = Trainer(config)
    try:
        before = {name: t.clone() for name, t in base_weights(trainer.samplers.adapters.model)}
        trainer.train()
        after = dict(base_weights(trainer.samplers.adapters.model))
        assert any(not torch.equal(before[name], after[name]) for name in before), "the warm start moves the base"
    finally:
        trainer.close()
    (row,) = read_metrics(config.output_dir)
    assert row["completions"] > 0 and abs(row["kl"]) < 1e-4, row
