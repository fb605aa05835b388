"""``ascend-v0``: N agents hold hidden cards and must play them all onto one pile in ascending order.

A cooperative game of timing under hidden information, after Wolfgang Warsch's card game *The Mind*: nobody may
say which cards they hold, so a player who holds a low card must judge, from the pile and from who waited, when
it is safe to play it. Language agents have to reason about what their team-mates cannot see, and credit has to
reach the agent whose patience (or haste) made the team win (or lose).

Agents and turns
    ``player_0`` ... ``player_{N-1}`` (``num_agents`` = N >= 2), in this order every turn; a player whose hand is
    empty is skipped. On its step a player replies with its reasoning and ends with ``Action: PLAY`` (its lowest
    card goes onto the pile) or ``Action: WAIT``. A card is played **in order** when no card left in any hand is
    lower; otherwise the team loses a life and every lower card still held is discarded. The episode
    **terminates** when every hand is empty or no life is left, and is **truncated** after ``max_turns`` turns.

Tasks
    Procedural: ``hand_size`` distinct cards per player from 1..``card_max``, dealt with
    ``numpy.random.default_rng(task_id)``; any int is a task, nothing to download.

What a player sees
    Its own hand, the top of the pile, the lives left, how many cards each other player holds, and the last
    actions of the others (who played which card, who waited). Never another player's cards.

Spaces
    Observation: ``Dict({"prompt": TextSpace(max_prompt_chars), "turn": Discrete(max_turns + 1)})``; action:
    ``TextSpace(max_action_chars)``, the raw completion.

Rewards (``rewards[agent] == alpha * team + local``; ``local`` is the sum of the agent's other terms)

    ===========  ==========  ======================  =====================  ===================================
    term         agent       range                   default weight         meaning
    ===========  ==========  ======================  =====================  ===================================
    ``team``     every       {-1/lives, 0, 1/C}      ``alpha`` = 1          +1/C when a card is played in
                                                                            order (C cards in all), -1/lives
                                                                            when one is played out of order
    ``blunder``  acting      {-blunder_penalty, 0}   ``blunder_penalty``    it played out of order
                                                     = 0.25
    ``format``   acting      {-format_penalty, 0}    ``format_penalty``     no ``Action: PLAY|WAIT`` line (the
                                                     = 0.25                 reply counts as a wait)
    ===========  ==========  ======================  =====================  ===================================

    The team return lies in [-1, 1]: 1 when every card is played in order, which the oracle team always earns;
    -1 when every life is lost. Waiting is free, but the episode ends after ``max_turns`` turns, leaving the cards
    still held unearned.

Infos (besides the base's ``reward_terms``, ``messages``...)
    acting agent: ``action`` (``"play"``, ``"wait"`` or ``None``), ``card`` (the card played, or ``None``),
    ``in_order``; ``progress`` (the share of cards played in order) for every agent. Episode summary:
    ``played_in_order``, ``num_cards``, ``mistakes``, ``lives_left``, ``discarded``.

Options (keyword-only)
    ``num_agents`` (3, >= 2), ``hand_size`` (2, 1-10), ``card_max`` (100, at least one card per card dealt),
    ``lives`` (2, >= 1), ``max_turns`` (``None``: the number of cards + 2), ``alpha`` (1.0, or a dict per agent),
    ``render_mode``, ``blunder_penalty`` (0.25), ``format_penalty`` (0.25), ``max_prompt_chars`` (8192),
    ``max_action_chars`` (8192).

Scripted policies (for every agent)
    ``oracle`` (default; sees every hand and plays exactly when its lowest card is the lowest left), ``estimate``
    (fair: plays when fewer than half a card is expected below its lowest one, or when a whole round passed without
    a play) and ``random`` (plays or waits at random; one reply in five has no action line).

Version history
    v0: first version.

>>> import teamgym
>>> env = teamgym.make("ascend-v0", num_agents=2)
>>> env.reset(seed=0)
>>> env.agents
['player_0', 'player_1']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from teamgym.core import Outcome, Policy, TurnBasedTextEnv, TurnRecord, add_terms, clip_text, reward_terms
from teamgym.core.rewards import RewardTerms
from teamgym.errors import InvalidArgumentError, check_int, check_number

from .policies import estimate_policy, oracle_policy, random_policy
from .prompts import system_prompt, user_prompt
from .rules import Deal, deal, parse_action, play_lowest

__all__ = ["AscendEnv", "AscendState"]

#: How many of the latest actions a player is shown.
RECENT_ACTIONS = 8


@dataclass
class AscendState:
    """The mutable episode state (``snapshot`` deep-copies it; the deal stays shared)."""

    hands: list[list[int]]
    lives: int
    pile: list[int] = field(default_factory=list)
    played_in_order: int = 0
    mistakes: int = 0
    discarded: list[int] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    waits_in_a_row: int = 0


class AscendEnv(TurnBasedTextEnv[Deal, AscendState]):
    """N players hold hidden cards and must play them all onto one pile in ascending order."""

    metadata = {"name": "ascend-v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}

    def __init__(
        self,
        *,
        num_agents: int = 3,
        hand_size: int = 2,
        card_max: int = 100,
        lives: int = 2,
        max_turns: int | None = None,
        alpha: float | Mapping[str, float] = 1.0,
        render_mode: str | None = None,
        blunder_penalty: float = 0.25,
        format_penalty: float = 0.25,
        max_prompt_chars: int = 8192,
        max_action_chars: int = 8192,
        max_cycles: int | None = None,
    ):
        check_int("num_agents", num_agents, 2)
        check_int("hand_size", hand_size, 1)
        check_int("lives", lives, 1)
        if hand_size > 10:
            raise InvalidArgumentError(f"hand_size={hand_size!r}: expected 1 to 10 cards per player")
        check_int("card_max", card_max, num_agents * hand_size)
        check_number("blunder_penalty", blunder_penalty, low=0.0)
        check_number("format_penalty", format_penalty, low=0.0)
        num_cards = num_agents * hand_size
        super().__init__(max_turns=num_cards + 2 if max_turns is None else max_turns, alpha=alpha,
                         render_mode=render_mode, max_prompt_chars=max_prompt_chars,
                         max_action_chars=max_action_chars, agents=[f"player_{i}" for i in range(num_agents)],
                         max_cycles=max_cycles)
        self.hand_size = hand_size
        self.card_max = card_max
        self.lives = lives
        self.blunder_penalty = float(blunder_penalty)
        self.format_penalty = float(format_penalty)

    # ------------------------------------------------------------------ tasks, turn order and prompts
    def _task_from_id(self, task_id: Any) -> Deal:
        return deal(int(task_id), num_agents=len(self.possible_agents), hand_size=self.hand_size,
                    card_max=self.card_max)

    def _initial_state(self, task: Deal) -> AscendState:
        return AscendState(hands=[list(hand) for hand in task.hands], lives=self.lives)

    def hand(self, agent: str) -> list[int]:
        """The cards ``agent`` still holds, ascending."""
        return self.state.hands[self.possible_agents.index(agent)]

    def agents_with_cards(self) -> list[str]:
        """The agents that still hold a card, in turn order."""
        return [agent for agent in self.agents if self.hand(agent)]

    def _select_first(self) -> str:
        return next(iter(self.agents_with_cards()), self.agents[0])

    def _select_next(self, agent: str) -> str | None:
        later = self.agents[self.agents.index(agent) + 1:]
        return next((other for other in later if self.hand(other)), None)

    def _system_prompt(self, agent: str) -> str:
        return system_prompt(agent, self.possible_agents, self.card_max)

    def _user_prompt(self, agent: str) -> str:
        others = {other: len(self.hand(other)) for other in self.possible_agents if other != agent}
        top = self.state.pile[-1] if self.state.pile else None
        return user_prompt(self.hand(agent), top, self.state.lives, others, self.state.actions[-RECENT_ACTIONS:])

    # ------------------------------------------------------------------ actions
    def _apply_action(self, agent: str, action: str) -> Outcome:
        state = self.state
        choice = parse_action(action)
        format_term = -self.format_penalty if choice is None else 0.0
        if choice != "play":
            state.waits_in_a_row += 1
            state.actions.append(f"turn {self.turn}: {agent} waited")
            return Outcome({agent: reward_terms(format=format_term, blunder=0.0)},
                           info={agent: {"action": choice, "card": None, "in_order": False}})
        play = play_lowest(state.hands, self.possible_agents.index(agent))
        state.pile.append(play.card)
        state.waits_in_a_row = 0
        if play.in_order:
            state.played_in_order += 1
            team = 1.0 / self.task.num_cards
            state.actions.append(f"turn {self.turn}: {agent} played {play.card}")
        else:
            state.mistakes += 1
            state.lives -= 1
            state.discarded += play.discarded
            team = -1.0 / self.lives
            lost = ", ".join(map(str, play.discarded))
            state.actions.append(f"turn {self.turn}: {agent} played {play.card} too early: lost a life, "
                                 f"discarded {lost}")
        terms: dict[str, RewardTerms] = {other: reward_terms(team=team) for other in self.possible_agents}
        own = reward_terms(format=format_term, blunder=0.0 if play.in_order else -self.blunder_penalty)
        terms[agent] = add_terms(terms[agent], own)
        terminated = state.lives == 0 or not any(state.hands)
        return Outcome(terms, terminated=terminated,
                       info={agent: {"action": "play", "card": play.card, "in_order": play.in_order}})

    def _info_defaults(self, agent: str) -> dict[str, Any]:
        # What the agent did at its last step: "play" or "wait" (the parsed action, "" when unreadable), the card
        # played (-1 when none) and whether it was in order. Every key a step reports is declared here.
        return {"action": "", "card": -1, "in_order": False}

    # ------------------------------------------------------------------ episode summary
    def _is_success(self) -> bool:
        return self.state.lives > 0 and not any(self.state.hands)

    def _team_progress(self) -> float:
        """The share of the cards played in order."""
        return self.state.played_in_order / self.task.num_cards

    def _episode_extras(self) -> dict[str, Any]:
        state = self.state
        return {"played_in_order": state.played_in_order, "num_cards": self.task.num_cards,
                "mistakes": state.mistakes, "lives_left": state.lives, "discarded": list(state.discarded)}

    # ------------------------------------------------------------------ scripted policies
    def _scripted_policies(self) -> dict[str, dict[str, Callable[[], Policy]]]:
        return {agent: {"oracle": lambda agent=agent: oracle_policy(self, agent),
                        "estimate": lambda agent=agent: estimate_policy(self, agent),
                        "random": lambda agent=agent: random_policy(self, agent)}
                for agent in self.possible_agents}

    # ------------------------------------------------------------------ rendering
    def _render_header(self) -> str:
        hands = " | ".join(f"{agent}: {', '.join(map(str, hand))}"
                           for agent, hand in zip(self.possible_agents, self.task.hands, strict=True))
        return f"{super()._render_header()}\nhands: {hands} | lives: {self.lives}"

    def _render_record(self, record: TurnRecord) -> str:
        terms = ", ".join(f"{k}={v:+.3f}" for k, v in record.terms.items())
        return f"--- turn {record.turn} | {record.agent} | {terms}\n{clip_text(record.action, 600)}"
