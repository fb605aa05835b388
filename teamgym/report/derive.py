"""What the report shows that saved rows do not hold: advantages, prompt text and the flags of each row.

**Advantages.** The trainer does not save them with a batch, so the report recomputes them as the trainer did
(``teamgym.train.trainer``'s RL step): rows with an infrastructure error dropped, rewards re-mixed with the step's
alphas when the run used an alpha mixer (read back from ``metrics.jsonl``), then the run's estimator
(``compute_advantages``) on the run's rollout kind, then dynamic sampling's zero-variance nodes dropped when
``drop_zero_variance`` was set. The result is checked against the step's ``advantage/min`` and ``advantage/max`` in
``metrics.jsonl``. The stateful SPO trackers depend on every earlier step and are not recomputed. A row that holds
an ``advantage`` column is shown as saved.

**Prompts.** Batch rows hold the prompt's token ids; they are decoded with the run's tokenizer (the built-in
character tokenizer for ``model: "tiny"``, or a local checkpoint's).

**Flags.** ``format``: the row's ``format`` term is negative (the env's format penalty); ``infra``: the env's
infrastructure failed, the trainer dropped the row; ``clipped``: the completion reached the run's token budget
(``max_new_tokens``, or the env preset's); ``zero_variance``: dynamic sampling dropped the row's node.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from teamgym.errors import TeamGymError
from teamgym.report.columns import Turn

__all__ = ["FLAGS", "Advantages", "step_advantages", "prompt_decoder", "token_budget", "row_flags"]

logger = logging.getLogger(__name__)

#: Flag name -> bit of a row's flag mask (the page reads the same table).
FLAGS: dict[str, int] = {"format": 1, "infra": 2, "clipped": 4, "zero_variance": 8}


@dataclass
class Advantages:
    """The advantages of one step's rows.

    Attributes:
        values: one per row; None where there is none (dropped rows, or none could be computed).
        note: where they come from, or why there are none.
        zero_variance: one per row: dynamic sampling dropped the row's node.
    """

    values: list[float | None]
    note: str
    zero_variance: list[bool]


def step_advantages(
    raw: Sequence[dict[str, Any]],
    turns: Sequence[Turn],
    config: dict[str, Any] | None,
    metrics_row: dict[str, Any] | None,
) -> Advantages:
    """The advantages of one saved step's rows, saved or recomputed as the trainer computed them.

    Args:
        raw: the step's rows as saved.
        turns: the same rows read by :func:`~teamgym.report.columns.read_turn`.
        config: the run's ``config.json``, or None.
        metrics_row: the step's row of ``metrics.jsonl`` (alphas of an alpha mixer, advantage stats), or None.
    """
    nothing = [False] * len(turns)
    if turns and all(t.advantage is not None for t in turns):
        return Advantages([t.advantage for t in turns], "saved with the batch", nothing)
    if config is None:
        return Advantages([None] * len(turns), "unknown: no run config (config.json) to recompute them from", nothing)
    algo = str(config.get("algo"))
    try:
        return _recompute(raw, algo, config, metrics_row or {})
    except (TeamGymError, KeyError, TypeError, ValueError) as err:
        logger.warning("advantages of %s not recomputed: %s", algo, err)
        return Advantages([None] * len(turns), f"not recomputed ({algo}): {err}", nothing)


def _recompute(
    raw: Sequence[dict[str, Any]], algo: str, config: dict[str, Any], metrics_row: dict[str, Any]
) -> Advantages:
    import torch

    from teamgym.algos.losses import dynamic_sampling_mask
    from teamgym.rollout.batch import AgentTurnBatch
    from teamgym.train.advantages import compute_advantages, rollouts_for
    from teamgym.train.stateful import STATEFUL_ESTIMATORS
    from teamgym.train.trainer import remix_rewards

    count = len(raw)
    if algo in STATEFUL_ESTIMATORS:
        return Advantages(
            [None] * count, f"not recomputed: {algo} tracks a baseline across all earlier steps", [False] * count
        )
    batch = AgentTurnBatch.from_rows(list(raw))
    usable = torch.tensor([not e for e in batch.infra_error], dtype=torch.bool)
    train = batch.select(usable)
    mixer = config.get("alpha_mixer", "env")
    if mixer != "env":
        roles = set(train.agent).union(*[others.keys() for others in train.others_terms])
        alphas = {agent: metrics_row.get(f"alpha/{agent}") for agent in roles}
        if mixer == "static":
            alphas = {agent: float(config.get("alpha", 1.0)) for agent in alphas}
        if any(a is None for a in alphas.values()):
            raise ValueError(f"the {mixer} alpha mixer's alphas of this step are not in metrics.jsonl")
        remix_rewards(train, alphas)
    rollout = config.get("rollout", "auto")
    rollout = rollouts_for(algo)[0] if rollout == "auto" else rollout
    values = compute_advantages(
        algo, train, rollout=rollout, gamma=float(config.get("gamma", 0.95)), omega=float(config.get("omega", 1.0))
    )  # (train rows,)
    keep = torch.ones(len(train), dtype=torch.bool)
    if config.get("drop_zero_variance") and len(train):
        keep = dynamic_sampling_mask(train.rewards, train.group_ids())
    full: list[float | None] = [None] * count
    zero_variance = [False] * count
    for position, row in enumerate(usable.nonzero().flatten().tolist()):
        if keep[position]:
            full[row] = float(values[position])
        else:
            zero_variance[row] = True
    kept = values[keep]
    note = f"recomputed with {algo} ({rollout} rollout) from the saved rewards"
    logged = (metrics_row.get("advantage/min"), metrics_row.get("advantage/max"))
    if kept.numel() and None not in logged:
        matches = abs(float(kept.min()) - logged[0]) < 1e-3 and abs(float(kept.max()) - logged[1]) < 1e-3
        note += "; matches" if matches else "; DOES NOT match"
        note += f" the trainer's logged min/max ({logged[0]:.4g}, {logged[1]:.4g})"
    return Advantages(full, note, zero_variance)


def prompt_decoder(config: dict[str, Any] | None) -> Callable[[tuple[int, ...]], str] | None:
    """``ids -> prompt text`` with the run's tokenizer (memoised), or None when it cannot be loaded here."""
    model = (config or {}).get("model")
    try:
        if model == "tiny":
            from teamgym.rollout.tiny import char_tokenizer

            tokenizer = char_tokenizer()
        elif isinstance(model, str) and Path(model).is_dir():
            import transformers

            tokenizer = transformers.AutoTokenizer.from_pretrained(model, local_files_only=True)
        else:
            return None
    except (ImportError, OSError, ValueError) as err:
        logger.warning("prompts shown as token counts: the tokenizer of model %r did not load (%s)", model, err)
        return None
    memo: dict[tuple[int, ...], str] = {}

    def decode(ids: tuple[int, ...]) -> str:
        if ids not in memo:
            memo[ids] = tokenizer.decode(list(ids), skip_special_tokens=False)
        return memo[ids]

    return decode


def token_budget(config: dict[str, Any] | None) -> int | None:
    """The run's completion budget in tokens (``max_new_tokens``, or its env preset's), or None if unknown."""
    if not config:
        return None
    if config.get("max_new_tokens"):
        return int(config["max_new_tokens"])
    from teamgym.train.presets import get_preset

    return get_preset(str(config.get("env_id")), str(config.get("prompt_format", "compact"))).max_tokens


def row_flags(turn: Turn, budget: int | None, zero_variance: bool) -> int:
    """The flag mask of one row (bits of :data:`FLAGS`)."""
    mask = 0
    if turn.terms.get("format", 0.0) < 0:
        mask |= FLAGS["format"]
    if turn.infra_error:
        mask |= FLAGS["infra"]
    if budget is not None and turn.completion_tokens is not None and turn.completion_tokens >= budget:
        mask |= FLAGS["clipped"]
    if zero_variance:
        mask |= FLAGS["zero_variance"]
    return mask
