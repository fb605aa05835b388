"""``teamgym new-env``: the scaffold passes ``teamgym check``, ruff and its own tests as soon as it is written."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from teamgym import cli
from teamgym.contrib.scaffold import EnvNames, new_env_package
from teamgym.errors import InvalidArgumentError
from tests.support.venvs import venv_with_these_packages

ROOT = Path(__file__).resolve().parents[2]
RUFF = shutil.which("ruff")


def _run(command: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


def _offline_build() -> list[str]:
    """Build with this interpreter's setuptools when it can build editable installs; else pip fetches one."""
    try:
        import setuptools
    except ImportError:
        return []
    return ["--no-build-isolation"] if int(setuptools.__version__.split(".")[0]) >= 68 else []


@pytest.mark.parametrize(("name", "roles", "match"), [
    ("My-Game", ("a",), "lowercase Python identifier"),
    ("class", ("a",), "lowercase Python identifier"),
    ("x" * 31, ("a",), "at most 30"),
    ("discussion", ("a",), "already registered.*discussion-v2 beside it"),
    ("my_game", (), "--roles"),
    ("my_game", ("scout", "scout"), "distinct"),
    ("my_game", ("Scout",), "lowercase identifiers"),
])
def test_bad_names_and_roles_say_what_is_expected(name, roles, match):
    with pytest.raises(InvalidArgumentError, match=match):
        EnvNames(name, roles)


def test_a_package_needs_a_new_or_empty_folder(tmp_path: Path, capsys):
    (tmp_path / "taken.txt").write_text("x")
    assert cli.main(["new-env", "my_game", "--package", str(tmp_path)]) == 2
    assert "expected a new or empty folder" in capsys.readouterr().err


def test_a_plugin_package_passes_check_ruff_and_its_own_tests(tmp_path: Path):
    directory = tmp_path / "teamgym-my-game"
    written = new_env_package(EnvNames("my_game", ("scout", "solver", "judge")), directory)
    names = {path.relative_to(directory).as_posix() for path in written}
    assert {"pyproject.toml", "README.md", "teamgym_my_game/env.py", "teamgym_my_game/prompts.py",
            "teamgym_my_game/rewards.py", "teamgym_my_game/data.py", "teamgym_my_game/policies.py",
            "tests/test_env.py", "docs/my_game-v0.md", "tests/fingerprints.json"} <= names
    assert '[project.entry-points."teamgym.envs"]\nmy_game = "teamgym_my_game:register_envs"' in (
        directory / "pyproject.toml").read_text()
    page = (directory / "docs" / "my_game-v0.md").read_text()
    assert "| `correct` | acting |" in page and "| `judge` | `oracle`, `random` |" in page
    path = os.pathsep.join([str(directory), str(ROOT)])
    check = _run([sys.executable, "-m", "teamgym.cli", "check", "teamgym_my_game.env:MyGameEnv"], directory,
                 PYTHONPATH=path)
    assert "10 checks: all passed" in check.stdout
    tests = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], directory,
                 PYTHONPATH=path)
    assert "8 passed" in tests.stdout
    if RUFF:
        _run([RUFF, "check", "--no-cache", "."], directory)


@pytest.mark.skipif(RUFF is None, reason="needs ruff (the dev extra)")
def test_the_longest_names_and_many_roles_stay_within_the_line_length(tmp_path: Path):
    roles = tuple(f"{'r' * 28}_{i}" for i in range(6))
    new_env_package(EnvNames("n" * 30, roles), tmp_path / "long")
    _run([RUFF, "check", "--no-cache", "."], tmp_path / "long")


def test_a_family_in_a_checkout_is_registered_documented_and_fingerprinted(tmp_path: Path):
    checkout = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", ".*")
    for part in ("teamgym", "tests", "docs"):
        shutil.copytree(ROOT / part, checkout / part, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", checkout)
    teamgym = [sys.executable, "-m", "teamgym.cli"]
    _run([*teamgym, "new-env", "my_game", "--roles", "scout,solver"], checkout, PYTHONPATH="")
    assert 'register("my_game-v0", "teamgym.envs.my_game.env:MyGameEnv")' in (
        checkout / "teamgym" / "envs" / "__init__.py").read_text()
    assert "[my_game-v0](my_game-v0.md)" in (checkout / "docs" / "envs" / "README.md").read_text()
    assert "10 checks: all passed" in _run([*teamgym, "check", "my_game-v0"], checkout, PYTHONPATH="").stdout
    _run([*teamgym, "catalogue"], checkout, PYTHONPATH="")
    _run([*teamgym, "versions", "my_game-v0"], checkout, PYTHONPATH="")
    _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/envs/my_game"], checkout,
         PYTHONPATH="")
    if RUFF:
        _run([RUFF, "check", "--no-cache", "teamgym/envs/my_game", "tests/envs/my_game"], checkout)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_in_a_fresh_venv_new_env_install_and_check_exit_0(tmp_path: Path):
    """The issue's "done when": ``teamgym new-env my_game --package DIR && pip install -e DIR && teamgym check``."""
    venv = tmp_path / "venv"
    # Without a pip of its own, the venv uses this process's pip and setuptools (a venv's bundled setuptools may be
    # too old to build editable installs), seen through a .pth (`--system-site-packages` would give the base
    # interpreter's, bare on a fresh machine); packages still go into the venv.
    venv_with_these_packages(venv)
    bin_dir = venv / "bin"
    pip = [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", *_offline_build()]
    _run([*pip, "--no-deps", "-e", str(ROOT)], tmp_path)  # this checkout's teamgym, whatever else is installed
    directory = tmp_path / "my-game"
    _run([str(bin_dir / "teamgym"), "new-env", "my_game", "--package", str(directory)], tmp_path)
    _run([*pip, "-e", str(directory)], tmp_path)
    assert "my_game-v0" in _run([str(bin_dir / "teamgym"), "list"], tmp_path).stdout
    _run([str(bin_dir / "teamgym"), "check", "my_game-v0"], tmp_path)
    _run([str(bin_dir / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(directory / "tests")],
         tmp_path)
