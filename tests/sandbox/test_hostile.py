"""Hostile programs: each ends with a documented status within timeout + 2 s and leaves nothing behind.

The pool runs inside an outer cgroup guard (see conftest.OuterGuard) so that a broken sandbox cannot take
the machine down with the bombs below.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from teamgym.sandbox import Sandbox, run_tests

from .conftest import wait_clean

TIMEOUT = 1.0
CANARY_DIR = f"/tmp/teamgym-sandbox-canary-{uuid.uuid4().hex[:8]}"

HOSTILE: dict[str, tuple[str, set[str]]] = {
    "fork_bomb": (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
        {"timeout"},
    ),
    "memory_bomb": ("x = []\nwhile True:\n    x.append(bytearray(10**7))", {"memory"}),
    "alloc_20gb": ("x = bytearray(20 * 1024**3)", {"memory"}),
    "infinite_loop": ("while True:\n    pass", {"timeout"}),
    "sleep_past_deadline": ("import time\ntime.sleep(60)", {"timeout"}),
    "sigterm_ignored": (
        "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass",
        {"timeout"},
    ),
    "spinning_threads": (
        "import threading\ndef spin():\n    while True:\n        pass\n"
        "for _ in range(8):\n    threading.Thread(target=spin, daemon=True).start()\nspin()",
        {"timeout"},
    ),
    "daemonized_grandchild": (
        textwrap.dedent(f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(1.0)
                for path in ("{CANARY_DIR}/daemon", "late-file"):
                    try:
                        open(path, "w").write("escaped")
                    except OSError:
                        pass
                os._exit(0)
            os._exit(0)
        print("parent done")
        """),
        {"ok"},
    ),
    "orphaned_popen": (
        "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "print('bye')",
        {"ok"},
    ),
    "disk_10gb": (
        "with open('big', 'wb') as f:\n    for _ in range(10240):\n        f.write(b'x' * 2**20)",
        {"error"},
    ),
    "write_outside": (
        textwrap.dedent(f"""
        import os
        written = []
        for path in ("{CANARY_DIR}/x", "/tmp/teamgym-escape", "/dev/shm/teamgym-escape", "/var/tmp/x",
                     "/root/x", "/home/x", "/etc/teamgym-escape", "../escape"):
            try:
                with open(path, "w") as fh:
                    fh.write("escaped")
                written.append(path)
            except OSError:
                pass
        print(written)
        """),
        {"ok"},
    ),
    "kill_minus_one": (
        "import os, signal, subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "os.kill(-1, signal.SIGKILL)\nprint('survived')",
        {"ok", "killed"},
    ),
    "kill_parent": ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)", {"killed", "error", "ok"}),
    "ctypes_segfault": ("import ctypes\nctypes.string_at(0)", {"killed"}),
    "deep_recursion": ("def f(n):\n    return f(n + 1)\nf(0)", {"error"}),
    "deep_recursion_unlimited": (
        "import sys\nsys.setrecursionlimit(10**7)\ndef f(n):\n    return f(n + 1)\nf(0)",
        {"killed", "error", "memory", "timeout"},
    ),
    "stdout_100mb": (
        "import sys\nchunk = 'x' * 2**20\nfor _ in range(100):\n    sys.stdout.write(chunk)",
        {"output_limit"},
    ),
    "stderr_100mb": (
        "import sys\nchunk = 'x' * 2**20\nfor _ in range(100):\n    sys.stderr.write(chunk)",
        {"output_limit"},
    ),
    "close_stdout": ("import os, time\nos.close(1)\nos.close(2)\ntime.sleep(0.1)", {"ok"}),
    "close_all_fds": ("import os\nos.closerange(0, 4096)\nwhile True:\n    pass", {"timeout"}),
    "exit_code_3": ("import sys\nsys.exit(3)", {"error"}),
    "exit_code_255": ("import os\nos._exit(255)", {"error"}),
    "exit_message": ("raise SystemExit('bad things')", {"error"}),
    "syntax_error": ("def f(:\n    pass", {"error"}),
    "binary_garbage": ("import sys\nsys.stdout.buffer.write(bytes(range(256)) * 64)", {"ok"}),
    "stop_self": (
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGSTOP)\ntime.sleep(60)",
        {"timeout"},
    ),
    "fd_exhaustion": ("fs = []\nwhile True:\n    fs.append(open('/dev/null'))", {"error"}),
    "abort": ("import os\nos.abort()", {"killed"}),
}
# Touching 512 MB of pages takes ~0.3 s alone, more on a loaded machine: give it room to hit the limit.
SLOW_TO_FAIL = {"memory_bomb": 5.0}


@pytest.fixture(scope="module", autouse=True)
def canary_dir():
    os.makedirs(CANARY_DIR, exist_ok=True)
    os.chmod(CANARY_DIR, 0o777)  # writable by anyone: only the sandbox's own walls can stop the writes
    yield CANARY_DIR
    for name in os.listdir(CANARY_DIR):
        os.unlink(os.path.join(CANARY_DIR, name))
    os.rmdir(CANARY_DIR)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_program_is_contained(box: Sandbox, name: str) -> None:
    code, statuses = HOSTILE[name]
    start = time.monotonic()
    timeout = SLOW_TO_FAIL.get(name, TIMEOUT)
    result = box.run_python(code, timeout=timeout)
    elapsed = time.monotonic() - start
    assert result.status in statuses, (result.status, result.stderr[-500:])
    assert result.infra_error is None
    assert elapsed < timeout + 2.0
    assert len(result.stdout) <= 1_000_000 * 3 and len(result.stderr) <= 1_000_000 * 3
    processes, files = wait_clean(box)
    assert processes == [] and files == []


def test_daemon_never_writes_later(box: Sandbox) -> None:
    box.run_python(HOSTILE["daemonized_grandchild"][0], timeout=TIMEOUT)
    time.sleep(1.5)  # past the daemon's sleep
    assert os.listdir(CANARY_DIR) == []
    assert wait_clean(box) == ([], [])


def test_nothing_written_outside(box: Sandbox) -> None:
    result = box.run_python(HOSTILE["write_outside"][0], timeout=TIMEOUT)
    # /tmp and /dev/shm inside a job are its own working directory (they count against its disk and memory).
    assert set(eval(result.stdout)) <= {"/tmp/teamgym-escape", "/dev/shm/teamgym-escape"}
    assert os.listdir(CANARY_DIR) == []
    for path in ("/tmp/teamgym-escape", "/dev/shm/teamgym-escape", "/etc/teamgym-escape"):
        assert not os.path.exists(path)


def test_output_capped_at_limit(box: Sandbox) -> None:
    result = box.run_python(HOSTILE["stdout_100mb"][0], timeout=5.0, output_limit=1000)
    assert result.status == "output_limit" and len(result.stdout) == 1000


def test_binary_garbage_is_replaced(box: Sandbox) -> None:
    result = box.run_python(HOSTILE["binary_garbage"][0])
    assert result.status == "ok" and "\ufffd" in result.stdout


def test_odd_exit_codes(box: Sandbox) -> None:
    assert box.run_python(HOSTILE["exit_code_3"][0]).returncode == 3
    assert box.run_python(HOSTILE["exit_code_255"][0]).returncode == 255
    result = box.run_python(HOSTILE["exit_message"][0])
    assert result.returncode == 1 and "bad things" in result.stderr
    assert "SyntaxError" in box.run_python(HOSTILE["syntax_error"][0]).stderr


def test_no_host_environment(box: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEAMGYM_TEST_SECRET", "hunter2-secret")
    code = textwrap.dedent(f"""
        import os
        print(dict(os.environ))
        for pid in (1, {os.getpid()}):
            try:
                print(open(f"/proc/{{pid}}/environ", "rb").read())
            except OSError as exc:
                print(exc)
        """)
    result = box.run_python(code)
    assert result.status == "ok"
    assert "hunter2" not in result.stdout
    assert "TEAMGYM_TEST_SECRET" not in result.stdout


def test_no_network_to_loopback_listener(box: Sandbox) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        code = (
            f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=0.5)\n"
            "print('connected')"
        )
        result = box.run_python(code)
        assert result.status == "error" and "connected" not in result.stdout
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()


def test_cannot_signal_the_host(box: Sandbox) -> None:
    code = (
        f"import os, signal\nos.kill({os.getpid()}, signal.SIGKILL)\n"
        f"os.kill(-{os.getpgid(0)}, signal.SIGKILL)"
    )
    result = box.run_python(code)
    assert result.status == "error"  # ProcessLookupError: the host is not in the job's PID namespace
    assert all(os.kill(pid, 0) is None for pid in [os.getpid()])


def test_host_files_are_out_of_sight(box: Sandbox) -> None:
    secret = f"/tmp/teamgym-dataset-{uuid.uuid4().hex[:8]}"
    os.makedirs(secret)
    with open(os.path.join(secret, "expected.txt"), "w") as fh:
        fh.write("the expected output")
    os.chmod(secret, 0o755)
    try:
        result = box.run_python(f"import os\nprint(os.path.exists({secret!r}))")
        if not box.isolation["new_root"]:
            pytest.skip("no mount namespace: jobs see the host's files")
        assert result.stdout.strip() == "False"
    finally:
        os.unlink(os.path.join(secret, "expected.txt"))
        os.rmdir(secret)


def test_next_100_jobs_right_and_fast(box: Sandbox) -> None:
    start = time.monotonic()
    results = box.run_many([{"code": "print(int(input()) * 2)", "stdin": str(i)} for i in range(100)])
    elapsed = time.monotonic() - start
    assert [r.stdout for r in results] == [f"{2 * i}\n" for i in range(100)]
    assert all(r.status == "ok" for r in results)
    assert elapsed < 5.0  # ~0.2 s normally; generous for a loaded shared machine
    assert wait_clean(box) == ([], [])


LEAVE_BEHIND = {
    "deep_tree": "import os\nfor _ in range(3000):\n    os.mkdir('d')\n    os.chdir('d')\nopen('f', 'w').write('x')\n",
    "long_paths": "import os\nfor _ in range(40):\n    os.mkdir('n' * 200)\n    os.chdir('n' * 200)\n"
                  "open('secret', 'w').write('left by the last job')\n",
    "locked_folders": "import os\nos.makedirs('a/b')\nopen('a/b/f', 'w').write('x')\nos.chmod('a/b', 0)\n"
                      "os.chmod('a', 0)\nos.symlink('/', 'root')\n",
    "locked_working_directory": "import os\nos.makedirs('a/b')\nos.chmod('.', 0)\n",
    "names_the_cleanup_uses": "import os\nfor n in range(8):\n    os.makedirs(f'.lifted-{n}/c/d')\n"
                              "    open(f'.lifted-{n}/c/d/secret', 'w').write('x')\n",
}


@pytest.mark.parametrize("name", sorted(LEAVE_BEHIND))
def test_what_a_job_leaves_is_its_own_and_gone_before_the_next(name: str) -> None:
    """A folder tree deeper than a recursive walk's stack (it killed the server: the job came back as an infra error,
    which a trainer drops with its penalty), paths longer than PATH_MAX (they outlived the job), unreadable folders."""
    with Sandbox(workers=1) as one:
        result = one.run_python(LEAVE_BEHIND[name] + "print('done')", timeout=5.0)
        assert (result.status, result.stdout, result.infra_error) == ("ok", "done\n", None)
        after = one.run_python("import os\nprint(sorted(os.listdir('.')))")
        assert (after.stdout, after.infra_error) == ("[]\n", None)


@pytest.mark.parametrize("name", sorted(LEAVE_BEHIND))
def test_the_host_removes_what_a_killed_server_left(name: str) -> None:
    """A server killed in the middle of a job never empties its folder (in degraded mode, where jobs write into it
    directly): the host removes it on close. ``shutil.rmtree`` recursed there, and a tree 3,000 folders deep raised
    ``RecursionError`` out of ``close()``."""
    box = Sandbox(workers=1)
    box.run_python("pass")
    base = box._servers[0].base
    os.mkdir(os.path.join(base, "left"))
    made = subprocess.run([sys.executable, "-c", LEAVE_BEHIND[name]], cwd=os.path.join(base, "left"), timeout=60)
    assert made.returncode == 0
    box.close()
    assert not os.path.exists(base)


def test_an_answer_nested_too_deeply_is_the_programs_failure() -> None:
    """A program that speaks the call protocol itself (fds 5 and 6) answers each call one level deeper, through the
    depth where the server's decoder still reads an answer and its encoder did not (that killed the server, and the
    job came back as an infra error)."""
    program = textwrap.dedent(
        """
        import json, os, struct
        def send(data):
            os.write(6, struct.pack(">I", len(data)) + data)
        send(b'{"hello":"ok"}')
        pending = b""
        def receive():
            global pending
            while True:
                if len(pending) >= 4:
                    size = struct.unpack(">I", pending[:4])[0]
                    if len(pending) >= 4 + size:
                        message, pending = json.loads(pending[4:4 + size]), pending[4 + size:]
                        return message
                chunk = os.read(5, 1 << 20)
                if not chunk:
                    raise SystemExit
                pending += chunk
        depth = 900
        while True:
            seq = receive()["seq"]
            send(b'{"seq":%d,"value":' % seq + b"[" * depth + b"]" * depth + b"}")
            depth += 1
        """
    )
    tests = [f"assert f({i}) == 0" for i in range(200)]
    with Sandbox(workers=1) as one:
        verdicts = run_tests(program, tests, kind="assert", entry_point="f", timeout=5.0, sandbox=one)
        assert all(v.infra_error is None and not v.passed for v in verdicts), [v for v in verdicts if v.infra_error]
        assert one.run_python("print(1)").stdout == "1\n"


def test_tests_that_flood_the_judges_records_cost_the_host_little() -> None:
    """Test code runs in the judge and can write to its record channel: 8 MiB of blank lines per judge took the host
    four minutes to parse one line at a time (and 64 MiB, the channel's cap, would have taken half an hour)."""
    from teamgym.sandbox._server import _record_lines

    text = "\n\n  \n" + '{"i":0}\n' + "\n" * 10 + " x \n\n" + '{"i":1}'
    assert _record_lines(text, 10) == [line for line in text.splitlines() if line.strip()]
    assert _record_lines(text, 2) == ['{"i":0}', " x "]
    tests = ["import os\nassert os.write(3, b'\\n' * (8 << 20) + b' ' * (8 << 20)) and False", "assert f(2) == 4"]
    start = time.monotonic()
    with Sandbox(workers=1) as one:
        verdicts = run_tests("def f(x):\n    return x * 2\n", tests, kind="assert", entry_point="f", sandbox=one)
    assert [v.passed for v in verdicts] == [False, True]
    assert time.monotonic() - start < 30.0  # about a second; minutes before


def test_program_text_in_a_verdict_always_encodes_as_utf8(box: Sandbox) -> None:
    """An exception message can carry a lone surrogate through the records' JSON; verdicts end up in prompts."""
    program = "def f(x):\n    raise ValueError('\\ud800 boom')\n"
    for tests in (["assert f(1) == 2"], ["import sys\nassert f(1) == 2, 'x'"]):
        verdict = run_tests(program, tests, kind="assert", entry_point="f", sandbox=box)[0]
        assert not verdict.passed and "boom" in verdict.error
        verdict.error.encode("utf-8")
        verdict.actual.encode("utf-8")
