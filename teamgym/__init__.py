"""teamgym: PettingZoo text environments, reward wrappers and RL algorithms for teams of LLM agents."""

from __future__ import annotations

__version__ = "0.1.0"

from teamgym import errors

__all__ = ["__version__", "errors"]
