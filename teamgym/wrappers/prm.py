"""``TransformersPRM``: a small learned process reward model (a transformers sequence regressor) as a scorer.

A process reward model maps the text of one agent-turn (the prompt the agent acted on, then its completion) to
the value of the step: MASPRM (arXiv 2510.24803) trains one on the MCTS value targets of multi-agent
transcripts; TreeRL (arXiv 2506.11902) uses the mean correctness of the leaves below a node. Here the targets
come from :func:`teamgym.algos.tree_values` / :func:`teamgym.algos.masprm_targets` on a sampling tree, or from
:class:`~teamgym.wrappers.MonteCarloScorer` values, and :meth:`TransformersPRM.fit` regresses on them with a
mean-squared error, or (``loss="bce"``, MASPRM's) fits the output as a logit to labels in [0, 1] with a binary
cross-entropy (:func:`prm_loss`). Any ``transformers`` sequence-classification model with ``num_labels=1`` works;
:meth:`TransformersPRM.tiny` builds a small GPT-2 with a byte-level tokenizer made in code (no download),
which trains in seconds on a CPU.

Needs the ``hf`` extra (``pip install 'teamgym[hf]'``); imported only when a model is built.

>>> import torch
>>> prm = TransformersPRM.tiny(n_embd=16, n_layer=1, max_length=64, seed=0)
>>> losses = prm.fit(["good step", "bad step"] * 4, [1.0, 0.0] * 4, epochs=20, lr=1e-2)
>>> good, bad = prm.score_texts(["good step", "bad step"])
>>> good > bad
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from teamgym.core.text import sanitize_text
from teamgym.errors import DependencyNotInstalled, InvalidArgumentError
from teamgym.wrappers.process import ProcessStep, StepScorer

__all__ = ["PRM_LOSSES", "TransformersPRM", "prm_loss"]

#: What :meth:`TransformersPRM.fit` minimises: ``mse`` (regress the output on the targets) or ``bce`` (the output is
#: a logit, the targets are labels in [0, 1]; MASPRM arXiv 2510.24803).
PRM_LOSSES = ("mse", "bce")

_SPECIAL = ("<pad>", "<unk>", "<eos>")
_CHARS_PER_TOKEN = 16  # generous bound on the characters one token covers (byte-level: at most 1)


def _transformers() -> Any:
    try:
        import transformers
    except ImportError as err:
        raise DependencyNotInstalled("transformers", "hf", "TransformersPRM") from err
    return transformers


def byte_level_tokenizer(max_length: int) -> Any:
    """A byte-level ``PreTrainedTokenizerFast`` built in code: 256 byte symbols plus pad/unk/eos, no merges.

    Every string is encodable (no unknown tokens); long texts are cut on the left, keeping the completion.
    """
    transformers = _transformers()
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {token: i for i, token in enumerate(_SPECIAL)}
    vocab.update({symbol: len(_SPECIAL) + i for i, symbol in enumerate(sorted(alphabet))})
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="<pad>",
        unk_token="<unk>",
        eos_token="<eos>",
        model_max_length=max_length,
    )
    fast.truncation_side = "left"
    fast.padding_side = "right"
    return fast


def prm_loss(outputs: torch.Tensor, targets: torch.Tensor, loss: str = "mse") -> torch.Tensor:
    """The mean loss of a batch of PRM outputs ``(B,)`` against its targets ``(B,)``.

    ``mse``: ``mean((output - target)^2)``. ``bce``: the output is a logit ``z`` and the target a label ``y`` in
    [0, 1]: ``mean(-y log sigmoid(z) - (1 - y) log(1 - sigmoid(z)))``, computed stably from the logit.
    """
    _check_loss(loss)
    if loss == "mse":
        return torch.nn.functional.mse_loss(outputs, targets)
    return torch.nn.functional.binary_cross_entropy_with_logits(outputs, targets)


def _check_loss(loss: str) -> None:
    if loss not in PRM_LOSSES:
        raise InvalidArgumentError(f"PRM loss={loss!r}: expected one of {', '.join(PRM_LOSSES)}")


class TransformersPRM(StepScorer):
    """A transformers sequence regressor scoring ``prompt + completion`` texts; a :class:`StepScorer`.

    Args:
        model: a ``transformers`` sequence-classification model with ``num_labels=1``.
        tokenizer: its tokenizer (with a pad token).
        max_length: tokens per text at most (longer texts keep their end: the completion).
        device: where the model runs.

    Example:
        >>> from tests.support.relay_env import RelayEnv
        >>> from teamgym.wrappers import ProcessReward
        >>> env = ProcessReward(RelayEnv(), TransformersPRM.tiny(seed=0), weight=0.1)
        >>> env.reset(seed=0, options={"task_id": "apple"})
        >>> env.step("The word is apple")
        >>> isinstance(env.infos["speaker"]["process_score"], float)
        True
    """

    def __init__(
        self, model: Any, tokenizer: Any, *, max_length: int = 512, device: str | torch.device = "cpu"
    ):
        if getattr(getattr(model, "config", None), "num_labels", None) != 1:
            raise InvalidArgumentError(
                "TransformersPRM needs a sequence-classification model with config.num_labels=1 "
                f"(a regressor), got {type(model).__name__}: build it with num_labels=1"
            )
        if getattr(tokenizer, "pad_token_id", None) is None:
            raise InvalidArgumentError("TransformersPRM tokenizer has no pad token: set tokenizer.pad_token")
        self.model = model.to(device)
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.device = torch.device(device)

    @classmethod
    def tiny(
        cls,
        *,
        n_embd: int = 32,
        n_layer: int = 2,
        n_head: int = 2,
        max_length: int = 256,
        seed: int = 0,
        device: str | torch.device = "cpu",
    ) -> TransformersPRM:
        """A small GPT-2 regressor with a byte-level tokenizer, both built in code (no download).

        Weights are initialised from ``seed`` without touching torch's global RNG; there is no dropout, so
        :meth:`fit` is deterministic for a given seed.
        """
        transformers = _transformers()
        tokenizer = byte_level_tokenizer(max_length)
        config = transformers.GPT2Config(
            vocab_size=len(tokenizer),
            n_positions=max_length,
            n_embd=n_embd,
            n_layer=n_layer,
            n_head=n_head,
            num_labels=1,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            bos_token_id=tokenizer.eos_token_id,
            problem_type="regression",
            # no dropout: training is deterministic given the data and never draws from torch's global RNG
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
        )
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = transformers.GPT2ForSequenceClassification(config)
        return cls(model, tokenizer, max_length=max_length, device=device)

    @staticmethod
    def text(prompt: str, action: str) -> str:
        """The text scored for one agent-turn: the prompt, a separator, the completion."""
        return f"{prompt}\n### completion\n{action}"

    def score_step(self, step: ProcessStep) -> float:
        return self.score_texts([self.text(step.prompt, step.action)])[0]

    def _encode(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        # Only the last max_length tokens are kept; a token spans at most a few characters, so cutting the
        # text
        # first spares tokenizing megabyte completions whole.
        tails = [sanitize_text(text[-_CHARS_PER_TOKEN * self.max_length :]) for text in texts]
        batch = self.tokenizer(
            tails, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        return {
            key: value.to(self.device)
            for key, value in batch.items()
            if key in ("input_ids", "attention_mask")
        }

    def score_texts(self, texts: Sequence[str], *, batch_size: int = 32) -> list[float]:
        """The model's output for each text: the value under an ``mse`` fit, the logit under a ``bce`` one."""
        self.model.eval()
        scores: list[float] = []
        with torch.no_grad():
            for start in range(0, len(texts), batch_size):
                logits = self.model(**self._encode(texts[start : start + batch_size])).logits  # (B, 1)
                scores.extend(float(v) for v in logits[:, 0].float().cpu())
        return scores

    def fit(
        self,
        texts: Sequence[str],
        targets: Sequence[float] | torch.Tensor,
        *,
        epochs: int = 10,
        lr: float = 1e-3,
        batch_size: int = 16,
        seed: int = 0,
        loss: str = "mse",
    ) -> list[float]:
        """Fit the model on ``targets`` with AdamW: regress on them (``mse``, MC or tree values), or, with ``bce``,
        fit the output as the logit of labels in [0, 1] (:func:`prm_loss`).

        Returns:
            The mean loss of each epoch.
        """
        _check_loss(loss)
        values = torch.as_tensor(targets, dtype=torch.float32).flatten()  # (N,)
        if len(texts) != values.numel() or not texts:
            raise InvalidArgumentError(
                f"TransformersPRM.fit got {len(texts)} texts and {values.numel()} targets: give one target "
                "per text"
            )
        if not bool(torch.isfinite(values).all()):
            raise InvalidArgumentError("TransformersPRM.fit targets must be finite (MC or tree values)")
        if loss == "bce" and not bool(((values >= 0) & (values <= 1)).all()):
            raise InvalidArgumentError(
                "TransformersPRM.fit with loss='bce' takes labels in [0, 1] (e.g. target > 0 for MASPRM's values), "
                f"got targets in [{float(values.min())}, {float(values.max())}]"
            )
        if epochs < 1 or batch_size < 1 or not (lr > 0 and math.isfinite(lr)):
            raise InvalidArgumentError(
                f"TransformersPRM.fit epochs={epochs}, batch_size={batch_size}, lr={lr}: expected ints >= 1 "
                "and lr > 0"
            )
        generator = torch.Generator().manual_seed(seed)
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr)
        self.model.train()
        history = []
        for _ in range(epochs):
            order = torch.randperm(len(texts), generator=generator)
            total = 0.0
            for start in range(0, len(texts), batch_size):
                index = order[start : start + batch_size]
                batch = self._encode([texts[int(i)] for i in index])
                prediction = self.model(**batch).logits[:, 0].float()  # (B,)
                batch_loss = prm_loss(prediction, values[index].to(self.device), loss)
                optimizer.zero_grad()
                batch_loss.backward()
                optimizer.step()
                total += float(batch_loss.detach()) * len(index)
            history.append(total / len(texts))
        self.model.eval()
        return history

    def __repr__(self) -> str:
        return f"TransformersPRM({type(self.model).__name__}, max_length={self.max_length})"
