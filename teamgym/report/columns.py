"""The one place where the report reads the columns of saved rows: batch rows and Recorder records.

A saved batch row (``AgentTurnBatch.to_jsonl``) and a Recorder record (``teamgym.wrappers.recorder``) name the same
things differently (``text`` / ``action``, ``rewards`` / ``reward``...). :func:`read_turn` maps either onto one
:class:`Turn`; a renamed column is a one-line change in :data:`BATCH_COLUMNS` or :data:`RECORDER_COLUMNS`.
Columns marked optional may be missing (older files, other writers); the report then leaves that field empty.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from teamgym.errors import DatasetError

__all__ = ["BATCH_COLUMNS", "RECORDER_COLUMNS", "REQUIRED", "Turn", "read_turn", "row_format"]

#: Report field -> column of a saved batch row (``batches/step_N.jsonl``).
BATCH_COLUMNS: dict[str, str] = {
    "episode": "episode_id",
    "task": "task_id",
    "agent": "agent",
    "turn": "turn",
    "env_step": "step",
    "branch": "branch",
    "chosen": "chosen",
    "text": "text",
    "prompt": "prompt",
    "prompt_ids": "prompt_ids",
    "completion_ids": "completion_ids",
    "logprobs": "logprobs",
    "reward": "rewards",
    "terms": "reward_terms",
    "success": "success",
    "infra_error": "infra_error",
    "advantage": "advantage",
    "others": "others_rewards",
}
#: Report field -> key of a Recorder record.
RECORDER_COLUMNS: dict[str, str] = {
    "episode": "episode_id",
    "task": "task_id",
    "agent": "agent",
    "turn": "turn",
    "env_step": "step",
    "branch": "branch",
    "text": "action",
    "prompt": "prompt",
    "reward": "reward",
    "terms": "reward_terms",
    "off_turn_reward": "off_turn_reward",
}
#: Fields every row must have; all others are optional.
REQUIRED = ("episode", "agent", "reward")


@dataclass
class Turn:
    """One agent-turn as the report shows it (one candidate of a tree node).

    Attributes:
        episode: the episode id.
        agent: the acting role.
        reward: the mixed reward ``alpha * team + local`` the env gave this candidate.
        task: the task id (as text), or None.
        turn: the round index, or -1 when unknown.
        env_step: the step index in the episode (one tree node per step), or -1 when unknown.
        branch: the candidate's index in its node, or None for a row that is its own node.
        chosen: whether the episode advanced with this candidate (True for a row that is its own node).
        text: the completion.
        prompt: the prompt text, if the row holds it.
        prompt_ids: the prompt's token ids, if the row holds them (decoded by the report when a tokenizer is known).
        completion_tokens: completion length in tokens, if known.
        logprob_mean: mean sampling log-prob per completion token, if known.
        terms: the reward terms (``team``, ``local`` and its named parts).
        success: whether the episode's chosen path was solved, if known.
        infra_error: non-empty when the env's infrastructure failed (the trainer drops the row).
        advantage: the advantage the row holds, if the writer saved one.
        others: what the row's step gave other agents, ``{agent: reward}``.
    """

    episode: str
    agent: str
    reward: float
    task: str | None = None
    turn: int = -1
    env_step: int = -1
    branch: int | None = None
    chosen: bool = True
    text: str = ""
    prompt: str | None = None
    prompt_ids: tuple[int, ...] | None = None
    completion_tokens: int | None = None
    logprob_mean: float | None = None
    terms: dict[str, float] = field(default_factory=dict)
    success: bool | None = None
    infra_error: str = ""
    advantage: float | None = None
    others: dict[str, float] = field(default_factory=dict)


def row_format(row: Mapping[str, Any]) -> str:
    """``"recorder"`` for a Recorder record (it holds ``action``), else ``"batch"``."""
    return "recorder" if RECORDER_COLUMNS["text"] in row and BATCH_COLUMNS["text"] not in row else "batch"


def read_turn(row: Mapping[str, Any], where: str) -> Turn:
    """The :class:`Turn` of one saved row; ``where`` (``"file:line"``) names the row in errors.

    Raises:
        DatasetError: the row is not an object or lacks a required column.
    """
    if not isinstance(row, Mapping):
        raise DatasetError(f"{where} holds a {type(row).__name__}, not a JSON object: expected one agent-turn per line")
    kind = row_format(row)
    columns = RECORDER_COLUMNS if kind == "recorder" else BATCH_COLUMNS
    missing = [columns[name] for name in REQUIRED if columns[name] not in row]
    if missing:
        raise DatasetError(
            f"{where} lacks the columns {missing}: expected a saved batch row (teamgym train --set save_batches=true) "
            "or a Recorder record (teamgym.wrappers.Recorder)"
        )

    def get(name: str, default: Any = None) -> Any:
        column = columns.get(name)
        value = row.get(column) if column is not None else None
        return default if value is None else value

    completion_ids, logprobs = get("completion_ids"), get("logprobs")
    others = dict(get("others", {}))
    if kind == "recorder" and get("off_turn_reward", 0.0):
        others = {"(later steps)": float(get("off_turn_reward"))}
    branch = get("branch")
    return Turn(
        episode=str(get("episode")),
        agent=str(get("agent")),
        reward=float(get("reward")),
        task=None if get("task") is None else str(get("task")),
        turn=int(get("turn", -1)),
        env_step=int(get("env_step", -1)),
        branch=int(branch) if isinstance(branch, (int, float)) else None,
        chosen=bool(get("chosen", True)),
        text=str(get("text", "")),
        prompt=None if get("prompt") is None else str(get("prompt")),
        prompt_ids=tuple(get("prompt_ids")) if get("prompt_ids") is not None else None,
        completion_tokens=len(completion_ids) if completion_ids is not None else None,
        logprob_mean=_mean(logprobs) if logprobs else None,
        terms={str(k): float(v) for k, v in get("terms", {}).items()},
        success=None if get("success") is None else bool(get("success")),
        infra_error=str(get("infra_error", "")),
        advantage=None if get("advantage") is None else float(get("advantage")),
        others={str(k): float(v) for k, v in others.items()},
    )


def _mean(values: list[float]) -> float | None:
    finite = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else None
