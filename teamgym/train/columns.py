"""Estimator inputs built from an :class:`AgentTurnBatch`: trajectory columns (GiGPO) and the sampling forest (TreeRL).

**Trajectory columns** (a *trajectory rollout*: each task played ``group_size`` times from the same env seed, one
candidate per node, so every row lies on its episode's path):

=====================  ================================================================================================
column                 built as
=====================  ================================================================================================
``group_ids``          the task: the trajectories of one task form the prompt group (a task drawn twice in one step
                       gives one larger group: same task, same seed, exchangeable trajectories)
``trajectory_ids``     the episode
``agent_ids``          the acting role
``anchor_ids``         (task, anchor): rows of one task whose agent acted on an identical observation
``step_returns``       ``G_t = r_t + gamma * G_{t+1}`` along the episode's rows in step order (GiGPO, gamma 0.95);
                       per agent (``per_agent``): along that agent's own rows only, the next own turn one gamma away,
                       ``r_t`` its credited reward (below)
``episode_returns``    the undiscounted sum of the episode's rewards (GiGPO's episode return, verl-agent sums the
                       step rewards); per agent: everything that agent received in the episode
=====================  ================================================================================================

**Which rewards.** An env may pay an agent on *another* agent's step (``plan_path``'s tool gets the team term on the
planner's step; ``discussion`` pays every agent on the round's last step); the batch keeps those payments in
``others_rewards`` (after the trainer's alpha mixer, each with the receiving agent's alpha).

* Team level (``per_agent=False``, ``gigpo``): ``r_t`` is everything step t paid, to every agent: the row's reward
  plus its ``others_rewards``. The team's return is then the sum of the agents' returns (the env's episode summary
  ``returns``, summed), whichever agent's step a term arrives on; a term paid to each of N agents counts N times, as
  each agent is paid it. This is GiGPO's ``r_t`` (ALGORITHMS.md) for the team seen as one decision maker whose reward
  is the sum of its members'. Counting only the acting agent's reward would drop whatever an env pays non-acting
  agents (``discussion``'s persuasion credit) and make the objective depend on which step an env books a term on.
* Per agent (``per_agent=True``, ``team_gigpo``): agent a's reward at its own turn is what it received at that step
  plus everything it received on other agents' steps after that turn and before its next own turn: credit goes to
  its most recent own action. What it receives before its first own turn goes to its first turn. An agent with no
  row in the episode (its rows dropped for infrastructure errors, or it never acted) has no turn to credit: its
  payments are left out of its (absent) returns, though still in the team return.

So when every agent that was paid has a row in the episode, the per-agent episode returns sum to the team return,
and (without an alpha mixer) each equals the env's own ``returns[agent]`` in the episode summary.

**The sampling forest** (a *tree rollout*): every candidate is a node; its parent is the chosen candidate of the
closest earlier step of its episode (the one the env advanced with); step-0 candidates hang below one virtual root
per episode (the initial state), appended after the rows. A node's leaf reward is its **path return**: the
team-level rewards (as for ``gigpo`` above: what the step paid every agent) of the chosen candidates above it plus
its own. The last chosen node's path return is the episode's return; an unexpanded candidate's is the return the
episode would have had if it had stopped right after that candidate. Then ``V(s)`` (TreeRL: the mean leaf reward
below s) is the mean outcome of the continuations sampled below s, in return units at every depth, and the virtual
root's value is the episode's mean outcome. Known bias: an unexpanded candidate collects no later rewards, so with
positive later rewards the expanded (greedy) branch looks better than its siblings, and with negative ones worse;
with a terminal-only reward (success at the end) an unexpanded candidate counts as a failure, as an unfinished
response would in TreeRL. (Tree *groups*, AT-GRPO and the other tree estimators, compare the K candidates of a
node by the acting agent's own reward, as AT-GRPO defines.)
"""

from __future__ import annotations

import torch

from teamgym.algos import combine_ids, discounted_returns, factorize
from teamgym.errors import InvalidArgumentError
from teamgym.rollout.batch import AgentTurnBatch

__all__ = ["trajectory_columns", "credited_rewards", "sampling_forest", "check_trajectory_batch"]


def check_trajectory_batch(batch: AgentTurnBatch) -> None:
    """Raise unless every (episode, step) has exactly one row (a trajectory rollout: one candidate per node)."""
    if len(batch) == 0:
        return
    nodes = batch.group_ids()
    if int(nodes.max()) + 1 != len(batch):
        counts = torch.bincount(nodes)
        row = int((counts > 1).nonzero()[0])
        raise InvalidArgumentError(
            f"tree node {row} of the batch holds {int(counts[row])} candidates: trajectory columns (GiGPO) need one "
            "candidate per (episode, step); roll out with TreeSampling(k=1), as the trainer's trajectory rollout does"
        )


def trajectory_columns(batch: AgentTurnBatch, *, gamma: float, per_agent: bool) -> dict[str, torch.Tensor]:
    """The GiGPO / team-GiGPO input columns of a trajectory batch (see the module docstring); each ``(N,)``."""
    check_trajectory_batch(batch)
    trajectory_ids = factorize(batch.episode_id)[0]
    agent_ids = factorize(batch.agent)[0]
    rewards = batch.rewards
    if len(batch) == 0:
        empty = torch.zeros(0, dtype=torch.long)
        return {"episode_returns": rewards.clone(), "step_returns": rewards.clone(), "group_ids": empty,
                "trajectory_ids": empty, "agent_ids": empty, "anchor_ids": empty}
    chain = combine_ids(trajectory_ids, agent_ids) if per_agent else trajectory_ids
    credited = credited_rewards(batch, per_agent=per_agent)  # (N,) float64
    step_returns = discounted_returns(credited.to(rewards.dtype), chain, batch.step, gamma=gamma)
    totals = torch.zeros(int(chain.max()) + 1, dtype=torch.float64).index_add_(0, chain, credited)
    return {
        "episode_returns": totals.index_select(0, chain).to(rewards.dtype),
        "step_returns": step_returns,
        "group_ids": batch.group_ids(("task_id",)),
        "trajectory_ids": trajectory_ids,
        "agent_ids": agent_ids,
        "anchor_ids": batch.group_ids(("task_id", "anchor")),
    }


def credited_rewards(batch: AgentTurnBatch, *, per_agent: bool) -> torch.Tensor:
    """Each row's reward ``r_t`` for the trajectory returns, ``(N,)`` float64 (rules in the module docstring).

    ``per_agent=False``: the row's reward plus its ``others_rewards``. ``per_agent=True``: the row's reward plus
    what its agent received on other agents' steps after this row and before its next own row (before its first
    own row: credited to that first row). Rows may come in any order; steps must be distinct within an episode.
    """
    rewards = batch.rewards.tolist()
    if not per_agent:
        return torch.tensor([r + sum(others.values()) for r, others in zip(rewards, batch.others_rewards, strict=True)],
                            dtype=torch.float64)
    credit = list(rewards)
    episodes, steps = factorize(batch.episode_id)[0].tolist(), batch.step.tolist()
    order = sorted(range(len(batch)), key=lambda i: (episodes[i], steps[i]))
    last_own: dict[str, int] = {}  # agent -> its latest row so far in the current episode
    early: dict[str, float] = {}  # agent -> received before its first own row
    for position, i in enumerate(order):
        if position == 0 or episodes[i] != episodes[order[position - 1]]:
            last_own, early = {}, {}
        agent = batch.agent[i]
        if agent not in last_own:
            credit[i] += early.pop(agent, 0.0)
        last_own[agent] = i
        for other, reward in batch.others_rewards[i].items():
            if other in last_own:
                credit[last_own[other]] += reward
            else:
                early[other] = early.get(other, 0.0) + reward
    return torch.tensor(credit, dtype=torch.float64)


def sampling_forest(batch: AgentTurnBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """``(parents, leaf_rewards)``, each ``(N + E,)``: the N rows, then one virtual root per episode (E episodes).

    See the module docstring for the parent and leaf-reward rules. A row whose earlier chosen candidates were all
    dropped (infrastructure errors) hangs below its episode's root; ``leaf_rewards`` holds every node's path return
    (the estimators read it at leaves only; roots hold 0).
    """
    n = len(batch)
    episodes = list(dict.fromkeys(batch.episode_id))
    root_of = {episode: n + e for e, episode in enumerate(episodes)}
    rows_of: dict[str, list[int]] = {episode: [] for episode in episodes}
    for i, episode in enumerate(batch.episode_id):
        rows_of[episode].append(i)
    steps = batch.step.tolist()
    chosen = batch.chosen.tolist()
    rewards = credited_rewards(batch, per_agent=False).tolist() if n else []
    parents = [-1] * (n + len(episodes))
    path_return = [0.0] * (n + len(episodes))
    for episode, rows in rows_of.items():
        parent, above = root_of[episode], 0.0
        by_step: dict[int, list[int]] = {}
        for i in rows:
            by_step.setdefault(steps[i], []).append(i)
        for step in sorted(by_step):
            advanced = None
            for i in by_step[step]:
                parents[i] = parent
                path_return[i] = above + rewards[i]
                if chosen[i]:
                    advanced = i
            if advanced is not None:
                parent, above = advanced, path_return[advanced]
    return (torch.tensor(parents, dtype=torch.long),
            torch.tensor(path_return, dtype=batch.rewards.dtype if n else torch.float32))
