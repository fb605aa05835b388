"""An OpenRLHF agent file that trains the coder of coder_tester-v0 (the tester scripted), and the command to run it.

OpenRLHF loads this file by path (``--train.agent_func_path``) and instantiates its ``AgentExecutor``. Run as a
script, it writes the prompt dataset (one row per HumanEval task, the label naming env, task and role) and prints
the OpenRLHF command for a GPU run with Qwen3-1.7B. Needs ``openrlhf`` importable (``pip install 'teamgym[openrlhf]'``
on a GPU machine; on CPU ``bash scripts/test_openrlhf.sh`` builds a venv where its agent module imports); the run
itself needs GPUs, vLLM and the model's weights, which this example never downloads.

    python examples/openrlhf_agent.py --tasks 164 --out runs/openrlhf_coder_tester
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

from teamgym.integrations.openrlhf import agent_classes, dataset_rows

ENV_ID = "coder_tester-v0"
ROLE = "coder"

# The names OpenRLHF looks up in this file. Swap "tester" for "coder" (and ROLE) to train the tester instead.
AgentInstance, AgentExecutor = agent_classes(partners={"tester": "scripted"}, max_turns=4)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=164, help="HumanEval problems 0..N-1")
    parser.add_argument("--out", default="runs/openrlhf_coder_tester")
    args = parser.parse_args(argv)
    import teamgym

    env = teamgym.make(ENV_ID)
    tasks = list(env.unwrapped.task_ids())[:args.tasks]
    env.close()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "train.jsonl", "w", encoding="utf-8") as f:
        for row in dataset_rows(ENV_ID, tasks, [ROLE]):
            f.write(json.dumps(row) + "\n")
    flags = [
        "--actor.model_name_or_path", "Qwen/Qwen3-1.7B",
        "--train.agent_func_path", str(Path(__file__).resolve()),
        "--data.prompt_dataset", str(out / "train.jsonl"),
        "--data.input_key", "prompt", "--data.label_key", "label",
        "--data.max_len", "8192", "--rollout.max_new_tokens", "1024",
        "--rollout.batch_size", "64", "--rollout.n_samples_per_prompt", "8", "--train.batch_size", "512",
        "--vllm.num_engines", "4",
        "--ckpt.output_dir", str(out / "ckpt"),
    ]
    command = "python -m openrlhf.cli.train_ppo_ray " + " ".join(shlex.quote(f) for f in flags)
    print(command)
    return command


if __name__ == "__main__":
    main()
