"""The envs wrapper tests run on: the two test envs, plus every registered env this branch can build."""

from __future__ import annotations

from collections.abc import Callable

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


#: name -> zero-argument factory of a fresh env.
FACTORIES: dict[str, EnvFactory] = {"relay": RelayEnv, "tally": TallyEnv, **_registered()}

#: the test envs only (fast, with known rewards).
TEST_ENVS: dict[str, EnvFactory] = {"relay": RelayEnv, "tally": TallyEnv}
