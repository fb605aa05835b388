"""verl: a teamgym env as a verl agent loop, and teamgym's group-relative estimators in verl's registry.

**Agent loop.** :func:`register_agent_loop` registers :class:`TeamgymAgentLoop` (an ``AgentLoopBase`` subclass)
under ``"teamgym_agent"``. verl's ``AgentLoopWorker`` calls ``run(sampling_params, **row)`` once per dataset row;
the row names the task and the role (``extra_info.teamgym = {"task_id": ..., "role": ...}``, written by
:func:`dataset_rows`). The loop plays one episode of that role through
:class:`~teamgym.wrappers.SingleAgentView` (partners from the agent loop's config), generating every turn of the
role with ``await server_manager.generate(...)`` on the running token context: the role's first prompt, then each
completion (``response_mask`` 1, with its logprobs) followed by the role's next observation (``response_mask`` 0),
so that the tokens verl trains on are the tokens the server conditioned on. ``reward_score`` is the role's episode
return (the sum of what ``SingleAgentView`` hands it, the env's ``alpha * team + local``); ``extra_fields`` carry
per-turn rewards and reward terms, the task, the role and the episode's success. Env steps (the sandbox) run in a
thread so the worker's event loop keeps serving other rows.

**Estimators.** :func:`register_estimators` adds ``teamgym_grpo``, ``teamgym_dr_grpo``, ``teamgym_rloo``,
``teamgym_at_grpo``, ``teamgym_dr_mas``, ``teamgym_mhgpo``, ``teamgym_gigpo`` and ``teamgym_team_gigpo`` to verl's
``ADV_ESTIMATOR_REGISTRY`` (``algorithm.adv_estimator=teamgym_at_grpo``). Installing teamgym declares a
``verl.plugins`` entry point (:mod:`teamgym.integrations.verl_plugin`), so verl registers them itself in every process
that imports it, the Ray ``TaskRunner`` actor that computes advantages included. verl calls an estimator with
``token_level_rewards``, ``response_mask``, ``index`` (the row's ``uid``: its ``rollout.n`` samples share it) and
``config``; the score of a sample is its summed token-level reward, the advantage is broadcast over its response
tokens as verl's GRPO does. In verl a sample is one role's whole episode and a ``uid`` is one (task, role) row, so
every group holds one agent of one task: AT-GRPO's (task, agent, turn) nodes become (task, role) groups, and Dr.MAS's
and MHGPO's (prompt group, agent) groups are the uids themselves (they equal GRPO over uids there, which is what those
papers' per-agent statistics become when each agent's samples come in their own rows).

**GiGPO.** ``teamgym_gigpo`` and ``teamgym_team_gigpo`` need more than verl hands an estimator: each turn's reward,
the anchor state it acted on and its tokens. The agent loop puts them in ``extra_fields`` (``teamgym_turn_rewards``,
``teamgym_anchors``, ``teamgym_turn_spans``), which verl 0.9.1 stores in its TransferQueue but never passes to an
estimator (its v1 ``_compute_advantage`` reads ``uid``, ``response_mask`` and the scores only; the ``non_tensor_batch``
hand-over in ``compute_advantage`` is reserved for the name ``gdpo``). :func:`register_trainer` registers
:class:`TeamgymPPOTrainerSync` in verl's trainer registry as ``trainer.v1.trainer_mode=teamgym_sync`` (also through
the plugin): verl's synchronous trainer whose advantage step, for these two estimators, reads the batch's
``extra_fields`` from the TransferQueue by the batch's keys and runs verl's own ``_compute_advantage`` inside
:func:`step_inputs`. The estimator checks each row's key against the ``uid`` verl passes and verl's reward against the
sum of the row's turn rewards, computes one advantage per turn (GiGPO's steps are the role's turns, discounted by
``algorithm.gamma``) and writes it on that turn's completion tokens.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import torch

from teamgym.algos import get_advantage
from teamgym.core.env import EPISODE_KEY
from teamgym.errors import DependencyNotInstalled, InvalidArgumentError
from teamgym.integrations.partners import PartnerSpec, check_partners, resolve_partners

__all__ = ["AGENT_NAME", "ESTIMATORS", "STEP_ESTIMATORS", "TRAINER_NAME", "dataset_rows", "register_agent_loop",
           "register_estimators", "register_trainer", "step_inputs", "verl_estimator", "verl_step_estimator"]

AGENT_NAME = "teamgym_agent"

#: verl name -> teamgym estimator; each reads one score per sample and the groups verl's ``uid`` makes.
ESTIMATORS = {"teamgym_grpo": "grpo", "teamgym_dr_grpo": "dr_grpo", "teamgym_rloo": "rloo",
              "teamgym_at_grpo": "at_grpo", "teamgym_dr_mas": "dr_mas", "teamgym_mhgpo": "mhgpo"}
#: verl name -> teamgym estimator with a step level: it reads each turn's reward, anchor state and tokens from the
#: agent loop's ``extra_fields``, which :data:`TRAINER_NAME`'s trainer hands it (:func:`step_inputs`).
STEP_ESTIMATORS = {"teamgym_gigpo": "gigpo", "teamgym_team_gigpo": "team_gigpo"}
#: ``trainer.v1.trainer_mode`` of verl's synchronous trainer that feeds :data:`STEP_ESTIMATORS`.
TRAINER_NAME = "teamgym_sync"

#: The estimators whose extra id columns (agent, turn) are constant within a verl ``uid`` (one role of one task).
_PER_UID_COLUMNS = {"at_grpo": 2, "dr_mas": 1, "mhgpo": 1}


def _require_verl() -> Any:
    try:
        import verl.experimental.agent_loop.agent_loop as agent_loop
    except ImportError as err:
        raise DependencyNotInstalled(err.name or "verl", "verl", "the verl agent loop and estimators") from None
    return agent_loop


def dataset_rows(env_id: str, task_ids: Sequence[Any], roles: Sequence[str]) -> list[dict[str, Any]]:
    """verl dataset rows (one per task and role) for ``agent_name=teamgym_agent``; save them as Parquet.

    ``prompt`` holds a placeholder message (verl's ``RLHFDataset`` requires one; the loop renders the env's own
    prompt) and ``extra_info.teamgym`` the env, task and role the loop plays.
    """
    if not task_ids or not roles:
        raise InvalidArgumentError(f"{len(task_ids)} task ids and roles {list(roles)}: give at least one of each")
    return [{"data_source": env_id, "agent_name": AGENT_NAME,
             "prompt": [{"role": "user", "content": f"teamgym {env_id} task {task!r} as {role}"}],
             "extra_info": {"teamgym": {"env_id": env_id, "task_id": task, "role": role}}}
            for task in task_ids for role in roles]


def verl_estimator(name: str) -> Any:
    """The verl-signature function of teamgym estimator ``name`` (a key of :data:`ESTIMATORS`'s values)."""
    from teamgym.algos import group_ids

    estimator = get_advantage(name)

    def compute(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: np.ndarray,
                config: Any = None, **_: Any) -> tuple[torch.Tensor, torch.Tensor]:
        scores = token_level_rewards.sum(dim=-1)  # (N,)
        uids = group_ids([str(uid) for uid in index]).to(scores.device)
        with torch.no_grad():
            if name in _PER_UID_COLUMNS:  # one (task, role) per uid: agent (and turn) constant within a group
                zeros = torch.zeros_like(uids)
                advantages = estimator(scores.float(), uids, *[zeros] * _PER_UID_COLUMNS[name])
            else:
                advantages = estimator(scores.float(), uids)
        advantages = advantages.to(token_level_rewards.dtype).unsqueeze(-1) * response_mask
        return advantages, advantages

    compute.__name__ = f"teamgym_{name}"
    return compute


def register_estimators() -> list[str]:
    """Add :data:`ESTIMATORS` to verl's advantage-estimator registry (idempotent); returns their verl names."""
    try:
        from verl.trainer.ppo import core_algos
    except ImportError as err:
        raise DependencyNotInstalled(err.name or "verl", "verl", "teamgym estimators in verl") from None
    for verl_name, name in ESTIMATORS.items():
        if verl_name not in core_algos.ADV_ESTIMATOR_REGISTRY:
            core_algos.register_adv_est(verl_name)(verl_estimator(name))
    for verl_name, name in STEP_ESTIMATORS.items():
        if verl_name not in core_algos.ADV_ESTIMATOR_REGISTRY:
            core_algos.register_adv_est(verl_name)(verl_step_estimator(name))
    return [*ESTIMATORS, *STEP_ESTIMATORS]


_STEP_INPUTS: ContextVar[tuple[list[str], list[Mapping[str, Any]]] | None] = ContextVar(
    "teamgym_verl_step_inputs", default=None)
_EXTRA_KEYS = ("teamgym_role", "teamgym_turn_rewards", "teamgym_anchors", "teamgym_turn_spans")


@contextmanager
def step_inputs(keys: Sequence[str], extra_fields: Sequence[Mapping[str, Any]]) -> Iterator[None]:
    """Within the block, :data:`STEP_ESTIMATORS` read row ``i``'s turns from ``extra_fields[i]`` (the agent loop's
    ``extra_fields``) and check that its TransferQueue key ``keys[i]`` (``{uid}_{session}_{output}``) names the
    ``uid`` verl hands them as ``index[i]``. :data:`TRAINER_NAME`'s trainer opens it around verl's own advantage step.
    """
    token = _STEP_INPUTS.set((list(keys), list(extra_fields)))
    try:
        yield
    finally:
        _STEP_INPUTS.reset(token)


def _option(config: Any, key: str, default: Any) -> Any:
    if config is None:
        return default
    value = config.get(key, default) if hasattr(config, "get") else getattr(config, key, default)
    return default if value is None else value


def verl_step_estimator(name: str) -> Any:
    """The verl-signature function of ``gigpo`` or ``team_gigpo``: one advantage per turn, on that turn's tokens.

    A verl row is one role's episode; its turns are GiGPO's steps. Per turn: the reward, the anchor (the env's
    ``state_key`` when the role acted, hashed) and its completion's tokens, from :func:`step_inputs`. Step returns
    are discounted by ``algorithm.gamma`` (GiGPO uses 0.95; verl's default is 1.0), the episode return is the sum of
    the row's turn rewards, groups are verl's ``uid``, trajectories its rows, agents the rows' roles;
    ``algorithm.norm_adv_by_std_in_grpo`` picks ``scale_by_std``; omega is 1.
    """
    from teamgym.algos import discounted_returns, group_ids

    estimator = get_advantage(name)

    def compute(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: np.ndarray,
                config: Any = None, **_: Any) -> tuple[torch.Tensor, torch.Tensor]:
        inputs = _STEP_INPUTS.get()
        if inputs is None:
            raise InvalidArgumentError(
                f"teamgym_{name} needs each turn's reward and anchor state from the agent loop's extra_fields, which "
                f"verl's own trainers do not pass to an estimator: set trainer.v1.trainer_mode={TRAINER_NAME} "
                "(or call it inside teamgym.integrations.verl.step_inputs)"
            )
        keys, extras = inputs
        n = token_level_rewards.shape[0]
        if len(keys) != n or len(extras) != n or len(index) != n:
            raise InvalidArgumentError(f"{n} rows but {len(keys)} keys and {len(extras)} extra_fields in step_inputs")
        rows, turns, rewards, anchors, roles, spans = [], [], [], [], [], []
        for i, (uid, key, extra) in enumerate(zip(index, keys, extras)):
            if str(key).rsplit("_", 2)[0] != str(uid):
                raise InvalidArgumentError(f"row {i}: key {key!r} is not a row of uid {uid!r}: step_inputs misaligned")
            missing = [k for k in _EXTRA_KEYS if k not in extra]
            if missing:
                raise InvalidArgumentError(f"row {i} ({key}) has no {missing} in its extra_fields: play it with "
                                           f"agent_name={AGENT_NAME}")
            row_rewards, row_anchors, row_spans = (list(extra[k]) for k in _EXTRA_KEYS[1:])
            if not len(row_rewards) == len(row_anchors) == len(row_spans) > 0:
                raise InvalidArgumentError(f"row {i} ({key}): {len(row_rewards)} turn rewards, {len(row_anchors)} "
                                           f"anchors and {len(row_spans)} spans")
            rows += [i] * len(row_rewards)
            turns += range(len(row_rewards))
            rewards += [float(r) for r in row_rewards]
            anchors += [str(a) for a in row_anchors]
            roles += [str(extra["teamgym_role"])] * len(row_rewards)
            spans += [(int(a), int(b)) for a, b in row_spans]
        device = token_level_rewards.device
        row_ids = torch.as_tensor(rows, dtype=torch.long)
        reward = torch.as_tensor(rewards, dtype=torch.float64)
        episode = torch.zeros(n, dtype=torch.float64).index_add_(0, row_ids, reward)
        if not _option(config, "use_kl_in_reward", False):  # verl's reward is the episode's sum: rows line up
            verl_scores = token_level_rewards.detach().sum(-1).double().cpu()
            if not torch.allclose(verl_scores, episode.to(verl_scores.dtype), rtol=1e-4, atol=1e-4):
                bad = int((~torch.isclose(verl_scores, episode, rtol=1e-4, atol=1e-4)).nonzero()[0])
                raise InvalidArgumentError(
                    f"row {bad}: verl's reward {verl_scores[bad].item()} is not the sum of its turn rewards "
                    f"{episode[bad].item()}: step_inputs misaligned, or a reward model replaced the env's reward "
                    "(GiGPO reads the env's turn rewards from the agent loop)"
                )

        uids = group_ids([str(index[i]) for i in rows])
        step_returns = discounted_returns(reward, row_ids, torch.as_tensor(turns, dtype=torch.long),
                                          gamma=float(_option(config, "gamma", 1.0)))
        columns = [episode.index_select(0, row_ids), step_returns, uids, row_ids]
        if name == "team_gigpo":
            columns.append(group_ids(roles))
        with torch.no_grad():
            per_turn = estimator(*columns, group_ids(anchors),
                                 scale_by_std=bool(_option(config, "norm_adv_by_std_in_grpo", True)))
        advantages = torch.zeros(token_level_rewards.shape, dtype=torch.float64)
        for row, (start, end), value in zip(rows, spans, per_turn.tolist()):
            advantages[row, start:end] = value
        advantages = advantages.to(device=device, dtype=token_level_rewards.dtype) * response_mask
        return advantages, advantages

    compute.__name__ = f"teamgym_{name}"
    return compute


def register_trainer() -> type:
    """Define :class:`TeamgymPPOTrainerSync` on verl's ``PPOTrainerSync`` and register it as :data:`TRAINER_NAME`.

    It is verl's synchronous trainer, but when ``algorithm.adv_estimator`` is one of :data:`STEP_ESTIMATORS` it
    fetches the batch's ``extra_fields`` from verl's TransferQueue (by the batch's keys, the order verl's advantage
    step reads its rows in) and runs verl's own ``_compute_advantage`` inside :func:`step_inputs`. verl tests
    ``trainer_mode == "sync"`` in many places, so the trainer sets the config's mode back to ``sync`` once verl has
    picked the class by name.
    """
    global TeamgymPPOTrainerSync
    if "TeamgymPPOTrainerSync" in globals():
        return TeamgymPPOTrainerSync
    try:
        from verl.trainer.ppo.v1 import PPOTrainerSync
        from verl.trainer.ppo.v1 import register_trainer as verl_register_trainer
        from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY
    except ImportError as err:
        raise DependencyNotInstalled(err.name or "verl", "verl", "teamgym's verl trainer (gigpo, team_gigpo)") from None

    class TeamgymPPOTrainerSync(PPOTrainerSync):
        def __init__(self, config: Any):
            from omegaconf import open_dict

            with open_dict(config):
                config.trainer.v1.trainer_mode = "sync"
            super().__init__(config)

        def _compute_advantage(self, batch: Any, metrics: dict) -> Any:
            if self.config.algorithm.adv_estimator not in STEP_ESTIMATORS:
                return super()._compute_advantage(batch, metrics)
            import transfer_queue as tq

            extras = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["extra_fields"])
            extras = extras["extra_fields"]  # a NonTensorStack of the rows' dicts
            with step_inputs(batch.keys, extras.tolist() if hasattr(extras, "tolist") else list(extras)):
                return super()._compute_advantage(batch, metrics)

    TeamgymPPOTrainerSync.__module__ = __name__
    TeamgymPPOTrainerSync.__qualname__ = "TeamgymPPOTrainerSync"
    existing = TRAINER_REGISTRY.get(TRAINER_NAME)
    if existing is not None and existing.__qualname__ == "TeamgymPPOTrainerSync":  # this module imported again
        TeamgymPPOTrainerSync = existing
    else:
        TeamgymPPOTrainerSync = verl_register_trainer(TRAINER_NAME)(TeamgymPPOTrainerSync)
    return TeamgymPPOTrainerSync


def register_agent_loop() -> type:
    """Define :class:`TeamgymAgentLoop` on verl's ``AgentLoopBase`` and register it as ``teamgym_agent``."""
    global TeamgymAgentLoop
    if "TeamgymAgentLoop" in globals():
        return TeamgymAgentLoop
    agent_loop = _require_verl()
    body = {k: v for k, v in _LoopBody.__dict__.items() if k not in ("__dict__", "__weakref__")}
    # verl's registry instantiates the class by "module.qualname": this module's TeamgymAgentLoop attribute.
    body.update(__module__=__name__, __qualname__="TeamgymAgentLoop")
    TeamgymAgentLoop = agent_loop.register(AGENT_NAME)(type("TeamgymAgentLoop", (agent_loop.AgentLoopBase,), body))
    return TeamgymAgentLoop


def __getattr__(name: str) -> Any:
    if name == "TeamgymAgentLoop":  # verl instantiates "teamgym.integrations.verl.TeamgymAgentLoop" by path
        return register_agent_loop()
    if name == "TeamgymPPOTrainerSync":
        return register_trainer()
    raise AttributeError(name)


class _LoopBody:
    """The methods of :class:`TeamgymAgentLoop` (its base class is verl's, so the class is built on first use).

    Keyword arguments of the agent loop's config entry: ``env_kwargs`` (options for ``teamgym.make``),
    ``partners`` (``{role: "scripted" | "scripted:NAME"}``, or callables when built in Python), ``max_turns``
    (most turns of the role per episode, default 16).
    """

    def __init__(self, *args: Any, env_kwargs: Mapping[str, Any] | None = None,
                 partners: Mapping[str, PartnerSpec] | None = None, max_turns: int = 16, **kwargs: Any):
        super(TeamgymAgentLoop, self).__init__(*args, **kwargs)
        self.env_kwargs = dict(env_kwargs or {})
        self.partner_specs = dict(partners or {})
        check_partners(self.partner_specs)
        self.max_turns = max_turns
        self.response_length = int(self.rollout_config.response_length)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
        import teamgym
        from teamgym.rollout.engine import task_seed
        from teamgym.rollout.slot import anchor_of
        from teamgym.wrappers import SingleAgentView

        agent_loop = _require_verl()
        spec = (kwargs.get("extra_info") or {}).get("teamgym") or {}
        missing = [key for key in ("env_id", "task_id", "role") if key not in spec]
        if missing:
            raise InvalidArgumentError(
                f"dataset row without extra_info.teamgym {missing}: build rows with "
                "teamgym.integrations.verl.dataset_rows(env_id, task_ids, roles)"
            )
        env = teamgym.make(spec["env_id"], **self.env_kwargs)
        partners = {role: p for role, p in self.partner_specs.items() if role != spec["role"]}
        view = SingleAgentView(env, spec["role"], resolve_partners(env, partners))
        observation, _ = view.reset(seed=task_seed(spec["task_id"]), options={"task_id": spec["task_id"]})
        prompt_ids = self._cap_text_prompt_length(self._encode(observation["prompt"]))
        response_ids: list[int] = []
        response_mask: list[int] = []
        logprobs: list[float] = []
        turn_rewards: list[float] = []
        turn_terms: list[dict[str, float]] = []
        anchors: list[str] = []  # GiGPO's anchor state of each turn (the env's state_key, hashed)
        spans: list[list[int]] = []  # each turn's completion: response tokens [start, end)
        info: dict[str, Any] = {}
        done = False
        while not done and len(turn_rewards) < self.max_turns and len(response_ids) < self.response_length:
            anchors.append(anchor_of(view.env, spec["role"]))
            out = await self.server_manager.generate(request_id=uuid.uuid4().hex, prompt_ids=prompt_ids + response_ids,
                                                     sampling_params=sampling_params)
            spans.append([len(response_ids), len(response_ids) + len(out.token_ids)])
            response_ids += out.token_ids
            response_mask += [1] * len(out.token_ids)
            logprobs += list(out.log_probs) if out.log_probs else [0.0] * len(out.token_ids)
            text = self.tokenizer.decode(out.token_ids, skip_special_tokens=True)
            observation, reward, terminated, truncated, info = await asyncio.get_running_loop().run_in_executor(
                None, view.step, text)
            turn_rewards.append(float(reward))
            turn_terms.append(dict(info.get("cumulative_reward_terms", {})))  # since its last turn, as the reward
            done = terminated or truncated
            if not done:
                feedback = self._encode("\n" + observation["prompt"])
                response_ids += feedback
                response_mask += [0] * len(feedback)
                logprobs += [0.0] * len(feedback)
        view.close()
        cut = self.response_length
        episode = info.get(EPISODE_KEY, {})
        return agent_loop.AgentLoopOutput(
            prompt_ids=prompt_ids, response_ids=response_ids[:cut], response_mask=response_mask[:cut],
            response_logprobs=logprobs[:cut], reward_score=float(sum(turn_rewards)),
            num_turns=2 * len(turn_rewards), metrics=agent_loop.AgentLoopMetrics(),
            extra_fields={"teamgym_task_id": spec["task_id"], "teamgym_role": spec["role"],
                          "teamgym_turn_rewards": turn_rewards, "teamgym_turn_terms": turn_terms,
                          "teamgym_anchors": anchors,
                          "teamgym_turn_spans": [[min(a, cut), min(b, cut)] for a, b in spans],
                          "teamgym_success": bool(episode.get("success", False))},
        )

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
