"""Candidate choice: a teamgym text env as a numeric multi-agent env, for classic MARL libraries.

Tianshou, RLlib and the like need numeric actions and observations; an LLM role's action is free text. The bridge
is to let a *proposer* write the text and let the MARL policy *choose*: at each agent-turn
:class:`CandidateChoiceEnv` asks the proposer for ``k`` candidate completions of the acting role, the agent's
action is ``Discrete(k)`` (which candidate to play), and its observation is a fixed-size ``Box`` vector made by a
*featurizer* from the role's prompt and from each candidate. The learned policy is a reranker (a selector) per
role, trained on the env's own rewards: the honest use of a classic MARL learner in an LLM team.

* **Proposer**: any callable ``proposer(messages, k) -> list[str]`` (the role's chat messages, as the env gives them
  in ``infos[agent]["messages"]``, and how many candidates), e.g. an LLM policy sampling ``k`` completions, or a
  scripted proposer (:class:`PlanningProposer` for ``plan_path-v0``, ``sokoban-v0`` and ``sudoku-v0``). A mapping
  ``{role: proposer}`` gives each role its own.
* **Featurizer**: any object with an int ``dim`` and ``__call__(text) -> np.ndarray`` of shape ``(dim,)``; the
  default :class:`HashedNgrams` counts hashed character n-grams. A transformers encoder fits the same protocol.
* **Spaces** (identical for every agent, as Tianshou's ``PettingZooEnv`` requires): action ``Discrete(k)``;
  observation ``Box(-inf, inf, (n_agents + (k + 1) * dim,), float32)``: a one-hot of the acting role, then the
  prompt's features, then each candidate's in the order the action indexes them. An agent that is not selected
  observes its role and prompt with zero candidate blocks (it has no candidates yet).
* **Order**: with ``shuffle=True`` (default) the proposer's candidates are permuted at every proposal by a
  generator seeded from ``reset(seed=...)`` and the proposal count, so a learner cannot win by always playing the
  proposer's first slot; seeded episodes stay reproducible.
* **Rewards, terminations, infos**: the wrapped env's, unchanged (``infos[agent]["reward_terms"]`` and the episode
  summary included). :attr:`CandidateChoiceEnv.candidates` holds the selected agent's candidates and
  :attr:`CandidateChoiceEnv.chosen` the text last played.
* **Bad actions**: a numeric policy's action is always in range; an action that is not an int in ``[0, k)`` is a
  caller's bug and raises :class:`~teamgym.errors.InvalidActionError` naming the range. What the chosen candidate
  says is the text env's business: a garbage candidate earns the env's documented format penalty.
* **Snapshots**: ``snapshot()``/``restore()`` carry the candidates and the shuffle state with the wrapped env's.

>>> import teamgym
>>> from teamgym.integrations.marl import CandidateChoiceEnv, PlanningProposer
>>> base = teamgym.make("plan_path-v0", max_turns=2)
>>> env = CandidateChoiceEnv(base, PlanningProposer(base), k=4)
>>> env.reset(seed=0)
>>> env.action_space("tool"), env.observe("tool").shape
(Discrete(4), (1282,))
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from teamgym.core import EPISODE_KEY
from teamgym.errors import InvalidActionError, InvalidArgumentError, check_int
from teamgym.wrappers.base import TextEnvWrapper

__all__ = [
    "CandidateChoiceEnv",
    "Featurizer",
    "HashedNgrams",
    "PlanningProposer",
    "Proposer",
    "candidate_env",
    "numeric_info",
    "random_choice",
    "success_rate",
]

#: ``proposer(messages, k) -> k candidate completions`` for the role the messages are addressed to.
Proposer = Callable[[list[dict[str, str]], int], Sequence[str]]


class Featurizer(Protocol):
    """Turns a text into a fixed-size float vector."""

    dim: int

    def __call__(self, text: str) -> np.ndarray: ...


class HashedNgrams:
    """Hashed character n-gram counts, ``log1p``-damped and L2-normalised: a fixed-size bag of a text's n-grams.

    Each n-gram of the text's UTF-8 bytes (sizes ``ngram_sizes``) is hashed (a polynomial hash, the same in every
    process: no ``PYTHONHASHSEED`` dependence) into one of ``dim`` buckets. Only the first ``max_chars``
    characters count, so a megabyte of garbage costs no more than a page.

    Args:
        dim: vector size (an int >= 8).
        ngram_sizes: the n-gram lengths counted (ints >= 1).
        max_chars: characters of the text featurized at most.
    """

    def __init__(self, dim: int = 256, ngram_sizes: Sequence[int] = (2, 3, 4), max_chars: int = 4096):
        check_int("dim", dim, 8)
        check_int("max_chars", max_chars, 1)
        if not ngram_sizes:
            raise InvalidArgumentError("ngram_sizes=(): give at least one n-gram length, e.g. (2, 3, 4)")
        for n in ngram_sizes:
            check_int("ngram_sizes[i]", n, 1)
        self.dim = dim
        self.ngram_sizes = tuple(ngram_sizes)
        self.max_chars = max_chars

    def __call__(self, text: str) -> np.ndarray:
        data = np.frombuffer(text[: self.max_chars].encode("utf-8", "replace"), dtype=np.uint8).astype(np.uint64)
        counts = np.zeros(self.dim, dtype=np.float64)
        for n in self.ngram_sizes:
            if len(data) < n:
                continue
            windows = len(data) - n + 1
            code = np.full(windows, n, dtype=np.uint64)  # the length seeds the hash: "ab" and "ab?" differ
            for i in range(n):
                code = code * np.uint64(1_000_003) + data[i : i + windows]  # wraps mod 2**64, as intended
            counts += np.bincount((code % np.uint64(self.dim)).astype(np.int64), minlength=self.dim)
        vector = np.log1p(counts)
        norm = float(np.linalg.norm(vector))
        return (vector / norm if norm > 0 else vector).astype(np.float32)

    def __repr__(self) -> str:
        return f"HashedNgrams(dim={self.dim}, ngram_sizes={self.ngram_sizes}, max_chars={self.max_chars})"


class CandidateChoiceEnv(TextEnvWrapper):
    """Each agent-turn: the proposer writes ``k`` candidates, the agent picks one by index. See the module docstring.

    Args:
        env: a teamgym text env (AEC), or a wrapper of one.
        proposer: ``proposer(messages, k) -> list[str]``, or ``{role: proposer}`` covering every role.
        k: candidates per agent-turn (an int >= 2).
        featurizer: text -> vector (default :class:`HashedNgrams` with 256 buckets).
        shuffle: permute each proposal (seeded by ``reset(seed=...)``), so the proposer's slot order carries no
            signal.
    """

    def __init__(
        self,
        env: AECEnv,
        proposer: Proposer | Mapping[str, Proposer],
        *,
        k: int = 4,
        featurizer: Featurizer | None = None,
        shuffle: bool = True,
    ):
        super().__init__(env)
        check_int("k", k, 2)
        roles = list(env.possible_agents)
        if isinstance(proposer, Mapping):
            missing = [r for r in roles if r not in proposer]
            if missing:
                raise InvalidArgumentError(
                    f"proposer mapping has no proposer for roles {missing}: give one per role of {roles}, "
                    "or one callable for all"
                )
            proposers = dict(proposer)
        else:
            proposers = dict.fromkeys(roles, proposer)
        for role, p in proposers.items():
            if not callable(p):
                raise InvalidArgumentError(
                    f"proposer for {role!r} is {p!r}: expected a callable proposer(messages, k) -> list[str]"
                )
        self.proposers: dict[str, Proposer] = proposers
        self.k = k
        self.featurizer: Featurizer = featurizer if featurizer is not None else HashedNgrams()
        self.shuffle = bool(shuffle)
        self._roles = roles
        size = len(roles) + (k + 1) * int(self.featurizer.dim)
        self._observation_space = spaces.Box(-np.inf, np.inf, shape=(size,), dtype=np.float32)
        self._action_space = spaces.Discrete(k)
        self.metadata = {**self.metadata, "name": f"candidate_choice({self.metadata.get('name', 'env')})"}
        self._candidates: list[str] = []
        self._candidate_features: np.ndarray = np.zeros((k, self.featurizer.dim), dtype=np.float32)
        self._prompt_features: dict[str, tuple[str, np.ndarray]] = {}
        self._shuffle_seed = 0
        self._proposals = 0
        self.chosen: str | None = None

    # ------------------------------------------------------------------ spaces and views
    def observation_space(self, agent: str) -> spaces.Box:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._action_space

    @property
    def candidates(self) -> list[str]:
        """The selected agent's candidates, in action order (empty when no live agent is selected)."""
        return list(self._candidates)

    def observe(self, agent: str) -> np.ndarray:
        prompt = self._prompt_vector(agent)
        role = np.zeros(len(self._roles), dtype=np.float32)
        role[self._roles.index(agent)] = 1.0
        live_agent, live = self._live_selection()
        if live and agent == live_agent and self._candidates:
            blocks = self._candidate_features
        else:
            blocks = np.zeros((self.k, self.featurizer.dim), dtype=np.float32)
        return np.concatenate([role, prompt, blocks.reshape(-1)]).astype(np.float32)

    # ------------------------------------------------------------------ AEC API
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.env.reset(seed=seed, options=options)
        entropy = np.random.SeedSequence().entropy if seed is None else seed
        self._shuffle_seed = int(entropy) % (1 << 63)
        self._proposals = 0
        self._prompt_features = {}
        self.chosen = None
        self._propose()

    def step(self, action: Any) -> None:
        agent, live = self._live_selection()
        if not live:  # a dead step (or a misuse the wrapped env names)
            self.env.step(action)
            self._propose()
            return
        index = _as_index(action)
        if index is None or not 0 <= index < self.k:
            raise InvalidActionError(
                f"action {action!r} for {agent!r}: expected an int in [0, {self.k}), the index of the candidate "
                "to play (pass None only for a finished agent)"
            )
        self.chosen = self._candidates[index]
        self.env.step(self.chosen)
        self._propose()

    # ------------------------------------------------------------------ internals
    def _propose(self) -> None:
        agent, live = self._live_selection()
        if not live:
            self._candidates = []
            return
        messages = list(self.env.infos[agent].get("messages", []))
        texts = self.proposers[agent](messages, self.k)
        if isinstance(texts, str) or not isinstance(texts, Sequence) or len(texts) != self.k:
            raise InvalidArgumentError(
                f"the proposer for {agent!r} returned {_describe(texts)}: it must return a list of exactly k={self.k} "
                "candidate strings"
            )
        bad = [type(t).__name__ for t in texts if not isinstance(t, str)]
        if bad:
            raise InvalidArgumentError(f"the proposer for {agent!r} returned non-str candidates ({bad}): return str")
        texts = list(texts)
        if self.shuffle:
            order = np.random.default_rng([self._shuffle_seed, self._proposals]).permutation(self.k)
            texts = [texts[int(i)] for i in order]
        self._proposals += 1
        self._candidates = texts
        self._candidate_features = np.stack([self._featurize(t) for t in texts])

    def _prompt_vector(self, agent: str) -> np.ndarray:
        prompt = _prompt_text(self.env.observe(agent))
        cached = self._prompt_features.get(agent)
        if cached is None or cached[0] != prompt:
            cached = (prompt, self._featurize(prompt))
            self._prompt_features[agent] = cached
        return cached[1]

    def _featurize(self, text: str) -> np.ndarray:
        vector = np.asarray(self.featurizer(text), dtype=np.float32)
        if vector.shape != (self.featurizer.dim,):
            raise InvalidArgumentError(
                f"featurizer {self.featurizer!r} returned shape {vector.shape}: expected ({self.featurizer.dim},), "
                "its declared dim"
            )
        return vector

    def _get_state(self) -> Any:
        return (self._candidates, self._candidate_features, self._shuffle_seed, self._proposals, self.chosen)

    def _set_state(self, state: Any) -> None:
        self._candidates, self._candidate_features, self._shuffle_seed, self._proposals, self.chosen = state


def _as_index(action: Any) -> int | None:
    """``action`` as a Python int when it is an integer (a numpy integer or 0-d array too), else ``None``."""
    if isinstance(action, bool):
        return None
    if isinstance(action, np.ndarray) and action.shape in ((), (1,)) and np.issubdtype(action.dtype, np.integer):
        return int(action.reshape(()))
    if isinstance(action, (int, np.integer)):
        return int(action)
    return None


def _describe(value: Any) -> str:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return f"{len(value)} candidates"
    return f"a {type(value).__name__}"


def _prompt_text(observation: Any) -> str:
    if isinstance(observation, Mapping) and isinstance(observation.get("prompt"), str):
        return observation["prompt"]
    return str(observation)


class PlanningProposer:
    """Scripted candidates mixing good and bad moves for the planning envs (``plan_path``, ``sokoban``, ``sudoku``).

    It reads the env's state (as the envs' scripted oracles do), so it is built with the env it proposes for.

    * tool: the env's search program (good: it prints a shortest plan), then, cycling to fill ``k``: a program
      printing random moves, a program that crashes, an answer without a code block.
    * planner: adopt the tool's printed plan (good exactly when the tool ran the search), then, cycling: random
      moves, an answer with no readable plan.

    So the team succeeds in one turn only if the tool picks the search *and* the planner adopts it: a coordination
    problem with ``1/k**2`` odds per turn for random picks. Random moves are drawn from a generator seeded by the
    prompt, so proposals are reproducible.

    Args:
        env: the planning env (or a wrapper of one) the candidates are for.
    """

    def __init__(self, env: AECEnv):
        base = env.unwrapped
        if not all(hasattr(base, name) for name in ("oracle_program", "_random_plan", "_format_plan", "state")):
            raise InvalidArgumentError(
                f"PlanningProposer({type(base).__name__}): expected a planning env (plan_path-v0, sokoban-v0, "
                "sudoku-v0); write a proposer(messages, k) for other envs"
            )
        self.env = base

    def __call__(self, messages: list[dict[str, str]], k: int) -> list[str]:
        base = self.env
        prompt = messages[-1]["content"] if messages else ""
        rng = np.random.default_rng(zlib.crc32(prompt.encode("utf-8", "replace")))
        if base.agent_selection == "tool":
            good = f"A search from the current state prints a shortest plan.\n```python\n{base.oracle_program}```"
            bad: list[Callable[[], str]] = [
                lambda: f"```python\nprint({base._format_plan(base._random_plan(rng, base.state.board))!r})\n```",
                lambda: "I compute it.\n```python\nplan = moves_to_goal(start)\nprint(plan)\n```",
                lambda: "The plan is obvious, no program needed.",
            ]
        else:
            adopted = base._parse_plan(base.state.tool_output) or []
            good = f"I adopt the tool agent's plan.\n{base._format_plan(adopted)}"
            bad = [
                lambda: base._format_plan(base._random_plan(rng, base.state.board)),
                lambda: "I need more time to think about this.",
            ]
        return [good] + [bad[i % len(bad)]() for i in range(k - 1)]


def candidate_env(
    env_id: str,
    *,
    k: int = 4,
    proposer: Proposer | Mapping[str, Proposer] | str = "scripted",
    featurizer: Featurizer | None = None,
    shuffle: bool = True,
    **env_kwargs: Any,
) -> CandidateChoiceEnv:
    """``teamgym.make(env_id, **env_kwargs)`` wrapped in :class:`CandidateChoiceEnv`.

    ``proposer="scripted"`` uses :class:`PlanningProposer` (the planning envs); otherwise pass a proposer.
    """
    from teamgym.registry import make

    env = make(env_id, **env_kwargs)
    if isinstance(proposer, str):
        if proposer != "scripted":
            raise InvalidArgumentError(
                f"proposer={proposer!r}: expected 'scripted' or a callable proposer(messages, k) -> list[str]"
            )
        proposer = PlanningProposer(env)
    return CandidateChoiceEnv(env, proposer, k=k, featurizer=featurizer, shuffle=shuffle)


def success_rate(
    make_env: Callable[[], CandidateChoiceEnv],
    choose: Callable[[str, np.ndarray], int],
    task_ids: Sequence[int],
) -> float:
    """The fraction of ``task_ids`` whose episode ends in team success when every agent plays ``choose(agent, obs)``.

    Each task is played once from ``reset(seed=i, options={"task_id": task})`` (``i`` its position). Use task ids
    that training never drew (envs draw ids below ``2**31`` from their seed) to measure held-out success.
    """
    env = make_env()
    wins = 0
    for i, task in enumerate(task_ids):
        env.reset(seed=i, options={"task_id": task})
        info: dict[str, Any] = {}
        while env.agents:
            observation, _, terminated, truncated, info = env.last()
            env.step(None if terminated or truncated else choose(env.agent_selection, observation))
        wins += bool(info.get(EPISODE_KEY, {}).get("success"))
    return wins / max(1, len(task_ids))


def random_choice(seed: int, k: int) -> Callable[[str, np.ndarray], int]:
    """The baseline chooser: a uniformly random candidate index at every turn (seeded)."""
    rng = np.random.default_rng(seed)
    return lambda agent, observation: int(rng.integers(k))


def numeric_info(info: Mapping[str, Any]) -> dict[str, float]:
    """A teamgym info cut to numbers: this step's ``team`` and ``local`` terms and the episode's ``success``.

    For libraries that store infos with their collected data (Tianshou's replay buffer, RLlib's episodes) and
    refuse, or carry along for nothing, the chat messages and transcripts of a full info.
    """
    terms = info.get("reward_terms", {})
    episode = info.get(EPISODE_KEY) or {}
    return {
        "team": float(terms.get("team", 0.0)),
        "local": float(terms.get("local", 0.0)),
        "success": float(bool(episode.get("success", False))),
    }
