"""``TrainConfig``: every knob of a training run, documented once, validated on construction.

The defaults are the embedded main job (the README's first command): a tiny character-level GPT-2 trained with
AT-GRPO on ``plan_path-v0`` 4x4 grids on two CPU cores, after a short warm-start SFT stage on the env's scripted
oracle. Values follow AT-GRPO (arXiv 2510.11062: K = 4, greedy advance, alpha = 1, PPO clip 0.2, token-mean, no
KL, one epoch) unless a field says otherwise.

Knobs that belong together live in sections, each a dataclass that documents and checks its own fields once:
``sampling`` (:class:`teamgym.train.sections.SamplingConfig`), ``tree`` (:class:`teamgym.rollout.TreeSampling`, the
engine's own), ``ppo`` (:class:`teamgym.train.sections.PPOConfig`), ``critic``
(:class:`teamgym.train.sections.CriticConfig`) and ``vllm`` (:class:`teamgym.rollout.VLLMSettings`). A field's
*path* is its name, or ``section.name`` (``tree.k``): the names of ``--set``, of config files (nested objects, or
paths as keys) and, with ``-`` for ``.`` and ``_``, of the generated command-line flags (``--tree-k``). The flat
names of configs saved before the sections existed (``k``, ``lr``, ``generator``, ``vllm_engines``,
``alpha_mixer``...) still load (:data:`LEGACY_NAMES`).

Importing this module imports no torch (the sections live in :mod:`teamgym.train.sections` and
:mod:`teamgym.rollout.settings`), and every check but the estimator's runs before torch is needed, so ``teamgym
train`` refuses a bad value at once; the estimator checks import the estimators, last.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from teamgym.errors import InvalidArgumentError, check_choice, check_int, check_number, closest_names
from teamgym.rollout.settings import TreeSampling, VLLMSettings
from teamgym.train.sections import CriticConfig, PPOConfig, SamplingConfig

__all__ = ["ALGO_RECIPES", "LEGACY_NAMES", "SamplingConfig", "TrainConfig", "field_docs", "field_paths",
           "normalize_paths", "read_config_file"]


@dataclass
class TrainConfig:
    """A training run.

    Attributes:
        env_id: registered env to train on.
        env_kwargs: options for ``teamgym.make`` (merged over the preset's; e.g. ``{"size": 4}``).
        algo: advantage estimator by name (``teamgym.train.estimators.ESTIMATORS``). Tree rollout: ``at_grpo``
            (groups = tree nodes), ``treerl`` (TreeRL on the sampling tree, unchosen candidates continued
            to the end). Trajectory rollout: ``grpo``, ``dr_grpo``, ``rloo`` (one outcome per trajectory, groups =
            the task's trajectories), ``dr_mas`` (groups = (task, agent) over every invocation), ``mhgpo`` (groups =
            (task, agent type), one sample per trajectory), ``gigpo``, ``team_gigpo``. Either: ``spo``,
            ``spo_per_agent`` (SPO value trackers, saved in checkpoints). Trajectory rollout with a learned critic:
            ``turn_ppo`` (default; Turn-PPO: GAE over each role's turns; the ``critic`` section) and ``marft`` (MARFT:
            per-role adapters, GAE over the team's turns, action-level PPO; :meth:`from_dict` fills in its recipe).
            See docs/training.md, "Estimators".
        rollout: how each step samples: ``auto`` (default: the algo's rollout; trajectory for the SPO trackers),
            ``tree`` (``tasks_per_step`` episodes, ``tree.k`` candidates per node, advance with ``tree.strategy``)
            or ``trajectory`` (each of ``tasks_per_step`` tasks played ``group_size`` times from the same env seed,
            one candidate per node; the ``tree`` section is then unused). A rollout that cannot feed the algo is
            refused.
        steps: RL steps (one rollout + one update each).
        output_dir: where ``metrics.jsonl``, checkpoints, the plot and ``summary.json`` go.
        seed: seeds the model init, the sampler and the task draws.
        tasks_per_step: tasks drawn per step: one episode each in a tree rollout, ``group_size`` in a trajectory
            rollout.
        task_pool: the training tasks a run draws from: 0 = every step draws afresh from the whole training range
            (a procedural env's million ids: a task practically never comes back); N > 0 = a pool of N distinct
            training ids fixed by the seed, from which every step draws (tasks recur); ``None`` (default) = the
            algo's need: for the SPO trackers, which keep a baseline per task, ``round(tasks_per_step / (1 -
            spo_rho))`` (64 by default: a task comes back about once per tracker memory ``1 / (1 - rho)`` steps, as
            SPO revisits a finite prompt set), else 0. The SFT warm start always draws from the whole range.
        group_size: trajectory rollout: episodes per task (GiGPO's group size G; verl-agent uses 8; default 3: 8 tasks
            x 3 episodes generate about as many completions per step as AT-GRPO's tree at K = 4). ``gigpo``/``team_gigpo`` need >= 2; SPO works with 1 (its one
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
        alpha: the weight of the team term in the rewards the advantages are computed from, ``alpha * team +
            local`` (AT-GRPO's mixing; the one alpha knob of training). ``"env"`` (default): the env's own rewards
            (its ``alpha``, 1.0 as AT-GRPO unless ``env_kwargs`` sets it); a number, or ``{agent: number}``: every
            agent-turn re-mixed with that fixed alpha; ``"bandit"``: ``teamgym.algos.BanditAlpha`` (EXP3 per agent
            over {0, 0.5, 1, 2}, scored by the batch's mean team term, gap 3). Other than ``"env"``, the alphas used
            are logged as ``alpha/<agent>`` in metrics.jsonl and the mixer's state is saved in checkpoints
            (:mod:`teamgym.train.alpha`). The tree still advances on the env's rewards.
        prompt_format: ``compact`` (the env preset's short prompts, for the tiny model), ``env`` (the env's prompt
            text) or ``chat`` (the env's system and user messages through the tokenizer's chat template, for
            instruct models; the tokenizer must have one).
        model: ``tiny`` (built in code, no download) or a local path to a transformers checkpoint.
        n_layer: tiny model layers.
        n_embd: tiny model width.
        n_head: tiny model attention heads.
        shared_model: one model for all roles (True) or one model and optimizer per role.
        lora_rank: > 0 wraps a pretrained ``model`` in a peft LoRA adapter of this rank (0 = full fine-tune); with
            ``role_adapters``, the rank of every role's adapter (0 = 8, :data:`teamgym.rollout.adapters.DEFAULT_RANK`).
        role_adapters: one frozen base model in memory and one LoRA adapter and optimizer per role on it (peft
            multi-adapter, :mod:`teamgym.rollout.adapters`), for the tiny model too: each role samples and trains
            with its own adapter; checkpoints hold each adapter and its optimizer (and the base, when the warm start
            trained it). The SFT warm start trains the shared base in full, adapters off; RL then trains only the
            adapters. Needs ``shared_model=True``. With ``sampling.backend="vllm"`` one engine samples every role
            with its own LoRA request (multi-LoRA; one engine in process, a vLLM model class with LoRA support such
            as Llama or Qwen2), each changed adapter synced as a new version after every update
            (:mod:`teamgym.rollout.vllm_lora`).
            docs/training.md, "Shared model, per-role models, per-role adapters".
        device: ``cpu`` or ``cuda``.
        sampling: how rollouts are sampled (:class:`SamplingConfig`: temperature, completion budget, backend).
        tree: how a tree rollout expands each node (:class:`teamgym.rollout.TreeSampling`: k, strategy, top-m and
            adaptive-K settings).
        ppo: the policy update (:class:`teamgym.train.update.PPOConfig`: optimizer, clipping, loss aggregation, KL
            and entropy).
        critic: the learned critic and its GAE (:class:`teamgym.train.sections.CriticConfig`: gamma, lambda,
            learning rate, value clipping), for ``algo="turn_ppo"`` and ``algo="marft"``.
        vllm: the vLLM engines per model when ``sampling.backend="vllm"``
            (:class:`teamgym.rollout.samplers.VLLMSettings`).
        sft_steps: warm-start SFT steps on the preset's scripted demonstrations before RL (0 = none).
        sft_lr: SFT learning rate.
        sft_batch_size: demonstrations per SFT step.
        sft_tasks: training tasks the scripted expert plays for the demonstrations (every step of each is one).
        sft_schedule: the SFT learning rate over the steps: ``cosine`` (5% linear warm-up, then a cosine decay to
            5% of ``sft_lr``) or ``constant``.
        eval_tasks: held-out tasks for the before/after evaluation (greedy, one sample per node); a finite dataset
            holds out its last ``eval_tasks`` ids and trains on the others.
        eval_every: also evaluate held-out success every N RL steps (0 = only before and after), for the
            learning curve.
        heldout_offset: procedural envs: held-out task ids are ``heldout_offset + i``; training draws ids below it.
        checkpoint_every: write a checkpoint every N steps (the last step always gets one).
        keep_checkpoints: checkpoints kept on disk (older ones are deleted after a new one is verified).
        env_workers: threads stepping envs in parallel (sandbox envs release the GIL); ``env_backend="local"`` only.
        env_backend: where the rollout envs live: ``local`` (this process, ``env_workers`` threads) or ``ray`` (one
            Ray actor per env, :class:`teamgym.rollout.ray_backend.RaySlots`; needs ``teamgym[ray]``; starts a local
            Ray instance unless one is initialised).
        rollout_waves: split each rollout's episodes into this many waves; a wave's env work (steps, the sandbox)
            then runs in a background thread while the next wave generates. 1 = lockstep, one ``generate`` call per
            model per step. Worth it where generation is batched by the engine anyway (vLLM) or the env is slow
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
    algo: str = "turn_ppo"
    rollout: str = "auto"
    steps: int = 80
    output_dir: str = "runs/plan_path"
    seed: int = 0
    tasks_per_step: int = 8
    task_pool: int | None = None
    group_size: int = 3
    gamma: float = 0.95
    omega: float = 1.0
    spo_reward: str = "success"
    spo_reward_range: tuple[float, float] = (0.0, 1.0)
    spo_rho: float = 0.875
    alpha: str | float | dict[str, float] = "env"
    prompt_format: str = "compact"
    model: str = "tiny"
    n_layer: int = 2
    n_embd: int = 128
    n_head: int = 4
    shared_model: bool = True
    lora_rank: int = 0
    role_adapters: bool = False
    device: str = "cpu"
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    tree: TreeSampling = field(default_factory=TreeSampling)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    critic: CriticConfig = field(default_factory=CriticConfig)
    vllm: VLLMSettings = field(default_factory=VLLMSettings)
    sft_steps: int = 1000
    sft_lr: float = 3e-3
    sft_batch_size: int = 32
    sft_tasks: int = 3000
    sft_schedule: str = "cosine"
    eval_tasks: int = 200
    eval_every: int = 20
    heldout_offset: int = 1_000_000
    checkpoint_every: int = 10
    keep_checkpoints: int = 2
    env_workers: int = 0
    env_backend: str = "local"
    rollout_waves: int = 1
    torch_threads: int = 1
    tensorboard: bool = False
    wandb: bool = False
    progress_bar: bool = True
    plot: bool = True
    save_batches: bool = False

    def __post_init__(self) -> None:
        for name, section in SECTIONS.items():
            if not isinstance(getattr(self, name), section):
                raise InvalidArgumentError(
                    f"config field {name}={getattr(self, name)!r}: expected a {section.__name__}; build configs from "
                    "dicts with TrainConfig.from_dict (nested sections, 'section.field' paths or the old flat names)"
                )
        for name in ("steps", "tasks_per_step", "n_layer", "n_embd", "n_head", "sft_batch_size", "sft_tasks",
                     "checkpoint_every",
                     "keep_checkpoints", "group_size", "rollout_waves"):
            check_int(name, getattr(self, name), 1)
        for name in ("sft_steps", "eval_tasks", "eval_every", "env_workers", "torch_threads", "lora_rank", "seed",
                     "heldout_offset"):
            check_int(name, getattr(self, name), 0)
        if self.task_pool is not None:
            check_int("task_pool", self.task_pool, 0)
        check_number("sft_lr", self.sft_lr, low=0.0, inclusive=False)
        _check_alpha(self.alpha)
        check_choice("prompt_format", self.prompt_format, ("compact", "env", "chat"))
        check_choice("sft_schedule", self.sft_schedule, ("cosine", "constant"))
        check_choice("env_backend", self.env_backend, ("local", "ray"))
        if not isinstance(self.device, str) or not (self.device == "cpu" or self.device.startswith("cuda")):
            raise InvalidArgumentError(f"config field device={self.device!r}: expected 'cpu' or 'cuda' (or 'cuda:N')")
        if self.model != "tiny" and not Path(self.model).exists():
            raise InvalidArgumentError(
                f"config field model={self.model!r}: expected 'tiny' or an existing local directory with a "
                "transformers checkpoint (no hub download is attempted)"
            )
        if not isinstance(self.env_kwargs, dict):
            raise InvalidArgumentError(f"config field env_kwargs={self.env_kwargs!r}: expected a dict of env options")
        if not isinstance(self.output_dir, str) or not self.output_dir:
            raise InvalidArgumentError(f"config field output_dir={self.output_dir!r}: expected a folder path (a str)")
        self._check_sections()
        self._check_knobs()
        self._check_estimator()

    def _check_sections(self) -> None:
        """The checks that involve a section and another field."""
        backend = self.sampling.backend
        if backend == "vllm" and self.model == "tiny":
            raise InvalidArgumentError(
                "sampling.backend='vllm' with model='tiny': vLLM loads checkpoints from disk; pass model=<local "
                "checkpoint dir> (e.g. a Qwen2.5-0.5B-Instruct download) or use sampling.backend='hf'"
            )
        if backend != "vllm" and self.vllm.on_ray:
            raise InvalidArgumentError(
                f"config fields vllm.engines={self.vllm.engines}, vllm.tensor_parallel_size="
                f"{self.vllm.tensor_parallel_size} apply to sampling.backend='vllm' only, not {backend!r}: set "
                "sampling.backend='vllm' or leave them 1"
            )
        if self.role_adapters and not self.shared_model:
            raise InvalidArgumentError(
                "config fields role_adapters=True with shared_model=False: per-role adapters share one base model; "
                "leave shared_model=True (its default), or set role_adapters=False for one whole model per role"
            )
        if self.role_adapters and backend == "vllm" and self.vllm.on_ray:
            raise InvalidArgumentError(
                f"config fields role_adapters=True with vllm.engines={self.vllm.engines}, vllm.tensor_parallel_size="
                f"{self.vllm.tensor_parallel_size}: per-role adapters sample through one in-process vLLM engine with "
                "multi-LoRA (Ray engines with LoRA are not built); leave both 1, or set sampling.backend='hf'"
            )
        if self.ppo.role_lr and self.shared_model and not self.role_adapters:
            raise InvalidArgumentError(
                f"config field ppo.role_lr={self.ppo.role_lr!r} needs one model or adapter per role: set "
                "shared_model=False (--no-shared-model) or role_adapters=True"
            )

    def _check_knobs(self) -> None:
        """The estimators' numeric knobs, whichever estimator runs."""
        check_number("gamma", self.gamma, low=0.0)
        if self.gamma > 1:
            raise InvalidArgumentError(f"config field gamma={self.gamma!r}: expected a float in [0, 1] (GiGPO: 0.95)")
        check_number("omega", self.omega, low=0.0, hint="GiGPO: 1.0")
        check_number("spo_rho", self.spo_rho, low=0.0, inclusive=False)
        if not self.spo_rho < 1:
            raise InvalidArgumentError(f"config field spo_rho={self.spo_rho!r}: expected a float in (0, 1) (SPO: "
                                       "0.875)")
        bounds = self.spo_reward_range
        if not (isinstance(bounds, (list, tuple)) and len(bounds) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in bounds)
                and bounds[0] < bounds[1]):
            raise InvalidArgumentError(f"config field spo_reward_range={bounds!r}: expected [low, high] with finite "
                                       "low < high, e.g. [-2.5, 2.5]")
        self.spo_reward_range = (float(bounds[0]), float(bounds[1]))  # a JSON list loads as the saved tuple

    def _check_estimator(self) -> None:
        """The algo exists, the rollout can feed it, and the estimator accepts its knobs.

        Last, because the estimators are imported here: they need torch, and every other check answers without it.
        """
        from teamgym.train.columns import ROLLOUTS
        from teamgym.train.estimators import make_estimator, rollouts_for, spec_for, usable_names_text

        feeds = rollouts_for(self.algo)
        check_choice("rollout", self.rollout, ("auto", *ROLLOUTS))
        if self.rollout != "auto" and self.rollout not in feeds:
            raise InvalidArgumentError(
                f"config field rollout={self.rollout!r} cannot feed algo={self.algo!r} (it needs a {' or '.join(feeds)}"
                f" rollout): set rollout='auto' or {feeds[0]!r}, or pick an algo for a {self.rollout} rollout: "
                f"{usable_names_text(self.rollout)}"
            )
        make_estimator(self)  # the estimator's own checks (spo_reward, the tracker's rho)
        if spec_for(self.algo).role_adapters and not self.role_adapters:
            raise InvalidArgumentError(
                f"config field role_adapters=False with algo={self.algo!r}: it trains one LoRA adapter per role on a "
                "shared base; set role_adapters=True (TrainConfig.from_dict and the CLI do when it is left unset)"
            )
        mode = self.rollout_mode
        if self.algo in ("gigpo", "team_gigpo") and self.group_size < 2:
            raise InvalidArgumentError(
                f"config field group_size={self.group_size}: {self.algo} compares trajectories of the same task, "
                "expected group_size >= 2 (default 4)"
            )
        if self.algo in ("spo", "spo_per_agent") and self.spo_reward == "success" and mode == "tree":
            raise InvalidArgumentError(
                "config field spo_reward='success' with rollout='tree': a tree's unchosen candidates have no episode "
                "outcome of their own: set spo_reward='mixed' (with spo_reward_range) or rollout='trajectory'"
            )
        if spec_for(self.algo).continue_unchosen and mode == "tree" and self.tree.continue_unchosen is False:
            raise InvalidArgumentError(
                f"config field tree.continue_unchosen=False with algo={self.algo!r}: its tree values need every leaf "
                "to be a finished episode; set tree.continue_unchosen=true or leave it null"
            )
        if self.ppo.drop_zero_variance and mode != "tree":
            raise InvalidArgumentError(
                f"config field ppo.drop_zero_variance=True with a {mode} rollout: dynamic sampling drops tree nodes of "
                "equal rewards; set ppo.drop_zero_variance=False or use a tree estimator"
            )

    @property
    def tree_sampling(self) -> TreeSampling:
        """The ``tree`` section this config runs, ``continue_unchosen`` resolved (``None``: the algo's need)."""
        from teamgym.train.estimators import spec_for

        if self.tree.continue_unchosen is not None:
            return self.tree
        return replace(self.tree, continue_unchosen=spec_for(self.algo).continue_unchosen)

    @property
    def task_pool_size(self) -> int:
        """The pool of training tasks this config runs with: ``task_pool``, or for ``None`` the algo's need."""
        from teamgym.train.estimators import spec_for

        if self.task_pool is not None:
            return self.task_pool
        if spec_for(self.algo).recurring_tasks:
            return max(1, round(self.tasks_per_step / (1.0 - self.spo_rho)))
        return 0

    @property
    def rollout_mode(self) -> str:
        """The rollout this config runs: ``rollout``, or for ``auto`` the algo's preferred one."""
        from teamgym.train.estimators import rollouts_for

        return self.rollout if self.rollout != "auto" else rollouts_for(self.algo)[0]

    # ------------------------------------------------------------------ files
    def to_dict(self) -> dict[str, Any]:
        """The config as plain JSON values, sections as nested objects."""
        return asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> TrainConfig:
        """Build from a dict of field paths (nested section objects, ``"section.field"`` keys, or the flat names of
        :data:`LEGACY_NAMES`), naming unknown fields and the closest known ones. The fields it leaves unset take
        the algo's recipe (:data:`ALGO_RECIPES`, e.g. ``marft``'s ``ppo.ratio="action"``), then the dataclass
        defaults."""
        paths = normalize_paths(values)
        algo = paths.get("algo", cls.__dataclass_fields__["algo"].default)
        if isinstance(algo, str) and algo in ALGO_RECIPES:
            paths = {**ALGO_RECIPES[algo], **paths}
        top: dict[str, Any] = {}
        parts: dict[str, dict[str, Any]] = {name: {} for name in SECTIONS}
        for path, value in paths.items():
            section, _, name = path.rpartition(".")
            if section:
                parts[section][name] = value
            else:
                top[path] = value
        return cls(**top, **{name: SECTIONS[name](**part) for name, part in parts.items()})

    @classmethod
    def from_file(cls, path: str | Path) -> TrainConfig:
        """Load a JSON config file (keys as :meth:`from_dict` takes them)."""
        return cls.from_dict(read_config_file(path))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A JSON config file's own keys and values, unchecked (:meth:`TrainConfig.from_dict` checks them); a file that is
    not a JSON object is refused naming it."""
    try:
        values = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise InvalidArgumentError(f"config file {str(path)!r} could not be read as JSON ({err}): fix or "
                                   "regenerate it (the output dir's config.json is a valid example)") from None
    if not isinstance(values, dict):
        raise InvalidArgumentError(f"config file {str(path)!r} holds a {type(values).__name__}: expected an "
                                   "object of field names to values")
    return values


#: Each algo's recipe, ``{algo: {field path: value}}``: what :meth:`TrainConfig.from_dict` fills in for the fields a
#: config leaves unset. Here, not with the estimators, so that a config loads (and a bad one is refused) without torch;
#: :func:`teamgym.train.estimators.register_estimator` adds a spec's ``defaults``.
ALGO_RECIPES: dict[str, dict[str, Any]] = {
    # MARFT's (its code's defaults): per-role adapters, GAE lambda 0.95, action-level PPO (one ratio per completion,
    # averaged per action), entropy 0.01, PPO's plain clip
    "marft": {"role_adapters": True, "critic.lam": 0.95, "ppo.ratio": "action",
              "ppo.aggregation": "seq-mean-token-mean", "ppo.entropy_coef": 0.01, "ppo.dual_clip": None},
}


#: The sections of :class:`TrainConfig`: field name -> its dataclass.
SECTIONS: dict[str, type] = {"sampling": SamplingConfig, "tree": TreeSampling, "ppo": PPOConfig,
                             "critic": CriticConfig, "vllm": VLLMSettings}


def field_paths() -> dict[str, Any]:
    """Every field path of :class:`TrainConfig` (``"steps"``, ``"tree.k"``...) -> its ``dataclasses.Field``."""
    out: dict[str, Any] = {}
    for item in fields(TrainConfig):
        if item.name in SECTIONS:
            out.update({f"{item.name}.{sub.name}": sub for sub in fields(SECTIONS[item.name])})
        else:
            out[item.name] = item
    return out


def field_docs() -> dict[str, str]:
    """Every field path -> its documentation (the ``Attributes`` entry of its dataclass's docstring)."""
    docs = {path: text for path, text in _attribute_docs(TrainConfig).items() if path not in SECTIONS}
    for name, section in SECTIONS.items():
        docs.update({f"{name}.{sub}": text for sub, text in _attribute_docs(section).items()})
    return docs


def _attribute_docs(cls: type) -> dict[str, str]:
    """``{name: text}`` of the ``Attributes:`` entries of a Google-style class docstring."""
    text = (cls.__doc__ or "").split("Attributes:", 1)[-1]
    entries = re.findall(r"^        (\w+): (.*?)(?=^        \w+: |\Z)", text, flags=re.M | re.S)
    return {name: " ".join(body.split()) for name, body in entries}


#: Flat names of configs saved before the sections existed -> their paths (``alpha_mixer`` is translated into
#: ``alpha`` by :func:`normalize_paths`).
LEGACY_NAMES: dict[str, str] = {
    **{sub.name: f"{name}.{sub.name}" for name in ("sampling", "tree", "ppo") for sub in fields(SECTIONS[name])},
    **{f"vllm_{sub.name}": f"vllm.{sub.name}" for sub in fields(VLLMSettings)},
    "generator": "sampling.backend",
}


def normalize_paths(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` as ``{field path: value}``: nested section objects flattened, flat legacy names mapped to their
    paths, and the legacy ``alpha_mixer`` (``env`` | ``static`` | ``bandit``, with ``alpha`` for ``static``) folded
    into ``alpha``. Later keys win."""
    known = field_paths()
    out: dict[str, Any] = {}
    mixer = None
    for key, value in values.items():
        if key in SECTIONS and isinstance(value, Mapping):
            for sub, inner in value.items():
                out[_path(f"{key}.{sub}", known)] = inner
        elif key in SECTIONS and is_dataclass(value):
            out.update({f"{key}.{name}": inner for name, inner in asdict(value).items()})
        elif key == "alpha_mixer":
            mixer = value
        else:
            out[_path(key, known)] = value
    if mixer is not None:
        check_choice("alpha_mixer", mixer, ("env", "static", "bandit"))
        static = out.get("alpha", 1.0)
        out["alpha"] = mixer if mixer != "static" else (static if not isinstance(static, str) else 1.0)
    return out


def _path(name: str, known: Mapping[str, Any]) -> str:
    if name in known:
        return name
    if name in LEGACY_NAMES:
        return LEGACY_NAMES[name]
    guesses = closest_names(name, [*known, *LEGACY_NAMES, "alpha_mixer"])
    close = f"did you mean {' or '.join(repr(g) for g in guesses)}?" if guesses else "no field is close to it;"
    raise InvalidArgumentError(
        f"unknown config field {name!r}: {close} every field is listed by `teamgym train --help` (docs/training.md)"
    )


def _check_alpha(alpha: Any) -> None:
    def finite(value: Any) -> bool:
        return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)

    valid = alpha in ("env", "bandit") if isinstance(alpha, str) else finite(alpha) or (
        isinstance(alpha, dict) and all(isinstance(k, str) and finite(v) for k, v in alpha.items()))
    if not valid:
        raise InvalidArgumentError(
            f"config field alpha={alpha!r}: expected 'env' (the env's own rewards), 'bandit', a finite float or "
            "{agent: finite float} (1.0 = AT-GRPO's mixing)"
        )
