"""check_env passes a correct env and catches each kind of broken one."""

from __future__ import annotations

import threading

import pytest
from pettingzoo import AECEnv

from teamgym.core import Outcome, reward_terms
from teamgym.errors import InvalidArgumentError
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


def test_check_env_accepts_an_env_instance():
    env = RelayEnv(max_turns=2)
    check_env(env, num_garbage=100)
    used = RelayEnv()
    used.reset(seed=3)
    check_env(used, num_garbage=100)  # already reset: the before-reset part cannot run, the rest does
    with pytest.raises(AssertionError, match="alpha\\*team\\+local"):
        check_env(WrongReward(), num_garbage=100)


def test_check_env_refuses_what_it_cannot_check():
    with pytest.raises(InvalidArgumentError, match="env_kwargs are arguments for teamgym.make"):
        check_env(RelayEnv(), env_kwargs={"max_turns": 2})
    with pytest.raises(InvalidArgumentError, match="expected a registered env id, a PettingZoo AECEnv"):
        check_env(42)
    locked = RelayEnv()
    locked.lock = threading.Lock()
    with pytest.raises(InvalidArgumentError, match=r"copy.deepcopy raised TypeError.*check_env\(lambda: RelayEnv"):
        check_env(locked)


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


class StaleTermsOnDeadSteps(RelayEnv):
    """PettingZoo's dead step alone: the rewards are cleared, the terms in infos still explain the step before."""

    def step(self, action):
        if self.agents and (self.terminations[self.agent_selection] or self.truncations[self.agent_selection]):
            self._was_dead_step(action)
            return
        super().step(action)


class KeyErrorAfterTheEnd(RelayEnv):
    def step(self, action):
        if self._has_reset and not self.agents:
            raise KeyError(self.agent_selection)
        super().step(action)


class AttributeErrorBeforeReset(RelayEnv):
    def last(self, observe=True):
        return AECEnv.last(self, observe)


class UndeclaredDiagnostic(RelayEnv):
    def _apply_action(self, agent, action):
        outcome = super()._apply_action(agent, action)
        return Outcome(outcome.terms, terminated=outcome.terminated, info={agent: {"heard": action[:3]}})


class DiagnosticOfAnotherType(UndeclaredDiagnostic):
    def _info_defaults(self, agent):
        return {"heard": 0}


class NoneInTheSummary(RelayEnv):
    def _episode_extras(self):
        return {"winner": None}


@pytest.mark.parametrize(
    ("env_class", "message"),
    [
        (UndeclaredDiagnostic, r"reports 'heard', which _info_defaults\('(speaker|listener)'\) does not declare"),
        (DiagnosticOfAnotherType, r"\['heard'\] is str .* _info_defaults declares int 0"),
        (NoneInTheSummary, r"summary holds None for \['winner'\]"),
        (StaleTermsOnDeadSteps, r"dead step of .* alpha\*team\+local"),
        (KeyErrorAfterTheEnd, r"step\(None\) after every agent is done raised KeyError.*EnvStateError"),
        (AttributeErrorBeforeReset, r"last\(\) before reset\(\) raised AttributeError.*EnvStateError"),
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
