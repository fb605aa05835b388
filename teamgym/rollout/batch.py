"""``AgentTurnBatch``: the columnar batch of agent-turns a rollout emits (one row per sampled completion).

Columns follow ARCHITECTURE.md's data model. Rows of one tree node (the K candidates one agent sampled at one step of
one episode from one env state) share ``episode_id``, ``agent``, ``turn`` and ``step``; ``branch`` is the candidate's
index in the node and ``chosen`` marks the one the episode advanced with. :meth:`AgentTurnBatch.node_ids` numbers the
nodes with AT-GRPO's group key (:func:`teamgym.algos.at_grpo_group_ids`). Advantage estimators read columns built
from the batch (:mod:`teamgym.train.columns`); they never see envs.

``others_terms`` / ``others_rewards`` hold what a candidate's step gave the *other* agents (``plan_path``'s tool
receives the team term on the planner's step): the trajectory columns credit it to the receiving agent's turns
(:mod:`teamgym.train.columns`). ``fork`` links the rows of a continued candidate (``TreeSampling.continue_unchosen``:
an episode of its own, played on from an unchosen candidate's state) to that candidate. ``outcome`` says whether the
episode a row's step ended was solved (a learned process reward's tree-value targets read it at the sampling tree's
leaves, :mod:`teamgym.train.process_reward`). Rows or constructors without these columns (older JSONL, external
callers) get empty dicts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import torch

from teamgym.algos import at_grpo_group_ids
from teamgym.algos import group_ids as build_group_ids
from teamgym.errors import InvalidArgumentError

__all__ = ["AgentTurnBatch", "OPTIONAL_COLUMNS"]

#: Columns a row or a constructor may leave out (each row then holds an empty dict).
OPTIONAL_COLUMNS = ("others_terms", "others_rewards", "fork", "outcome")


@dataclass
class AgentTurnBatch:
    """One row per sampled agent-turn completion.

    Attributes:
        episode_id: the episode (one env instance and one task) the row belongs to.
        task_id: the env's task id (seed or problem id); every episode plays one task.
        agent: the role that acted.
        turn: the round index in the episode.  # (N,)
        step: the env step index in the episode (one node of the sampling tree per step).  # (N,)
        branch: the candidate's index among the node's K candidates.  # (N,)
        chosen: whether the episode advanced with this candidate.  # (N,)
        prompt_ids, completion_ids, logprobs: token ids and sampling log-probs, one list per row.
        text: the decoded completion.
        reward_terms: the env's reward terms for the acting agent in this step (``team``, ``local``, parts).
        rewards: the final mixed reward ``alpha * team + local`` the env gave the candidate.  # (N,)
        anchor: a hash of the observation the agent acted on (equal observations, equal anchors).
        success: whether the episode (its chosen path) was solved.  # (N,)
        infra_error: non-empty when the env's infrastructure failed scoring this row (drop it from training).
        others_terms: ``{agent: reward terms}`` the env gave every *other* live agent in this row's step, only
            agents that received something (a term or their reward not 0); ``{}`` when none did.
        others_rewards: ``{agent: reward}`` of the same agents (the env's ``rewards[agent]``; the trainer's alpha
            mixer re-mixes them from ``others_terms`` with each receiving agent's alpha).
        fork: ``{}``, or for the rows of a continued candidate's episode ``{"episode_id", "step", "branch"}``: the
            candidate it continues (its state is where this episode's first row acted).
        outcome: ``{}``, or ``{"success": bool}`` when the row's step ended an episode: whether that episode was
            solved (for an unchosen candidate, the episode it would have ended; ``success`` follows the chosen path).
    """

    episode_id: list[str]
    task_id: list[Any]
    agent: list[str]
    turn: torch.Tensor
    step: torch.Tensor
    branch: torch.Tensor
    chosen: torch.Tensor
    prompt_ids: list[list[int]]
    completion_ids: list[list[int]]
    logprobs: list[list[float]]
    text: list[str]
    reward_terms: list[dict[str, float]]
    rewards: torch.Tensor
    anchor: list[str]
    success: torch.Tensor
    infra_error: list[str]
    others_terms: list[dict[str, dict[str, float]]] = field(default_factory=list)
    others_rewards: list[dict[str, float]] = field(default_factory=list)
    fork: list[dict[str, Any]] = field(default_factory=list)
    outcome: list[dict[str, bool]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for name in OPTIONAL_COLUMNS:  # left out by the caller: nothing received on other agents' steps
            if not getattr(self, name) and self.episode_id:
                setattr(self, name, [{} for _ in self.episode_id])
        lengths = {f.name: len(getattr(self, f.name)) for f in fields(self)}
        if len(set(lengths.values())) > 1:
            raise InvalidArgumentError(f"AgentTurnBatch columns differ in length: {lengths}: give one entry per row")

    def __len__(self) -> int:
        return len(self.episode_id)

    @classmethod
    def from_rows(cls, rows: Sequence[dict[str, Any]]) -> AgentTurnBatch:
        """Build the columns from row dicts keyed by column name (``others_terms`` / ``others_rewards`` may be
        missing: ``{}``)."""
        columns: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in OPTIONAL_COLUMNS:
                values = [row.get(f.name) or {} for row in rows]
            else:
                values = [row[f.name] for row in rows]
            if f.name in ("turn", "step", "branch"):
                columns[f.name] = torch.tensor(values, dtype=torch.long)
            elif f.name in ("chosen", "success"):
                columns[f.name] = torch.tensor(values, dtype=torch.bool)
            elif f.name == "rewards":
                columns[f.name] = torch.tensor(values, dtype=torch.float32)
            else:
                columns[f.name] = values
        return cls(**columns)

    @classmethod
    def concat(cls, batches: Sequence[AgentTurnBatch]) -> AgentTurnBatch:
        """Rows of all ``batches`` in order."""
        return cls.from_rows([row for b in batches for row in b.rows()])

    def rows(self) -> list[dict[str, Any]]:
        """The batch as a list of plain row dicts (tensors turned into Python numbers)."""
        out = []
        for i in range(len(self)):
            row = {}
            for f in fields(self):
                value = getattr(self, f.name)[i]
                row[f.name] = value.item() if isinstance(value, torch.Tensor) else value
            out.append(row)
        return out

    def select(self, mask: torch.Tensor | Sequence[bool]) -> AgentTurnBatch:
        """The rows where ``mask`` is true, in order."""
        keep = torch.as_tensor(mask, dtype=torch.bool)
        if keep.numel() != len(self):
            raise InvalidArgumentError(f"mask has {keep.numel()} entries for {len(self)} rows: one per row")
        index = keep.nonzero().flatten().tolist()
        columns = {}
        for f in fields(self):
            value = getattr(self, f.name)
            columns[f.name] = value[keep] if isinstance(value, torch.Tensor) else [value[i] for i in index]
        return type(self)(**columns)

    def node_ids(self) -> torch.Tensor:
        """Dense int64 ids of the tree nodes ``(N,)``: AT-GRPO's (task, agent, turn) group key, with the episode as
        the task (one tree per episode, so a task drawn twice gives two trees) and the env step as the turn (an agent
        that acts twice in a round gets two nodes)."""
        if len(self) == 0:
            return torch.zeros(0, dtype=torch.long)
        return at_grpo_group_ids(self.episode_id, self.agent, self.step)

    def group_ids(self, keys: Sequence[str]) -> torch.Tensor:
        """Dense int64 group ids from key columns, e.g. ``("task_id", "anchor")``."""
        unknown = [k for k in keys if k not in {f.name for f in fields(self)}]
        if unknown:
            raise InvalidArgumentError(f"unknown key columns {unknown}: choose from {[f.name for f in fields(self)]}")
        if len(self) == 0:
            return torch.zeros(0, dtype=torch.long)
        return build_group_ids(*[_key_column(getattr(self, k)) for k in keys])

    def num_tokens(self) -> int:
        """Completion tokens in the batch."""
        return sum(len(c) for c in self.completion_ids)

    def to_jsonl(self, path: str | Path, extra: Mapping[str, Sequence[Any]] | None = None) -> None:
        """Write one JSON object per row (for inspection; task ids that JSON cannot hold are written as strings).

        Args:
            path: the file to write.
            extra: more columns, one value per row (e.g. the trainer's ``advantage``).
        """
        extra = dict(extra or {})
        for name, values in extra.items():
            if len(values) != len(self):
                raise ValueError(f"extra column {name!r} has {len(values)} values for {len(self)} rows")
        with open(path, "w", encoding="utf-8") as fh:
            for index, row in enumerate(self.rows()):
                row.update({name: values[index] for name, values in extra.items()})
                fh.write(json.dumps(row, default=str) + "\n")


def _key_column(values: Any) -> Any:
    if isinstance(values, torch.Tensor):
        return values
    return [v if isinstance(v, (str, int, tuple)) else repr(v) for v in values]
