"""Composing the wrappers in any order keeps check_env green (the issue's acceptance criterion)."""

from __future__ import annotations

import copy
import itertools

import pytest

from teamgym.algos import BanditAlpha
from teamgym.testing import check_env, play_episode
from teamgym.wrappers import MonteCarloScorer, ProcessReward, Recorder, RewardMixing, TurnLimit
from tests.wrappers.envs import DEFAULT_REGISTERED, FACTORIES, TEST_ENVS, env_params

WRAPPERS = ("mixing", "process", "recorder", "turn_limit")


def _stack(make, order, path):
    def build():
        env = make()
        for name in order:
            if name == "mixing":
                env = RewardMixing(env, alpha=BanditAlpha(env.possible_agents, seed=0))
            elif name == "process":
                env = ProcessReward(env, lambda e, agent, action: len(action) % 7 / 7, weight=0.3)
            elif name == "recorder":
                env = Recorder(env, path)
            else:
                env = TurnLimit(env, 1)
        return env

    return build


def _orders():
    """Every order on the test envs; on two registered envs one order and its reverse (the rest: slow)."""
    for name in FACTORIES:
        for order in itertools.permutations(WRAPPERS):
            default = name in TEST_ENVS or (
                name in DEFAULT_REGISTERED and order in (WRAPPERS, WRAPPERS[::-1])
            )
            marks = () if default else (pytest.mark.slow,)
            yield pytest.param(name, order, marks=marks, id=f"{name}-{'-'.join(order)}")


@pytest.mark.parametrize("name,order", list(_orders()))
def test_every_order_passes_check_env(name, order, tmp_path):
    check_env(_stack(FACTORIES[name], order, tmp_path / "turns.jsonl"), num_garbage=60, api_cycles=5)


@pytest.mark.parametrize("name", env_params())
def test_monte_carlo_process_inside_a_stack(name, tmp_path):
    def build():
        env = Recorder(FACTORIES[name](), tmp_path / "t")
        env = ProcessReward(env, MonteCarloScorer(lambda obs: "1", num_rollouts=2, max_steps=6))
        return RewardMixing(TurnLimit(env, 2), alpha=0.5)

    # rollouts multiply the cost of every step: keep registered envs (sandboxed steps) to a short check
    short = name not in TEST_ENVS
    check_env(build, num_garbage=10 if short else 40, api_cycles=2 if short else 3)


@pytest.mark.parametrize("name", env_params(default=DEFAULT_REGISTERED))
def test_wrappers_never_write_into_the_unwrapped_env(name, tmp_path):
    actions = ["7 apple", "", "2", "river", "x"]
    plain = FACTORIES[name]()
    stream = iter(actions * 20)
    expected = play_episode(plain, lambda a, o, i: next(stream), seed=3)
    wrapped = _stack(FACTORIES[name], ("mixing", "process", "recorder"), tmp_path / "t")()
    base = wrapped.unwrapped
    stream = iter(actions * 20)
    seen = []
    wrapped.reset(seed=3)
    while wrapped.agents:
        agent = wrapped.agent_selection
        dead = wrapped.terminations[agent] or wrapped.truncations[agent]
        wrapped.step(None if dead else next(stream))
        if not dead:
            seen.append({"rewards": dict(base.rewards), "infos": copy.deepcopy(base.infos)})
    assert [row["rewards"] for row in expected] == [row["rewards"] for row in seen]
    assert [row["infos"] for row in expected] == [row["infos"] for row in seen]
