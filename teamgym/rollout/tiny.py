"""A tiny GPT-2-style model and a character-level tokenizer, both built in code (no hub download).

This is the CPU default policy: small enough to sample and train on two cores, yet a real ``transformers`` model and
a real ``PreTrainedTokenizerFast``, so the same code path serves a Qwen-class model on GPU.

>>> tokenizer = char_tokenizer()
>>> tokenizer.decode(tokenizer("go R")["input_ids"])
'go R'
"""

from __future__ import annotations

import string
from typing import Any

from teamgym.errors import DependencyNotInstalled, InvalidArgumentError

__all__ = ["CHARSET", "char_tokenizer", "tiny_gpt2"]

#: Printable ASCII plus newline and tab: every character the built-in compact prompts and actions use.
CHARSET = string.printable.replace("\x0b", "").replace("\x0c", "").replace("\r", "")
SPECIAL_TOKENS = ("<pad>", "<eos>", "<unk>")


def _require_hf() -> tuple[Any, Any]:
    try:
        import tokenizers
        import transformers
    except ImportError as err:
        raise DependencyNotInstalled(err.name or "transformers", "hf", "the transformers policy") from None
    return transformers, tokenizers


def char_tokenizer(charset: str = CHARSET) -> Any:
    """A ``PreTrainedTokenizerFast`` with one token per character of ``charset`` plus ``<pad>``, ``<eos>``, ``<unk>``.

    Characters outside ``charset`` encode as ``<unk>``. Decoding concatenates characters (no spaces added).
    """
    transformers, tokenizers = _require_hf()
    if len(set(charset)) != len(charset) or not charset:
        raise InvalidArgumentError(
            f"charset of {len(charset)} characters has duplicates or is empty: pass unique characters"
        )
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    for ch in charset:
        vocab[ch] = len(vocab)
    model = tokenizers.models.WordLevel(vocab=vocab, unk_token="<unk>")
    backend = tokenizers.Tokenizer(model)
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Split(tokenizers.Regex(r"[\s\S]"), behavior="isolated")
    backend.decoder = tokenizers.decoders.Fuse()
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>", padding_side="left"
    )


def tiny_gpt2(
    vocab_size: int, *, n_layer: int = 2, n_embd: int = 64, n_head: int = 2, n_positions: int = 512, seed: int = 0
) -> Any:
    """A randomly initialised ``GPT2LMHeadModel`` (deterministic for a given ``seed``).

    Defaults (2 layers, width 64, ~0.1 M parameters with a character vocabulary) sample a few hundred tokens per
    second per core; raise ``n_layer``/``n_embd`` for harder envs.
    """
    transformers, _ = _require_hf()
    import torch

    for name, value in (("n_layer", n_layer), ("n_embd", n_embd), ("n_head", n_head), ("n_positions", n_positions)):
        if not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"{name}={value!r}: expected an int >= 1")
    if n_embd % n_head:
        raise InvalidArgumentError(f"n_embd={n_embd} is not a multiple of n_head={n_head}: pick n_head dividing it")
    config = transformers.GPT2Config(
        vocab_size=vocab_size, n_positions=n_positions, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
        bos_token_id=1, eos_token_id=1, pad_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )
    with torch.random.fork_rng(devices=[]):  # seed the init without touching the caller's global RNG stream
        torch.manual_seed(seed)
        return transformers.GPT2LMHeadModel(config)
