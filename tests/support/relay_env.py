"""A minimal two-role env that exercises the base class (used by the foundation tests; not registered).

Task: the ``speaker`` is shown a secret word and must pass it on; the ``listener`` sees only the speaker's message
and must say the word. The episode ends when the listener says it (or after ``max_turns``).

====================  ========  ==========================================================
term                  range     meaning
====================  ========  ==========================================================
team                  {0, 1}    the listener has said the word (on the listener's turn)
speaker local         [-1, 0]   ``format``: -1 when the message is empty, else 0
listener local        {0, 0.5}  ``echo``: 0.5 when the reply repeats the speaker's message
====================  ========  ==========================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field

from teamgym.core import Outcome, TurnBasedTextEnv, reward_terms

WORDS = ("apple", "river", "copper", "violet", "meadow", "harbor", "lantern", "pepper")


@dataclass
class RelayState:
    messages: list[str] = field(default_factory=list)
    solved: bool = False


class RelayEnv(TurnBasedTextEnv[str, RelayState]):
    """Speaker passes a secret word to a listener."""

    metadata = {"name": "relay-v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}
    roles = ("speaker", "listener")

    def __init__(self, *, max_turns: int = 3, alpha: float | dict[str, float] = 1.0, render_mode: str | None = None):
        super().__init__(max_turns=max_turns, alpha=alpha, render_mode=render_mode, max_prompt_chars=4096,
                         max_action_chars=2048)

    def task_ids(self) -> tuple[str, ...]:
        return WORDS

    def _task_from_id(self, task_id: str) -> str:
        return task_id

    def _initial_state(self, task: str) -> RelayState:
        return RelayState()

    def _system_prompt(self, agent: str) -> str:
        return f"You are the {agent}."

    def _user_prompt(self, agent: str) -> str:
        if agent == "speaker":
            return f"The secret word is {self.task}. Tell the listener."
        last = self.state.messages[-1] if self.state.messages else "(nothing yet)"
        return f"The speaker said: {last}\nSay the secret word."

    def _apply_action(self, agent: str, action: str) -> Outcome:
        if agent == "speaker":
            self.state.messages.append(action)
            return Outcome({agent: reward_terms(team=0.0, format=-1.0 if not action.strip() else 0.0)})
        said = self.task in action.lower().split()
        self.state.solved = self.state.solved or said
        echo = 0.5 if self.state.messages and action.strip() == self.state.messages[-1].strip() else 0.0
        return Outcome({agent: reward_terms(team=float(said), echo=echo)}, terminated=said)

    def _is_success(self) -> bool:
        return self.state.solved

    def _scripted_policies(self):
        return {
            "speaker": {"oracle": lambda: (lambda obs: f"The word is {self.task}"),
                        "silent": lambda: (lambda obs: "")},
            "listener": {"oracle": lambda: (lambda obs: obs["prompt"].split("said: ")[1].split("\n")[0])},
        }
