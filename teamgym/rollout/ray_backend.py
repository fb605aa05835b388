"""Ray backend: env slots (env + sandbox) as Ray actors, so rollouts scale past one machine.

Each actor holds one :class:`~teamgym.rollout.slot.EnvSlot`; the engine calls slot methods on all active actors at
once and waits for the results, so env steps and sandbox runs of different episodes proceed in parallel on whatever
nodes the Ray cluster has. Generation stays with the engine's samplers: on GPU, pass a
:class:`~teamgym.rollout.vllm.VLLMSampler` (one vLLM engine in process) or a
:class:`~teamgym.rollout.ray_vllm.RayVLLMSampler` (several vLLM engines as Ray actors, prompts sharded across them,
as OpenRLHF does). Only plain data crosses the actor boundary.

>>> import ray, teamgym                                                                        # doctest: +SKIP
>>> ray.init()                                                                                 # doctest: +SKIP
>>> slots = RaySlots(partial(teamgym.make, "plan_path-v0", size=4), plan_path_prompt)          # doctest: +SKIP
>>> engine = RolloutEngine(slots, samplers)                                                     # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from teamgym.errors import DependencyNotInstalled
from teamgym.rollout.slot import EnvSlot

__all__ = ["RaySlots"]


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise DependencyNotInstalled("ray", "ray", "the Ray rollout backend") from None
    return ray


class RaySlots:
    """A :class:`~teamgym.rollout.slot.SlotPool` of Ray actors, one env each.

    Args:
        env_fn: makes one env inside the actor (must be picklable: a module-level function or a ``partial``).
        prompt_formatter: ``(env, agent) -> prompt`` (picklable too).
        actor_options: passed to ``ray.remote(...).options`` (e.g. ``{"num_cpus": 0.5}``; the default asks for no
            CPU reservation so that many light envs share a node).
    """

    def __init__(self, env_fn: Callable[[], Any], prompt_formatter: Callable[[Any, str], str], *,
                 actor_options: dict[str, Any] | None = None):
        ray = _ray()
        if not ray.is_initialized():
            ray.init()
        self._ray = ray
        self._actor_cls = ray.remote(EnvSlot).options(**{"num_cpus": 0, **(actor_options or {})})
        self.env_fn = env_fn
        self.prompt_formatter = prompt_formatter
        self.actors: list[Any] = []

    def ensure(self, count: int) -> None:
        while len(self.actors) < count:
            self.actors.append(self._actor_cls.remote(self.env_fn, self.prompt_formatter))

    def call(self, method: str, calls: Sequence[tuple[int, tuple[Any, ...]]]) -> list[Any]:
        futures = [getattr(self.actors[i], method).remote(*args) for i, args in calls]
        return self._ray.get(futures)

    def close(self) -> None:
        closing = [actor.close.remote() for actor in self.actors]
        self._ray.get(closing)
        for actor in self.actors:
            self._ray.kill(actor)
        self.actors = []
