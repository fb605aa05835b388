"""``HFPolicy``: a ``transformers`` causal LM a trainable policy that is also a
:class:`~teamgym.rollout.sampling.Sampler`.

Sampling is a plain KV-cached loop (left-padded batch, explicit position ids) rather than ``model.generate`` so that
the recorded logprobs are exactly ``log_softmax(logits / temperature)`` of the sampled tokens, the quantity
:meth:`HFPolicy.score` recomputes with gradients for the PPO ratio (TRL and verl score with the same tempered
logits). Randomness comes from the policy's own ``torch.Generator``, ``rng`` (saved in checkpoints), never the global
RNG.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from teamgym.errors import DependencyNotInstalled, InvalidArgumentError
from teamgym.rollout.fast_gpt2 import GPT2Decoder
from teamgym.rollout.sampling import Completion, SamplingParams

__all__ = ["HFPolicy"]


class HFPolicy:
    """Sample from and score with a ``transformers`` causal LM.

    Args:
        model: a causal LM (``GPT2LMHeadModel``, ``Qwen2ForCausalLM``, a peft model...).
        tokenizer: its tokenizer; needs an ``eos_token_id`` (used as pad when there is no pad token).
        device: where the model runs (``"cpu"``, ``"cuda"``).
        seed: seed of the policy's sampling RNG (``rng``, saved in checkpoints).
        max_prompt_tokens: prompts longer than this keep their last ``max_prompt_tokens`` tokens.
        name: a label used in logs and checkpoints.
    """

    def __init__(self, model: Any, tokenizer: Any, *, device: str = "cpu", seed: int = 0,
                 max_prompt_tokens: int = 384, name: str = "policy"):
        if tokenizer.eos_token_id is None:
            raise InvalidArgumentError("the tokenizer has no eos_token_id: set tokenizer.eos_token before use")
        self.model = model.to(device)
        self.tokenizer = tokenizer
        self.device = torch.device(device)
        self.max_prompt_tokens = max_prompt_tokens
        self.name = name
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.rng = torch.Generator(device=self.device)
        self.rng.manual_seed(seed)

    @classmethod
    def tiny(cls, *, seed: int = 0, n_layer: int = 2, n_embd: int = 64, n_head: int = 2, n_positions: int = 512,
             device: str = "cpu", name: str = "policy") -> HFPolicy:
        """The CPU default: :func:`~teamgym.rollout.tiny.tiny_gpt2` with a character tokenizer, no download."""
        from teamgym.rollout.tiny import char_tokenizer, tiny_gpt2

        tokenizer = char_tokenizer()
        model = tiny_gpt2(len(tokenizer), n_layer=n_layer, n_embd=n_embd, n_head=n_head, n_positions=n_positions,
                          seed=seed)
        return cls(model, tokenizer, device=device, seed=seed, max_prompt_tokens=n_positions // 2, name=name)

    @classmethod
    def from_pretrained(cls, path: str, *, device: str = "cpu", dtype: str = "auto", lora_rank: int = 0,
                        lora_alpha: int = 16, seed: int = 0, name: str = "policy") -> HFPolicy:
        """Load a local checkpoint (no hub access is attempted), optionally wrapped in a peft LoRA adapter."""
        try:
            import transformers
        except ImportError:
            raise DependencyNotInstalled("transformers", "hf", "the transformers policy") from None
        tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True, padding_side="left")
        model = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=dtype)
        if lora_rank > 0:
            try:
                import peft
            except ImportError:
                raise DependencyNotInstalled("peft", "hf", "LoRA adapters") from None
            config = peft.LoraConfig(r=lora_rank, lora_alpha=lora_alpha, target_modules="all-linear",
                                     task_type="CAUSAL_LM")
            model = peft.get_peft_model(model, config)
        return cls(model, tokenizer, device=device, seed=seed, name=name)

    # ------------------------------------------------------------------ sampling
    def encode(self, prompts: Sequence[str]) -> list[list[int]]:
        """Token ids of each prompt, keeping the last ``max_prompt_tokens``."""
        ids = self.tokenizer(list(prompts), add_special_tokens=False)["input_ids"]
        return [list(x[-self.max_prompt_tokens:]) for x in ids]

    @torch.no_grad()
    def generate(self, prompts: Sequence[str], n: int, sampling: SamplingParams) -> list[list[Completion]]:
        """``n`` completions for each prompt (one batched forward pass per new token for all of them)."""
        if not isinstance(n, int) or n < 1:
            raise InvalidArgumentError(f"n={n!r}: expected an int >= 1 completions per prompt")
        if not prompts:
            return []
        if sampling.seed is not None:
            self.rng.manual_seed(sampling.seed)
        prompt_ids = self.encode(prompts)
        rows = [p for p in prompt_ids for _ in range(n)]
        tokens, logprobs, finish = self._sample(rows, sampling)
        out: list[list[Completion]] = []
        for i, ids in enumerate(prompt_ids):
            group = []
            for j in range(n):
                r = i * n + j
                text = self.tokenizer.decode(tokens[r], skip_special_tokens=True)
                group.append(Completion(text, list(ids), tokens[r], logprobs[r], finish[r]))
            out.append(group)
        return out

    def _sample(self, rows: list[list[int]], sampling: SamplingParams) -> tuple[list[list[int]], list[list[float]],
                                                                                 list[str]]:
        was_training = self.model.training
        self.model.eval()
        input_ids, mask = _left_pad(rows, self.pad_id, self.device)
        positions = (mask.cumsum(-1) - 1).clamp_min(0)
        batch = len(rows)
        eos = self.tokenizer.eos_token_id
        stop_ids, stop_texts = self._stop_tokens(sampling.stop)
        tokens: list[list[int]] = [[] for _ in range(batch)]
        logprobs: list[list[float]] = [[] for _ in range(batch)]
        finish = ["length"] * batch
        alive = torch.ones(batch, dtype=torch.bool, device=self.device)
        logits, feed = self._decoder(input_ids, mask, positions, sampling.max_tokens)
        for step in range(sampling.max_tokens):
            chosen, chosen_logp = self._pick(logits.float(), sampling)
            chosen_list, logp_list = chosen.tolist(), chosen_logp.tolist()
            for r in alive.nonzero().flatten().tolist():
                tok = chosen_list[r]
                tokens[r].append(tok)
                logprobs[r].append(logp_list[r])
                if tok == eos or tok in stop_ids or (stop_texts and self._ends_with_stop(tokens[r], stop_texts)):
                    finish[r] = "stop"
                    alive[r] = False
            if not alive.any() or step == sampling.max_tokens - 1:
                break
            logits = feed(chosen)
        self.model.train(was_training)
        return tokens, logprobs, finish

    def _decoder(self, input_ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, max_new: int
                 ) -> tuple[torch.Tensor, Callable[[torch.Tensor], torch.Tensor]]:
        """The first next-token logits ``(B, V)`` of left-padded prompts, and ``feed(tokens) -> logits`` for each
        token sampled after them: :class:`~teamgym.rollout.fast_gpt2.GPT2Decoder` where it reproduces the model
        (the tiny default), else the model's own forward with its cache."""
        if GPT2Decoder.supports(self.model):
            decoder = GPT2Decoder(self.model, input_ids, mask, positions, max_new)
            return decoder.first_logits(), decoder.step
        model, batch = self.model, input_ids.shape[0]
        out = model(input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=True)
        state = {"out": out, "mask": mask, "positions": positions}

        def feed(tokens: torch.Tensor) -> torch.Tensor:
            state["mask"] = torch.cat([state["mask"], torch.ones(batch, 1, dtype=mask.dtype, device=mask.device)],
                                      dim=1)
            state["positions"] = state["positions"][:, -1:] + 1
            state["out"] = model(input_ids=tokens.unsqueeze(1), attention_mask=state["mask"],
                                 position_ids=state["positions"], use_cache=True, **self._cache_kwarg(state["out"]))
            return state["out"].logits[:, -1, :]

        return out.logits[:, -1, :], feed

    def _cache_kwarg(self, out: Any) -> dict[str, Any]:
        # transformers 5 renamed ``past_key_values`` to ``cache`` (in outputs and forward kwargs); 4.x has the old name.
        if "cache" in out:
            return {"cache": out["cache"]}
        return {"past_key_values": out["past_key_values"]}

    def _pick(self, logits: torch.Tensor, sampling: SamplingParams) -> tuple[torch.Tensor, torch.Tensor]:
        if sampling.temperature == 0:
            logp = torch.log_softmax(logits, dim=-1)
            chosen = logp.argmax(-1)
            return chosen, logp.gather(1, chosen[:, None]).squeeze(1)
        logp = torch.log_softmax(logits / sampling.temperature, dim=-1)
        probs = logp.exp()
        if sampling.top_p < 1.0:
            sorted_p, order = probs.sort(dim=-1, descending=True)
            keep = sorted_p.cumsum(-1) - sorted_p < sampling.top_p
            probs = torch.zeros_like(probs).scatter(1, order, sorted_p * keep)
        chosen = torch.multinomial(probs, 1, generator=self.rng).squeeze(1)
        return chosen, logp.gather(1, chosen[:, None]).squeeze(1)

    def _stop_tokens(self, stop: Sequence[str]) -> tuple[set[int], tuple[str, ...]]:
        ids, texts = set(), []
        for s in stop:
            encoded = self.tokenizer(s, add_special_tokens=False)["input_ids"]
            if len(encoded) == 1:
                ids.add(encoded[0])
            else:
                texts.append(s)
        return ids, tuple(texts)

    def _ends_with_stop(self, tokens: list[int], stop_texts: tuple[str, ...]) -> bool:
        tail = self.tokenizer.decode(tokens[-16:], skip_special_tokens=True)
        return any(tail.endswith(s) for s in stop_texts)

    # ------------------------------------------------------------------ scoring (training)
    def score(self, prompt_ids: Sequence[Sequence[int]], completion_ids: Sequence[Sequence[int]], *,
              temperature: float = 1.0, model: Any = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Log-probs (with gradients) and entropies of each completion token under the current weights.

        Args:
            prompt_ids, completion_ids: one token-id list each per row.
            temperature: the sampling temperature the logits are divided by.
            model: score with this model instead of the policy's own (a frozen reference copy of it).

        Returns:
            ``(logprobs, entropy, mask)``, each ``(B, T)`` with ``T`` the longest completion; ``mask`` is 1 on real
            completion tokens. Logits are divided by ``temperature`` as during sampling.
        """
        if len(prompt_ids) != len(completion_ids):
            raise InvalidArgumentError(f"{len(prompt_ids)} prompts but {len(completion_ids)} completions: pair them")
        temperature = temperature if temperature > 0 else 1.0
        rows = [list(p) + list(c) for p, c in zip(prompt_ids, completion_ids, strict=True)]
        input_ids, mask = _left_pad(rows, self.pad_id, self.device)
        positions = (mask.cumsum(-1) - 1).clamp_min(0)
        scorer = self.model if model is None else model
        logits = scorer(input_ids=input_ids, attention_mask=mask, position_ids=positions).logits
        width = max((len(c) for c in completion_ids), default=0)
        # Left padding puts every completion's last token in the last column: read the last `width` predictions.
        pred = logits[:, -width - 1:-1, :].float() / temperature
        target = input_ids[:, -width:]
        logp_all = torch.log_softmax(pred, dim=-1)
        logprobs = logp_all.gather(2, target.unsqueeze(-1)).squeeze(-1)
        entropy = -(logp_all.exp() * logp_all).sum(-1)
        lengths = torch.tensor([len(c) for c in completion_ids], device=self.device)
        col = torch.arange(width, device=self.device)
        mask_out = (col[None, :] < lengths[:, None]).to(logprobs.dtype)
        # Completions end in the last column; shift each row left so token j of its completion sits in column j.
        index = (col[None, :] + (width - lengths)[:, None]).clamp_max(max(width - 1, 0))
        return logprobs.gather(1, index) * mask_out, entropy.gather(1, index) * mask_out, mask_out

    # ------------------------------------------------------------------ state
    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        """The parameters an optimizer of this policy updates (those that require gradients)."""
        return [p for p in self.model.parameters() if p.requires_grad]

    def weights(self) -> dict[str, torch.Tensor]:
        """The model's weights as a checkpoint holds them."""
        return self.model.state_dict()

    def load_weights(self, state: Mapping[str, torch.Tensor]) -> None:
        """Restore :meth:`weights`."""
        self.model.load_state_dict(state)

    def rng_state(self) -> torch.Tensor:
        return self.rng.get_state()

    def set_rng_state(self, state: torch.Tensor) -> None:
        self.rng.set_state(state)


def _left_pad(rows: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            ids[i, width - len(r):] = torch.tensor(r, dtype=torch.long)
            mask[i, width - len(r):] = 1
    return ids.to(device), mask.to(device)
