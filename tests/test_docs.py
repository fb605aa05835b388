"""What README.md and docs/training.md say about the main job and the install matches the code."""

from __future__ import annotations

import re
from pathlib import Path

from teamgym.train.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
TRAINING = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")


def test_the_held_out_task_count_is_the_default():
    for name, text in (("README.md", README), ("docs/training.md", TRAINING)):
        counts = {int(n) for n in re.findall(r"(\d+) (?:held-out )?tasks (?:with ids|never)", text)}
        assert counts == {TrainConfig.eval_tasks}, f"{name} states {counts} held-out tasks"


def test_the_readme_says_which_torch_pip_gets_and_how_to_get_the_cpu_build():
    setup = README[README.index("## Set up"):README.index("### The main job")]
    assert "CPU build of torch" not in setup.split("```")[0], "the plain install line is not the CPU build everywhere"
    assert "--index-url https://download.pytorch.org/whl/cpu" in setup
    assert "CUDA build" in setup


def test_every_time_the_readme_states_comes_with_its_host_and_command():
    setup = README[README.index("## Set up"):README.index("### The main job")]
    assert re.search(r"\b\d+ (?:s|min)\b", setup), "the setup states no measured time"
    for needed in ("2 CPU cores", "time teamgym train", "python -m pytest", "Python 3.", "torch 2."):
        assert needed in setup, needed
    assert "1-3 minutes" not in README
