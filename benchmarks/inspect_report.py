"""``teamgym inspect`` on a large step: report size, time to write it, and time to open it in headless Chromium.

By default it builds a synthetic run directory with one saved step of ``--rows`` agent-turns shaped like a
Qwen-class run (two agents, K = 4 candidates per node, 3 turns, completions of ``--text-chars`` characters,
prompts twice as long), and 80 steps of metrics; ``--run DIR`` measures a real run's newest saved step instead.
The page is opened ``--repeats`` times in a fresh tab of one headless Chromium (``apt-get install -y chromium``);
"ready" is the page's own clock (``performance.now()``, from the start of navigation) when its first render is
done, "load event" the wall time from the navigation request to the load event, "search" the time to filter all
rows by a word and redraw. Prints a markdown table.

    python benchmarks/inspect_report.py                          # 10,000 synthetic rows
    python benchmarks/inspect_report.py --rows 10000 --text-chars 400 --repeats 5
    python benchmarks/inspect_report.py --run runs/plan_path     # a real run saved with --set save_batches=true
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The library PYTHONPATH names (benchmarks/revisions.py runs this script against a baseline that way) ahead of this
# checkout's; this checkout is still where tests.support comes from.
_named = any((Path(p) / "teamgym").is_dir() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
sys.path.insert(len(sys.path) if _named else 0, str(ROOT))

from teamgym.report import write_report  # noqa: E402
from tests.support.chromium import Chromium  # noqa: E402

WORDS = (
    "def",
    "return",
    "assert",
    "for",
    "in",
    "range",
    "if",
    "else",
    "print",
    "x",
    "y",
    "total",
    "count",
    "=",
    "+",
    "(",
    ")",
    ":",
    "solve",
    "items",
    "result",
    "value",
    "None",
    "True",
    "0",
    "1",
    "len",
    "[",
    "]",
)


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        words.append(word + ("\n" if rng.random() < 0.12 else " "))
        size += len(words[-1])
    return "".join(words)[:chars]


def synthetic_run(directory: Path, rows: int, text_chars: int, seed: int = 0) -> Path:
    """A run directory with ``config.json``, 80 steps of ``metrics.jsonl`` and one saved step of ``rows`` rows."""
    rng = random.Random(seed)
    agents, k, turns = ("coder", "tester"), 4, 3
    (directory / "batches").mkdir(parents=True)
    config = {
        "env_id": "coder_tester-v0",
        "algo": "at_grpo",
        "rollout": "tree",
        "model": "/models/Qwen2.5-1.5B",
        "k": k,
        "tasks_per_step": rows // (k * len(agents) * turns) + 1,
        "max_new_tokens": 1024,
        "alpha_mixer": "env",
        "gamma": 0.95,
        "omega": 1.0,
        "steps": 80,
    }
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    with open(directory / "metrics.jsonl", "w") as handle:
        for step in range(80):
            handle.write(
                json.dumps(
                    {
                        "step": step,
                        "success": min(1.0, 0.2 + step / 100 + rng.random() * 0.1),
                        "reward/coder/mixed": step / 80 + rng.random() * 0.2,
                        "reward/tester/mixed": step / 100 + rng.random() * 0.2,
                        "entropy": 1.0 - step / 160,
                        "kl": 0.0,
                        "loss": rng.random() * 0.01,
                        "advantage/min": -1.5,
                        "advantage/max": 1.5,
                    }
                )
                + "\n"
            )
    written = 0
    with open(directory / "batches" / "step_000079.jsonl", "w") as handle:
        episode = 0
        while written < rows:
            success = rng.random() < 0.6
            for step_index in range(turns * len(agents)):
                agent = agents[step_index % len(agents)]
                prompt = _text(rng, 2 * text_chars)
                chosen = rng.randrange(k)
                for branch in range(k):
                    text = _text(rng, rng.randint(text_chars // 2, text_chars))
                    team = float(rng.random() < 0.5)
                    local = -0.5 if rng.random() < 0.1 else 0.0
                    tokens = len(text) // 4
                    handle.write(
                        json.dumps(
                            {
                                "episode_id": f"s79-{episode}",
                                "task_id": rng.randrange(10**6),
                                "agent": agent,
                                "turn": step_index // len(agents),
                                "step": step_index,
                                "branch": branch,
                                "chosen": branch == chosen,
                                "prompt": prompt,
                                "prompt_ids": [],
                                "completion_ids": list(range(tokens)),
                                "logprobs": [-0.5] * tokens,
                                "text": text,
                                "reward_terms": {"team": team, "local": local, "format": local},
                                "rewards": team + local,
                                "anchor": "",
                                "success": success,
                                "infra_error": "",
                            }
                        )
                        + "\n"
                    )
                    written += 1
            episode += 1
    return directory


def measure(report: Path, repeats: int) -> dict[str, float]:
    """Median ready time, load-event time and search time over ``repeats`` fresh tabs."""
    ready, load, search = [], [], []
    with Chromium() as browser:
        for _ in range(repeats):
            started = time.perf_counter()
            page = browser.open(report.as_uri())
            load.append(time.perf_counter() - started)
            page.wait_until("document.body.dataset.ready === '1'", timeout=60)
            ready.append(page.evaluate("window.teamgymReport.ready") / 1000)
            assert not page.console_errors, page.console_errors
            search.append(
                page.evaluate("""(() => {
                const box = document.getElementById('f-search'); box.value = 'assert';
                const t = performance.now(); box.dispatchEvent(new Event('change'));
                return performance.now() - t;
            })()""")
                / 1000
            )
            page.send("Page.close")
    return {"ready": statistics.median(ready), "load": statistics.median(load), "search": statistics.median(search)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--text-chars", type=int, default=1500)
    parser.add_argument("--run", default=None, help="measure this run directory instead of a synthetic one")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(args.run) if args.run else synthetic_run(Path(tmp) / "run", args.rows, args.text_chars)
        batches = sorted((run / "batches").glob("step_*.jsonl"))
        step = int(batches[-1].stem.split("_")[1])
        rows = sum(1 for _ in open(batches[-1]))
        started = time.perf_counter()
        report = write_report(run, Path(tmp) / "report.html", step=step)
        write_seconds = time.perf_counter() - started
        times = measure(report, args.repeats)
        print("| rows | batch file | report | write | ready (page clock) | load event | search |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        print(
            f"| {rows:,} | {batches[-1].stat().st_size / 1e6:.1f} MB | {report.stat().st_size / 1e6:.1f} MB | "
            f"{write_seconds:.1f} s | {times['ready']:.2f} s | {times['load']:.2f} s | {times['search']:.3f} s |"
        )


if __name__ == "__main__":
    main()
