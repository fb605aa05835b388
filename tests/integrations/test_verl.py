"""The verl adapter against verl's real classes: the agent loop driven by a server manager that generates with a tiny
model, the estimators called through verl's own ``compute_advantage``, and the documented GPU config composed
against verl's config schema. verl pins its own transformers: run with ``bash scripts/test_verl.sh``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("verl.experimental.agent_loop.agent_loop",
                    reason="verl lives in its own venv: bash scripts/test_verl.sh")

from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, DictConfigWrap, _agent_loop_registry  # noqa: E402
from verl.trainer.ppo.core_algos import get_adv_estimator_fn  # noqa: E402
from verl.trainer.ppo.ray_trainer import compute_advantage  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

import teamgym  # noqa: E402
from teamgym.algos import get_advantage  # noqa: E402
from teamgym.integrations import verl as tg_verl  # noqa: E402
from teamgym.rollout import HFPolicy, SamplingParams, task_seed  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


class TinyServer:
    """Stands in for verl's vLLM/SGLang server manager (no GPU here): the same ``generate`` call, a tiny GPT-2."""

    def __init__(self):
        self.policy = HFPolicy.tiny(seed=0)
        self.calls = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        self.calls.append(list(prompt_ids))
        text = self.policy.tokenizer.decode(prompt_ids)
        (completion,), = self.policy.generate([text], 1, SamplingParams(temperature=sampling_params["temperature"],
                                                                        max_tokens=24))
        return TokenOutput(token_ids=completion.token_ids, log_probs=completion.logprobs)


def _loop(server, **kwargs):
    cls = tg_verl.register_agent_loop()
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"prompt_length": 512, "response_length": 256}}})
    return cls(DictConfigWrap(config), server, server.policy.tokenizer, None, None,
               DictConfigWrap(OmegaConf.create({})), **kwargs)


def test_agent_loop_plays_a_role_through_the_server_manager():
    server = TinyServer()
    loop = _loop(server, env_kwargs={"size": 4, "max_turns": 3}, partners={"tool": "scripted"})
    assert _agent_loop_registry[tg_verl.AGENT_NAME] == {"_target_": "teamgym.integrations.verl.TeamgymAgentLoop"}
    (row,) = tg_verl.dataset_rows("plan_path-v0", [5], ["planner"])
    out = asyncio.run(loop.run({"temperature": 1.0}, **row))
    assert isinstance(out, AgentLoopOutput)
    assert len(out.response_ids) == len(out.response_mask) == len(out.response_logprobs)
    turns = out.extra_fields["teamgym_turn_rewards"]
    assert len(server.calls) == len(turns) >= 1
    # Each generation saw the whole running context: prompt + earlier responses and observations.
    for call in server.calls[1:]:
        assert call[:len(out.prompt_ids)] == out.prompt_ids and len(call) > len(out.prompt_ids)
    assert out.reward_score == pytest.approx(sum(turns))
    assert sum(out.response_mask) == sum(len(c) for c in _completions(server, out))
    # The env's rewards: replaying the planner's completions with the scripted tool gives the same ones.
    env = teamgym.make("plan_path-v0", size=4, max_turns=3)
    view = teamgym.wrappers.SingleAgentView(env, "planner", {"tool": env.unwrapped.scripted_policy("tool")})
    view.reset(seed=task_seed(5), options={"task_id": 5})
    for text, reward in zip(_completions(server, out, decode=True), turns):
        assert view.step(text)[1] == pytest.approx(reward)


def _completions(server, out, decode=False):
    """The model-generated spans of the response (mask 1), in order."""
    spans, current = [], []
    for token, mask in zip(out.response_ids, out.response_mask):
        if mask:
            current.append(token)
        elif current:
            spans.append(current)
            current = []
    if current:
        spans.append(current)
    return [server.policy.tokenizer.decode(s, skip_special_tokens=True) for s in spans] if decode else spans


def test_rows_without_a_task_are_refused():
    loop = _loop(TinyServer())
    with pytest.raises(teamgym.errors.InvalidArgumentError, match="dataset_rows"):
        asyncio.run(loop.run({"temperature": 1.0}, raw_prompt=[]))


@pytest.mark.parametrize("verl_name", sorted(tg_verl.ESTIMATORS))
def test_estimators_through_verls_compute_advantage_match_teamgyms(verl_name):
    assert verl_name in tg_verl.register_estimators()
    assert get_adv_estimator_fn(verl_name) is not None
    gen = torch.Generator().manual_seed(0)
    n, length = 12, 7
    mask = (torch.arange(length)[None, :] < torch.randint(1, length + 1, (n,), generator=gen)[:, None]).float()
    scores = torch.randn(n, generator=gen)
    token_rewards = torch.zeros(n, length)
    token_rewards[torch.arange(n), mask.sum(-1).long() - 1] = scores  # verl puts the score on the last token
    uid = np.array([f"u{i // 4}" for i in range(n)], dtype=object)
    data = DataProto.from_dict(tensors={"token_level_rewards": token_rewards, "response_mask": mask},
                               non_tensors={"uid": uid})
    out = compute_advantage(data, adv_estimator=verl_name, config=None)
    groups = torch.tensor([i // 4 for i in range(n)])
    name = tg_verl.ESTIMATORS[verl_name]
    zeros = torch.zeros(n, dtype=torch.long)
    if name == "at_grpo":
        expected = get_advantage(name)(scores, groups, zeros, zeros)
    elif name in ("dr_mas", "mhgpo"):  # a uid is one (task, role): the agent column is constant within it
        expected = get_advantage(name)(scores, groups, zeros)
        torch.testing.assert_close(expected, get_advantage("grpo")(scores, groups))
    else:
        expected = get_advantage(name)(scores, groups)
    torch.testing.assert_close(out.batch["advantages"], expected[:, None] * mask)


def test_verl_registers_the_estimators_itself_through_the_plugin_entry_point():
    """verl imports the ``verl.plugins`` entry points in every process that imports it (Ray's TaskRunner actor too):
    a fresh interpreter that only imports verl's registry has teamgym's estimators, without register_estimators()."""
    code = ("import verl.trainer.ppo.core_algos as c; "
            "print(sorted(k for k in c.ADV_ESTIMATOR_REGISTRY if k.startswith('teamgym_')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True,
                         env={**os.environ, "VERL_USE_EXTERNAL_PLUGINS": "auto"})
    assert out.stdout.strip().splitlines()[-1] == str(sorted(tg_verl.ESTIMATORS)), out.stderr[-2000:]


def test_documented_gpu_config_composes_against_verls_schema():
    import verl
    from hydra import compose, initialize_config_dir
    from verl.trainer.config import AlgoConfig
    from verl.utils.config import omega_conf_to_dataclass

    # Composed as verl's main_ppo composes it (examples/verl/run.py prints that command): our file's defaults pull
    # in verl's ppo_trainer, and a key that verl's schema lacks fails the merge.
    with initialize_config_dir(config_dir=str(ROOT / "examples" / "verl"), version_base=None):
        config = compose(config_name="coder_tester_qwen3_1.7b")
    assert config.trainer.n_gpus_per_node == 8 and config.actor_rollout_ref.model.path == "Qwen/Qwen3-1.7B"
    assert config.algorithm.adv_estimator == "teamgym_at_grpo"
    assert config.actor_rollout_ref.rollout.agent.agent_loop_config_path
    # Hydra merges a config file's keys without checking them: check every key against verl's generated schema.
    schema = OmegaConf.load(Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml")
    OmegaConf.set_struct(schema, True)
    ours = OmegaConf.load(ROOT / "examples" / "verl" / "coder_tester_qwen3_1.7b.yaml")
    OmegaConf.merge(schema, {k: v for k, v in ours.items() if k not in ("defaults", "hydra")})
    with pytest.raises(Exception, match="not_a_verl_key"):
        OmegaConf.merge(schema, {"algorithm": {"not_a_verl_key": 1}})
    algo = omega_conf_to_dataclass(config.algorithm)
    assert isinstance(algo, AlgoConfig)
    loops = OmegaConf.load(ROOT / "examples" / "verl" / "agent_loops.yaml")
    assert loops[0]["name"] == tg_verl.AGENT_NAME and loops[0]["_target_"].endswith("TeamgymAgentLoop")

