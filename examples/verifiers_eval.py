"""Evaluate a model as plan_path-v0's planner (the tool agent scripted) with verifiers, and print the vf-eval command.

The taskset and env are teamgym's (``--env.taskset.id teamgym-verifiers``). With ``--base-url`` (any
OpenAI-compatible endpoint, e.g. ``vllm serve Qwen/Qwen3-1.7B``) the episodes run here, in Python, through
verifiers' own rollout machinery, and their rewards are printed; without it the example only prints the equivalent
``vf-eval`` command. Needs ``pip install 'teamgym[verifiers]' uv`` (verifiers prepares its chat program with uv).

    python examples/verifiers_eval.py --tasks 4 --base-url http://localhost:8000/v1 --model Qwen/Qwen3-1.7B
"""

from __future__ import annotations

import argparse
import asyncio
import shlex

from teamgym.integrations.verifiers import TASKSET_ID


def main(argv: list[str] | None = None) -> list[float] | str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=4, help="plan_path seeds 0..N-1")
    parser.add_argument("--model", default="Qwen/Qwen3-1.7B")
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible endpoint; none: print the command")
    parser.add_argument("--api-key-var", default="OPENAI_API_KEY", help="the env var holding the endpoint's key")
    args = parser.parse_args(argv)
    tasks = list(range(args.tasks))
    if args.base_url is None:
        command = ["vf-eval", TASKSET_ID, "--env.taskset.env-id", "plan_path-v0", "--env.taskset.role", "planner",
                   "--env.taskset.task-ids", *map(str, tasks), "-m", args.model,
                   "--client.base-url", "http://localhost:8000/v1", "--client.api-key-var", args.api_key_var]
        text = " ".join(shlex.quote(c) for c in command)
        print(text)
        return text
    import verifiers.v1 as vf

    config = vf.resolve_env_config({"taskset": {"id": TASKSET_ID, "env_id": "plan_path-v0", "role": "planner",
                                                "partners": {"tool": "scripted"}, "task_ids": tasks}})
    env = vf.load_environment(config)
    context = vf.ModelContext(model=args.model, client=vf.EvalClientConfig(base_url=args.base_url,
                                                                           api_key_var=args.api_key_var))

    async def run() -> list[float]:
        async with env.serving():
            episodes = [await env.run_slot(slot, context) for task in env.taskset for slot in env.slots(task, 1)]
        return [sum(t.rewards["teamgym_reward"].score for t in e.traces) for e in episodes]

    returns = asyncio.run(run())
    for task, value in zip(tasks, returns):
        print(f"task {task}: planner return {value:+.2f}")
    return returns


if __name__ == "__main__":
    main()
