"""TrainConfig validation, config files and the CLI's precedence rules."""

from __future__ import annotations

import argparse
import json

import pytest

from teamgym.errors import InvalidArgumentError, UnknownNameError
from teamgym.train import TrainConfig
from teamgym.train.cli import add_arguments, config_from_args


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [("lr", -1.0, "lr=-1.0"), ("steps", 0, "steps=0"), ("k", 2.5, "k=2.5"), ("aggregation", "mean", "token-mean"),
     ("strategy", "best", "greedy"), ("clip_low", 1.0, "clip_low=1.0"), ("dual_clip", 0.5, "dual_clip=0.5"),
     ("device", "tpu", "cuda"), ("model", "/no/such/dir", "local directory"), ("prompt_format", "x", "compact"),
     ("rollout_waves", 0, "rollout_waves=0")],
)
def test_bad_values_name_field_value_and_fix(field, value, expected):
    with pytest.raises(InvalidArgumentError, match="expected") as err:
        TrainConfig(**{field: value})
    assert field in str(err.value) and expected in str(err.value)


def test_unknown_algo_suggests_the_closest():
    with pytest.raises(UnknownNameError, match="at_grpo"):
        TrainConfig(algo="at-grpo")


def test_role_lr_needs_separate_models():
    with pytest.raises(InvalidArgumentError, match="shared_model=False"):
        TrainConfig(role_lr={"tool": 1e-4})
    assert TrainConfig(role_lr={"tool": 1e-4}, shared_model=False).role_lr == {"tool": 1e-4}


def test_unknown_fields_in_a_file_are_named(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"stepz": 3}))
    with pytest.raises(InvalidArgumentError, match="stepz.*steps"):
        TrainConfig.from_file(path)
    path.write_text("{not json")
    with pytest.raises(InvalidArgumentError, match="could not be read"):
        TrainConfig.from_file(path)


def test_every_field_is_documented():
    doc = TrainConfig.__doc__
    for name in TrainConfig.__dataclass_fields__:
        assert f"        {name}:" in doc, name


def _parse(argv):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def test_cli_precedence_file_then_set_then_flags(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"steps": 7, "k": 3, "lr": 0.01}))
    config = config_from_args(_parse(["--config", str(path), "--set", "k=2", "--set", "env_kwargs={\"size\": 5}",
                                      "--steps", "9", "--output-dir", str(tmp_path / "run"), "--no-plot"]))
    assert (config.steps, config.k, config.lr, config.env_kwargs, config.plot) == (9, 2, 0.01, {"size": 5}, False)


def test_cli_unknown_set_field_is_named(tmp_path):
    with pytest.raises(InvalidArgumentError, match="stepz"):
        config_from_args(_parse(["--set", "stepz=3"]))


def test_defaults_are_the_embedded_main_job():
    config = TrainConfig()
    assert (config.env_id, config.algo, config.k, config.strategy) == ("plan_path-v0", "at_grpo", 4, "greedy")


def test_the_documented_gpu_configs_are_valid(tmp_path):
    """docs/training.md's Qwen config, alone and with its Ray engine layout, is a valid TrainConfig (the model path
    replaced by a local directory, which the check requires)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "training.md").read_text()
    blocks = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", text, flags=re.S)]
    assert len(blocks) >= 2 and blocks[0]["generator"] == "vllm" and blocks[0]["prompt_format"] == "chat"
    base = {**blocks[0], "model": str(tmp_path)}
    for extra in [{}, *blocks[1:]]:
        config = TrainConfig(**{**base, **extra})
        assert config.generator == "vllm" and config.device == "cuda"
