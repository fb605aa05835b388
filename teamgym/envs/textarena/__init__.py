"""TextArena games as teamgym envs: ``teamgym.make("textarena/TicTacToe-v0")``; see :mod:`.env`."""

from teamgym.envs.textarena.env import GAMES, TextArenaEnv

__all__ = ["GAMES", "TextArenaEnv"]
