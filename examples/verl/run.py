"""Prepare a verl GPU run of coder_tester-v0 with Qwen3-1.7B and print the command that launches it.

Writes the dataset rows (one per task and trained role) as Parquet where the config expects them, and prints the
verl command: verl's own ``main_ppo`` (teamgym's estimators register themselves through the ``verl.plugins`` entry
point in every process that imports verl; the agent loop registers itself when verl's workers import it by path).
Needs ``pip install 'teamgym[verl]'``; the run itself needs GPUs and the model's weights, which this example never
downloads.

    python examples/verl/run.py --tasks 164 --out runs/verl_coder_tester
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from teamgym.integrations.verl import dataset_rows

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=164, help="HumanEval problems 0..N-1 (train); 16 more for val")
    parser.add_argument("--role", default="coder", help="the trained role (the other is scripted: agent_loops.yaml)")
    parser.add_argument("--out", default="runs/verl_coder_tester")
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
    print(command)
    return command


if __name__ == "__main__":
    main()
