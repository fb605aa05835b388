"""The envs wrapper tests run on: the two test envs, plus every registered env this branch can build.

Checks on a registered env take seconds to tens of seconds (most run code in the sandbox), so the default run
covers every wrapper on the two test envs and a full stack of wrappers on two registered envs
(``DEFAULT_REGISTERED``); ``pytest -m slow`` runs every check on every registered env.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pettingzoo import AECEnv

import teamgym
from teamgym.errors import RegistrationError
from tests.support.relay_env import RelayEnv
from tests.support.tally_env import TallyEnv

EnvFactory = Callable[[], AECEnv]


def _registered() -> dict[str, EnvFactory]:
    found: dict[str, EnvFactory] = {}
    for env_id in teamgym.list_envs():
        try:
            teamgym.make(env_id).close()
        except (RegistrationError, ImportError):  # the env's branch is not merged here yet
            continue
        found[env_id] = lambda env_id=env_id: teamgym.make(env_id)
    return found


#: the test envs (fast, with known rewards).
TEST_ENVS: dict[str, EnvFactory] = {"relay": RelayEnv, "tally": TallyEnv}

#: every registered env this branch can build.
REGISTERED: dict[str, EnvFactory] = _registered()

#: name -> zero-argument factory of a fresh env.
FACTORIES: dict[str, EnvFactory] = {**TEST_ENVS, **REGISTERED}

#: registered envs checked in the default run (the two cheapest to check).
DEFAULT_REGISTERED: tuple[str, ...] = tuple(n for n in ("discussion-v0", "math_tool-v0") if n in REGISTERED)


def env_params(default: tuple[str, ...] = ()) -> list:
    """Test-env names, plus every registered env (marked slow unless named in ``default``)."""
    params = [pytest.param(name) for name in TEST_ENVS]
    for name in REGISTERED:
        marks = () if name in default else (pytest.mark.slow,)
        params.append(pytest.param(name, marks=marks))
    return params
