"""The trainer with several vLLM engines as Ray actors: config checks, a CPU run on fake engines, a GPU run."""

from __future__ import annotations

import pytest

import teamgym
from teamgym.errors import InvalidArgumentError
from teamgym.rollout import HFPolicy, SamplingParams
from teamgym.rollout.vllm import trainer_weights
from teamgym.train import TrainConfig, Trainer
from teamgym.train.metrics import read_metrics
from tests.rollout.fakes import FakeEngineFactory, weights_fingerprint
from tests.train.test_trainer import tiny


@pytest.fixture(autouse=True)
def relay_registered(monkeypatch):
    """relay-v0 for this module's tests only (a copy of the registry, restored afterwards)."""
    from teamgym import registry

    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("relay-v0", "tests.support.relay_env:RelayEnv")


def save_checkpoint(path, **tiny_kwargs) -> HFPolicy:
    source = HFPolicy.tiny(seed=0, **tiny_kwargs)
    source.model.save_pretrained(path)
    source.tokenizer.save_pretrained(path)
    return source


@pytest.mark.parametrize(
    ("values", "expected"),
    [({"vllm_engines": 0}, "vllm.engines=0"),
     ({"vllm_tensor_parallel_size": 1.5}, "vllm.tensor_parallel_size=1.5"),
     ({"vllm_gpus_per_engine": -0.5}, "vllm.gpus_per_engine=-0.5"),
     ({"vllm_engines": 2, "vllm_gpus_per_engine": 2.0}, "a share in (0, 1]"),
     ({"vllm_tensor_parallel_size": 2, "vllm_gpus_per_engine": 0.5}, "one whole GPU per rank"),
     ({"vllm_gpus_per_engine": 0.5}, "Ray engines only")],
)
def test_bad_engine_layouts_name_field_value_and_fix(tmp_path, values, expected):
    with pytest.raises(InvalidArgumentError, match="expected|use|set") as err:
        TrainConfig.from_dict({"generator": "vllm", "model": str(tmp_path), **values})
    assert expected in str(err.value)


def test_engine_fields_need_the_vllm_generator():
    with pytest.raises(InvalidArgumentError, match="backend='vllm'"):
        TrainConfig.from_dict({"vllm_engines": 2})


def test_ray_engines_sample_and_get_the_weights_after_every_update(tmp_path, monkeypatch, local_ray):
    from teamgym.rollout.ray_vllm import RayVLLMSampler

    checkpoint = tmp_path / "tiny-ckpt"
    save_checkpoint(checkpoint, n_layer=1, n_embd=16, n_head=1)
    built, synced = [], []

    def fake_from_model(model, **kwargs):
        built.append((model, kwargs))
        policy = RayVLLMSampler(FakeEngineFactory(char_tokenizer=True), num_engines=kwargs["num_engines"], num_gpus=0)
        sync = policy.sync_weights
        policy.sync_weights = lambda m: synced.append(sync(m))
        return policy

    monkeypatch.setattr(RayVLLMSampler, "from_model", staticmethod(fake_from_model))
    config = tiny(tmp_path, "ray", model=str(checkpoint), generator="vllm", vllm_engines=2, steps=2,
                  save_batches=True)
    trainer = Trainer(config)
    try:
        trainer.train()
        ((model, kwargs),) = built
        assert model == str(checkpoint) and kwargs["num_engines"] == 2 and kwargs["tensor_parallel_size"] == 1
        assert kwargs["num_gpus"] == 0 and kwargs["seed"] == config.seed  # device="cpu": vLLM's CPU build
        assert kwargs["dtype"] == "float32"  # the trainer's, not vLLM's choice
        assert len(synced) == 2
        assert [row["step"] for row in read_metrics(config.output_dir)] == [1, 2]
        texts = (tmp_path / "ray" / "batches" / "step_000001.jsonl").read_text()
        assert '"0|' in texts and '"1|' in texts  # both engines answered rollout prompts
        (generator,) = {id(g): g for g in trainer.samplers.by_role.values()}.values()
        expected = weights_fingerprint(list(trainer_weights(trainer.policies["speaker"].model)))
        probe = generator.generate(["p", "q"], 1, SamplingParams(max_tokens=4))
        assert [g[0].text.rsplit("|", 1)[0] for g in probe] == [f"0|{expected}", f"1|{expected}"]
    finally:
        trainer.close()
    assert generator.actors == []  # the trainer closed its engine actors


@pytest.mark.gpu
def test_trainer_with_two_vllm_engines_on_one_gpu(tmp_path, local_ray):
    pytest.importorskip("vllm")
    checkpoint = tmp_path / "tiny-ckpt"
    save_checkpoint(checkpoint, n_layer=2, n_embd=128, n_head=2, n_positions=4096)  # vLLM: max_model_len 4096
    config = tiny(tmp_path, "gpu", model=str(checkpoint), device="cuda", generator="vllm", vllm_engines=2,
                  vllm_gpus_per_engine=0.3, vllm_gpu_memory_utilization=0.2, steps=2)
    trainer = Trainer(config)
    try:
        summary = trainer.train()
        rows = read_metrics(config.output_dir)
        assert [row["step"] for row in rows] == [1, 2] and summary["steps"] == 2
        assert all(row["completions"] > 0 and row["tokens_per_s"] > 0 for row in rows)
        (generator,) = {id(g): g for g in trainer.samplers.by_role.values()}.values()
        assert generator.num_engines == 2
    finally:
        trainer.close()
