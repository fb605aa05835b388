"""The public API: result fields, limits, order, validation, determinism and infra failures."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

import teamgym
import teamgym.sandbox as sandbox
from teamgym.errors import InvalidArgumentError, SandboxError
from teamgym.sandbox import STATUSES, ExecResult, Job, Sandbox
from tests.support.venvs import venv_with_these_packages

from .conftest import server_pids, wait_clean


def test_run_python_contract() -> None:
    result = sandbox.run_python("print(input()[::-1])", "abc", timeout=2.0, memory_mb=256)
    assert isinstance(result, ExecResult)
    assert (result.status, result.stdout, result.stderr, result.returncode) == ("ok", "cba\n", "", 0)
    assert 0 < result.duration < 2.0 and result.infra_error is None and result.ok


def test_run_many_keeps_order_and_accepts_jobs_dicts_and_str() -> None:
    jobs = [Job(code="print(1)"), {"code": "print(input())", "stdin": "2"}, "print(3)"] * 20
    results = sandbox.run_many(jobs, workers=2)
    assert [r.stdout for r in results] == ["1\n", "2\n", "3\n"] * 20


def test_statuses_are_documented(box: Sandbox) -> None:
    results = box.run_many(
        ["pass", "1/0", "while True: pass", "bytearray(2**40)", "print('x' * 50)", "import os; os.abort()"],
    )
    assert {r.status for r in results} <= set(STATUSES)
    for status in STATUSES:
        assert f"``{status}``" in sandbox.__doc__


def test_output_limit_field(box: Sandbox) -> None:
    result = box.run_python("print('x' * 50)", output_limit=10)
    assert result.status == "output_limit" and result.stdout == "x" * 10


def test_unicode_round_trip(box: Sandbox) -> None:
    result = box.run_python("print(input().upper())", "héllo wörld ✓")
    assert result.stdout == "HÉLLO WÖRLD ✓\n"


def test_large_stdin(box: Sandbox) -> None:
    data = "1\n" * 300_000
    result = box.run_python("import sys\nprint(sum(map(int, sys.stdin)))", data, timeout=5.0)
    assert result.stdout == "300000\n"


def test_cwd_is_private_and_writable(box: Sandbox) -> None:
    code = "import os\nopen('f', 'w').write('data')\nprint(os.listdir('.'), open('f').read())"
    first, second = box.run_many([code, code])
    assert first.stdout == second.stdout == "['f'] data\n"  # the second job does not see the first's file


_LEAVER = """
import builtins, json, math, os, random, sys, threading, time
open("left.txt", "w").write("x")
os.environ["LEFT"] = "1"
os.environ["HOME"] = "/elsewhere"
os.putenv("LEFT_C", "1")
math.left = builtins.left = json.left = 1
random.seed(0)
sys.modules["left_module"] = math
sys.stdout.write("unflushed")
threading.Thread(target=time.sleep, args=(2,), daemon=False).start()
"""
_LOOKER = """
import builtins, ctypes, json, math, os, random, sys, threading
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
print(json.dumps({
    "files": os.listdir("."),
    "environ": dict(os.environ),
    "c_environ": {k: (libc.getenv(k.encode()) or b"").decode() for k in ("LEFT", "LEFT_C", "HOME", "TMPDIR", "PATH")},
    "globals": [hasattr(m, "left") for m in (math, builtins, json)] + ["left_module" in sys.modules],
    "threads": threading.active_count(),
    "random": random.random(),
}))
"""
_JOB_ENVIRON = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "{cwd}",
    "TMPDIR": "{cwd}",
    "LANG": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONIOENCODING": "utf-8",
}


def test_nothing_a_job_leaves_reaches_the_next_job() -> None:
    """Every job process is a fresh clone of the zygote, which the jobs never touch: what one job leaves behind
    (files, environment, module globals, a running thread, a seeded random, unflushed output) is not in the next one,
    and each starts with exactly the scrubbed environment, in its C ``environ`` too."""
    with Sandbox(workers=1) as box:
        results = box.run_many([_LEAVER, _LOOKER] * 4)
        new_root = box.isolation["mount_ns"]
    for leaver, looker in zip(results[::2], results[1::2], strict=True):
        assert leaver.status == "ok" and leaver.stdout == "unflushed"
        assert looker.status == "ok", looker
        seen = json.loads(looker.stdout)
        if new_root:  # else the working directory is a host folder of the server's
            assert list(seen["environ"].items()) == [(k, v.format(cwd="/job")) for k, v in _JOB_ENVIRON.items()]
            path = _JOB_ENVIRON["PATH"]
            assert seen["c_environ"] == {"LEFT": "", "LEFT_C": "", "HOME": "/job", "TMPDIR": "/job", "PATH": path}
        assert seen["files"] == []
        assert seen["globals"] == [False, False, False, False]
        assert seen["threads"] == 1
    assert len({json.loads(r.stdout)["random"] for r in results[1::2]}) == 4  # reseeded in every job


def test_a_judge_starts_with_its_own_scrubbed_environment() -> None:
    """A judge works in ``/`` (a program in its ``/job``): its environment says so, in order, and nothing else."""
    from teamgym.sandbox import run_tests

    test = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None)\n"
        "libc.getenv.restype = ctypes.c_char_p\n"
        f"assert list(os.environ.items()) == {list(_JOB_ENVIRON.items())!r}".replace("{cwd}", "/") + "\n"
        "assert libc.getenv(b'HOME') == libc.getenv(b'TMPDIR') == b'/'"
    )
    with Sandbox(workers=1) as box:
        if not box.isolation["mount_ns"]:
            pytest.skip("the judge works in / only inside the new root")
        for _ in range(3):  # program and judge processes alternate on one zygote
            verdicts = run_tests("def f():\n    return 1", [test, "assert f() == 1"], kind="assert", sandbox=box)
            assert [v.status for v in verdicts] == ["passed", "passed"], verdicts


def test_same_program_same_result(box: Sandbox) -> None:
    code = "print(set('abcdefgh'), hash('x'))"
    results = box.run_many([code] * 8)
    assert len({r.stdout for r in results}) == 1


def test_isolation_report(box: Sandbox) -> None:
    iso = box.isolation
    assert set(iso) >= {"pid_ns", "mount_ns", "net_ns", "user_ns", "uid_drop", "warning"}
    if os.geteuid() == 0:
        assert iso["uid_drop"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timeout": 0},
        {"timeout": float("nan")},
        {"timeout": -1},
        {"memory_mb": 1},
        {"memory_mb": "512"},
        {"output_limit": 0},
        {"max_processes": True},
    ],
)
def test_bad_limits_are_rejected(kwargs: dict) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        Job(code="pass", **kwargs)
    assert next(iter(kwargs)) in str(info.value)


def test_bad_jobs_are_rejected() -> None:
    with pytest.raises(InvalidArgumentError, match="code"):
        Job.coerce({"stdin": "x"})
    with pytest.raises(InvalidArgumentError, match="unknown job field"):
        Job.coerce({"code": "pass", "timout": 1})
    with pytest.raises(InvalidArgumentError, match="str"):
        Job(code=b"print(1)")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="workers"):
        Sandbox(workers=0)


def test_server_death_is_an_infra_error_then_recovers(box: Sandbox) -> None:
    import threading

    def kill_servers() -> None:
        time.sleep(0.3)
        for pid in server_pids(box):
            os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_servers)
    killer.start()
    result = box.run_python("import time\ntime.sleep(1.5)", timeout=3.0)
    killer.join()
    assert result.infra_error is not None and "died" in result.infra_error
    assert box.run_python("print('back')").stdout == "back\n"
    assert wait_clean(box) == ([], [])


def test_closed_sandbox_raises() -> None:
    box = Sandbox(workers=1)
    assert box.run_python("print(1)").stdout == "1\n"
    bases = [s.base for s in box._servers if s is not None]
    box.close()
    assert not any(os.path.exists(b) for b in bases)
    with pytest.raises(SandboxError, match="closed"):
        box.run_python("print(1)")


def test_dirs_of_killed_hosts_are_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import tempfile

    from teamgym.sandbox import pool

    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid is now free: a host that was SIGKILLed before cleaning up
    stale = os.path.join(tempfile.gettempdir(), f"{pool._DIR_PREFIX}{dead.pid}-0-abc")
    os.makedirs(os.path.join(stale, "job"))
    monkeypatch.setattr(pool, "_stale_checked", False)
    with Sandbox(workers=1) as box:
        box.run_python("pass")
    assert not os.path.exists(stale)


def test_packages_asked_for_are_the_only_third_party_code() -> None:
    from teamgym.errors import InvalidArgumentError
    from teamgym.sandbox import package_paths

    probe = (
        "import importlib.util, os\n"
        "print([n for n in ('sympy', 'mpmath', 'numpy', 'pytest', 'teamgym') if importlib.util.find_spec(n)])\n"
        "import sympy\n"
        "print(sorted(os.listdir(os.path.join(os.path.dirname(os.path.dirname(sympy.__file__)), '__pycache__'))))"
    )
    with Sandbox(workers=1, packages=("sympy", "mpmath")) as box:
        result = box.run_python(probe, timeout=10.0)
        if not box.isolation["new_root"]:
            pytest.skip("no mount namespace: jobs see every installed package")
    found, pycache = result.stdout.splitlines()
    assert eval(found) == ["sympy", "mpmath"]
    assert all(name.startswith("isympy.") for name in eval(pycache))  # the site folder's __pycache__: sympy's only
    assert all(os.path.exists(path) for path in package_paths("sympy"))
    with pytest.raises(InvalidArgumentError, match="not an installed distribution"):
        package_paths("no-such-distribution-xyz")


@pytest.mark.parametrize("where", ["tmp", "home"])
def test_a_venv_stays_out_of_the_jail(tmp_path, where):
    """Run from a virtual environment (under /tmp, or a folder like a home's), the sandbox keeps full isolation and
    its jobs see neither the venv nor its parent folders: servers run the venv's base interpreter."""
    import subprocess
    import tempfile

    parent = Path(tempfile.mkdtemp(dir="/tmp" if where == "tmp" else "/var/tmp", prefix="teamgym-venv-probe-"))
    try:
        venv = parent / "venv"
        venv_with_these_packages(venv)  # teamgym's dependencies and mpmath
        probe = (
            "import json, teamgym.sandbox as s\n"
            "box = s.Sandbox(1, packages=('mpmath',))\n"
            "code = ('import os, mpmath; print(os.listdir(\"/tmp\"), '\n"
            "        'os.listdir(\"/var/tmp\") if os.path.isdir(\"/var/tmp\") else [], mpmath.mpf(2) ** 2)')\n"
            "r = box.run_python(code)\n"
            "print(json.dumps({'stdout': r.stdout, 'stderr': r.stderr[-500:], 'isolation': box.isolation}))\n"
            "box.close()\n"
        )
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["PYTHONPATH"] = str(Path(teamgym.__file__).parent.parent)
        out = subprocess.run([str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True,
                             env=env, timeout=120, check=True)
        report = json.loads(out.stdout.strip().splitlines()[-1])
        isolation = report["isolation"]
        assert isolation["new_root"] and isolation["mount_ns"] and isolation["seccomp"], report
        assert report["stdout"].strip() == "[] [] 4.0", report
    finally:
        shutil.rmtree(parent, ignore_errors=True)
