"""Per-role LoRA adapters on one base (``role_adapters=True``): one frozen base, an adapter and optimizer per role,
sampling with each role's adapter, checkpoints that hold each adapter, exact resume."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import teamgym
from teamgym.errors import InvalidArgumentError
from teamgym.rollout import HFPolicy
from teamgym.rollout.adapters import (
    DEFAULT_RANK,
    AdapterPolicy,
    adapter_of,
    adapter_targets,
    role_adapter_policies,
)
from teamgym.rollout.sampling import SamplingParams
from teamgym.train import TrainConfig, Trainer, train
from teamgym.train.checkpoint import load_latest_checkpoint
from teamgym.train.metrics import read_metrics

pytest.importorskip("peft")


@pytest.fixture(autouse=True)
def relay_registered(monkeypatch):
    from teamgym import registry

    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("relay-v0", "tests.support.relay_env:RelayEnv")


def adapters_config(tmp_path: Path, name: str, **overrides) -> TrainConfig:
    values = dict(
        env_id="relay-v0",
        env_kwargs={"max_turns": 2},
        role_adapters=True,
        lora_rank=2,
        steps=4,
        output_dir=str(tmp_path / name),
        tasks_per_step=2,
        k=2,
        n_layer=1,
        n_embd=16,
        n_head=1,
        max_new_tokens=6,
        sft_steps=0,
        eval_tasks=2,
        checkpoint_every=1,
        progress_bar=False,
        plot=False,
        torch_threads=1,
        lr=1e-2,
        entropy_coef=0.05,
    )  # a gradient even when every candidate ties
    values.update(overrides)
    return TrainConfig.from_dict(values)


def base_weights(policy: AdapterPolicy) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in policy.model.state_dict().items() if adapter_of(k) is None}


def test_bad_combinations_name_the_value_and_the_fix(tmp_path):
    with pytest.raises(InvalidArgumentError, match=r"role_adapters=True with shared_model=False.*shared_model=True"):
        TrainConfig.from_dict({"role_adapters": True, "shared_model": False})
    vllm = {"role_adapters": True, "sampling.backend": "vllm", "model": str(tmp_path)}
    assert TrainConfig.from_dict(vllm).role_adapters  # one in-process engine with multi-LoRA
    with pytest.raises(InvalidArgumentError, match=r"vllm.engines=2.*Ray engines with LoRA are not built.*leave both"):
        TrainConfig.from_dict({**vllm, "vllm.engines": 2})
    assert TrainConfig.from_dict({"role_adapters": True, "ppo.role_lr": {"speaker": 1e-3}}).ppo.role_lr


def test_one_base_an_adapter_and_an_optimizer_per_role(tmp_path):
    trainer = Trainer(adapters_config(tmp_path, "build", lora_rank=0, **{"ppo.role_lr": {"listener": 1e-3}}))
    speaker, listener = trainer.policies["speaker"], trainer.policies["listener"]
    assert speaker.model is listener.model and (speaker.adapter, listener.adapter) == ("speaker", "listener")
    assert speaker.model.peft_config["speaker"].r == DEFAULT_RANK  # lora_rank=0 picks the default rank
    assert set(trainer.optimizers) == {"speaker", "listener"}
    owned = {role: {id(p) for g in opt.param_groups for p in g["params"]} for role, opt in trainer.optimizers.items()}
    assert owned["speaker"] and not owned["speaker"] & owned["listener"]
    for name, parameter in speaker.model.named_parameters():
        role = adapter_of(name)
        assert (id(parameter) in owned.get(role, ())) == (role is not None), name
    assert trainer.optimizers["listener"].param_groups[0]["lr"] == 1e-3
    trainer.close()


def test_updates_move_each_adapter_apart_and_never_the_base(tmp_path):
    trainer = Trainer(adapters_config(tmp_path, "run", steps=2))
    speaker = trainer.policies["speaker"]
    before = base_weights(speaker)
    trainer.train()
    trainer.close()
    assert all(torch.equal(before[k], v) for k, v in base_weights(speaker).items())  # bit-identical
    mine, theirs = speaker.weights(), trainer.policies["listener"].weights()
    moved = [k for k, v in mine.items() if "lora_B" in k and v.abs().sum() > 0]
    assert moved, "the speaker's adapter must learn (B starts at zero)"
    assert any(not torch.equal(v, theirs[k.replace(".speaker.", ".listener.")]) for k, v in mine.items())


def test_each_adapter_adapts_the_output_layer_too():
    base = HFPolicy.tiny(n_layer=1, n_embd=16, n_head=1)
    assert adapter_targets(base.model) == ["c_attn", "c_fc", "c_proj", "lm_head"]
    policies = role_adapter_policies(base, ["coder", "tester"], rank=2)
    model = policies["coder"].model
    for role in ("coder", "tester"):
        owned = {name for name, _ in model.named_parameters() if adapter_of(name) == role}
        assert {f"base_model.model.lm_head.lora_{side}.{role}.weight" for side in "AB"} <= owned
        assert {id(p) for p in policies[role].trainable_parameters()} == {
            id(p) for name, p in model.named_parameters() if name in owned}  # what its optimizer steps
    unfrozen = [name for name, p in model.named_parameters() if adapter_of(name) is None and p.requires_grad]
    assert not unfrozen  # the base, output layer included, stays frozen


def test_a_checkpoint_without_the_output_layers_adapter_is_refused_naming_why():
    from teamgym.errors import CheckpointError

    policy = role_adapter_policies(HFPolicy.tiny(n_layer=1, n_embd=16, n_head=1), ["coder"], rank=2)["coder"]
    old = {k: v for k, v in policy.weights().items() if ".lm_head." not in k}  # before the output layer was adapted
    with pytest.raises(CheckpointError, match=r"no weights for the output layer \(lm_head\).*start the run again"):
        policy.load_weights(old)


def test_adapters_on_a_random_base_learn_the_bandit():
    """The output layer in the adapters (with LoRA's learning rate, the suite's for adapter runs) is what lets a role
    sharpen its answers on a random base: with ``"all-linear"`` (no output layer) sampled success stayed at 5%."""
    from teamgym.train import sanity

    result = sanity.run_sanity("sanity_bandit-v0", "at_grpo", role_adapters=True)
    assert result.passed, result


def test_each_role_generates_with_its_own_adapter():
    policies = role_adapter_policies(HFPolicy.tiny(n_layer=1, n_embd=16, n_head=1), ["coder", "tester"], rank=2)
    greedy = SamplingParams(temperature=0.0, max_tokens=12)
    prompts = ["plan: go", "test: x"]

    def texts(role: str) -> list[str]:
        return [group[0].text for group in policies[role].generate(prompts, 1, greedy)]

    coder, tester = texts("coder"), texts("tester")
    with torch.no_grad():
        for name, parameter in policies["coder"].model.named_parameters():
            if adapter_of(name) == "coder" and "lora_B" in name:
                parameter.normal_(0.0, 1.0, generator=torch.Generator().manual_seed(0))
    assert texts("coder") != coder  # the changed adapter changes its role's completions
    assert texts("tester") == tester  # and no other role's
    scored = policies["tester"].score([[5, 6]], [[7, 8]])[0]
    assert torch.equal(scored, policies["tester"].score([[5, 6]], [[7, 8]])[0])


@pytest.mark.parametrize("waves", [1, 2])
def test_two_steps_then_resume_equal_an_uninterrupted_run(tmp_path, waves):
    full = adapters_config(tmp_path, "full", rollout_waves=waves)
    train(full)
    train(adapters_config(tmp_path, "part", steps=2, rollout_waves=waves))
    resumed = adapters_config(tmp_path, "part", rollout_waves=waves)
    train(resumed, resume=True)
    assert [r["step"] for r in read_metrics(resumed.output_dir)] == [1, 2, 3, 4]
    a, b = load_latest_checkpoint(full.output_dir)[1], load_latest_checkpoint(resumed.output_dir)[1]
    assert set(a["models"]) == {"speaker", "listener"} and a["base"] is None  # no warm start: the seed rebuilds it
    for role in a["models"]:
        assert a["models"][role] and all(adapter_of(k) == role for k in a["models"][role])
        assert all(torch.equal(a["models"][role][k], b["models"][role][k]) for k in a["models"][role])
        assert a["optimizers"][role]["state"]
        for index, values in a["optimizers"][role]["state"].items():
            assert all(torch.equal(v, b["optimizers"][role]["state"][index][k]) for k, v in values.items())
    rows_a, rows_b = read_metrics(full.output_dir), read_metrics(resumed.output_dir)
    assert [r["reward/mean"] for r in rows_a] == [r["reward/mean"] for r in rows_b]


def test_adapters_on_a_local_checkpoint_leave_its_weights_as_saved(tmp_path):
    source = HFPolicy.tiny(seed=3, n_layer=1, n_embd=16, n_head=1)
    source.model.save_pretrained(tmp_path / "ckpt")
    source.tokenizer.save_pretrained(tmp_path / "ckpt")
    trainer = Trainer(adapters_config(tmp_path, "run", model=str(tmp_path / "ckpt"), steps=2))
    trainer.train()
    trainer.close()
    speaker = trainer.policies["speaker"]
    state = {
        k.removeprefix("base_model.model.").replace(".base_layer.", "."): v for k, v in base_weights(speaker).items()
    }
    assert all(torch.equal(state[k], v) for k, v in source.model.state_dict().items())
    assert any(v.abs().sum() > 0 for k, v in speaker.weights().items() if "lora_B" in k)


def test_the_reference_is_the_base_with_the_adapters_off(tmp_path):
    config = adapters_config(tmp_path, "kl", steps=3, **{"ppo.kl_reference": "reference", "ppo.kl_coef": 0.5})
    train(config)
    rows = read_metrics(config.output_dir)
    assert rows[0]["kl_reference"] == pytest.approx(0.0, abs=1e-6) and rows[-1]["kl_reference"] > 0
    assert load_latest_checkpoint(config.output_dir)[1]["reference"] == {}  # nothing to save: the base is the reference


def test_the_warm_start_trains_the_base_and_a_resume_restores_it(tmp_path):
    def config(name: str, steps: int) -> TrainConfig:
        return TrainConfig.from_dict(
            dict(
                env_id="plan_path-v0",
                role_adapters=True,
                steps=steps,
                sft_steps=2,
                eval_tasks=2,
                eval_every=0,
                tasks_per_step=2,
                k=2,
                n_layer=1,
                n_embd=16,
                n_head=1,
                sft_batch_size=4,
                output_dir=str(tmp_path / name),
                plot=False,
                progress_bar=False,
                torch_threads=1,
                checkpoint_every=1,
            )
        )

    trainer = Trainer(config("full", 2))
    policy = next(iter(trainer.policies.values()))
    start = base_weights(policy)
    trainer.train()
    trainer.close()
    assert all(p.requires_grad is False for n, p in policy.model.named_parameters() if adapter_of(n) is None)
    full = load_latest_checkpoint(tmp_path / "full")[1]
    assert full["base"] is not None and set(full["base"]) == set(start)
    assert any(not torch.equal(start[k], full["base"][k]) for k in start)  # the warm start moved the base
    train(config("part", 1))
    train(config("part", 2), resume=True)
    part = load_latest_checkpoint(tmp_path / "part")[1]
    assert all(torch.equal(full["base"][k], part["base"][k]) for k in start)
    for role, weights in full["models"].items():
        assert all(torch.equal(v, part["models"][role][k]) for k, v in weights.items())
