from __future__ import annotations

import copy

import pytest

from teamgym.core import EnvSnapshot, TurnBasedTextEnv
from teamgym.errors import EnvStateError, InvalidActionError, InvalidArgumentError, SnapshotError
from teamgym.testing import play_episode
from tests.support.relay_env import WORDS, RelayEnv


def oracle(env):
    speaker = env.scripted_policy("speaker")
    listener = env.scripted_policy("listener")
    return lambda agent, obs, info: speaker(obs) if agent == "speaker" else listener(obs)


def test_oracle_team_solves_and_summary_is_reported():
    env = RelayEnv()
    rows = play_episode(env, oracle(env), seed=1)
    assert [r["agent"] for r in rows] == ["speaker", "listener"]
    final = rows[-1]["infos"]["listener"]
    assert final["reward_terms"] == {"team": 1.0, "local": 0.5, "echo": 0.5}
    episode = final["teamgym_episode"]
    assert episode["success"] is True
    assert episode["steps"] == 2 and episode["turns"] == 1
    assert episode["returns"] == {"speaker": 0.0, "listener": 1.5}
    assert episode["team_returns"] == {"speaker": 0.0, "listener": 1.0}
    assert episode["truncated"] is False


def test_reward_is_alpha_team_plus_local_per_agent():
    env = RelayEnv(alpha={"listener": 2.5})
    env.reset(seed=0, options={"task_id": "apple"})
    env.step("apple")
    env.step("apple")  # echo (0.5) and says the word (team 1)
    assert env.infos["listener"]["reward_terms"] == {"team": 1.0, "local": 0.5, "echo": 0.5}
    assert env.rewards["listener"] == 2.5 * 1.0 + 0.5
    assert env.rewards["speaker"] == 0.0
    assert env.infos["speaker"]["reward_terms"] == {"team": 0.0, "local": 0.0}


def test_truncation_after_max_turns_and_dead_steps():
    env = RelayEnv(max_turns=2)
    env.reset(seed=0, options={"task_id": "river"})
    for _ in range(4):
        env.step("")
    assert all(env.truncations.values()) and not any(env.terminations.values())
    assert env.infos["speaker"]["teamgym_episode"]["turns"] == 2
    assert env.observe("speaker")["turn"] == 2
    with pytest.raises(InvalidActionError, match="pass None"):
        env.step("more")
    env.step(None)
    env.step(None)
    assert env.agents == []


def test_dead_steps_clear_the_reward_terms_with_the_rewards():
    env = RelayEnv(max_turns=1)
    env.reset(seed=0, options={"task_id": "river"})
    env.step("")  # the speaker's format penalty: local -1
    env.step("")  # truncated; the listener echoed the empty message: local 0.5
    env.step(None)  # the speaker leaves; PettingZoo clears every reward
    assert env.rewards == {"listener": 0.0}
    assert env.infos["listener"]["reward_terms"] == {"team": 0.0, "local": 0.0, "echo": 0.0}  # same names, all 0
    env = RelayEnv(max_turns=1)
    env.reset(seed=0, options={"task_id": "river"})
    env.step("hello")
    env.step("river")  # solved: team 1 for the listener
    env.step(None)  # the speaker's dead step clears the listener's reward, and so its terms
    assert env.rewards["listener"] == 0.0 and env.infos["listener"]["reward_terms"]["team"] == 0.0
    assert env.infos["listener"]["cumulative_reward_terms"]["team"] == 1.0  # what last() still returns
    assert env.last()[1] == 1.0


def test_step_and_last_outside_an_episode_raise_env_state_errors():
    env = RelayEnv()
    with pytest.raises(EnvStateError, match=r"last\(\) called before reset\(\): call env.reset"):
        env.last()
    env.reset(seed=0, options={"task_id": "river"})
    env.step("river")
    env.step("river")
    env.step(None)
    env.step(None)
    assert env.agents == []
    for call in (lambda: env.step(None), lambda: env.step("more"), env.last):
        with pytest.raises(EnvStateError, match=r"after the episode ended.*call env.reset"):
            call()


def test_cumulative_terms_match_last_reward():
    env = RelayEnv()
    env.reset(seed=0, options={"task_id": "river"})
    env.step("")  # speaker: format -1
    env.step("nope")
    _, reward, *_rest, info = env.last()  # speaker again
    assert reward == -1.0
    assert info["cumulative_reward_terms"] == {"team": 0.0, "local": -1.0, "format": -1.0}


def test_messages_and_observation():
    env = RelayEnv()
    env.reset(seed=0, options={"task_id": "copper"})
    messages = env.infos["speaker"]["messages"]
    assert messages[0] == {"role": "system", "content": "You are the speaker."}
    assert "copper" in messages[1]["content"]
    obs = env.observe("speaker")
    assert obs["turn"] == 0 and "copper" in obs["prompt"]
    assert env.observation_space("speaker").contains(obs)


def test_seeded_reset_picks_same_task_and_task_id_option():
    a, b = RelayEnv(), RelayEnv()
    ids = set()
    for seed in range(20):
        a.reset(seed=seed)
        b.reset(seed=seed)
        assert a.task_id == b.task_id
        ids.add(a.task_id)
    assert len(ids) > 3
    a.reset(options={"task_id": "meadow"})
    assert a.task == "meadow"
    with pytest.raises(InvalidArgumentError, match="env.task_ids"):
        a.reset(options={"task_id": "unknown"})


def test_garbage_is_sanitised_and_clipped_not_rejected():
    env = RelayEnv()
    env.reset(seed=0)
    env.step("a\ud800" + "z" * 5000)
    flags = env.infos["speaker"]["action_flags"]
    assert flags == {"sanitized": True, "clipped": True}
    assert len(env.history[-1].action) == env.max_action_chars


def test_misuse_raises_named_errors():
    env = RelayEnv()
    with pytest.raises(EnvStateError, match="before reset"):
        env.observe("speaker")
    env.reset(seed=0)
    with pytest.raises(InvalidActionError, match="str"):
        env.step([1, 2, 3])
    with pytest.raises(InvalidArgumentError, match="max_turns"):
        RelayEnv(max_turns=0)
    with pytest.raises(InvalidArgumentError, match="alpha"):
        RelayEnv(alpha={"ghost": 1.0})
    with pytest.raises(InvalidArgumentError, match="render_mode"):
        RelayEnv(render_mode="rgb_array")
    with pytest.raises(InvalidArgumentError, match="roles with one"):
        env.scripted_policy("judge")
    with pytest.raises(InvalidArgumentError, match="expected one of"):
        env.scripted_policy("speaker", "loud")


def test_snapshot_restore_replays_identically_and_is_isolated():
    env = RelayEnv()
    env.reset(seed=4)
    env.step("the word is")
    snap = env.snapshot()
    env.step("nope")
    first = (copy.deepcopy(env.infos), dict(env.rewards), env.observe("speaker"), env.agent_selection)
    env.step("more")  # mutate further; the snapshot must not see it
    env.restore(snap)
    assert env.history[-1].action == "the word is" and len(env.history) == 1
    env.step("nope")
    assert (env.infos, env.rewards, env.observe("speaker"), env.agent_selection) == first
    env.restore(snap)
    env.restore(snap)  # restoring twice gives the same state
    assert len(env.history) == 1


def test_snapshot_does_not_copy_the_task():
    env = RelayEnv()
    env.reset(seed=0)
    snap = env.snapshot()
    assert isinstance(snap, EnvSnapshot) and snap.task is env.task


def test_state_pickle_cannot_hold_is_deep_copied_instead():
    env = RelayEnv()
    env.reset(seed=4)
    env.history.append(lambda: "not picklable")  # e.g. an env keeping a callback in its episode state
    snap = env.snapshot()
    assert not isinstance(snap.frozen, bytes)
    env.step("the word is")
    env.restore(snap)
    assert callable(env.history[-1]) and len(env.history) == 1
    env.history.pop()
    env.restore(snap)
    assert len(env.history) == 1  # the snapshot kept its own copy


def test_snapshot_keeps_shared_references_and_fresh_copies():
    env = RelayEnv()
    env.reset(seed=4)
    env.step("the word is")
    snap = env.snapshot()
    a, b = snap.fields, snap.fields
    assert a == b and a["history"] is not b["history"]
    env.restore(snap)
    env.infos[env.agent_selection]["mutated"] = True
    env.restore(snap)
    assert "mutated" not in env.infos[env.agent_selection]


def test_handed_off_snapshot_restores_its_state_once_and_the_env_waits_for_a_restore():
    env, twin = RelayEnv(), RelayEnv()
    env.reset(seed=4)
    node = env.snapshot()
    env.step("the word is")
    plain = env.snapshot()
    handed = env.snapshot(handoff=True)
    with pytest.raises(EnvStateError, match="handoff=True"):
        env.step("nope")
    with pytest.raises(EnvStateError, match="handoff=True"):
        env.snapshot()
    env.restore(node)  # the env gets fresh objects; the handed-off ones are not touched again
    env.step("a sibling's message")
    env.restore(handed)
    twin.reset(seed=4)
    twin.restore(plain)
    assert env.history == twin.history and env.infos == twin.infos and env.rewards == twin.rewards
    assert env.observe("listener") == twin.observe("listener")
    env.step("nope")
    twin.step("nope")
    assert env.infos == twin.infos and env.rewards == twin.rewards
    with pytest.raises(SnapshotError, match="restores once"):
        env.restore(handed)
    env.snapshot(handoff=True)
    env.reset(seed=1)  # a reset gives the env a state of its own again
    env.step("hello")


def test_restore_rejects_foreign_snapshots():
    env = RelayEnv(max_turns=3)
    env.reset(seed=0)
    other = RelayEnv(max_turns=5)
    other.reset(seed=0)
    with pytest.raises(SnapshotError, match="same id and arguments"):
        env.restore(other.snapshot())
    with pytest.raises(SnapshotError, match="env.snapshot"):
        env.restore({"state": 1})


def test_render_ansi_transcript():
    env = RelayEnv(render_mode="ansi")
    play_episode(env, oracle(env), seed=2)
    text = env.render()
    assert "turn 0 | speaker" in text and "turn 0 | listener" in text and "success=True" in text
    assert RelayEnv().render() is None


def test_env_chosen_turn_order():
    class Reversed(RelayEnv):
        def _select_first(self):
            return "listener"

        def _select_next(self, agent):
            return "speaker" if agent == "listener" else None

    env = Reversed()
    env.reset(seed=0)
    assert env.agent_selection == "listener"
    env.step("x")
    assert env.agent_selection == "speaker" and env.turn == 0
    env.step("y")
    assert env.agent_selection == "listener" and env.turn == 1


def test_agents_argument_validation():
    class Team(TurnBasedTextEnv):
        roles = ("a",)

    with pytest.raises(InvalidArgumentError, match="distinct"):
        Team(agents=["x", "x"])
    assert Team(agents=["p", "q", "r"]).possible_agents == ["p", "q", "r"]


def test_words_cover_tasks():
    assert RelayEnv().task_ids() == WORDS
