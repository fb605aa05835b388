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
from teamgym.algos import discounted_returns, get_advantage  # noqa: E402
from teamgym.integrations import verl as tg_verl  # noqa: E402
from teamgym.rollout import HFPolicy, SamplingParams, task_seed  # noqa: E402
from teamgym.rollout.slot import anchor_of  # noqa: E402
from teamgym.wrappers import SingleAgentView  # noqa: E402

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


class ScriptedServer:
    """A server manager that answers with the given texts in order (as token ids of the tiny model's tokenizer)."""

    def __init__(self):
        self.policy = HFPolicy.tiny(seed=0)
        self.texts = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        ids = self.policy.tokenizer(self.texts.pop(0), add_special_tokens=False)["input_ids"]
        return TokenOutput(token_ids=ids, log_probs=[0.0] * len(ids))


def _loop(server, response_length=256, **kwargs):
    cls = tg_verl.register_agent_loop()
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"prompt_length": 512,
                                                                 "response_length": response_length}}})
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
    # GiGPO's inputs: each turn's completion tokens (the mask-1 spans) and the anchor of the state it acted on.
    spans = out.extra_fields["teamgym_turn_spans"]
    assert [out.response_ids[a:b] for a, b in spans] == _completions(server, out)
    assert all(out.response_mask[a:b] == [1] * (b - a) for a, b in spans)
    # The env's rewards and anchors: replaying the planner's completions with the scripted tool gives the same ones.
    env = teamgym.make("plan_path-v0", size=4, max_turns=3)
    view = SingleAgentView(env, "planner", {"tool": env.unwrapped.scripted_policy("tool")})
    view.reset(seed=task_seed(5), options={"task_id": 5})
    anchors = out.extra_fields["teamgym_anchors"]
    assert len(anchors) == len(turns)
    for text, reward, anchor in zip(_completions(server, out, decode=True), turns, anchors):
        assert anchor_of(view.env, "planner") == anchor
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
            "from verl.trainer.ppo.v1 import get_trainer_cls; "
            "print(get_trainer_cls('teamgym_sync').__qualname__); "
            "print(sorted(k for k in c.ADV_ESTIMATOR_REGISTRY if k.startswith('teamgym_')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True,
                         env={**os.environ, "VERL_USE_EXTERNAL_PLUGINS": "auto"})
    *_, trainer, estimators = out.stdout.strip().splitlines()
    assert estimators == str(sorted([*tg_verl.ESTIMATORS, *tg_verl.STEP_ESTIMATORS])), out.stderr[-2000:]
    assert trainer == "TeamgymPPOTrainerSync"


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



def _episodes(seed=0, uids=3, sessions=4, distinct_anchors=False):
    """verl rows of one role's episode each, as the agent loop returns them: response tokens with each turn's
    completion (mask 1) and observation (mask 0), and the extra_fields that carry turn rewards, anchors and spans."""
    rng = np.random.default_rng(seed)
    outputs, keys = [], []
    for u in range(uids):
        for session in range(sessions):
            mask, rewards, anchors, spans = [], [], [], []
            for turn in range(int(rng.integers(1, 4))):
                start = len(mask)
                mask += [1] * int(rng.integers(1, 4))
                spans.append([start, len(mask)])
                mask += [0] * int(rng.integers(0, 3))
                rewards.append(float(rng.normal()))
                anchors.append(f"{u}-{session}-{turn}" if distinct_anchors else f"t{turn}-{rng.integers(2)}")
            outputs.append(AgentLoopOutput(
                prompt_ids=[1, 2], response_ids=list(range(3, 3 + len(mask))), response_mask=mask,
                reward_score=sum(rewards), num_turns=2 * len(rewards), metrics={},
                extra_fields={"teamgym_role": ["coder", "tester"][u % 2], "teamgym_task_id": u,
                              "teamgym_turn_rewards": rewards, "teamgym_anchors": anchors,
                              "teamgym_turn_spans": spans}))
            keys.append(f"uid{u}_{session}_0")
    return keys, outputs


def _expected(keys, outputs, name, gamma, length=None):
    """teamgym's own estimator on one row per agent-turn, each value put on its turn's completion tokens."""
    rows, turns, rewards, anchors, spans = [], [], [], [], []
    for i, out in enumerate(outputs):
        extra = out.extra_fields
        for t, (r, a, span) in enumerate(zip(extra["teamgym_turn_rewards"], extra["teamgym_anchors"],
                                             extra["teamgym_turn_spans"])):
            rows.append(i), turns.append(t), rewards.append(r), anchors.append(a), spans.append(span)
    rows_t, reward = torch.tensor(rows), torch.tensor(rewards, dtype=torch.float64)
    episode = torch.zeros(len(outputs), dtype=torch.float64).index_add_(0, rows_t, reward)[rows_t]
    groups = torch.tensor([int(keys[i].split("_")[0][3:]) for i in rows])
    anchor_ids = torch.tensor(np.unique(anchors, return_inverse=True)[1])
    args = [episode, discounted_returns(reward, rows_t, torch.tensor(turns), gamma=gamma), groups, rows_t]
    if name == "team_gigpo":
        args.append(torch.zeros_like(rows_t))  # a uid is one role of one task
    per_turn = get_advantage(name)(*args, anchor_ids)
    length = length or max(len(o.response_ids) for o in outputs)
    expected = torch.zeros(len(outputs), length, dtype=torch.float64)
    for i, (a, b), value in zip(rows, spans, per_turn):
        expected[i, a:b] = value
    return expected


def _verl_batch(keys, outputs):
    """The DataProto verl's advantage step builds from these outputs: uid, response_mask, the score on the last
    token."""
    length = max(len(o.response_ids) for o in outputs)
    mask = torch.zeros(len(outputs), length)
    scores = torch.zeros(len(outputs), length)
    for i, out in enumerate(outputs):
        mask[i, :len(out.response_mask)] = torch.tensor(out.response_mask, dtype=torch.float32)
        scores[i, len(out.response_ids) - 1] = out.reward_score
    uid = np.array([k.rsplit("_", 2)[0] for k in keys], dtype=object)
    return DataProto.from_dict(tensors={"token_level_rewards": scores, "response_mask": mask}, non_tensors={"uid": uid})


@pytest.mark.parametrize("verl_name", sorted(tg_verl.STEP_ESTIMATORS))
def test_step_estimators_through_verls_compute_advantage_match_teamgyms(verl_name):
    from verl.trainer.config import AlgoConfig

    assert verl_name in tg_verl.register_estimators()
    keys, outputs = _episodes()
    config = AlgoConfig(gamma=0.95, adv_estimator=verl_name)
    data = _verl_batch(keys, outputs)
    with tg_verl.step_inputs(keys, [o.extra_fields for o in outputs]):
        out = compute_advantage(data, adv_estimator=verl_name, config=config)
    name = tg_verl.STEP_ESTIMATORS[verl_name]
    expected = _expected(keys, outputs, name, gamma=0.95)
    torch.testing.assert_close(out.batch["advantages"], expected.float())
    # a uid is one role of one task, so Team-GiGPO's per-agent groups are GiGPO's
    torch.testing.assert_close(expected, _expected(keys, outputs, "gigpo", gamma=0.95))
    # the step level is live here (shared anchors), and with all anchors distinct it vanishes: episode GRPO over uids
    keys, outputs = _episodes(distinct_anchors=True)
    data = _verl_batch(keys, outputs)
    with tg_verl.step_inputs(keys, [o.extra_fields for o in outputs]):
        out = compute_advantage(data, adv_estimator=verl_name, config=config)
    grpo = get_advantage("grpo")(torch.tensor([o.reward_score for o in outputs]), torch.arange(len(keys)) // 4)
    spans_mask = torch.zeros_like(out.batch["advantages"])
    for i, o in enumerate(outputs):
        for a, b in o.extra_fields["teamgym_turn_spans"]:
            spans_mask[i, a:b] = 1
    torch.testing.assert_close(out.batch["advantages"], grpo[:, None] * spans_mask)


def test_step_estimators_refuse_rows_they_cannot_line_up():
    keys, outputs = _episodes(seed=1)
    data = _verl_batch(keys, outputs)
    with pytest.raises(teamgym.errors.InvalidArgumentError, match="trainer_mode=teamgym_sync"):
        compute_advantage(data, adv_estimator="teamgym_gigpo", config=None)
    extras = [o.extra_fields for o in outputs]
    with tg_verl.step_inputs(keys[::-1], extras[::-1]), pytest.raises(teamgym.errors.InvalidArgumentError,
                                                                       match="misaligned"):
        compute_advantage(data, adv_estimator="teamgym_gigpo", config=None)
    swapped = [extras[1], extras[0], *extras[2:]]  # same uid, another session's turns
    with tg_verl.step_inputs(keys, swapped), pytest.raises(teamgym.errors.InvalidArgumentError, match="misaligned"):
        compute_advantage(data, adv_estimator="teamgym_gigpo", config=None)


def test_teamgym_trainer_feeds_gigpo_from_the_transfer_queue():
    """verl's own pipeline on CPU: the agent loop's outputs go into a real TransferQueue through verl's
    AgentLoopWorkerTQ post-processing, and the registered trainer's advantage step (verl's ``_compute_advantage``
    under teamgym's override) writes back GiGPO's per-turn advantages."""
    pytest.importorskip("transfer_queue")
    import ray
    import transfer_queue as tq
    from transfer_queue import KVBatchMeta
    from verl.trainer.ppo.v1 import PPOTrainerSync, get_trainer_cls
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ

    cls = get_trainer_cls(tg_verl.TRAINER_NAME)
    assert cls is tg_verl.register_trainer() and issubclass(cls, PPOTrainerSync)
    server = ScriptedServer()
    loop = _loop(server, 8192, env_kwargs={"size": 4, "max_turns": 3}, partners={"tool": "scripted"})
    rows = tg_verl.dataset_rows("plan_path-v0", [5, 6], ["planner"])
    # three sessions per task: a wrong answer then the right one, the right one, three wrong ones
    for task in (5, 6):
        env = teamgym.make("plan_path-v0", size=4, max_turns=3)
        view = SingleAgentView(env, "planner", {"tool": env.unwrapped.scripted_policy("tool")})
        view.reset(seed=task_seed(task), options={"task_id": task})
        right = env.unwrapped.scripted_policy("planner")(env.observe("planner"))
        server.texts += ["no idea", right, right, "no idea", "no idea", "no idea"]
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)  # TransferQueue's actors each take a CPU
    try:
        tq.init(OmegaConf.create({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}}))
        worker_cls = AgentLoopWorkerTQ.__ray_metadata__.modified_class  # the class behind verl's Ray actor
        worker = worker_cls.__new__(worker_cls)  # its post-processing only: no servers, no processor
        worker.reward_loop_worker_handles, worker.processor, worker.distillation_enabled = None, None, False
        keys, outputs = [], []
        for u, row in enumerate(rows):
            for session in range(3):
                out = asyncio.run(loop.run({"temperature": 1.0}, **row))
                outputs.append(out.model_copy(deep=True))
                asyncio.run(worker._agent_loop_postprocess(out, False, uid=f"uid{u}", session_id=session,
                                                           global_steps=1))
                keys.append(f"uid{u}_{session}_0")
        config = OmegaConf.create({"algorithm": {"adv_estimator": "teamgym_gigpo", "gamma": 0.95, "lam": 1.0,
                                                 "norm_adv_by_std_in_grpo": True, "use_kl_in_reward": False},
                                   "actor_rollout_ref": {"rollout": {"n": 3}}})
        trainer = cls.__new__(cls)  # the advantage step only (its __init__ builds workers)
        trainer.config = config
        batch = KVBatchMeta(keys=keys[::-1], tags=[{}] * len(keys), partition_id="train")  # any order
        trainer._compute_advantage(batch, metrics={})
        got = tq.kv_batch_get(keys=keys, partition_id="train", select_fields=["advantages"])["advantages"]
        expected = _expected(keys, outputs, "gigpo", gamma=0.95, length=max(len(o.response_ids) for o in outputs))
        for i, out in enumerate(outputs):
            torch.testing.assert_close(got[i], expected[i, :len(out.response_ids)].float())
        assert not server.texts and len({o.extra_fields["teamgym_anchors"][0] for o in outputs}) == 2  # per task
        assert len({o.reward_score for o in outputs}) > 1 and expected.abs().sum() > 0
        # the step level is live: the turns of one episode get different advantages
        assert any(len({float(expected[i, a]) for a, _ in o.extra_fields["teamgym_turn_spans"]}) > 1
                   for i, o in enumerate(outputs))
    finally:
        tq.close()
        ray.shutdown()


def test_printed_gigpo_command_composes_and_builds_teamgyms_sync_trainer(tmp_path):
    """examples/verl/run.py's GiGPO command, composed as main_ppo composes it, picks teamgym's trainer by name from
    verl's registry, and that trainer is verl's synchronous one (verl tests ``trainer_mode == "sync"``)."""
    import importlib.util

    from hydra import compose, initialize_config_dir
    from verl.trainer.ppo.v1 import PPOTrainerSync, get_trainer_cls
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

    spec = importlib.util.spec_from_file_location("verl_run_example", ROOT / "examples" / "verl" / "run.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    command = example.main(["--tasks", "2", "--estimator", "teamgym_gigpo", "--out", str(tmp_path)])
    overrides = command.split("--config-name coder_tester_qwen3_1.7b ")[1].split()
    assert "trainer.v1.trainer_mode=teamgym_sync" in overrides and "algorithm.adv_estimator=teamgym_gigpo" in overrides
    with initialize_config_dir(config_dir=str(ROOT / "examples" / "verl"), version_base=None):
        config = compose(config_name="coder_tester_qwen3_1.7b", overrides=overrides)
    assert config.algorithm.gamma == 0.95
    trainer = get_trainer_cls(config.trainer.v1.trainer_mode)(config)  # verl's TaskRunnerV1 does the same
    assert type(trainer).__name__ == "TeamgymPPOTrainerSync" and isinstance(trainer, PPOTrainerSync)
    assert trainer.trainer_mode == "sync" and type(trainer.replay_buffer) is ReplayBuffer
