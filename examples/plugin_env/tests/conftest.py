"""Register the package's envs, so that the tests also run from a checkout that is not installed."""

from __future__ import annotations

from teamgym_ascend import register_envs

register_envs()
