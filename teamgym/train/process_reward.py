"""A process reward model (PRM) learned during RL from the sampling tree's Monte-Carlo values (direction B).

With ``prm.weight = w > 0`` (:class:`teamgym.train.sections.PRMConfig`), every RL step of a tree rollout:

1. **targets**: every agent-turn node of the sampling forest (every usable row: the K candidates of each node, and
   the continued unchosen candidates' rows, which ``tree.continue_unchosen`` plays on to the end so that every leaf is
   a finished episode) gets its Monte-Carlo value from :func:`prm_targets`: ``treerl``, TreeRL's ``V(s)``, the mean
   success (1 solved, 0 not) of the leaves below the node (:func:`teamgym.algos.tree_values`); ``masprm``, MASPRM's
   ``q_sum / visits`` with leaf rewards +1 / -1 (:func:`teamgym.algos.masprm_targets`), i.e. ``2 V(s) - 1``. A leaf's
   success is the verdict on the episode its step ended (the row's ``outcome``), which for an unchosen candidate
   differs from the episode's own ``success``;
2. **scores**: the PRM as it stands (fitted on earlier rollouts only) scores each row's text, ``prompt + completion``
   (:meth:`teamgym.wrappers.TransformersPRM.text`; the prompt decoded from the ids the policy saw), so a step's own
   outcome never leaks into its reward (with ``prm.loss = "bce"`` the PRM's output is a logit, and the score is its
   probability mapped onto the target's range, :func:`prm_scores`); the scores against the targets (``prm/corr``)
   measure how the PRM generalises to a rollout it has not been fitted on;
3. **reward**: once the PRM has been fitted ``warmup_steps`` times, every row the estimator sees gets the process term
   ``w * PRM(text)`` added to its ``local`` reward, as a reward term ``process`` (so ``rewards = alpha * team +
   local`` still holds, the contract of :class:`teamgym.wrappers.ProcessReward`). The term is the PRM's **value** at
   the step, MASPRM's use of its PRM, not a difference ``PRM(s_t) - PRM(s_{t-1})`` between an agent's consecutive
   steps: AT-GRPO compares the K candidates of one node, which share their previous step, so the two give the same
   group-relative advantages there, and the value keeps each row's term its own;
4. **fit**: the step's (text, target) pairs join a buffer of the ``prm.buffer`` most recent ones, and the PRM is
   fitted on the whole buffer (``prm.epochs`` passes, AdamW; :meth:`teamgym.wrappers.TransformersPRM.fit`): MSE on
   the targets, or with ``prm.loss = "bce"`` MASPRM's binary cross-entropy on the labels ``target > m``, m the middle
   of the target's range (:func:`prm_labels`).

Only training rollouts reach the PRM (the held-out evaluation never calls it, and :meth:`LearnedProcessReward.observe`
refuses held-out task ids). Its weights, the buffer and the fit count are saved in every checkpoint, so ``--resume``
continues exactly.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from teamgym.algos import masprm_targets, tree_values
from teamgym.errors import InvalidArgumentError, check_choice
from teamgym.rollout.batch import AgentTurnBatch
from teamgym.train.columns import sampling_forest
from teamgym.train.sections import PRM_LOSSES, PRM_TARGETS, PRMConfig

__all__ = ["TARGET_RANGES", "LearnedProcessReward", "PRMStep", "add_process_term", "leaf_success", "prm_labels",
           "prm_scores", "prm_targets", "prm_texts"]

#: The reward term the process reward is listed under (as :class:`teamgym.wrappers.ProcessReward`'s default).
TERM = "process"

#: The range of each ``prm.target``'s values: a ``bce`` PRM's labels split it in the middle, its scores span it.
TARGET_RANGES = {"treerl": (0.0, 1.0), "masprm": (-1.0, 1.0)}


def leaf_success(batch: AgentTurnBatch, parents: torch.Tensor) -> torch.Tensor:
    """``(N + E,)`` float64: 1.0 where a row's step ended a solved episode, else 0 (virtual roots: 0).

    Raises ``InvalidArgumentError`` when a leaf of the forest ``parents`` (:func:`teamgym.train.columns
    .sampling_forest`) is a row whose step did not end an episode: an unchosen candidate that was not played on, whose
    value is unknown (roll out with ``tree.continue_unchosen``).
    """
    n = len(batch)
    success = torch.zeros(parents.numel(), dtype=torch.float64)
    success[:n] = torch.tensor([float(bool(o.get("success", False))) for o in batch.outcome], dtype=torch.float64)
    ended = torch.zeros(parents.numel(), dtype=torch.bool)
    ended[:n] = torch.tensor([bool(o) for o in batch.outcome], dtype=torch.bool)
    ended[n:] = True  # a virtual root without rows is no agent-turn
    is_leaf = torch.bincount(parents + 1, minlength=parents.numel() + 1)[1:] == 0
    open_leaves = (is_leaf & ~ended).nonzero().flatten()
    if open_leaves.numel():
        i = int(open_leaves[0])
        raise InvalidArgumentError(
            f"row {i} (episode {batch.episode_id[i]!r}, step {int(batch.step[i])}, branch {int(batch.branch[i])}) is a "
            "leaf of the sampling tree whose step did not end an episode, so its value is unknown: the PRM's targets "
            "need every unchosen candidate played to the end (tree.continue_unchosen=true)"
        )
    return success


def prm_targets(batch: AgentTurnBatch, target: str = "treerl") -> torch.Tensor:
    """``(N,)`` float64 Monte-Carlo value target of every row of a tree batch (see the module docstring).

    Args:
        batch: a tree rollout's usable rows (:func:`teamgym.train.columns.usable_rows`), with the continued
            candidates' episodes.
        target: ``treerl`` (mean leaf success below the node, in [0, 1]) or ``masprm`` (mean of the +1 / -1 leaf
            rewards, in [-1, 1]).
    """
    check_choice("prm.target", target, PRM_TARGETS)
    n = len(batch)
    if n == 0:
        return torch.zeros(0, dtype=torch.float64)
    parents, _ = sampling_forest(batch)
    success = leaf_success(batch, parents)
    if target == "treerl":
        return tree_values(parents, success).value[:n]
    return masprm_targets(parents, 2.0 * success - 1.0)[:n]


def prm_labels(targets: torch.Tensor, target: str) -> torch.Tensor:
    """``(N,)`` float: 1.0 where a value target is above the middle of its range (``treerl``: 0.5, ``masprm``: 0, as
    MASPRM's BCE on ``target > 0``), else 0: what a ``bce`` PRM is fitted to."""
    check_choice("prm.target", target, PRM_TARGETS)
    low, high = TARGET_RANGES[target]
    return (targets > (low + high) / 2).to(targets.dtype)


def prm_scores(outputs: torch.Tensor, target: str, loss: str) -> torch.Tensor:
    """The PRM's score of each row from its outputs ``(N,)``: the output itself under ``mse`` (a value on the
    target's scale), the probability ``p = sigmoid(output)`` mapped onto the target's range under ``bce`` (``treerl``:
    ``p``, ``masprm``: ``2 p - 1``), so that ``prm.weight`` weighs the same scale under both losses."""
    check_choice("prm.target", target, PRM_TARGETS)
    check_choice("prm.loss", loss, PRM_LOSSES)
    if loss == "mse":
        return outputs
    low, high = TARGET_RANGES[target]
    return low + (high - low) * torch.sigmoid(outputs)


def prm_texts(batch: AgentTurnBatch, decode: Callable[[str, Sequence[int]], str]) -> list[str]:
    """The text the PRM reads for every row: the prompt its agent saw (``decode(agent, prompt_ids)``), then its
    completion, joined as :meth:`teamgym.wrappers.TransformersPRM.text` joins them."""
    from teamgym.wrappers.prm import TransformersPRM  # train does not import wrappers at module level

    return [TransformersPRM.text(decode(agent, ids), text)
            for agent, ids, text in zip(batch.agent, batch.prompt_ids, batch.text, strict=True)]


def add_process_term(batch: AgentTurnBatch, values: torch.Tensor) -> None:
    """Add ``values`` (``(N,)``, already weighted) to each row's ``local`` reward, in place: ``rewards`` grows by it,
    and each row's ``reward_terms`` (a copy: rows of other batches may share the dicts) gets it in ``local`` and in the
    term ``process``, so the terms still sum as the env contract says."""
    if values.numel() != len(batch):
        raise InvalidArgumentError(f"{values.numel()} process terms for {len(batch)} rows: give one per row")
    batch.rewards = batch.rewards + values.to(batch.rewards.dtype)
    terms = []
    for row, value in zip(batch.reward_terms, values.tolist(), strict=True):
        row = dict(row)
        row["local"] = row.get("local", 0.0) + value
        row[TERM] = row.get(TERM, 0.0) + value
        terms.append(row)
    batch.reward_terms = terms


@dataclass
class PRMStep:
    """What one RL step did with the PRM.

    Attributes:
        scores: ``(N,)`` float64, the PRM's score of each row given to :meth:`LearnedProcessReward.observe`, taken
            before that step's fit.
        targets: ``(N,)`` float64, the rows' Monte-Carlo value targets.
        active: whether the scores enter this step's rewards (the PRM had been fitted ``warmup_steps`` times).
        metrics: the ``prm/*`` columns of ``metrics.jsonl``.
    """

    scores: torch.Tensor
    targets: torch.Tensor
    active: bool
    metrics: dict[str, float]


class LearnedProcessReward:
    """The run's PRM, its buffer of (text, target) pairs and its fits (see the module docstring).

    Args:
        config: the ``prm`` section.
        seed: seeds the PRM's initial weights and each fit's shuffling (with the fit's index).
        device: where the PRM runs.
    """

    def __init__(self, config: PRMConfig, *, seed: int, device: str = "cpu"):
        from teamgym.wrappers.prm import TransformersPRM  # train does not import wrappers at module level

        self.config = config
        self.seed = seed
        self.prm = TransformersPRM.tiny(n_embd=config.n_embd, n_layer=config.n_layer, n_head=config.n_head,
                                        max_length=config.max_length, seed=seed, device=device)
        self.buffer: deque[tuple[str, float, Any]] = deque(maxlen=config.buffer)  # (text, target, task id)
        self.fits = 0

    @property
    def active(self) -> bool:
        """Whether the PRM's scores enter the rewards now (it has been fitted ``warmup_steps`` times)."""
        return self.fits >= self.config.warmup_steps

    def observe(self, batch: AgentTurnBatch, texts: Sequence[str], *, heldout: Collection[Any] = ()) -> PRMStep:
        """Score ``batch``'s rows with the PRM as it stands, then add their targets to the buffer and fit on it.

        Args:
            batch: a training tree rollout's usable rows (with the continued candidates' episodes).
            texts: each row's text (:func:`prm_texts`).
            heldout: the run's held-out task ids: a row of one is refused (the PRM never sees them).
        """
        if len(texts) != len(batch):
            raise InvalidArgumentError(f"{len(texts)} PRM texts for {len(batch)} rows: give one per row")
        held = {_key(h) for h in heldout}
        leaked = sorted({repr(t) for t in batch.task_id if _key(t) in held})
        if leaked:
            raise InvalidArgumentError(f"the PRM was given rows of held-out tasks {leaked[:3]}: it is fitted on "
                                       "training rollouts only (the held-out evaluation must not shape rewards)")
        active = self.active
        targets = prm_targets(batch, self.config.target)
        outputs = torch.tensor(self.prm.score_texts(list(texts)), dtype=torch.float64) if texts else torch.zeros(0)
        scores = prm_scores(outputs, self.config.target, self.config.loss)
        self.buffer.extend(zip(texts, targets.tolist(), batch.task_id, strict=True))
        tic = time.perf_counter()
        losses = [math.nan]
        if self.buffer:
            pairs = list(self.buffer)
            fit_on: list[float] | torch.Tensor = [p[1] for p in pairs]
            if self.config.loss == "bce":
                fit_on = prm_labels(torch.tensor(fit_on, dtype=torch.float64), self.config.target)
            losses = self.prm.fit([p[0] for p in pairs], fit_on, epochs=self.config.epochs, lr=self.config.lr,
                                  batch_size=self.config.batch_size, seed=self._fit_seed(), loss=self.config.loss)
            self.fits += 1
        metrics = {
            "prm/loss": float(losses[-1]),
            "prm/mean_score": float(scores.mean()) if scores.numel() else math.nan,
            "prm/target_mean": float(targets.mean()) if targets.numel() else math.nan,
            "prm/corr": pearson(scores, targets),
            "prm/active": float(active),
            "prm/buffer": float(len(self.buffer)),
            "prm/fit_seconds": time.perf_counter() - tic,
        }
        return PRMStep(scores, targets, active, metrics)

    def _fit_seed(self) -> int:
        """The shuffling seed of the next fit: a function of the run's seed and the fit's index."""
        return int(np.random.SeedSequence([self.seed, self.fits]).generate_state(1)[0])

    def state_dict(self) -> dict[str, Any]:
        return {"model": {k: v.detach().cpu().clone() for k, v in self.prm.model.state_dict().items()},
                "buffer": [list(pair) for pair in self.buffer], "fits": self.fits,
                "target": self.config.target, "loss": self.config.loss}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state.get("target") != self.config.target:
            raise InvalidArgumentError(
                f"the checkpoint's PRM was fitted on {state.get('target')!r} targets but this config says "
                f"prm.target={self.config.target!r}: resume with the run's own config.json"
            )
        loss = state.get("loss", "mse")  # a checkpoint from before prm.loss existed was fitted with the MSE
        if loss != self.config.loss:
            raise InvalidArgumentError(
                f"the checkpoint's PRM was fitted with the {loss!r} loss but this config says "
                f"prm.loss={self.config.loss!r}: resume with the run's own config.json"
            )
        self.prm.model.load_state_dict(state["model"])
        self.buffer = deque((tuple(pair) for pair in state["buffer"]), maxlen=self.config.buffer)
        self.fits = int(state["fits"])


def pearson(x: torch.Tensor, y: torch.Tensor) -> float:
    """The Pearson correlation of two ``(N,)`` tensors; NaN (written as null) when either is constant or N < 2."""
    if x.numel() < 2:
        return math.nan
    x, y = x.to(torch.float64) - x.double().mean(), y.to(torch.float64) - y.double().mean()
    norm = float(torch.sqrt((x * x).sum() * (y * y).sum()))
    return float((x * y).sum()) / norm if norm > 0 else math.nan


def _key(task_id: Any) -> Any:
    return task_id if isinstance(task_id, (str, int, tuple)) else repr(task_id)
