"""The learning sanity suite (teamgym.train.sanity): estimators trained from random init learn known answers, and
the suite catches a broken trainer.

Default run: one cheap case (AT-GRPO on sanity_bandit-v0). ``-m slow``: every registered estimator on every sanity
env, and two injected bugs (a flipped advantage sign, logprobs shifted by one token) that must make a run fail.
"""

from __future__ import annotations

import pytest
import torch

import teamgym
from teamgym.rollout.hf import HFPolicy
from teamgym.testing import check_env
from teamgym.train import sanity
from teamgym.train.estimators import ESTIMATORS


@pytest.mark.parametrize("env_id", sanity.SANITY_ENVS)
def test_sanity_envs_pass_check_env_and_reward_the_cue(env_id):
    check_env(env_id)
    env = teamgym.make(env_id)
    env.reset(seed=0, options={"task_id": 2})  # cue "c"
    while env.agents:
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
            continue
        env.step(env.unwrapped.scripted_policy(agent, "oracle")(env.observe(agent)))
    assert env.unwrapped.episode_summary()["success"] is True
    env.reset(seed=0, options={"task_id": 2})
    env.step("  d is my answer" if env_id != "sanity_relay-v0" else "c")
    while env.agents and not all(env.terminations.values()) and not all(env.truncations.values()):
        env.step("d")
    assert env.unwrapped.episode_summary()["success"] is False


def test_at_grpo_learns_the_bandit_from_random_init():
    result = sanity.run_sanity("sanity_bandit-v0", "at_grpo")
    assert result.passed, result


#: Cases that do not reach the thresholds in the stated steps (``python -m teamgym.train.sanity``; the table is in
#: docs/training.md): open findings, not settled behaviour, marked as expected failures so that a fix shows as an
#: unexpected pass. None at present: ``marft`` on the relay, the last one, passes with agent-by-agent training, an
#: entropy bonus of 0.05 and unwhitened advantages (its settings; seeds 0-7 pass, docs/training.md).
NOT_YET_LEARNING: dict[tuple[str, str], str] = {}


def test_a_case_can_state_its_own_steps_and_settings(tmp_path):
    config = sanity.sanity_config("sanity_relay-v0", "marft", output_dir=str(tmp_path))
    assert config.steps == 1800 and config.ppo.agent_iteration_interval == 100 and config.role_adapters
    assert config.ppo.entropy_coef == 0.05 and config.ppo.lr == 1e-3 and config.critic.whiten is False
    bandit = sanity.sanity_config("sanity_bandit-v0", "marft", output_dir=str(tmp_path))
    assert bandit.critic.whiten is False and bandit.ppo.entropy_coef == 0.01  # the estimator's setting, its recipe
    assert sanity.sanity_config("sanity_bandit-v0", "turn_ppo", output_dir=str(tmp_path)).critic.whiten is True
    adapters = sanity.sanity_config("sanity_bandit-v0", "grpo", output_dir=str(tmp_path), role_adapters=True)
    assert adapters.ppo.lr == 1e-3 and adapters.critic.whiten is True
    assert sanity.sanity_config("sanity_relay-v0", "grpo", output_dir=str(tmp_path)).steps == 600
    assert sanity.sanity_config("sanity_relay-v0", "marft", output_dir=str(tmp_path), steps=7).steps == 7


def _grid():
    for env_id in sanity.SANITY_ENVS:
        for algo in sorted(ESTIMATORS):
            reason = NOT_YET_LEARNING.get((env_id, algo))
            marks = [pytest.mark.xfail(reason=reason, strict=False)] if reason else []
            yield pytest.param(env_id, algo, marks=marks, id=f"{env_id}-{algo}")


@pytest.mark.slow
@pytest.mark.parametrize("env_id,algo", list(_grid()))
def test_every_estimator_learns_every_sanity_env(env_id, algo):
    result = sanity.run_sanity(env_id, algo)
    assert result.passed, result


@pytest.mark.slow
def test_a_flipped_advantage_sign_fails_the_suite(monkeypatch):
    import teamgym.train.trainer as trainer

    real = trainer.estimate
    monkeypatch.setattr(trainer, "estimate", lambda *args, **kwargs: -real(*args, **kwargs))
    result = sanity.run_sanity("sanity_bandit-v0", "at_grpo")
    assert not result.passed and result.greedy < 0.5, result


@pytest.mark.slow
def test_logprobs_shifted_by_one_token_fail_the_suite(monkeypatch):
    real = HFPolicy.score

    def shifted(self, prompt_ids, completion_ids, **kwargs):  # token t scored where token t - 1 was predicted
        prompts = [list(p)[:-1] for p in prompt_ids]
        completions = [[p[-1], *c[:-1]] for p, c in zip(prompt_ids, completion_ids, strict=True)]
        return real(self, prompts, completions, **kwargs)

    monkeypatch.setattr(HFPolicy, "score", shifted)
    result = sanity.run_sanity("sanity_bandit-v0", "at_grpo")
    assert not result.passed and result.greedy < 0.5, result
    assert torch.is_tensor(real(HFPolicy.tiny(seed=0), [[5, 6]], [[7]])[0])  # the patch wrapped the real method
