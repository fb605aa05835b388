"""``max_cycles`` with PettingZoo's meaning on every built-in env, checked by PettingZoo's own test utilities."""

from __future__ import annotations

import functools
import types

import pytest
from pettingzoo.test import max_cycles_test, render_test

import teamgym
from teamgym.errors import InvalidArgumentError

BUILT_IN = [env_id for env_id in teamgym.list_envs() if teamgym.spec(env_id).load().__module__.startswith("teamgym.")]
# The sanity envs are defined by their length (one or two cycles): max_cycles can shorten them, never lengthen them.
# TextArena's games end by their own rules (a win, an invalid move), which PettingZoo's test does not allow for.
OPEN_ENDED = [env_id for env_id in BUILT_IN if not env_id.startswith(("sanity_", "textarena/"))]


@pytest.mark.parametrize("env_id", OPEN_ENDED)
def test_pettingzoo_max_cycles_test(env_id):
    module = types.SimpleNamespace(
        env=functools.partial(teamgym.make, env_id), parallel_env=functools.partial(teamgym.make_parallel, env_id)
    )
    max_cycles_test(module)


@pytest.mark.parametrize("env_id", BUILT_IN)
def test_pettingzoo_render_test(env_id, capsys):
    render_test(functools.partial(teamgym.make, env_id))


# An empty move ends a TextArena game by its rules (an invalid move) before the cycle is complete.
@pytest.mark.parametrize("env_id", [env_id for env_id in BUILT_IN if not env_id.startswith("textarena/")])
def test_one_cycle_is_one_step_of_every_agent(env_id):
    env = teamgym.make(env_id, max_cycles=1)
    env.reset(seed=0)
    steps = 0
    while not any(env.terminations.values()) and not any(env.truncations.values()):
        env.step("")
        steps += 1
    assert steps == len(env.possible_agents)
    assert env.max_turns == 1


def test_max_cycles_sets_max_turns_and_rounds():
    assert teamgym.make("coder_tester-v0", max_cycles=6).max_turns == 6
    assert teamgym.make("discussion-v0", max_cycles=4).rounds == 3
    assert teamgym.make("sanity_two_turn-v0", max_cycles=5).max_turns == 2  # never longer than the env's definition


@pytest.mark.parametrize("kwargs", [{"max_cycles": 0}, {"max_cycles": 2.5}, {"max_cycles": True}])
def test_bad_max_cycles_raise(kwargs):
    with pytest.raises(InvalidArgumentError, match="max_cycles"):
        teamgym.make("plan_path-v0", **kwargs)
    with pytest.raises(InvalidArgumentError, match="max_cycles"):
        teamgym.make("discussion-v0", **kwargs)


@pytest.mark.parametrize(("env_id", "other"), [("coder_tester-v0", "max_turns"), ("discussion-v0", "rounds")])
def test_max_cycles_with_the_envs_own_limit_is_refused(env_id, other):
    with pytest.raises(InvalidArgumentError, match=f"max_cycles=3, {other}=2"):
        teamgym.make(env_id, max_cycles=3, **{other: 2})
