"""Reference policies for GRPO's KL term ``KL(pi_theta || pi_ref)`` (``ppo.kl_reference="reference"``).

GRPO (DeepSeekMath, arXiv 2402.03300, Eq. 3-4) regularises the policy towards a frozen reference model with the
per-token k3 estimator ``pi_ref/pi_theta - log(pi_ref/pi_theta) - 1``. Which model is the reference:

* a full fine-tune: a frozen copy of each policy's model as RL starts (after the warm start), as verl and TRL keep a
  separate reference worker; its weights are saved in every checkpoint so that ``--resume`` is exact;
* a policy with LoRA adapters (peft): the same model with its adapters disabled, i.e. the pretrained base (verl and
  TRL do the same with LoRA); nothing is copied or saved.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from teamgym.errors import CheckpointError
from teamgym.rollout.hf import HFPolicy
from teamgym.rollout.samplers import distinct_policies

__all__ = ["ReferencePolicies"]


class ReferencePolicies:
    """The reference of every distinct policy of a run (see the module docstring).

    Args:
        policies: ``{role: policy}`` as the trainer holds them, in the state RL starts from.
    """

    def __init__(self, policies: Mapping[str, HFPolicy]):
        self.frozen: dict[str, torch.nn.Module | None] = {}
        for name, policy in distinct_policies(policies).items():
            self.frozen[name] = None if _has_adapters(policy.model) else _frozen_copy(policy.model)

    @torch.no_grad()
    def logprobs(self, policy: HFPolicy, prompt_ids: Sequence[Sequence[int]], completion_ids: Sequence[Sequence[int]],
                 *, temperature: float) -> torch.Tensor:
        """``(B, T)`` token log-probs of the completions under ``policy``'s reference (as :meth:`HFPolicy.score`)."""
        frozen = self.frozen[policy.name]
        if frozen is not None:
            return policy.score(prompt_ids, completion_ids, temperature=temperature, model=frozen)[0]
        with policy.model.disable_adapter():
            return policy.score(prompt_ids, completion_ids, temperature=temperature)[0]

    def state_dict(self) -> dict[str, Any]:
        """The frozen copies' weights by policy name (adapter-disabled references need none)."""
        return {name: model.state_dict() for name, model in self.frozen.items() if model is not None}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the frozen copies' weights."""
        expected = sorted(name for name, model in self.frozen.items() if model is not None)
        if sorted(state) != expected:
            raise CheckpointError(f"the checkpoint holds reference models {sorted(state)} but this config needs "
                                  f"{expected}: resume with the run's own config.json")
        for name, weights in state.items():
            self.frozen[name].load_state_dict(weights)


def _has_adapters(model: Any) -> bool:
    """Whether ``model`` is a peft model, whose adapters can be switched off."""
    return hasattr(model, "disable_adapter") and hasattr(model, "peft_config")


def _frozen_copy(model: torch.nn.Module) -> torch.nn.Module:
    frozen = copy.deepcopy(model)
    frozen.eval()
    frozen.requires_grad_(False)
    return frozen
