"""examples/plugin_env, the third-party env package: it passes ``teamgym check`` and its own tests, its docs page and
fingerprint are fresh, and once installed it shows in ``teamgym list``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from teamgym import registry
from teamgym.contrib.catalogue import stale_pages
from teamgym.contrib.checks import check
from teamgym.contrib.versions import check_record

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "plugin_env"


@pytest.fixture
def ascend(monkeypatch):
    """ascend-v0 registered for one test, from the example's source folder."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    from teamgym_ascend import register_envs

    register_envs()


def test_it_passes_every_check(ascend):
    report = check("ascend-v0", num_garbage=1000)
    assert report.passed, report.to_text()


def test_its_page_and_fingerprint_are_fresh(ascend):
    assert stale_pages(EXAMPLE / "docs", ["ascend-v0"], index=False, source_root=EXAMPLE) == [], (
        "run `teamgym catalogue ascend-v0 --out docs --write` in examples/plugin_env (ascend-v0 registered)"
    )
    assert check_record(EXAMPLE / "tests" / "fingerprints.json", ["ascend-v0"]) == []


def test_its_own_tests_pass():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLE), str(ROOT)])}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=EXAMPLE,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]


def test_installed_it_shows_in_teamgym_list(tmp_path: Path):
    source = shutil.copytree(EXAMPLE, tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(target), str(source)], check=True, capture_output=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)])}
    listing = subprocess.run([sys.executable, "-m", "teamgym.cli", "list"], env=env, capture_output=True, text=True,
                             timeout=120)
    assert "ascend-v0" in listing.stdout and "player_0, player_1, player_2" in listing.stdout
    checked = subprocess.run([sys.executable, "-m", "teamgym.cli", "check", "ascend-v0", "--garbage", "200"], env=env,
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout
