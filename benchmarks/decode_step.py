"""One GPT-2 decode step: transformers' forward with its cache against ``GPT2Decoder``, interleaved, same inputs.

    python benchmarks/decode_step.py                 # the tiny default and 4 layers x 256, batch 32, 40 steps

Prints ms per step for both and their ratio, and whether the logits were bitwise equal at every step.
"""

from __future__ import annotations

import argparse
import os
import random
import time

import torch

from teamgym.rollout import HFPolicy
from teamgym.rollout.fast_gpt2 import GPT2Decoder
from teamgym.rollout.hf import _left_pad


def measure(n_layer: int, n_embd: int, n_head: int, batch: int, steps: int) -> tuple[float, float, bool]:
    model = HFPolicy.tiny(n_layer=n_layer, n_embd=n_embd, n_head=n_head).model.eval()
    rng = random.Random(0)
    rows = [[rng.randrange(3, 90) for _ in range(rng.randrange(1, 60))] for _ in range(batch)]
    ids, mask = _left_pad(rows, 0, torch.device("cpu"))
    positions = (mask.cumsum(-1) - 1).clamp_min(0)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True)
        decoder = GPT2Decoder(model, ids, mask, positions, steps)
        equal = torch.equal(decoder.first_logits(), out.logits[:, -1])
        last, hf_seconds, fast_seconds = positions[:, -1:], 0.0, 0.0
        for _ in range(steps):
            tokens = torch.randint(3, 90, (batch,), generator=generator)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
            last = last + 1
            tic = time.perf_counter()
            out = model(input_ids=tokens[:, None], attention_mask=mask, position_ids=last, use_cache=True,
                        cache=out["cache"])
            hf_seconds += time.perf_counter() - tic
            tic = time.perf_counter()
            logits = decoder.step(tokens)
            fast_seconds += time.perf_counter() - tic
            equal = equal and torch.equal(logits, out.logits[:, -1])
    return 1e3 * hf_seconds / steps, 1e3 * fast_seconds / steps, equal


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"load average {os.getloadavg()[0]:.1f}, batch {args.batch}, {args.steps} steps, one torch thread\n")
    print("| model | transformers ms/step | GPT2Decoder ms/step | ratio | logits bitwise equal |")
    print("|---|---:|---:|---:|---|")
    for n_layer, n_embd, n_head in ((2, 64, 2), (4, 256, 4)):
        hf_ms, fast_ms, equal = measure(n_layer, n_embd, n_head, args.batch, args.steps)
        print(f"| {n_layer} layers x {n_embd} | {hf_ms:.2f} | {fast_ms:.2f} | {hf_ms / fast_ms:.2f}x | {equal} |")


if __name__ == "__main__":
    main()
