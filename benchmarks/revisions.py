"""Two revisions of teamgym side by side: the same benchmark script, run against each library in turn.

    python benchmarks/revisions.py --baseline f35bfa4 --rounds 3 -- benchmarks/sandbox_throughput.py --json
    python benchmarks/revisions.py --baseline f35bfa4 -- benchmarks/env_throughput.py --problems 40 --json

The baseline revision is checked out in a temporary git worktree; the benchmark script is always the current one
(so both revisions are measured identically), and ``PYTHONPATH`` picks the library. Both libraries are byte-compiled
first, as an installed package is: a fresh checkout would compile its modules on first import instead, which costs
time and leaves state behind (the first ``compile()`` in a process builds the ``ast`` types, which the sandbox's
forked processes then inherit), so that one revision would run differently from the other. Rounds alternate baseline and
current, so load on a shared machine hits both alike. The script must print JSON rows (``--json``): a list of
objects whose string fields name the row and whose numbers are the measurements. Printed: the median of each
number over the rounds for both revisions, and current / baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(library: str, script: list[str]) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=library)
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, script[0]), *script[1:]],
        cwd=library,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{script[0]} failed on {library}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def key(row: dict) -> tuple:
    return tuple((k, v) for k, v in row.items() if isinstance(v, str))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="git revision to compare with (e.g. a commit or main~3)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating runs per revision (default 3)")
    parser.add_argument("script", nargs=argparse.REMAINDER, help="-- SCRIPT [ARGS]: a benchmark printing --json rows")
    args = parser.parse_args()
    script = args.script[1:] if args.script[:1] == ["--"] else args.script
    if not script:
        parser.error("give the benchmark after --, e.g. -- benchmarks/sandbox_throughput.py --json")
    commit = subprocess.run(
        ["git", "-C", ROOT, "rev-parse", "--short", args.baseline], capture_output=True, text=True, check=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="teamgym-baseline-") as tmp:
        tree = os.path.join(tmp, "tree")
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", "-q", tree, commit], check=True)
        try:
            for library in (tree, ROOT):
                subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(library, "teamgym")], check=True)
            results: dict[str, list[list[dict]]] = {"baseline": [], "current": []}
            for _ in range(args.rounds):
                results["baseline"].append(run(tree, script))
                results["current"].append(run(ROOT, script))
        finally:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", tree], check=False)
    load = os.getloadavg()[0]
    print(f"{' '.join(script)}: baseline {commit} vs current, median of {args.rounds} alternating rounds, "
          f"load average {load:.1f}\n")
    print("| row | metric | baseline | current | current / baseline |")
    print("|---|---|---:|---:|---:|")
    for row in results["current"][0]:
        name = ", ".join(str(v) for _, v in key(row))
        for metric, value in row.items():
            if isinstance(value, str) or value is None:
                continue
            series = {
                side: [next(r[metric] for r in rows if key(r) == key(row)) for rows in results[side]]
                for side in results
            }
            base, cur = statistics.median(series["baseline"]), statistics.median(series["current"])
            ratio = f"{cur / base:.2f}" if base else "n/a"
            print(f"| {name} | {metric} | {base:.3g} | {cur:.3g} | {ratio} |")


if __name__ == "__main__":
    main()
