"""``RolloutEngine``: drive many envs with policies, AT-GRPO tree sampling, and emit an :class:`AgentTurnBatch`.

One rollout plays one episode per task id given, all envs in lockstep. At every env step (one node of the sampling
tree per episode):

1. every active env snapshots its state and renders the acting agent's prompt;
2. prompts are batched **per policy** (a shared model serves all roles in one call) and each gets ``k`` completions;
3. for each env, :func:`teamgym.algos.tree_step` scores every candidate from a fresh ``restore`` of the node state
   (never a sibling's), picks one with the strategy's rule (AT-GRPO: greedy), and leaves the env in the chosen
   child's state, from which the next agent of the turn proposes (arXiv 2510.11062, Sec. 4.2);
4. one row per candidate is recorded, keyed by (episode, agent, turn, step) so groups never mix tasks.

Strategies (``TreeSampling.strategy``): ``"greedy"`` (AT-GRPO), ``"top_m"`` (stochastic advance among the m best),
``"adaptive"`` (:class:`teamgym.algos.AdaptiveK`: ``k0`` candidates first, more only where they disagree). Envs that
use the sandbox can be stepped from a thread pool (``env_workers``): the sandbox's subprocesses release the GIL.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from teamgym.algos import AdaptiveK, Branch, TreeStep, choose_greedy, choose_top_m, tree_step
from teamgym.errors import InvalidArgumentError
from teamgym.rollout.batch import AgentTurnBatch
from teamgym.rollout.sampling import Completion, Policy, SamplingParams

__all__ = ["RolloutEngine", "RolloutResult", "TreeSampling", "default_prompt"]

STRATEGIES = ("greedy", "top_m", "adaptive")
PromptFormatter = Callable[[Any, str], str]


def default_prompt(env: Any, agent: str) -> str:
    """The env's own observation text for ``agent``."""
    return env.observe(agent)["prompt"]


@dataclass(frozen=True)
class TreeSampling:
    """How each tree node is expanded.

    Attributes:
        k: candidates per (agent, step) node (AT-GRPO: 4). ``k = 1`` is plain sampling (no tree).
        strategy: ``"greedy"`` (advance the best, AT-GRPO), ``"top_m"`` or ``"adaptive"`` (see the module doc).
        top_m: how many of the best candidates ``"top_m"`` samples among.
        top_m_temperature: softmax temperature over their rewards (0 = greedy).
        k0: ``"adaptive"``: candidates sampled first at each node.
        k_max: ``"adaptive"``: most candidates one node may get by borrowing the budget banked by agreeing nodes.
    """

    k: int = 4
    strategy: str = "greedy"
    top_m: int = 2
    top_m_temperature: float = 1.0
    k0: int = 2
    k_max: int = 8

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or self.k < 1:
            raise InvalidArgumentError(f"k={self.k!r}: expected an int >= 1 candidates per node (AT-GRPO uses 4)")
        if self.strategy not in STRATEGIES:
            raise InvalidArgumentError(f"strategy={self.strategy!r}: expected one of {STRATEGIES}")
        if self.strategy == "adaptive" and not 1 <= self.k0 <= self.k <= self.k_max:
            raise InvalidArgumentError(
                f"adaptive tree sampling needs 1 <= k0 <= k <= k_max, got k0={self.k0}, k={self.k}, "
                f"k_max={self.k_max}: lower k0 or raise k_max"
            )


@dataclass
class RolloutResult:
    """A rollout's agent-turn batch, its episode summaries and where the time went.

    Attributes:
        batch: one row per candidate.
        episodes: one summary per episode (the env's ``infos[agent]["episode"]`` plus ``episode_id``).
        completions: completions generated (the sampling budget spent).
        generate_seconds: wall time inside ``policy.generate``.
        env_seconds: wall time in env ``restore``/``step``/``snapshot`` (including the sandbox).
        total_seconds: wall time of the whole rollout.
    """

    batch: AgentTurnBatch
    episodes: list[dict[str, Any]]
    completions: int = 0
    generate_seconds: float = 0.0
    env_seconds: float = 0.0
    total_seconds: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def success_rate(self) -> float:
        return float(np.mean([bool(e.get("success", False)) for e in self.episodes])) if self.episodes else 0.0


class RolloutEngine:
    """Play episodes with tree sampling and collect agent-turns.

    Args:
        env_fn: makes one env (an AEC env with ``snapshot``/``restore``, e.g. ``lambda: teamgym.make(id)``).
        policies: the policy of each role; pass the same object for several roles to share one model (its prompts
            then go into one ``generate`` call).
        sampling: sampling settings for every ``generate`` call.
        tree: how nodes are expanded.
        prompt_formatter: ``(env, agent) -> prompt text``; default: the env's observation.
        env_workers: threads stepping envs in parallel (0 = in the calling thread); useful for sandbox envs.
        seed: seeds the strategy's own generator (``top_m``).
    """

    def __init__(self, env_fn: Callable[[], Any], policies: Mapping[str, Policy], *,
                 sampling: SamplingParams | None = None, tree: TreeSampling | None = None,
                 prompt_formatter: PromptFormatter = default_prompt, env_workers: int = 0, seed: int = 0):
        self.env_fn = env_fn
        self.policies = dict(policies)
        self.sampling = sampling or SamplingParams()
        self.tree = tree or TreeSampling()
        self.prompt_formatter = prompt_formatter
        self.env_workers = env_workers
        self.rng = np.random.default_rng(seed)
        self.adaptive = AdaptiveK(k=self.tree.k, k0=self.tree.k0, k_max=self.tree.k_max)
        self._envs: list[Any] = []
        self._pool = ThreadPoolExecutor(env_workers) if env_workers > 0 else None

    def close(self) -> None:
        """Close the envs and the thread pool."""
        for env in self._envs:
            env.close()
        if self._pool is not None:
            self._pool.shutdown()

    # ------------------------------------------------------------------ state (checkpoints)
    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "adaptive": self.adaptive.state_dict()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.adaptive.load_state_dict(state["adaptive"])

    # ------------------------------------------------------------------ rollout
    def rollout(self, task_ids: Sequence[Any], *, episode_prefix: str = "ep", tree: TreeSampling | None = None,
                sampling: SamplingParams | None = None) -> RolloutResult:
        """Play one episode per task id (in lockstep) and return every sampled agent-turn.

        Args:
            task_ids: one task per episode (passed to ``reset(options={"task_id": ...})``).
            episode_prefix: episode ids are ``f"{episode_prefix}-{index}"``.
            tree, sampling: override the engine's settings for this rollout (e.g. ``k=1`` greedy for evaluation).
        """
        tree = tree or self.tree
        sampling = sampling or self.sampling
        start = time.perf_counter()
        timing = {"generate": 0.0, "env": 0.0, "completions": 0}
        while len(self._envs) < len(task_ids):
            self._envs.append(self.env_fn())
        envs = self._envs[: len(task_ids)]
        for index, (env, task_id) in enumerate(zip(envs, task_ids)):
            env.reset(seed=_seed_of(task_id, index), options={"task_id": task_id})
        unknown = sorted({a for env in envs for a in env.possible_agents} - set(self.policies))
        if unknown:
            raise InvalidArgumentError(f"no policy for agents {unknown}: pass policies={{agent: policy}} for each")
        rows: list[dict[str, Any]] = []
        episodes: list[dict[str, Any] | None] = [None] * len(envs)
        steps = [0] * len(envs)
        active = list(range(len(envs)))
        while active:
            nodes = [self._open_node(envs[i], i) for i in active]
            first_k = tree.k0 if tree.strategy == "adaptive" else tree.k
            candidates = self._generate(nodes, first_k, sampling, timing)
            expanded = self._expand_all(envs, active, nodes, candidates, tree, timing)
            if tree.strategy == "adaptive":
                expanded = self._adaptive_extra(envs, active, nodes, expanded, tree, sampling, timing)
            for i, node, step in zip(active, nodes, expanded):
                rows.extend(self._rows(node, step, f"{episode_prefix}-{i}", task_ids[i], steps[i]))
                steps[i] += 1
            still = []
            for i in active:
                if _episode_over(envs[i]):
                    episodes[i] = _summary(envs[i], f"{episode_prefix}-{i}")
                else:
                    still.append(i)
            active = still
        success = {e["episode_id"]: bool(e.get("success", False)) for e in episodes if e is not None}
        for row in rows:
            row["success"] = success[row["episode_id"]]
        return RolloutResult(
            batch=AgentTurnBatch.from_rows(rows), episodes=[e for e in episodes if e is not None],
            completions=int(timing["completions"]), generate_seconds=timing["generate"], env_seconds=timing["env"],
            total_seconds=time.perf_counter() - start,
        )

    # ------------------------------------------------------------------ internals
    def _open_node(self, env: Any, index: int) -> dict[str, Any]:
        agent = env.agent_selection
        prompt = self.prompt_formatter(env, agent)
        return {"env_index": index, "agent": agent, "turn": int(getattr(env, "turn", 0)),
                "state": _snapshot(env), "prompt": prompt,
                "anchor": hashlib.sha1(env.observe(agent)["prompt"].encode("utf-8")).hexdigest()[:16]}

    def _generate(self, nodes: Sequence[dict[str, Any]], n: int, sampling: SamplingParams,
                  timing: dict[str, float]) -> list[list[Completion]]:
        """``n`` completions per node: one ``generate`` call per distinct policy object."""
        by_policy: dict[int, list[int]] = {}
        for j, node in enumerate(nodes):
            by_policy.setdefault(id(self.policies[node["agent"]]), []).append(j)
        out: list[list[Completion]] = [[] for _ in nodes]
        for members in by_policy.values():
            policy = self.policies[nodes[members[0]]["agent"]]
            tic = time.perf_counter()
            groups = policy.generate([nodes[j]["prompt"] for j in members], n, sampling)
            timing["generate"] += time.perf_counter() - tic
            timing["completions"] += n * len(members)
            for j, group in zip(members, groups):
                out[j] = list(group)
        return out

    def _expand_all(self, envs: Sequence[Any], active: Sequence[int], nodes: Sequence[dict[str, Any]],
                    candidates: Sequence[Sequence[Completion]], tree: TreeSampling,
                    timing: dict[str, float]) -> list[TreeStep]:
        tic = time.perf_counter()
        jobs = [partial(self._expand, envs[i], node, cands, tree) for i, node, cands in zip(active, nodes, candidates)]
        if self._pool is not None and len(jobs) > 1:
            steps = list(self._pool.map(lambda job: job(), jobs))
        else:
            steps = [job() for job in jobs]
        timing["env"] += time.perf_counter() - tic
        return steps

    def _expand(self, env: Any, node: dict[str, Any], candidates: Sequence[Completion],
                tree: TreeSampling) -> TreeStep:
        return tree_step(node["state"], list(candidates), restore=partial(_restore, env),
                         act=_scorer(env, node["agent"]), take_snapshot=partial(_snapshot, env),
                         choose=self._chooser(tree))

    def _adaptive_extra(self, envs: Sequence[Any], active: Sequence[int], nodes: Sequence[dict[str, Any]],
                        first: Sequence[TreeStep], tree: TreeSampling, sampling: SamplingParams,
                        timing: dict[str, float]) -> list[TreeStep]:
        """Adaptive K: sample more candidates only at nodes whose first ``k0`` rewards disagree (batched)."""
        extra = [self.adaptive.extra(step.rewards) for step in first]
        need = [j for j, more in enumerate(extra) if more > 0]
        out = list(first)
        for more in sorted({extra[j] for j in need}):
            group = [j for j in need if extra[j] == more]
            candidates = self._generate([nodes[j] for j in group], more, sampling, timing)
            tic = time.perf_counter()
            for j, cands in zip(group, candidates):
                env = envs[active[j]]
                second = tree_step(nodes[j]["state"], cands, restore=partial(_restore, env),
                                   act=_scorer(env, nodes[j]["agent"]), take_snapshot=partial(_snapshot, env))
                branches: list[Branch] = first[j].branches + second.branches
                chosen = self._chooser(tree)([b.reward for b in branches])
                _restore(env, branches[chosen].snapshot)
                out[j] = TreeStep(branches, chosen, branches[chosen].snapshot)
            timing["env"] += time.perf_counter() - tic
        return out

    def _chooser(self, tree: TreeSampling) -> Callable[[Sequence[float]], int]:
        if tree.strategy == "top_m":
            return partial(choose_top_m, generator=self.rng, m=tree.top_m, temperature=tree.top_m_temperature)
        return choose_greedy

    def _rows(self, node: dict[str, Any], step: TreeStep, episode_id: str, task_id: Any,
              step_index: int) -> list[dict[str, Any]]:
        rows = []
        for b, branch in enumerate(step.branches):
            completion: Completion = branch.candidate
            rows.append({
                "episode_id": episode_id, "task_id": task_id, "agent": node["agent"], "turn": node["turn"],
                "step": step_index, "branch": b, "chosen": b == step.chosen,
                "prompt_ids": completion.prompt_ids, "completion_ids": completion.token_ids,
                "logprobs": completion.logprobs, "text": completion.text,
                "reward_terms": completion.extra.get("terms", {}), "rewards": branch.reward,
                "anchor": node["anchor"], "success": False,
                "infra_error": completion.extra.get("infra_error", ""),
            })
        return rows


def _scorer(env: Any, agent: str) -> Callable[[Completion], float]:
    """``act`` for :func:`tree_step`: step ``env`` with the completion, record its terms, return the agent's reward."""

    def act(completion: Completion) -> float:
        env.step(completion.text)
        info = env.infos.get(agent, {})
        completion.extra = {"terms": dict(info.get("reward_terms", {})),
                            "infra_error": str(info.get("infra_error", "") or "")}
        return float(env.rewards.get(agent, 0.0))

    return act


def _snapshot(env: Any) -> Any:
    return env.snapshot() if hasattr(env, "snapshot") else env.unwrapped.snapshot()


def _restore(env: Any, snapshot: Any) -> None:
    if hasattr(env, "restore"):
        env.restore(snapshot)
    else:
        env.unwrapped.restore(snapshot)


def _episode_over(env: Any) -> bool:
    return all(env.terminations.get(a, False) or env.truncations.get(a, False) for a in env.agents)


def _summary(env: Any, episode_id: str) -> dict[str, Any]:
    for agent in env.agents:
        episode = env.infos.get(agent, {}).get("episode")
        if episode is not None:
            return {**episode, "episode_id": episode_id}
    return {"episode_id": episode_id, "task_id": getattr(env, "task_id", None), "success": False}


def _seed_of(task_id: Any, index: int) -> int:
    """A stable env seed per (task, slot): the env's RNG is then the same whenever the same task is replayed."""
    digest = hashlib.sha256(f"{task_id!r}/{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little")
