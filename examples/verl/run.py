"""Prepare a verl GPU run of coder_tester-v0 with Qwen3-1.7B and print the command that launches it.

Writes the dataset rows (one per task and trained role) as Parquet where the config expects them, and prints the
verl command: verl's own ``main_ppo`` (teamgym's estimators and trainer register themselves through the
``verl.plugins`` entry point in every process that imports verl; the agent loop registers itself when verl's workers
import it by path). ``--estimator teamgym_gigpo`` (or ``teamgym_team_gigpo``) adds the overrides GiGPO needs: teamgym's
trainer (``trainer.v1.trainer_mode=teamgym_sync``, which hands the estimator each turn's reward and anchor state) and
GiGPO's discount (``algorithm.gamma=0.95``). Needs ``pip install 'teamgym[verl]'``; the run itself needs GPUs and the
model's weights, which this example never downloads.

    python examples/verl/run.py --tasks 164 --out runs/verl_coder_tester
    python examples/verl/run.py --estimator teamgym_gigpo
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from teamgym.integrations.verl import ESTIMATORS, STEP_ESTIMATORS, TRAINER_NAME, dataset_rows

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=164, help="HumanEval problems 0..N-1 (train); 16 more for val")
    parser.add_argument("--role", default="coder", help="the trained role (the other is scripted: agent_loops.yaml)")
    parser.add_argument("--out", default="runs/verl_coder_tester")
    parser.add_argument("--estimator", default="teamgym_at_grpo", choices=sorted([*ESTIMATORS, *STEP_ESTIMATORS]),
                        help="algorithm.adv_estimator (the config's default: teamgym_at_grpo)")
    args = parser.parse_args(argv)
    import pandas as pd

    import teamgym

    env = teamgym.make("coder_tester-v0")
    tasks = list(env.unwrapped.task_ids())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(dataset_rows("coder_tester-v0", tasks[:args.tasks], [args.role])).to_parquet(out / "train.parquet")
    pd.DataFrame(dataset_rows("coder_tester-v0", tasks[-16:], [args.role])).to_parquet(out / "val.parquet")
    command = (f"python -m verl.trainer.main_ppo --config-path {shlex.quote(str(HERE))} "
               "--config-name coder_tester_qwen3_1.7b "
               f"data.train_files={out / 'train.parquet'} data.val_files={out / 'val.parquet'}")
    if args.estimator != "teamgym_at_grpo":
        command += f" algorithm.adv_estimator={args.estimator}"
    if args.estimator in STEP_ESTIMATORS:
        command += f" algorithm.gamma=0.95 trainer.v1.trainer_mode={TRAINER_NAME}"
    print(command)
    return command


if __name__ == "__main__":
    main()
