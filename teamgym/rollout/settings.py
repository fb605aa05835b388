"""The rollout settings a training config holds: how a tree expands (:class:`TreeSampling`) and how vLLM engines are
laid out (:class:`VLLMSettings`).

Plain dataclasses, each field documented and checked once on construction, in a module that imports neither torch
nor the engines: ``teamgym train`` builds and validates its config from them before anything heavy is imported, so a
bad value is refused at once. The engine (:mod:`teamgym.rollout.engine`) and the samplers
(:mod:`teamgym.rollout.samplers`) read them.
"""

from __future__ import annotations

from dataclasses import dataclass

from teamgym.errors import InvalidArgumentError, check_choice, check_int, check_number

__all__ = ["BACKENDS", "STRATEGIES", "TWO_ROUND_STRATEGIES", "TreeSampling", "VLLMSettings"]

#: How a tree advances from a node (``TreeSampling.strategy``).
STRATEGIES = ("greedy", "top_m", "adaptive", "budget")
#: The strategies that expand a node in two rounds: ``k0`` candidates, then more after seeing their rewards.
TWO_ROUND_STRATEGIES = ("adaptive", "budget")

#: What can sample rollouts.
BACKENDS = ("hf", "vllm")


@dataclass(frozen=True)
class TreeSampling:
    """How each tree node is expanded (also the trainer's ``tree`` config section).

    Attributes:
        k: candidates per (agent, step) node (AT-GRPO: 4). ``k = 1`` is plain sampling (no tree).
        strategy: tree advance rule: ``greedy`` (advance the best, AT-GRPO), ``top_m`` (stochastic advance among
            the ``top_m`` best), ``adaptive`` (:class:`teamgym.algos.AdaptiveK`: ``k0`` candidates first, more only
            where they disagree, at most ``k_max``) or ``budget`` (:func:`teamgym.algos.allocate_level_budget`:
            ``k0`` candidates at every node of a tree level, then the level's remaining ``(k - k0)`` per node dealt
            to the nodes whose first rewards disagree, up to ``k_max`` each, the rest to the others: exactly ``k``
            per node on average, like greedy). ``adaptive`` and ``budget`` advance greedily.
        top_m: ``top_m`` strategy: how many of the best candidates it samples among.
        top_m_temperature: ``top_m`` strategy: softmax temperature over their rewards (0 = greedy).
        k0: ``adaptive`` and ``budget`` strategies: candidates sampled first at each node.
        k_max: ``adaptive`` and ``budget`` strategies: most candidates one node may get with the budget that agreeing
            nodes did not use.
        continue_unchosen: continue every unchosen candidate to the end of its episode, one candidate per later
            node, so that every leaf of the sampling tree is a finished episode (TreeRL's EPTree, arXiv 2506.11902:
            forks completed to the end; here the forks are the nodes' other candidates). An episode of D
            nodes then costs about ``k*D + (k-1)*D*(D-1)/2`` completions instead of ``k*D``. Candidates whose step
            ended the episode are finished leaves already, and those whose scoring failed are not continued.
            ``None`` (default): the trainer decides (on for ``treerl`` and for a learned process reward,
            ``prm.weight > 0``; off otherwise); the engine reads ``None`` as off.
    """

    k: int = 4
    strategy: str = "greedy"
    top_m: int = 2
    top_m_temperature: float = 1.0
    k0: int = 2
    k_max: int = 8
    continue_unchosen: bool | None = None

    def __post_init__(self) -> None:
        for name in ("k", "top_m", "k0", "k_max"):
            check_int(f"tree.{name}", getattr(self, name), 1)
        if self.continue_unchosen is not None and not isinstance(self.continue_unchosen, bool):
            raise InvalidArgumentError(f"config field tree.continue_unchosen={self.continue_unchosen!r}: expected "
                                       "true, false or null (the estimator decides)")
        check_choice("tree.strategy", self.strategy, STRATEGIES)
        check_number("tree.top_m_temperature", self.top_m_temperature, low=0.0)
        if self.strategy in TWO_ROUND_STRATEGIES and not self.k0 <= self.k <= self.k_max:
            raise InvalidArgumentError(
                f"config fields tree.k0={self.k0}, tree.k={self.k}, tree.k_max={self.k_max}: the {self.strategy} "
                "strategy needs k0 <= k <= k_max: lower tree.k0 or raise tree.k_max"
            )


@dataclass(frozen=True)
class VLLMSettings:
    """The vLLM engines of each trained model (``backend="vllm"``; also the trainer's ``vllm`` config section).

    Attributes:
        gpu_memory_utilization: share of GPU memory each vLLM engine may take (the trainer needs the rest).
        engines: vLLM engines per model. 1 (default): one engine in the trainer's process. More: each engine is a Ray
            actor (``RayVLLMSampler``, ``pip install 'teamgym[ray]'``), every ``generate`` call's prompts are split
            into contiguous shards across them and the weights are sent to all of them after each update. Engine
            ``i`` is seeded ``seed + i``.
        tensor_parallel_size: GPUs per vLLM engine (vLLM's ``tensor_parallel_size``); above 1 the engines run as Ray
            actors (even a single one), each holding that many whole GPUs of one node.
        gpus_per_engine: Ray engines: GPUs each engine actor reserves from Ray. 0 (default) = whole GPUs,
            ``tensor_parallel_size`` of them (none with ``device="cpu"``, for vLLM's CPU build); with tensor parallel
            size 1 a share in (0, 1] lets several engines share one GPU (e.g. 0.3 with
            ``gpu_memory_utilization=0.25``: two engines and the trainer on one GPU). Ray does not count the
            trainer's own GPU.
    """

    gpu_memory_utilization: float = 0.4
    engines: int = 1
    tensor_parallel_size: int = 1
    gpus_per_engine: float = 0.0

    def __post_init__(self) -> None:
        check_number("vllm.gpu_memory_utilization", self.gpu_memory_utilization, low=0.0, inclusive=False)
        if not self.gpu_memory_utilization < 1:
            raise InvalidArgumentError(f"config field vllm.gpu_memory_utilization={self.gpu_memory_utilization!r}: "
                                       "expected a float in (0, 1), e.g. 0.4")
        check_int("vllm.engines", self.engines, 1)
        check_int("vllm.tensor_parallel_size", self.tensor_parallel_size, 1)
        check_number("vllm.gpus_per_engine", self.gpus_per_engine, low=0.0)
        share, tp = self.gpus_per_engine, self.tensor_parallel_size
        if tp > 1 and share not in (0, tp):
            raise InvalidArgumentError(
                f"config field vllm.gpus_per_engine={share!r} with vllm.tensor_parallel_size={tp}: a tensor parallel "
                f"engine needs one whole GPU per rank: use 0 (= {tp} GPUs) or {tp}"
            )
        if tp == 1 and share > 1:
            raise InvalidArgumentError(
                f"config field vllm.gpus_per_engine={share!r}: a one-GPU engine takes a share in (0, 1] of a GPU, or 0 "
                "for a whole one; for more GPUs per engine set vllm.tensor_parallel_size"
            )
        if share and not self.on_ray:
            raise InvalidArgumentError(
                f"config field vllm.gpus_per_engine={share!r} applies to Ray engines only: set vllm.engines > 1 (or "
                "vllm.tensor_parallel_size > 1), or leave it 0 for the in-process engine"
            )

    @property
    def on_ray(self) -> bool:
        """Whether the engines run as Ray actors (several engines, or tensor parallel ones)."""
        return self.engines > 1 or self.tensor_parallel_size > 1
