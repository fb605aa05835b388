"""Per-role LoRA adapters sampled by one vLLM engine (multi-LoRA), each role's adapter synced after every update.

With ``role_adapters=True`` and ``sampling.backend="vllm"`` the engine loads the base checkpoint once with LoRA on
(``enable_lora=True``, ``max_loras`` = the number of roles, ``max_lora_rank`` the adapters' rank rounded up to one
vLLM accepts), and each role samples through its own ``LoRARequest``. A sync writes every adapter that changed since
the last one to a fresh directory (peft's ``save_pretrained``), loads it into the engine under a new id and name (one
version per sync: ``<role>-v<id>``), then removes the previous version from the engine (``remove_lora``) and from
disk. A new name per version also keeps the prefix cache apart: vLLM hashes a cached block with its adapter's name.
The shared base is loaded in place only when asked (``base=True``: the warm start trains it, RL steps move the
adapters only); vLLM drops every loaded adapter when it reloads base weights, so all of them are loaded again after.

vLLM's CPU build (0.32) runs multi-LoRA on architectures that implement vLLM's ``SupportsLoRA`` (Llama, Qwen2...),
not on GPT-2 (the built-in tiny model): ``tests/rollout/test_vllm_lora.py`` builds a tiny Llama in code.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from teamgym.errors import InvalidArgumentError
from teamgym.rollout.adapters import adapter_of, adapter_weights
from teamgym.rollout.sampling import Completion, SamplingParams
from teamgym.rollout.vllm import VLLMSampler, _vllm

__all__ = ["LORA_RANKS", "RoleLoRASampler", "VLLMAdapters", "base_weights", "lora_engine_kwargs"]

#: The values vLLM accepts for ``max_lora_rank`` (``vllm.config.lora.MaxLoRARanks``).
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def lora_engine_kwargs(roles: int, rank: int) -> dict[str, Any]:
    """The engine keywords for ``roles`` adapters of rank ``rank`` loaded at once (old versions are removed)."""
    fitting = [r for r in LORA_RANKS if r >= rank]
    if not fitting:
        raise InvalidArgumentError(f"lora_rank={rank}: vLLM serves LoRA ranks up to {LORA_RANKS[-1]}; pick a "
                                   "smaller rank")
    return {"enable_lora": True, "max_loras": roles, "max_cpu_loras": roles, "max_lora_rank": fitting[0]}


def base_weights(model: Any) -> Iterable[tuple[str, torch.Tensor]]:
    """The shared base's ``(name, tensor)`` pairs of a multi-adapter peft model, in the checkpoint's names (peft's
    ``base_model.model.`` prefix and ``.base_layer`` removed), without any adapter merged in."""
    for name, tensor in model.state_dict().items():
        if adapter_of(name) is None:
            yield name.removeprefix("base_model.model.").replace(".base_layer", ""), tensor.detach()


class VLLMAdapters:
    """Every role's adapter of one peft model, loaded into one :class:`VLLMSampler` engine started with LoRA on.

    Args:
        engine: the sampler whose engine samples every role (see :func:`lora_engine_kwargs`).
        model: the ``peft.PeftModel`` holding one adapter per role
            (:func:`~teamgym.rollout.adapters.role_adapter_policies`).
        roles: the roles, each the name of its adapter.
        lora_request_cls: vLLM's ``LoRARequest`` (default: imported from vllm).
    """

    def __init__(self, engine: VLLMSampler, model: Any, roles: Sequence[str], *, lora_request_cls: Any = None):
        missing = [role for role in roles if role not in model.peft_config]
        if missing:
            raise InvalidArgumentError(f"roles {missing} have no adapter in the model (it holds "
                                       f"{sorted(model.peft_config)}): build it with role_adapter_policies")
        if lora_request_cls is None:
            _vllm()
            from vllm.lora.request import LoRARequest as lora_request_cls
        self.engine = engine
        self.model = model
        self.roles = list(roles)
        self.lora_request_cls = lora_request_cls
        self.requests: dict[str, Any] = {}
        self._dirs: dict[str, Path] = {}
        self._synced: dict[str, dict[str, torch.Tensor]] = {}
        self._next_id = 1
        self._dir = Path(tempfile.mkdtemp(prefix="teamgym-lora-"))
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._dir, True)  # also when never closed

    def sampler(self, role: str) -> RoleLoRASampler:
        """The sampler of ``role``: this engine with that role's current adapter."""
        if role not in self.roles:
            raise InvalidArgumentError(f"role={role!r}: the adapters are {self.roles}")
        return RoleLoRASampler(self, role)

    def sync(self, *, base: bool = False) -> list[str]:
        """Load every adapter that changed since the last sync as a new version (removing the old one); with
        ``base``, first load the shared base's weights in place (vLLM then drops every adapter: all are reloaded).
        Returns the roles whose adapter was loaded."""
        if base:
            self.engine.load_weights(list(base_weights(self.model)))
            self._synced.clear()
        states = {role: adapter_weights(self.model, role) for role in self.roles}
        changed = [role for role in self.roles if not _same(self._synced.get(role), states[role])]
        for role in changed:
            self._load(role, states[role])
        if changed:
            self.engine.reset_prefix_cache()
        return changed

    def _load(self, role: str, state: Mapping[str, torch.Tensor]) -> None:
        lora_id = self._next_id
        self._next_id += 1
        parent = self._dir / f"v{lora_id}"
        # writes <parent>/<role>/ (not "default"); the adapter only: peft would add the output layer's frozen base
        # weights (vocabulary x width, the engine's already) because the adapter targets that layer
        self.model.save_pretrained(str(parent), selected_adapters=[role], save_embedding_layers=False)
        path = parent / role if (parent / role).is_dir() else parent
        request = self.lora_request_cls(f"{role}-v{lora_id}", lora_id, str(path))
        engine = self.engine.llm.llm_engine
        old = self.requests.get(role)
        # The old version goes first: the engine holds max_loras adapters, and a full cache would evict another role's.
        if old is not None:
            if old.lora_int_id in engine.list_loras():  # a base reload already dropped it
                engine.remove_lora(old.lora_int_id)
            shutil.rmtree(self._dirs[role], ignore_errors=True)
        if not engine.add_lora(request):
            raise InvalidArgumentError(f"vLLM refused the adapter of {role!r} saved at {path}")
        self.requests[role], self._dirs[role] = request, parent
        self._synced[role] = {k: v.detach().clone() for k, v in state.items()}

    def close(self) -> None:
        """Delete the saved adapter versions (the engine keeps what it loaded)."""
        self._cleanup()


class RoleLoRASampler:
    """One role's sampler: the shared engine's ``generate`` with the role's current ``LoRARequest``."""

    def __init__(self, adapters: VLLMAdapters, role: str):
        self.adapters = adapters
        self.role = role
        self.name = role

    def generate(self, prompts: Sequence[str], n: int, sampling: SamplingParams) -> list[list[Completion]]:
        return self.adapters.engine.generate(prompts, n, sampling, lora_request=self.adapters.requests[self.role])


def _same(a: Mapping[str, torch.Tensor] | None, b: Mapping[str, torch.Tensor]) -> bool:
    return a is not None and a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in b)
