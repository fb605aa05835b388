"""LoRA through peft on a local checkpoint: only the adapter trains, checkpoints hold it, resume is exact."""

from __future__ import annotations

import pytest
import torch

import teamgym
from teamgym.train import TrainConfig, Trainer, train
from teamgym.train.checkpoint import load_latest_checkpoint

pytest.importorskip("peft")


@pytest.fixture(autouse=True)
def relay_registered(monkeypatch):
    from teamgym import registry

    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("relay-v0", "tests.support.relay_env:RelayEnv")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    from teamgym.rollout import HFPolicy

    path = tmp_path_factory.mktemp("tiny-ckpt")
    source = HFPolicy.tiny(seed=0, n_layer=1, n_embd=16, n_head=1)
    source.model.save_pretrained(path)
    source.tokenizer.save_pretrained(path)
    return path, {k: v.clone() for k, v in source.model.state_dict().items()}


def lora_config(tmp_path, checkpoint_path, name: str, **overrides) -> TrainConfig:
    values = dict(env_id="relay-v0", env_kwargs={"max_turns": 2}, model=str(checkpoint_path), lora_rank=2, steps=3,
                  output_dir=str(tmp_path / name), tasks_per_step=2, k=2, max_new_tokens=6, sft_steps=0,
                  eval_tasks=2, checkpoint_every=1, progress_bar=False, plot=False, torch_threads=1, lr=1e-2,
                  entropy_coef=0.05)  # a gradient even when the untrained model's candidates all tie
    values.update(overrides)
    return TrainConfig.from_dict(values)


def test_only_the_adapter_trains(tmp_path, checkpoint):
    path, base = checkpoint
    trainer = Trainer(lora_config(tmp_path, path, "lora"))
    policy = trainer.policies["speaker"]
    trainable = {n for n, p in policy.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    optimized = sum(p.numel() for g in trainer.optimizers["shared"].param_groups for p in g["params"])
    assert optimized == sum(p.numel() for p in policy.model.parameters() if p.requires_grad)
    start = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    trainer.train()
    trainer.close()
    after = dict(policy.model.named_parameters())
    moved = [n for n in trainable if not torch.equal(after[n], start[n])]
    assert moved, "the adapter must learn"
    for name, value in after.items():
        if name not in trainable:
            assert torch.equal(value, start[name]), f"{name} is frozen but changed"
    state = {k.removeprefix("base_model.model.").replace(".base_layer.", "."): v
             for k, v in policy.model.state_dict().items() if "lora_" not in k}
    assert set(base) <= set(state)
    for name, value in base.items():  # the frozen base is still the checkpoint's
        assert torch.equal(state[name], value), name

def test_resume_with_an_adapter_is_exact(tmp_path, checkpoint):
    path, _ = checkpoint
    full = lora_config(tmp_path, path, "full", steps=4)
    train(full)
    train(lora_config(tmp_path, path, "part", steps=2))
    train(lora_config(tmp_path, path, "part", steps=4), resume=True)
    a = load_latest_checkpoint(full.output_dir)[1]["models"]["shared"]
    b = load_latest_checkpoint(tmp_path / "part")[1]["models"]["shared"]
    assert a.keys() == b.keys() and any("lora_" in k for k in a)
    for key in a:
        assert torch.equal(a[key], b[key]), key
