"""End-to-end trainer runs at tiny budgets: metrics rows, checkpoints, exact resume, kill -9 then --resume."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import teamgym
from teamgym.core import Outcome, reward_terms
from teamgym.errors import InvalidArgumentError
from teamgym.train import TrainConfig, Trainer, train
from teamgym.train.checkpoint import list_checkpoints, load_latest_checkpoint
from teamgym.train.metrics import read_metrics
from tests.support.relay_env import RelayEnv


@pytest.fixture(autouse=True)
def relay_registered(monkeypatch):
    """relay-v0 for this module's tests only (a copy of the registry, restored afterwards)."""
    from teamgym import registry

    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("relay-v0", "tests.support.relay_env:RelayEnv")

ROOT = Path(__file__).resolve().parents[2]


def tiny(tmp_path: Path, name: str, **overrides) -> TrainConfig:
    values = dict(env_id="relay-v0", algo="at_grpo", env_kwargs={"max_turns": 2}, steps=4,
                  output_dir=str(tmp_path / name), tasks_per_step=2, k=2, n_layer=1, n_embd=16, n_head=1,
                  max_new_tokens=6, sft_steps=0, eval_tasks=2, checkpoint_every=1, progress_bar=False, plot=False,
                  torch_threads=1)
    values.update(overrides)
    return TrainConfig.from_dict(values)


def final_weights(output_dir: str) -> dict[str, torch.Tensor]:
    return load_latest_checkpoint(output_dir)[1]["models"]["shared"]


def test_metrics_have_one_row_per_step_with_the_documented_keys(tmp_path):
    config = tiny(tmp_path, "run", plot=True)
    summary = train(config)
    rows = read_metrics(config.output_dir)
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    for key in ("success", "reward/speaker/team", "reward/listener/echo", "reward/speaker/mixed", "return/speaker",
                "return/listener", "advantage/mean", "advantage/std", "kl", "entropy", "tokens_per_s", "env_time_share",
                "loss"):
        assert key in rows[0], key
    assert Path(summary["plot"]).exists()
    assert json.loads((Path(config.output_dir) / "summary.json").read_text())["steps"] == 4
    assert [p.name for p in list_checkpoints(config.output_dir)] == ["step_00000003", "step_00000004"]


@pytest.mark.parametrize("waves", [1, 2])
def test_resume_continues_exactly(tmp_path, waves):
    full = tiny(tmp_path, "full", rollout_waves=waves)
    train(full)
    part = tiny(tmp_path, "part", steps=2, rollout_waves=waves)
    train(part)
    resumed = tiny(tmp_path, "part", steps=4, rollout_waves=waves)
    train(resumed, resume=True)
    assert [r["step"] for r in read_metrics(resumed.output_dir)] == [1, 2, 3, 4]
    a, b = final_weights(full.output_dir), final_weights(resumed.output_dir)
    assert all(torch.equal(a[k], b[k]) for k in a)
    rows_a, rows_b = read_metrics(full.output_dir), read_metrics(resumed.output_dir)
    assert [r["reward/mean"] for r in rows_a] == [r["reward/mean"] for r in rows_b]


def test_reference_kl_is_logged_and_its_reference_resumes_exactly(tmp_path):
    settings = {"ppo.kl_reference": "reference", "ppo.kl_coef": 0.5, "ppo.lr": 5e-3,
                "ppo.entropy_coef": 0.05}  # a gradient even when every candidate ties
    full = tiny(tmp_path, "full", **settings)
    train(full)
    train(tiny(tmp_path, "part", steps=2, **settings))
    resumed = tiny(tmp_path, "part", steps=4, **settings)
    train(resumed, resume=True)
    rows = read_metrics(full.output_dir)
    assert rows[0]["kl_reference"] == pytest.approx(0.0, abs=1e-6) and rows[-1]["kl_reference"] > 0
    a, b = load_latest_checkpoint(full.output_dir)[1], load_latest_checkpoint(resumed.output_dir)[1]
    assert set(a["reference"]) == {"shared"}
    assert all(torch.equal(a["reference"]["shared"][k], b["reference"]["shared"][k]) for k in a["reference"]["shared"])
    assert all(torch.equal(a["models"]["shared"][k], b["models"]["shared"][k]) for k in a["models"]["shared"])
    assert [r["kl_reference"] for r in rows] == [r["kl_reference"] for r in read_metrics(resumed.output_dir)]


def test_fresh_run_into_a_used_dir_is_refused(tmp_path):
    train(tiny(tmp_path, "run", steps=1))
    with pytest.raises(InvalidArgumentError, match="--resume"):
        train(tiny(tmp_path, "run", steps=1))


def test_resume_falls_back_over_a_corrupt_checkpoint(tmp_path):
    train(tiny(tmp_path, "run", steps=3))
    longer = tiny(tmp_path, "run", steps=4)  # a finished run resumed with more steps trains on
    newest = list_checkpoints(longer.output_dir)[-1]
    (newest / "state.pt").write_bytes(b"truncated")
    train(longer, resume=True)  # from step 2: step 3's checkpoint is corrupt
    assert [r["step"] for r in read_metrics(longer.output_dir)] == [1, 2, 3, 4]


def test_resuming_a_finished_run_says_so_and_evaluates_nothing(tmp_path, monkeypatch, caplog):
    config = tiny(tmp_path, "run", steps=2)
    summary = train(config)
    assert summary["output_dir"] == config.output_dir

    def fail(*args, **kwargs):
        raise AssertionError("a finished run was built or evaluated again")

    monkeypatch.setattr(Trainer, "__init__", fail)
    with caplog.at_level(logging.INFO, logger="teamgym.train.trainer"):
        assert train(config, resume=True) == summary
    assert "holds a finished run of 2 steps: nothing to resume" in caplog.text


def test_refused_runs_create_no_folder(tmp_path, monkeypatch):
    with pytest.raises(InvalidArgumentError, match="max_turns"):
        train(tiny(tmp_path, "bad_env", env_kwargs={"max_turns": 0}))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(InvalidArgumentError, match=r"device='cuda'.*use --device cpu"):
        Trainer(tiny(tmp_path, "no_gpu", device="cuda"))
    assert list(tmp_path.iterdir()) == []


def test_every_phase_says_when_it_starts_and_how_it_went(tmp_path, caplog, capsys):
    config = TrainConfig.from_dict(dict(env_id="plan_path-v0", algo="at_grpo", steps=1, sft_steps=2,
                                        sft_tasks=4, eval_tasks=2, tasks_per_step=2, k=2, n_layer=1, n_embd=16,
                                        n_head=1, output_dir=str(tmp_path / "run"), plot=False, torch_threads=1))
    with caplog.at_level(logging.INFO, logger="teamgym.train.trainer"):
        train(config)
    for line in ("held-out evaluation before training: 2 tasks", "held-out success before training:",
                 "warm start: the scripted expert plays", "warm start: 2 SFT steps on",
                 "held-out evaluation after 2 SFT steps", "RL: at_grpo steps 1 to 1, tree rollouts of 2 tasks each",
                 "RL: 1 steps done, training success", "held-out success after 1 at_grpo steps:"):
        assert line in caplog.text, line
    bars = capsys.readouterr().err
    for bar in ("eval before training", "SFT warm start", "RL steps", "eval after 1 at_grpo steps"):
        assert bar in bars, bar


def test_sft_without_demonstrations_is_a_clear_error(tmp_path):
    with pytest.raises(InvalidArgumentError, match="sft_steps"):
        train(tiny(tmp_path, "run", sft_steps=2))


def test_kill_9_then_resume_loses_and_repeats_no_step(tmp_path):
    out = tmp_path / "killed"
    args = [sys.executable, "-m", "teamgym.train", "--output-dir", str(out), "--steps", "30", "--checkpoint-every",
            "2", "--tasks-per-step", "2", "--k", "2", "--sft-steps", "0", "--eval-tasks", "1", "--no-progress",
            "--no-plot", "--set", "n_layer=1", "--set", "n_embd=16", "--set", "n_head=1",
            "--set", "max_new_tokens=8", "--set", "torch_threads=1", "--set", 'env_kwargs={"max_turns": 1}']
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            steps = {p.name for p in list_checkpoints(out)}
            if "step_00000002" in steps:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed: raise --steps"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    before = [r["step"] for r in read_metrics(out)]
    assert before and before[-1] < 29
    resumed = subprocess.run(args + ["--resume"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert [r["step"] for r in read_metrics(out)] == list(range(1, 31))
    assert load_latest_checkpoint(out)[0] == 30


def test_vllm_generator_gets_the_weights_after_every_update(tmp_path, monkeypatch):
    from teamgym.rollout import HFPolicy
    from teamgym.rollout.vllm import VLLMSampler
    from tests.rollout.fakes import FakeLLM, FakeVLLMSamplingParams

    checkpoint = tmp_path / "tiny-ckpt"
    source = HFPolicy.tiny(seed=0, n_layer=1, n_embd=16, n_head=1)
    source.model.save_pretrained(checkpoint)
    source.tokenizer.save_pretrained(checkpoint)
    engines = []

    def fake_from_model(model, **kwargs):
        engines.append(FakeLLM(tokenizer=source.tokenizer))
        return VLLMSampler(engines[-1], sampling_params_cls=FakeVLLMSamplingParams)

    monkeypatch.setattr(VLLMSampler, "from_model", staticmethod(fake_from_model))
    config = tiny(tmp_path, "vllm", model=str(checkpoint), generator="vllm", steps=2)
    train(config)
    (engine,) = engines
    assert len(engine.calls) > 0 and engine.cache_resets == 2
    names = dict(engine.model.loaded)
    trained = load_latest_checkpoint(config.output_dir)[1]["models"]["shared"]
    assert torch.equal(names["transformer.wte.weight"], trained["transformer.wte.weight"])


def test_vllm_generator_needs_a_checkpoint(tmp_path):
    with pytest.raises(InvalidArgumentError, match="backend='vllm'"):
        tiny(tmp_path, "x", generator="vllm")


def test_chat_prompt_format_renders_rollout_prompts_with_the_checkpoints_template(tmp_path):
    from teamgym.rollout import HFPolicy
    from tests.rollout.test_engine import CHAT_TEMPLATE

    checkpoint = tmp_path / "chat-ckpt"
    source = HFPolicy.tiny(seed=0, n_layer=1, n_embd=16, n_head=1)
    source.tokenizer.chat_template = CHAT_TEMPLATE
    source.model.save_pretrained(checkpoint)
    source.tokenizer.save_pretrained(checkpoint)
    config = tiny(tmp_path, "chat", model=str(checkpoint), prompt_format="chat", steps=1, save_batches=True,
                  max_new_tokens=4)
    train(config)
    rows = [json.loads(line) for line in (tmp_path / "chat" / "batches" / "step_000001.jsonl").read_text().splitlines()]
    tokenizer = HFPolicy.from_pretrained(str(checkpoint)).tokenizer
    prompts = {tokenizer.decode(r["prompt_ids"]) for r in rows}
    assert prompts and all(p.startswith("<|system|>You are the ") and p.endswith("<|assistant|>") for p in prompts)
    with pytest.raises(InvalidArgumentError, match="chat template"):
        train(tiny(tmp_path, "no-template", prompt_format="chat", steps=1))


def test_one_model_and_optimizer_per_role_with_its_own_lr(tmp_path):
    from teamgym.train import Trainer

    config = tiny(tmp_path, "roles", shared_model=False, role_lr={"speaker": 1e-3}, steps=1)
    trainer = Trainer(config)
    assert trainer.policies["speaker"] is not trainer.policies["listener"]
    lrs = {name: optimizer.param_groups[0]["lr"] for name, optimizer in trainer.optimizers.items()}
    assert lrs == {"speaker": 1e-3, "listener": config.ppo.lr}
    trainer.train()
    state = load_latest_checkpoint(config.output_dir)[1]
    assert set(state["models"]) == {"speaker", "listener"}


def test_bandit_alpha_mixer_logs_alphas_and_resumes_exactly(tmp_path):
    full = tiny(tmp_path, "full", alpha_mixer="bandit")
    train(full)
    rows = read_metrics(full.output_dir)
    grid = {0.0, 0.5, 1.0, 2.0}
    assert all(row[f"alpha/{agent}"] in grid for row in rows for agent in ("speaker", "listener"))
    mixer_state = load_latest_checkpoint(full.output_dir)[1]["mixer"]
    assert len(mixer_state["history"]) == 3  # credited once per rollout that follows an update
    assert [r["alpha_payoff"] for r in rows[1:]] and "alpha_payoff" not in rows[0]
    part = tiny(tmp_path, "part", alpha_mixer="bandit", steps=2)
    train(part)
    train(tiny(tmp_path, "part", alpha_mixer="bandit", steps=4), resume=True)
    resumed = read_metrics(part.output_dir)
    assert [r["alpha/speaker"] for r in resumed] == [r["alpha/speaker"] for r in rows]
    assert load_latest_checkpoint(part.output_dir)[1]["mixer"] == mixer_state


class TugRelay(RelayEnv):
    """relay-v0 with terms every candidate moves: the speaker's local term pulls against its team term, the
    listener's goes with it (both from the completion's length, which the tiny model varies)."""

    def _apply_action(self, agent: str, action: str) -> Outcome:
        part = 0.25 * (len(action) % 3)
        return Outcome({agent: reward_terms(team=1.0 - part if agent == "speaker" else part, length=part)})


def test_correlation_alpha_mixer_logs_alphas_and_resumes_exactly(tmp_path):
    teamgym.register("tug_relay-v0", TugRelay)
    full = tiny(tmp_path, "full", env_id="tug_relay-v0", alpha="correlation", steps=3)
    train(full)
    rows = read_metrics(full.output_dir)
    assert [r["alpha_groups/speaker"] > 0 for r in rows] == [True] * 3
    for row in rows:  # the logged alpha is the map of the logged correlation
        for agent in ("speaker", "listener"):
            assert row[f"alpha/{agent}"] == pytest.approx(1.0 - row[f"alpha_corr/{agent}"])
    assert rows[-1]["alpha/speaker"] > 1.0 > rows[-1]["alpha/listener"]
    mixer_state = load_latest_checkpoint(full.output_dir)[1]["mixer"]
    assert len(mixer_state["history"]) == 2 and mixer_state["rho"]["speaker"] == rows[-1]["alpha_corr/speaker"]
    part = tiny(tmp_path, "part", env_id="tug_relay-v0", alpha="correlation", steps=1)
    train(part)
    train(tiny(tmp_path, "part", env_id="tug_relay-v0", alpha="correlation", steps=3), resume=True)
    keys = [k for k in rows[0] if k.startswith(("alpha", "reward", "advantage", "loss"))]
    assert [{k: r[k] for k in keys} for r in read_metrics(part.output_dir)] == [{k: r[k] for k in keys} for r in rows]
    assert load_latest_checkpoint(part.output_dir)[1]["mixer"] == mixer_state
    with pytest.raises(InvalidArgumentError, match="alpha='corelation': expected .*'correlation'"):
        tiny(tmp_path, "typo", alpha="corelation")


def test_static_alpha_mixer_reweights_the_team_term(tmp_path):
    from teamgym.train import Trainer

    config = tiny(tmp_path, "static", alpha_mixer="static", alpha=0.0, steps=1)
    trainer = Trainer(config)
    seen = []
    rollout = trainer.engine.rollout

    def recording(*args, **kwargs):
        seen.append(kwargs.get("alphas"))
        return rollout(*args, **kwargs)

    trainer.engine.rollout = recording
    trainer.train()
    trainer.close()
    assert {"speaker": 0.0, "listener": 0.0} in seen  # the tree advances on the mixer's alpha, not the env's
    row = read_metrics(config.output_dir)[0]
    assert row["alpha/speaker"] == 0.0 and row["alpha/listener"] == 0.0
    with pytest.raises(InvalidArgumentError, match="alpha_mixer"):
        tiny(tmp_path, "bad", alpha_mixer="learned")
    with pytest.raises(InvalidArgumentError, match="alpha="):
        tiny(tmp_path, "bad", alpha_mixer="static", alpha=float("nan"))


# ---------------------------------------------------------------------- completion budget


def _completions(output_dir: str) -> list[int]:
    return [r["completions"] for r in read_metrics(output_dir)]


def test_completion_budget_stops_rl_after_the_step_that_reaches_it(tmp_path):
    free = tiny(tmp_path, "free", steps=3, checkpoint_every=10)
    summary = train(free)
    per_step = _completions(free.output_dir)
    tokens = [r["completion_tokens"] for r in read_metrics(free.output_dir)]
    assert len(per_step) == 3 and all(n > 0 for n in per_step) and all(t >= n for t, n in zip(tokens, per_step))
    assert (summary["completions_used"], summary["completion_tokens_used"]) == (sum(per_step), sum(tokens))
    assert summary["completion_budget"] == 0 and summary["stopped_by_budget"] is False

    exact = tiny(tmp_path, "exact", steps=10, checkpoint_every=10, completion_budget=per_step[0] + per_step[1])
    summary = train(exact)
    assert [r["step"] for r in read_metrics(exact.output_dir)] == [1, 2]  # reached after step 2: no step 3
    assert summary["steps"] == 2 and summary["stopped_by_budget"] is True
    assert summary["completions_used"] == per_step[0] + per_step[1]
    assert summary["completion_tokens_used"] == tokens[0] + tokens[1]
    assert summary["heldout_success_after"] is not None  # the final evaluation ran as usual
    assert load_latest_checkpoint(exact.output_dir)[0] == 2  # the last step gets a checkpoint

    over = tiny(tmp_path, "over", steps=10, checkpoint_every=10, completion_budget=per_step[0] + per_step[1] + 1)
    assert train(over)["steps"] == 3  # one completion short after step 2: step 3 runs
    assert train(tiny(tmp_path, "cap", steps=2, completion_budget=10**9))["stopped_by_budget"] is False


@pytest.mark.parametrize("saved_count", [True, False])
def test_completion_budget_survives_resume(tmp_path, monkeypatch, saved_count):
    """Stopped at step 2 and resumed, a run with a 3-step budget stops at step 3 with the uninterrupted run's
    weights; a checkpoint without the count (written before it was saved) recounts it from metrics.jsonl."""
    per_step = _completions(train(tiny(tmp_path, "free", steps=3))["output_dir"])
    budget = sum(per_step)
    full = tiny(tmp_path, "full", steps=8, completion_budget=budget)
    assert train(full)["steps"] == 3
    if not saved_count:
        state_dict = Trainer.state_dict
        monkeypatch.setattr(Trainer, "state_dict", lambda self: {
            k: v for k, v in state_dict(self).items() if k != "rl_usage"})
    train(tiny(tmp_path, "part", steps=2, completion_budget=budget))
    resumed = tiny(tmp_path, "part", steps=8, completion_budget=budget)
    summary = train(resumed, resume=True)
    assert [r["step"] for r in read_metrics(resumed.output_dir)] == [1, 2, 3]
    assert summary["completions_used"] == budget and summary["stopped_by_budget"] is True
    a, b = final_weights(full.output_dir), final_weights(resumed.output_dir)
    assert all(torch.equal(a[k], b[k]) for k in a)
    monkeypatch.setattr(Trainer, "__init__", lambda *a, **k: pytest.fail("a spent run was trained again"))
    assert train(resumed, resume=True) == summary


def test_more_torch_threads_than_cores_is_named_with_the_fix(tmp_path, monkeypatch, caplog):
    """Two threads on a one-core host would contend: the run says so and what to pass."""
    import teamgym.train.trainer as trainer_module

    threads = torch.get_num_threads()
    monkeypatch.setattr(trainer_module, "available_cores", lambda: 1)
    try:
        with caplog.at_level(logging.WARNING, logger="teamgym.train.trainer"):
            Trainer(tiny(tmp_path, "threads", torch_threads=2))
        assert "torch_threads=2 on 1 available core(s)" in caplog.text and "--torch-threads 1" in caplog.text
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="teamgym.train.trainer"):
            Trainer(tiny(tmp_path, "one", torch_threads=1))
        assert "torch_threads" not in caplog.text
    finally:
        torch.set_num_threads(threads)
