"""The candidate-choice bridge: a text env as a Discrete(k)/Box PettingZoo env (no MARL library needed)."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import api_test

import teamgym
from teamgym.core import EPISODE_KEY
from teamgym.errors import InvalidActionError, InvalidArgumentError
from teamgym.integrations.marl import (
    CandidateChoiceEnv,
    HashedNgrams,
    PlanningProposer,
    candidate_env,
    random_choice,
    success_rate,
)
from teamgym.testing import check_env

HELD_OUT = range(2**31, 2**31 + 40)


def _good(env: CandidateChoiceEnv) -> int:
    """The index of the scripted proposer's good candidate (the search program, or adopting the tool's plan)."""
    return next(i for i, text in enumerate(env.candidates) if text.startswith(("A search", "I adopt")))


@pytest.mark.parametrize("env_id", ["plan_path-v0", "sokoban-v0", "sudoku-v0"])
def test_candidate_env_passes_check_env(env_id):
    check_env(lambda: candidate_env(env_id, max_turns=2, render_mode="ansi"), num_garbage=150, api_cycles=20)


def test_spaces_are_identical_per_agent_and_observations_fit():
    env = candidate_env("plan_path-v0", k=3, featurizer=HashedNgrams(dim=32))
    assert env.observation_space("tool") is env.observation_space("planner")
    assert env.action_space("tool") is env.action_space("planner") and env.action_space("tool").n == 3
    env.reset(seed=0)
    observation = env.observe("tool")
    assert observation.shape == (2 + 4 * 32,) and observation.dtype == np.float32
    assert observation[:2].tolist() == [1.0, 0.0]  # the acting role's one-hot
    assert np.any(observation[2 + 32 :] != 0)  # the tool has candidates
    assert not np.any(env.observe("planner")[2 + 32 :])  # the planner has none yet
    assert len(env.candidates) == 3


def test_candidate_blocks_are_the_candidates_in_action_order():
    env = candidate_env("plan_path-v0", k=4, featurizer=HashedNgrams(dim=16))
    env.reset(seed=3)
    blocks = env.observe("tool")[2 + 16 :].reshape(4, 16)
    for block, text in zip(blocks, env.candidates):
        np.testing.assert_allclose(block, HashedNgrams(dim=16)(text))


def test_playing_an_index_plays_that_candidate():
    env = candidate_env("plan_path-v0")
    env.reset(seed=1)
    index = _good(env)
    env.step(index)
    assert env.chosen.startswith("A search")
    assert env.infos["tool"]["reward_terms"]["plan"] == 1.0  # the search's printed plan reaches the goal


def test_shuffle_is_seeded_and_moves_the_good_candidate():
    positions = set()
    for seed in range(12):
        a, b = candidate_env("plan_path-v0"), candidate_env("plan_path-v0")
        a.reset(seed=seed)
        b.reset(seed=seed)
        assert a.candidates == b.candidates
        positions.add(_good(a))
    assert len(positions) > 1
    unshuffled = candidate_env("plan_path-v0", shuffle=False)
    unshuffled.reset(seed=5)
    assert _good(unshuffled) == 0


def test_oracle_choices_solve_and_random_choices_mostly_fail():
    make_env = lambda: candidate_env("plan_path-v0", max_turns=2)  # noqa: E731
    oracle_env = make_env()

    def oracle(agent, observation):
        return _good(oracle_env)

    def play(choose, tasks):
        wins = 0
        for i, task in enumerate(tasks):
            oracle_env.reset(seed=i, options={"task_id": task})
            while oracle_env.agents:
                observation, _, terminated, truncated, info = oracle_env.last()
                oracle_env.step(None if terminated or truncated else choose(oracle_env.agent_selection, observation))
            wins += info[EPISODE_KEY]["success"]
        return wins / len(tasks)

    assert play(oracle, HELD_OUT) == 1.0
    assert success_rate(make_env, random_choice(0, 4), HELD_OUT) < 0.4


def test_bad_indices_raise_naming_the_range():
    env = candidate_env("plan_path-v0", k=4)
    env.reset(seed=0)
    for bad in (4, -1, 1.5, "2", None, True):
        with pytest.raises(InvalidActionError, match=r"\[0, 4\)"):
            env.step(bad)
    env.step(np.int64(2))  # numpy integers, as libraries return them, are fine
    assert env.agent_selection == "planner"


def test_proposer_contract_is_checked():
    base = teamgym.make("plan_path-v0")
    with pytest.raises(InvalidArgumentError, match="exactly k=4"):
        CandidateChoiceEnv(base, lambda messages, k: ["only one"], k=4).reset(seed=0)
    with pytest.raises(InvalidArgumentError, match="planner"):
        CandidateChoiceEnv(base, {"tool": lambda messages, k: ["x"] * k})
    with pytest.raises(InvalidArgumentError, match="k=1"):
        CandidateChoiceEnv(base, lambda messages, k: ["x"] * k, k=1)
    with pytest.raises(InvalidArgumentError, match="planning env"):
        PlanningProposer(teamgym.make("sanity_relay-v0"))


def test_proposer_gets_the_roles_messages_and_garbage_candidates_are_penalised_not_raised():
    seen = []

    def proposer(messages, k):
        seen.append(messages)
        return ["", "\x00" * 10, "no code here", "x" * 100_000][:k]

    env = CandidateChoiceEnv(teamgym.make("plan_path-v0", max_turns=1), proposer, k=4)
    env.reset(seed=0)
    assert seen[0][-1]["role"] == "user" and "grid" in seen[0][-1]["content"]
    env.step(0)
    assert env.infos["tool"]["reward_terms"]["format"] < 0


def test_hashed_ngrams():
    featurize = HashedNgrams(dim=64)
    a, b = featurize("Actions: U,R,R"), featurize("I adopt the tool agent's plan.")
    assert a.shape == (64,) and a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(a, HashedNgrams(dim=64)("Actions: U,R,R"))
    assert float(a @ b) < 0.9
    assert not np.any(featurize(""))
    assert featurize("x" * 10_000_000).shape == (64,)
    with pytest.raises(InvalidArgumentError, match="dim"):
        HashedNgrams(dim=2)


def test_plain_api_test_and_snapshot_roundtrip():
    env = candidate_env("sokoban-v0", max_turns=2)
    api_test(env, num_cycles=10)
    env.reset(seed=4)
    snap = env.snapshot()
    first = list(env.candidates)
    env.step(0)
    env.restore(snap)
    assert env.candidates == first and env.agent_selection == "tool"
