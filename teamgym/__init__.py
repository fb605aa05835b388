"""teamgym: PettingZoo text environments, reward wrappers and RL algorithms for teams of LLM agents.

>>> import teamgym
>>> env = teamgym.make("coder_tester-v0")
>>> env.reset(seed=0)
>>> sorted(env.possible_agents)
['coder', 'tester']
"""

from __future__ import annotations

__version__ = "0.1.0"

import teamgym.envs  # noqa: E402,F401  (registers the built-in envs; their modules load on first make)
from teamgym import errors
from teamgym.integrations.gym_registry import register_gymnasium_envs  # noqa: E402  (gymnasium.make("teamgym/..."))
from teamgym.registry import EnvSpec, list_envs, make, make_parallel, pprint_registry, register, spec

register_gymnasium_envs()

__all__ = [
    "__version__",
    "errors",
    "EnvSpec",
    "make",
    "make_parallel",
    "register",
    "spec",
    "list_envs",
    "pprint_registry",
    "register_gymnasium_envs",
]
