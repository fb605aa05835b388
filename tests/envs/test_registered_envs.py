"""Every registered env passes the full conformance suite (new envs are checked automatically).

This is each env's check with its defaults in the default run; the envs' own test files keep only slow-marked full
checks (with their defaults, shorter timeouts or other options)."""

from __future__ import annotations

import pytest

import teamgym
from teamgym.testing import check_env


@pytest.mark.parametrize("env_id", teamgym.list_envs())
def test_check_env(env_id):
    check_env(env_id, num_garbage=1000)


@pytest.mark.parametrize("env_id", teamgym.list_envs())
def test_module_docstring_is_a_docs_page(env_id):
    import inspect

    module = inspect.getmodule(teamgym.spec(env_id).load())
    doc = inspect.getdoc(module) or ""
    assert len(doc) > 500, f"{env_id}: the env module's docstring is its docs page (agents, spaces, rewards...)"
    for word in ("reward", "agent"):
        assert word in doc.lower(), f"{env_id}: docs page does not mention {word!r}"
