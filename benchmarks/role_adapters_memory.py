"""Peak memory of several role policies: per-role LoRA adapters on one base against one model per role.

    python benchmarks/role_adapters_memory.py                     # 2, 4, 8 roles, a ~19M-parameter GPT-2 on CPU
    python benchmarks/role_adapters_memory.py --roles 2 --n-layer 2 --n-embd 128   # a quick look

A GPT-2 checkpoint is built in code (a character tokenizer, random weights, float32) and saved to a temp dir; each
layout then runs in a fresh process of its own, side by side in one invocation, through the trainer's own
``build_policies`` and ``build_optimizers``:

* ``shared``: one model for every role, full fine-tune (``shared_model=true``): the floor, one base;
* ``per-role full``: one model per role, full fine-tune (``shared_model=false``);
* ``per-role LoRA``: one model per role, each with a LoRA adapter (``shared_model=false, lora_rank=8``);
* ``adapters``: one frozen base, one LoRA adapter and optimizer per role (``role_adapters=true, lora_rank=8``).

Each process loads the policies, then for every role samples once and takes one AdamW step on a fixed batch of 8
rows of 64 + 32 tokens (so every optimizer holds its state), and reports its peak resident memory (``ru_maxrss``)
less its resident memory just before the policies were built, after a warm-up of the same layout on a one-layer
model (so that Python, torch, transformers, peft and first-use buffers are not counted), and what it still holds
after the updates and glibc's ``malloc_trim`` (``held``: weights, the last gradients and the AdamW states, the memory
that grows with the roles; ``peak`` adds sampling's and one update's activations). The measuring processes map every
allocation of 64 KiB or more on its own (:data:`ALLOCATOR`), so that resident memory follows the live tensors. Linux
(glibc) only. Prints both in MiB and each layout's ratio to ``adapters``.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from teamgym.rollout.sampling import SamplingParams
from teamgym.rollout.tiny import char_tokenizer, tiny_gpt2
from teamgym.train import TrainConfig
from teamgym.train.policies import build_optimizers, build_policies

#: glibc malloc settings of the measuring processes: every allocation of 64 KiB or more gets its own mapping, returned
#: to the system when freed, so that resident memory follows the live tensors (with the default, freed activations
#: stay in the heap, fragmented, and the peak grew by ~90 MiB a role for the same live memory).
ALLOCATOR = {"MALLOC_MMAP_THRESHOLD_": "65536"}

#: layout name -> the config fields that select it.
LAYOUTS = {
    "shared": {"shared_model": True},
    "per-role full": {"shared_model": False},
    "per-role LoRA": {"shared_model": False, "lora_rank": 8},
    "adapters": {"role_adapters": True, "lora_rank": 8},
}


def save_checkpoint(path: Path, n_layer: int, n_embd: int, n_head: int) -> int:
    """A random GPT-2 with the character tokenizer, saved as a transformers checkpoint; returns its parameter count."""
    tokenizer = char_tokenizer()
    model = tiny_gpt2(len(tokenizer), n_layer=n_layer, n_embd=n_embd, n_head=n_head, n_positions=256)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return sum(p.numel() for p in model.parameters())


def resident_mib() -> float:
    with open("/proc/self/status", encoding="utf-8") as status:
        kib = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return kib / 1024


def exercise(checkpoint: str, layout: str, roles: int) -> tuple[dict[str, Any], dict[str, torch.optim.Optimizer]]:
    """Build one layout's policies and optimizers, sample with and update every role once; returns them."""
    names = [f"role{i}" for i in range(roles)]
    config = TrainConfig.from_dict({"model": checkpoint, **LAYOUTS[layout]})
    policies = build_policies(config, names)
    optimizers = build_optimizers(policies, 1e-4)
    generator = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, 90, (64,), generator=generator).tolist() for _ in range(8)]
    completions = [torch.randint(3, 90, (32,), generator=generator).tolist() for _ in range(8)]
    for name in names:
        policy = policies[name]
        policy.generate(["a prompt of the role " + name], 2, SamplingParams(temperature=1.0, max_tokens=16))
        optimizer = optimizers[policy.name]
        optimizer.zero_grad(set_to_none=True)
        logprobs, _, mask = policy.score(prompts, completions)
        (-(logprobs * mask).sum() / mask.sum()).backward()
        optimizer.step()
    return policies, optimizers


def measure(folder: str, layout: str, roles: int) -> dict[str, float]:
    """One layout's peak memory in MiB over the process's resident memory before it (after a warm-up run of the same
    layout on a one-layer model, so that lazily imported modules and first-use kernel buffers are not counted)."""
    torch.set_num_threads(1)
    warm_up = exercise(str(Path(folder) / "warm-up"), layout, roles)
    del warm_up
    gc.collect()
    before = resident_mib()
    policies, optimizers = exercise(str(Path(folder) / "model"), layout, roles)
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # hand freed activations back, so that what stays resident is what is held
    held = resident_mib() - before
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before
    trainable = sum(p.numel() for opt in optimizers.values() for g in opt.param_groups for p in g["params"])
    return {"held": held, "peak": peak, "trainable": trainable}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--roles", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--n-layer", type=int, default=6)
    parser.add_argument("--n-embd", type=int, default=512)
    parser.add_argument("--n-head", type=int, default=8)
    parser.add_argument("--child", nargs=3, metavar=("CHECKPOINT", "LAYOUT", "ROLES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child[0], args.child[1], int(args.child[2]))))
        return
    with tempfile.TemporaryDirectory() as folder:
        save_checkpoint(Path(folder) / "warm-up", 1, 16, 1)
        count = save_checkpoint(Path(folder) / "model", args.n_layer, args.n_embd, args.n_head)
        print(f"GPT-2 {args.n_layer} layers x {args.n_embd}: {count / 1e6:.1f}M parameters, float32, on CPU")
        print("| roles | layout | trainable parameters | held (MiB) | held / adapters | peak (MiB) | peak / adapters |")
        print("|---:|---|---:|---:|---:|---:|---:|")
        for roles in args.roles:
            rows = {}
            for layout in LAYOUTS:
                child = [sys.executable, __file__, "--child", folder, layout, str(roles)]
                out = subprocess.run(child, capture_output=True, text=True, check=True, env={**os.environ, **ALLOCATOR})
                rows[layout] = json.loads(out.stdout.strip().splitlines()[-1])
            for layout, row in rows.items():
                held, peak = row["held"] / rows["adapters"]["held"], row["peak"] / rows["adapters"]["peak"]
                print(
                    f"| {roles} | {layout} | {row['trainable'] / 1e6:.2f}M | {row['held']:.0f} | {held:.2f}x "
                    f"| {row['peak']:.0f} | {peak:.2f}x |"
                )


if __name__ == "__main__":
    main()
