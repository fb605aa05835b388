from __future__ import annotations

import json
import multiprocessing

import pytest
import torch

from teamgym.algos import group_ids
from teamgym.errors import DatasetError
from teamgym.testing import check_env, play_episode
from teamgym.wrappers import RECORD_KEYS, ProcessReward, Recorder, RewardMixing, load_records, to_batch
from tests.support.relay_env import RelayEnv
from tests.support.tally_env import TallyEnv
from tests.wrappers.envs import FACTORIES, env_params


def _cycle(actions):
    stream = iter(actions * 100)
    return lambda agent, observation, info: next(stream)


@pytest.mark.parametrize("name", env_params())
def test_check_env(name, tmp_path):
    check_env(lambda: Recorder(FACTORIES[name](), tmp_path / "turns.jsonl"), num_garbage=150, api_cycles=10)
    assert load_records(tmp_path / "turns.jsonl")


@pytest.mark.parametrize("name", env_params(default=("discussion-v0", "math_tool-v0")))
def test_one_record_per_agent_turn(name, tmp_path):
    env = Recorder(FACTORIES[name](), tmp_path / "t.jsonl")
    rows = play_episode(env, _cycle(["3 apple", "river", "9"]), seed=2)
    records = load_records(tmp_path / "t.jsonl")
    assert len(records) == len(rows)
    for record, row in zip(records, rows, strict=True):
        assert list(record) == list(RECORD_KEYS)
        assert record["agent"] == row["agent"]
        assert record["action"] == row["action"]
        assert record["prompt"] == row["observation"]["prompt"]
        assert record["reward"] == row["rewards"][row["agent"]]
        assert record["reward_terms"] == row["infos"][row["agent"]]["reward_terms"]
        assert record["branch"] is None
    assert [r["step"] for r in records] == list(range(len(records)))
    assert [r["done"] for r in records] == [False] * (len(records) - 1) + [True]
    assert len({r["episode_id"] for r in records}) == 1


def test_rewards_and_terms_come_from_the_wrapped_layer(tmp_path):
    env = Recorder(
        ProcessReward(RewardMixing(RelayEnv(), 2.0), lambda e, a, x: 1.0, weight=0.5), tmp_path / "t"
    )
    env.reset(seed=0, options={"task_id": "apple"})
    env.step("The word is apple")
    env.step("apple")
    speaker, listener = load_records(tmp_path / "t")
    assert listener["reward"] == 2.5  # 2 * team + process
    assert listener["reward_terms"]["process"] == 0.5
    assert listener["turn"] == 0 and listener["task_id"] == "apple"
    assert speaker["messages"][0] == {"role": "system", "content": "You are the speaker."}


def test_off_turn_rewards_complete_what_last_hands_each_agent(tmp_path):
    env = Recorder(TallyEnv(), tmp_path / "t")
    env.reset(seed=0, options={"task_id": 0})  # target 10; on success every agent gets team = 1
    totals = {}
    for action in [
        "4",
        "3",
        "3",
    ]:  # alice, carol, carol, then the next turn opens with bob: 4+3+3 = 10 at carol
        env.step(action)
    for agent in env.agents:
        totals[agent] = env._cumulative_rewards[agent]
    records = load_records(tmp_path / "t")
    last = {}
    for record in records:
        last[record["agent"]] = record["reward"] + record["off_turn_reward"]
    assert last == {a: totals[a] for a in last}
    assert records[0]["off_turn_reward"] == 1.0  # alice's turn: the team was rewarded at carol's step


def test_flushed_per_episode(tmp_path):
    path = tmp_path / "t"
    env = Recorder(RelayEnv(), path)
    env.reset(seed=0, options={"task_id": "apple"})
    env.step("The word is apple")
    assert not path.exists()  # mid-episode: buffered
    env.step("apple")
    assert len(load_records(path)) == 2
    env.reset(seed=1)
    env.step("unfinished")
    env.reset(seed=2)  # an unfinished episode is written at the next reset
    assert len(load_records(path)) == 3
    env.step("and closed")
    env.close()
    assert len(load_records(path)) == 4


def test_appends_across_runs_with_unique_episode_ids(tmp_path):
    path = tmp_path / "t"
    for _ in range(2):
        env = Recorder(RelayEnv(), path)
        for seed in range(3):
            play_episode(env, _cycle(["x"]), seed=seed)
        env.close()
    records = load_records(path)
    assert len({r["episode_id"] for r in records}) == 6


def _write_episodes(path: str, seed: int) -> None:
    env = Recorder(TallyEnv(), path)
    for episode in range(20):
        play_episode(env, _cycle(["1", "x" * 5000, "2"]), seed=seed * 100 + episode)
    env.close()


def test_concurrent_processes_append_whole_lines(tmp_path):
    path = str(tmp_path / "t")
    context = multiprocessing.get_context("fork")  # spawn would re-import torch per process
    workers = [context.Process(target=_write_episodes, args=(path, seed)) for seed in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert all(worker.exitcode == 0 for worker in workers)
    records = load_records(path)
    assert len({r["episode_id"] for r in records}) == 60


def test_restore_rewinds_the_record(tmp_path):
    env = Recorder(RelayEnv(), tmp_path / "t")
    env.reset(seed=0, options={"task_id": "apple"})
    env.step("The word is apple")
    snap = env.snapshot()
    env.step("wrong")
    env.restore(snap)
    env.step("apple")
    records = load_records(tmp_path / "t")
    assert [r["action"] for r in records] == ["The word is apple", "apple"]


def test_lone_surrogates_round_trip(tmp_path):
    env = Recorder(RelayEnv(), tmp_path / "t")
    env.reset(seed=0)
    env.step("bad \ud800 text")
    env.close()
    raw = (tmp_path / "t").read_bytes()
    raw.decode("utf-8")  # the file stays valid UTF-8
    assert load_records(tmp_path / "t")[0]["action"] == "bad \ud800 text"


def test_malformed_lines_raise_naming_the_line(tmp_path):
    path = tmp_path / "t"
    path.write_text('{"agent": "a"}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=":1 lacks"):
        load_records(path)
    good = {key: None for key in RECORD_KEYS}
    path.write_text(json.dumps(good) + "\n\n{not json\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=":3 is not a JSON line"):
        load_records(path)


def test_to_batch_columns(tmp_path):
    env = Recorder(ProcessReward(TallyEnv(), lambda e, a, x: 0.5), tmp_path / "t")
    for seed in range(3):
        play_episode(env, _cycle(["3", "", "5"]), seed=seed)
    records = load_records(tmp_path / "t")
    batch = to_batch(records)
    n = len(records)
    assert batch["rewards"].dtype == torch.float32 and batch["rewards"].shape == (n,)
    assert batch["turn"].dtype == torch.int64 and batch["done"].dtype == torch.bool
    assert batch["agent"] == [r["agent"] for r in records]
    assert torch.equal(batch["term_process"], torch.full((n,), 0.5))
    assert torch.equal(
        batch["term_format"], torch.tensor([r["reward_terms"].get("format", 0.0) for r in records])
    )
    expected = group_ids([r["task_id"] for r in records], [r["agent"] for r in records], batch["turn"])
    assert torch.equal(batch["group_ids"], expected)
    assert int(batch["episode_ids"].max()) == 2
    assert to_batch([])["rewards"].shape == (0,)
