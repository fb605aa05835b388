"""Train a tool + planner team on plan_path-v0 with TRL's GRPOTrainer, through teamgym's rollout function.

A tiny character-level GPT-2 (built in code, no download, saved with its tokenizer to the output directory so TRL
loads it like any hub model) plays both roles. Each TRL group is one agent-turn node: G completions of one role
from one env state, scored by the env (AT-GRPO's grouping). Needs ``pip install 'teamgym[trl]'``.

    python examples/trl_grpo.py --steps 2                 # smoke run: about a minute on 2 CPU cores
    python examples/trl_grpo.py --steps 200 --output-dir runs/trl_plan_path
"""

from __future__ import annotations

import argparse
import logging
import os

from teamgym.integrations.trl import EnvRollout, reward_funcs, task_dataset
from teamgym.rollout.tiny import char_tokenizer, tiny_gpt2
from teamgym.train.presets import plan_path_prompt


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--groups", type=int, default=4, help="agent-turn nodes (TRL groups) per step")
    parser.add_argument("--generations", type=int, default=4, help="candidates per node (TRL's num_generations)")
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--output-dir", default="runs/trl_plan_path")
    args = parser.parse_args(argv)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in TRL: we know
    from trl import GRPOConfig, GRPOTrainer

    # 1. A tiny model and its tokenizer, saved where TRL can load them by path.
    tokenizer = char_tokenizer()
    model_dir = os.path.join(args.output_dir, "tiny_gpt2")
    tiny_gpt2(len(tokenizer), seed=0).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)

    # 2. The rollout: plan_path's compact prompts (the ones teamgym's own trainer uses for this model), both roles
    #    trained; the dataset only names tasks.
    rollout = EnvRollout("plan_path-v0", env_kwargs={"size": 4, "max_turns": 3}, prompt=plan_path_prompt,
                         max_prompt_tokens=256)
    config = GRPOConfig(
        output_dir=args.output_dir, max_steps=args.steps, learning_rate=args.learning_rate,
        per_device_train_batch_size=args.groups * args.generations, num_generations=args.generations,
        max_completion_length=40, temperature=1.0, beta=0.0, logging_steps=1, report_to="none", use_cpu=True,
        bf16=False, gradient_checkpointing=False, save_strategy="no", dataloader_num_workers=0, seed=0,
        reward_weights=[1.0, 0.0, 0.0],  # train on the env's reward; log its team and local terms
    )
    trainer = GRPOTrainer(model=model_dir, processing_class=tokenizer, args=config,
                          reward_funcs=reward_funcs(terms=("team", "local")),
                          train_dataset=task_dataset(list(range(256))), rollout_func=rollout)
    trainer.train()
    rollout.close()

    # 3. TRL's log: one row per step; rewards/teamgym_reward/mean is the env's mean reward over the step's rows.
    logs = [row for row in trainer.state.log_history if "rewards/teamgym_reward/mean" in row]
    for row in logs:
        print(f"step {row['step']}: reward {row['reward']:+.3f} team {row['rewards/teamgym_team/mean']:+.3f} "
              f"local {row['rewards/teamgym_local/mean']:+.3f}")
    return logs


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    main()
