"""``RolloutEngine``: drive many envs with samplers, AT-GRPO tree sampling, and emit an :class:`AgentTurnBatch`.

One rollout plays one episode per task id given, all envs in lockstep. At every env step (one node of the sampling
tree per episode):

1. every active env snapshots its state and renders the acting agent's prompt;
2. prompts are batched **per sampler** (a shared model serves all roles in one call) and each gets ``k`` completions;
3. for each env, the slot scores every candidate from the node state with :func:`teamgym.algos.tree_step`'s
   semantics (never from a sibling's state; :meth:`EnvSlot.expand` leaves out copies that would change nothing),
   picks one with the strategy's rule (AT-GRPO: greedy), and leaves the env in the chosen child's state, from which
   the next agent of the turn proposes (arXiv 2510.11062, Sec. 4.2);
4. one row per candidate is recorded, keyed by (episode, agent, turn, step) so groups never mix tasks, with what
   the candidate's step gave the other agents (``others_terms``, ``others_rewards``).

Strategies (``TreeSampling.strategy``): ``"greedy"`` (AT-GRPO), ``"top_m"`` (stochastic advance among the m best),
``"adaptive"`` (:class:`teamgym.algos.AdaptiveK`: ``k0`` candidates first, more only where they disagree),
``"budget"`` (:func:`teamgym.algos.allocate_level_budget`: ``k0`` at every node of a tree level, then the level's
other ``k - k0`` per node dealt to the nodes that disagree first). None of
them advances on a candidate whose scoring failed (``infra_error``) while a sibling is healthy.
``TreeSampling.continue_unchosen`` (TreeRL) plays every unchosen candidate that can go on to the end as an episode of
its own in another slot, one candidate per node, so that every leaf of the tree is a finished episode; its rows'
``fork`` names the candidate. ``rollout(..., alphas=...)`` scores candidates with the trainer's alphas instead of the
env's, so that the tree advances on them. Envs that
use the sandbox can be stepped from a thread pool (``LocalSlots(..., workers=N)``; the sandbox's subprocesses release
the GIL) or from Ray actors (``RaySlots``): envs live in :class:`~teamgym.rollout.slot.EnvSlot` objects that exchange
only plain data with the engine, and the engine is given the pool that holds them.

**Waves** (``waves > 1``) overlap env time with generation. The episodes are split into that many waves, each played
in lockstep as above; a background thread runs the waves' env work (steps, the sandbox, snapshots) while the calling
thread generates for the next wave, so an env step waits only when its wave's completions are not ready yet. Every
node still gets its ``k`` completions from one ``generate`` call per sampler (the wave's), and the batch's rows come
out in the lockstep order (step, then episode). Waves change which prompts share a ``generate`` call, so a random
sampler draws other samples; a sampler that is a function of the prompt gives the same batch at any ``waves``.
"""

from __future__ import annotations

import hashlib
import time
from collections import deque
from collections.abc import Generator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from teamgym.algos import AdaptiveK, allocate_level_budget
from teamgym.errors import InvalidArgumentError, SandboxError
from teamgym.rollout.batch import AgentTurnBatch
from teamgym.rollout.sampling import Completion, Sampler, SamplingParams
from teamgym.rollout.settings import TWO_ROUND_STRATEGIES, TreeSampling
from teamgym.rollout.slot import NodeView, Scored, SlotPool
from teamgym.sandbox import ExecResult, Program, run_programs

__all__ = ["ChatPrompt", "RolloutEngine", "RolloutResult", "TreeSampling", "default_prompt", "task_seed"]


def default_prompt(env: Any, agent: str) -> str:
    """The env's own observation text for ``agent``."""
    return env.observe(agent)["prompt"]


class ChatPrompt:
    """``(env, agent) -> text``: the env's chat messages for ``agent`` (``infos[agent]["messages"]``: system, then
    user) rendered by ``tokenizer``'s chat template, ending where the assistant's answer begins. For instruct models,
    which answer well only inside their own template. Picklable, so Ray env actors can render prompts too.

    Args:
        tokenizer: a transformers tokenizer with a ``chat_template`` (e.g. a Qwen or Llama instruct checkpoint's).
    """

    def __init__(self, tokenizer: Any):
        if not getattr(tokenizer, "chat_template", None):
            raise InvalidArgumentError(
                f"prompt_format='chat' with a tokenizer without a chat template ({type(tokenizer).__name__}): use an "
                "instruct checkpoint's tokenizer, set tokenizer.chat_template, or use prompt_format='env'"
            )
        self.tokenizer = tokenizer

    def __call__(self, env: Any, agent: str) -> str:
        messages = env.infos[agent].get("messages")
        if not messages:
            raise InvalidArgumentError(
                f"prompt_format='chat': {type(env).__name__} gives no infos[{agent!r}]['messages'] to render; use "
                "prompt_format='env'"
            )
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


@dataclass
class RolloutResult:
    """A rollout's agent-turn batch, its episode summaries and where the time went.

    Attributes:
        batch: one row per candidate.
        episodes: one summary per episode (the env's ``infos[agent]["teamgym_episode"]`` plus ``episode_id``).
        continuations: one summary per continued candidate (``TreeSampling.continue_unchosen``), likewise; not
            counted in :attr:`success_rate`, which follows the episodes' chosen paths.
        completions: completions generated (the sampling budget spent).
        completion_tokens: tokens in those completions (each completion's ``token_ids``, an end token included).
        generate_seconds: wall time inside ``sampler.generate``.
        env_seconds: time in env calls (reset, prompts, expansion with the sandbox, summaries). With ``waves > 1``
            most of it overlaps generation: ``total_seconds - generate_seconds`` is the time outside generation.
        total_seconds: wall time of the whole rollout.
    """

    batch: AgentTurnBatch
    episodes: list[dict[str, Any]]
    continuations: list[dict[str, Any]] = field(default_factory=list)
    completions: int = 0
    completion_tokens: int = 0
    generate_seconds: float = 0.0
    env_seconds: float = 0.0
    total_seconds: float = 0.0

    @property
    def success_rate(self) -> float:
        return float(np.mean([bool(e.get("success", False)) for e in self.episodes])) if self.episodes else 0.0


class RolloutEngine:
    """Play episodes with tree sampling and collect agent-turns.

    Args:
        slots: where the envs live: :class:`~teamgym.rollout.slot.LocalSlots` (in this process, optionally stepped
            from a thread pool) or :class:`~teamgym.rollout.ray_backend.RaySlots` (Ray actors). The engine closes
            them in :meth:`close`.
        samplers: the sampler of each role; pass the same object for several roles to share one model (its prompts
            then go into one ``generate`` call).
        sampling: sampling settings for every ``generate`` call.
        tree: how nodes are expanded.
        seed: seeds the strategy's own generator (``top_m``).
        waves: how many waves the episodes are split into (1 = all in lockstep, one ``generate`` call per sampler
            per step). With 2 or more, one wave's env work runs in a background thread while the next wave's
            prompts are generated (see the module doc): fewer prompts per call, env time hidden behind generation.

    Example::

        slots = LocalSlots(functools.partial(teamgym.make, "plan_path-v0"), default_prompt)
        engine = RolloutEngine(slots, {"tool": policy, "planner": policy}, tree=TreeSampling(k=4))
    """

    def __init__(self, slots: SlotPool, samplers: Mapping[str, Sampler], *, sampling: SamplingParams | None = None,
                 tree: TreeSampling | None = None, seed: int = 0, waves: int = 1):
        if not isinstance(waves, int) or isinstance(waves, bool) or waves < 1:
            raise InvalidArgumentError(f"waves={waves!r}: expected an int >= 1 (1 = lockstep, 2 = overlap env "
                                       "steps with generation)")
        self.waves = waves
        self._env_thread = ThreadPoolExecutor(1, thread_name_prefix="teamgym-env") if waves > 1 else None
        self.samplers = dict(samplers)
        self.sampling = sampling or SamplingParams()
        self.tree = tree or TreeSampling()
        self.rng = np.random.default_rng(seed)
        # Only the adaptive strategy reads it; clamped so that other strategies may use any k (k = 1 included).
        k = self.tree.k
        self.adaptive = AdaptiveK(k=k, k0=min(self.tree.k0, k), k_max=max(self.tree.k_max, k))
        self.slots = slots

    def close(self) -> None:
        """Close the envs (and the thread pool or actors holding them)."""
        if self._env_thread is not None:
            self._env_thread.shutdown()
        self.slots.close()

    # ------------------------------------------------------------------ state (checkpoints)
    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "adaptive": self.adaptive.state_dict()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.adaptive.load_state_dict(state["adaptive"])

    # ------------------------------------------------------------------ rollout
    def rollout(self, task_ids: Sequence[Any], *, episode_prefix: str = "ep", tree: TreeSampling | None = None,
                sampling: SamplingParams | None = None, seeds: Sequence[int] | None = None,
                alphas: Mapping[str, float] | None = None) -> RolloutResult:
        """Play one episode per task id (in lockstep) and return every sampled agent-turn.

        Args:
            task_ids: one task per episode (passed to ``reset(options={"task_id": ...})``).
            episode_prefix: episode ids are ``f"{episode_prefix}-{index}"``; a continued candidate's episode (see
                ``TreeSampling.continue_unchosen``) is ``f"{episode_prefix}-{index}/{step}.{branch}"``.
            tree, sampling: override the engine's settings for this rollout (e.g. ``k=1`` greedy for evaluation).
            seeds: the env seed of each episode (``reset(seed=...)``). Default: a stable seed per (task, index),
                so a task drawn twice in one rollout gets two env RNG streams. Pass ``[task_seed(t) for t in
                task_ids]`` to replay repeats of a task from identical states (GiGPO's trajectory groups).
            alphas: ``{agent: alpha}``: score every candidate ``alpha[agent] * team + local`` (and what its step paid
                the other agents, with theirs) instead of the env's own mixing: the tree then advances on these
                rewards and the rows hold them (the trainer's alpha mixer). ``None``: the env's rewards.
        """
        tree = tree or self.tree
        sampling = sampling or self.sampling
        if seeds is None:
            seeds = [_seed_of(t, i) for i, t in enumerate(task_ids)]
        elif len(seeds) != len(task_ids):
            raise InvalidArgumentError(f"{len(seeds)} seeds for {len(task_ids)} task ids: give one seed per episode")
        start = time.perf_counter()
        timing = {"generate": 0.0, "env": 0.0, "completions": 0, "completion_tokens": 0}
        self.slots.ensure(len(task_ids))
        agents = self._env_call(timing, "reset", [(i, (t, int(s))) for i, (t, s) in
                                                  enumerate(zip(task_ids, seeds, strict=True))])
        unknown = sorted({a for names in agents for a in names} - set(self.samplers))
        if unknown:
            raise InvalidArgumentError(f"no sampler for agents {unknown}: pass samplers={{agent: sampler}} for each")
        if alphas is not None:
            missing = sorted({a for names in agents for a in names} - set(alphas))
            if missing:
                raise InvalidArgumentError(f"alphas has no entry for agents {missing}: give one alpha per agent")
        # One draw per rollout; each node's strategy seed derives from it, the episode and the step, so the choice
        # does not depend on the order in which waves reach their nodes.
        base_seed = int(self.rng.integers(2**63))
        play = _Play(task_ids, episode_prefix, tree, base_seed, timing, dict(alphas) if alphas is not None else None)
        waves = min(self.waves, len(task_ids))
        plays = [self._play(list(range(w, len(task_ids), waves)), play) for w in range(waves)]
        if waves == 1:
            self._drive(plays[0], sampling, timing)
        else:
            self._drive_waves(plays, sampling, timing)
        play.nodes_rows.sort(key=lambda node: (node[0], play.order(node[1])))
        rows = [row for _, _, node in play.nodes_rows for row in node]
        success = {e["episode_id"]: bool(e.get("success", False)) for e in play.episodes.values()}
        for row in rows:
            row["success"] = success[row["episode_id"]]
        roots = sorted(i for i in play.episodes if play.is_root(i))
        forks = sorted((i for i in play.episodes if not play.is_root(i)), key=play.order)
        return RolloutResult(
            batch=AgentTurnBatch.from_rows(rows), episodes=[play.episodes[i] for i in roots],
            continuations=[play.episodes[i] for i in forks], completions=int(timing["completions"]),
            completion_tokens=int(timing["completion_tokens"]), generate_seconds=timing["generate"],
            env_seconds=timing["env"], total_seconds=time.perf_counter() - start,
        )

    # ------------------------------------------------------------------ internals
    def _play(self, wave: list[int], play: _Play) -> Generator[tuple[list[NodeView], list[int]],
                                                                list[list[Completion]], None]:
        """Play the episodes of one wave in lockstep: yields ``(nodes, n per node)`` and is sent their completions.

        A continued candidate (``continue_unchosen``) becomes an episode of its own in a new slot, played in this
        wave from the next step on with one candidate per node.
        """
        tree = play.tree
        continuing = bool(tree.continue_unchosen)
        steps = dict.fromkeys(wave, 0)
        active = list(wave)
        while active:
            nodes: list[NodeView] = self._env_call(play.timing, "open_node", [(i, ()) for i in active])
            first_k = tree.k0 if tree.strategy in TWO_ROUND_STRATEGIES else tree.k
            candidates = yield nodes, [first_k if play.is_root(i) else 1 for i in active]
            seeds = [_node_seed(play.base_seed, i, steps[i], 0) for i in active]
            expanded = self._expand(play, active, candidates, seeds)
            if tree.strategy in TWO_ROUND_STRATEGIES:
                more = self._more_candidates(play, active, expanded)
                for n in sorted({m for m in more if m > 0}):
                    group = [j for j, m in enumerate(more) if m == n]
                    extra = yield [nodes[j] for j in group], [n] * len(group)
                    seeds = [_node_seed(play.base_seed, active[j], steps[active[j]], n) for j in group]
                    results = self._expand(play, [active[j] for j in group], extra, seeds)
                    for j, new, (scored, chosen) in zip(group, extra, results, strict=True):
                        candidates[j] = candidates[j] + new
                        expanded[j] = (expanded[j][0] + scored, chosen)
            for j, i in enumerate(active):
                scored, chosen = expanded[j]
                play.nodes_rows.append((steps[i], i, _rows(nodes[j], candidates[j], scored, chosen, play.episode_id(i),
                                                           play.task_of(i), steps[i], play.forks.get(i, {}))))
            born: list[int] = []
            if continuing:
                roots = [i for i in active if play.is_root(i)]
                for i, children in zip(roots, self._env_call(play.timing, "unchosen_children",
                                                             [(i, ()) for i in roots]), strict=True):
                    for branch, snapshot in children:
                        child = play.new_slot(i, steps[i], branch)
                        self.slots.ensure(child + 1)
                        self._env_call(play.timing, "adopt", [(child, (snapshot,))])
                        steps[child] = steps[i] + 1
                        born.append(child)
            for i in active:
                steps[i] += 1
            finished = self._env_call(play.timing, "done", [(i, ()) for i in active])
            ended = [i for i, over in zip(active, finished, strict=True) if over]
            summaries = self._env_call(play.timing, "summary", [(i, (play.episode_id(i),)) for i in ended])
            play.episodes.update(zip(ended, summaries, strict=True))
            active = [i for i, over in zip(active, finished, strict=True) if not over] + born

    def _more_candidates(self, play: _Play, active: list[int], expanded: list[tuple[list[Scored], int]]) -> list[int]:
        """Two-round strategies: each node's further candidates after its first ``k0`` (0 for a continuation's)."""
        tree = play.tree
        roots = [j for j, i in enumerate(active) if play.is_root(i)]
        first = [[s.reward for s in expanded[j][0]] for j in roots]
        if tree.strategy == "adaptive":
            extra = [self.adaptive.extra(rewards) for rewards in first]
        else:  # "budget": the level's nodes share k per node
            extra = allocate_level_budget(first, k=tree.k, k0=tree.k0, k_max=tree.k_max)
        more = [0] * len(active)
        for j, n in zip(roots, extra, strict=True):
            more[j] = n
        return more

    def _drive(self, play: Generator, sampling: SamplingParams, timing: dict[str, float]) -> None:
        """Run one wave in the calling thread: generate, then its env work, in turn."""
        request = _advance(play, None)
        while request is not None:
            request = _advance(play, self._generate(*request, sampling, timing))

    def _drive_waves(self, plays: list[Generator], sampling: SamplingParams, timing: dict[str, float]) -> None:
        """Generate for the waves in turn while the env thread runs each wave's env work up to its next request.

        The env thread takes jobs in submission order, so by the time a wave's completions are sent, the next
        wave's prompts are usually ready: generation and env work alternate between waves without waiting.
        """
        assert self._env_thread is not None
        queue = deque((play, self._env_thread.submit(_advance, play, None)) for play in plays)
        try:
            while queue:
                play, future = queue.popleft()
                request = future.result()
                if request is not None:
                    completions = self._generate(*request, sampling, timing)
                    queue.append((play, self._env_thread.submit(_advance, play, completions)))
        finally:
            for _, future in queue:  # an error: let queued env work finish before the envs are touched again
                future.cancel() or future.exception()

    def _env_call(self, timing: dict[str, float], method: str, calls: list[tuple[int, tuple[Any, ...]]]) -> list[Any]:
        tic = time.perf_counter()
        out = self.slots.call(method, calls) if calls else []
        timing["env"] += time.perf_counter() - tic
        return out

    def _expand(self, play: _Play, slots: Sequence[int], candidates: Sequence[Sequence[Completion]],
                seeds: Sequence[int]) -> list[tuple[list[Scored], int]]:
        calls = []
        tree = play.tree
        texts = [[c.text for c in cands] for cands in candidates]
        prefetched = self._prefetch(play.timing, slots, texts)
        for i, node_texts, seed, ready in zip(slots, texts, seeds, prefetched, strict=True):
            # The node's own seed travels with the call: the choice is reproducible wherever the slot runs.
            args = {"seed": seed, "m": tree.top_m, "temperature": tree.top_m_temperature, "alphas": play.alphas,
                    "keep": bool(tree.continue_unchosen) and play.is_root(i)}
            strategy = tree.strategy if play.is_root(i) else "greedy"  # a continuation has one candidate per node
            calls.append((i, (node_texts, strategy, args, ready)))
        return self._env_call(play.timing, "expand", calls)

    def _prefetch(self, timing: dict[str, float], slots: Sequence[int], texts: Sequence[Sequence[str]]
                  ) -> list[tuple[list[Program], list[ExecResult]]]:
        """Run the sandbox programs of every candidate of these nodes as one batch (every sandbox worker busy);
        each node's ``(programs, results)``, for its :meth:`EnvSlot.expand` to step the candidates with.

        A sandbox that fails here is left to each step's own call, which reports the failure as the env does.
        """
        declared: list[list[Program]] = self._env_call(timing, "programs", [(i, (t,)) for i, t in
                                                                            zip(slots, texts, strict=True)])
        flat = [program for programs in declared for program in programs]
        if not flat:
            return [([], []) for _ in declared]
        tic = time.perf_counter()
        try:
            results = run_programs(flat)
        except SandboxError:
            return [([], []) for _ in declared]
        finally:
            timing["env"] += time.perf_counter() - tic
        out, start = [], 0
        for programs in declared:
            out.append((programs, results[start:start + len(programs)]))
            start += len(programs)
        return out

    def _generate(self, nodes: Sequence[NodeView], counts: Sequence[int], sampling: SamplingParams,
                  timing: dict[str, float]) -> list[list[Completion]]:
        """``counts[j]`` completions for node j: one ``generate`` call per distinct (sampler object, count)."""
        by_call: dict[tuple[int, int], list[int]] = {}
        for j, (node, n) in enumerate(zip(nodes, counts, strict=True)):
            by_call.setdefault((id(self.samplers[node.agent]), n), []).append(j)
        out: list[list[Completion]] = [[] for _ in nodes]
        for (_, n), members in by_call.items():
            sampler = self.samplers[nodes[members[0]].agent]
            tic = time.perf_counter()
            groups = sampler.generate([nodes[j].prompt for j in members], n, sampling)
            timing["generate"] += time.perf_counter() - tic
            timing["completions"] += n * len(members)
            for j, group in zip(members, groups, strict=True):
                out[j] = list(group)
                timing["completion_tokens"] += sum(len(c.token_ids) for c in out[j])
        return out


class _Play:
    """The bookkeeping of one rollout shared by its waves: the episodes' ids, tasks and forks, and what comes out.

    Slots ``0 .. len(task_ids) - 1`` play the rollout's episodes; continued candidates get the next free indices
    (waves run one at a time on the env thread, so handing them out needs no lock).
    """

    def __init__(self, task_ids: Sequence[Any], prefix: str, tree: TreeSampling, base_seed: int,
                 timing: dict[str, float], alphas: dict[str, float] | None):
        self.task_ids, self.prefix, self.tree, self.base_seed = task_ids, prefix, tree, base_seed
        self.timing, self.alphas = timing, alphas
        self.nodes_rows: list[tuple[int, int, list[dict[str, Any]]]] = []  # (step, slot, the node's rows)
        self.episodes: dict[int, dict[str, Any]] = {}  # slot -> the summary of the episode it played
        self.forks: dict[int, dict[str, Any]] = {}  # continuation slot -> {"episode_id", "step", "branch"}
        self.root_of: dict[int, int] = {}  # continuation slot -> the episode slot it was forked from
        self.next_slot = len(task_ids)

    def is_root(self, slot: int) -> bool:
        return slot < len(self.task_ids)

    def task_of(self, slot: int) -> Any:
        return self.task_ids[self.root_of.get(slot, slot)]

    def episode_id(self, slot: int) -> str:
        if self.is_root(slot):
            return f"{self.prefix}-{slot}"
        fork = self.forks[slot]
        return f"{fork['episode_id']}/{fork['step']}.{fork['branch']}"

    def order(self, slot: int) -> tuple[int, int, int]:
        """Where a slot's rows go in the batch among a step's rows: the episodes in order, each followed by its
        continuations by fork (the same at any number of waves, whatever slots they got)."""
        if self.is_root(slot):
            return slot, -1, -1
        fork = self.forks[slot]
        return self.root_of[slot], fork["step"], fork["branch"]

    def new_slot(self, root: int, step: int, branch: int) -> int:
        """A slot for the continuation of candidate ``branch`` of ``root``'s node at ``step``."""
        slot, self.next_slot = self.next_slot, self.next_slot + 1
        self.root_of[slot] = root
        self.forks[slot] = {"episode_id": self.episode_id(root), "step": step, "branch": branch}
        return slot


def _rows(node: NodeView, candidates: Sequence[Completion], scored: Sequence[Scored], chosen: int,
          episode_id: str, task_id: Any, step_index: int, fork: dict[str, Any]) -> list[dict[str, Any]]:
    return [{
        "episode_id": episode_id, "task_id": task_id, "agent": node.agent, "turn": node.turn, "step": step_index,
        "branch": b, "chosen": b == chosen, "prompt_ids": c.prompt_ids, "completion_ids": c.token_ids,
        "logprobs": c.logprobs, "text": c.text, "reward_terms": s.terms, "rewards": s.reward, "anchor": node.anchor,
        "success": False, "infra_error": s.infra_error, "others_terms": s.others_terms,
        "others_rewards": s.others_rewards, "fork": dict(fork), "outcome": dict(s.outcome),
    } for b, (c, s) in enumerate(zip(candidates, scored, strict=True))]


def _advance(play: Generator, completions: list[list[Completion]] | None) -> tuple[list[NodeView], list[int]] | None:
    """Send a wave its completions (``None`` to start it); its next generate request, or ``None`` when it is done."""
    try:
        return play.send(completions)
    except StopIteration:
        return None


def _node_seed(base_seed: int, episode: int, step: int, extra: int) -> int:
    """The strategy seed of one node (``extra``: 0, or the size of an adaptive top-up round)."""
    digest = hashlib.blake2b(b"%d/%d/%d/%d" % (base_seed, episode, step, extra), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def task_seed(task_id: Any) -> int:
    """The env seed of ``task_id`` alone (equal for every repeat of the task; the default seed of slot 0)."""
    return _seed_of(task_id, 0)


def _seed_of(task_id: Any, index: int) -> int:
    """A stable env seed per (task, slot): the env's RNG is then the same whenever the same task is replayed."""
    digest = hashlib.sha256(f"{task_id!r}/{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little")
