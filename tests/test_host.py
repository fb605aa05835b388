import os

import teamgym.host as host
from teamgym.sandbox import Sandbox


def test_available_cores_reads_the_affinity_mask_and_falls_back_to_the_cpu_count(monkeypatch):
    monkeypatch.setattr(host, "_process_quota", lambda: None)
    monkeypatch.setattr(host.os, "sched_getaffinity", lambda pid: {3}, raising=False)
    assert host.available_cores() == 1
    monkeypatch.delattr(host.os, "sched_getaffinity")
    monkeypatch.setattr(host.os, "cpu_count", lambda: 6)
    assert host.available_cores() == 6
    monkeypatch.setattr(host.os, "cpu_count", lambda: None)
    assert host.available_cores() == 1


def test_the_sandbox_pool_defaults_to_the_cores_the_process_may_use(monkeypatch):
    """A process pinned to one core (taskset, a cpuset) gets one fork server, not one per core of the machine."""
    monkeypatch.setattr(host.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    box = Sandbox()  # servers start lazily: nothing runs here
    try:
        assert box.workers == 1
    finally:
        box.close()


def _hierarchy(tmp_path, mounts, groups, files):
    """Fake /proc/self/mountinfo and /proc/self/cgroup under ``tmp_path``, and the cgroup files they point at."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "mountinfo").write_text("".join(
        f"{i} 1 0:{i} {root} {tmp_path / point} rw - {fstype} cgroup {options}\n"
        for i, (root, point, fstype, options) in enumerate(mounts, 30)))
    (tmp_path / "cgroup").write_text("".join(line + "\n" for line in groups))
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return {"mountinfo": tmp_path / "mountinfo", "cgroup": tmp_path / "cgroup"}


def test_a_cgroup_v2_quota_is_read_in_a_container_and_on_a_host_with_the_tightest_ancestor(tmp_path):
    container = _hierarchy(tmp_path / "c", [("/", "fs", "cgroup2", "rw")], ["0::/"],
                           {"fs/cpu.max": "150000 100000\n"})
    assert host.cpu_quota(**container) == 1.5
    nested = _hierarchy(tmp_path / "h", [("/", "fs", "cgroup2", "rw")], ["0::/a/b"],
                        {"fs/cpu.max": "max 100000\n", "fs/a/cpu.max": "100000 100000\n",
                         "fs/a/b/cpu.max": "300000 100000\n"})
    assert host.cpu_quota(**nested) == 1.0
    unlimited = _hierarchy(tmp_path / "u", [("/", "fs", "cgroup2", "rw")], ["0::/a"], {"fs/a/cpu.max": "max 100000\n"})
    assert host.cpu_quota(**unlimited) is None


def test_a_cgroup_v1_quota_is_read_from_the_cpu_controller_of_a_hybrid_host(tmp_path):
    files = {"cpu/docker/x/cpu.cfs_quota_us": "50000\n", "cpu/docker/x/cpu.cfs_period_us": "100000\n",
             "mem/docker/x/cpu.cfs_quota_us": "1000\n", "mem/docker/x/cpu.cfs_period_us": "100000\n"}
    hybrid = _hierarchy(tmp_path, [("/", "cpu", "cgroup", "rw,cpu,cpuacct"), ("/", "mem", "cgroup", "rw,memory"),
                                   ("/", "unified", "cgroup2", "rw")],
                        ["4:memory:/docker/x", "2:cpu,cpuacct:/docker/x", "0::/"], files)
    assert host.cpu_quota(**hybrid) == 0.5
    # a container sees its own subtree mounted at its root: the mount's root is stripped from the path, so the
    # quota read is the mount point's own, not that of a folder named like the host's path below it
    view = _hierarchy(tmp_path / "view", [("/docker/x", "cpu", "cgroup", "rw,cpu")], ["2:cpu:/docker/x"],
                      {"cpu/cpu.cfs_quota_us": "50000\n", "cpu/cpu.cfs_period_us": "100000\n",
                       "cpu/docker/x/cpu.cfs_quota_us": "10000\n", "cpu/docker/x/cpu.cfs_period_us": "100000\n"})
    assert host.cpu_quota(**view) == 0.5
    unlimited = _hierarchy(tmp_path / "unlimited", [("/", "cpu", "cgroup", "rw,cpu")], ["2:cpu:/"],
                           {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"})
    assert host.cpu_quota(**unlimited) is None


def test_unreadable_or_garbled_cgroup_files_mean_no_quota(tmp_path):
    assert host.cpu_quota(tmp_path / "missing", tmp_path / "missing") is None
    garbled = _hierarchy(tmp_path, [("/", "fs", "cgroup2", "rw")], ["0::/", "garbage"], {"fs/cpu.max": "lots\n"})
    assert host.cpu_quota(**garbled) is None
    (tmp_path / "fs" / "cpu.max").write_bytes(b"\xff\xfe 100000\n")
    assert host.cpu_quota(**garbled) is None
    # a mount point that is not UTF-8 (the kernel escapes only space, tab, newline and backslash)
    (tmp_path / "mountinfo").write_bytes(b"30 1 0:30 / /mnt/\xff rw - ext4 /dev/x rw\n"
                                         + (tmp_path / "mountinfo").read_bytes())
    (tmp_path / "fs" / "cpu.max").write_text("200000 100000\n")
    assert host.cpu_quota(**garbled) == 2.0


def test_escaped_mount_points_are_decoded_and_other_namespaces_mounts_are_skipped(tmp_path):
    spaced = _hierarchy(tmp_path / "s", [], ["0::/"], {"cg root/cpu.max": "150000 100000\n"})
    point = str(tmp_path / "s" / "cg root").replace(" ", "\\040")
    (tmp_path / "s" / "mountinfo").write_text(f"30 1 0:30 / {point} rw - cgroup2 cgroup rw\n")
    assert host.cpu_quota(**spaced) == 1.5
    # a cgroup outside this process's cgroup namespace shows as "/.." paths: never read above the mount point
    outside = _hierarchy(tmp_path / "o", [("/", "fs/inner", "cgroup2", "rw")], ["0::/../sibling"],
                         {"fs/sibling/cpu.max": "10000 100000\n", "fs/inner/cpu.max": "max 100000\n"})
    assert host.cpu_quota(**outside) is None
    inherited = _hierarchy(tmp_path / "i", [("/..", "fs", "cgroup2", "rw")], ["0::/"], {"fs/cpu.max": "1 100000\n"})
    assert host.cpu_quota(**inherited) is None


def test_available_cores_rounds_a_quota_up_and_never_exceeds_the_affinity_mask(monkeypatch):
    monkeypatch.setattr(host.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    for quota, cores in ((None, 4), (1.5, 2), (0.2, 1), (16.0, 4)):
        monkeypatch.setattr(host, "_process_quota", lambda quota=quota: quota)
        assert host.available_cores() == cores
