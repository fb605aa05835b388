"""Checkpoints: atomic write, keep-last-N, checksum verification and fall-back; metrics rewritten on resume."""

from __future__ import annotations

import csv
import logging

import pytest
import torch

from teamgym.errors import CheckpointError
from teamgym.train.checkpoint import (
    STATE_FILE,
    checkpoint_path,
    list_checkpoints,
    load_checkpoint,
    load_latest_checkpoint,
    remove_stale_writes,
    save_checkpoint,
    verify_checkpoint,
)
from teamgym.train.metrics import MetricsLogger, read_metrics


def _save(tmp_path, step):
    return save_checkpoint(tmp_path, step, {"step": step, "weights": torch.full((4,), float(step))}, keep=2)


def test_roundtrip_and_keep_last_two(tmp_path):
    for step in (1, 2, 3):
        _save(tmp_path, step)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_00000002", "step_00000003"]
    step, state = load_latest_checkpoint(tmp_path)
    assert step == 3 and torch.equal(state["weights"], torch.full((4,), 3.0))


def test_checkpoint_path_names_where_save_writes_and_load_reads(tmp_path):
    """One helper spells the layout (the trainer, ``--warm-start-from`` checks and benchmarks/main_job_seeds.py)."""
    saved = _save(tmp_path, 7)
    assert saved == checkpoint_path(tmp_path, 7) == tmp_path / "checkpoints" / "step_00000007"
    assert (saved / STATE_FILE).is_file()
    assert torch.equal(load_checkpoint(tmp_path, 7)["weights"], torch.full((4,), 7.0))
    with pytest.raises(CheckpointError, match="no checkpoint of step 8"):
        load_checkpoint(tmp_path, 8)


def test_interrupted_write_leaves_only_a_temp_dir_that_is_ignored(tmp_path):
    _save(tmp_path, 1)
    (tmp_path / "checkpoints" / ".tmp-step_00000002-999").mkdir()
    assert load_latest_checkpoint(tmp_path)[0] == 1


@pytest.mark.parametrize("damage", ["truncate", "flip", "manifest"])
def test_corrupt_newest_falls_back_to_previous_with_a_warning(tmp_path, caplog, damage):
    _save(tmp_path, 1)
    newest = _save(tmp_path, 2)
    state_file = newest / "state.pt"
    data = state_file.read_bytes()
    if damage == "truncate":
        state_file.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        state_file.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    else:
        (newest / "manifest.json").write_text("{")
    assert verify_checkpoint(newest) is not None
    with caplog.at_level(logging.WARNING):
        step, _ = load_latest_checkpoint(tmp_path)
    assert step == 1
    assert "step_00000002" in caplog.text and "falling back" in caplog.text


def test_no_valid_checkpoint_names_each_bad_one(tmp_path):
    for step in (1, 2):
        path = _save(tmp_path, step)
        (path / "state.pt").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="step_00000001.*|step_00000002.*") as err:
        load_latest_checkpoint(tmp_path)
    assert "step_00000001" in str(err.value) and "step_00000002" in str(err.value)


def test_no_checkpoint_is_none(tmp_path):
    assert load_latest_checkpoint(tmp_path) is None


def test_metrics_rows_after_the_resumed_checkpoint_are_dropped(tmp_path):
    logger = MetricsLogger(tmp_path)
    for step in range(1, 6):
        logger.log({"step": step, "x": float(step)})
    with open(tmp_path / "metrics.jsonl", "a") as fh:
        fh.write('{"step": 6, "x"')  # a torn line from a crash mid-write
    MetricsLogger(tmp_path, resume_step=3)  # checkpoint step_00000003: the state after step 3's update
    assert [r["step"] for r in read_metrics(tmp_path)] == [1, 2, 3]
    with open(tmp_path / "metrics.csv", newline="") as fh:
        assert [row["step"] for row in csv.DictReader(fh)] == ["1", "2", "3"]


def test_metrics_csv_keeps_one_header_when_rows_gain_keys(tmp_path):
    logger = MetricsLogger(tmp_path)
    logger.log({"step": 1, "loss": 0.5})
    logger.log({"step": 2, "loss": 0.25, "eval/success": 0.75})  # an evaluation step adds a column
    logger.log({"step": 3, "loss": 0.125})
    logger.close()
    lines = (tmp_path / "metrics.csv").read_text().splitlines()
    assert lines[0] == "step,loss,eval/success"
    with open(tmp_path / "metrics.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert all(len(row) == 3 for row in rows)
    assert rows[1:] == [["1", "0.5", ""], ["2", "0.25", "0.75"], ["3", "0.125", ""]]


def test_stale_tmp_dirs_of_interrupted_writes_are_removed(tmp_path):
    _save(tmp_path, 1)
    stale = tmp_path / "checkpoints" / ".tmp-step_00000002-999"
    stale.mkdir()
    (stale / "state.pt").write_bytes(b"half")
    assert remove_stale_writes(tmp_path) == [stale]
    assert not stale.exists() and [p.name for p in list_checkpoints(tmp_path)] == ["step_00000001"]
    assert remove_stale_writes(tmp_path / "nothing") == []
