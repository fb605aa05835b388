"""Find and read what a report shows: a run directory, its ``batches/``, one batch file, or a Recorder JSONL file.

A run directory is what ``teamgym train --output-dir D`` writes: ``config.json``, ``metrics.jsonl``, ``summary.json``
and, with ``--set save_batches=true``, ``batches/step_N.jsonl`` (one line per agent-turn of RL step N). A Recorder
file (``teamgym.wrappers.Recorder``) holds one record per live env step of any number of episodes.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from teamgym.errors import DatasetError, InvalidArgumentError
from teamgym.report.columns import Turn, read_turn, row_format

__all__ = ["Source", "StepRows", "load_source", "BATCH_FILE"]

#: Saved batch files: ``step_000012.jsonl`` holds the rows of RL step 12.
BATCH_FILE = re.compile(r"^step_(\d+)\.jsonl$")


@dataclass
class StepRows:
    """The rows of one RL step (or of a whole Recorder file, ``step=None``).

    Attributes:
        step: the RL step, or None for a Recorder file.
        path: the file the rows come from.
        raw: the rows as saved (the advantage estimators read these).
        turns: the same rows as :class:`~teamgym.report.columns.Turn`.
    """

    step: int | None
    path: Path
    raw: list[dict[str, Any]]
    turns: list[Turn]


@dataclass
class Source:
    """What one ``teamgym inspect PATH`` reads.

    Attributes:
        path: the PATH given.
        kind: ``"run"`` (a run directory or its batch files) or ``"recorder"``.
        steps: the selected steps' rows, oldest first.
        available_steps: every RL step with a saved batch.
        run_dir: the run directory, if PATH is or lies in one.
        config: the run's ``config.json``, if any.
        metrics: the rows of the run's ``metrics.jsonl`` (empty if none).
        summary: the run's ``summary.json``, if any.
        notes: what was left out and why (shown at the top of the report).
    """

    path: Path
    kind: str
    steps: list[StepRows]
    available_steps: list[int] = field(default_factory=list)
    run_dir: Path | None = None
    config: dict[str, Any] | None = None
    metrics: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


def load_source(path: str | Path, *, step: int | None = None, max_rows: int = 20_000) -> Source:
    """Read PATH: a run directory, its ``batches/`` directory, one ``step_N.jsonl`` or a Recorder JSONL file.

    Args:
        path: what to read.
        step: only this RL step (run directories); default: the newest steps whose rows fit in ``max_rows``.
        max_rows: the most agent-turns to read (whole steps, or whole episodes of a Recorder file; at least one
            step is always read, cut to ``max_rows`` rows in whole episodes if it is larger).

    Raises:
        InvalidArgumentError: PATH does not exist, holds nothing to show, or ``step`` is not saved there.
        DatasetError: a file is not JSON lines of agent-turns.
    """
    path = Path(path)
    if max_rows < 1:
        raise InvalidArgumentError(f"--max-rows {max_rows}: expected an integer >= 1")
    if not path.exists():
        raise InvalidArgumentError(
            f"PATH {str(path)!r} does not exist: pass a run directory (teamgym train "
            "--output-dir) or a JSONL file of agent-turns"
        )
    if path.is_dir():
        run_dir, files = _run_layout(path)
        if not files and run_dir is None:
            raise InvalidArgumentError(
                f"PATH {str(path)!r} holds no batches/step_N.jsonl and no metrics.jsonl: pass the --output-dir of a "
                "teamgym train run saved with --set save_batches=true, or a Recorder JSONL file"
            )
    elif (match := BATCH_FILE.match(path.name)) is not None:
        files = {int(match.group(1)): path}
        run_dir = path.parent.parent if path.parent.name == "batches" and _is_run_dir(path.parent.parent) else None
    elif _first_row_format(path) == "recorder":
        if step is not None:
            raise InvalidArgumentError(
                f"--step {step}: {str(path)!r} is a Recorder file, which has no RL steps; leave --step out"
            )
        return _recorder_source(path, max_rows)
    else:
        files, run_dir = {0: path}, None
    source = Source(path=path, kind="run", steps=[], available_steps=sorted(files), run_dir=run_dir)
    if run_dir is not None:
        source.config = _read_json(run_dir / "config.json")
        source.summary = _read_json(run_dir / "summary.json")
        source.metrics = _read_metrics(run_dir / "metrics.jsonl")
    if not files:
        if step is not None:
            raise InvalidArgumentError(
                f"--step {step}: {str(path)!r} has no saved batches: rerun the training with --set save_batches=true"
            )
        source.notes.append(
            "no batches were saved in this run (train with --set save_batches=true to see the "
            "rollouts): learning curves and config only"
        )
        return source
    source.steps = _select_steps(files, step, max_rows, source.notes)
    return source


def _run_layout(path: Path) -> tuple[Path | None, dict[int, Path]]:
    """``(run dir or None, {step: batch file})`` of a run directory or of its ``batches/`` directory."""
    if (path / "batches").is_dir() or _is_run_dir(path):
        batches = path / "batches"
        return path, _batch_files(batches) if batches.is_dir() else {}
    files = _batch_files(path)
    run_dir = path.parent if files and _is_run_dir(path.parent) else None
    return run_dir, files


def _is_run_dir(path: Path) -> bool:
    return (path / "metrics.jsonl").is_file() or (path / "config.json").is_file()


def _batch_files(directory: Path) -> dict[int, Path]:
    files = {}
    for child in directory.iterdir():
        match = BATCH_FILE.match(child.name)
        if match is not None and child.is_file():
            files[int(match.group(1))] = child
    return files


def _select_steps(files: dict[int, Path], step: int | None, max_rows: int, notes: list[str]) -> list[StepRows]:
    if step is not None:
        if step not in files:
            raise InvalidArgumentError(
                f"--step {step}: no batch saved for that step; saved steps: {_ranges(sorted(files))}"
            )
        chosen = [step]
    else:
        chosen, total = [], 0
        for candidate in sorted(files, reverse=True):
            lines = _count_lines(files[candidate])
            if chosen and total + lines > max_rows:
                break
            chosen.append(candidate)
            total += lines
        chosen.reverse()
        if len(chosen) < len(files):
            notes.append(
                f"showing steps {_ranges(chosen)} of {_ranges(sorted(files))} (the newest that fit "
                f"--max-rows {max_rows}); pick one with --step N"
            )
    steps = []
    for number in chosen:
        raw = _read_rows(files[number])
        if len(raw) > max_rows:
            raw = _whole_episodes(raw, max_rows)
            notes.append(f"step {number}: showing the first {len(raw)} rows in whole episodes (--max-rows {max_rows})")
        steps.append(StepRows(number, files[number], raw, _turns(raw, files[number])))
    return steps


def _recorder_source(path: Path, max_rows: int) -> Source:
    from teamgym.wrappers.recorder import load_records

    raw = load_records(path)
    notes = []
    if len(raw) > max_rows:  # the newest episodes: a Recorder file grows by appending
        kept = list(reversed(_whole_episodes(list(reversed(raw)), max_rows)))
        notes.append(f"showing the last {len(kept)} of {len(raw)} records in whole episodes (--max-rows {max_rows})")
        raw = kept
    return Source(path=path, kind="recorder", steps=[StepRows(None, path, raw, _turns(raw, path))], notes=notes)


def _whole_episodes(raw: list[dict[str, Any]], max_rows: int) -> list[dict[str, Any]]:
    """The rows of the leading episodes of ``raw`` (by first appearance) that fit in ``max_rows``; at least one."""
    sizes = Counter(row.get("episode_id") for row in raw)
    kept: set[Any] = set()
    total = 0
    for row in raw:
        episode = row.get("episode_id")
        if episode in kept:
            continue
        if kept and total + sizes[episode] > max_rows:
            break
        kept.add(episode)
        total += sizes[episode]
    return [row for row in raw if row.get("episode_id") in kept]


def _turns(raw: list[dict[str, Any]], path: Path) -> list[Turn]:
    return [read_turn(row, f"{path}:{number}") for number, row in enumerate(raw, 1)]


def _json_lines(path: Path) -> Iterator[Any]:
    """The JSON value of each non-blank line of ``path``; a line that is not JSON raises ``DatasetError`` naming it."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as err:
                raise DatasetError(
                    f"{path}:{number} is not a JSON line ({err}): expected one agent-turn per line (a saved batch "
                    "or a Recorder file); a file cut mid-write ends in such a line: delete it"
                ) from None


def _read_rows(path: Path) -> list[dict[str, Any]]:
    return list(_json_lines(path))


def _first_row_format(path: Path) -> str:
    for row in _json_lines(path):
        return row_format(row) if isinstance(row, dict) else "batch"
    raise InvalidArgumentError(f"PATH {str(path)!r} is empty: pass a file with at least one agent-turn")


def _count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DatasetError(f"{path} is not valid JSON ({err}): repair or delete it") from None
    return value if isinstance(value, dict) else None


def _read_metrics(path: Path) -> list[dict[str, Any]]:
    from teamgym.train.metrics import read_metrics

    return read_metrics(path.parent) if path.is_file() else []


def _ranges(numbers: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)
