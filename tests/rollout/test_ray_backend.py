"""The Ray backend gives the same rollout as local slots (env actors started by a local ``ray.init()``)."""

from __future__ import annotations

import pytest

from teamgym.rollout import LocalSlots, RolloutEngine, SamplingParams, TreeSampling
from teamgym.rollout.engine import default_prompt
from tests.rollout.fakes import ScriptedSampler
from tests.rollout.test_engine import listener_text, speaker_text
from tests.support.relay_env import RelayEnv

pytest.importorskip("ray")


def make_env() -> RelayEnv:
    return RelayEnv(max_turns=3)


def policies() -> dict:
    return {"speaker": ScriptedSampler(speaker_text), "listener": ScriptedSampler(listener_text)}


def test_ray_slots_match_local_slots(local_ray):
    from teamgym.rollout.ray_backend import RaySlots

    tree = TreeSampling(k=3, strategy="top_m", top_m=2)
    local = RolloutEngine(LocalSlots(make_env, default_prompt), policies(), sampling=SamplingParams(max_tokens=8),
                          tree=tree, seed=5)
    remote = RolloutEngine(RaySlots(make_env, default_prompt), policies(), sampling=SamplingParams(max_tokens=8),
                           tree=tree, seed=5)
    try:
        a = local.rollout(["apple", "river", "copper"])
        b = remote.rollout(["apple", "river", "copper"])
    finally:
        local.close()
        remote.close()
    assert a.batch.rows() == b.batch.rows()
    assert a.episodes == b.episodes
