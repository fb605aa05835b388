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
    [("lr", -1.0, "lr=-1.0"), ("steps", -1, "steps=-1"), ("k", 2.5, "k=2.5"), ("aggregation", "mean", "token-mean"),
     ("strategy", "best", "greedy"), ("clip_low", 1.0, "clip_low=1.0"), ("dual_clip", 0.5, "dual_clip=0.5"),
     ("device", "tpu", "cuda"), ("model", "/no/such/dir", "local directory"), ("prompt_format", "x", "compact"),
     ("rollout_waves", 0, "rollout_waves=0"), ("completion_budget", -1, "completion_budget=-1"),
     ("completion_budget", 2.5, "--completion-budget")],
)
def test_bad_values_name_field_value_and_fix(field, value, expected):
    with pytest.raises(InvalidArgumentError, match="expected") as err:
        TrainConfig.from_dict({field: value})
    assert field in str(err.value) and expected in str(err.value)


def test_unknown_algo_suggests_the_closest():
    with pytest.raises(UnknownNameError, match="at_grpo"):
        TrainConfig(algo="at-grpo")


def test_role_lr_needs_separate_models():
    with pytest.raises(InvalidArgumentError, match="shared_model=False"):
        TrainConfig.from_dict({"role_lr": {"tool": 1e-4}})
    assert TrainConfig.from_dict({"role_lr": {"tool": 1e-4}, "shared_model": False}).ppo.role_lr == {"tool": 1e-4}


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
    assert (config.steps, config.tree.k, config.ppo.lr, config.env_kwargs, config.plot) == (9, 2, 0.01, {"size": 5},
                                                                                         False)


def test_cli_unknown_set_field_is_named(tmp_path):
    with pytest.raises(InvalidArgumentError, match="stepz.*did you mean 'steps'"):
        config_from_args(_parse(["--set", "stepz=3"]))
    with pytest.raises(InvalidArgumentError, match="'nope': no field is close to it") as info:
        config_from_args(_parse(["--set", "nope=1"]))  # 0.5 from entropy_coef: no suggestion
    assert "entropy_coef" not in str(info.value)


def test_defaults_are_the_embedded_main_job():
    """The README's main job: the steadier warm start (width 128, 1,000 cosine SFT steps on 3,000 tasks), then
    400 Turn-PPO steps on plan_path-v1 with 3 episodes per task, half of each step's tasks replayed from recent
    failures, a cosine learning rate from 1e-4 (docs/training.md, "The main job")."""
    config = TrainConfig()
    assert (config.env_id, config.algo, config.rollout_mode, config.group_size) == ("plan_path-v1", "turn_ppo",
                                                                                   "trajectory", 3)
    assert (config.steps, config.task_replay, config.task_replay_size, config.eval_every) == (400, 0.5, 64, 50)
    assert (config.ppo.lr, config.ppo.lr_schedule) == (1e-4, "cosine")
    assert (config.n_embd, config.n_head, config.sft_steps, config.sft_tasks, config.sft_schedule) == (
        128, 4, 1000, 3000, "cosine")
    assert config == TrainConfig.from_dict({})


def test_the_documented_gpu_configs_are_valid(tmp_path):
    """docs/training.md's Qwen config, alone and with its Ray engine layout, is a valid TrainConfig (the model path
    replaced by a local directory, which the check requires)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "training.md").read_text()
    blocks = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", text, flags=re.S)]
    assert len(blocks) >= 2 and blocks[0]["sampling"]["backend"] == "vllm" and blocks[0]["prompt_format"] == "chat"
    base = {**blocks[0], "model": str(tmp_path)}
    for extra in [{}, *blocks[1:]]:
        config = TrainConfig.from_dict({**base, **extra})
        assert config.sampling.backend == "vllm" and config.device == "cuda"


# ---------------------------------------------------------------------- sections, legacy names, generated flags


def test_every_section_field_is_documented_and_has_a_flag_with_its_doc():
    from teamgym.train.cli import flag_of
    from teamgym.train.config import field_docs, field_paths

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    actions = {option: action for action in parser._actions for option in action.option_strings}
    docs = field_docs()
    assert set(docs) == set(field_paths()) and all(docs.values())
    assert {"tree.k", "ppo.lr", "sampling.backend", "vllm.engines", "alpha"} <= set(docs)
    for path, text in docs.items():
        action = actions[flag_of(path)]
        assert action.dest == path and text in action.help.replace("%%", "%")


def test_the_flags_of_earlier_versions_still_work(tmp_path):
    config = config_from_args(_parse(["--env", "plan_path-v0", "--k", "3", "--strategy", "top_m", "--lr", "0.01",
                                      "--no-progress", "--generator", "hf", "--temperature", "0.5"]))
    assert (config.env_id, config.tree.k, config.tree.strategy, config.ppo.lr, config.progress_bar) == (
        "plan_path-v0", 3, "top_m", 0.01, False)
    assert config.sampling == type(config.sampling)(temperature=0.5, backend="hf")


def test_generated_flags_parse_by_the_fields_type():
    config = config_from_args(_parse(["--tree-k", "2", "--ppo-dual-clip", "null", "--alpha", "bandit",
                                      "--no-shared-model", "--ppo-role-lr", '{"tool": 0.001}',
                                      "--spo-reward-range", "[-2.5, 2.5]"]))
    assert (config.tree.k, config.ppo.dual_clip, config.alpha, config.shared_model) == (2, None, "bandit", False)
    assert config.ppo.role_lr == {"tool": 0.001} and list(config.spo_reward_range) == [-2.5, 2.5]
    assert config_from_args(_parse(["--alpha", "0.5"])).alpha == 0.5
    assert config_from_args(_parse(["--completion-budget", "2560"])).completion_budget == 2560
    assert TrainConfig().completion_budget == 0  # off unless asked for


def test_a_flat_config_of_an_earlier_version_loads_as_the_nested_one(tmp_path):
    flat = {"k": 3, "strategy": "top_m", "lr": 0.01, "generator": "hf", "vllm_gpu_memory_utilization": 0.3,
            "temperature": 0.7, "alpha_mixer": "static", "alpha": 2.0, "steps": 5}
    nested = {"tree": {"k": 3, "strategy": "top_m"}, "ppo": {"lr": 0.01}, "sampling.backend": "hf",
              "vllm": {"gpu_memory_utilization": 0.3}, "sampling.temperature": 0.7, "alpha": 2.0, "steps": 5}
    assert TrainConfig.from_dict(flat) == TrainConfig.from_dict(nested)
    assert TrainConfig.from_dict({"alpha_mixer": "env", "alpha": 1.0}).alpha == "env"
    path = tmp_path / "c.json"
    TrainConfig.from_dict(nested).save(path)
    assert json.loads(path.read_text())["tree"]["k"] == 3 and TrainConfig.from_file(path) == TrainConfig.from_dict(flat)


def test_set_takes_paths_and_legacy_names_together():
    config = config_from_args(_parse(["--set", "alpha=2", "--set", "alpha_mixer=static", "--set", "tree.k=5",
                                      "--set", "vllm_engines=1"]))
    assert (config.alpha, config.tree.k, config.vllm.engines) == (2, 5, 1)


def test_teamgym_train_help_lists_the_generated_flags(capsys):
    from teamgym import cli

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0 and "teamgym train" in out and "--tree-k K, --k K" in out and "--ppo-lr" in out


def test_the_ppo_sections_aggregations_are_the_losses():
    from teamgym.algos import AGGREGATIONS
    from teamgym.train import sections

    assert sections.AGGREGATIONS == AGGREGATIONS  # spelled twice so that the config loads without torch


def test_resuming_a_run_saved_before_a_field_existed_keeps_how_it_ran(tmp_path):
    """A ``config.json`` written before ``task_replay`` and ``ppo.lr_schedule`` existed resumes with the values that
    reproduce its run (no replay, a constant rate), not today's defaults; a config that has them keeps its own."""
    from teamgym.train.config import ADDED_FIELDS

    saved = json.loads(json.dumps(TrainConfig(output_dir=str(tmp_path)).to_dict()))
    del saved["task_replay"], saved["ppo"]["lr_schedule"]
    (tmp_path / "config.json").write_text(json.dumps(saved))
    config = config_from_args(_parse(["--resume", "--output-dir", str(tmp_path)]))
    assert (config.task_replay, config.ppo.lr_schedule) == (ADDED_FIELDS["task_replay"],
                                                           ADDED_FIELDS["ppo.lr_schedule"]) == (0.0, "constant")
    saved.update({"task_replay": 0.25, "ppo": {**saved["ppo"], "lr_schedule": "cosine"}})
    (tmp_path / "config.json").write_text(json.dumps(saved))
    config = config_from_args(_parse(["--resume", "--output-dir", str(tmp_path)]))
    assert (config.task_replay, config.ppo.lr_schedule) == (0.25, "cosine")
    assert config_from_args(_parse(["--output-dir", str(tmp_path)])).task_replay == 0.5  # not resuming: defaults
