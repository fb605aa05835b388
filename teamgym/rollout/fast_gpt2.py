"""``GPT2Decoder``: token-by-token sampling forward passes of a ``GPT2LMHeadModel`` in plain torch.

On two CPU cores the tiny default model's decode step is mostly overhead around a few small matrix products:
transformers' cache objects, mask building, keyword plumbing and output classes cost more than the arithmetic. This
decoder runs the same operations on the model's own parameters (no copy: an update of the model is seen at once)
with a key/value cache preallocated for the whole completion and the attention mask kept as one tensor, growing by
a column per token. It mirrors transformers' GPT-2 with SDPA attention operation by operation (``addmm`` for the
``Conv1D`` layers, the same layer norms, activation module and ``scaled_dot_product_attention`` call with the same
boolean mask), so the logits are those of ``model(...)``; ``tests/rollout/test_fast_gpt2.py`` checks them and the
sampled tokens against the transformers path.

It is used for sampling only (no gradients): :meth:`supports` says for which models (GPT-2 with SDPA attention, no
cross-attention, not wrapped by peft, in eval mode); others go through
``model(...)``.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

__all__ = ["GPT2Decoder"]


class GPT2Decoder:
    """Prefill then decode one token at a time for a batch of left-padded rows.

    Args:
        model: a ``transformers.GPT2LMHeadModel`` (see :meth:`supports`).
        input_ids: ``(B, T)`` left-padded prompt ids.
        mask: ``(B, T)`` 1 on real tokens, 0 on padding.
        positions: ``(B, T)`` position ids (``mask.cumsum(-1) - 1``, clamped at 0).
        max_new: tokens that will be fed back with :meth:`step` at most (sizes the cache).
    """

    def __init__(self, model: Any, input_ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor,
                 max_new: int):
        transformer = model.transformer
        config = model.config
        self.wte, self.wpe = transformer.wte.weight, transformer.wpe.weight
        # The parameters of each block, read once per call (module attribute lookups cost more than the math).
        self.blocks = [_BlockParams(block) for block in transformer.h]
        self.ln_f = (transformer.ln_f.weight, transformer.ln_f.bias, transformer.ln_f.eps)
        self.lm_head = model.lm_head.weight
        self.embed = config.hidden_size
        self.heads = config.num_attention_heads
        self.head_dim = self.embed // self.heads
        batch, width = input_ids.shape
        capacity = width + max_new
        dtype, device = self.wte.dtype, self.wte.device
        shape = (batch, self.heads, capacity, self.head_dim)
        self.keys = [torch.empty(shape, dtype=dtype, device=device) for _ in self.blocks]
        self.values = [torch.empty(shape, dtype=dtype, device=device) for _ in self.blocks]
        self.allowed = torch.zeros((batch, capacity), dtype=torch.bool, device=device)
        self.allowed[:, :width] = mask.bool()
        self.length = 0
        self.position = positions[:, -1:]
        # transformers' choice for SDPA: without padding no mask at all (``is_causal`` in the prefill), else the
        # boolean mask of keys that are not padding and not in the future. Kernels round differently, so follow it.
        self.padded = not bool(self.allowed[:, :width].all())
        if self.padded:
            causal = torch.ones((width, width), dtype=torch.bool, device=device).tril()
            self._first = self._forward(input_ids, positions, causal[None, None] & self.allowed[:, None, None, :width])
        else:
            self._first = self._forward(input_ids, positions, None)

    @staticmethod
    def supports(model: Any) -> bool:
        """Whether ``model`` is a GPT-2 LM this decoder reproduces (others keep transformers' forward)."""
        try:
            from transformers import GPT2LMHeadModel
        except ImportError:
            return False
        if type(model) is not GPT2LMHeadModel:  # subclasses and peft wrappers may change the forward
            return False
        config = model.config
        return getattr(config, "_attn_implementation", None) == "sdpa" and not config.add_cross_attention \
            and not model.training

    def first_logits(self) -> torch.Tensor:
        """``(B, V)`` logits of the token after each prompt."""
        return self._first

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        """Feed one token per row (``(B,)``) and return the next ``(B, V)`` logits."""
        end = self.length + 1
        self.allowed[:, self.length] = True
        self.position = self.position + 1
        mask = self.allowed[:, None, None, :end] if self.padded else None
        return self._forward(tokens[:, None], self.position, mask)

    @torch.no_grad()
    def _forward(self, ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        batch, q_len = ids.shape
        start = self.length
        end = start + q_len
        embed, heads, head_dim = self.embed, self.heads, self.head_dim
        hidden = F.embedding(ids, self.wte) + F.embedding(positions, self.wpe)
        for p, keys, values in zip(self.blocks, self.keys, self.values, strict=True):
            x = F.layer_norm(hidden, (embed,), p.ln_1_weight, p.ln_1_bias, p.ln_1_eps)
            qkv = torch.addmm(p.qkv_bias, x.view(-1, embed), p.qkv_weight).view(batch, q_len, 3 * embed)
            query, key, value = qkv.split(embed, dim=2)
            query = query.view(batch, q_len, heads, head_dim).transpose(1, 2)
            key = key.view(batch, q_len, heads, head_dim).transpose(1, 2)
            value = value.view(batch, q_len, heads, head_dim).transpose(1, 2)
            keys[:, :, start:end] = key
            values[:, :, start:end] = value
            if start:  # decoding: attend to the cache
                key, value = keys[:, :, :end], values[:, :, :end]
            out = F.scaled_dot_product_attention(query, key, value, attn_mask=mask,
                                                 dropout_p=0.0, scale=p.scaling,
                                                 is_causal=mask is None and q_len > 1)
            out = out.transpose(1, 2).reshape(batch * q_len, embed)
            hidden = torch.addmm(p.proj_bias, out, p.proj_weight).view(batch, q_len, embed) + hidden
            x = F.layer_norm(hidden, (embed,), p.ln_2_weight, p.ln_2_bias, p.ln_2_eps)
            x = p.act(torch.addmm(p.fc_bias, x.view(batch * q_len, embed), p.fc_weight))
            x = torch.addmm(p.mlp_proj_bias, x, p.mlp_proj_weight)
            hidden = hidden + x.view(batch, q_len, embed)
        self.length = end
        # over every position, as transformers does: a product of other shapes may round differently
        return F.linear(F.layer_norm(hidden, (embed,), *self.ln_f), self.lm_head)[:, -1]


class _BlockParams:
    """One GPT-2 block's parameters (the model's own tensors) and its activation."""

    def __init__(self, block: Any):
        attn, mlp = block.attn, block.mlp
        self.ln_1_weight, self.ln_1_bias, self.ln_1_eps = block.ln_1.weight, block.ln_1.bias, block.ln_1.eps
        self.ln_2_weight, self.ln_2_bias, self.ln_2_eps = block.ln_2.weight, block.ln_2.bias, block.ln_2.eps
        self.qkv_weight, self.qkv_bias = attn.c_attn.weight, attn.c_attn.bias
        self.proj_weight, self.proj_bias = attn.c_proj.weight, attn.c_proj.bias
        self.fc_weight, self.fc_bias = mlp.c_fc.weight, mlp.c_fc.bias
        self.mlp_proj_weight, self.mlp_proj_bias = mlp.c_proj.weight, mlp.c_proj.bias
        self.scaling = attn.scaling
        self.act = _activation(mlp.act)


def _new_gelu(x: torch.Tensor) -> torch.Tensor:
    """transformers' ``NewGELUActivation`` (GPT-2's ``gelu_new``), the same operations without the module call."""
    return 0.5 * x * (1.0 + torch.tanh(_GELU_C * (x + 0.044715 * torch.pow(x, 3.0))))


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """transformers' ``GELUTanh`` (a config's ``gelu_pytorch_tanh``): torch's fused kernel."""
    return F.gelu(x, approximate="tanh")


_GELU_C = math.sqrt(2.0 / math.pi)


def _activation(module: Any) -> Any:
    """The operations of a GPT-2 activation module without the module call (the module itself when unknown)."""
    name = type(module).__name__
    if name == "NewGELUActivation":
        return _new_gelu
    # GELUTanh (PytorchGELUTanh before transformers 4.56) runs torch's fused kernel unless built for its python path
    if name in ("GELUTanh", "PytorchGELUTanh") and getattr(getattr(module, "act", None), "func", None) is F.gelu:
        return _gelu_tanh
    return module
