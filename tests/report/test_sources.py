"""``load_source``: the layouts PATH may have, which steps are read, and errors that name PATH and the fix."""

from __future__ import annotations

import json

import pytest

from teamgym.errors import DatasetError, InvalidArgumentError
from teamgym.report.sources import load_source
from tests.report.rows import node_rows, write_run


def three_steps(tmp_path, rows_per_step=4):
    steps = {s: node_rows(f"s{s}-0", 0, "tool", [0.0] * rows_per_step) for s in range(3)}
    return write_run(tmp_path / "run", steps)


def test_a_run_directory(tmp_path):
    source = load_source(three_steps(tmp_path))
    assert source.kind == "run"
    assert [s.step for s in source.steps] == source.available_steps == [0, 1, 2]
    assert source.config["algo"] == "at_grpo" and len(source.metrics) == 3 and source.summary is None
    assert [len(s.turns) for s in source.steps] == [4, 4, 4] and source.notes == []


def test_the_newest_steps_that_fit_max_rows(tmp_path):
    source = load_source(three_steps(tmp_path), max_rows=9)
    assert [s.step for s in source.steps] == [1, 2]
    assert source.notes == ["showing steps 1-2 of 0-2 (the newest that fit --max-rows 9); pick one with --step N"]


def test_one_step_larger_than_max_rows_is_cut_in_whole_episodes(tmp_path):
    rows = [r for e in range(3) for r in node_rows(f"s0-{e}", 0, "tool", [0.0] * 4)]
    source = load_source(write_run(tmp_path / "run", {0: rows}), max_rows=9)
    assert [t.episode for t in source.steps[0].turns] == ["s0-0"] * 4 + ["s0-1"] * 4
    assert "whole episodes" in source.notes[0]


def test_step_picks_one(tmp_path):
    source = load_source(three_steps(tmp_path), step=1)
    assert [s.step for s in source.steps] == [1]
    with pytest.raises(InvalidArgumentError, match=r"--step 5: no batch saved for that step; saved steps: 0-2"):
        load_source(three_steps(tmp_path / "again"), step=5)


def test_the_batches_directory_and_one_step_file_find_their_run(tmp_path):
    run = three_steps(tmp_path)
    for path in (run / "batches", run / "batches" / "step_000002.jsonl"):
        source = load_source(path)
        assert source.run_dir == run and source.config is not None
    assert [s.step for s in load_source(run / "batches" / "step_000002.jsonl").steps] == [2]


def test_a_recorder_file(tmp_path):
    path = tmp_path / "turns.jsonl"
    record = {
        "episode_id": "e",
        "task_id": 0,
        "agent": "a",
        "turn": 0,
        "step": 0,
        "branch": None,
        "prompt": "p",
        "messages": None,
        "action": "x",
        "reward": 1.0,
        "reward_terms": {"team": 1.0, "local": 0.0},
        "off_turn_reward": 0.0,
        "done": True,
    }
    path.write_text(json.dumps(record) + "\n")
    source = load_source(path)
    assert source.kind == "recorder" and source.steps[0].step is None and source.steps[0].turns[0].text == "x"
    with pytest.raises(InvalidArgumentError, match="is a Recorder file, which has no RL steps"):
        load_source(path, step=0)


def test_a_run_without_batches_shows_its_curves(tmp_path):
    run = write_run(tmp_path / "run", {})
    (run / "metrics.jsonl").write_text('{"step": 0, "success": 1.0}\n')
    source = load_source(run)
    assert source.steps == [] and len(source.metrics) == 1
    assert "--set save_batches=true" in source.notes[0]
    with pytest.raises(InvalidArgumentError, match="--step 0: .* has no saved batches"):
        load_source(run, step=0)


def test_paths_that_hold_nothing_to_show(tmp_path):
    with pytest.raises(InvalidArgumentError, match="does not exist: pass a run directory"):
        load_source(tmp_path / "nope")
    with pytest.raises(InvalidArgumentError, match="holds no batches/step_N.jsonl and no metrics.jsonl"):
        load_source(tmp_path)
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(InvalidArgumentError, match="is empty"):
        load_source(tmp_path / "empty.jsonl")
    with pytest.raises(InvalidArgumentError, match="--max-rows 0"):
        load_source(tmp_path, max_rows=0)


def test_a_torn_line_is_named(tmp_path):
    run = three_steps(tmp_path)
    path = run / "batches" / "step_000001.jsonl"
    path.write_text(path.read_text() + '{"episode_id": "s1-0", "ag')
    with pytest.raises(DatasetError, match=r"step_000001.jsonl:5 is not a JSON line"):
        load_source(run)
