"""Warm-start SFT on scripted demonstrations: play the env with its expert, learn its completions by likelihood.

Demonstrations are collected once from training task ids (never the held-out ones) by stepping the env with the
preset's scripted expert; each step is one (agent, prompt, completion) example, the completion ended with the
tokenizer's end-of-sequence token so the model learns to stop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from teamgym.errors import InvalidArgumentError
from teamgym.rollout.hf import HFPolicy
from teamgym.rollout.slot import EnvSlot
from teamgym.train.presets import Preset

__all__ = ["Demonstration", "collect_demonstrations", "sft_step"]


@dataclass(frozen=True)
class Demonstration:
    agent: str
    prompt: str
    completion: str


def collect_demonstrations(env_fn: Callable[[], Any], preset: Preset, task_ids: Sequence[Any],
                           perturbed: Sequence[Any] = ()) -> list[Demonstration]:
    """Every step of the preset's expert playing each task in ``task_ids``, then each task in ``perturbed`` again
    from where a random first turn (the preset's ``perturbation``, drawn from ``numpy.random.default_rng(task_id)``;
    not a demonstration) left it: demonstrations of later turns, which the expert alone never reaches (it solves a
    task in one turn)."""
    if preset.demonstration is None:
        raise InvalidArgumentError(
            "sft_steps > 0 but this env has no scripted demonstrations in its preset: set sft_steps=0 "
            "(or prompt_format='compact' for an env with a preset)"
        )
    if perturbed and preset.perturbation is None:
        raise InvalidArgumentError("sft_perturb > 0 but this env's preset has no random first turn: set sft_perturb=0 "
                                   "(or prompt_format='compact_feedback' for plan_path)")
    slot = EnvSlot(env_fn, preset.prompt)
    demos = []
    try:
        for task_id, perturb in [(t, False) for t in task_ids] + [(t, True) for t in perturbed]:
            slot.reset(task_id, seed=0)
            if perturb:
                first_turn = preset.perturbation(slot.env, np.random.default_rng(int(task_id)))
                while not slot.done() and slot.env.unwrapped.turn == 0:
                    slot.env.step(first_turn[slot.env.agent_selection])
            while not slot.done():
                node = slot.open_node()
                completion = preset.demonstration(slot.env, node.agent)
                demos.append(Demonstration(node.agent, node.prompt, completion))
                slot.env.step(completion)
    finally:
        slot.close()
    return demos


def sft_step(demos: Sequence[Demonstration], policies: Mapping[str, HFPolicy],
             optimizers: Mapping[str, torch.optim.Optimizer], rng: np.random.Generator, batch_size: int,
             max_grad_norm: float) -> float:
    """One SFT step on ``batch_size`` demonstrations drawn from ``demos``; returns the mean token NLL.

    ``policies`` maps each role to its policy; ``optimizers`` each policy's name (``shared`` or the role) to its
    optimizer.
    """
    picks = rng.choice(len(demos), size=min(batch_size, len(demos)), replace=False)
    by_model: dict[str, list[Demonstration]] = {}
    for index in picks:
        demo = demos[int(index)]
        by_model.setdefault(policies[demo.agent].name, []).append(demo)
    losses = []
    for name, chosen in by_model.items():
        policy = policies[chosen[0].agent]
        optimizer = optimizers[name]
        optimizer.zero_grad(set_to_none=True)
        prompts = policy.encode([d.prompt for d in chosen])
        eos = policy.tokenizer.eos_token_id
        completions = [ids + [eos] for ids in policy.tokenizer([d.completion for d in chosen],
                                                                add_special_tokens=False)["input_ids"]]
        logprobs, _, mask = policy.score(prompts, completions)
        loss = -(logprobs * mask).sum() / mask.sum().clamp_min(1.0)
        loss.backward()
        params = [p for group in optimizer.param_groups for p in group["params"]]
        torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
        optimizer.step()
        losses.append(loss.item())
    return float(np.mean(losses))
