"""Every registered env passes the full conformance suite (new envs are checked automatically).

This is each env's check with its defaults in the default run (older versions with fewer garbage actions there, the
full check under ``-m slow``); the envs' own test files keep only slow-marked full checks (with their defaults,
shorter timeouts or other options)."""

from __future__ import annotations

import pytest

import teamgym
from teamgym.testing import check_env
from teamgym.train.config import TrainConfig


def _full_check_in_default_run(env_id: str) -> bool:
    """The newest version of each env and the main job's env get the full check in the default run. An older
    version shares its code with the newest and differs in options, so it plays 200 garbage actions there (its
    garbage check is most of the time: programs that loop until the sandbox's timeout) and 1,000 under ``-m slow``."""
    return env_id in (teamgym.spec(env_id.rsplit("-v", 1)[0]).id, TrainConfig().env_id)


@pytest.mark.parametrize(
    "env_id",
    [env_id if _full_check_in_default_run(env_id) else pytest.param(env_id, marks=pytest.mark.slow)
     for env_id in teamgym.list_envs()],
)
def test_check_env(env_id):
    check_env(env_id, num_garbage=1000)


@pytest.mark.parametrize("env_id", [env_id for env_id in teamgym.list_envs() if not _full_check_in_default_run(env_id)])
def test_check_env_of_an_older_version(env_id):
    check_env(env_id, num_garbage=200)


@pytest.mark.parametrize("env_id", teamgym.list_envs())
def test_module_docstring_is_a_docs_page(env_id):
    import inspect

    module = inspect.getmodule(teamgym.spec(env_id).load())
    doc = inspect.getdoc(module) or ""
    assert len(doc) > 500, f"{env_id}: the env module's docstring is its docs page (agents, spaces, rewards...)"
    for word in ("reward", "agent"):
        assert word in doc.lower(), f"{env_id}: docs page does not mention {word!r}"
