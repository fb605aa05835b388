"""TRL: play teamgym episodes inside ``GRPOTrainer`` through its ``rollout_func`` hook, one row per agent-turn.

``GRPOTrainer(rollout_func=EnvRollout("plan_path-v0"), reward_funcs=reward_funcs(), ...)`` trains TRL's model on a
teamgym env. TRL hands the rollout function ``B`` prompts in blocks of ``G = num_generations`` identical ones and
normalises rewards within each block, so a block must be one GRPO group. Here a block is one **agent-turn node**
(AT-GRPO's group, arXiv 2510.11062): ``G`` candidate completions of one role from one env state. The rollout plays
episodes with teamgym's tree-sampling engine (:class:`~teamgym.rollout.RolloutEngine`, ``k = G`` candidates per
node, each scored from the node's snapshot, greedy advance) and returns one node per block. Each row is one
completion with its own prompt, so the tokens TRL scores are exactly the ones sampled (no env tokens to mask).

Datasets hold task ids, not text: :func:`task_dataset` writes ``"teamgym task: <json id>"`` prompts and the
rollout plays that task. A rollout yields more nodes than blocks (every turn of every trained role); the rest wait
in a queue for the next call and are dropped once they are more than ``max_lag`` optimizer steps old (TRL's loss
then treats them as on-policy: ``max_lag=0`` keeps training strictly on-policy at the price of more generation).
A block takes the oldest queued node of its own task when there is one.

Rewards: every row carries the env's reward terms; :func:`reward_funcs` turns them into TRL reward functions (the
env's own mixed reward, ``alpha * team + local`` with another alpha, or single named terms for logging with weight
0). Rows also carry their keys (``task_id``, ``agent``, ``turn``, ``episode_id``, ``node``), which reward functions
receive as keyword arguments.

Roles: ``roles=None`` trains every role with the one model; otherwise the other roles need ``partners``
(callables or the env's scripted policies, :mod:`teamgym.integrations.partners`), whose turns are played but not
returned. Generation uses TRL's model in-process through :class:`~teamgym.rollout.HFPolicy` with the trainer's
``temperature``, ``top_p`` and ``max_completion_length`` (the logprobs are those TRL recomputes).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from teamgym.core.rewards import mix
from teamgym.errors import DependencyNotInstalled, EnvStateError, InvalidArgumentError, check_int
from teamgym.integrations.partners import PartnerSpec, check_partners, resolve_partners
from teamgym.rollout.engine import RolloutEngine, TreeSampling, default_prompt
from teamgym.rollout.sampling import Completion, SamplingParams
from teamgym.rollout.slot import LocalSlots

__all__ = ["EnvRollout", "TASK_PREFIX", "reward_funcs", "task_dataset", "task_of", "task_prompt"]

TASK_PREFIX = "teamgym task: "


def task_prompt(task_id: Any) -> str:
    """The dataset prompt that stands for ``task_id`` (any JSON value: an int seed, a problem id string...)."""
    return TASK_PREFIX + json.dumps(task_id)


def task_of(prompt: Any) -> Any:
    """The task id a :func:`task_prompt` prompt stands for."""
    if not isinstance(prompt, str) or not prompt.startswith(TASK_PREFIX):
        raise InvalidArgumentError(
            f"prompt {str(prompt)[:60]!r} is not a teamgym task prompt: build the dataset with "
            "teamgym.integrations.trl.task_dataset(task_ids)"
        )
    try:
        return json.loads(prompt[len(TASK_PREFIX):])
    except json.JSONDecodeError as err:
        raise InvalidArgumentError(f"prompt {prompt[:60]!r}: the task id is not JSON ({err})") from None


def task_dataset(task_ids: Sequence[Any]) -> Any:
    """A ``datasets.Dataset`` with one ``prompt`` per task id, for ``GRPOTrainer(train_dataset=...)``."""
    try:
        import datasets
    except ImportError:
        raise DependencyNotInstalled("datasets", "trl", "TRL datasets of teamgym tasks") from None
    if not task_ids:
        raise InvalidArgumentError("task_ids is empty: give at least one task id (e.g. range(64))")
    return datasets.Dataset.from_dict({"prompt": [task_prompt(t) for t in task_ids]})


def reward_funcs(alpha: float | None = None, terms: Sequence[str] = ()) -> list[Callable[..., list[float]]]:
    """TRL reward functions over the rows :class:`EnvRollout` returns.

    Args:
        alpha: ``None`` (default): the env's own reward of the acting agent (``rewards[agent]``, mixed with the
            env's alpha). A number: ``alpha * team + local`` from the row's reward terms.
        terms: names of single reward terms (``"team"``, ``"local"``, ``"format"``...) to add as functions of
            their own, logged by TRL under ``rewards/teamgym_<term>``; give them weight 0 in ``reward_weights`` to
            log them without training on them. A term a row did not earn counts 0.

    Returns:
        the mixed reward first (named ``teamgym_reward``), then one function per term.
    """
    if alpha is None:
        def teamgym_reward(completions: list[Any], env_reward: list[float], **_: Any) -> list[float]:
            return [float(r) for r in env_reward]
    else:
        weight = float(alpha)

        def teamgym_reward(completions: list[Any], reward_terms: list[dict[str, float]], **_: Any) -> list[float]:
            return [mix(t, weight) for t in reward_terms]
    return [teamgym_reward] + [_term_reward(name) for name in terms]


def _term_reward(name: str) -> Callable[..., list[float]]:
    def reward(completions: list[Any], reward_terms: list[dict[str, float]], **_: Any) -> list[float]:
        return [float(t.get(name, 0.0)) for t in reward_terms]

    reward.__name__ = f"teamgym_{name}"
    return reward


class EnvRollout:
    """A ``rollout_func`` for TRL's ``GRPOTrainer`` that plays a teamgym env (see the module docstring).

    Args:
        env: an env id (made with ``teamgym.make(env, **env_kwargs)``) or a function that makes an env.
        roles: the roles the trained model plays and whose agent-turns are returned; ``None``: every role.
        partners: ``{role: policy}`` for every role not in ``roles`` (a callable ``observation -> str``,
            ``"scripted"`` or ``"scripted:NAME"``).
        prompt: ``(env, agent) -> prompt text`` for the trained roles (default: the env's observation text; pass
            ``teamgym.rollout.ChatPrompt(tokenizer)`` for an instruct model's chat template).
        env_kwargs: options for ``teamgym.make`` when ``env`` is an id.
        stop: stop strings that end a completion (kept in the text).
        max_lag: the most optimizer steps a queued node may wait before it is dropped (0: strictly on-policy).
        max_prompt_tokens: prompts longer than this keep their last tokens.
        max_rollouts: the most rollouts one call may play to fill its blocks before it gives up.
        seed: seeds the sampling generator.

    Attributes:
        last_rows: the rows the latest call returned (plain dicts with the agent-turn batch's columns).
    """

    def __init__(self, env: str | Callable[[], Any], *, roles: Sequence[str] | None = None,
                 partners: Mapping[str, PartnerSpec] | None = None, prompt: Callable[[Any, str], str] = default_prompt,
                 env_kwargs: Mapping[str, Any] | None = None, stop: Sequence[str] = (), max_lag: int = 1,
                 max_prompt_tokens: int = 384, max_rollouts: int = 8, seed: int = 0):
        check_int("max_lag", max_lag, 0)
        check_int("max_rollouts", max_rollouts, 1)
        check_int("max_prompt_tokens", max_prompt_tokens, 1)
        self.partners = dict(partners or {})
        check_partners(self.partners)
        if isinstance(env, str):
            import teamgym

            env_id, kwargs = env, dict(env_kwargs or {})
            self.env_fn: Callable[[], Any] = lambda: teamgym.make(env_id, **kwargs)
        elif callable(env):
            if env_kwargs:
                raise InvalidArgumentError("env_kwargs is for an env id: bake the options into the env function")
            self.env_fn = env
        else:
            raise InvalidArgumentError(f"env={env!r}: expected an env id or a function that makes an env")
        probe = self.env_fn()
        agents = list(probe.possible_agents)
        probe.close()
        self.roles = list(agents if roles is None else roles)
        unknown = sorted(set(self.roles) - set(agents))
        missing = [a for a in agents if a not in self.roles and a not in self.partners]
        both = sorted(set(self.roles) & set(self.partners))
        if unknown or missing or both or not self.roles:
            raise InvalidArgumentError(
                f"roles={self.roles} with partners for {sorted(self.partners)} on agents {agents}: train at least "
                f"one role, give a partner to every other one and none to a trained role (unknown roles {unknown}, "
                f"no partner for {missing}, both trained and partnered {both})"
            )
        self.prompt = prompt
        self.stop = tuple(stop)
        self.max_lag = max_lag
        self.max_prompt_tokens = max_prompt_tokens
        self.max_rollouts = max_rollouts
        self.seed = seed
        self.last_rows: list[dict[str, Any]] = []
        self._queue: deque[tuple[int, Any, list[dict[str, Any]]]] = deque()  # (step sampled, task id, the rows)
        self._sampler = _TrainerSampler(max_prompt_tokens, seed)
        self._engine: RolloutEngine | None = None
        self._calls = 0

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        group_size = trainer.num_generations if trainer.model.training else trainer.num_generations_eval
        tasks = _block_tasks(prompts, group_size)
        self._sampler.bind(trainer)
        step = int(trainer.state.global_step)
        while self._queue and step - self._queue[0][0] > self.max_lag:
            self._queue.popleft()
        args = trainer.args
        sampling = SamplingParams(temperature=float(args.temperature), top_p=float(args.top_p),
                                  max_tokens=int(args.max_completion_length), stop=self.stop)
        rollouts = 0
        while len(self._queue) < len(tasks):
            if rollouts == self.max_rollouts:
                raise EnvStateError(
                    f"{rollouts} rollouts of tasks {sorted(set(map(str, tasks)))} gave {len(self._queue)} agent-turn "
                    f"nodes of roles {self.roles}, fewer than the {len(tasks)} blocks asked for: check that these "
                    "roles act in the env (and that its sandbox works: nodes with infra errors are dropped)"
                )
            self._play(list(dict.fromkeys(tasks)), group_size, sampling, step)
            rollouts += 1
        rows = [row for task in tasks for row in self._take(task)]
        self.last_rows = rows
        return {
            "prompt_ids": [r["prompt_ids"] for r in rows],
            "completion_ids": [r["completion_ids"] for r in rows],
            "logprobs": [r["logprobs"] for r in rows],
            "env_reward": [float(r["rewards"]) for r in rows],
            "reward_terms": [r["reward_terms"] for r in rows],
            "others_terms": [r["others_terms"] for r in rows],
            "task_id": [r["task_id"] for r in rows],
            "agent": [r["agent"] for r in rows],
            "turn": [r["turn"] for r in rows],
            "episode_id": [r["episode_id"] for r in rows],
            "node": [f"{r['episode_id']}/{r['step']}" for r in rows],
        }

    def close(self) -> None:
        """Close the envs."""
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def _play(self, tasks: list[Any], group_size: int, sampling: SamplingParams, step: int) -> None:
        if self._engine is None:
            samplers: dict[str, Any] = dict.fromkeys(self.roles, self._sampler)
            samplers.update(dict.fromkeys(self.partners, _Echo()))
            slots = LocalSlots(self.env_fn, _PartnerPrompts(self.prompt, self.partners))
            self._engine = RolloutEngine(slots, samplers, seed=self.seed)
        self._calls += 1
        result = self._engine.rollout(tasks, episode_prefix=f"r{self._calls}", tree=TreeSampling(k=group_size),
                                      sampling=sampling)
        rows = result.batch.rows()
        for start in range(0, len(rows), group_size):
            node = rows[start:start + group_size]
            assert len({(r["episode_id"], r["step"]) for r in node}) == 1, "the engine emits k rows per node"
            if node[0]["agent"] in self.roles and not any(r["infra_error"] for r in node):
                self._queue.append((step, node[0]["task_id"], node))

    def _take(self, task: Any) -> list[dict[str, Any]]:
        for i, (_, queued_task, rows) in enumerate(self._queue):
            if queued_task == task:
                del self._queue[i]
                return rows
        return self._queue.popleft()[2]


def _block_tasks(prompts: list[Any], group_size: int) -> list[Any]:
    """The task of each block of ``group_size`` identical prompts (TRL's sampler repeats each prompt G times)."""
    if not prompts or len(prompts) % group_size:
        raise InvalidArgumentError(
            f"{len(prompts)} prompts for groups of {group_size}: TRL hands the rollout whole groups; keep "
            "generation_batch_size a multiple of num_generations"
        )
    tasks = []
    for start in range(0, len(prompts), group_size):
        block = prompts[start:start + group_size]
        if any(p != block[0] for p in block):
            raise InvalidArgumentError(
                f"prompts {start}..{start + group_size - 1} are not {group_size} copies of one prompt: "
                "EnvRollout needs TRL's grouped sampler (one prompt repeated num_generations times)"
            )
        tasks.append(task_of(block[0]))
    return tasks


class _TrainerSampler:
    """Samples with the trainer's current model (the same object TRL updates in place) through ``HFPolicy``."""

    def __init__(self, max_prompt_tokens: int, seed: int):
        self.max_prompt_tokens = max_prompt_tokens
        self.seed = seed
        self.policy: Any = None

    def bind(self, trainer: Any) -> None:
        model = trainer.accelerator.unwrap_model(trainer.model)
        if self.policy is None or self.policy.model is not model:
            from teamgym.rollout.hf import HFPolicy

            self.policy = HFPolicy(model, trainer.processing_class, device=str(trainer.accelerator.device),
                                   seed=self.seed, max_prompt_tokens=self.max_prompt_tokens)

    def generate(self, prompts: Sequence[str], n: int, sampling: SamplingParams) -> list[list[Completion]]:
        return self.policy.generate(prompts, n, sampling)


class _Echo:
    """The partners' sampler: their "prompt" is already their action (see :class:`_PartnerPrompts`)."""

    def generate(self, prompts: Sequence[str], n: int, sampling: SamplingParams) -> list[list[Completion]]:
        return [[Completion(text, [], [], []) for _ in range(n)] for text in prompts]


class _PartnerPrompts:
    """The engine's prompt formatter: trained roles get ``prompt(env, agent)``; a partner's "prompt" is the action
    its policy takes from its observation (policies made once per env, since scripted ones read that env)."""

    def __init__(self, prompt: Callable[[Any, str], str], partners: Mapping[str, PartnerSpec]):
        self.prompt = prompt
        self.partners = dict(partners)
        self._policies: dict[int, tuple[Any, dict[str, Any]]] = {}

    def __call__(self, env: Any, agent: str) -> str:
        if agent not in self.partners:
            return self.prompt(env, agent)
        if id(env) not in self._policies:
            self._policies[id(env)] = (env, resolve_partners(env, self.partners))  # keep env: its id stays unique
        return self._policies[id(env)][1][agent](env.observe(agent))
