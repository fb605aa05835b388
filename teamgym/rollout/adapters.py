"""Per-role LoRA adapters on one frozen base model: every role samples and trains its own adapter.

One ``peft.PeftModel`` holds the base weights once and one named LoRA adapter per role (``get_peft_model`` for the
first role, ``add_adapter`` for the others; LoRA, arXiv 2106.09685). Each role gets an :class:`AdapterPolicy`: an
:class:`~teamgym.rollout.hf.HFPolicy` over that shared model that activates its own adapter (``set_adapter``) around
every forward pass, for sampling and for scoring alike. The rollout engine makes one ``generate`` call per distinct
sampler, so a batch is grouped by role and each group runs under its role's adapter; an update scores each role's
rows with its adapter and steps that role's own optimizer, which holds only that adapter's parameters. The base stays
frozen (``requires_grad=False``), except where :func:`unfrozen_base` opens it for a warm start.

Memory: one base plus ``roles x (adapter + its AdamW state)``, against ``roles x (base + AdamW state)`` for one
model per role (docs/benchmarks.md, "Per-role adapters: memory").

>>> from teamgym.rollout import HFPolicy
>>> policies = role_adapter_policies(HFPolicy.tiny(n_layer=1, n_embd=16, n_head=1), ["coder", "tester"], rank=2)
>>> policies["coder"].model is policies["tester"].model, policies["coder"].adapter
(True, 'coder')
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from teamgym.errors import CheckpointError, DependencyNotInstalled, InvalidArgumentError
from teamgym.rollout.hf import HFPolicy
from teamgym.rollout.sampling import Completion, SamplingParams

__all__ = [
    "DEFAULT_RANK",
    "LORA_ALPHA",
    "AdapterPolicy",
    "adapter_of",
    "adapter_targets",
    "adapter_weights",
    "base_policy",
    "role_adapter_policies",
    "unfrozen_base",
]

#: The adapters' rank when the config's ``lora_rank`` is 0 (a small rank suits the tiny default and a 0.5B model).
DEFAULT_RANK = 8
#: LoRA's alpha (the update is scaled by ``alpha / rank``), as :meth:`HFPolicy.from_pretrained` uses.
LORA_ALPHA = 16


def adapter_of(parameter_name: str) -> str | None:
    """The adapter a peft parameter or state-dict key belongs to (``...lora_A.<adapter>.weight``), ``None`` for the
    base's own weights."""
    parts = parameter_name.split(".")
    for i, part in enumerate(parts[:-1]):
        if part.startswith("lora_"):
            return parts[i + 1]
    return None


def adapter_weights(model: Any, adapter: str | None) -> dict[str, torch.Tensor]:
    """The state-dict entries of ``model`` that belong to ``adapter`` (the base's own for ``None``)."""
    return {k: v for k, v in model.state_dict().items() if adapter_of(k) == adapter}


class AdapterPolicy(HFPolicy):
    """One role's policy on a shared peft model: its adapter is active in every forward pass it runs.

    The shared model has one active adapter at a time, so the policies of one base must not sample or score from
    several threads at once (the trainer and the rollout engine call them one after the other; rollout waves overlap
    env work, not generation).

    Args:
        model: the ``peft.PeftModel`` that holds every role's adapter.
        tokenizer: the base model's tokenizer.
        adapter: the adapter this policy samples and trains with; ``None``: every adapter off (the bare base, which
            is what a warm start trains).
        device, seed, max_prompt_tokens, name: as :class:`HFPolicy`.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        adapter: str | None,
        device: str = "cpu",
        seed: int = 0,
        max_prompt_tokens: int = 384,
        name: str = "policy",
    ):
        if adapter is not None and adapter not in model.peft_config:
            raise InvalidArgumentError(
                f"adapter={adapter!r}: the model holds adapters {sorted(model.peft_config)}; pick one of them"
            )
        super().__init__(model, tokenizer, device=device, seed=seed, max_prompt_tokens=max_prompt_tokens, name=name)
        self.adapter = adapter

    @contextmanager
    def active(self) -> Iterator[None]:
        """This policy's adapter active (``adapter=None``: every adapter off) for the forward passes inside."""
        if self.adapter is None:
            with self.model.disable_adapter():
                yield
            return
        if self.model.active_adapter != self.adapter:
            self.model.set_adapter(self.adapter)
        yield

    def generate(self, prompts: Sequence[str], n: int, sampling: SamplingParams) -> list[list[Completion]]:
        with self.active():
            return super().generate(prompts, n, sampling)

    def score(
        self,
        prompt_ids: Sequence[Sequence[int]],
        completion_ids: Sequence[Sequence[int]],
        *,
        temperature: float = 1.0,
        model: Any = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if model is not None:
            return super().score(prompt_ids, completion_ids, temperature=temperature, model=model)
        with self.active():
            return super().score(prompt_ids, completion_ids, temperature=temperature)

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        """This adapter's parameters, or for ``adapter=None`` the base's (frozen outside :func:`unfrozen_base`)."""
        return [p for name, p in self.model.named_parameters() if adapter_of(name) == self.adapter]

    def weights(self) -> dict[str, torch.Tensor]:
        """This adapter's weights (the base's for ``adapter=None``): what a checkpoint holds for this policy."""
        return adapter_weights(self.model, self.adapter)

    def load_weights(self, state: Mapping[str, torch.Tensor]) -> None:
        """Restore :meth:`weights`; every key must be this adapter's, and none of its keys may be missing."""
        expected = set(self.weights())
        if set(state) != expected:
            stray = sorted(set(state) - expected)[:3]
            missing = sorted(expected - set(state))
            if missing and not stray and all(".lm_head." in key for key in missing):
                raise CheckpointError(
                    f"the checkpoint's adapter {self.adapter!r} has no weights for the output layer (lm_head): it was "
                    "written before per-role adapters adapted the output layer, and cannot be resumed by this "
                    "version; start the run again (or resume it with the teamgym version that wrote it)"
                )
            raise CheckpointError(
                f"the checkpoint's weights for {self.name!r} do not fit adapter {self.adapter!r} "
                f"(unexpected {stray}, missing {missing[:3]}): resume with the run's own config.json"
            )
        self.model.load_state_dict(dict(state), strict=False)


def role_adapter_policies(
    base: HFPolicy, roles: Sequence[str], *, rank: int = DEFAULT_RANK, alpha: int = LORA_ALPHA, seed: int = 0
) -> dict[str, AdapterPolicy]:
    """``{role: policy}``: ``base.model`` wrapped in peft with one LoRA adapter per role on every linear layer.

    Each adapter starts as LoRA does (``B = 0``: the adapted model equals the base), its ``A`` drawn from ``seed``
    (without touching the global RNG); role ``i``'s sampling RNG is seeded ``seed + i``, as one model per role.

    Args:
        base: the policy whose model becomes the shared, frozen base (wrapped in place).
        roles: the roles, each the name of its adapter and of its policy.
        rank: the LoRA rank of every adapter.
        alpha: LoRA's alpha.
        seed: seeds the adapters' initialisation and the roles' sampling RNGs.
    """
    try:
        import peft
    except ImportError:
        raise DependencyNotInstalled("peft", "hf", "per-role LoRA adapters") from None
    if not roles or len(set(roles)) != len(roles):
        raise InvalidArgumentError(f"roles={list(roles)!r}: expected distinct role names, at least one")
    if not isinstance(rank, int) or rank < 1:
        raise InvalidArgumentError(f"rank={rank!r}: expected an int >= 1 (LoRA rank; {DEFAULT_RANK} is a default)")
    config = peft.LoraConfig(
        r=rank,
        lora_alpha=alpha,
        target_modules=adapter_targets(base.model),
        task_type="CAUSAL_LM",
        fan_in_fan_out=_uses_conv1d(base.model),
    )
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        # peft warns that the output layer is tied to the input embeddings: the adapter adapts the output side only
        # (its own A, B), the tied weight stays the base's; and that fan_in_fan_out does not fit an nn.Linear output
        # layer next to GPT-2's Conv1D blocks, which it then sets per layer, as wanted.
        warnings.filterwarnings("ignore", message=".*tie_word_embeddings.*")
        warnings.filterwarnings("ignore", message=".*fan_in_fan_out.*")
        torch.manual_seed(seed)
        model = peft.get_peft_model(base.model, config, adapter_name=roles[0])
        for role in roles[1:]:
            model.add_adapter(role, config)
    model.requires_grad_(False)
    model.set_adapter(roles[0])  # trainable: the active adapter only (peft's set_adapter moves it along)
    return {
        role: AdapterPolicy(
            model,
            base.tokenizer,
            adapter=role,
            device=str(base.device),
            seed=seed + i,
            max_prompt_tokens=base.max_prompt_tokens,
            name=role,
        )
        for i, role in enumerate(roles)
    }


def base_policy(policies: Mapping[str, HFPolicy]) -> AdapterPolicy | None:
    """The shared base (every adapter off, named ``shared``) of per-role adapter policies; ``None`` for others."""
    first = next(iter(policies.values()), None)
    if not isinstance(first, AdapterPolicy):
        return None
    return AdapterPolicy(
        first.model,
        first.tokenizer,
        adapter=None,
        device=str(first.device),
        max_prompt_tokens=first.max_prompt_tokens,
        name="shared",
    )


@contextmanager
def unfrozen_base(base: AdapterPolicy) -> Iterator[list[torch.nn.Parameter]]:
    """The base's parameters made trainable inside (a warm start trains them), frozen again after."""
    parameters = base.trainable_parameters()
    for parameter in parameters:
        parameter.requires_grad_(True)
    try:
        yield parameters
    finally:
        for parameter in parameters:
            parameter.requires_grad_(False)


def adapter_targets(model: Any) -> list[str]:
    """The layers an adapter adapts: every linear layer, the output layer included (peft's ``"all-linear"`` leaves
    it out), by their last name (``["c_attn", "c_fc", "c_proj", "lm_head"]`` for GPT-2).

    The output layer is what lets a role sharpen its own answer distribution: with it frozen, the logits of a base
    whose final norm and output layer are small (a random init) can barely move, and sampled answers stay near
    chance while greedy ones come right (docs/training.md, "Per-role adapters").
    """
    linear: tuple[type, ...] = (torch.nn.Linear,)
    try:
        from transformers.pytorch_utils import Conv1D

        linear = (*linear, Conv1D)
    except ImportError:
        pass
    return sorted({name.rsplit(".", 1)[-1] for name, module in model.named_modules()
                   if name and isinstance(module, linear)})


def _uses_conv1d(model: Any) -> bool:
    """Whether the model's linear layers are transformers' ``Conv1D`` (GPT-2), whose weights are stored transposed."""
    try:
        from transformers.pytorch_utils import Conv1D
    except ImportError:
        return False
    return any(isinstance(module, Conv1D) for module in model.modules())
