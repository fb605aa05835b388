"""The training config's own sections: how rollouts are sampled (:class:`SamplingConfig`), the policy update
(:class:`PPOConfig`), Turn-PPO's critic (:class:`CriticConfig`) and the learned process reward model
(:class:`PRMConfig`).

Plain dataclasses, each field documented and checked once on construction, in a module that imports no torch: with
:mod:`teamgym.rollout.settings` they let ``teamgym train`` build and validate its whole config before anything heavy
is imported. The update itself is :mod:`teamgym.train.update`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from teamgym.errors import InvalidArgumentError, check_choice, check_int, check_number
from teamgym.rollout.settings import BACKENDS

__all__ = ["AGGREGATIONS", "KL_REFERENCES", "PRM_LOSSES", "PRM_TARGETS", "PROMPT_FORMATS", "RATIOS", "CriticConfig",
           "PPOConfig", "PRMConfig", "SamplingConfig"]

#: The loss aggregations of ``teamgym.algos.aggregate``, spelled here so that the config loads without torch (a test
#: keeps the two equal).
AGGREGATIONS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm")

#: What one PPO ratio covers (``ppo.ratio``).
RATIOS = ("token", "action")

#: Learning-rate curves over a stage's steps (``ppo.lr_schedule``, ``sft_schedule``; ``trainer.lr_factor``).
LR_SCHEDULES = ("constant", "cosine")

#: What the KL term is taken against (``ppo.kl_reference``).
KL_REFERENCES = ("sampler", "reference")

#: The value targets a learned process reward model is fitted on (``prm.target``).
PRM_TARGETS = ("treerl", "masprm")

#: The values of ``TrainConfig.prompt_format`` (:mod:`teamgym.train.presets`; spelled here so that the config loads
#: without torch).
PROMPT_FORMATS = ("compact", "compact_feedback", "env", "chat")

#: What a learned process reward model's fit minimises (``prm.loss``; ``teamgym.wrappers.prm.PRM_LOSSES``, spelled
#: here so that the config loads without torch).
PRM_LOSSES = ("mse", "bce")


@dataclass(frozen=True)
class SamplingConfig:
    """How rollouts are sampled.

    Attributes:
        temperature: sampling temperature for training rollouts (evaluation is greedy, and also sampled at this
            temperature).
        max_new_tokens: completion budget (0 = the preset's).
        backend: what samples rollouts: ``hf`` (the trained transformers model itself) or ``vllm`` (vLLM engines per
            model, weights synced in place after every update as TRL's colocate mode; see the ``vllm`` section).
    """

    temperature: float = 1.0
    max_new_tokens: int = 0
    backend: str = "hf"

    def __post_init__(self) -> None:
        check_number("sampling.temperature", self.temperature, low=0.0)
        check_int("sampling.max_new_tokens", self.max_new_tokens, 0)
        check_choice("sampling.backend", self.backend, BACKENDS)


@dataclass(frozen=True)
class PPOConfig:
    """The policy update: PPO-clip per role, its optimizer and its loss.

    Attributes:
        lr: Adam learning rate of every role (1e-4: over five seeds of the main job 5e-4 fell below the warm start
            on four, 1e-4 rose above it on four; docs/training.md).
        lr_schedule: the learning rate over the RL steps: ``cosine`` (default: a linear warm-up over the first 5% of
            ``steps``, then a cosine decay to 5% of ``lr``, as the SFT warm start's ``cosine``; the main job's 400
            steps end on small updates instead of wherever a constant rate leaves them) or ``constant``. The rate of
            every step follows from its index, so a resumed run continues the same curve.
        role_lr: per-role learning rates overriding ``lr`` (needs ``shared_model=False`` or ``role_adapters``), e.g.
            ``{"tool": 1e-4}``.
        weight_decay: AdamW weight decay.
        micro_batch_size: rows per forward/backward pass (gradients are accumulated over the batch).
        epochs: passes over each rollout batch (AT-GRPO: 1).
        clip_low: PPO lower clip (0.2).
        clip_high: PPO upper clip (0.2 PPO; 0.28 DAPO clip-higher).
        dual_clip: dual-clip bound for negative advantages (AT-GRPO: 3.0; None disables).
        ratio: what one PPO ratio covers: ``token`` (each token's, as PPO for LLMs usually does) or ``action`` (one
            per completion, ``exp`` of its summed token log-prob difference: MARFT's action-level PPO, with
            ``aggregation="seq-mean-token-mean"``, which it needs, one clipped term per action).
        aggregation: loss aggregation of every loss term: ``token-mean`` (DAPO) | ``seq-mean-token-mean`` (GRPO) |
            ``seq-mean-token-sum-norm`` (Dr.GRPO: each sequence's token sum divided by the completion budget, a
            constant). The loss is the same whatever ``micro_batch_size``.
        kl_coef: weight of the k3 KL term (0 = none, as AT-GRPO and DAPO; GRPO: 0.04 with ``kl_reference=
            "reference"``).
        kl_reference: what the KL is taken against: ``sampler`` (the logprobs the rollout was sampled with: a
            trust-region penalty whose gradient is 0 on-policy, i.e. in the first epoch) or ``reference`` (GRPO's
            ``KL(pi_theta || pi_ref)``: a frozen copy of each model as RL starts, after the warm start, or the base
            model with its LoRA adapters disabled; :mod:`teamgym.train.reference`).
        entropy_coef: entropy bonus weight (0 = none).
        max_grad_norm: gradient clipping norm (also of the SFT warm start).
        drop_zero_variance: DAPO dynamic sampling: drop tree nodes whose rewards are all equal (they carry no
            gradient); tree rollouts only.
        agent_iteration_interval: 0 (default): every role's model steps on every update. N > 0: agent-by-agent
            training (MARFT's ``agent_iteration_interval``): RL step t updates only the model of role
            ``roles[(t // N) % len(roles)]`` (the env's ``possible_agents`` order), the others stay frozen, so each
            role learns against partners that hold still for N steps. Needs a model per role (``role_adapters`` or
            ``shared_model=False``); a learned critic still trains every step.
    """

    lr: float = 1e-4
    lr_schedule: str = "cosine"
    role_lr: dict[str, float] = field(default_factory=dict)
    weight_decay: float = 0.0
    micro_batch_size: int = 64
    epochs: int = 1
    clip_low: float = 0.2
    clip_high: float = 0.2
    dual_clip: float | None = 3.0
    ratio: str = "token"
    aggregation: str = "token-mean"
    kl_coef: float = 0.0
    kl_reference: str = "sampler"
    entropy_coef: float = 0.0
    max_grad_norm: float = 1.0
    drop_zero_variance: bool = False
    agent_iteration_interval: int = 0

    def __post_init__(self) -> None:
        check_int("ppo.micro_batch_size", self.micro_batch_size, 1)
        check_int("ppo.agent_iteration_interval", self.agent_iteration_interval, 0)
        check_int("ppo.epochs", self.epochs, 1)
        for name in ("lr", "max_grad_norm"):
            check_number(f"ppo.{name}", getattr(self, name), low=0.0, inclusive=False)
        for name in ("weight_decay", "kl_coef", "entropy_coef", "clip_high"):
            check_number(f"ppo.{name}", getattr(self, name), low=0.0)
        check_number("ppo.clip_low", self.clip_low, low=0.0)
        if not self.clip_low < 1:
            raise InvalidArgumentError(f"config field ppo.clip_low={self.clip_low!r}: expected a float in [0, 1), e.g. "
                                       "0.2")
        if self.dual_clip is not None and not (isinstance(self.dual_clip, (int, float)) and self.dual_clip > 1):
            raise InvalidArgumentError(f"config field ppo.dual_clip={self.dual_clip!r}: expected a float > 1 "
                                       "(AT-GRPO: 3.0) or None")
        check_choice("ppo.lr_schedule", self.lr_schedule, LR_SCHEDULES)
        check_choice("ppo.ratio", self.ratio, RATIOS)
        check_choice("ppo.aggregation", self.aggregation, AGGREGATIONS)
        if self.ratio == "action" and self.aggregation != "seq-mean-token-mean":
            raise InvalidArgumentError(
                f"config fields ppo.ratio='action' with ppo.aggregation={self.aggregation!r}: an action's one ratio "
                "would count once per token of it; set ppo.aggregation='seq-mean-token-mean' (one term per action)"
            )
        check_choice("ppo.kl_reference", self.kl_reference, KL_REFERENCES)
        if not isinstance(self.role_lr, dict):
            raise InvalidArgumentError(f"config field ppo.role_lr={self.role_lr!r}: expected a dict of role -> lr")
        for role, value in self.role_lr.items():
            check_number(f"ppo.role_lr[{role!r}]", value, low=0.0, inclusive=False)

    def lr_of(self, name: str) -> float:
        """The learning rate of the policy named ``name`` (a role, or ``shared``)."""
        return self.role_lr.get(name, self.lr)


@dataclass(frozen=True)
class CriticConfig:
    """The learned critic and its GAE over agent-turns (``algo="turn_ppo"`` and ``"marft"``; the others ignore it).

    Attributes:
        gamma: discount per agent-turn of the GAE (Turn-PPO: 0.99), in [0, 1]; each role's next own turn is one
            gamma away.
        lam: GAE's lambda (Turn-PPO: 0.9; ``marft``'s recipe sets MARFT's 0.95), in [0, 1].
        lr: Adam learning rate of the critic (1e-3), constant over the RL steps: ``ppo.lr_schedule`` shapes the
            policy's rate only.
        epochs: full-batch critic updates per rollout batch, each after the advantages are computed (4).
        value_clip: clip range of the value loss around the values the advantages used (0.2); None: no clipping.
        max_grad_norm: gradient clipping norm of the critic's updates.
        width: the critic's embedding and hidden width.
        buckets: hashed feature buckets for the prompt's tokens, token pairs and the role name.
        whiten: normalise each batch's advantages to mean 0 and std 1 (as verl's GAE does).
    """

    gamma: float = 0.99
    lam: float = 0.9
    lr: float = 1e-3
    epochs: int = 4
    value_clip: float | None = 0.2
    max_grad_norm: float = 1.0
    width: int = 64
    buckets: int = 4096
    whiten: bool = True

    def __post_init__(self) -> None:
        for name, source in (("gamma", "0.99"), ("lam", "0.9")):
            value = getattr(self, name)
            check_number(f"critic.{name}", value, low=0.0, hint=f"Turn-PPO: {source}")
            if value > 1:
                raise InvalidArgumentError(f"config field critic.{name}={value!r}: expected a float in [0, 1] "
                                           f"(Turn-PPO: {source})")
        for name in ("lr", "max_grad_norm"):
            check_number(f"critic.{name}", getattr(self, name), low=0.0, inclusive=False)
        check_int("critic.epochs", self.epochs, 1)
        check_int("critic.width", self.width, 1)
        check_int("critic.buckets", self.buckets, 2)
        if self.value_clip is not None:
            check_number("critic.value_clip", self.value_clip, low=0.0, inclusive=False,
                         hint="e.g. 0.2, or None for no clipping")
        if not isinstance(self.whiten, bool):
            raise InvalidArgumentError(f"config field critic.whiten={self.whiten!r}: expected true or false")


@dataclass(frozen=True)
class PRMConfig:
    """A process reward model (PRM) learned during RL from the sampling tree's Monte-Carlo values, whose score of each
    agent-turn is added to the reward the estimator sees (docs/training.md, "Process reward from a learned PRM";
    :mod:`teamgym.train.process_reward`). Needs a tree rollout; off by default.

    Attributes:
        weight: ``w`` in ``local += w * PRM(prompt + completion)`` for every row the estimator sees (0 = off, the
            default: no PRM is built, fitted or saved). MASPRM's use: the PRM's value at the step, not a difference.
        target: what the PRM is fitted on, per agent-turn node of the sampling tree: ``treerl`` (TreeRL's ``V(s)``,
            the mean success of the finished episodes below the node, in [0, 1]) or ``masprm`` (MASPRM's
            ``q_sum / visits`` with leaf rewards +1 solved / -1 not, in [-1, 1]).
        loss: what each fit minimises: ``mse`` (the PRM regresses on the targets; its output is the score) or ``bce``
            (MASPRM's: the output is a logit fitted by binary cross-entropy to the label ``target > m``, m the middle
            of the target's range, 0.5 for ``treerl``, 0 for ``masprm``; the score is the probability mapped back
            onto that range, ``p`` or ``2 p - 1``, so ``weight`` means the same under both).
        n_embd: the PRM's width (a GPT-2 regressor with a byte-level tokenizer built in code, no download).
        n_layer: the PRM's layers.
        n_head: the PRM's attention heads (must divide ``n_embd``).
        max_length: tokens (bytes) of ``prompt + completion`` the PRM reads; a longer text keeps its end, the
            completion.
        lr: AdamW learning rate of each fit.
        epochs: passes over the buffer per fit (one fit per RL step, after the step's scores are taken).
        batch_size: texts per PRM gradient step.
        buffer: the most recent (text, target) pairs kept to fit on (older ones are dropped first).
        warmup_steps: RL steps whose rollouts only fit the PRM: its scores enter the rewards from the step after
            ``warmup_steps`` fits on (0 = from the first step, with the untrained PRM).
    """

    weight: float = 0.0
    target: str = "treerl"
    loss: str = "mse"
    n_embd: int = 32
    n_layer: int = 2
    n_head: int = 2
    max_length: int = 256
    lr: float = 1e-3
    epochs: int = 2
    batch_size: int = 32
    buffer: int = 1024
    warmup_steps: int = 5

    def __post_init__(self) -> None:
        check_number("prm.weight", self.weight, low=0.0, hint="0 = off; e.g. 0.5 with --prm-weight 0.5")
        check_choice("prm.target", self.target, PRM_TARGETS)
        check_choice("prm.loss", self.loss, PRM_LOSSES)
        for name, low, example in (("n_embd", 1, 32), ("n_layer", 1, 2), ("n_head", 1, 2), ("max_length", 16, 256),
                                   ("epochs", 1, 2), ("batch_size", 1, 32), ("buffer", 1, 1024),
                                   ("warmup_steps", 0, 5)):
            check_int(f"prm.{name}", getattr(self, name), low, hint=f"e.g. --prm-{name.replace('_', '-')} {example}")
        if self.n_embd % self.n_head:
            raise InvalidArgumentError(
                f"config fields prm.n_embd={self.n_embd} and prm.n_head={self.n_head}: the heads split the width, so "
                "n_head must divide n_embd (e.g. --prm-n-embd 32 --prm-n-head 2)"
            )
        check_number("prm.lr", self.lr, low=0.0, inclusive=False, hint="e.g. 1e-3")

    @property
    def enabled(self) -> bool:
        """Whether a PRM is trained and used (``weight > 0``)."""
        return self.weight > 0
