"""check_env passes a correct env and catches each kind of broken one."""

from __future__ import annotations

import pytest

from teamgym.core import Outcome, reward_terms
from teamgym.testing import check_env, garbage_actions
from tests.support.relay_env import RelayEnv


def test_check_env_passes_reference_env():
    check_env(lambda: RelayEnv(), num_garbage=1000)


def test_check_env_accepts_ids(monkeypatch):
    import teamgym
    from teamgym import registry

    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("relay-v0", RelayEnv)
    check_env("relay-v0", num_garbage=100)


class CrashesOnGarbage(RelayEnv):
    def _apply_action(self, agent, action):
        if "```" in action:
            raise ValueError("cannot parse")
        return super()._apply_action(agent, action)


class WrongReward(RelayEnv):
    def _apply_action(self, agent, action):
        outcome = super()._apply_action(agent, action)
        self.rewards_bonus = True
        return outcome

    def _refresh(self, terms, extra):
        super()._refresh(terms, extra)
        for agent in self.agents:
            self.rewards[agent] += 0.25


class PartsDoNotSum(RelayEnv):
    def _apply_action(self, agent, action):
        return Outcome({agent: {"team": 0.0, "local": 1.0, "format": -1.0}})


class LeakyState(RelayEnv):
    """Keeps a counter outside the snapshotted state: restore cannot rewind it."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.counter = 0

    def _apply_action(self, agent, action):
        self.counter += 1
        return Outcome({agent: reward_terms(team=float(self.counter % 3 == 0))})


class UnseededTask(RelayEnv):
    def _task_from_id(self, task_id):
        import random

        return random.choice(self.task_ids())


@pytest.mark.parametrize(
    ("env_class", "message"),
    [
        (CrashesOnGarbage, "ValueError: cannot parse"),
        (WrongReward, "alpha\\*team\\+local"),
        (PartsDoNotSum, "sum to"),
        (LeakyState, "different episode"),
        (UnseededTask, "Incorrect|differ"),
    ],
)
def test_check_env_catches_broken_envs(env_class, message):
    with pytest.raises(AssertionError, match=message):
        check_env(lambda: env_class(), num_garbage=300)


def test_garbage_stream_covers_the_documented_kinds():
    import numpy as np

    stream = garbage_actions(np.random.default_rng(0))
    samples = [next(stream) for _ in range(400)]
    assert "" in samples
    assert any(len(s) >= 10_000 for s in samples)
    assert any(s.startswith("```python\n") for s in samples)
    assert any("\ud800" in s for s in samples)
    assert any(any(ord(c) < 32 and c not in "\n\t\r " for c in s) for s in samples)
