"""``Trainer``: tree or trajectory rollouts, advantages by name, PPO-clip updates, metrics, checkpoints.

A run: build the policies -> evaluate held-out success (greedy) -> optional warm-start SFT on scripted
demonstrations (then evaluate again) -> ``steps`` RL steps -> evaluate -> ``summary.json`` and the plot. Every step
draws its tasks from ``(seed, step)`` alone, and every random stream the run uses (torch's global RNG, each policy's
sampling generator, the engine's generator, Python's ``random``) is saved in the checkpoints with the alpha mixer's
and the estimator's state, so ``--resume`` continues the exact run: a run interrupted at any point (even ``kill -9``)
and resumed writes each step once to ``metrics.jsonl`` and ends with the same weights as an uninterrupted one.

Step numbers: step N is the state after N RL updates, everywhere (the ``step`` of ``metrics.jsonl``/``metrics.csv``
rows and of TensorBoard/W&B points, ``checkpoints/step_0000000N``, ``batches/step_00000N.jsonl``, the plot's x-axis,
the log). The first RL row is step 1; the checkpoint written after the warm start is step 0.

The pieces live beside it: the policies and their optimizers (:mod:`teamgym.train.policies`), what samples the
rollouts (:class:`teamgym.rollout.samplers.Samplers`), the estimator (:mod:`teamgym.train.estimators`, fed by
:mod:`teamgym.train.columns`), alpha (:mod:`teamgym.train.alpha`), the update (:mod:`teamgym.train.update`), tasks and
evaluation (:mod:`teamgym.train.evaluation`) and each step's metrics (:mod:`teamgym.train.metrics`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
import os
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from teamgym.algos import dynamic_sampling_mask
from teamgym.errors import DependencyNotInstalled, InvalidArgumentError
from teamgym.host import available_cores
from teamgym.registry import make
from teamgym.rollout.adapters import base_policy
from teamgym.rollout.batch import AgentTurnBatch
from teamgym.rollout.engine import ChatPrompt, RolloutEngine, RolloutResult, TreeSampling, task_seed
from teamgym.rollout.samplers import Samplers, distinct_policies
from teamgym.rollout.sampling import SamplingParams
from teamgym.rollout.slot import LocalSlots, SlotPool
from teamgym.train.alpha import TrainingAlpha
from teamgym.train.checkpoint import load_checkpoint, load_latest_checkpoint, remove_stale_writes, save_checkpoint
from teamgym.train.columns import usable_rows
from teamgym.train.config import TrainConfig, warm_start_differences
from teamgym.train.estimators import estimate, make_estimator, spec_for
from teamgym.train.evaluation import FailureReplay, TaskSplit, evaluate
from teamgym.train.kernels import cpu_capability, pin_cpu_kernels
from teamgym.train.metrics import MetricsLogger, plot_learning_curves, read_metrics, step_metrics
from teamgym.train.policies import build_optimizers, build_policies, warm_start_policies
from teamgym.train.presets import get_preset
from teamgym.train.process_reward import LearnedProcessReward, add_process_term, prm_texts
from teamgym.train.reference import ReferencePolicies
from teamgym.train.run_dir import SUMMARY_FILE, check_run_dir, finished_summary
from teamgym.train.sft import collect_demonstrations, sft_step
from teamgym.train.update import policy_update

__all__ = ["Trainer", "train"]

logger = logging.getLogger(__name__)


class Trainer:
    """Train a team of LLM agents on one env. See the module docstring.

    Args:
        config: the run's settings.
        resume: continue from the newest valid checkpoint in ``config.output_dir`` (start fresh if there is none).
    """

    def __init__(self, config: TrainConfig, *, resume: bool = False):
        self.config = config
        self.resume = resume
        pin_cpu_kernels(config.cpu_kernels)  # before torch's first CPU operation: the same floats on every host
        self.output_dir = Path(config.output_dir)  # created when the run starts writing: a refused run leaves none
        _check_device(config.device)
        check_run_dir(self.output_dir, resume=resume)
        self.preset = get_preset(config.env_id, config.prompt_format)
        if config.sft_perturb and config.sft_steps and self.preset.perturbation is None:
            raise InvalidArgumentError(
                f"sft_perturb={config.sft_perturb} but {config.env_id}'s {config.prompt_format!r} preset has no random "
                "first turn: set sft_perturb=0 (or prompt_format='compact_feedback' for plan_path)")
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)
            cores = available_cores()
            if config.torch_threads > cores:
                logger.warning("torch_threads=%d on %d available core(s): the threads contend and every step "
                               "slows down; pass --torch-threads %d (torch_threads=%d)",
                               config.torch_threads, cores, cores, cores)
        self.env_kwargs = {**self.preset.env_kwargs, **config.env_kwargs}
        probe = self._env_fn()  # fails now, naming a bad env option, not mid-run
        self.roles = list(probe.possible_agents)
        self.tasks = TaskSplit(probe.task_ids(), eval_tasks=config.eval_tasks, heldout_offset=config.heldout_offset,
                               seed=config.seed, pool=config.task_pool_size)
        self.replay = FailureReplay(config.task_replay, config.task_replay_size, seed=config.seed)
        probe.close()
        torch.manual_seed(config.seed)
        random.seed(config.seed)
        self.policies = build_policies(config, self.roles)
        if config.prompt_format == "chat":  # the env's messages in the (first) model's own chat template
            tokenizer = next(iter(self.policies.values())).tokenizer
            self.preset = dataclasses.replace(self.preset, prompt=ChatPrompt(tokenizer))
        self.optimizers = build_optimizers(
            self.policies, {name: config.ppo.lr_of(name) for name in distinct_policies(self.policies)},
            weight_decay=config.ppo.weight_decay)
        self.max_tokens = config.sampling.max_new_tokens or self.preset.max_tokens
        self.samplers = Samplers(self.policies, config.sampling.backend, model=config.model, device=config.device,
                                 seed=config.seed, vllm=config.vllm)
        slots = self._slots()
        self.engine = RolloutEngine(slots, self.samplers.by_role, tree=config.tree_sampling, seed=config.seed,
                                    sampling=SamplingParams(temperature=config.sampling.temperature,
                                                            max_tokens=self.max_tokens),
                                    waves=config.rollout_waves)
        self.alpha = TrainingAlpha(config.alpha, self.roles, seed=config.seed)
        self.rollout_mode = config.rollout_mode
        self.estimator = make_estimator(config)
        # the learned process reward (prm.weight > 0): fitted on the training rollouts' tree values
        self.prm = (LearnedProcessReward(config.prm, seed=config.seed, device=config.device) if config.prm.enabled
                    else None)
        self.reference: ReferencePolicies | None = None  # built as RL starts (ppo.kl_reference="reference")
        self.step = 0
        self.rl_completions = 0  # generated by the RL rollouts so far (completion_budget counts these)
        self.rl_completion_tokens = 0
        self.evals: dict[str, float] = {}
        self.sft_done = False
        self.wall_before = 0.0
        self._tqdm = _tqdm() if config.progress_bar else None

    def _env_fn(self) -> Any:
        return make(self.config.env_id, **self.env_kwargs)

    def _slots(self) -> SlotPool:
        """The rollout envs: in this process (threads) or one Ray actor each (``env_backend="ray"``)."""
        if self.config.env_backend == "ray":
            from teamgym.rollout.ray_backend import RaySlots

            # Actors get a picklable env factory, not this trainer (which holds the models).
            return RaySlots(functools.partial(make, self.config.env_id, **self.env_kwargs), self.preset.prompt)
        return LocalSlots(self._env_fn, self.preset.prompt, workers=self.config.env_workers)

    def close(self) -> None:
        """Close the rollout envs and the samplers that hold resources (vLLM engines as Ray actors)."""
        self.engine.close()
        self.samplers.close()

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        named = distinct_policies(self.policies)
        return {
            "step": self.step,
            "config": self.config.to_dict(),
            "models": {n: p.weights() for n, p in named.items()},
            "base": self._saved_base(),
            "optimizers": {n: self.optimizers[n].state_dict() for n in named},
            "policy_rng": {n: p.rng_state() for n, p in named.items()},
            "engine": self.engine.state_dict(),
            "mixer": self.alpha.state_dict(),
            "estimator": self.estimator.state_dict(),
            "replay": self.replay.state_dict(),
            "prm": self.prm.state_dict() if self.prm is not None else None,
            "reference": self.reference.state_dict() if self.reference is not None else None,
            "torch_rng": torch.get_rng_state(),
            "python_random": random.getstate(),
            "evals": dict(self.evals),
            "sft_done": self.sft_done,
            "rl_usage": {"completions": self.rl_completions, "completion_tokens": self.rl_completion_tokens},
            "wall_seconds": self.wall_before + (time.perf_counter() - self._started),
        }

    def _load_policies(self, state: dict[str, Any], refusal: str, fix: str) -> dict[str, Any]:
        """Load a checkpoint's models (and a per-role adapters run's base) and their sampling RNGs; a checkpoint of
        other models than this config builds is refused (``refusal`` names it, ``fix`` says what to do). Returns the
        policies."""
        named = distinct_policies(self.policies)
        if set(state["models"]) != set(named):
            raise InvalidArgumentError(f"{refusal} holds models {sorted(state['models'])} but this config builds "
                                       f"{sorted(named)}" + (f": {fix}" if fix else ""))
        base = base_policy(self.policies)
        if base is not None and state.get("base") is not None:
            base.load_weights(state["base"])
        for name, policy in named.items():
            policy.load_weights(state["models"][name])
            policy.set_rng_state(state["policy_rng"][name])
        return named

    def load_state_dict(self, state: dict[str, Any]) -> None:
        named = self._load_policies(state, "the checkpoint", "resume with the config the run started with (its output "
                                                             "dir's config.json)")
        for name in named:
            self.optimizers[name].load_state_dict(state["optimizers"][name])
        self.engine.load_state_dict(state["engine"])
        self.alpha.load_state_dict(state.get("mixer"))
        if state.get("estimator"):
            self.estimator.load_state_dict(state["estimator"])
        self.replay.load_state_dict(state.get("replay"))
        if self.prm is not None and state.get("prm") is not None:
            self.prm.load_state_dict(state["prm"])
        if self.config.ppo.kl_reference == "reference":
            self.reference = ReferencePolicies(self.policies)
            self.reference.load_state_dict(state.get("reference") or {})
        torch.set_rng_state(state["torch_rng"])
        random.setstate(state["python_random"])
        self.step = int(state["step"])
        self.evals = dict(state["evals"])
        self.sft_done = bool(state["sft_done"])
        usage = state.get("rl_usage")
        if usage is None:  # a checkpoint written before the count was saved: the logged steps up to this one
            rows = [r for r in read_metrics(self.output_dir) if r.get("step", math.inf) <= self.step]
            usage = {"completions": sum(int(r.get("completions", 0)) for r in rows),
                     "completion_tokens": sum(int(r.get("completion_tokens", 0)) for r in rows)}
        self.rl_completions = int(usage["completions"])
        self.rl_completion_tokens = int(usage["completion_tokens"])
        self.wall_before = float(state.get("wall_seconds", 0.0))
        self.samplers.sync()

    def _saved_base(self) -> dict[str, torch.Tensor] | None:
        """The shared base of per-role adapters, when the warm start trained it (else it is rebuilt from the config:
        the seed, or the checkpoint on disk)."""
        base = base_policy(self.policies)
        return base.weights() if base is not None and self.config.sft_steps > 0 else None

    def _checkpoint(self) -> None:
        save_checkpoint(self.output_dir, self.step, self.state_dict(), keep=self.config.keep_checkpoints)

    # ------------------------------------------------------------------ tasks and evaluation
    def task_ids(self, step: int) -> list[Any]:
        """The training tasks of ``step``: fresh draws fixed by the seed and the step, the first ``task_replay`` share
        of them replaced by recent failures (:class:`FailureReplay`; none while its pool is empty)."""
        return self.replay.draw(step, self.tasks.for_step(step, self.config.tasks_per_step))

    def evaluate(self, stage: str = "") -> dict[str, float]:
        """Held-out success, one sample per node: greedy (``success``) and sampled at the training temperature.

        Args:
            stage: what is evaluated (``"before training"``...): with it, the evaluation says when it starts and
                shows a progress bar (``progress_bar``) or its result.
        """
        heldout = self.tasks.heldout_ids
        if not stage:
            return evaluate(self.engine, self.policies, heldout, max_tokens=self.max_tokens,
                            temperature=self.config.sampling.temperature, seed=self.config.seed)
        logger.info("held-out evaluation %s: %d tasks, greedy then sampled", stage, len(heldout))
        with self._progress(2 * len(heldout), f"eval {stage}", "episode") as advance:
            result = evaluate(self.engine, self.policies, heldout, max_tokens=self.max_tokens,
                              temperature=self.config.sampling.temperature, seed=self.config.seed, progress=advance)
        logger.info("held-out success %s: %.1f%% greedy, %.1f%% sampled", stage, 100 * result["success"],
                    100 * result["sampled_success"])
        return result

    @contextmanager
    def _progress(self, total: int, desc: str, unit: str, initial: int = 0) -> Iterator[Callable[..., Any]]:
        """A phase's progress: yields ``advance(n=1, **postfix)``, a tqdm bar's update when ``progress_bar`` is on."""
        bar = None
        if self.config.progress_bar and self._tqdm is not None:
            bar = self._tqdm(total=total, initial=initial, desc=desc, unit=unit)

        def advance(n: int = 1, **postfix: str) -> None:
            if bar is not None:
                bar.update(n)
                if postfix:
                    bar.set_postfix(**postfix)

        try:
            yield advance
        finally:
            if bar is not None:
                bar.close()

    # ------------------------------------------------------------------ the run
    def train(self) -> dict[str, Any]:
        """Run (or resume) to ``config.steps``; returns the summary also written to ``summary.json``."""
        self._started = time.perf_counter()
        c = self.config
        remove_stale_writes(self.output_dir)
        loaded = load_latest_checkpoint(self.output_dir) if self.resume else None
        if loaded is not None:
            self.load_state_dict(loaded[1])
            logger.info("resumed from step %d (checkpoint step_%08d: %d RL updates done), continuing with step %d",
                        self.step, self.step, self.step, self.step + 1)
        elif self.resume:
            logger.info("no checkpoint in %s: starting from scratch", self.output_dir)
        self.output_dir.mkdir(parents=True, exist_ok=True)
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
        if c.warm_start_from:
            self._load_warm_start(Path(c.warm_start_from))
            self._checkpoint()
            return
        before = self.evaluate("before training")
        self.evals.update({"before": before["success"], "before_sampled": before["sampled_success"]})
        if c.sft_steps > 0:
            rng = np.random.default_rng([c.seed, 2**31 - 1])
            task_ids = self.tasks.draw(rng, c.sft_tasks)
            perturbed = task_ids[:int(c.sft_perturb * len(task_ids))]
            logger.info("warm start: the scripted expert plays %d training tasks%s", c.sft_tasks,
                        f", and {len(perturbed)} of them again after a random first turn" if perturbed else "")
            demos = collect_demonstrations(self._env_fn, self.preset, task_ids, perturbed)
            logger.info("warm start: %d SFT steps on %d demonstrations", c.sft_steps, len(demos))
            with warm_start_policies(self.policies) as policies:
                optimizers = {name: torch.optim.AdamW(p.trainable_parameters(), lr=c.sft_lr)
                              for name, p in distinct_policies(policies).items()}
                losses = []
                with self._progress(c.sft_steps, "SFT warm start", "step") as advance:
                    for step in range(c.sft_steps):
                        for optimizer in optimizers.values():
                            for group in optimizer.param_groups:
                                group["lr"] = c.sft_lr * lr_factor(step, c.sft_steps, c.sft_schedule)
                        losses.append(sft_step(demos, policies, optimizers, rng, c.sft_batch_size,
                                               c.ppo.max_grad_norm))
                        advance(loss=f"{losses[-1]:.3f}")
            self.evals["sft_loss"] = float(np.mean(losses[-10:]))
            logger.info("warm start: final SFT loss %.3f", self.evals["sft_loss"])
            self.samplers.sync()
            after_sft = self.evaluate(f"after {c.sft_steps} SFT steps")
            self.evals.update({"after_sft": after_sft["success"], "after_sft_sampled": after_sft["sampled_success"]})
        if c.ppo.kl_reference == "reference":
            self.reference = ReferencePolicies(self.policies)
        self.sft_done = True
        self._checkpoint()

    def _load_warm_start(self, source: Path) -> None:
        """Start from ``source``'s warm start (its step-0 checkpoint): the state :meth:`_warm_start` would have left.

        The RL optimizers, the mixer, the estimator's and the PRM's state stay this run's own: the warm start does not
        touch them, so they are as fresh here as they would have been.
        """
        state = load_checkpoint(source, 0)
        differences = warm_start_differences(state["config"], self.config)
        if differences:
            raise InvalidArgumentError(
                f"warm_start_from={str(source)!r}: that warm start was made with other settings: "
                + "; ".join(differences) + ". Use the same values as its config.json, or make this run's own warm "
                "start (leave warm_start_from empty)"
            )
        self._load_policies(state, f"warm_start_from={str(source)!r}", "")
        # The random streams: the warm start leaves them as seeded today (SFT draws from numpy generators of its own,
        # and evaluations restore the policies'), but a warm start that drew from them would stay exact.
        self.engine.load_state_dict({**self.engine.state_dict(), "rng": state["engine"]["rng"]})
        torch.set_rng_state(state["torch_rng"])
        random.setstate(state["python_random"])
        self.evals = dict(state["evals"])
        self.samplers.sync()
        if self.config.ppo.kl_reference == "reference":
            self.reference = ReferencePolicies(self.policies)
        self.sft_done = True
        logger.info("warm start from %s (held-out success after it: %.1f%% greedy, %.1f%% sampled)", source,
                    100 * self.evals.get("after_sft", self.evals["before"]),
                    100 * self.evals.get("after_sft_sampled", self.evals["before_sampled"]))

    @property
    def budget_reached(self) -> bool:
        """Whether the RL rollouts have generated ``completion_budget`` completions (never, with no budget)."""
        budget = self.config.completion_budget
        return budget > 0 and self.rl_completions >= budget

    def _rl_done(self) -> bool:
        return self.step >= self.config.steps or self.budget_reached

    def _rl_loop(self, metrics: MetricsLogger) -> None:
        c = self.config
        if not self._rl_done():
            budget = f", until {c.completion_budget} completions" if c.completion_budget else ""
            logger.info("RL: %s steps %d to %d%s, %s rollouts of %d tasks each", c.algo, self.step + 1, c.steps,
                        budget, self.rollout_mode, c.tasks_per_step)
        successes = []
        with self._progress(c.steps, "RL steps", "step", initial=self.step) as advance:
            while not self._rl_done():
                row = self._rl_step()
                successes.append(row["success"])
                self.step += 1
                self.rl_completions += int(row["completions"])
                self.rl_completion_tokens += int(row["completion_tokens"])
                done = self._rl_done()
                if c.eval_every and self.step % c.eval_every == 0 and not done:
                    evaluation = self.evaluate()
                    row["eval/success"] = evaluation["success"]
                    row["eval/sampled_success"] = evaluation["sampled_success"]
                metrics.log(row)
                if self.step % c.checkpoint_every == 0 or done:
                    self._checkpoint()
                advance(success=f"{row['success']:.2f}", reward=f"{row['reward/mean']:.2f}")
        if successes:
            logger.info("RL: %d steps done, training success %.1f%% over the last %d", len(successes),
                        100 * float(np.mean(successes[-10:])), min(10, len(successes)))
        if self.budget_reached and self.step < c.steps:
            logger.info("RL: completion budget reached: %d completions (budget %d) in %d of at most %d steps",
                        self.rl_completions, c.completion_budget, self.step, c.steps)

    def _rl_step(self) -> dict[str, Any]:
        c = self.config
        tic = time.perf_counter()
        result = self._rollout()
        replayed = self.replay.count(c.tasks_per_step)  # what this step's draw replaced, before the pool moves on
        self.replay.observe(result.episodes)
        batch = result.batch
        usable = usable_rows(batch)
        trained = usable & self._estimator_rows(batch)
        train_batch = batch.select(trained)
        alphas, payoff = self.alpha.apply(train_batch, result.episodes, credit=self.step > 0)
        prm_step = None
        if self.prm is not None:
            prm_step = self._process_reward(batch.select(usable), trained[usable], train_batch)
        advantages = estimate(self.estimator, train_batch, rollout=self.rollout_mode, gamma=c.gamma)
        keep = torch.ones(len(train_batch), dtype=torch.bool)
        if c.ppo.drop_zero_variance:
            keep = dynamic_sampling_mask(train_batch.rewards, train_batch.node_ids())
        if c.save_batches:
            self._save_batch(batch, usable, trained, train_batch.rewards, advantages, keep, prm_step)
        if c.ppo.drop_zero_variance:
            train_batch, advantages = train_batch.select(keep), advantages[keep]
        update_tic = time.perf_counter()
        stats = None
        models = None
        if c.ppo.agent_iteration_interval:  # agent-by-agent: one role's model per RL step (MARFT)
            role = self.roles[(self.step // c.ppo.agent_iteration_interval) % len(self.roles)]
            models = {self.policies[role].name}
        factor = lr_factor(self.step, c.steps, c.ppo.lr_schedule)
        for name, optimizer in self.optimizers.items():
            if models is None or name in models:  # a frozen role's optimizer is left as it is
                for group in optimizer.param_groups:
                    group["lr"] = c.ppo.lr_of(name) * factor
        for _ in range(c.ppo.epochs):
            stats = policy_update(train_batch, advantages, self.policies, self.optimizers, ppo=c.ppo,
                                  temperature=c.sampling.temperature, norm_length=self.max_tokens,
                                  reference=self.reference, models=models)
        self.samplers.sync(base=False)  # an update moves per-role adapters only, never their shared base
        update_seconds = time.perf_counter() - update_tic
        row = step_metrics(self.step + 1, result, advantages, stats, rollout=self.rollout_mode, gamma=c.gamma,
                           seconds=time.perf_counter() - tic, update_seconds=update_seconds,
                           dropped=int(usable.numel() - usable.sum()))
        if c.task_replay:
            row.update({"replay/tasks": replayed, "replay/pool": len(self.replay.pool)})
        row.update({f"alpha/{agent}": value for agent, value in alphas.items()})
        row.update(self.alpha.metrics)  # the correlation mixer's alpha_corr/<agent> and alpha_groups/<agent>
        row.update(getattr(self.estimator, "metrics", {}))  # a learned critic's numbers (turn_ppo)
        if prm_step is not None:
            row.update(prm_step.metrics)
        if payoff is not None:
            row["alpha_payoff"] = payoff
        return row

    def _estimator_rows(self, batch: AgentTurnBatch) -> torch.Tensor:
        """``(N,)`` bool: the rows the estimator is fed. With a learned process reward and an estimator that does not
        ask for continued candidates (``at_grpo``), the continuations' rows (played only for the PRM's targets) are
        left out, so the update is the estimator's own; every row otherwise."""
        if self.prm is None or spec_for(self.config.algo).continue_unchosen:
            return torch.ones(len(batch), dtype=torch.bool)
        return torch.tensor([not fork for fork in batch.fork], dtype=torch.bool)

    def _process_reward(self, nodes: AgentTurnBatch, trained: torch.Tensor, train_batch: AgentTurnBatch) -> Any:
        """Score ``nodes`` (the usable rows) with the PRM fitted so far, add ``weight * score`` to the rows of
        ``train_batch`` (the ``trained`` ones of ``nodes``) once it is warmed up, then fit it on the rollout's tree
        values (:meth:`LearnedProcessReward.observe`). Returns the :class:`~teamgym.train.process_reward.PRMStep`."""
        assert self.prm is not None
        tokenizers = {role: policy.tokenizer for role, policy in self.policies.items()}
        texts = prm_texts(nodes, lambda agent, ids: tokenizers[agent].decode(ids, skip_special_tokens=True))
        prm_step = self.prm.observe(nodes, texts, heldout=self.tasks.heldout_ids)
        term = torch.zeros(len(train_batch), dtype=torch.float64)
        if prm_step.active:
            term = self.config.prm.weight * prm_step.scores[trained]
            add_process_term(train_batch, term)
        prm_step.metrics["prm/term_mean"] = float(term.mean()) if term.numel() else 0.0
        return prm_step

    def _save_batch(
        self, batch: AgentTurnBatch, usable: torch.Tensor, trained: torch.Tensor, rewards: torch.Tensor,
        advantages: torch.Tensor, keep: torch.Tensor, prm_step: Any = None,
    ) -> None:
        """``batches/step_N.jsonl`` (N: the step this update completes): every row, with the reward the estimator
        saw, its advantage (None for rows the update did not use) and why a row was dropped (``infra_error``,
        ``zero_variance``, or ``continuation``: a continued candidate's row played only for the PRM's targets). With
        a learned process reward also each usable row's ``prm_score`` (before the step's fit) and ``prm_target``,
        and ``process``, the term added to the estimator's reward (None where none was)."""
        count = len(batch)
        mixed: list[float | None] = [None] * count
        advantage: list[float | None] = [None] * count
        dropped: list[str | None] = ["infra_error"] * count
        for row in usable.nonzero().flatten().tolist():
            dropped[row] = "continuation"
        for position, row in enumerate(trained.nonzero().flatten().tolist()):
            mixed[row] = float(rewards[position])
            if keep[position]:
                advantage[row], dropped[row] = float(advantages[position]), None
            else:
                dropped[row] = "zero_variance"
        extra: dict[str, list[Any]] = {"mixed_reward": mixed, "advantage": advantage, "dropped": dropped}
        if prm_step is not None:
            score: list[float | None] = [None] * count
            target: list[float | None] = [None] * count
            process: list[float | None] = [None] * count
            for position, row in enumerate(usable.nonzero().flatten().tolist()):
                score[row], target[row] = float(prm_step.scores[position]), float(prm_step.targets[position])
                if prm_step.active and trained[row]:
                    process[row] = self.config.prm.weight * float(prm_step.scores[position])
            extra.update({"prm_score": score, "prm_target": target, "process": process})
        (self.output_dir / "batches").mkdir(exist_ok=True)
        batch.to_jsonl(
            self.output_dir / "batches" / f"step_{self.step + 1:06d}.jsonl",  # the step this rollout trains
            extra=extra,
        )

    def _rollout(self) -> RolloutResult:
        """This step's rollout: a tree over the step's tasks, or ``group_size`` trajectories of each task."""
        tasks = self.task_ids(self.step)
        alphas = self.alpha.rollout_alphas()  # the tree advances on the alphas in force
        if self.rollout_mode == "tree":
            return self.engine.rollout(tasks, episode_prefix=f"s{self.step}", alphas=alphas)
        repeated = [t for t in tasks for _ in range(self.config.group_size)]
        return self.engine.rollout(repeated, episode_prefix=f"s{self.step}", tree=TreeSampling(k=1),
                                   seeds=[task_seed(t) for t in repeated], alphas=alphas)

    def _finish(self) -> dict[str, Any]:
        if self.step == 0:  # no RL step (steps=0): the model is the warm start, whose evaluation is deterministic
            stage = "after_sft" if "after_sft" in self.evals else "before"
            self.evals.update({"after": self.evals[stage], "after_sampled": self.evals[f"{stage}_sampled"]})
        else:
            final = self.evaluate(f"after {self.step} {self.config.algo} steps")
            self.evals.update({"after": final["success"], "after_sampled": final["sampled_success"]})
        summary = {
            "output_dir": str(self.output_dir),
            "env_id": self.config.env_id, "algo": self.config.algo, "rollout": self.rollout_mode, "steps": self.step,
            "heldout_tasks": self.config.eval_tasks,
            "heldout_success_before": self.evals.get("before"),
            "heldout_success_after_sft": self.evals.get("after_sft"),
            "heldout_success_after": self.evals.get("after"),
            "heldout_sampled_success_before": self.evals.get("before_sampled"),
            "heldout_sampled_success_after_sft": self.evals.get("after_sft_sampled"),
            "heldout_sampled_success_after": self.evals.get("after_sampled"),
            "sft_steps": self.config.sft_steps,
            "warm_start_from": self.config.warm_start_from or None,
            "completion_budget": self.config.completion_budget,
            "completions_used": self.rl_completions,
            "completion_tokens_used": self.rl_completion_tokens,
            "stopped_by_budget": self.budget_reached and self.step < self.config.steps,
            "wall_seconds": self.wall_before + (time.perf_counter() - self._started),
            "host": host_versions(),
        }
        if self.config.plot:
            try:
                summary["plot"] = str(plot_learning_curves(self.output_dir, evals=self.evals))
            except DependencyNotInstalled as err:  # the run's results stand without the picture
                logger.warning("no learning-curve plot: %s", err)
        (self.output_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        return summary


def lr_factor(step: int, total: int, schedule: str) -> float:
    """The learning rate of ``step`` (0-based) of ``total`` as a fraction of the peak (``sft_lr``, ``ppo.lr``):
    ``constant`` (1), or ``cosine`` (linear warm-up over the first 5% of steps, then a cosine decay to 5% of the
    peak)."""
    if schedule == "constant":
        return 1.0
    warmup = max(1, total // 20)
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.05 + 0.95 * 0.5 * (1.0 + math.cos(math.pi * progress))


def host_versions() -> dict[str, str]:
    """What a run's numbers depend on besides its config: the versions of Python, torch, transformers and teamgym,
    torch's threads, the CPU model and the CPU kernels torch ran (float rounding differs between CPU kernels, and a
    tiny model's warm start with it: :mod:`teamgym.train.kernels`)."""
    import platform

    import teamgym

    try:
        import transformers

        transformers_version = transformers.__version__
    except ImportError:
        transformers_version = ""
    cpu = platform.processor() or platform.machine()
    facts: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if not key.strip():
                    break  # the first processor's block is enough
                facts.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    cpu = facts.get("model name", cpu)
    if "cpu family" in facts:  # "AMD EPYC" alone names several generations, with different vector units
        cpu += f" (family {facts['cpu family']}, model {facts.get('model', '?')})"
    return {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers_version,
            "teamgym": teamgym.__version__, "torch_threads": str(torch.get_num_threads()), "cpu": cpu,
            "cpu_count": str(os.cpu_count()), "available_cores": str(available_cores()),
            "cpu_kernels": cpu_capability(), "mkl_cbwr": os.environ.get("MKL_CBWR", "")}


def train(config: TrainConfig, *, resume: bool = False) -> dict[str, Any]:
    """Run a training job; see :class:`Trainer`. Resuming a run that has finished ``config.steps`` steps, or spent
    ``config.completion_budget``, returns its saved summary (nothing is trained or evaluated again; raise ``steps``
    or the budget to train further)."""
    done = finished_summary(config.output_dir, config.steps, config.completion_budget) if resume else None
    if done is not None:
        logger.info("%s holds a finished run of %d steps: nothing to resume, here is its summary (raise --steps or "
                    "--completion-budget to train further)", config.output_dir, done["steps"])
        return done
    trainer = Trainer(config, resume=resume)
    try:
        return trainer.train()
    finally:
        trainer.close()


def _check_device(device: str) -> None:
    """Refuse a CUDA device this torch cannot use, before anything is built on it."""
    if not device.startswith("cuda"):
        return
    if not torch.cuda.is_available():
        reason = "this torch is a CPU build" if torch.version.cuda is None else "no CUDA device is visible"
        raise InvalidArgumentError(
            f"config field device={device!r}: {reason} (torch {torch.__version__}, torch.cuda.is_available() is "
            "False): use --device cpu, or on a machine with an NVIDIA GPU install a CUDA build of torch "
            "(https://pytorch.org/get-started/locally/)"
        )
    index = torch.device(device).index
    if index is not None and index >= torch.cuda.device_count():
        raise InvalidArgumentError(
            f"config field device={device!r}: this machine has {torch.cuda.device_count()} CUDA device(s), numbered "
            "from 0: pick one of them, or 'cuda'"
        )


def _tqdm() -> Callable[..., Any] | None:
    try:
        from tqdm.auto import tqdm
    except ImportError:
        logger.warning("tqdm is not installed: no progress bars, one log line per phase (pip install tqdm)")
        return None
    return tqdm
