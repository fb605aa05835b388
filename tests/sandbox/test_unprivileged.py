"""As root, re-run the hostile and harness tests as an unprivileged user (uid 65534) in a throwaway mount
namespace, so the sandbox is checked both ways in one ``pytest`` run (CI runs as root)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from .conftest import OuterGuard

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _reach_python_script() -> str:
    """Shell lines that make the interpreter reachable for uid 65534 when it lives under a private folder
    (pyenv in /root, mode 700): inside the private mount namespace only, that folder is replaced by a
    world-readable tmpfs holding bind mounts of the interpreter's trees (the venv's and its base
    interpreter's, when they differ). The host is not changed."""
    hidden: dict[str, list[str]] = {}  # private folder -> the trees below it to bring back
    for prefix in sorted({os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}):
        parts = prefix.strip("/").split("/")
        for depth in range(1, len(parts)):
            folder = "/" + "/".join(parts[:depth])
            if not os.stat(folder).st_mode & 0o001:
                child = folder + "/" + parts[depth]
                if child not in hidden.setdefault(folder, []):
                    hidden[folder].append(child)
                break
    lines = []
    for folder, children in hidden.items():
        stages = [f"/tmp/.tg-stage-$$-{i}" for i in range(len(children))]
        lines += [f"mkdir -p {stage} && mount --bind {child} {stage} && " for stage, child in zip(stages, children)]
        lines.append(f"mount -t tmpfs -o mode=0755 tmpfs {folder} && ")
        lines += [f"mkdir -p {child} && mount --bind {stage} {child} && " for stage, child in zip(stages, children)]
    return "".join(lines)


@pytest.mark.skipif(os.geteuid() != 0, reason="already unprivileged: the suite itself is the check")
@pytest.mark.skipif(
    not (shutil.which("setpriv") and shutil.which("unshare")), reason="needs setpriv and unshare"
)
def test_suite_passes_as_unprivileged_user(guard: OuterGuard) -> None:
    home = tempfile.mkdtemp(prefix="teamgym-unpriv-")
    os.chmod(home, 0o777)
    adopt = "".join(f"echo $$ > {d}/cgroup.procs && " for d in guard.dirs)  # bombs stay inside the guard
    inner = (
        f"cd {ROOT} && exec setpriv --reuid=65534 --regid=65534 --clear-groups "
        f"env -i PATH=/usr/bin:/bin HOME={home} TMPDIR={home} {sys.executable} -m pytest -q -x "
        "-p no:cacheprovider tests/sandbox/test_hostile.py tests/sandbox/test_harness.py tests/sandbox/test_corpus.py "
        "tests/sandbox/test_api.py"
    )
    script = adopt + _reach_python_script() + inner
    try:
        done = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "bash", "-c", script],
            capture_output=True,
            text=True,
            timeout=240,
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "failed" not in done.stdout
