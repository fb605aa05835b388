"""OpenRLHF: one role of a teamgym env as the agent that OpenRLHF's ``--train.agent_func_path`` loads.

OpenRLHF loads the agent file by path, instantiates its ``AgentExecutor`` (an ``AgentExecutorBase`` subclass) with
no arguments and calls ``execute(prompt, label, ...)`` once per sample; its ``MultiTurnAgentExecutor`` makes a fresh
``AgentInstance`` per sample, calls ``await reset({"observation": prompt, "label": label})`` and then, after every
generation, ``await step({"observation_text", "action_text", "label", "sampling_params"})``, which returns
``{"rewards", "scores", "environment_feedback", "done", "extra_logs"}``. The executor appends the feedback's tokens
to the context (masked out of the loss) and generates again until ``done``.

:func:`agent_classes` builds both classes on OpenRLHF's own bases; an agent file is two lines::

    from teamgym.integrations.openrlhf import agent_classes
    AgentInstance, AgentExecutor = agent_classes(partners={"tester": "scripted"})

The dataset's ``label`` names the env, task and role of each sample (:func:`dataset_rows` writes it; pass
``--data.label_key label``); the dataset prompt is a placeholder that ``reset`` replaces with the role's own
observation. The role plays through :class:`~teamgym.wrappers.SingleAgentView`, partners from ``partners``
(callables or the env's scripted policies, :mod:`teamgym.integrations.partners`). Per step, ``rewards`` is what the
role earned in that step (the env's ``alpha * team + local``; OpenRLHF sums them into the sample's reward) and
``scores`` the episode return so far (OpenRLHF keeps the last one, for dynamic filtering); ``extra_logs`` hold the
return, the role's turns and the episode's success. Named reward terms are not logged: ``SingleAgentView``'s info
holds the terms of the last env step of a turn (a partner's, when partners moved after the role), not the role's
own. Env steps (the sandbox) run in a thread, so the executor's event loop keeps serving other samples.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from teamgym.core.env import EPISODE_KEY
from teamgym.errors import DependencyNotInstalled, InvalidArgumentError, check_int
from teamgym.integrations.partners import PartnerSpec, check_partners, resolve_partners
from teamgym.rollout.engine import default_prompt

__all__ = ["agent_classes", "dataset_rows", "default_feedback", "label_of"]

_LABEL_KEYS = ("env_id", "task_id", "role")


def _require_openrlhf() -> Any:
    try:
        import openrlhf.utils.agent as agent
    except ImportError as err:
        raise DependencyNotInstalled(err.name or "openrlhf", "openrlhf", "the OpenRLHF agent") from None
    return agent


def dataset_rows(env_id: str, task_ids: Sequence[Any], roles: Sequence[str]) -> list[dict[str, str]]:
    """OpenRLHF prompt-dataset rows (one per task and role): ``prompt`` a placeholder, ``label`` the JSON spec.

    Save them as JSONL and train with ``--data.input_key prompt --data.label_key label``.
    """
    if not task_ids or not roles:
        raise InvalidArgumentError(f"{len(task_ids)} task ids and roles {list(roles)}: give at least one of each")
    return [{"prompt": f"teamgym {env_id} task {task!r} as {role}",
             "label": json.dumps({"env_id": env_id, "task_id": task, "role": role})}
            for task in task_ids for role in roles]


def label_of(label: Any) -> dict[str, Any]:
    """The ``{"env_id", "task_id", "role"}`` spec a :func:`dataset_rows` label holds (a JSON string or a dict)."""
    spec = label
    if isinstance(label, str):
        try:
            spec = json.loads(label)
        except json.JSONDecodeError:
            spec = None
    missing = [key for key in _LABEL_KEYS if key not in spec] if isinstance(spec, dict) else list(_LABEL_KEYS)
    if missing:
        raise InvalidArgumentError(
            f"label {str(label)[:80]!r} lacks {missing}: build the dataset with "
            "teamgym.integrations.openrlhf.dataset_rows(env_id, task_ids, roles) and pass --data.label_key label"
        )
    return spec


def default_feedback(env: Any, agent: str) -> str:
    """The text appended after each of the role's completions: a newline, then its next observation."""
    return "\n" + env.observe(agent)["prompt"]


def agent_classes(*, partners: Mapping[str, PartnerSpec] | None = None, env_kwargs: Mapping[str, Any] | None = None,
                  max_turns: int = 16, prompt: Callable[[Any, str], str] = default_prompt,
                  feedback: Callable[[Any, str], str] = default_feedback) -> tuple[type, type]:
    """``(AgentInstance, AgentExecutor)`` on OpenRLHF's ``AgentInstanceBase`` and ``MultiTurnAgentExecutor``.

    Args:
        partners: ``{role: policy}`` for the roles the model does not play (a callable ``observation -> str``,
            ``"scripted"`` or ``"scripted:NAME"``); the sample's own role is skipped, so one mapping serves rows of
            several roles.
        env_kwargs: options for ``teamgym.make`` (the env id comes from each sample's label).
        max_turns: the most turns of the role per episode; the episode is cut (``done``) after it.
        prompt: ``(env, agent) -> text``: the role's first context (default: the env's observation text; pass
            ``teamgym.rollout.ChatPrompt(tokenizer)`` for an instruct model's chat template).
        feedback: ``(env, agent) -> text`` appended after each completion that does not end the episode.

    Returns:
        the two classes; bind them to the names ``AgentInstance`` and ``AgentExecutor`` in the agent file.
    """
    check_int("max_turns", max_turns, 1)
    partner_specs = dict(partners or {})
    check_partners(partner_specs)
    make_kwargs = dict(env_kwargs or {})
    agent = _require_openrlhf()

    class AgentInstance(agent.AgentInstanceBase):
        """One sample's episode of one role (a fresh instance per sample, as the executor makes them)."""

        def __init__(self, *args: Any, **kwargs: Any):
            self.env: Any = None
            self.view: Any = None
            self.role = ""
            self.turns = 0
            self.episode_return = 0.0

        async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, str]:
            import teamgym
            from teamgym.rollout.engine import task_seed
            from teamgym.wrappers import SingleAgentView

            spec = label_of(states.get("label"))
            self.role = spec["role"]
            self.env = teamgym.make(spec["env_id"], **make_kwargs)
            others = {role: p for role, p in partner_specs.items() if role != self.role}
            self.view = SingleAgentView(self.env, self.role, resolve_partners(self.env, others))
            await asyncio.to_thread(self.view.reset, seed=task_seed(spec["task_id"]),
                                    options={"task_id": spec["task_id"]})
            return {"observation": prompt(self.env, self.role)}

        async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            import torch

            if self.view is None:
                raise InvalidArgumentError("step() before reset(): OpenRLHF's executor resets each instance first")
            _, reward, terminated, truncated, info = await asyncio.to_thread(self.view.step, states["action_text"])
            self.turns += 1
            self.episode_return += float(reward)
            done = bool(terminated or truncated or self.turns >= max_turns)
            text = "" if done else feedback(self.env, self.role)
            logs = {"teamgym_return": self.episode_return, "teamgym_turns": float(self.turns),
                    "teamgym_success": float(bool(info.get(EPISODE_KEY, {}).get("success", False)))}
            if done:
                self.view.close()
            return {"rewards": torch.tensor(float(reward)), "scores": self.episode_return,
                    "environment_feedback": text, "done": done, "extra_logs": logs}

    class AgentExecutor(agent.MultiTurnAgentExecutor):
        """OpenRLHF's multi-turn executor over :class:`AgentInstance` (made with no arguments, as OpenRLHF does)."""

        def __init__(self):
            super().__init__(AgentInstance)

    return AgentInstance, AgentExecutor
