"""The saved advantages are the trainer's (its logged stats, every estimator family and reward mixer), prompts
decode with the run's tokenizer, flags say what happened to a row."""

from __future__ import annotations

import math

import pytest
import torch

import teamgym
from teamgym.report.columns import Turn
from teamgym.report.derive import FLAGS, prompt_decoder, row_flags, step_advantages, token_budget
from teamgym.report.sources import load_source
from teamgym.rollout.tiny import char_tokenizer
from teamgym.train import TrainConfig, train


@pytest.fixture(autouse=True)
def tally_registered(monkeypatch):
    """tally-v0 (three agents, digits the tiny model emits by chance) for this module only."""
    from teamgym import registry

    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("tally-v0", "tests.support.tally_env:TallyEnv")


def tiny_run(tmp_path, **overrides):
    values = dict(
        env_id="tally-v0",
        algo="at_grpo",
        env_kwargs={"max_turns": 1},
        steps=2,
        output_dir=str(tmp_path / "run"),
        tasks_per_step=3,
        k=3,
        group_size=3,
        n_layer=1,
        n_embd=16,
        n_head=1,
        max_new_tokens=4,
        sft_steps=0,
        eval_tasks=2,
        checkpoint_every=2,
        progress_bar=False,
        plot=False,
        torch_threads=1,
        save_batches=True,
        temperature=2.0,
    )
    values.update(overrides)
    train(TrainConfig.from_dict(values))
    return load_source(tmp_path / "run")


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"algo": "treerl"},
        {"algo": "gigpo"},
        {"algo": "team_gigpo"},
        {"alpha_mixer": "static", "alpha": 0.5},
        {"alpha_mixer": "bandit"},
        {"drop_zero_variance": True},
    ],
    ids=["at_grpo", "treerl", "gigpo", "team_gigpo", "static_alpha", "bandit_alpha", "drop_zero_variance"],
)
def test_saved_advantages_are_the_trainers(tmp_path, overrides):
    source = tiny_run(tmp_path, **overrides)
    dropped = 0
    for step, metrics in zip(source.steps, source.metrics):
        advantages = step_advantages(step.raw, step.turns, source.config, metrics)
        kept = torch.tensor([v for v in advantages.values if v is not None])
        assert kept.numel() == metrics["completions"] - sum(advantages.zero_variance)
        assert advantages.note.startswith("saved by the trainer")
        for name, value in (
            ("mean", kept.mean()),
            ("min", kept.min()),
            ("max", kept.max()),
            ("std", kept.std() if kept.numel() > 1 else 0.0),
        ):
            assert math.isclose(float(value), metrics[f"advantage/{name}"], abs_tol=1e-5), name
        dropped += sum(advantages.zero_variance)
    assert (dropped > 0) == bool(overrides.get("drop_zero_variance"))


def test_stateful_estimators_advantages_are_saved_too(tmp_path):
    source = tiny_run(tmp_path, algo="spo")
    advantages = step_advantages(source.steps[0].raw, source.steps[0].turns, source.config, source.metrics[0])
    assert None not in advantages.values and "spo" in advantages.note


def test_saved_advantages_are_used_and_old_batches_are_said():
    turns = [Turn(episode="e", agent="a", reward=1.0, advantage=0.5)]
    assert step_advantages([{"advantage": 0.5}], turns, None, None).values == [0.5]
    bare = step_advantages([{}], [Turn(episode="e", agent="a", reward=1.0)], None, None)
    assert bare.values == [None] and "not saved" in bare.note


def test_prompts_decode_with_the_runs_tokenizer(tmp_path):
    tokenizer = char_tokenizer()
    decode = prompt_decoder({"model": "tiny"})
    assert decode(tuple(tokenizer("..#\n@G.\nT>")["input_ids"])) == "..#\n@G.\nT>"
    assert prompt_decoder({"model": str(tmp_path / "not-here")}) is None
    assert prompt_decoder(None) is None


def test_token_budget():
    assert token_budget({"max_new_tokens": 512, "env_id": "plan_path-v0"}) == 512
    assert token_budget({"max_new_tokens": 0, "env_id": "plan_path-v0", "prompt_format": "compact"}) == 48
    assert token_budget({"max_new_tokens": 0, "env_id": "coder_tester-v0", "prompt_format": "env"}) == 256
    assert token_budget(None) is None


def test_flags():
    base = Turn(episode="e", agent="a", reward=0.0, completion_tokens=40)
    assert row_flags(base, 41, False) == 0
    penalised = Turn(episode="e", agent="a", reward=-0.5, terms={"format": -0.5})
    assert row_flags(penalised, None, False) == FLAGS["format"]
    assert row_flags(Turn(episode="e", agent="a", reward=0.0, infra_error="died"), None, False) == FLAGS["infra"]
    assert row_flags(base, 40, True) == FLAGS["clipped"] | FLAGS["zero_variance"]
