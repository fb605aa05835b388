"""``textarena/<GameId>``: a TextArena game (``pip install 'teamgym[textarena]'``) as a teamgym env.

**Ids.** ``textarena/TicTacToe-v0`` (2 players), ``textarena/ThreePlayerTicTacToe-v0`` (3 players) and
``textarena/ThreePlayerIPD-v0`` (a 3-player iterated prisoner's dilemma with a chat round before each decision:
cooperation pays the group). They are registered when ``textarena`` is importable (``teamgym list`` shows them
then). Other TextArena games run through :class:`TextArenaEnv` directly (``TextArenaEnv("Nim-v0", num_players=2)``)
or ``teamgym.register``; all of these run offline (TextArena's games need no download at make or reset).

**Agents.** TextArena's players ``0..N-1`` as roles ``player_0``, ..., in the order the game gives the move.
A *turn* (round) ends when the move goes back to a player with a lower or equal index.

**Task.** Any int >= 0 is a task: the game's seed (``reset(num_players, seed=task_id)``).

**Observation.** ``Dict(prompt=TextSpace, turn=Discrete)``: the player's TextArena observation (its default
wrappers: the game's prompt and every message the player received, as one text). Chat ``messages`` as in every
teamgym env. **Action.** The player's raw answer (TextArena parses it, e.g. ``[4]`` in tic-tac-toe).

**Rewards.** TextArena scores a game once, at the end (its ``close()``: per player, e.g. +1 win, -1 loss, 0 draw;
an invalid move ends the game against the player who made it). At the final step every player gets

====================  ==========================================================================
term                  meaning
====================  ==========================================================================
team                  what the group earned together: in the prisoner's dilemma, whose TextArena rewards
                      only rank the players, the players' mean point score over the score of full mutual
                      cooperation (1.0 when everyone always cooperated); 0 in competitive games
                      (tic-tac-toe: ``competitive``), where no outcome pays the group as a whole; in any
                      other game the mean of the players' TextArena rewards
local ``edge``        the player's own TextArena reward minus ``team``, or in competitive games minus the
                      players' mean TextArena reward
local ``error``       -1 when TextArena itself raised on this player's action (the game then ends)
====================  ==========================================================================

so with ``alpha=1`` a player's episode return is its TextArena reward, and ``alpha > 1`` pays the group's outcome on
top (in the prisoner's dilemma: cooperation), except in competitive games. There a player's return is its TextArena
reward minus the players' mean, at any ``alpha``: the same as its TextArena reward in two-player tic-tac-toe (+1 /
-1, or 0 / 0), and zero-sum in three-player tic-tac-toe, whose TextArena rewards are not (a win pays +1 and each
loser -1; an invalid move ends the game with -1 for its player and +1 for each other one). Were the mean paid as
``team``, a forfeit (garbage twice) would raise the group's sum from -1 to +1 and, at ``alpha > 1``, every other
player's return: what an estimator that scores the sum of the agents' rewards would learn. Earlier steps earn 0.

**Success.** The game ended by its own rules with no invalid move by any player (not by a player's invalid move,
TextArena's error or the turn limit). In the prisoner's dilemma TextArena counts a decision a player does not
state as cooperation (its prompt tells the players so): an empty answer cooperates, is no invalid move, and a game of
empty answers is scored as full cooperation.

**Scripted policies.** Tic-tac-toe games: ``first_free`` (the first empty cell, read from the board).
The prisoner's dilemma: ``cooperate`` (cooperates with every other player, in chat and decision rounds).

**Determinism.** TextArena draws from Python's global ``random`` (seeded at reset). The env keeps its own state of
that generator: every call into the game runs with the env's state swapped in and the process's swapped back after,
so seeds reproduce, snapshots restore exactly, and nothing else in the process is disturbed (not thread-safe: one
thread per env, as PettingZoo envs are anyway).

**Options.** ``game_id`` (the TextArena id), ``num_players`` (default: the game's, as registered here),
``max_turns`` (default 50; or ``max_cycles``, PettingZoo's name for it), ``alpha``, ``render_mode``, ``competitive``
(default: True for the tic-tac-toe games, ``COMPETITIVE_GAMES``; pass it for another game whose players compete).

**Version history.** v0: first release (TextArena 0.7.4). 2026-12-07: in the tic-tac-toe games ``team`` is 0 and
``edge`` is measured from the players' mean (``team`` was that mean): a player's return was its TextArena reward at
``alpha=1`` and is now that minus the mean, which changes nothing in two-player tic-tac-toe. The ids keep TextArena's
versions; no result was recorded on three-player tic-tac-toe before the change.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from teamgym.core import Outcome, Policy, TurnBasedTextEnv, reward_terms
from teamgym.errors import DependencyNotInstalled, InvalidArgumentError

__all__ = ["COMPETITIVE_GAMES", "GAMES", "TextArenaEnv", "TextArenaState"]

logger = logging.getLogger(__name__)

#: The TextArena games registered as ``textarena/<GameId>``, with their number of players.
GAMES: dict[str, int] = {"TicTacToe-v0": 2, "ThreePlayerTicTacToe-v0": 3, "ThreePlayerIPD-v0": 3}
#: Of these, the games where players compete: no outcome pays the group (``competitive`` defaults to True for them).
COMPETITIVE_GAMES = frozenset({"TicTacToe-v0", "ThreePlayerTicTacToe-v0"})


def _textarena() -> Any:
    try:
        import textarena
    except ImportError:
        raise DependencyNotInstalled("textarena", "textarena", "TextArena games as teamgym envs") from None
    return textarena


@dataclass
class TextArenaState:
    """The live TextArena game, the env's own state of Python's ``random``, and what each player last saw."""

    game: Any
    random_state: Any
    prompts: dict[str, str] = field(default_factory=dict)
    current: str = ""
    done: bool = False
    clean_end: bool = False
    final_rewards: dict[str, float] = field(default_factory=dict)

    def __getstate__(self) -> dict[str, Any]:
        # TextArena's wrappers forward every missing attribute to the env they wrap, so pickle and deepcopy, which
        # look attributes up on a blank instance, recurse forever: copy the chain as plain layers instead.
        return {**vars(self), "game": _layers(self.game)}

    def __setstate__(self, values: dict[str, Any]) -> None:
        vars(self).update({**values, "game": _chain(values["game"])})


def _layers(game: Any) -> list[tuple[type, dict[str, Any]]]:
    """The wrapper chain of ``game``, outermost first, as ``(class, attributes without .env)``; then the game."""
    layers = []
    while "env" in vars(game) and hasattr(type(game), "__getattr__"):
        layers.append((type(game), {k: v for k, v in vars(game).items() if k != "env"}))
        game = vars(game)["env"]
    return [*layers, (type(game), dict(vars(game)))]


def _chain(layers: list[tuple[type, dict[str, Any]]]) -> Any:
    """The game :func:`_layers` described (a fresh object per layer)."""
    inner = None
    for cls, values in reversed(layers):
        layer = cls.__new__(cls)
        vars(layer).update(values)
        if inner is not None:
            vars(layer)["env"] = inner
        inner = layer
    return inner


class TextArenaEnv(TurnBasedTextEnv[int, TextArenaState]):
    """One TextArena game; its players are the roles. See the module docstring."""

    metadata = {"name": "textarena", "render_modes": ["ansi", "human"], "is_parallelizable": True}

    def __init__(
        self,
        game_id: str = "TicTacToe-v0",
        *,
        num_players: int | None = None,
        max_turns: int = 50,
        max_cycles: int | None = None,
        alpha: float | dict[str, float] = 1.0,
        render_mode: str | None = None,
        competitive: bool | None = None,
    ):
        ta = _textarena()
        if game_id not in ta.envs.registration.ENV_REGISTRY:
            raise InvalidArgumentError(
                f"game_id={game_id!r} is not a TextArena game: expected an id of textarena's registry, e.g. "
                f"{', '.join(GAMES)}"
            )
        players = GAMES.get(game_id) if num_players is None else num_players
        if isinstance(players, bool) or not isinstance(players, int) or players < 1:
            raise InvalidArgumentError(
                f"num_players={num_players!r} for {game_id!r}: give the number of players the game takes (an int >= 1)"
            )
        super().__init__(
            max_turns=max_turns,
            max_cycles=max_cycles,
            alpha=alpha,
            render_mode=render_mode,
            agents=[f"player_{i}" for i in range(players)],
        )
        if competitive is None:
            competitive = game_id in COMPETITIVE_GAMES
        if not isinstance(competitive, bool):
            raise InvalidArgumentError(
                f"competitive={competitive!r}: expected True (players compete: team 0, edge from the players' mean), "
                "False (team: the mean TextArena reward) or None (True for the games of COMPETITIVE_GAMES)"
            )
        self.game_id = game_id
        self.num_players = players
        self.competitive = competitive
        self.metadata = {**self.metadata, "name": f"textarena/{game_id}"}

    # ------------------------------------------------------------------ hooks
    def task_ids(self) -> None:
        return None  # any int seed

    def _task_from_id(self, task_id: Any) -> int:
        if isinstance(task_id, bool) or not isinstance(task_id, int) or task_id < 0:
            raise InvalidArgumentError(f"task_id={task_id!r}: expected an int >= 0 (the game's seed)")
        return task_id

    def _initial_state(self, task: int) -> TextArenaState:
        ta = _textarena()
        state = TextArenaState(game=ta.make(self.game_id), random_state=random.Random(task).getstate())
        with self._game_random(state):
            state.game.reset(num_players=self.num_players, seed=task)
        self._read_observation(state)
        return state

    def _system_prompt(self, agent: str) -> str:
        return f"You are {agent} in the TextArena game {self.game_id}. Answer with your move."

    def _user_prompt(self, agent: str) -> str:
        return self.state.prompts.get(agent, "") or "(nothing yet: wait for your turn)"

    def _select_first(self) -> str:
        return self.state.current

    def _select_next(self, agent: str) -> str | None:
        if self.state.done:
            return None
        after = self.state.current
        return after if self.agents.index(after) > self.agents.index(agent) else None

    def _state_key(self, agent: str) -> str:
        return f"{agent}\n{self._user_prompt(agent)}"

    def _is_success(self) -> bool:
        return self.state.clean_end

    def _episode_extras(self) -> dict[str, Any]:
        return {"game_id": self.game_id, "textarena_rewards": dict(self.state.final_rewards)}

    def _scripted_policies(self) -> dict[str, dict[str, Callable[[], Policy]]]:
        if "TicTacToe" in self.game_id:
            named = {"first_free": lambda: self._first_free}
        elif "IPD" in self.game_id or "PrisonersDilemma" in self.game_id:
            named = {"cooperate": lambda: self._cooperate}
        else:
            return {}
        return {agent: dict(named) for agent in self.possible_agents}

    def _apply_action(self, agent: str, action: str) -> Outcome:
        state = self.state
        try:
            with self._game_random(state):
                done, _ = state.game.step(action=action)
        except Exception as err:  # a game's own bug on odd text must not stop training: it ends the game
            logger.warning("TextArena %s raised on %s's action: %s: %s", self.game_id, agent, type(err).__name__, err)
            return self._finish(agent, error=True)
        if done:
            return self._finish(agent, error=False)
        self._read_observation(state)
        return Outcome({agent: reward_terms(team=0.0, edge=0.0, error=0.0)})

    # ------------------------------------------------------------------ internals
    def _finish(self, agent: str, *, error: bool) -> Outcome:
        state = self.state
        state.done = True
        rewards: dict[int, float] = {}
        game_info: dict[int, Any] = {}
        if not error:
            with self._game_random(state):
                rewards, game_info = state.game.close()
        own = {f"player_{pid}": float(value) for pid, value in (rewards or {}).items()}
        invalid = any(bool(info.get("invalid_move")) for info in (game_info or {}).values() if isinstance(info, dict))
        state.clean_end = not error and not invalid
        if error:
            own = {a: -1.0 if a == agent else 0.0 for a in self.possible_agents}
            terms = {a: reward_terms(team=0.0, edge=0.0, error=own[a]) for a in self.possible_agents}
        else:
            team, baseline = self._team_value(own)
            terms = {a: reward_terms(team=team, edge=own.get(a, 0.0) - baseline, error=0.0)
                     for a in self.possible_agents}
        state.final_rewards = own
        return Outcome(terms, terminated=True, info={a: {"textarena_reward": own.get(a, 0.0)} for a in own})

    def _info_defaults(self, agent: str) -> dict[str, Any]:
        return {"textarena_reward": 0.0}  # the game's own reward for the agent, at the end

    def _team_value(self, own: dict[str, float]) -> tuple[float, float]:
        """The group's payoff and what each player's ``edge`` is measured from. A prisoner's dilemma (a game that
        keeps point scores and a mutual-cooperation payoff ``R``): its players' mean score over what full cooperation
        earns, both times. A competitive game: 0, and the players' mean TextArena reward (so the returns sum to 0).
        Any other game: the players' mean TextArena reward, both times."""
        game = self.state.game
        scores = getattr(game.state, "game_state", {}).get("scores")
        if isinstance(scores, dict) and hasattr(game, "R") and hasattr(game, "num_rounds"):
            best = float(game.R) * (self.num_players - 1) * int(game.num_rounds)
            team = sum(scores.values()) / (len(scores) * best) if best > 0 else 0.0
            return team, team
        mean = sum(own.values()) / len(self.possible_agents)
        return (0.0, mean) if self.competitive else (mean, mean)

    def _read_observation(self, state: TextArenaState) -> None:
        with self._game_random(state):
            pid, observation = state.game.get_observation()
        state.current = f"player_{pid}"
        state.prompts[state.current] = observation if isinstance(observation, str) else str(observation)

    def _first_free(self, observation: Any) -> str:
        board = self.state.game.state.game_state["board"]
        cells = [r * len(board) + c for r, row in enumerate(board) for c, cell in enumerate(row) if cell == ""]
        return f"[{cells[0] if cells else 0}]"

    def _cooperate(self, observation: Any) -> str:
        me = self.possible_agents.index(self.agent_selection)
        return " ".join(f"[{other} cooperate]" for other in range(self.num_players) if other != me)

    @contextmanager
    def _game_random(self, state: TextArenaState) -> Iterator[None]:
        """Run TextArena with the env's own state of Python's ``random``; the process's is put back after."""
        outside = random.getstate()
        random.setstate(state.random_state)
        try:
            yield
        finally:
            state.random_state = random.getstate()
            random.setstate(outside)
