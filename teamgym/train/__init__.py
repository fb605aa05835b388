"""Training: the config, the trainer, estimators, checkpoints, metrics and the ``teamgym train`` command.

>>> from teamgym.train import TrainConfig
>>> TrainConfig().algo
'turn_ppo'
>>> TrainConfig.from_dict({"tree.k": 2, "ppo": {"lr": 1e-3}}).tree.k
2
"""

from __future__ import annotations

from teamgym.train.config import TrainConfig
from teamgym.train.sections import PPOConfig, SamplingConfig

__all__ = ["PPOConfig", "SamplingConfig", "TrainConfig", "Trainer", "train"]


def __getattr__(name: str):
    # The trainer pulls in transformers (optional extra ``hf``): import it on first use.
    if name in ("Trainer", "train"):
        from teamgym.train import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module 'teamgym.train' has no attribute {name!r}")
