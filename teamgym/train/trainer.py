"""``Trainer``: tree or trajectory rollouts, advantages by name, PPO-clip updates, metrics, checkpoints.

A run: build the policies -> evaluate held-out success (greedy) -> optional warm-start SFT on scripted
demonstrations (then evaluate again) -> ``steps`` RL steps -> evaluate -> ``summary.json`` and the plot. Every step
draws its tasks from ``(seed, step)`` alone, and every random stream the run uses (torch's global RNG, each policy's
sampling generator, the engine's generator, Python's ``random``) is saved in the checkpoints with the alpha mixer's
and the stateful estimator's (SPO tracker's) state, so ``--resume`` continues the exact run: a run interrupted at
any point (even ``kill -9``) and resumed writes each step once to ``metrics.jsonl`` and ends with the same weights
as an uninterrupted one. Tree estimators get a tree rollout, GiGPO a trajectory rollout (``config.rollout_mode``;
docs/training.md, "Estimators").
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

import teamgym
from teamgym.algos import AlphaMixer, BanditAlpha, StaticAlpha, dynamic_sampling_mask, informative_groups_per_1000
from teamgym.core.rewards import mix
from teamgym.errors import DependencyNotInstalled, InvalidArgumentError
from teamgym.rollout.batch import AgentTurnBatch
from teamgym.rollout.engine import ChatPrompt, RolloutEngine, RolloutResult, TreeSampling, task_seed
from teamgym.rollout.hf import HFPolicy
from teamgym.rollout.sampling import SamplingParams
from teamgym.train.advantages import compute_advantages
from teamgym.train.checkpoint import list_checkpoints, load_latest_checkpoint, save_checkpoint
from teamgym.train.columns import trajectory_columns
from teamgym.train.config import TrainConfig
from teamgym.train.metrics import MetricsLogger, plot_learning_curves
from teamgym.train.presets import get_preset
from teamgym.train.sft import collect_demonstrations, sft_step
from teamgym.train.stateful import STATEFUL_ESTIMATORS, TrackerEstimator
from teamgym.train.update import policy_update

__all__ = ["Trainer", "train", "remix_rewards"]

logger = logging.getLogger(__name__)

#: Training tasks for the SFT demonstration pool (drawn from the training id range).
SFT_TASKS = 300
#: Envs evaluated together in one lockstep rollout.
EVAL_CHUNK = 50


class Trainer:
    """Train a team of LLM agents on one env. See the module docstring.

    Args:
        config: the run's settings.
        resume: continue from the newest valid checkpoint in ``config.output_dir`` (start fresh if there is none).
    """

    def __init__(self, config: TrainConfig, *, resume: bool = False):
        self.config = config
        self.resume = resume
        self.output_dir = Path(config.output_dir)
        self.output_dir.mkdir(parents=True, exist_ok=True)
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)
        self.preset = get_preset(config.env_id, config.prompt_format)
        self.env_kwargs = {**self.preset.env_kwargs, **config.env_kwargs}
        teamgym.make(config.env_id, **self.env_kwargs).close()  # fail now, naming the bad option, not mid-run
        probe = teamgym.make(config.env_id, **self.env_kwargs)
        self.roles = list(probe.possible_agents)
        self.dataset = _dataset_split(probe, config.eval_tasks)
        probe.close()
        torch.manual_seed(config.seed)
        random.seed(config.seed)
        self.policies = self._build_policies()
        if config.prompt_format == "chat":  # the env's messages in the (first) model's own chat template
            tokenizer = next(iter(self.policies.values())).tokenizer
            self.preset = dataclasses.replace(self.preset, prompt=ChatPrompt(tokenizer))
        self.optimizers = {id(p): self._optimizer(p, self._lr(name)) for name, p in self._named_policies().items()}
        max_tokens = config.max_new_tokens or self.preset.max_tokens
        self.sampling = SamplingParams(temperature=config.temperature, max_tokens=max_tokens)
        self.eval_sampling = SamplingParams(temperature=0.0, max_tokens=max_tokens)
        self.eval_sampled = SamplingParams(temperature=config.temperature, max_tokens=max_tokens)
        self.tree = TreeSampling(k=config.k, strategy=config.strategy, top_m=config.top_m, k0=config.k0,
                                 k_max=config.k_max)
        self.generators = self._build_generators()
        self.engine = RolloutEngine(self._env_fn, self.generators, sampling=self.sampling, tree=self.tree,
                                    prompt_formatter=self.preset.prompt, env_workers=config.env_workers,
                                    seed=config.seed, waves=config.rollout_waves)
        self.mixer = _make_mixer(config, self.roles)
        self.rollout_mode = config.rollout_mode
        self.estimator = _make_estimator(config)
        self.step = 0
        self.evals: dict[str, float] = {}
        self.sft_done = False
        self.wall_before = 0.0

    # ------------------------------------------------------------------ construction
    def _env_fn(self) -> Any:
        return teamgym.make(self.config.env_id, **self.env_kwargs)

    def _new_policy(self, name: str, seed: int) -> HFPolicy:
        c = self.config
        if c.model == "tiny":
            policy = HFPolicy.tiny(seed=seed, n_layer=c.n_layer, n_embd=c.n_embd, n_head=c.n_head, name=name)
            policy.model.to(c.device)
            policy.device = torch.device(c.device)
            policy.generator = torch.Generator(device=c.device)
            policy.generator.manual_seed(seed)
            return policy
        return HFPolicy.from_pretrained(c.model, device=c.device, lora_rank=c.lora_rank, seed=seed, name=name)

    def _build_policies(self) -> dict[str, HFPolicy]:
        if self.config.shared_model:
            shared = self._new_policy("shared", self.config.seed)
            return {role: shared for role in self.roles}
        return {role: self._new_policy(role, self.config.seed + i) for i, role in enumerate(self.roles)}

    def _build_generators(self) -> dict[str, Any]:
        """What samples for each role: the trained HF models themselves, or vLLM engines synced after each update.

        Per model: one vLLM engine in this process, or (``vllm_engines > 1`` or tensor parallel) Ray engine actors.
        """
        c = self.config
        if c.generator == "hf":
            return dict(self.policies)
        # vLLM samples in the trainer's dtype (its "auto" would turn a float32 checkpoint into float16): the
        # rollout logprobs are then the ones the PPO ratio is taken against.
        dtype = str(next(iter(self.policies.values())).model.dtype).removeprefix("torch.")
        if c.vllm_engines > 1 or c.vllm_tensor_parallel_size > 1:
            from teamgym.rollout.ray_vllm import RayVLLMPolicy

            gpus = None if c.device.startswith("cuda") else 0  # None: the tensor parallel size; 0: vLLM's CPU build

            engines = {name: RayVLLMPolicy.from_model(c.model, num_engines=c.vllm_engines,
                                                      tensor_parallel_size=c.vllm_tensor_parallel_size,
                                                      num_gpus=c.vllm_gpus_per_engine or gpus, seed=c.seed,
                                                      gpu_memory_utilization=c.vllm_gpu_memory_utilization,
                                                      dtype=dtype, name=name)
                       for name in self._named_policies()}
        else:
            from teamgym.rollout.vllm import VLLMPolicy

            engines = {name: VLLMPolicy.from_model(c.model, seed=c.seed, dtype=dtype,
                                                   gpu_memory_utilization=c.vllm_gpu_memory_utilization)
                       for name in self._named_policies()}
        return {role: engines[policy.name] for role, policy in self.policies.items()}

    def _sync_generators(self) -> None:
        if self.config.generator == "vllm":
            for policy in self._named_policies().values():
                next(g for r, g in self.generators.items() if self.policies[r] is policy).sync_weights(policy.model)

    def _named_policies(self) -> dict[str, HFPolicy]:
        """Each distinct policy once, by name (``shared`` or the role)."""
        out: dict[str, HFPolicy] = {}
        for policy in self.policies.values():
            out.setdefault(policy.name, policy)
        return out

    def _lr(self, name: str) -> float:
        return self.config.role_lr.get(name, self.config.lr)

    def _optimizer(self, policy: HFPolicy, lr: float) -> torch.optim.Optimizer:
        params = [p for p in policy.model.parameters() if p.requires_grad]
        return torch.optim.AdamW(params, lr=lr, weight_decay=self.config.weight_decay)

    def close(self) -> None:
        """Close the rollout envs and the generators that hold resources (vLLM engines as Ray actors)."""
        self.engine.close()
        distinct = {id(g): g for g in self.generators.values() if g not in self.policies.values()}
        for generator in distinct.values():
            close = getattr(generator, "close", None)
            if callable(close):
                close()

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        named = self._named_policies()
        return {
            "step": self.step,
            "config": self.config.to_dict(),
            "models": {n: p.model.state_dict() for n, p in named.items()},
            "optimizers": {n: self.optimizers[id(p)].state_dict() for n, p in named.items()},
            "policy_rng": {n: p.rng_state() for n, p in named.items()},
            "engine": self.engine.state_dict(),
            "mixer": self.mixer.state_dict() if self.mixer is not None else None,
            "estimator": self.estimator.state_dict() if self.estimator is not None else None,
            "torch_rng": torch.get_rng_state(),
            "python_random": random.getstate(),
            "evals": dict(self.evals),
            "sft_done": self.sft_done,
            "wall_seconds": self.wall_before + (time.perf_counter() - self._started),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        named = self._named_policies()
        if set(state["models"]) != set(named):
            raise InvalidArgumentError(
                f"the checkpoint holds models {sorted(state['models'])} but this config builds {sorted(named)}: "
                "resume with the config the run started with (its output dir's config.json)"
            )
        for name, policy in named.items():
            policy.model.load_state_dict(state["models"][name])
            self.optimizers[id(policy)].load_state_dict(state["optimizers"][name])
            policy.set_rng_state(state["policy_rng"][name])
        self.engine.load_state_dict(state["engine"])
        if self.mixer is not None and state.get("mixer") is not None:
            self.mixer.load_state_dict(state["mixer"])
        if self.estimator is not None and state.get("estimator") is not None:
            self.estimator.load_state_dict(state["estimator"])
        torch.set_rng_state(state["torch_rng"])
        random.setstate(state["python_random"])
        self.step = int(state["step"])
        self.evals = dict(state["evals"])
        self.sft_done = bool(state["sft_done"])
        self.wall_before = float(state.get("wall_seconds", 0.0))
        self._sync_generators()

    def _checkpoint(self) -> None:
        save_checkpoint(self.output_dir, self.step, self.state_dict(), keep=self.config.keep_checkpoints)

    # ------------------------------------------------------------------ tasks and evaluation
    def task_ids(self, step: int) -> list[int]:
        """The training tasks of ``step`` (a function of the seed and the step only)."""
        return self._draw_tasks(np.random.default_rng([self.config.seed, step]), self.config.tasks_per_step)

    def _draw_tasks(self, rng: np.random.Generator, count: int) -> list[Any]:
        if self.dataset is not None:
            train_ids = self.dataset[0]
            return [train_ids[int(i)] for i in rng.integers(0, len(train_ids), count)]
        return [int(t) for t in rng.integers(0, self.config.heldout_offset, count)]

    def heldout_ids(self) -> list[Any]:
        if self.dataset is not None:
            return self.dataset[1]
        return [self.config.heldout_offset + i for i in range(self.config.eval_tasks)]

    def evaluate(self) -> dict[str, float]:
        """Held-out success, one sample per node: greedy (``success``) and sampled at the training temperature.

        The sampled evaluation draws from its own generator seeded by the config seed (saved and restored around
        it), so evaluating never shifts the training sampler's random stream.
        """
        ids = self.heldout_ids()
        if not ids:
            return {"success": float("nan"), "sampled_success": float("nan")}
        out = {}
        saved = {name: p.rng_state() for name, p in self._named_policies().items()}
        for key, sampling in (("success", self.eval_sampling), ("sampled_success", self.eval_sampled)):
            for policy in self._named_policies().values():
                policy.generator.manual_seed(self.config.seed + 1)
            episodes = []
            for start in range(0, len(ids), EVAL_CHUNK):
                result = self.engine.rollout(ids[start:start + EVAL_CHUNK], episode_prefix="eval",
                                             tree=TreeSampling(k=1), sampling=sampling)
                episodes.extend(result.episodes)
            out[key] = float(np.mean([bool(e.get("success")) for e in episodes]))
        for name, policy in self._named_policies().items():
            policy.set_rng_state(saved[name])
        return out

    # ------------------------------------------------------------------ the run
    def train(self) -> dict[str, Any]:
        """Run (or resume) to ``config.steps``; returns the summary also written to ``summary.json``."""
        self._started = time.perf_counter()
        c = self.config
        loaded = load_latest_checkpoint(self.output_dir) if self.resume else None
        if loaded is not None:
            self.load_state_dict(loaded[1])
            logger.info("resumed from step %d", self.step)
        elif self.resume:
            logger.info("no checkpoint in %s: starting from scratch", self.output_dir)
        elif list_checkpoints(self.output_dir):
            raise InvalidArgumentError(
                f"output_dir={str(self.output_dir)!r} already holds checkpoints of a run: pass --resume to continue "
                "it, or choose a new --output-dir"
            )
        c.save(self.output_dir / "config.json")
        metrics = MetricsLogger(self.output_dir, resume_step=self.step, tensorboard=c.tensorboard, wandb=c.wandb,
                                run_config=c.to_dict())
        try:
            if loaded is None:
                self._warm_start()
            self._rl_loop(metrics)
        finally:
            metrics.close()
        return self._finish()

    def _warm_start(self) -> None:
        c = self.config
        before = self.evaluate()
        self.evals.update({"before": before["success"], "before_sampled": before["sampled_success"]})
        logger.info("held-out success before training: %s", before)
        if c.sft_steps > 0:
            rng = np.random.default_rng([c.seed, 2**31 - 1])
            tasks = self._draw_tasks(rng, SFT_TASKS)
            demos = collect_demonstrations(self._env_fn, self.preset, tasks)
            optimizers = {id(p): torch.optim.AdamW(p.model.parameters(), lr=c.sft_lr)
                          for p in self._named_policies().values()}
            losses = []
            for _ in range(c.sft_steps):
                losses.append(sft_step(demos, self.policies, optimizers, rng, c.sft_batch_size, c.max_grad_norm))
            self.evals["sft_loss"] = float(np.mean(losses[-10:]))
            self._sync_generators()
            after_sft = self.evaluate()
            self.evals.update({"after_sft": after_sft["success"], "after_sft_sampled": after_sft["sampled_success"]})
            logger.info("held-out success after %d SFT steps: %s", c.sft_steps, after_sft)
        self.sft_done = True
        self._checkpoint()

    def _rl_loop(self, metrics: MetricsLogger) -> None:
        c = self.config
        bar = None
        if c.progress_bar:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                logger.warning("tqdm is not installed: no progress bar (pip install tqdm)")
            else:
                bar = tqdm(total=c.steps, initial=self.step, desc="RL steps", unit="step")
        try:
            while self.step < c.steps:
                row = self._rl_step()
                self.step += 1
                if c.eval_every and self.step % c.eval_every == 0 and self.step < c.steps:
                    evaluation = self.evaluate()
                    row["eval/success"] = evaluation["success"]
                    row["eval/sampled_success"] = evaluation["sampled_success"]
                metrics.log(row)
                if self.step % c.checkpoint_every == 0 or self.step == c.steps:
                    self._checkpoint()
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(success=f"{row['success']:.2f}", reward=f"{row['reward/mean']:.2f}")
        finally:
            if bar is not None:
                bar.close()

    def _rl_step(self) -> dict[str, Any]:
        c = self.config
        tic = time.perf_counter()
        result = self._rollout()
        batch = result.batch
        if c.save_batches:
            (self.output_dir / "batches").mkdir(exist_ok=True)
            batch.to_jsonl(self.output_dir / "batches" / f"step_{self.step:06d}.jsonl")
        usable = torch.tensor([not e for e in batch.infra_error], dtype=torch.bool)
        train_batch = batch.select(usable)
        alphas = {}
        if self.mixer is not None:
            alphas = {agent: self.mixer.alpha_for(agent) for agent in self.roles}
            remix_rewards(train_batch, alphas)
            team = [terms["team"] for terms in train_batch.reward_terms]
            self.mixer.update({"team_return": float(np.mean(team)) if team else 0.0})
        if self.estimator is not None:
            advantages = self.estimator.advantages(train_batch)
        else:
            advantages = compute_advantages(c.algo, train_batch, rollout=self.rollout_mode, gamma=c.gamma,
                                            omega=c.omega)
        if c.drop_zero_variance:
            keep = dynamic_sampling_mask(train_batch.rewards, train_batch.group_ids())
            train_batch, advantages = train_batch.select(keep), advantages[keep]
        update_tic = time.perf_counter()
        stats = None
        for _ in range(c.epochs):
            stats = policy_update(train_batch, advantages, self.policies, self.optimizers,
                                  temperature=c.temperature, micro_batch_size=c.micro_batch_size,
                                  clip_low=c.clip_low, clip_high=c.clip_high, dual_clip=c.dual_clip,
                                  aggregation=c.aggregation, kl_coef=c.kl_coef, entropy_coef=c.entropy_coef,
                                  max_grad_norm=c.max_grad_norm)
        self._sync_generators()
        update_seconds = time.perf_counter() - update_tic
        seconds = time.perf_counter() - tic
        row = self._row(result, advantages, stats, seconds, update_seconds, int(usable.numel() - usable.sum()))
        row.update({f"alpha/{agent}": value for agent, value in alphas.items()})
        return row

    def _rollout(self) -> RolloutResult:
        """This step's rollout: a tree over the step's tasks, or ``group_size`` trajectories of each task."""
        tasks = self.task_ids(self.step)
        if self.rollout_mode == "tree":
            return self.engine.rollout(tasks, episode_prefix=f"s{self.step}")
        repeated = [t for t in tasks for _ in range(self.config.group_size)]
        return self.engine.rollout(repeated, episode_prefix=f"s{self.step}", tree=TreeSampling(k=1),
                                   seeds=[task_seed(t) for t in repeated])

    def _informative_groups(self, batch: Any) -> float:
        """Groups whose rewards differ per 1,000 completions: tree nodes, or tasks whose trajectories' returns
        differ (trajectory rollouts)."""
        if not len(batch):
            return 0.0
        if self.rollout_mode == "tree":
            return informative_groups_per_1000(batch.rewards, batch.group_ids())
        columns = trajectory_columns(batch, gamma=self.config.gamma, per_agent=False)
        return informative_groups_per_1000(columns["episode_returns"], columns["group_ids"])

    def _row(self, result: RolloutResult, advantages: torch.Tensor, stats: Any, seconds: float,
             update_seconds: float, dropped: int) -> dict[str, Any]:
        batch = result.batch
        row: dict[str, Any] = {"step": self.step, "success": result.success_rate,
                               "reward/mean": float(batch.rewards.mean()) if len(batch) else 0.0}
        # reward/<agent>/...: the agent's own-step terms averaged over its candidates (what its tree groups compare);
        # return/<agent>: everything it received per episode, on other agents' steps too (the env's summaries).
        for agent in sorted(set(batch.agent)):
            rows = [i for i, a in enumerate(batch.agent) if a == agent]
            row[f"reward/{agent}/mixed"] = float(batch.rewards[rows].mean())
            names = sorted({k for i in rows for k in batch.reward_terms[i]})
            for name in names:
                row[f"reward/{agent}/{name}"] = float(np.mean([batch.reward_terms[i].get(name, 0.0) for i in rows]))
            returns = [e["returns"][agent] for e in result.episodes if agent in e.get("returns", {})]
            if returns:
                row[f"return/{agent}"] = float(np.mean(returns))
        if advantages.numel():
            row.update({"advantage/mean": float(advantages.mean()), "advantage/std": float(advantages.std()) if
                        advantages.numel() > 1 else 0.0, "advantage/min": float(advantages.min()),
                        "advantage/max": float(advantages.max())})
        row["informative_groups_per_1000"] = self._informative_groups(batch)
        row.update({"loss": stats.loss, "kl": stats.kl, "entropy": stats.entropy, "clip_fraction": stats.clip_fraction,
                    "grad_norm": stats.grad_norm, "completions": result.completions,
                    "tokens_per_s": batch.num_tokens() / max(result.total_seconds, 1e-9),
                    "env_time_share": result.env_seconds / max(seconds, 1e-9),
                    "generate_time_share": result.generate_seconds / max(seconds, 1e-9),
                    "update_time_share": update_seconds / max(seconds, 1e-9),
                    "step_seconds": seconds, "dropped_infra_rows": dropped})
        return row

    def _finish(self) -> dict[str, Any]:
        final = self.evaluate()
        self.evals.update({"after": final["success"], "after_sampled": final["sampled_success"]})
        summary = {
            "env_id": self.config.env_id, "algo": self.config.algo, "rollout": self.rollout_mode, "steps": self.step,
            "heldout_tasks": self.config.eval_tasks,
            "heldout_success_before": self.evals.get("before"),
            "heldout_success_after_sft": self.evals.get("after_sft"),
            "heldout_success_after": self.evals.get("after"),
            "heldout_sampled_success_before": self.evals.get("before_sampled"),
            "heldout_sampled_success_after_sft": self.evals.get("after_sft_sampled"),
            "heldout_sampled_success_after": self.evals.get("after_sampled"),
            "sft_steps": self.config.sft_steps,
            "wall_seconds": self.wall_before + (time.perf_counter() - self._started),
        }
        if self.config.plot:
            try:
                summary["plot"] = str(plot_learning_curves(self.output_dir, evals=self.evals))
            except DependencyNotInstalled as err:  # the run's results stand without the picture
                logger.warning("no learning-curve plot: %s", err)
        (self.output_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        return summary


def remix_rewards(batch: AgentTurnBatch, alphas: Mapping[str, float]) -> None:
    """Re-mix the batch's rewards in place, ``alpha[agent] * team + local`` with each receiving agent's alpha.

    Both the acting agents' ``rewards`` and what other agents received on each row's step (``others_rewards``,
    from ``others_terms``), so that everything the estimators read uses one alpha per agent.
    """
    batch.rewards = torch.tensor([mix(terms, alphas[agent]) for terms, agent in zip(batch.reward_terms, batch.agent)],
                                 dtype=batch.rewards.dtype)
    batch.others_rewards = [{other: mix(terms, alphas[other]) for other, terms in others.items()}
                            for others in batch.others_terms]


def _dataset_split(env: Any, eval_tasks: int) -> tuple[list[Any], list[Any]] | None:
    """``(train ids, held-out ids)`` of a finite dataset (its last ``eval_tasks`` ids held out); None if procedural."""
    known = env.task_ids()
    if known is None:
        return None
    ids = list(known)
    if eval_tasks >= len(ids):
        raise InvalidArgumentError(
            f"eval_tasks={eval_tasks}: the env has only {len(ids)} tasks and training needs some left: use "
            f"eval_tasks <= {len(ids) - 1}"
        )
    return (ids[: len(ids) - eval_tasks], ids[len(ids) - eval_tasks:]) if eval_tasks else (ids, [])


def _make_mixer(config: TrainConfig, roles: list[str]) -> AlphaMixer | None:
    """The reward mixer ``config.alpha_mixer`` names, or ``None`` to keep the env's own rewards."""
    if config.alpha_mixer == "static":
        return StaticAlpha(float(config.alpha))
    if config.alpha_mixer == "bandit":
        return BanditAlpha(roles, seed=config.seed)
    return None


def _make_estimator(config: TrainConfig) -> TrackerEstimator | None:
    """The stateful estimator ``config.algo`` names (an SPO tracker), or ``None`` for a registered pure one."""
    if config.algo not in STATEFUL_ESTIMATORS:
        return None
    return TrackerEstimator(config.algo, signal=config.spo_reward, reward_range=config.spo_reward_range,
                            rho=config.spo_rho)


def train(config: TrainConfig, *, resume: bool = False) -> dict[str, Any]:
    """Run a training job; see :class:`Trainer`."""
    trainer = Trainer(config, resume=resume)
    try:
        return trainer.train()
    finally:
        trainer.close()
