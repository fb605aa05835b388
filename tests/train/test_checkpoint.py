"""Checkpoints: atomic write, keep-last-N, checksum verification and fall-back; metrics rewritten on resume."""

from __future__ import annotations

import logging

import pytest
import torch

from teamgym.errors import CheckpointError
from teamgym.train.checkpoint import list_checkpoints, load_latest_checkpoint, save_checkpoint, verify_checkpoint
from teamgym.train.metrics import MetricsLogger, read_metrics


def _save(tmp_path, step):
    return save_checkpoint(tmp_path, step, {"step": step, "weights": torch.full((4,), float(step))}, keep=2)


def test_roundtrip_and_keep_last_two(tmp_path):
    for step in (1, 2, 3):
        _save(tmp_path, step)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_00000002", "step_00000003"]
    step, state = load_latest_checkpoint(tmp_path)
    assert step == 3 and torch.equal(state["weights"], torch.full((4,), 3.0))


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
    for step in range(5):
        logger.log({"step": step, "x": float(step)})
    with open(tmp_path / "metrics.jsonl", "a") as fh:
        fh.write('{"step": 5, "x"')  # a torn line from a crash mid-write
    MetricsLogger(tmp_path, resume_step=3)
    assert [r["step"] for r in read_metrics(tmp_path)] == [0, 1, 2]
