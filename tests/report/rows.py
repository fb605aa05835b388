"""Hand-made saved batch rows and run directories for the report tests (the layout ``teamgym train`` writes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def batch_row(**overrides: Any) -> dict[str, Any]:
    """One row as ``AgentTurnBatch.to_jsonl`` writes it (a tool candidate of plan_path-v0 by default)."""
    row = {
        "episode_id": "s0-0",
        "task_id": 7,
        "agent": "tool",
        "turn": 0,
        "step": 0,
        "branch": 0,
        "chosen": True,
        "prompt_ids": [10, 11, 12],
        "completion_ids": [20, 21],
        "logprobs": [-0.5, -1.5],
        "text": "print(1)",
        "reward_terms": {"team": 0.0, "local": 1.0},
        "rewards": 1.0,
        "anchor": "a",
        "success": True,
        "infra_error": "",
        "others_terms": {},
        "others_rewards": {},
    }
    row.update(overrides)
    return row


def node_rows(
    episode: str, step: int, agent: str, rewards: list[float], chosen: int = 0, **overrides: Any
) -> list[dict[str, Any]]:
    """The K candidates of one tree node (K = len(rewards))."""
    return [
        batch_row(
            **{
                "episode_id": episode,
                "step": step,
                "agent": agent,
                "branch": b,
                "chosen": b == chosen,
                "rewards": r,
                "reward_terms": {"team": 0.0, "local": r},
                "text": f"{agent} {episode} {step} candidate {b}",
                **overrides,
            }
        )
        for b, r in enumerate(rewards)
    ]


def write_run(
    directory: Path,
    steps: dict[int, list[dict[str, Any]]],
    config: dict[str, Any] | None = None,
    metrics: list[dict[str, Any]] | None = None,
) -> Path:
    """A run directory: ``config.json``, ``metrics.jsonl`` and ``batches/step_N.jsonl`` for each step given."""
    (directory / "batches").mkdir(parents=True, exist_ok=True)
    config = (
        {
            "env_id": "plan_path-v0",
            "algo": "at_grpo",
            "rollout": "auto",
            "model": "tiny",
            "max_new_tokens": 0,
            "prompt_format": "compact",
            "alpha_mixer": "env",
        }
        if config is None
        else config
    )
    (directory / "config.json").write_text(json.dumps(config))
    rows = [{"step": s, "success": 0.5} for s in steps] if metrics is None else metrics
    (directory / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for step, batch in steps.items():
        (directory / "batches" / f"step_{step:06d}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in batch))
    return directory
