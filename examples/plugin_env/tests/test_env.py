"""The tests of ``ascend-v0``: conformance, the rules, the reward table, and the scripted teams' standing."""

from __future__ import annotations

from typing import Any

import pytest
import teamgym
from teamgym.errors import InvalidArgumentError
from teamgym.testing import check_env, play_episode

from teamgym_ascend.rules import deal, parse_action, play_lowest

ENV_ID = "ascend-v0"


def _episode(policy_name: str, seed: int, **kwargs: Any) -> dict[str, Any]:
    env = teamgym.make(ENV_ID, **kwargs)
    env.reset(seed=seed)
    base = env.unwrapped
    team = {agent: base.scripted_policy(agent, policy_name) for agent in base.possible_agents}
    rows = play_episode(env, lambda agent, observation, info: team[agent](observation), seed=seed)
    return rows[-1]["infos"]["player_0"]["teamgym_episode"]


def _deal_by_hand(env: Any, hands: list[list[int]]) -> None:
    """Replace the dealt hands (a test's own deal; the env reads only ``state.hands`` after reset)."""
    env.unwrapped.state.hands = [list(hand) for hand in hands]


@pytest.mark.parametrize("kwargs", [{}, {"num_agents": 2, "hand_size": 1}, {"num_agents": 5, "hand_size": 3}])
def test_check_env_passes(kwargs: dict[str, int]) -> None:
    check_env(ENV_ID, num_garbage=1000 if not kwargs else 200, env_kwargs=kwargs)


def test_the_deal_is_distinct_sorted_and_seeded() -> None:
    hands = deal(7, num_agents=4, hand_size=3, card_max=20).hands
    cards = [card for hand in hands for card in hand]
    assert len(set(cards)) == 12 and all(1 <= c <= 20 for c in cards)
    assert all(list(hand) == sorted(hand) for hand in hands)
    assert deal(7, num_agents=4, hand_size=3, card_max=20) == deal(7, num_agents=4, hand_size=3, card_max=20)


def test_actions_are_read_from_the_last_action_line() -> None:
    assert parse_action("Action: WAIT\nno, better:\naction: play") == "play"
    assert parse_action("I would PLAY") is None


def test_a_play_out_of_order_discards_every_lower_card() -> None:
    hands = [[10, 50], [5, 7, 60], [30]]
    play = play_lowest(hands, 2)
    assert (play.card, play.in_order, play.discarded) == (30, False, (5, 7, 10))
    assert hands == [[50], [60], []]


def test_rewards_follow_the_docstring_table() -> None:
    env = teamgym.make(ENV_ID, num_agents=2, hand_size=2, lives=2, blunder_penalty=0.25, format_penalty=0.25)
    env.reset(seed=0)
    _deal_by_hand(env, [[10, 40], [20, 30]])
    env.step("I'll go.\nAction: PLAY")  # player_0 plays 10: in order
    assert env.infos["player_0"]["reward_terms"] == {"team": 0.25, "local": 0.0, "format": 0.0, "blunder": 0.0}
    assert env.infos["player_1"]["reward_terms"]["team"] == 0.25
    env.step("hmm")  # player_1: no action line, a wait
    assert env.infos["player_1"]["reward_terms"] == {"team": 0.0, "local": -0.25, "format": -0.25, "blunder": 0.0}
    env.step("Action: PLAY")  # player_0 plays 40 while 20 and 30 are held: a life lost, both discarded
    assert env.infos["player_0"]["reward_terms"] == {"team": -0.5, "local": -0.25, "format": 0.0, "blunder": -0.25}
    assert env.infos["player_0"]["in_order"] is False
    assert all(env.terminations.values())  # every hand is empty now
    episode = env.infos["player_0"]["teamgym_episode"]
    assert episode["success"] and episode["mistakes"] == 1 and episode["discarded"] == [20, 30]
    assert episode["team_returns"] == {"player_0": -0.25, "player_1": -0.25}


def test_empty_handed_players_are_skipped_and_no_life_left_ends_the_game() -> None:
    env = teamgym.make(ENV_ID, num_agents=3, hand_size=1, lives=1)
    env.reset(seed=0)
    _deal_by_hand(env, [[], [50], [40]])
    env.agent_selection = env.unwrapped._select_first()
    assert env.agent_selection == "player_1"
    env.step("Action: PLAY")
    assert all(env.terminations.values()) and env.infos["player_1"]["teamgym_episode"]["lives_left"] == 0


def test_the_oracle_team_always_wins_and_the_others_do_not() -> None:
    oracle = [_episode("oracle", seed) for seed in range(50)]
    assert all(e["success"] and e["mistakes"] == 0 for e in oracle)
    assert all(e["team_returns"]["player_0"] == pytest.approx(1.0) for e in oracle)
    for name in ("estimate", "random"):
        assert sum(_episode(name, seed)["team_returns"]["player_0"] for seed in range(50)) < 0.5 * 50, name


def test_bad_options_say_what_was_expected() -> None:
    with pytest.raises(InvalidArgumentError, match="card_max=5"):
        teamgym.make(ENV_ID, card_max=5)
    with pytest.raises(InvalidArgumentError, match="hand_size=11"):
        teamgym.make(ENV_ID, hand_size=11)
