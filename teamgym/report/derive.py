"""What the report shows beyond the saved columns: advantages, prompt text and the flags of each row.

**Advantages.** The trainer saves each row's ``advantage`` with the batch (None for rows the update did not use) and
why a row was dropped (``dropped``: ``infra_error``, or ``zero_variance`` when dynamic sampling dropped its node).
Batches saved before advantages were saved show none.

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
    """The advantages of one step's rows, as the trainer saved them.

    Args:
        raw: the step's rows as saved.
        turns: the same rows read by :func:`~teamgym.report.columns.read_turn`.
        config: the run's ``config.json``, or None.
        metrics_row: the step's row of ``metrics.jsonl``, or None.
    """
    zero_variance = [row.get("dropped") == "zero_variance" for row in raw]
    if any(t.advantage is not None for t in turns) or any("advantage" in row for row in raw):
        algo = (config or {}).get("algo", "the run's estimator")
        return Advantages([t.advantage for t in turns], f"saved by the trainer ({algo})", zero_variance)
    return Advantages(
        [None] * len(turns), "not saved: batches written before the trainer saved advantages", zero_variance
    )


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
