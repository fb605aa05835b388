"""Scripted teams: which env ids are built in, and episodes played by an env's own scripted policies.

The catalogue's example episode and the versioning fingerprints both play these teams, so a page shows exactly the
behaviour a fingerprint pins.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from pettingzoo import AECEnv

from teamgym.core import Policy, TurnBasedTextEnv
from teamgym.registry import list_envs, make, spec

__all__ = ["BUILTIN_PREFIX", "build", "builtin_ids", "play_constant", "play_team", "scripted_team", "team_names"]

#: Entry points of the envs that ship with teamgym start with this (plugins' and tests' envs do not).
BUILTIN_PREFIX = "teamgym.envs."


def builtin_ids() -> list[str]:
    """Every registered id whose entry point is in ``teamgym.envs``, sorted."""
    return [env_id for env_id in list_envs()
            if isinstance(spec(env_id).entry_point, str) and spec(env_id).entry_point.startswith(BUILTIN_PREFIX)]


def build(env_id: str, **kwargs: Any) -> AECEnv:
    """``teamgym.make`` without the warning of a deprecated version (pages and fingerprints cover those too)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return make(env_id, **kwargs)


def team_names(env: AECEnv) -> list[str]:
    """The scripted teams an env offers: every policy name of any role, sorted (``[]`` without scripted policies)."""
    base = env.unwrapped
    if not isinstance(base, TurnBasedTextEnv):
        return []
    return sorted({name for names in base.scripted_policies().values() for name in names})


def scripted_team(env: AECEnv, name: str | None = None) -> dict[str, Policy]:
    """Each role's scripted policy called ``name`` (a role without one plays its default; ``None``: every default).

    Make the team after ``reset``: a scripted policy reads the env it was made from. Roles without any scripted
    policy are left out.
    """
    base = env.unwrapped
    if not isinstance(base, TurnBasedTextEnv):
        return {}
    return {role: base.scripted_policy(role, name if name in names else None)
            for role, names in base.scripted_policies().items()}


def play_team(env: AECEnv, name: str | None, *, seed: int, max_steps: int = 500) -> list[dict[str, Any]]:
    """One episode from ``reset(seed=seed)`` played by the scripted team ``name`` (see :func:`scripted_team`).

    Roles without a scripted policy reply with an empty completion. Returns :func:`teamgym.testing.play_episode`'s
    rows.
    """
    env.reset(seed=seed)
    team = scripted_team(env, name)
    return _play(env, lambda agent, observation: team[agent](observation) if agent in team else "", seed, max_steps)


def play_constant(env: AECEnv, completion: str, *, seed: int, max_steps: int = 500) -> list[dict[str, Any]]:
    """One episode from ``reset(seed=seed)`` in which every agent always replies ``completion``."""
    return _play(env, lambda agent, observation: completion, seed, max_steps)


def _play(env: AECEnv, act: Callable[[str, Any], str], seed: int, max_steps: int) -> list[dict[str, Any]]:
    # PettingZoo's test suite comes with teamgym.testing: imported when an episode is played, not by every CLI call.
    from teamgym.testing import play_episode

    return play_episode(env, lambda agent, observation, info: act(agent, observation), seed=seed,
                        max_steps=max_steps)
