"""Process scorers for ``ProcessReward``: the env's progress signal, Monte-Carlo values, text scorers.

**Progress-signal convention** (what :class:`EnvProgressScorer` reads): an env family with a rule-based
measure of how far the team has got puts ``infos[agent]["progress"]``, a float in ``[0, 1]`` (0 = nothing
done, 1 = solved), in the infos of *every* agent after *every* step (e.g. coder_tester: the fraction of
ground-truth tests the current code passes; plan_path: ``1 - distance_to_goal / initial_distance``; sudoku:
the fraction of cells correctly filled).

>>> from tests.support.tally_env import TallyEnv
>>> env = TallyEnv()
>>> env.reset(seed=0, options={"task_id": 0})
>>> env.step("4")
>>> MonteCarloScorer(lambda obs: "3", num_rollouts=2)(env, "alice", "4")  # 4 + 3 + 3 = 10: solved
1.0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from pettingzoo import AECEnv

from teamgym.core.env import EPISODE_KEY
from teamgym.core.outcome import Policy
from teamgym.errors import InvalidArgumentError
from teamgym.wrappers.mixing import team_return
from teamgym.wrappers.process import ProcessStep, StepScorer

__all__ = ["EnvProgressScorer", "MonteCarloScorer", "TextScorer", "PROGRESS_KEY"]

#: The ``infos[agent]`` key of an env's rule-based progress signal (a float, 1 when solved; docs/wrappers.md).
PROGRESS_KEY = "progress"


class EnvProgressScorer(StepScorer):
    """The env's own progress signal ``infos[agent]["progress"]``: its change over the step, or its level.

    ``mode="delta"`` (default) scores ``progress_after - progress_before`` (0 before the first report): a
    potential-based shaping term (Ng, Harada & Russell 1999), which leaves the optimal policies unchanged and
    sums to the final progress over an episode. ``mode="level"`` scores ``progress_after``: not potential-based,
    it pays every step for the progress held, so an episode that waits near the goal earns more than one that
    reaches it (plan_path-v1, one move short then stalling until the turn limit: 9.8 summed over both agents and
    no success, against 6.0 for the goal at once); use it where episodes have a fixed length.

    Args:
        key: the infos key to read.
        mode: ``"delta"`` or ``"level"``.

    Example:
        >>> from tests.support.tally_env import TallyEnv
        >>> from teamgym.wrappers import ProcessReward
        >>> env = ProcessReward(TallyEnv(), EnvProgressScorer(mode="level"))
        >>> env.reset(seed=0, options={"task_id": 0})
        >>> env.step("5")
        >>> env.infos["alice"]["reward_terms"]["process"]
        0.5
    """

    def __init__(self, key: str = PROGRESS_KEY, *, mode: str = "delta"):
        if mode not in ("delta", "level"):
            raise InvalidArgumentError(f"EnvProgressScorer mode={mode!r}: expected 'delta' or 'level'")
        self.key = key
        self.mode = mode

    def score_step(self, step: ProcessStep) -> float:
        info = step.env.infos.get(step.agent, {})
        if self.key not in info:
            raise InvalidArgumentError(
                f"{type(step.env.unwrapped).__name__} reports no infos[{step.agent!r}][{self.key!r}] "
                "after a step: this env has no rule-based progress signal; use MonteCarloScorer or a learned "
                "scorer instead"
            )
        after = float(info[self.key])
        if self.mode == "level":
            return after
        return after - float(step.info_before.get(self.key, 0.0))

    def __repr__(self) -> str:
        return f"EnvProgressScorer(key={self.key!r}, mode={self.mode!r})"


class MonteCarloScorer(StepScorer):
    """Monte-Carlo value of the state after the step: the mean outcome of ``num_rollouts`` continuations.

    From ``env.unwrapped.snapshot()``, each rollout plays the episode on with ``policy`` until it ends (or
    ``max_steps`` steps), then the env is restored; after scoring, the env is exactly as before (observations,
    rewards, infos, RNG). Rollouts run on the unwrapped env, so no wrapper (recorder, mixer) sees hypothetical
    steps; they end at the env's own turn limit. This is the node value of MASPRM (arXiv 2510.24803, Sec. 3)
    and TreeRL (arXiv 2506.11902, Eq. 3): the mean outcome of the leaves below a node.

    Outcomes (``target``): ``"team_return"`` (default): the team terms received from the scored step on (that
    step included, so a solving action gets credit), as :func:`~teamgym.wrappers.team_return` (mean over
    agents); ``"success"``: 1.0 if the episode summary says solved, else 0.0 (also when ``max_steps`` cut the
    rollout).

    Values are as random as ``policy``: with sampling policies, replaying the same actions after ``restore``
    gives other values; deterministic policies give a deterministic scorer.

    Args:
        policy: ``policy(observation) -> str`` for every agent, or ``{agent: policy}`` covering every agent.
        num_rollouts: continuations to average (M).
        max_steps: steps per rollout at most.
        target: ``"team_return"`` or ``"success"``.
    """

    def __init__(
        self,
        policy: Policy | Mapping[str, Policy],
        *,
        num_rollouts: int = 4,
        max_steps: int = 64,
        target: str = "team_return",
    ):
        if not callable(policy) and not isinstance(policy, Mapping):
            raise InvalidArgumentError(
                f"MonteCarloScorer policy={policy!r}: expected policy(observation) -> str or "
                f"{{agent: policy}}"
            )
        for name, value in (("num_rollouts", num_rollouts), ("max_steps", max_steps)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"MonteCarloScorer {name}={value!r}: expected an int >= 1")
        if target not in ("team_return", "success"):
            raise InvalidArgumentError(
                f"MonteCarloScorer target={target!r}: expected 'team_return' or 'success'"
            )
        self.policy = policy
        self.num_rollouts = num_rollouts
        self.max_steps = max_steps
        self.target = target

    def score_step(self, step: ProcessStep) -> float:
        return self.value(step.env)

    def value(self, env: AECEnv) -> float:
        """The Monte-Carlo value of ``env``'s state (the step just taken counts for ``team_return``)."""
        base = env.unwrapped
        now = {a: 0.0 for a in base.possible_agents}
        for a in base.agents:
            now[a] = float(base.infos[a].get("reward_terms", {}).get("team", 0.0))
        if _finished(base):
            return self._outcome(base, now, finished=True)
        snapshot = base.snapshot()
        try:
            outcomes = [self._rollout(base, dict(now), snapshot) for _ in range(self.num_rollouts)]
        finally:
            base.restore(snapshot)
        return math.fsum(outcomes) / len(outcomes)

    def _rollout(self, base: AECEnv, team: dict[str, float], snapshot: Any) -> float:
        base.restore(snapshot)
        for _ in range(self.max_steps):
            if _finished(base):
                return self._outcome(base, team, finished=True)
            agent = base.agent_selection
            if base.terminations[agent] or base.truncations[agent]:
                base.step(None)
                continue
            base.step(self._policy_for(agent)(base.observe(agent)))
            for a in base.agents:
                team[a] = team.get(a, 0.0) + float(base.infos[a].get("reward_terms", {}).get("team", 0.0))
        return self._outcome(base, team, finished=_finished(base))

    def _outcome(self, base: AECEnv, team: dict[str, float], *, finished: bool) -> float:
        if self.target == "team_return":
            return team_return(team)
        if not finished or not base.agents:
            return 0.0
        return float(bool(base.infos[base.agents[0]].get(EPISODE_KEY, {}).get("success", False)))

    def _policy_for(self, agent: str) -> Policy:
        if not isinstance(self.policy, Mapping):
            return self.policy
        if agent not in self.policy:
            raise InvalidArgumentError(
                f"MonteCarloScorer has no policy for {agent!r}: give one for every agent "
                f"({sorted(self.policy)} given)"
            )
        return self.policy[agent]

    def __repr__(self) -> str:
        return (
            f"MonteCarloScorer(num_rollouts={self.num_rollouts}, max_steps={self.max_steps}, "
            f"target={self.target!r})"
        )


def _finished(env: AECEnv) -> bool:
    return not env.agents or all(env.terminations[a] or env.truncations[a] for a in env.agents)


class TextScorer(StepScorer):
    """Any text-level scorer ``fn(prompt, action) -> float`` (a learned PRM, a judge model, a heuristic).

    Args:
        fn: scores the completion ``action`` written for ``prompt`` (the prompt the agent acted on).

    Example:
        >>> from tests.support.relay_env import RelayEnv
        >>> from teamgym.wrappers import ProcessReward
        >>> env = ProcessReward(RelayEnv(), TextScorer(lambda prompt, action: float(action in prompt)))
        >>> env.reset(seed=0, options={"task_id": "apple"})
        >>> env.step("apple")
        >>> env.infos["speaker"]["process_score"]
        1.0
    """

    def __init__(self, fn: Callable[[str, str], float]):
        if not callable(fn):
            raise InvalidArgumentError(
                f"TextScorer fn={fn!r}: expected a callable fn(prompt, action) -> float"
            )
        self.fn = fn

    def score_step(self, step: ProcessStep) -> float:
        return float(self.fn(step.prompt, step.action))

    def __repr__(self) -> str:
        return f"TextScorer({self.fn!r})"
