"""``TrainConfig``: every knob of a training run, documented once, validated on construction.

The defaults are the embedded main job (the README's first command): a tiny character-level GPT-2 trained with
AT-GRPO on ``plan_path-v0`` 4x4 grids on two CPU cores, after a short warm-start SFT stage on the env's scripted
oracle. Values follow AT-GRPO (arXiv 2510.11062: K = 4, greedy advance, alpha = 1, PPO clip 0.2, token-mean, no
KL, one epoch) unless a field says otherwise.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from teamgym.errors import InvalidArgumentError

__all__ = ["TrainConfig"]


@dataclass
class TrainConfig:
    """A training run.

    Attributes:
        env_id: registered env to train on.
        env_kwargs: options for ``teamgym.make`` (merged over the preset's; e.g. ``{"size": 4}``).
        algo: advantage estimator by name: a registered one the rollout can feed (``teamgym.algos.
            list_advantages()``) or a trainer-side stateful one. Tree rollout: ``at_grpo`` (default), ``grpo``,
            ``dr_grpo``, ``rloo``, ``dr_mas``, ``mhgpo`` (groups = tree nodes), ``treerl`` (TreeRL on the sampling
            tree). Trajectory rollout: ``gigpo``, ``team_gigpo``. Either: ``spo``, ``spo_per_agent`` (SPO value
            trackers, saved in checkpoints). See docs/training.md, "Estimators".
        rollout: how each step samples: ``auto`` (default: the algo's rollout; trajectory for the SPO trackers),
            ``tree`` (``tasks_per_step`` episodes, ``k`` candidates per node, advance with ``strategy``) or
            ``trajectory`` (each of ``tasks_per_step`` tasks played ``group_size`` times from the same env seed,
            one candidate per node; ``k``, ``strategy``, ``top_m``, ``k0``, ``k_max`` are then unused). A rollout
            that cannot feed the algo is refused.
        steps: RL steps (one rollout + one update each).
        output_dir: where ``metrics.jsonl``, checkpoints, the plot and ``summary.json`` go.
        seed: seeds the model init, the sampler and the task draws.
        tasks_per_step: tasks drawn per step: one episode each in a tree rollout, ``group_size`` in a trajectory
            rollout.
        k: candidates per (agent, step) node of a tree rollout (AT-GRPO: 4).
        strategy: tree advance rule: ``greedy`` (AT-GRPO), ``top_m`` or ``adaptive`` (see ``TreeSampling``).
        top_m: ``top_m`` strategy: advance among the m best.
        k0: ``adaptive`` strategy: first candidates per node.
        k_max: ``adaptive`` strategy: most candidates per node.
        group_size: trajectory rollout: episodes per task (GiGPO's group size G; verl-agent uses 8; default 4 to
            match the tree's K at equal budget). ``gigpo``/``team_gigpo`` need >= 2; SPO works with 1 (its one
            response per prompt).
        gamma: discount of GiGPO's step returns ``G_t = r_t + gamma * G_{t+1}`` (GiGPO: 0.95), in [0, 1].
        omega: weight of GiGPO's step-level advantage, ``A = A^E + omega * A^S`` (GiGPO: 1.0; 0 = episode GRPO).
        spo_reward: what the SPO trackers track: ``success`` (default; the episode's 0/1 success, SPO's binary
            outcome; needs the trajectory rollout, where each row's episode is its own) or ``mixed`` (each row's
            ``alpha * team + local``, mapped linearly from ``spo_reward_range`` onto [0, 1]; any rollout).
        spo_reward_range: ``[low, high]`` of the mixed rewards for ``spo_reward="mixed"`` (from the env's reward
            table, e.g. ``[-2.5, 2.5]`` for ``plan_path-v0`` at alpha 1); a reward outside it stops the run, naming
            this field.
        spo_rho: the SPO trackers' forgetting factor in (0, 1) (SPO's constant variant: 0.875; ``alpha + beta``
            converges to ``1 / (1 - rho)``).
        prompt_format: ``compact`` (the env preset's short prompts, for the tiny model), ``env`` (the env's prompt
            text) or ``chat`` (the env's system and user messages through the tokenizer's chat template, for
            instruct models; the tokenizer must have one).
        model: ``tiny`` (built in code, no download) or a local path to a transformers checkpoint.
        n_layer: tiny model layers.
        n_embd: tiny model width.
        n_head: tiny model attention heads.
        shared_model: one model for all roles (True) or one model and optimizer per role.
        lora_rank: > 0 wraps a pretrained ``model`` in a peft LoRA adapter of this rank (0 = full fine-tune).
        device: ``cpu`` or ``cuda``.
        generator: what samples rollouts: ``hf`` (the trained transformers model itself) or ``vllm`` (vLLM engines
            per model on GPU, weights synced in place after every update as TRL's colocate mode; see ``vllm_engines``).
        vllm_gpu_memory_utilization: share of GPU memory each vLLM engine may take (the trainer needs the rest).
        vllm_engines: vLLM engines per model. 1 (default): one engine in the trainer's process. More: each engine is
            a Ray actor (``RayVLLMPolicy``, ``pip install 'teamgym[ray]'``), every ``generate`` call's prompts are
            split into contiguous shards across them and the weights are sent to all of them after each update.
            Engine ``i`` is seeded ``seed + i``.
        vllm_tensor_parallel_size: GPUs per vLLM engine (vLLM's ``tensor_parallel_size``); above 1 the engines run as
            Ray actors (even a single one), each holding that many whole GPUs of one node.
        vllm_gpus_per_engine: Ray engines: GPUs each engine actor reserves from Ray. 0 (default) = whole GPUs,
            ``vllm_tensor_parallel_size`` of them (none with ``device="cpu"``, for vLLM's CPU build); with tensor
            parallel size 1 a share in (0, 1] lets several engines share one GPU (e.g. 0.3 with
            ``vllm_gpu_memory_utilization=0.25``: two engines and the trainer on one GPU). Ray does not count the
            trainer's own GPU.
        max_new_tokens: completion budget (0 = the preset's).
        temperature: sampling temperature for training rollouts (evaluation is greedy).
        lr: Adam learning rate of every role (1e-4: over five seeds of the main job 5e-4 fell below the warm start
            on four, 1e-4 rose above it on four; docs/training.md).
        role_lr: per-role learning rates overriding ``lr`` (needs ``shared_model=False``), e.g. ``{"tool": 1e-4}``.
        weight_decay: AdamW weight decay.
        micro_batch_size: rows per forward/backward pass (gradients are accumulated over the batch).
        epochs: passes over each rollout batch (AT-GRPO: 1).
        clip_low: PPO lower clip (0.2).
        clip_high: PPO upper clip (0.2 PPO; 0.28 DAPO clip-higher).
        dual_clip: dual-clip bound for negative advantages (AT-GRPO: 3.0; None disables).
        aggregation: loss aggregation: ``token-mean`` | ``seq-mean-token-mean`` | ``seq-mean-token-sum-norm``.
        kl_coef: weight of the k3 KL to the sampling policy's logprobs (0 = none, as AT-GRPO and DAPO).
        entropy_coef: entropy bonus weight (0 = none).
        max_grad_norm: gradient clipping norm.
        drop_zero_variance: DAPO dynamic sampling: drop tree nodes whose rewards are all equal (they carry no
            gradient); tree rollouts only.
        alpha_mixer: the team/local weight of the rewards the advantages are computed from. ``"env"`` (default):
            the env's own rewards (its ``alpha``, 1.0 as AT-GRPO unless ``env_kwargs`` sets it); ``"static"``:
            ``alpha * team + local`` with the ``alpha`` field for every agent; ``"bandit"``: ``BanditAlpha``
            (EXP3 per agent over {0, 0.5, 1, 2}, scored by the batch's mean team term, gap 3). The alphas used are
            logged as ``alpha/<agent>`` in metrics.jsonl and the mixer's state is saved in checkpoints. The tree
            still advances on the env's rewards.
        alpha: the weight of the team term for ``alpha_mixer="static"``.
        sft_steps: warm-start SFT steps on the preset's scripted demonstrations before RL (0 = none).
        sft_lr: SFT learning rate.
        sft_batch_size: demonstrations per SFT step.
        eval_tasks: held-out tasks for the before/after evaluation (greedy, one sample per node); a finite dataset
            holds out its last ``eval_tasks`` ids and trains on the others.
        eval_every: also evaluate every N RL steps (0 = only before and after).
        heldout_offset: procedural envs: held-out task ids are ``heldout_offset + i``; training draws ids below it.
        checkpoint_every: write a checkpoint every N steps (the last step always gets one).
        keep_checkpoints: checkpoints kept on disk (older ones are deleted after a new one is verified).
        env_workers: threads stepping envs in parallel (sandbox envs release the GIL).
        rollout_waves: split each rollout's episodes into this many waves; a wave's env work (steps, the sandbox)
            then runs in a background thread while the next wave generates. 1 = lockstep, one ``generate`` call per
            policy per step. Worth it where generation is batched by the engine anyway (vLLM) or the env is slow
            (sandbox runs); a CPU model that needs large batches loses more than it gains (docs/benchmarks.md).
        torch_threads: intra-op threads of torch (0 = torch's default); 1 is fastest for the tiny model on shared cores.
        tensorboard: also log to TensorBoard (needs the ``tensorboard`` package).
        wandb: also log to Weights & Biases (needs ``wandb``; offline unless you log in).
        progress_bar: show a tqdm bar.
        plot: write ``learning_curves.png`` at the end (needs matplotlib).
        save_batches: write each step's agent-turn batch as ``batches/step_N.jsonl`` (for inspection).
    """

    env_id: str = "plan_path-v0"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    algo: str = "at_grpo"
    rollout: str = "auto"
    steps: int = 80
    output_dir: str = "runs/plan_path"
    seed: int = 0
    tasks_per_step: int = 8
    k: int = 4
    strategy: str = "greedy"
    top_m: int = 2
    k0: int = 2
    k_max: int = 8
    group_size: int = 4
    gamma: float = 0.95
    omega: float = 1.0
    spo_reward: str = "success"
    spo_reward_range: tuple[float, float] = (0.0, 1.0)
    spo_rho: float = 0.875
    prompt_format: str = "compact"
    model: str = "tiny"
    n_layer: int = 2
    n_embd: int = 64
    n_head: int = 2
    shared_model: bool = True
    lora_rank: int = 0
    device: str = "cpu"
    generator: str = "hf"
    vllm_gpu_memory_utilization: float = 0.4
    vllm_engines: int = 1
    vllm_tensor_parallel_size: int = 1
    vllm_gpus_per_engine: float = 0.0
    max_new_tokens: int = 0
    temperature: float = 1.0
    lr: float = 1e-4
    role_lr: dict[str, float] = field(default_factory=dict)
    weight_decay: float = 0.0
    micro_batch_size: int = 64
    epochs: int = 1
    clip_low: float = 0.2
    clip_high: float = 0.2
    dual_clip: float | None = 3.0
    aggregation: str = "token-mean"
    kl_coef: float = 0.0
    entropy_coef: float = 0.0
    max_grad_norm: float = 1.0
    drop_zero_variance: bool = False
    alpha_mixer: str = "env"
    alpha: float = 1.0
    sft_steps: int = 300
    sft_lr: float = 3e-3
    sft_batch_size: int = 32
    eval_tasks: int = 200
    eval_every: int = 0
    heldout_offset: int = 1_000_000
    checkpoint_every: int = 10
    keep_checkpoints: int = 2
    env_workers: int = 0
    rollout_waves: int = 1
    torch_threads: int = 1
    tensorboard: bool = False
    wandb: bool = False
    progress_bar: bool = True
    plot: bool = True
    save_batches: bool = False

    def __post_init__(self) -> None:
        from teamgym.algos import AGGREGATIONS

        positive = ("steps", "tasks_per_step", "k", "top_m", "k0", "k_max", "n_layer", "n_embd", "n_head",
                    "micro_batch_size", "epochs", "sft_batch_size", "checkpoint_every", "keep_checkpoints",
                    "group_size", "rollout_waves")
        for name in positive:
            _check_int(name, getattr(self, name), 1)
        for name in ("max_new_tokens", "sft_steps", "eval_tasks", "eval_every", "env_workers", "torch_threads",
                     "lora_rank", "seed", "heldout_offset"):
            _check_int(name, getattr(self, name), 0)
        for name in ("lr", "sft_lr", "max_grad_norm"):
            _check_float(name, getattr(self, name), low=0.0, inclusive=False)
        for name in ("weight_decay", "kl_coef", "entropy_coef", "temperature", "clip_high"):
            _check_float(name, getattr(self, name), low=0.0, inclusive=True)
        if not 0 <= self.clip_low < 1:
            raise InvalidArgumentError(f"clip_low={self.clip_low!r}: expected a float in [0, 1), e.g. 0.2")
        if self.dual_clip is not None and not (isinstance(self.dual_clip, (int, float)) and self.dual_clip > 1):
            raise InvalidArgumentError(f"dual_clip={self.dual_clip!r}: expected a float > 1 (AT-GRPO: 3.0) or None")
        _check_choice("strategy", self.strategy, ("greedy", "top_m", "adaptive"))
        _check_choice("alpha_mixer", self.alpha_mixer, ("env", "static", "bandit"))
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or not math.isfinite(self.alpha):
            raise InvalidArgumentError(f"alpha={self.alpha!r}: expected a finite float (1.0 = AT-GRPO's mixing)")
        _check_choice("prompt_format", self.prompt_format, ("compact", "env", "chat"))
        _check_choice("generator", self.generator, ("hf", "vllm"))
        if self.generator == "vllm" and self.model == "tiny":
            raise InvalidArgumentError(
                "generator='vllm' with model='tiny': vLLM loads checkpoints from disk; pass model=<local checkpoint "
                "dir> (e.g. a Qwen2.5-0.5B-Instruct download) or use generator='hf'"
            )
        if not 0 < self.vllm_gpu_memory_utilization < 1:
            raise InvalidArgumentError(f"config field vllm_gpu_memory_utilization={self.vllm_gpu_memory_utilization!r}:"
                                       " expected a float in (0, 1), e.g. 0.4")
        self._check_vllm_engines()
        _check_choice("aggregation", self.aggregation, AGGREGATIONS)
        if not isinstance(self.device, str) or not (self.device == "cpu" or self.device.startswith("cuda")):
            raise InvalidArgumentError(f"device={self.device!r}: expected 'cpu' or 'cuda' (or 'cuda:N')")
        if self.strategy == "adaptive" and not self.k0 <= self.k <= self.k_max:
            raise InvalidArgumentError(
                f"k0={self.k0}, k={self.k}, k_max={self.k_max}: the adaptive strategy needs k0 <= k <= k_max"
            )
        if self.role_lr and self.shared_model:
            raise InvalidArgumentError(
                f"role_lr={self.role_lr!r} needs one model per role: set shared_model=False (--no-shared-model)"
            )
        for role, value in self.role_lr.items():
            _check_float(f"role_lr[{role!r}]", value, low=0.0, inclusive=False)
        if self.model != "tiny" and not Path(self.model).exists():
            raise InvalidArgumentError(
                f"model={self.model!r}: expected 'tiny' or an existing local directory with a transformers "
                "checkpoint (no hub download is attempted)"
            )
        if not isinstance(self.env_kwargs, dict):
            raise InvalidArgumentError(f"env_kwargs={self.env_kwargs!r}: expected a dict of env options")
        self._check_estimator()

    def _check_estimator(self) -> None:
        """The algo exists, the rollout can feed it, and its knobs make sense."""
        from teamgym.algos import list_advantages
        from teamgym.errors import UnknownNameError
        from teamgym.train.advantages import ROLLOUTS, rollouts_for, usable_names_text
        from teamgym.train.stateful import SPO_SIGNALS, STATEFUL_ESTIMATORS

        names = sorted([*list_advantages(), *STATEFUL_ESTIMATORS])
        if self.algo not in names:
            raise UnknownNameError(self.algo, "advantage estimator (config field 'algo')", names,
                                   hint=f"Usable estimators (rollout): {usable_names_text()}.")
        feeds = rollouts_for(self.algo)
        if not feeds:
            raise InvalidArgumentError(
                f"config field algo={self.algo!r}: no rollout provides the columns this estimator takes: expected one "
                f"of {usable_names_text()}"
            )
        _check_choice("rollout", self.rollout, ("auto", *ROLLOUTS))
        if self.rollout != "auto" and self.rollout not in feeds:
            raise InvalidArgumentError(
                f"config field rollout={self.rollout!r} cannot feed algo={self.algo!r} (it needs a {' or '.join(feeds)}"
                f" rollout): set rollout='auto' or {feeds[0]!r}, or pick an algo for a {self.rollout} rollout: "
                f"{usable_names_text(self.rollout)}"
            )
        for name in ("gamma", "omega", "spo_rho"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InvalidArgumentError(f"config field {name}={value!r}: expected a finite float")
        if not 0 <= self.gamma <= 1:
            raise InvalidArgumentError(f"config field gamma={self.gamma!r}: expected a float in [0, 1] (GiGPO: 0.95)")
        if self.omega < 0:
            raise InvalidArgumentError(f"config field omega={self.omega!r}: expected a float >= 0 (GiGPO: 1.0)")
        if not 0 < self.spo_rho < 1:
            raise InvalidArgumentError(f"config field spo_rho={self.spo_rho!r}: expected a float in (0, 1) (SPO: "
                                       "0.875)")
        _check_choice("spo_reward", self.spo_reward, SPO_SIGNALS)
        bounds = self.spo_reward_range
        if not (isinstance(bounds, (list, tuple)) and len(bounds) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in bounds)
                and bounds[0] < bounds[1]):
            raise InvalidArgumentError(f"config field spo_reward_range={bounds!r}: expected [low, high] with finite "
                                       "low < high, e.g. [-2.5, 2.5]")
        mode = self.rollout_mode
        if self.algo in ("gigpo", "team_gigpo") and self.group_size < 2:
            raise InvalidArgumentError(
                f"config field group_size={self.group_size}: {self.algo} compares trajectories of the same task, "
                "expected group_size >= 2 (default 4)"
            )
        if self.algo in STATEFUL_ESTIMATORS and self.spo_reward == "success" and mode == "tree":
            raise InvalidArgumentError(
                "config field spo_reward='success' with rollout='tree': a tree's unchosen candidates have no episode "
                "outcome of their own: set spo_reward='mixed' (with spo_reward_range) or rollout='trajectory'"
            )
        if self.drop_zero_variance and mode != "tree":
            raise InvalidArgumentError(
                f"config field drop_zero_variance=True with a {mode} rollout: dynamic sampling drops tree nodes of "
                "equal rewards; set drop_zero_variance=False or use a tree estimator"
            )

    @property
    def rollout_mode(self) -> str:
        """The rollout this config runs: ``rollout``, or for ``auto`` the algo's preferred one."""
        if self.rollout != "auto":
            return self.rollout
        from teamgym.train.advantages import rollouts_for

        return rollouts_for(self.algo)[0]

    def _check_vllm_engines(self) -> None:
        _check_int("vllm_engines", self.vllm_engines, 1)
        _check_int("vllm_tensor_parallel_size", self.vllm_tensor_parallel_size, 1)
        _check_float("vllm_gpus_per_engine", self.vllm_gpus_per_engine, low=0.0, inclusive=True)
        share, tp = self.vllm_gpus_per_engine, self.vllm_tensor_parallel_size
        if tp > 1 and share not in (0, tp):
            raise InvalidArgumentError(
                f"config field vllm_gpus_per_engine={share!r} with vllm_tensor_parallel_size={tp}: a tensor "
                f"parallel engine needs one whole GPU per rank: use 0 (= {tp} GPUs) or {tp}"
            )
        if tp == 1 and share > 1:
            raise InvalidArgumentError(
                f"config field vllm_gpus_per_engine={share!r}: a one-GPU engine takes a share in (0, 1] of a GPU, or "
                "0 for a whole one; for more GPUs per engine set vllm_tensor_parallel_size"
            )
        ray_engines = self.vllm_engines > 1 or tp > 1
        if share and not ray_engines:
            raise InvalidArgumentError(
                f"config field vllm_gpus_per_engine={share!r} applies to Ray engines only: set vllm_engines > 1 (or "
                "vllm_tensor_parallel_size > 1), or leave it 0 for the in-process engine"
            )
        if self.generator != "vllm" and ray_engines:
            raise InvalidArgumentError(
                f"config fields vllm_engines={self.vllm_engines}, vllm_tensor_parallel_size={tp} apply to "
                f"generator='vllm' only, not generator={self.generator!r}: set generator='vllm' or leave them 1"
            )

    # ------------------------------------------------------------------ files
    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainConfig:
        """Build from a dict, naming unknown fields and the closest known ones."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            from teamgym.errors import closest_names

            hints = {name: closest_names(name, known) for name in unknown}
            raise InvalidArgumentError(
                f"unknown config fields {unknown}: closest known names {hints}; see `teamgym train --help`"
            )
        return cls(**values)

    @classmethod
    def from_file(cls, path: str | Path) -> TrainConfig:
        """Load a JSON config file (keys are field names)."""
        try:
            values = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise InvalidArgumentError(f"config file {str(path)!r} could not be read as JSON ({err}): fix or "
                                       "regenerate it (the output dir's config.json is a valid example)") from None
        if not isinstance(values, dict):
            raise InvalidArgumentError(f"config file {str(path)!r} holds a {type(values).__name__}: expected an "
                                       "object of field names to values")
        return cls.from_dict(values)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _check_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgumentError(f"config field {name}={value!r}: expected an int >= {minimum}")


def _check_float(name: str, value: Any, *, low: float, inclusive: bool) -> None:
    number = not isinstance(value, bool) and isinstance(value, (int, float))
    if not (number and (value >= low if inclusive else value > low)):
        bound = ">=" if inclusive else ">"
        raise InvalidArgumentError(f"config field {name}={value!r}: expected a number {bound} {low}")


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise InvalidArgumentError(f"config field {name}={value!r}: expected one of {', '.join(choices)}")
