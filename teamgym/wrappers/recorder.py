"""``Recorder``: one JSON line per agent-turn, and a loader back into the columnar agent-turn batch.

Each live step of the wrapped env becomes one record:

=================== ==========================================================================================
key                 meaning
=================== ==========================================================================================
``episode_id``      a uuid4 hex drawn at ``reset`` (unique across runs and processes)
``task_id``         the env's task id (``infos[agent]["task_id"]``)
``agent``, ``turn`` who acted, in which round (``infos[agent]["turn"]`` before the step)
``step``            the step's index in the episode (0, 1, ...)
``branch``          ``None`` (a tree-sampling engine sets its path in the sampling tree)
``prompt``          the prompt text the agent acted on (``observation["prompt"]``)
``messages``        the same prompt in chat format (``infos[agent]["messages"]`` before the step)
``action``          the completion, as given to ``step``
``reward``          the agent's reward from this step (as the wrapped layer reports it)
``reward_terms``    the terms of that reward (``infos[agent]["reward_terms"]``)
``off_turn_reward`` reward received at other agents' steps after this one, until it acted again or the episode
                    ended (``reward + off_turn_reward`` is what PettingZoo's ``last()`` hands the agent)
``done``            the episode was over after this step
=================== ==========================================================================================

Records are buffered and written when the episode ends (or at the next ``reset``/``close``, for an episode
left unfinished), each line by one ``os.write`` on a file opened with ``O_APPEND``: several runs and processes
can append to the same file. A snapshot includes the current episode's buffer, so ``restore`` rewinds the
record too.

>>> import os, tempfile
>>> from tests.support.relay_env import RelayEnv
>>> path = os.path.join(tempfile.mkdtemp(), "turns.jsonl")
>>> env = Recorder(RelayEnv(), path)
>>> env.reset(seed=0, options={"task_id": "apple"})
>>> env.step("The word is apple")
>>> env.step("apple")
>>> rows = load_records(path)
>>> [(r["agent"], r["turn"], r["reward"], r["done"]) for r in rows]
[('speaker', 0, 0.0, False), ('listener', 0, 1.0, True)]
>>> batch = to_batch(rows)
>>> batch["rewards"].tolist(), batch["group_ids"].tolist()
([0.0, 1.0], [0, 1])
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from pettingzoo import AECEnv

from teamgym.algos import at_grpo_group_ids, factorize
from teamgym.errors import DatasetError
from teamgym.wrappers.base import TextEnvWrapper

__all__ = ["Recorder", "load_records", "to_batch", "RECORD_KEYS"]

#: The keys of every record, in the order they are written.
RECORD_KEYS = (
    "episode_id",
    "task_id",
    "agent",
    "turn",
    "step",
    "branch",
    "prompt",
    "messages",
    "action",
    "reward",
    "reward_terms",
    "off_turn_reward",
    "done",
)


class Recorder(TextEnvWrapper):
    """Writes one JSON line per agent-turn to ``path`` (see the module docstring for the record).

    Args:
        env: the env (or wrapper) to record; its rewards and terms are recorded as that layer reports them.
        path: the JSON-lines file, created if absent, appended to otherwise.
        fsync: ``os.fsync`` after each episode's lines (durable against power loss; slower).

    Example:
        >>> import os, tempfile
        >>> from tests.support.tally_env import TallyEnv
        >>> path = os.path.join(tempfile.mkdtemp(), "turns.jsonl")
        >>> env = Recorder(TallyEnv(), path)
        >>> env.reset(seed=0, options={"task_id": 0})
        >>> for action in ["7", "3"]:
        ...     env.step(action)
        >>> [(r["agent"], r["reward_terms"]["team"]) for r in load_records(path)]
        [('alice', 0.0), ('bob', 1.0)]
    """

    def __init__(self, env: AECEnv, path: str | os.PathLike[str], *, fsync: bool = False):
        super().__init__(env)
        self.path = Path(path)
        self.fsync = fsync
        self.episode_id: str | None = None
        self._rows: list[dict[str, Any]] = []
        self._last_row: dict[str, int] = {}

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.flush()
        self.env.reset(seed=seed, options=options)
        self.episode_id = uuid.uuid4().hex
        self._rows, self._last_row = [], {}

    def step(self, action: Any) -> None:
        agent, live = self._live_selection()
        if not live or not isinstance(action, str):
            self.env.step(action)  # dead steps, and the wrapped env's error for a bad action
            return
        observation = self.env.observe(agent)
        before = self.env.infos[agent]
        row: dict[str, Any] = {
            "episode_id": self.episode_id,
            "task_id": before.get("task_id"),
            "agent": agent,
            "turn": before.get("turn"),
            "step": len(self._rows),
            "branch": None,
            "prompt": observation.get("prompt", "") if isinstance(observation, Mapping) else str(observation),
            "messages": before.get("messages"),
            "action": action,
        }
        self.env.step(action)
        done = not self.env.agents or all(
            self.env.terminations[a] or self.env.truncations[a] for a in self.env.agents
        )
        row.update(
            reward=float(self.env.rewards[agent]),
            reward_terms=dict(self.env.infos[agent]["reward_terms"]),
            off_turn_reward=0.0,
            done=done,
        )
        for other, index in self._last_row.items():
            if other != agent and other in self.env.rewards:
                self._rows[index]["off_turn_reward"] += float(self.env.rewards[other])
        self._last_row[agent] = len(self._rows)
        self._rows.append(row)
        if done:
            self.flush()

    def close(self) -> None:
        self.flush()
        super().close()

    def flush(self) -> None:
        """Append the buffered records to the file now (one ``os.write`` per line) and empty the buffer."""
        if not self._rows:
            return
        lines = [_encode(row) for row in self._rows]
        self._rows, self._last_row = [], {}
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            for line in lines:
                written = os.write(fd, line)
                while written < len(line):  # a short write (a full disk, a signal): finish the line
                    written += os.write(fd, line[written:])
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def _get_state(self) -> Any:
        return {"episode_id": self.episode_id, "rows": self._rows, "last_row": self._last_row}

    def _set_state(self, state: Any) -> None:
        self.episode_id, self._rows, self._last_row = state["episode_id"], state["rows"], state["last_row"]


def _encode(row: Mapping[str, Any]) -> bytes:
    try:
        return (json.dumps(row, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    except (
        UnicodeEncodeError
    ):  # a lone surrogate in an action: JSON's \\u escapes keep it, and the line valid UTF-8
        return (json.dumps(row, ensure_ascii=True, default=str) + "\n").encode("ascii")


def load_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every record in a Recorder file, in file order. Raises ``DatasetError`` naming a malformed line."""
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise DatasetError(
                    f"{path}:{number} is not a JSON line ({err}): the file was cut mid-write or is not "
                    "a Recorder file; delete or repair that line"
                ) from None
            missing = [key for key in RECORD_KEYS if not isinstance(record, dict) or key not in record]
            if missing:
                raise DatasetError(
                    f"{path}:{number} lacks the record keys {missing}: expected {list(RECORD_KEYS)}"
                )
            records.append(record)
    return records


def to_batch(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The records as columns, spelled as the rollout batch's (:class:`teamgym.rollout.AgentTurnBatch`) and the
    estimators' columns (:mod:`teamgym.train.columns`) are.

    Returns:
        Lists for ``episode_id``, ``task_id``, ``agent``, ``branch``, ``prompt``, ``messages``, ``action``,
        ``reward_terms``; tensors ``rewards``, ``off_turn_rewards`` (float32), ``turn``, ``step`` (int64),
        ``done`` (bool), ``term_<name>`` (float32, 0 where a record lacks the term) for every term name,
        ``group_ids`` (int64, AT-GRPO's group key (task, agent, turn): :func:`teamgym.algos.at_grpo_group_ids`, the
        function the rollout batch numbers its tree nodes with) and ``episode_ids`` (int64, dense ids of
        ``episode_id``).
    """
    rows = list(records)
    batch: dict[str, Any] = {
        key: [row[key] for row in rows]
        for key in (
            "episode_id",
            "task_id",
            "agent",
            "branch",
            "prompt",
            "messages",
            "action",
            "reward_terms",
        )
    }
    batch["rewards"] = torch.tensor([float(row["reward"]) for row in rows], dtype=torch.float32)  # (N,)
    batch["off_turn_rewards"] = torch.tensor(
        [float(row["off_turn_reward"]) for row in rows], dtype=torch.float32
    )
    batch["turn"] = torch.tensor([int(row["turn"]) for row in rows], dtype=torch.int64)  # (N,)
    batch["step"] = torch.tensor([int(row["step"]) for row in rows], dtype=torch.int64)  # (N,)
    batch["done"] = torch.tensor([bool(row["done"]) for row in rows], dtype=torch.bool)  # (N,)
    names = sorted({name for row in rows for name in row["reward_terms"]})
    for name in names:
        batch[f"term_{name}"] = torch.tensor(
            [float(row["reward_terms"].get(name, 0.0)) for row in rows], dtype=torch.float32
        )
    tasks = [_hashable(task) for task in batch["task_id"]]
    batch["group_ids"] = (
        at_grpo_group_ids(tasks, batch["agent"], batch["turn"]) if rows else torch.zeros(0, dtype=torch.int64)
    )
    batch["episode_ids"] = factorize(batch["episode_id"])[0] if rows else torch.zeros(0, dtype=torch.int64)
    return batch


def _hashable(value: Any) -> Any:
    """JSON turns tuples into lists; key columns need hashables."""
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value
