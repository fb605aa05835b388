"""Sandbox throughput: teamgym's warm fork servers against the two usual ways of running model code.

    python benchmarks/sandbox_throughput.py            # defaults: 400 jobs per cell, workers 2 and 16
    python benchmarks/sandbox_throughput.py --jobs 1000 --workers 2 4 16
    python benchmarks/sandbox_throughput.py --breakdown --runners ac  # where a job's CPU goes, per kind of process

Side by side, in one run, for a trivial program and a HumanEval-style check (a function and 8 asserts):

* (a) ``teamgym.sandbox``: full isolation (PID/mount/IPC namespaces per job, net + read-only mounts per
  server, rlimits, uid drop as root, tmpfs cwd, output cap).
* (b) a fresh ``python`` subprocess per job that sets its own rlimits before running the code (the
  LiveCodeBench / PettingLLMs pattern), new session, ``workers`` threads.
* (c) a bare fork per job from a warm worker that ``exec``s the code, no isolation and no limits (the CURE
  pattern; the speed of light for any forking design), ``workers`` processes.

Reported: jobs/s (``workers`` in parallel), CPU per job during that run (ms; (a): servers, zygotes, job processes
and the host's threads, (c): workers and their job forks, both with the benchmark process's own CPU; not for (b)),
p50/p99 latency of one job alone on an idle pool, peak memory (PSS of the benchmark process and all its descendants,
sampled every 20 ms during a separate, untimed pass of 200 of the jobs: the sampler is out of the timed pass), and the
ratios a/b and a/c.
Targets: a >= 3x b and a >= 0.8x c.

Every pool of (a) is checked after its timed jobs: each server reports full isolation, and probe jobs on the same
servers see it from inside (PID 1 of their namespace, a dropped uid as root, no /proc and no checkout, no network,
seccomp refusing ``memfd_create``). A pool without it fails the run: (a)'s numbers are for the jail, never without.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

# The library PYTHONPATH names (benchmarks/revisions.py runs this script against a baseline that way), else this
# checkout's, ahead of any installed teamgym.
if not any(os.path.isdir(os.path.join(p, "teamgym")) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from teamgym.sandbox import Sandbox, run_matrix  # noqa: E402

TRIVIAL = ("print(sum(map(int, input().split())))", "1 2", "3")
HUMANEVAL = (
    """
def has_close_elements(numbers, threshold):
    for i, a in enumerate(numbers):
        for j, b in enumerate(numbers):
            if i != j and abs(a - b) < threshold:
                return True
    return False

assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True
assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False
assert has_close_elements([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == True
assert has_close_elements([1.0, 2.0, 5.9, 4.0, 5.0], 0.8) == False
assert has_close_elements([1.0, 2.0, 3.0, 4.0, 5.0, 2.0], 0.1) == True
assert has_close_elements([1.1, 2.2, 3.1, 4.1, 5.1], 1.0) == True
assert has_close_elements([1.1, 2.2, 3.1, 4.1, 5.1], 0.5) == False
assert has_close_elements([], 0.5) == False
print("ok")
""",
    "",
    "ok",
)
TIMEOUT = 5.0
# What a job sees of its jail; printed as JSON by each probe job (see _check_isolation).
_PROBE = f"CHECKOUT = {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))!r}\n" + """
import errno, json, os, socket
facts = {"pid": os.getpid(), "uid": os.getuid(), "proc": os.path.exists("/proc"), "checkout": os.path.exists(CHECKOUT)}
try:
    os.memfd_create("probe")
    facts["memfd"] = "allowed"
except OSError as exc:
    facts["memfd"] = errno.errorcode.get(exc.errno, str(exc.errno))
try:
    socket.create_connection(("127.0.0.1", 9), timeout=1).close()
    facts["net"] = "connected"
except OSError as exc:
    facts["net"] = errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno else type(exc).__name__
print(json.dumps(facts))
"""


# (b) fresh interpreter per job, with rlimits --------------------------------------------------------------
# rlimits are set by the fresh interpreter itself, as LiveCodeBench's reliability_guard does (preexec_fn is
# unsafe in a threaded parent).
_GUARD = (
    "import resource as r\n"
    "for k, v in ((r.RLIMIT_AS, 512 << 20), (r.RLIMIT_CPU, 6), (r.RLIMIT_FSIZE, 16 << 20)):\n"
    "    r.setrlimit(k, (v, v))\n"
    "exec(compile(__import__('sys').argv[1], 'solution.py', 'exec'), {'__name__': '__main__'})\n"
)


def _fresh(code: str, stdin: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _GUARD, code],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        start_new_session=True,
    )
    return done.stdout


# (c) bare fork + exec(code) from a warm worker, no isolation ------------------------------------------------
def _bare_job(code: str, stdin: str) -> str:
    out_r, out_w = os.pipe()
    in_r, in_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(in_w)
        os.close(out_r)
        os.dup2(in_r, 0)
        os.dup2(out_w, 1)
        code_ = 0
        try:
            sys.stdin = open(0, closefd=False)
            sys.stdout = open(1, "w", closefd=False)
            exec(compile(code, "solution.py", "exec"), {"__name__": "__main__"})
            sys.stdout.flush()
        except BaseException:
            code_ = 1
        finally:
            os._exit(code_)
    os.close(out_w)
    os.close(in_r)
    os.write(in_w, stdin.encode())
    os.close(in_w)
    chunks = []
    while chunk := os.read(out_r, 65536):
        chunks.append(chunk)
    os.close(out_r)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()


def _bare_pool(jobs: list[tuple[str, str]], workers: int, usage: list | None = None) -> list[str]:
    """Static split over ``workers`` forked processes, each forking per job. With ``usage``, each worker's own
    ``[CPU s, minor faults]`` and its job forks' are appended to it."""
    readers = []
    for w in range(workers):
        r, wfd = os.pipe()
        if os.fork() == 0:
            os.close(r)
            outs = [_bare_job(c, s) for c, s in jobs[w::workers]]
            own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
            counts = [[u.ru_utime + u.ru_stime, u.ru_minflt] for u in (own, kids)]
            os.write(wfd, json.dumps({"outs": outs, "usage": counts}).encode())
            os._exit(0)
        os.close(wfd)
        readers.append(r)
    results: list[str] = [""] * len(jobs)
    for w, r in enumerate(readers):
        data = b""
        while chunk := os.read(r, 1 << 20):
            data += chunk
        os.close(r)
        report = json.loads(data)
        results[w::workers] = report["outs"]
        if usage is not None:
            usage.append(report["usage"])
    for _ in readers:
        os.wait()
    return results


# measurement ---------------------------------------------------------------------------------------------
class PeakMemory:
    """Peak PSS (MiB) of this process and all its descendants, sampled in a thread."""

    def __init__(self) -> None:
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _tree_pss_mb(os.getpid()))


MEMORY_JOBS = 200  # jobs of the separate pass that samples memory


def _peak_pss(run: Callable[[list], object], jobs: list) -> float:
    """Peak PSS (MiB) while ``run`` runs the first :data:`MEMORY_JOBS` of ``jobs`` again, untimed.

    A pass of its own: the sampler walks /proc every 20 ms in a thread of this process, holding the GIL that (a)'s
    dispatch threads need (and taking CPU from every runner), so it stays out of the timed pass."""
    with PeakMemory() as mem:
        run(jobs[:MEMORY_JOBS])
    return mem.peak


def _tree_pss_mb(root: int) -> float:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                total += next(int(line.split()[1]) for line in fh if line.startswith("Pss:"))
        except (OSError, StopIteration):
            continue
    return total / 1024


_TICK = os.sysconf("SC_CLK_TCK")


def _proc_stat(pid: int) -> tuple[float, float, int]:
    """(own CPU s, CPU s of the children it reaped, their minor faults) of ``pid``, from ``/proc/PID/stat``."""
    with open(f"/proc/{pid}/stat") as fh:
        f = fh.read().rsplit(")", 1)[1].split()  # f[0] is field 3 of proc(5), the state
    return (int(f[11]) + int(f[12])) / _TICK, (int(f[13]) + int(f[14])) / _TICK, int(f[8])


def _pid_cpu(pid: int | None, reaped: bool) -> float:
    """CPU seconds of ``pid`` (and, with ``reaped``, of its children it has reaped)."""
    if pid is None:
        return 0.0
    own, children, _ = _proc_stat(pid)
    return own + children if reaped else own


def _own_cpu() -> float:
    """CPU seconds so far of this process (all its threads)."""
    own = os.times()
    return own.user + own.system


def _sandbox_cpu(box: Sandbox) -> float:
    """CPU seconds so far of ``box``'s servers, their zygotes and the job processes the servers reaped, plus this
    process (the host side: its pool threads)."""
    total = _own_cpu()
    for server in box._servers:
        if server is not None:
            total += _pid_cpu(server.proc.pid, True) + _pid_cpu(server.zygote_pid, False)
    return total


def _fork_cpu() -> float:
    """CPU seconds so far of this process and its reaped descendants ((c)'s workers wait for their job forks)."""
    own, children = os.times(), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.user + own.system + children.ru_utime + children.ru_stime


def _latencies(run_one: Callable[[], object], n: int) -> tuple[float, float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        run_one()
        times.append(time.perf_counter() - start)
    times.sort()
    return statistics.median(times) * 1000, times[min(len(times) - 1, int(len(times) * 0.99))] * 1000


def _check_isolation(box: Sandbox) -> None:
    """Fail the run unless every server of ``box`` jails its jobs fully, as its jobs see it (see the docstring)."""
    wanted = ["pid_ns", "mount_ns", "net_ns", "new_root", "zygote"] + ["uid_drop" if os.geteuid() == 0 else "user_ns"]
    if os.uname().machine == "x86_64":
        wanted.append("seccomp")
    for result in box.run_many([_PROBE] * 4 * box.workers):
        facts = json.loads(result.stdout) if result.status == "ok" else {}
        seen = {
            "pid_ns": facts.get("pid") == 1,
            "uid_drop": os.geteuid() != 0 or facts.get("uid", 0) >= 1_500_000_000,
            "new_root": facts.get("proc") is False and facts.get("checkout") is False,
            "seccomp": "seccomp" not in wanted or facts.get("memfd") == "EPERM",
            "net_ns": facts.get("net") in ("ENETUNREACH", "EADDRNOTAVAIL"),
        }
        if not all(seen.values()):
            raise SystemExit(f"a job ran without isolation ({seen}, {result}): the benchmark is invalid")
    for slot, server in enumerate(box._servers):  # all started by the probes (one thread per server)
        missing = [k for k in wanted if server is None or server.isolation.get(k) is not True]
        if missing:
            raise SystemExit(f"server {slot} runs without {missing}: the benchmark is invalid")


def bench(program: tuple[str, str, str], workers: int, n_jobs: int, n_latency: int, runners: str) -> dict[str, dict]:
    code, stdin, expected = program
    jobs = [(code, stdin)] * n_jobs
    rows: dict[str, dict] = {}

    if "a" in runners:
        with Sandbox(workers=workers) as box:
            box.run_many([{"code": code, "stdin": stdin}] * workers * 2)  # start the servers

            def run_a(batch: list[tuple[str, str]]) -> list[str]:
                return [r.stdout for r in box.run_many([{"code": c, "stdin": s, "timeout": TIMEOUT} for c, s in batch])]

            start, cpu = time.perf_counter(), _sandbox_cpu(box)
            outs = run_a(jobs)
            wall, cpu = time.perf_counter() - start, _sandbox_cpu(box) - cpu
            peak = _peak_pss(run_a, jobs)
            lat = _latencies(lambda: box.run_python(code, stdin, timeout=TIMEOUT), n_latency)
            _check_isolation(box)
        rows["a"] = _row(outs, expected, wall, lat, peak, cpu)

    if "b" in runners:
        with ThreadPoolExecutor(workers) as pool:

            def run_b(batch: list[tuple[str, str]]) -> list[str]:
                return list(pool.map(lambda job: _fresh(*job), batch))

            start = time.perf_counter()
            outs = run_b(jobs)
            wall = time.perf_counter() - start
            peak = _peak_pss(run_b, jobs)
        rows["b"] = _row(outs, expected, wall, _latencies(lambda: _fresh(code, stdin), n_latency), peak)

    if "c" in runners:
        start, cpu = time.perf_counter(), _fork_cpu()
        outs = _bare_pool(jobs, workers)
        wall, cpu = time.perf_counter() - start, _fork_cpu() - cpu
        peak = _peak_pss(lambda batch: _bare_pool(batch, workers), jobs)
        lat = _latencies(lambda: _bare_job(code, stdin), n_latency)
        rows["c"] = _row(outs, expected, wall, lat, peak, cpu)
    return rows


def breakdown(program: tuple[str, str, str], n_jobs: int, runners: str = "ac") -> dict[str, dict[str, float]]:
    """Where a job's CPU goes with one worker: ms per job for each kind of process, and the job processes' minor
    faults per job, for each of ``runners`` ("a", "c" or both). (a): the host (this process: the pool's thread), the
    server, its zygote (none: 0) and the job processes the server reaped; (c): the host, the worker and the job forks
    it reaped (as the worker counts them)."""
    rows = {}
    if "a" in runners:
        rows["a"] = _breakdown_a(program, n_jobs)
    if "c" in runners:
        rows["c"] = _breakdown_c(program, n_jobs)
    return {key: {part: (v if part == "job_faults" else max(0.0, v) * 1000) / n_jobs for part, v in row.items()}
            for key, row in rows.items()}


def _breakdown_a(program: tuple[str, str, str], n_jobs: int) -> dict[str, float]:
    code, stdin, expected = program
    with Sandbox(workers=1) as box:
        box.run_many([{"code": code, "stdin": stdin}] * 4)
        server = box._servers[0]
        zygote = server.zygote_pid
        before, zygote_before, host = _proc_stat(server.proc.pid), _pid_cpu(zygote, False), _own_cpu()
        outs = [r.stdout for r in box.run_many([{"code": code, "stdin": stdin, "timeout": TIMEOUT}] * n_jobs)]
        after, zygote_after, host = _proc_stat(server.proc.pid), _pid_cpu(zygote, False), _own_cpu() - host
    _check_outputs(outs, expected)
    return {"host": host, "server": after[0] - before[0], "zygote": zygote_after - zygote_before,
            "jobs": after[1] - before[1], "job_faults": after[2] - before[2]}


def _breakdown_c(program: tuple[str, str, str], n_jobs: int) -> dict[str, float]:
    code, stdin, expected = program
    usage: list = []
    host = _own_cpu()
    _check_outputs(_bare_pool([(code, stdin)] * n_jobs, 1, usage), expected)
    (worker_cpu, _), (jobs_cpu, jobs_faults) = usage[0]
    return {"host": _own_cpu() - host, "server": worker_cpu, "jobs": jobs_cpu, "job_faults": jobs_faults}


def bench_tests(workers: int, n_jobs: int, n_latency: int, entry_point: str | None) -> dict:
    """The same HumanEval check as separate tests through ``run_matrix``: with the entry point named they are literal
    calls the server makes itself (the program alone); without, the judge runs them (program + judge)."""
    function, *asserts = [line for line in HUMANEVAL[0].strip().split("\n\n")]
    tests = [line for line in "\n\n".join(asserts).splitlines() if line.startswith("assert")]
    with Sandbox(workers=workers) as box:
        run_matrix([function] * workers * 2, tests, kind="assert", sandbox=box, entry_point=entry_point)

        def check(batch: list[str]) -> list:
            return run_matrix(batch, tests, kind="assert", sandbox=box, timeout=TIMEOUT, entry_point=entry_point)

        start = time.perf_counter()
        matrix = check([function] * n_jobs)
        wall = time.perf_counter() - start
        peak = _peak_pss(check, [function] * n_jobs)
        lat = _latencies(
            lambda: run_matrix([function], tests, kind="assert", sandbox=box, entry_point=entry_point), n_latency
        )
        _check_isolation(box)
    if not all(v.passed for row in matrix for v in row):
        raise SystemExit("a test failed: the benchmark is invalid")
    return {"jobs_s": n_jobs / wall, "p50": lat[0], "p99": lat[1], "mem": peak}


def _check_outputs(outs: list[str], expected: str) -> None:
    wrong = sum(o.strip() != expected for o in outs)
    if wrong:
        raise SystemExit(f"{wrong} wrong outputs: the benchmark is invalid")


def _row(
    outs: list[str], expected: str, wall: float, lat: tuple[float, float], peak: float, cpu: float | None = None
) -> dict:
    _check_outputs(outs, expected)
    cpu_ms = cpu * 1000 / len(outs) if cpu is not None else None
    return {"jobs_s": len(outs) / wall, "cpu_ms": cpu_ms, "p50": lat[0], "p99": lat[1], "mem": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=400, help="jobs per cell (default 400)")
    parser.add_argument("--latency-jobs", type=int, default=None, help="sequential jobs for p50/p99 (default 100)")
    parser.add_argument("--workers", type=int, nargs="+", default=None, help="pool sizes (default 2 16)")
    parser.add_argument("--runners", default=None, help="which of a, b, c to run (default all; --breakdown: a, c)")
    parser.add_argument("--json", action="store_true", help="print the rows as one JSON list (benchmarks/revisions.py)")
    parser.add_argument("--breakdown", action="store_true",
                        help="instead: per-job CPU and minor faults of each kind of process, (a) and (c), one worker")
    args = parser.parse_args()
    if args.breakdown:
        for flag, given in (("--workers", args.workers is not None), ("--latency-jobs", args.latency_jobs is not None),
                            ("--json", args.json)):
            if given:
                parser.error(f"--breakdown runs one worker, no latency pass and prints a table: drop {flag}")
        runners = "ac" if args.runners is None else args.runners
        if not runners or set(runners) - set("ac"):
            parser.error(f"--breakdown measures runners a and c: got --runners {runners!r}, use a, c or ac")
        print("| program | runner | CPU ms/job | host | server / worker | zygote | job processes | job faults |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for label, program in (("trivial", TRIVIAL), ("HumanEval 8 asserts", HUMANEVAL)):
            for key, parts in breakdown(program, args.jobs, runners).items():
                total = sum(v for part, v in parts.items() if part != "job_faults")
                zygote = f"{parts['zygote']:.2f}" if "zygote" in parts else ""
                print(f"| {label} | ({key}) | {total:.2f} | {parts['host']:.2f} | {parts['server']:.2f} | "
                      f"{zygote} | {parts['jobs']:.2f} | {parts['job_faults']:.0f} |")
        return
    args.workers = [2, 16] if args.workers is None else args.workers
    args.latency_jobs = 100 if args.latency_jobs is None else args.latency_jobs
    args.runners = "abc" if args.runners is None else args.runners
    names = {"a": "(a) teamgym.sandbox", "b": "(b) fresh python + rlimits", "c": "(c) bare fork + exec"}
    rows = []
    for label, program in (("trivial", TRIVIAL), ("HumanEval 8 asserts", HUMANEVAL)):
        for workers in args.workers:
            cells = bench(program, workers, args.jobs, args.latency_jobs, args.runners)
            for key, r in cells.items():
                ratio = cells["a"]["jobs_s"] / r["jobs_s"] if "a" in cells and key != "a" else None
                rows.append({"program": label, "workers": str(workers), "runner": names[key], **r, "a_over": ratio})
    if "a" in args.runners:
        for label, entry_point in (("literal calls", "has_close_elements"), ("judged", None)):
            for workers in args.workers:
                r = bench_tests(workers, args.jobs, args.latency_jobs, entry_point)
                rows.append(
                    {"program": f"HumanEval 8 tests, {label}", "workers": str(workers), "runner": names["a"], **r}
                )
    if args.json:
        print(json.dumps(rows))
        return
    with Sandbox(workers=1) as probe:
        iso = probe.isolation
    try:  # a teamgym on PYTHONPATH from before teamgym.host (the baselines of benchmarks/revisions.py pass --json)
        from teamgym.host import available_cores
    except ImportError:
        available_cores = os.cpu_count
    print(
        f"machine: {available_cores()} cores, uid {os.geteuid()}, Python {sys.version.split()[0]}; "
        f"isolation: {', '.join(k for k, v in iso.items() if v is True)}"
    )
    print()
    print("| program | workers | runner | jobs/s | CPU ms/job | p50 ms | p99 ms | peak PSS MiB | a / this |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = f"{r['a_over']:.2f}x" if r.get("a_over") else ""
        cpu = f"{r['cpu_ms']:.2f}" if r.get("cpu_ms") is not None else ""
        print(
            f"| {r['program']} | {r['workers']} | {r['runner']} | {r['jobs_s']:.0f} | {cpu} | {r['p50']:.1f} | "
            f"{r['p99']:.1f} | {r['mem']:.0f} | {ratio} |"
        )


if __name__ == "__main__":
    main()
