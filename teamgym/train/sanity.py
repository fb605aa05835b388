"""The learning sanity suite: every registered estimator, trained from random init, must learn tasks whose answer is
known (``sanity_bandit-v0``, ``sanity_relay-v0``, ``sanity_two_turn-v0``; :mod:`teamgym.envs.sanity.env`).

The check every RL library keeps: a flipped sign, a logprob shifted by one token, advantages grouped wrongly or a
sampler left with old weights make one of these runs fail, while a correct trainer reaches the thresholds within
the stated steps. Each run is the real trainer (:class:`teamgym.train.Trainer`, tiny model built in code, no warm
start), so what passes here is what ``teamgym train`` runs.

    python -m teamgym.train.sanity                          # every estimator on every sanity env (a table)
    python -m teamgym.train.sanity --env sanity_bandit-v0 --algo at_grpo grpo

``tests/train/test_sanity.py`` runs one cheap case by default and the whole grid under ``-m slow``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from teamgym.errors import InvalidArgumentError
from teamgym.train.config import ADDED_FIELDS

__all__ = ["ADAPTER_SETTINGS", "ESTIMATOR_SETTINGS", "GREEDY_THRESHOLD", "SAMPLED_THRESHOLD", "SANITY_ENVS",
           "SANITY_OVERRIDES", "SANITY_STEPS", "SanityResult", "run_sanity", "sanity_config"]

#: The sanity envs, in the order the suite runs them.
SANITY_ENVS = ("sanity_bandit-v0", "sanity_relay-v0", "sanity_two_turn-v0")
#: RL steps each env is given (from random init; no warm start).
SANITY_STEPS = {"sanity_bandit-v0": 300, "sanity_relay-v0": 600, "sanity_two_turn-v0": 600}
#: Held-out success (200 tasks, one sample per node) every estimator must reach after ``SANITY_STEPS``.
GREEDY_THRESHOLD = 0.95
SAMPLED_THRESHOLD = 0.80

#: The settings every sanity run shares (each a ``TrainConfig`` field path): 8 tasks x 8 candidates per node (or 8
#: episodes per task for trajectory estimators), learning rate 3e-4, the 2-layer width-64 tiny model.
SANITY_SETTINGS: dict[str, Any] = {
    "n_embd": 64,  # the tiny model of width 64 the suite was measured with (the main job's default is now 128)
    "n_head": 2,
    "sft_steps": 0,
    **ADDED_FIELDS,  # no replay, a constant rate: the trainer as the suite was measured, before those fields
    "tasks_per_step": 8,
    "tree.k": 8,
    "group_size": 8,
    "ppo.lr": 3e-4,
    "eval_tasks": 200,
    "eval_every": 0,
    "checkpoint_every": 10_000,
    "keep_checkpoints": 1,
    "plot": False,
    "progress_bar": False,
}

#: Settings of runs that train per-role LoRA adapters (``role_adapters=True``, and ``marft``), on top of
#: ``SANITY_SETTINGS``: LoRA's usual learning rate, ten times the full fine-tune's (an adapter's update is low-rank
#: and starts at zero).
ADAPTER_SETTINGS: dict[str, Any] = {"ppo.lr": 1e-3}

#: Settings of single estimators on every sanity env, on top of ``SANITY_SETTINGS`` and ``ADAPTER_SETTINGS``.
#: ``marft`` without whitened advantages: the sanity envs' rewards are deterministic, so once the critic has learned
#: them (explained variance 0.95) what is left of the advantages is the critic's error (a standard deviation of
#: 0.06 on the relay, seed 1); whitening scales that noise back to 1, and the updates it drives sharpen the answer
#: of whichever cue is wrong at the time until it is never sampled again (``marft`` on ``sanity_bandit-v0``, seed 2:
#: 75 / 76.5 whitened, 100 / 98.5 not). ``turn_ppo`` has the same critic and passes whitened (a full fine-tune of
#: one shared model), so only ``marft`` drops it.
ESTIMATOR_SETTINGS: dict[str, dict[str, Any]] = {"marft": {"critic.whiten": False}}


#: Settings of single (env, estimator) cases, on top of ``SANITY_SETTINGS``. The SPO trackers' default signal is the
#: episode's success, shared by speaker and listener: on ``sanity_relay-v0`` neither can then tell its own part, and
#: learning the relay's protocol from the joint outcome alone is a coordination problem a sanity check is not for
#: (both collapse onto one answer, 25%). ``spo_reward="mixed"`` tracks each agent's own reward (the speaker's
#: ``said``, the listener's ``team``), the SPO signal for envs that reward agents separately. ``marft`` on the relay
#: trains one adapter per role on a random base: trained together, the listener settles on one or two answers before
#: the speaker has learned the cues and never samples the others again (50-75% at 600-1800 steps). MARFT's
#: agent-by-agent training (``ppo.agent_iteration_interval``: 100 steps of the speaker, then 100 of the listener,
#: and so on) lets each learn against a partner that holds still; it needs more steps (a key ``steps`` here is the
#: case's step count, in place of ``SANITY_STEPS``), since each role trains one step in two. An entropy bonus of
#: 0.05 instead of MARFT's 0.01 keeps each role sampling other answers while its partner is still wrong; without it
#: one role or the other settled on a wrong answer for one cue for good on 2 of seeds 0-3. With both (and ``marft``'s
#: unwhitened advantages, ``ESTIMATOR_SETTINGS``) seeds 0-7 pass (docs/training.md).
SANITY_OVERRIDES: dict[tuple[str, str], dict[str, Any]] = {
    ("sanity_relay-v0", "spo"): {"spo_reward": "mixed"},
    ("sanity_relay-v0", "spo_per_agent"): {"spo_reward": "mixed"},
    ("sanity_relay-v0", "marft"): {"ppo.agent_iteration_interval": 100, "ppo.entropy_coef": 0.05, "steps": 1800},
}


@dataclass(frozen=True)
class SanityResult:
    """One sanity run: held-out success after training, greedy and sampled, and whether both thresholds hold."""

    env_id: str
    algo: str
    steps: int
    greedy: float
    sampled: float
    seconds: float

    @property
    def passed(self) -> bool:
        return self.greedy >= GREEDY_THRESHOLD and self.sampled >= SAMPLED_THRESHOLD


def sanity_config(env_id: str, algo: str, *, output_dir: str, seed: int = 0, steps: int | None = None,
                  **overrides: Any) -> Any:
    """The ``TrainConfig`` of one sanity run: ``SANITY_SETTINGS``, ``ADAPTER_SETTINGS`` when it trains per-role
    adapters, the estimator's ``ESTIMATOR_SETTINGS``, the case's ``SANITY_OVERRIDES`` and ``overrides`` (more field
    paths, e.g. ``{"ppo.lr": 1e-4}``)."""
    from teamgym.train.config import TrainConfig
    from teamgym.train.estimators import spec_for

    if env_id not in SANITY_STEPS:
        raise InvalidArgumentError(f"env_id={env_id!r}: the sanity envs are {list(SANITY_ENVS)}")
    adapters = ADAPTER_SETTINGS if overrides.get("role_adapters", spec_for(algo).role_adapters) else {}
    case = dict(SANITY_OVERRIDES.get((env_id, algo), {}))
    case_steps = case.pop("steps", SANITY_STEPS[env_id])
    fields = {**SANITY_SETTINGS, **adapters, **ESTIMATOR_SETTINGS.get(algo, {}), **case, "env_id": env_id,
              "algo": algo, "seed": seed, "output_dir": output_dir,
              "steps": steps if steps is not None else case_steps, **overrides}
    return TrainConfig.from_dict(fields)


def run_sanity(env_id: str, algo: str, *, seed: int = 0, steps: int | None = None, output_dir: str | None = None,
               **overrides: Any) -> SanityResult:
    """Train ``algo`` on ``env_id`` from random init and evaluate it on 200 held-out tasks."""
    from teamgym.train.trainer import train

    tic = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="teamgym-sanity-") as scratch:
        config = sanity_config(env_id, algo, output_dir=output_dir or scratch, seed=seed, steps=steps, **overrides)
        summary = train(config)
    return SanityResult(env_id, algo, config.steps, float(summary["heldout_success_after"]),
                        float(summary["heldout_sampled_success_after"]), time.perf_counter() - tic)


def main(argv: Sequence[str] | None = None) -> int:
    from teamgym.train.estimators import ESTIMATORS

    parser = argparse.ArgumentParser(prog="python -m teamgym.train.sanity", description=__doc__.splitlines()[0])
    parser.add_argument("--env", nargs="*", default=list(SANITY_ENVS), help="sanity envs (default: all)")
    parser.add_argument("--algo", nargs="*", default=list(ESTIMATORS), help="estimators (default: every registered)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"| env | estimator | steps | greedy | sampled | seconds | passed (>= {GREEDY_THRESHOLD:.0%} greedy, "
          f">= {SAMPLED_THRESHOLD:.0%} sampled) |")
    print("|---|---|---:|---:|---:|---:|---|")
    failed = 0
    for env_id in args.env:
        for algo in args.algo:
            r = run_sanity(env_id, algo, seed=args.seed)
            failed += not r.passed
            print(f"| {env_id} | {algo} | {r.steps} | {r.greedy:.1%} | {r.sampled:.1%} | {r.seconds:.0f} | "
                  f"{'yes' if r.passed else '**no**'} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
