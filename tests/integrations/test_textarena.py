"""TextArena both ways: its games as teamgym envs (``textarena/<GameId>``) and teamgym envs behind ``textarena.Env``."""

from __future__ import annotations

import random
import socket

import pytest

pytest.importorskip("textarena", reason="install the textarena extra: pip install 'teamgym[textarena]'")

import teamgym  # noqa: E402
from teamgym.core import EPISODE_KEY  # noqa: E402
from teamgym.envs.textarena import GAMES, TextArenaEnv  # noqa: E402
from teamgym.errors import InvalidArgumentError  # noqa: E402
from teamgym.integrations.textarena import TeamgymArenaEnv  # noqa: E402
from teamgym.testing import check_env  # noqa: E402

IDS = [f"textarena/{game}" for game in GAMES]


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_games_are_registered_with_their_players_as_roles():
    assert set(IDS) <= set(teamgym.list_envs())
    assert any(n > 2 for n in GAMES.values())
    assert teamgym.make("textarena/ThreePlayerIPD-v0").possible_agents == ["player_0", "player_1", "player_2"]


@pytest.mark.parametrize("env_id", IDS)
def test_games_pass_check_env_offline(env_id, no_network):
    check_env(env_id, num_garbage=150, api_cycles=20)


def _play(env, moves):
    env.reset(seed=0)
    while env.agents:
        agent = env.agent_selection
        env.step(None if env.terminations[agent] or env.truncations[agent] else moves.pop(0))
        if env.agents and all(env.terminations[a] or env.truncations[a] for a in env.agents):
            return {a: dict(env.infos[a]) for a in env.agents}
    raise AssertionError("the game did not end")


def test_a_win_is_local_edge_and_the_zero_sum_team_term_is_zero():
    infos = _play(teamgym.make("textarena/TicTacToe-v0"), ["[0]", "[3]", "[1]", "[4]", "[2]"])
    assert infos["player_0"]["reward_terms"]["edge"] == 1.0
    assert infos["player_1"]["reward_terms"]["edge"] == -1.0
    assert infos["player_0"]["reward_terms"]["team"] == 0.0
    assert infos["player_0"][EPISODE_KEY]["success"] is True
    assert infos["player_0"][EPISODE_KEY]["returns"] == {"player_0": 1.0, "player_1": -1.0}


def test_an_invalid_move_is_not_a_success_and_the_global_random_is_left_alone():
    random.seed(123)
    expected = random.random()
    random.seed(123)
    env = teamgym.make("textarena/TicTacToe-v0")
    infos = _play(env, ["no move at all"] * 10)
    assert random.random() == expected
    assert infos["player_0"][EPISODE_KEY]["success"] is False
    assert min(infos[a][EPISODE_KEY]["returns"][a] for a in infos) < 0


def test_unknown_game_and_bad_players_raise():
    with pytest.raises(InvalidArgumentError, match="TextArena game"):
        TextArenaEnv("NoSuchGame-v0")
    with pytest.raises(InvalidArgumentError, match="num_players"):
        TextArenaEnv("Nim-v0")


def test_a_teamgym_env_plays_through_textarenas_api(no_network):
    base = teamgym.make("plan_path-v0", max_turns=3)
    env = TeamgymArenaEnv(base)
    with pytest.raises(InvalidArgumentError, match="num_players=2"):
        env.reset(num_players=3, seed=0)
    env.reset(num_players=2, seed=0)
    policies = [base.unwrapped.scripted_policy("tool", "oracle"), base.unwrapped.scripted_policy("planner", "oracle")]
    done, steps = False, 0
    while not done:
        player_id, prompt = env.get_observation()
        assert isinstance(prompt, str) and env.messages[-1]["content"]
        done, info = env.step(policies[player_id]({"prompt": prompt}))
        steps += 1
    rewards, game_info = env.close()
    assert steps == 2 and rewards[1] == pytest.approx(2.5) and game_info[0]["success"] is True
    assert game_info[0]["role"] == "tool" and game_info[1]["turn_count"] == 1


def test_garbage_through_textarenas_api_is_penalised_not_raised():
    env = TeamgymArenaEnv(teamgym.make("plan_path-v0", max_turns=2))
    env.reset(num_players=2, seed=1)
    done = False
    while not done:
        done, info = env.step("\x00 garbage ```python\n(((")
    rewards, game_info = env.close()
    assert rewards[0] < 0 and game_info[0]["success"] is False


def test_the_prisoners_dilemma_pays_full_cooperation_as_team_one():
    env = teamgym.make("textarena/ThreePlayerIPD-v0")
    cooperate = env.unwrapped.scripted_policy("player_0", "cooperate")
    env.reset(seed=0)
    while env.agents:
        agent = env.agent_selection
        done = env.terminations[agent] or env.truncations[agent]
        env.step(None if done else cooperate(env.observe(agent)))
        if env.agents and all(env.terminations[a] or env.truncations[a] for a in env.agents):
            break
    terms = env.infos["player_0"]["reward_terms"]
    assert terms["team"] == pytest.approx(1.0) and terms["edge"] == pytest.approx(-1.0)  # a three-way tie: 0 each
    assert env.infos["player_0"][EPISODE_KEY]["success"] is True


@pytest.mark.parametrize("alpha", [1.0, 2.0])
def test_a_forfeit_in_three_player_tic_tac_toe_pays_no_one_but_the_game(alpha):
    """The attack: TextArena pays +1 to each of the two others when a player forfeits (garbage twice) and -1 to each
    loser of a game played out, so a team term of the mean reward made the forfeit the group's best outcome."""
    env = teamgym.make("textarena/ThreePlayerTicTacToe-v0", alpha=alpha)
    first_free = env.unwrapped.scripted_policy("player_0", "first_free")
    returns = {}
    for forfeit in (False, True):
        env.reset(seed=0, options={"task_id": 0})
        while env.agents:
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                env.step(None)
                continue
            env.step("no idea" if forfeit and agent == "player_0" else first_free(env.observe(agent)))
        returns[forfeit] = env.unwrapped.episode_summary()["returns"]
    played, forfeited = returns[False], returns[True]
    assert sum(played.values()) == pytest.approx(0.0, abs=1e-9)
    assert sum(forfeited.values()) == pytest.approx(0.0, abs=1e-9)
    assert forfeited["player_0"] < min(played.values())  # the forfeit costs its player most
    assert played["player_0"] == pytest.approx(4 / 3)  # first_free's player_0 wins: +1 against a mean of -1/3


def test_a_game_not_known_to_compete_keeps_its_reward_and_competitive_is_checked():
    assert teamgym.make("textarena/TicTacToe-v0").unwrapped.competitive is True
    assert TextArenaEnv("Nim-v0", num_players=2).competitive is False
    assert TextArenaEnv("Nim-v0", num_players=2, competitive=True).competitive is True
    with pytest.raises(InvalidArgumentError, match="competitive="):
        TextArenaEnv("Nim-v0", num_players=2, competitive="yes")
