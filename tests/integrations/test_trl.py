"""TRL's real GRPOTrainer trains a tiny GPT-2 on teamgym envs through EnvRollout; TRL groups are agent-turn nodes."""

from __future__ import annotations

import os
import statistics

import pytest

pytest.importorskip("trl", reason="the TRL integration needs `pip install 'teamgym[trl]'`")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from trl import GRPOConfig, GRPOTrainer  # noqa: E402

import teamgym  # noqa: E402
from teamgym.errors import InvalidArgumentError  # noqa: E402
from teamgym.integrations.trl import (  # noqa: E402
    EnvRollout,
    _block_tasks,
    reward_funcs,
    task_dataset,
    task_of,
    task_prompt,
)
from teamgym.rollout import task_seed  # noqa: E402
from teamgym.rollout.tiny import char_tokenizer, tiny_gpt2  # noqa: E402
from teamgym.train.presets import plan_path_prompt  # noqa: E402
from tests.support.tally_env import TallyEnv  # noqa: E402

G = 4


def _trainer(tmp_path, rollout, *, steps=2, groups=2, lr=1e-4, terms=("team", "local")):
    tokenizer = char_tokenizer()
    model_dir = tmp_path / "tiny"
    tiny_gpt2(len(tokenizer), seed=0).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    config = GRPOConfig(
        output_dir=str(tmp_path / "out"), max_steps=steps, learning_rate=lr, per_device_train_batch_size=groups * G,
        num_generations=G, max_completion_length=24, beta=0.0, logging_steps=1, report_to="none", use_cpu=True,
        bf16=False, gradient_checkpointing=False, save_strategy="no", seed=0,
        reward_weights=[1.0] + [0.0] * len(terms),
    )
    calls = []

    def recording(prompts, trainer):
        out = rollout(prompts, trainer)
        calls.append((list(prompts), out, [dict(r) for r in rollout.last_rows]))
        return out

    trainer = GRPOTrainer(model=str(model_dir), processing_class=tokenizer, args=config,
                          reward_funcs=reward_funcs(terms=terms), train_dataset=task_dataset(list(range(64))),
                          rollout_func=recording)
    return trainer, calls


def test_grpo_trainer_trains_on_plan_path_and_logs_the_envs_rewards(tmp_path):
    rollout = EnvRollout("plan_path-v0", env_kwargs={"size": 4, "max_turns": 3}, prompt=plan_path_prompt)
    trainer, calls = _trainer(tmp_path, rollout)
    trainer.train()
    rollout.close()
    logs = [row for row in trainer.state.log_history if "rewards/teamgym_reward/mean" in row]
    assert len(logs) == 2 and len(calls) == 2
    for log, (prompts, out, rows) in zip(logs, calls):
        assert log["rewards/teamgym_reward/mean"] == pytest.approx(statistics.fmean(out["env_reward"]), abs=1e-6)
        assert log["rewards/teamgym_team/mean"] == pytest.approx(
            statistics.fmean(t["team"] for t in out["reward_terms"]), abs=1e-6)
        assert len(out["prompt_ids"]) == len(prompts) == 2 * G
        for start in range(0, len(rows), G):  # each TRL group is one (task, agent, turn) node of G candidates
            block = rows[start:start + G]
            assert len({(r["task_id"], r["episode_id"], r["agent"], r["turn"], r["step"]) for r in block}) == 1
            assert sorted(r["branch"] for r in block) == list(range(G))
        for logprobs, ids in zip(out["logprobs"], out["completion_ids"]):
            assert len(logprobs) == len(ids) > 0
    # The rewards are the env's: a first-step row replayed on a fresh env earns the same reward.
    replayed = 0
    for _, _, rows in calls:
        for row in rows:
            if row["step"] == 0:
                env = teamgym.make("plan_path-v0", size=4, max_turns=3)
                env.reset(seed=task_seed(row["task_id"]), options={"task_id": row["task_id"]})
                agent = env.agent_selection
                env.step(row["text"])
                assert agent == row["agent"] and env.rewards[agent] == pytest.approx(row["rewards"])
                replayed += 1
    assert replayed > 0


def test_one_role_with_partners_gets_a_gradient_and_only_its_turns(tmp_path):
    rollout = EnvRollout(TallyEnv, roles=["alice"], partners={"bob": lambda obs: "1", "carol": "scripted"})
    trainer, calls = _trainer(tmp_path, rollout, steps=2, lr=1e-2, terms=())
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    trainer.train()
    assert all(agent == "alice" for _, out, _ in calls for agent in out["agent"])
    rewards = [r for _, out, _ in calls for r in out["env_reward"]]
    assert statistics.pstdev(rewards) > 0  # random text: with and without a digit, so groups differ
    changed = any(not before[k].equal(v) for k, v in trainer.model.state_dict().items())
    assert changed

    # Queued nodes older than max_lag optimizer steps are dropped, never returned.
    rollout.max_lag = 0
    trainer.state.global_step = 100
    prompts = [task_prompt(3)] * G
    out = rollout(prompts, trainer)
    assert all(step == 100 for step, _, _ in rollout._queue)
    assert out["task_id"] == [3] * G and out["agent"] == ["alice"] * G
    rollout.close()


def test_task_prompts_round_trip_and_reject_foreign_prompts():
    for task in (0, 17, "HumanEval/3", ["a", 1]):
        assert task_of(task_prompt(task)) == task
    with pytest.raises(InvalidArgumentError, match="task_dataset"):
        task_of("What is 2 + 2?")
    with pytest.raises(InvalidArgumentError, match="multiple of num_generations"):
        _block_tasks([task_prompt(1)] * 3, 2)
    with pytest.raises(InvalidArgumentError, match="copies of one prompt"):
        _block_tasks([task_prompt(1), task_prompt(2)], 2)
    assert _block_tasks([task_prompt(1)] * 2 + [task_prompt(5)] * 2, 2) == [1, 5]
    assert task_dataset([4, 5])["prompt"] == [task_prompt(4), task_prompt(5)]


def test_reward_funcs_mix_terms_with_the_alpha_asked_for():
    terms = [{"team": 1.0, "local": -0.5, "format": -0.5}, {"team": 0.0, "local": 0.0}]
    env_mixed, team, fmt = reward_funcs(terms=("team", "format"))
    assert env_mixed(["a", "b"], env_reward=[0.25, 1.0], reward_terms=terms) == [0.25, 1.0]
    assert team(["a", "b"], reward_terms=terms) == [1.0, 0.0]
    assert fmt(["a", "b"], reward_terms=terms) == [-0.5, 0.0]
    assert fmt.__name__ == "teamgym_format"
    (mixed,) = reward_funcs(alpha=0.5)
    assert mixed(["a", "b"], reward_terms=terms) == [0.0, 0.0]


def test_roles_without_partners_are_refused():
    with pytest.raises(InvalidArgumentError, match="no partner for \\['bob', 'carol'\\]"):
        EnvRollout(TallyEnv, roles=["alice"])
    with pytest.raises(InvalidArgumentError, match="scripted"):
        EnvRollout(TallyEnv, roles=["alice"], partners={"bob": 3, "carol": "scripted"})


def test_example_trains_two_steps(tmp_path):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "trl_grpo.py"
    spec = importlib.util.spec_from_file_location("trl_grpo_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    logs = example.main(["--steps", "2", "--groups", "1", "--output-dir", str(tmp_path)])
    assert [row["step"] for row in logs] == [1, 2]
