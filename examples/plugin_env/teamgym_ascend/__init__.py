"""The ``ascend-v0`` env for teamgym, as a plugin package (see :mod:`.env`).

Installed (``pip install -e examples/plugin_env``), teamgym finds it through the ``teamgym.envs`` entry point in
``pyproject.toml``: ``teamgym list`` shows ``ascend-v0`` and ``teamgym.make("ascend-v0")`` builds it.
"""

from __future__ import annotations

import teamgym

__all__ = ["register_envs"]


def register_envs() -> None:
    """Register every env of this package (teamgym calls it through the ``teamgym.envs`` entry point)."""
    teamgym.register("ascend-v0", "teamgym_ascend.env:AscendEnv")
