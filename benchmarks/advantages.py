"""Advantage estimators vs the dict-of-lists Python loop used in public trainers.

Run: ``python benchmarks/advantages.py`` (1M agent-turn rows, 100k groups, string anchors; a few minutes on
one core). ``--rows 100000`` shrinks the batch; ``--loop-rows`` sets the rows the slow loops run on (their
time is scaled linearly to ``--rows``; pass ``--loop-rows`` equal to ``--rows`` to time them in full). Times
are medians in this process (ours measured before and after the loop, best of the two medians, so both see
similar load); peak memory is the growth of the RSS high-water mark (VmHWM, reset through
/proc/self/clear_refs) during one call, so Linux only. Prints a markdown table and the load average.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import math
import os
import re
import statistics
import sys
import time
from collections import defaultdict

import numpy as np
import torch

try:
    import teamgym  # noqa: F401
except ModuleNotFoundError:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))

from teamgym.algos import (  # noqa: E402
    at_grpo,
    discounted_returns,
    dr_grpo,
    dr_mas,
    gigpo,
    group_ids,
    grpo,
    mhgpo,
    rloo,
    team_gigpo,
    treerl_advantages,
)

# ---------------------------------------------------------------- the loop pattern (verl-style dict of lists)


def loop_normalize(scores: torch.Tensor, keys: list, scale: bool = True, eps: float = 1e-6) -> torch.Tensor:
    """verl ``compute_grpo_outcome_advantage`` shape: dict of lists, torch.mean/std per group, per-row
    writes.
    """
    scores = scores.clone()
    id2score = defaultdict(list)
    id2mean, id2std = {}, {}
    for i in range(len(scores)):
        id2score[keys[i]].append(scores[i])
    for key, members in id2score.items():
        if len(members) == 1:
            id2mean[key], id2std[key] = torch.tensor(0.0), torch.tensor(1.0)
        else:
            stacked = torch.stack(members)
            id2mean[key], id2std[key] = torch.mean(stacked), torch.std(stacked)
    for i in range(len(scores)):
        centred = scores[i] - id2mean[keys[i]]
        scores[i] = centred / (id2std[keys[i]] + eps) if scale else centred
    return scores


def loop_rloo(scores: torch.Tensor, keys: list) -> torch.Tensor:
    scores = scores.clone()
    id2score = defaultdict(list)
    for i in range(len(scores)):
        id2score[keys[i]].append(scores[i])
    sums = {k: torch.stack(v).sum() for k, v in id2score.items()}
    for i in range(len(scores)):
        n = len(id2score[keys[i]])
        scores[i] = scores[i] - (sums[keys[i]] - scores[i]) / (n - 1) if n > 1 else 0.0
    return scores


def loop_gigpo(ep: torch.Tensor, step: torch.Tensor, episode_keys: list, group_keys: list, step_keys: list):
    """verl-agent ``core_gigpo`` shape: one episode return per trajectory, then anchor-state step groups."""
    traj_return, traj_group = {}, {}
    for i in range(len(ep)):
        if episode_keys[i] not in traj_return:
            traj_return[episode_keys[i]] = ep[i]
            traj_group[episode_keys[i]] = group_keys[i]
    keys = list(traj_return)
    episode_adv = loop_normalize(torch.stack([traj_return[k] for k in keys]), [traj_group[k] for k in keys])
    episode_by_key = dict(zip(keys, episode_adv, strict=True))
    step_adv = loop_normalize(step, step_keys)
    out = step_adv.clone()
    for i in range(len(out)):
        out[i] = episode_by_key[episode_keys[i]] + step_adv[i]
    return out


def loop_returns(rewards: torch.Tensor, traj_keys: list, turns: list, gamma: float = 0.95) -> torch.Tensor:
    out = rewards.clone()
    rows = defaultdict(list)
    for i in range(len(rewards)):
        rows[traj_keys[i]].append(i)
    for indices in rows.values():
        running = torch.tensor(0.0)
        for i in sorted(indices, key=lambda i: turns[i], reverse=True):
            running = rewards[i] + gamma * running
            out[i] = running
    return out


def loop_tree(parents: list, rewards: list) -> list:
    children = defaultdict(list)
    for node, parent in enumerate(parents):
        if parent >= 0:
            children[parent].append(node)
    total, count = [0.0] * len(parents), [0] * len(parents)
    for node in range(len(parents)):
        if not children[node]:
            cur = node
            while cur >= 0:
                total[cur] += rewards[node]
                count[cur] += 1
                cur = parents[cur]
    value = [t / c for t, c in zip(total, count, strict=True)]
    out = []
    for node, parent in enumerate(parents):
        if parent < 0:
            out.append(0.0)
            continue
        root = node
        while parents[root] >= 0:
            root = parents[root]
        out.append((2 * value[node] - value[root] - value[parent]) / count[node] ** 0.5)
    return out


def loop_tree_torch(parents: list, rewards: torch.Tensor) -> torch.Tensor:
    """The tree walk of :func:`loop_tree` in the pattern of the other loops here (and of public trainers): a
    dict of children lists and per-element tensor reads and writes, instead of plain Python floats."""
    children = defaultdict(list)
    for node, parent in enumerate(parents):
        if parent >= 0:
            children[parent].append(node)
    total = torch.zeros(len(parents), dtype=torch.float64)
    count = torch.zeros(len(parents), dtype=torch.float64)
    for node in range(len(parents)):
        if not children[node]:
            cur = node
            while cur >= 0:
                total[cur] += rewards[node]
                count[cur] += 1
                cur = parents[cur]
    out = torch.zeros(len(parents), dtype=torch.float64)
    for node, parent in enumerate(parents):
        if parent >= 0:
            root = node
            while parents[root] >= 0:
                root = parents[root]
            value = total[node] / count[node]
            out[node] = (2 * value - total[root] / count[root] - total[parent] / count[parent]) / count[node].sqrt()
    return out


# ---------------------------------------------------------------- plain vectorised numpy (bincount)
# What a careful engineer writes in numpy for one data layout: small non-negative integer keys folded by mixed
# radix, per-group sums by bincount, float64 statistics, singleton groups 0. No input checks, no general ids, no
# exact-zero handling of constant groups: the fastest reasonable implementation, the bar for ours.


def np_radix(*columns: np.ndarray) -> np.ndarray:
    """Codes of the key tuples by mixed radix (keys are small non-negative ints)."""
    code = columns[0]
    for column in columns[1:]:
        code = code * (int(column.max()) + 1) + column
    return code


def np_normalize(values: np.ndarray, codes: np.ndarray, scale: bool = True, eps: float = 1e-6) -> np.ndarray:
    x = values.astype(np.float64)
    count = np.bincount(codes)
    mean = np.bincount(codes, x) / np.maximum(count, 1)
    centred = x - mean[codes]
    if not scale:
        return centred.astype(values.dtype)
    std = np.sqrt(np.bincount(codes, centred * centred) / np.maximum(count - 1, 1))
    factor = np.where((count > 1) & (std > 0), 1.0 / (std + eps), 0.0)
    return (centred * factor[codes]).astype(values.dtype)


def np_rloo(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    x = values.astype(np.float64)
    count = np.bincount(codes)
    total = np.bincount(codes, x)
    n = count[codes]
    return np.where(n > 1, x - (total[codes] - x) / np.maximum(n - 1, 1), 0.0).astype(values.dtype)


def np_gigpo(ep: np.ndarray, step: np.ndarray, group: np.ndarray, traj: np.ndarray, anchor: np.ndarray,
             scale: bool = True) -> np.ndarray:
    """Episode-level GRPO over one return per (group, trajectory) unit plus step-level GRPO over anchor groups.

    ``group`` is the episode group (team GiGPO: the (group, agent) code) and ``anchor`` the step group code. Step
    groups are keyed by the anchor id without the group: the benchmark's anchor ids are built per prompt group (a
    shortcut a plain implementation takes knowing the data; ours checks it).
    """
    n_traj = int(traj.max()) + 1
    unit = group * n_traj + traj
    present = np.bincount(unit) > 0
    unit_return = np.zeros(present.size)
    unit_return[unit] = ep
    units = np.flatnonzero(present)
    unit_adv = np.zeros(present.size)
    unit_adv[units] = np_normalize(unit_return[units], units // n_traj, scale)
    return (unit_adv[unit] + np_normalize(step.astype(np.float64), anchor, scale)).astype(ep.dtype)


def np_returns(rewards: np.ndarray, traj: np.ndarray, turn: np.ndarray, gamma: float = 0.95) -> np.ndarray:
    """A padded (turn, trajectory) table filled backwards (trajectory and turn ids small and dense)."""
    n_traj, n_turn = int(traj.max()) + 1, int(turn.max()) + 1
    table = np.zeros((n_turn, n_traj), dtype=rewards.dtype)
    table[turn, traj] = rewards
    for t in range(n_turn - 2, -1, -1):
        table[t] += gamma * table[t + 1]
    return table[turn, traj]


def loop_factorize(strings: list) -> list:
    seen: dict = {}
    out = []
    for s in strings:
        if s not in seen:
            seen[s] = len(seen)
        out.append(seen[s])
    return out


# ---------------------------------------------------------------- data


def make_batch(rows: int, groups: int, seed: int = 0) -> dict:
    """Shuffled agent-turn rows: ~rows/groups per group, 4 trajectories, 2 agents, 3 turns, 4 anchors per
    group.
    """
    rng = np.random.default_rng(seed)
    group = rng.integers(0, groups, rows)
    traj = rng.integers(0, 4, rows)
    agent = rng.integers(0, 2, rows)
    turn = rng.integers(0, 3, rows)
    anchor_k = rng.integers(0, 4, rows)
    anchors = [f"obs of task {g}: state {k}" for g, k in zip(group.tolist(), anchor_k.tolist(), strict=True)]
    ep_table = rng.integers(0, 2, groups * 8).astype(np.float32)
    order = np.argsort(rng.random(rows))  # trajectories of 5 turns, rows shuffled
    traj_unique, turn_unique = order // 5, order % 5
    t = torch.from_numpy
    return {
        "rewards": t(rng.integers(0, 2, rows).astype(np.float32)),
        "group": t(group),
        "traj": t(traj),
        "agent": t(agent),
        "turn": t(turn),
        "anchors": anchors,
        "ep": t(ep_table[group * 4 + traj]),
        "ep_agent": t(ep_table[group * 8 + traj * 2 + agent]),
        "step": t(rng.random(rows).astype(np.float32)),
        "traj_unique": t(traj_unique),
        "turn_unique": t(turn_unique),
    }


def make_forest(nodes: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Trees of 1 root, 3 children, 9 grandchildren (13 nodes each), AT-GRPO-like branching."""
    trees = max(1, nodes // 13)
    parents = []
    for tree in range(trees):
        base = tree * 13
        parents += [-1, base, base, base] + [base + 1 + i // 3 for i in range(9)]
    rewards = np.random.default_rng(seed).integers(0, 2, len(parents)).astype(np.float32)
    return torch.tensor(parents), torch.from_numpy(rewards)


# ---------------------------------------------------------------- measurement


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        return int(re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.M).group(1))


def peak_memory(fn) -> int:
    """Peak RSS growth while ``fn`` runs once, in bytes (Linux: reset VmHWM, run, read VmHWM - VmRSS before).

    Freed memory is handed back to the OS first (``malloc_trim``) so earlier runs do not hide this one's peak.
    """
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _status_kib("VmRSS")
    fn()
    return (_status_kib("VmHWM") - before) * 1024


def seconds(fn, repeats: int) -> tuple[float, float]:
    """Median wall and CPU (process) time over ``repeats`` calls, after one warm-up call when repeated.

    CPU time is reported too because on a shared, oversubscribed machine wall time also measures the
    neighbours.
    """
    if repeats > 1:
        fn()
    wall, cpu = [], []
    for _ in range(repeats):
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start_wall)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=100_000)
    parser.add_argument("--loop-rows", type=int, default=100_000)
    parser.add_argument("--only", default="", help="run only the rows whose name contains this text")
    parser.add_argument("--skip-loops", action="store_true", help="leave the slow loops out (numpy rows only)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    n, loop_n = args.rows, min(args.loop_rows, args.rows)
    scale = n / loop_n
    big = make_batch(n, args.groups)
    small = make_batch(loop_n, max(1, args.groups * loop_n // n), seed=1)
    anchors_big = group_ids(big["group"], big["anchors"])
    s = small
    (
        sg,
        sa,
        st,
        str_,
    ) = s["group"].tolist(), s["agent"].tolist(), s["turn"].tolist(), s["traj"].tolist()
    s_anchor = s["anchors"]
    b = big
    a = {k: v.numpy() for k, v in b.items() if isinstance(v, torch.Tensor)}
    a_anchor = anchors_big.numpy()
    cases = [
        ("grpo", lambda: grpo(b["rewards"], b["group"]), lambda: loop_normalize(s["rewards"], sg),
         lambda: np_normalize(a["rewards"], a["group"])),
        (
            "dr_grpo",
            lambda: dr_grpo(b["rewards"], b["group"]),
            lambda: loop_normalize(s["rewards"], sg, False),
            lambda: np_normalize(a["rewards"], a["group"], False),
        ),
        ("rloo", lambda: rloo(b["rewards"], b["group"]), lambda: loop_rloo(s["rewards"], sg),
         lambda: np_rloo(a["rewards"], a["group"])),
        (
            "at_grpo",
            lambda: at_grpo(b["rewards"], b["group"], b["agent"], b["turn"]),
            lambda: loop_normalize(s["rewards"], list(zip(sg, sa, st, strict=True))),
            lambda: np_normalize(a["rewards"], np_radix(a["group"], a["agent"], a["turn"])),
        ),
        (
            "dr_mas",
            lambda: dr_mas(b["rewards"], b["group"], b["agent"]),
            lambda: loop_normalize(s["rewards"], list(zip(sg, sa, strict=True))),
            lambda: np_normalize(a["rewards"], np_radix(a["group"], a["agent"])),
        ),
        (
            "mhgpo",
            lambda: mhgpo(b["rewards"], b["group"], b["agent"]),
            lambda: loop_normalize(s["rewards"], list(zip(sg, sa, strict=True))),
            lambda: np_normalize(a["rewards"], np_radix(a["group"], a["agent"])),
        ),
        (
            "gigpo",
            lambda: gigpo(b["ep"], b["step"], b["group"], b["traj"], anchors_big),
            lambda: loop_gigpo(
                s["ep"], s["step"], list(zip(sg, str_, strict=True)), sg, list(zip(sg, s_anchor, strict=True))
            ),
            lambda: np_gigpo(a["ep"], a["step"], a["group"], a["traj"], a_anchor),
        ),
        (
            "team_gigpo",
            lambda: team_gigpo(b["ep_agent"], b["step"], b["group"], b["traj"], b["agent"], anchors_big),
            lambda: loop_gigpo(
                s["ep_agent"],
                s["step"],
                list(zip(sg, sa, str_, strict=True)),
                list(zip(sg, sa, strict=True)),
                list(zip(sg, sa, s_anchor, strict=True)),
            ),
            lambda: np_gigpo(a["ep_agent"], a["step"], np_radix(a["group"], a["agent"]), a["traj"],
                             np_radix(a_anchor, a["agent"])),
        ),
        (
            "discounted_returns",
            lambda: discounted_returns(b["step"], b["traj_unique"], b["turn_unique"]),
            lambda: loop_returns(s["step"], s["traj_unique"].tolist(), s["turn_unique"].tolist()),
            lambda: np_returns(a["step"], a["traj_unique"], a["turn_unique"]),
        ),
        (
            f"group_ids ({n:,} string anchors)",
            lambda: group_ids(b["anchors"]),
            lambda: loop_factorize(s_anchor),
            None,
        ),
    ]
    parents, leaf = make_forest(n)
    small_parents, small_leaf = make_forest(loop_n, seed=1)
    sp, sl = small_parents.tolist(), small_leaf.tolist()
    tree_scale = parents.numel() / small_parents.numel()
    results = []
    load_before = f"{os.getloadavg()[0]:.1f}"
    cases.append(
        (
            f"treerl ({parents.numel():,} tree nodes), vs the dict-of-lists tensor loop",
            lambda: treerl_advantages(parents, leaf),
            lambda: loop_tree_torch(sp, small_leaf),
            None,
        )
    )
    cases.append(
        (
            f"treerl ({parents.numel():,} tree nodes), vs a plain-float Python walk",
            lambda: treerl_advantages(parents, leaf),
            lambda: loop_tree(sp, sl),
            None,
        )
    )
    cases = [case for case in cases if args.only in case[0]]
    for name, ours, loop, plain in cases:
        # ours, then the loop and numpy, then ours again: all see similar machine load
        first = seconds(ours, repeats=3)
        factor = tree_scale if name.startswith("treerl") else scale
        loop_wall, loop_cpu = (t * factor for t in seconds(loop, repeats=1)) if not args.skip_loops else (0.0, 0.0)
        numpy_wall, numpy_cpu = seconds(plain, repeats=3) if plain is not None else (math.nan, math.nan)
        second = seconds(ours, repeats=3)
        if plain is not None:  # and numpy again, interleaved the same way
            again = seconds(plain, repeats=3)
            numpy_wall, numpy_cpu = min(numpy_wall, again[0]), min(numpy_cpu, again[1])
        ours_wall, ours_cpu = min(first[0], second[0]), min(first[1], second[1])
        results.append((name, ours_wall, loop_wall, ours_cpu, loop_cpu, numpy_wall, numpy_cpu, peak_memory(ours)))
    loop_note = "timed in full" if loop_n == n else f"timed on {loop_n:,} rows, scaled x{scale:g}"
    print(f"rows = {n:,}, groups = {args.groups:,}, torch threads = 1; loop {loop_note}")
    print(f"load average before: {load_before}, after: {os.getloadavg()[0]:.1f} (1 min)\n")
    print(
        "| estimator | ours wall (s) | loop wall (s) | speedup wall | ours CPU (s) | loop CPU (s) "
        "| speedup CPU | numpy CPU (s) | ours / numpy CPU | ours peak RSS growth (MiB) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, ours_wall, loop_wall, ours_cpu, loop_cpu, _, numpy_cpu, mem in results:
        versus = f"{ours_cpu / numpy_cpu:.2f}" if numpy_cpu == numpy_cpu else "-"
        numpy_text = f"{numpy_cpu:.3f}" if numpy_cpu == numpy_cpu else "-"
        print(
            f"| {name} | {ours_wall:.3f} | {loop_wall:.2f} | {loop_wall / ours_wall:,.0f}x | {ours_cpu:.3f} "
            f"| {loop_cpu:.2f} | {loop_cpu / max(ours_cpu, 1e-9):,.0f}x | {numpy_text} | {versus} "
            f"| {mem / 2**20:.0f} |"
        )


if __name__ == "__main__":
    main()
