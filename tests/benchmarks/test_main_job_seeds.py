"""benchmarks/main_job_seeds.py: the seeds' table, and RL from the warm starts an earlier call saved."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "main_job_seeds.py"
TINY = ["--sft-steps", "4", "--sft-tasks", "8", "--eval-tasks", "4", "--eval-every", "0", "--tasks-per-step", "2",
        "--group-size", "2", "--n-embd", "32", "--n-head", "2", "--n-layer", "1"]


def _script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_rl_from_saved_warm_starts_reads_as_the_full_run(tmp_path):
    """A full run of one seed and the same RL from its saved warm start give the same table, and a missing warm
    start is refused naming the command that makes it."""
    full = _script("--seeds", "1", "--output-dir", str(tmp_path / "full"), "--", *TINY, "--steps", "2",
                   "--set", "keep_checkpoints=1")  # keeps step 2 only, as a long run keeps its last ones
    assert full.returncode == 0, full.stderr
    warm = _script("--seeds", "1", "--output-dir", str(tmp_path / "ws"), "--", *TINY, "--steps", "0")
    assert warm.returncode == 0, warm.stderr
    rl = _script("--seeds", "1", "--output-dir", str(tmp_path / "rl"), "--warm-starts", str(tmp_path / "ws"), "--",
                 *TINY, "--steps", "2")
    assert rl.returncode == 0, rl.stderr
    assert "RL from saved warm starts" in rl.stdout
    assert "warm start from" in rl.stderr and "SFT steps on" not in rl.stderr  # loaded, not trained again
    table = [line for line in full.stdout.splitlines() if line.startswith("|")]
    assert table == [line for line in rl.stdout.splitlines() if line.startswith("|")] and len(table) == 8
    summary = json.loads((tmp_path / "rl" / "seed_1" / "summary.json").read_text())
    assert summary["warm_start_from"] == str(tmp_path / "ws" / "seed_1") and summary["steps"] == 2

    refused = _script("--seeds", "1", "2", "--warm-starts", str(tmp_path / "ws"))
    assert refused.returncode != 0 and "seed(s) [2]" in refused.stderr and "-- --steps 0" in refused.stderr
    # a full run's folder keeps its last checkpoints only, not the warm start: refused before any run
    refused = _script("--seeds", "1", "--warm-starts", str(tmp_path / "full"))
    assert refused.returncode != 0 and "no saved warm start for seed(s) [1]" in refused.stderr
