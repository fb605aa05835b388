"""``read_turn``: saved batch rows and Recorder records read into one shape, optional columns tolerated."""

from __future__ import annotations

import pytest

from teamgym.errors import DatasetError
from teamgym.report.columns import BATCH_COLUMNS, Turn, read_turn, row_format
from tests.report.rows import batch_row


def test_a_batch_row():
    turn = read_turn(batch_row(others_rewards={"planner": 1.0}), "f:1")
    assert turn == Turn(
        episode="s0-0",
        agent="tool",
        reward=1.0,
        task="7",
        turn=0,
        env_step=0,
        branch=0,
        chosen=True,
        text="print(1)",
        prompt=None,
        prompt_ids=(10, 11, 12),
        completion_tokens=2,
        logprob_mean=-1.0,
        terms={"team": 0.0, "local": 1.0},
        success=True,
        infra_error="",
        advantage=None,
        others={"planner": 1.0},
    )


def test_a_recorder_record():
    record = {
        "episode_id": "e",
        "task_id": "HumanEval/0",
        "agent": "coder",
        "turn": 1,
        "step": 2,
        "branch": None,
        "prompt": "write it",
        "messages": [],
        "action": "def f(): pass",
        "reward": 0.5,
        "reward_terms": {"team": 0.5, "local": 0.0},
        "off_turn_reward": 1.0,
        "done": False,
    }
    assert row_format(record) == "recorder"
    turn = read_turn(record, "f:1")
    assert (turn.text, turn.prompt, turn.reward, turn.branch, turn.chosen) == (
        "def f(): pass",
        "write it",
        0.5,
        None,
        True,
    )
    assert (turn.turn, turn.env_step, turn.success, turn.completion_tokens) == (1, 2, None, None)
    assert turn.others == {"(later steps)": 1.0}


def test_optional_columns_may_be_missing():
    row = {BATCH_COLUMNS["episode"]: "e", BATCH_COLUMNS["agent"]: "a", BATCH_COLUMNS["reward"]: -1}
    turn = read_turn(row, "f:1")
    assert (turn.reward, turn.turn, turn.branch, turn.text, turn.terms, turn.success) == (-1.0, -1, None, "", {}, None)


def test_a_saved_advantage_is_read():
    assert read_turn(batch_row(advantage=0.25), "f:1").advantage == 0.25


@pytest.mark.parametrize("row", [{"agent": "a", "rewards": 1.0}, {"episode_id": "e", "agent": "a"}])
def test_a_row_without_required_columns_is_named(row):
    with pytest.raises(DatasetError, match=r"f\.jsonl:3 lacks the columns \[.*\]: expected a saved batch row"):
        read_turn(row, "f.jsonl:3")


def test_a_line_that_is_not_an_object():
    with pytest.raises(DatasetError, match="f:2 holds a list, not a JSON object"):
        read_turn([1, 2], "f:2")
