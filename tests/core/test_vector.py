"""TextSpace in Gymnasium's vector envs and SuperSuit's vec conversions (the libraries' own code runs)."""

from __future__ import annotations

import copy

import gymnasium
import pytest
from gymnasium.vector.utils import (
    batch_space,
    concatenate,
    create_empty_array,
    create_shared_memory,
    iterate,
    read_from_shared_memory,
    write_to_shared_memory,
)

import teamgym  # noqa: F401  (registers the teamgym/ Gymnasium ids)
from teamgym.core import TextSpace

UNICODE = "def f():\n    return '√é😀\u202e'"


def make_listener():
    return gymnasium.make("teamgym/sanity_relay-v0", agent="listener")


def test_the_vector_functions_batch_texts_as_tuples():
    space = TextSpace(64, seed=0)
    batched = batch_space(space, n=3)
    assert len(batched) == 3 and all(sub == space for sub in batched)
    assert list(iterate(batched, ("a", UNICODE, ""))) == ["a", UNICODE, ""]
    assert list(iterate(space, ("a", "b"))) == ["a", "b"]  # SuperSuit iterates with the single space
    assert concatenate(space, ["x", UNICODE], create_empty_array(space, n=2)) == ("x", UNICODE)
    assert create_empty_array(space, n=2) == ("", "")
    assert batched.contains(("a", UNICODE, ""))


def test_shared_memory_carries_any_unicode_and_stays_live():
    space = TextSpace(64)
    memory = create_shared_memory(space, n=2)
    view = read_from_shared_memory(space, memory, n=2)
    write_to_shared_memory(space, 1, UNICODE, memory)
    assert tuple(view) == ("", UNICODE)
    frozen = copy.deepcopy(view)
    write_to_shared_memory(space, 0, "later", memory)
    assert view[0] == "later" and frozen == ("", UNICODE) and type(frozen) is tuple


@pytest.mark.parametrize(
    "make_vector",
    [
        lambda fns: gymnasium.vector.SyncVectorEnv(fns),
        lambda fns: gymnasium.vector.AsyncVectorEnv(fns),
        lambda fns: gymnasium.vector.AsyncVectorEnv(fns, shared_memory=False),
    ],
    ids=["sync", "async-shared-memory", "async-pipes"],
)
def test_gymnasium_vector_envs_step_text_envs(make_vector):
    envs = make_vector([make_listener, make_listener])
    try:
        observations, infos = envs.reset(seed=[0, 1], options={"task_id": 2})
        assert tuple(observations["prompt"]) == ("heard c>", "heard c>")
        observations, rewards, terminations, truncations, infos = envs.step(("c", "x"))
        assert rewards.tolist() == [1.0, 0.0] and terminations.all()
        assert infos["teamgym_episode"]["success"].tolist() == [True, False]
    finally:
        envs.close()


def test_supersuit_vec_conversions():
    supersuit = pytest.importorskip("supersuit")
    vec = supersuit.pettingzoo_env_to_vec_env_v1(teamgym.make_parallel("sanity_relay-v0"))
    observations, _ = vec.reset(seed=0, options={"task_id": 2})
    assert tuple(observations["prompt"]) == ("c>", "heard >")
    observations, rewards, *_ = vec.step(["c", "c"])
    reference = teamgym.make_parallel("sanity_relay-v0")
    reference.reset(seed=0, options={"task_id": 2})
    expected = reference.step({"speaker": "c", "listener": "c"})[1]
    assert rewards.tolist() == [expected["speaker"], expected["listener"]] and expected["listener"] > 0
    concat = supersuit.concat_vec_envs_v1(vec, 2, num_cpus=0, base_class="gymnasium")
    observations, _ = concat.reset(seed=0)
    assert len(observations["prompt"]) == 4 and all(isinstance(p, str) for p in observations["prompt"])
    _, rewards, *_ = concat.step(["a", "b", "c", "d"])
    assert rewards.shape == (4,)
    concat.close()
