"""The episode summary counts terms an env gives to agents other than the one acting (e.g. a team reward)."""

from __future__ import annotations

from teamgym.core import Outcome, reward_terms
from teamgym.testing import play_episode
from tests.support.relay_env import RelayEnv


class SharedTeamRelayEnv(RelayEnv):
    """Relay where the listener's success also pays the speaker, in the listener's step."""

    def _apply_action(self, agent: str, action: str) -> Outcome:
        outcome = super()._apply_action(agent, action)
        if agent != "listener":
            return outcome
        team = outcome.terms["listener"]["team"]
        return Outcome({**outcome.terms, "speaker": reward_terms(team=team)}, terminated=outcome.terminated)


def test_summary_returns_include_terms_given_to_other_agents() -> None:
    env = SharedTeamRelayEnv()
    speaker, listener = env.scripted_policy("speaker"), env.scripted_policy("listener")
    rows = play_episode(env, lambda agent, obs, info: speaker(obs) if agent == "speaker" else listener(obs), seed=1)
    episode = rows[-1]["infos"]["speaker"]["teamgym_episode"]
    assert episode["team_returns"] == {"speaker": 1.0, "listener": 1.0}
    assert episode["returns"] == {"speaker": 1.0, "listener": 1.5}


def test_summary_returns_survive_snapshot_and_restore() -> None:
    env = SharedTeamRelayEnv()
    env.reset(seed=0, options={"task_id": "apple"})
    env.step("apple")
    snap = env.snapshot()
    env.step("apple")
    first = env.infos["speaker"]["teamgym_episode"]["returns"]
    env.restore(snap)
    env.step("apple")
    assert env.infos["speaker"]["teamgym_episode"]["returns"] == first == {"speaker": 1.0, "listener": 1.5}


def test_summary_returns_use_each_agents_alpha() -> None:
    env = SharedTeamRelayEnv(alpha={"speaker": 2.0})
    speaker, listener = env.scripted_policy("speaker"), env.scripted_policy("listener")
    rows = play_episode(env, lambda agent, obs, info: speaker(obs) if agent == "speaker" else listener(obs), seed=1)
    episode = rows[-1]["infos"]["speaker"]["teamgym_episode"]
    assert episode["team_returns"] == {"speaker": 1.0, "listener": 1.0}
    assert episode["returns"] == {"speaker": 2.0, "listener": 1.5}
    assert rows[-1]["rewards"]["speaker"] == 2.0
