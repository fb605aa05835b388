"""The OpenRLHF agent against OpenRLHF's real executor: ``MultiTurnAgentExecutor.execute`` drives it with an engine
that generates with a tiny model (vLLM's call and output shapes, no GPU). openrlhf requires CUDA builds
(flash-attn, deepspeed) that do not install on CPU; its agent module imports without them: run with
``bash scripts/test_openrlhf.sh``, which installs the package with ``--no-deps``."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

agent_module = pytest.importorskip("openrlhf.utils.agent",
                                   reason="openrlhf lives in its own venv: bash scripts/test_openrlhf.sh")

import teamgym  # noqa: E402
from teamgym.integrations import openrlhf as tg_openrlhf  # noqa: E402
from teamgym.rollout import HFPolicy, SamplingParams, task_seed  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class VllmSampling:
    """The fields of vLLM's ``SamplingParams`` that OpenRLHF's executor reads and writes."""

    max_tokens: int | None = 24
    temperature: float = 1.0
    logprobs: int | None = 1


@dataclass
class _Logprob:
    logprob: float


@dataclass
class _Output:
    token_ids: list[int]
    text: str
    logprobs: list[dict[int, _Logprob]]
    finish_reason: str


@dataclass
class _RequestOutput:
    outputs: list[_Output]


@dataclass
class TinyEngine:
    """Stands in for OpenRLHF's vLLM engine (no GPU here): the same ``generate`` call and output, a tiny GPT-2."""

    policy: HFPolicy = field(default_factory=lambda: HFPolicy.tiny(seed=0))
    calls: list[list[int]] = field(default_factory=list)

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        self.calls.append(list(prompt_token_ids))
        text = self.policy.tokenizer.decode(prompt_token_ids)
        sampling = SamplingParams(temperature=sampling_params.temperature,
                                  max_tokens=min(sampling_params.max_tokens, 24))
        (completion,), = self.policy.generate([text], 1, sampling)
        logprobs = [{t: _Logprob(lp)} for t, lp in zip(completion.token_ids, completion.logprobs)]
        return _RequestOutput([_Output(completion.token_ids, completion.text, logprobs, completion.finish_reason)])


def _execute(executor, engine, row, max_length=4096):
    return asyncio.run(executor.execute(row["prompt"], row["label"], VllmSampling(), max_length,
                                        engine.policy.tokenizer, engine))


def _actions(engine, out):
    """The model-generated spans of the episode's tokens, decoded (as the env saw them)."""
    tokens = out["observation_tokens"]
    return [engine.policy.tokenizer.decode(tokens[start:end], skip_special_tokens=True)
            for start, end in out["action_ranges"]]


@pytest.fixture
def tally_registered(monkeypatch):
    """tally-v0 (three agents adding digits; no sandbox, so the env is deterministic) for one test."""
    from teamgym import registry

    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("tally-v0", "tests.support.tally_env:TallyEnv")


def _one(observation):
    return "1"


def test_openrlhfs_executor_plays_a_role_and_its_rewards_are_the_envs(tally_registered):
    partners = {"bob": _one, "carol": _one}
    instance_cls, executor_cls = tg_openrlhf.agent_classes(partners=partners, env_kwargs={"max_turns": 4})
    assert issubclass(instance_cls, agent_module.AgentInstanceBase)
    assert issubclass(executor_cls, agent_module.AgentExecutorBase)
    engine = TinyEngine()
    (row,) = tg_openrlhf.dataset_rows("tally-v0", [5], ["alice"])
    out = _execute(executor_cls(), engine, row)
    actions = _actions(engine, out)
    assert len(engine.calls) == len(actions) == out["extra_logs"]["teamgym_turns"] >= 1
    # The context starts with the role's own observation, not the dataset's placeholder prompt.
    view = teamgym.wrappers.SingleAgentView(teamgym.make("tally-v0", max_turns=4), "alice", partners)
    observation, _ = view.reset(seed=task_seed(5), options={"task_id": 5})
    first = out["observation_tokens"][:out["action_ranges"][0][0]]
    assert engine.policy.tokenizer.decode(first) == observation["prompt"]
    # Replaying the model's actions in the env gives OpenRLHF's reward, step by step and summed.
    rewards = []
    for text in actions:
        observation, reward, terminated, truncated, info = view.step(text)
        rewards.append(reward)
    assert out["reward"] == pytest.approx(sum(rewards)) == out["extra_logs"]["teamgym_return"]
    assert out["scores"] == pytest.approx(sum(rewards))
    assert out["extra_logs"]["teamgym_success"] == float(info.get("teamgym_episode", {}).get("success", False))
    # The episode ended in the env, or OpenRLHF's token budget (max_length) ran out first.
    assert terminated or truncated or len(out["observation_tokens"]) >= 4096
    # Rollout logprobs: one per token (0 on the observations), the engine's on the actions.
    assert len(out["rollout_log_probs"]) == len(out["observation_tokens"])
    start, end = out["action_ranges"][0]
    assert all(lp == 0.0 for lp in out["rollout_log_probs"][:start])
    assert any(lp != 0.0 for lp in out["rollout_log_probs"][start:end])


def test_max_turns_cuts_the_episode():
    _, executor_cls = tg_openrlhf.agent_classes(partners={"tool": "scripted"},
                                                env_kwargs={"size": 6, "max_turns": 8}, max_turns=1)
    engine = TinyEngine()
    (row,) = tg_openrlhf.dataset_rows("plan_path-v0", [1], ["planner"])
    out = _execute(executor_cls(), engine, row)
    assert len(engine.calls) == len(out["action_ranges"]) == 1


def test_labels_without_a_task_are_refused():
    _, executor_cls = tg_openrlhf.agent_classes(partners={"tool": "scripted"})
    with pytest.raises(teamgym.errors.InvalidArgumentError, match="dataset_rows"):
        _execute(executor_cls(), TinyEngine(), {"prompt": "hi", "label": "42"})
    assert tg_openrlhf.label_of({"env_id": "e", "task_id": 1, "role": "r"})["task_id"] == 1
    assert json.loads(tg_openrlhf.dataset_rows("e", [3], ["r"])[0]["label"]) == {"env_id": "e", "task_id": 3,
                                                                                 "role": "r"}


def test_example_agent_file_loads_the_way_openrlhf_loads_it(tmp_path, capsys):
    # OpenRLHF's _load_agent_executor (openrlhf/trainer/ray/vllm_engine.py, which imports vLLM) does exactly this.
    path = ROOT / "examples" / "openrlhf_agent.py"
    spec = importlib.util.spec_from_file_location("agent_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert issubclass(module.AgentExecutor, agent_module.AgentExecutorBase)
    executor = module.AgentExecutor()
    command = module.main(["--tasks", "3", "--out", str(tmp_path)])
    assert f"--train.agent_func_path {path}" in command and "--data.label_key label" in command
    rows = [json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and tg_openrlhf.label_of(rows[0]["label"])["role"] == "coder"
    out = _execute(executor, TinyEngine(), rows[0])  # coder_tester with the scripted tester
    assert out["reward"] is not None and out["extra_logs"]["teamgym_turns"] >= 1
