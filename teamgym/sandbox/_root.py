"""The server's walls, built once per fork server: namespaces, a minimal root, memory cgroups (stdlib only).

:func:`setup_server` puts the server in a private mount and network namespace (as non-root, inside a user
namespace mapping only its own uid), builds a new root holding only what a job needs and ``pivot_root``\\ s into
it, so that the server and every job it starts see nothing else of the host:

* the interpreter (its binary, ``libpython``, the standard library with ``lib-dynload``) and the shared
  libraries of ``/lib``, ``/lib64``, ``/usr/lib``, ``/usr/lib64``, all read-only, with every ``site-packages`` /
  ``dist-packages`` folder inside them replaced by an empty read-only tmpfs;
* ``/etc/ld.so.cache``; ``/dev/null``, ``zero``, ``full``, ``random``, ``urandom``;
* ``/job``, the jobs' working directory (a tmpfs emptied after each job), with ``/tmp`` and ``/dev/shm``
  pointing to it, so temporary files and POSIX shared memory count against the job's disk and memory.

No ``/proc``, ``/sys``, ``/home``, ``/root`` (beyond the interpreter's own folders), host ``/tmp``, sockets,
project checkout, site-packages or datasets; only the installed distributions a pool is asked for (e.g. ``sympy``
for math tools) are bound back into their package folder. The memory cgroups of :mod:`_cgroup` bound each job's
memory by any means (heap, tmpfs files, pipes, shared memory) where the host lets a root server create them.
"""

from __future__ import annotations

import ctypes
import glob
import os
import sys
import sysconfig

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MS_NOATIME, _MS_NODIRATIME, _MS_RELATIME = 1024, 2048, 1 << 21
_ST_RELATIME = 4096
_MNT_DETACH = 2
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}

JOB_DIR = "/job"  # the jobs' working directory, inside the new root
SYSTEM_LIB_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64")
DEVICES = ("null", "zero", "full", "random", "urandom")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = os.fsencode
    ret = _libc.mount(
        enc(src) if src else None, enc(target), enc(fstype) if fstype else None, flags, enc(data) if data else None
    )
    _check(ret, f"mount {target}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def read_mountpoints() -> list[str]:
    """Every mount point of this mount namespace, parents before children (from mountinfo)."""
    points = []
    with open("/proc/self/mountinfo", "rb") as fh:
        for line in fh:
            raw = line.split(b" ")[4].decode("utf-8", "surrogateescape")
            points.append(raw.encode("latin-1", "surrogateescape").decode("unicode_escape", "surrogateescape"))
    return sorted(set(points), key=lambda p: (p.count("/"), p))


def remount_readonly(point: str) -> None:
    """Make one mount read-only, keeping the flags a user namespace locks (nosuid, nodev, noexec, atime)."""
    st = os.statvfs(point)
    keep = st.f_flag & (_MS_NOSUID | _MS_NODEV | _MS_NOEXEC | _MS_NOATIME | _MS_NODIRATIME)
    if st.f_flag & _ST_RELATIME:
        keep |= _MS_RELATIME
    mount(None, point, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | keep)


def workdir_options(uid: int, gid: int, disk_mb: int) -> str:
    """tmpfs options of the jobs' working directory."""
    return f"size={int(disk_mb)}m,nr_inodes=4096,mode=0700,uid={uid},gid={gid}"


def resize_workdir(uid: int, gid: int, disk_mb: int) -> None:
    """Change the size of ``/job`` for the next job."""
    mount(None, JOB_DIR, None, _MS_REMOUNT | _MS_NOSUID | _MS_NODEV, workdir_options(uid, gid, disk_mb))


# ---------------------------------------------------------------------------------------------- what a job sees
def interpreter_tree() -> tuple[list[str], list[str], dict[str, str], list[str]]:
    """What the new root holds of the host: ``(dirs, files, symlinks, masks)``, all absolute host paths.

    ``dirs`` and ``files`` are bound read-only at the same path; ``symlinks`` (path -> target) are recreated;
    ``masks`` are folders inside ``dirs`` replaced by an empty read-only tmpfs (every place where third-party
    packages, and so datasets and the project itself, could be installed).
    """
    real = os.path.realpath
    paths = sysconfig.get_paths()
    stdlib = {real(paths["stdlib"]), real(paths["platstdlib"])}
    dirs = set(stdlib)
    dirs.update(real(p) for p in sys.path if p and os.path.isdir(p) and any(_within(real(p), s) for s in stdlib))
    files = set()
    libdir, soname = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("INSTSONAME")
    if libdir and soname and os.path.isfile(os.path.join(libdir, soname)):
        files.add(real(os.path.join(libdir, soname)))
    for name in ("/etc/ld.so.cache",):
        if os.path.isfile(name):
            files.add(name)
    symlinks: dict[str, str] = {}
    for lib in SYSTEM_LIB_DIRS:
        if os.path.islink(lib):
            symlinks[lib] = os.readlink(lib)
        elif os.path.isdir(lib):
            dirs.add(lib)
    # The binary, through every link from sys.executable to it, so that a job can start the interpreter.
    exe = sys.executable
    for _ in range(16):
        if not exe or not os.path.lexists(exe):
            break
        if os.path.islink(exe):
            target = os.readlink(exe)
            symlinks[exe] = target
            exe = os.path.normpath(os.path.join(os.path.dirname(exe), target))
        else:
            files.add(exe)
            break
    dirs = {d for d in dirs if not any(_within(d, o) and d != o for o in dirs)}
    files = {f for f in files if not any(_within(f, d) for d in dirs)}
    candidates = {real(p) for p in (paths["purelib"], paths["platlib"]) if p}
    for d in dirs:
        for pattern in ("python3*/site-packages", "python3*/dist-packages", "python3/dist-packages", "site-packages"):
            candidates.update(real(p) for p in glob.glob(os.path.join(d, pattern)))
    candidates.update(
        real(p) for p in sys.path if p and os.path.isdir(p) and not any(_within(real(p), s) for s in stdlib)
    )
    masks = sorted(
        m
        for m in candidates
        if os.path.isdir(m) and any(_within(m, d) for d in dirs) and not any(_within(s, m) for s in stdlib)
    )
    return sorted(dirs), sorted(files), symlinks, masks


def _place(root: str, path: str, *, is_dir: bool) -> str:
    target = root + path
    os.makedirs(target if is_dir else os.path.dirname(target), exist_ok=True)
    if not is_dir and not os.path.exists(target):
        os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
    return target


def build_root(root: str, *, uid: int, gid: int, disk_mb: int, packages: list[str]) -> None:
    """Fill the tmpfs mounted at ``root`` (see the module docstring); everything but ``/job`` is read-only.

    ``packages`` are host paths (folders or files of installed distributions) bound read-only at the same place,
    inside the otherwise empty package folders: the only third-party code a job can import.
    """
    dirs, files, symlinks, masks = interpreter_tree()
    for path in dirs:
        mount(path, _place(root, path, is_dir=True), None, _MS_BIND | _MS_REC)
    for path in files:
        mount(path, _place(root, path, is_dir=False), None, _MS_BIND)
    for name in DEVICES:
        if os.path.exists(f"/dev/{name}"):
            mount(f"/dev/{name}", _place(root, f"/dev/{name}", is_dir=False), None, _MS_BIND)
    for path, target in symlinks.items():
        os.makedirs(os.path.dirname(root + path), exist_ok=True)
        if not os.path.lexists(root + path):
            os.symlink(target, root + path)
    for path in masks:
        mount("tmpfs", _place(root, path, is_dir=True), "tmpfs", _MS_NOSUID | _MS_NODEV, "size=64k,mode=0755")
    for path in packages:
        mount(path, _place(root, path, is_dir=os.path.isdir(path)), None, _MS_BIND | _MS_REC)
    for point in read_mountpoints():
        if _within(point, root) and point != root:
            remount_readonly(point)
    job = _place(root, JOB_DIR, is_dir=True)
    mount("tmpfs", job, "tmpfs", _MS_NOSUID | _MS_NODEV, workdir_options(uid, gid, disk_mb))
    os.symlink(JOB_DIR, root + "/tmp")
    os.symlink(JOB_DIR, root + "/dev/shm")


def setup_server(root: str, *, uid: int, gid: int, disk_mb: int, packages: list[str]) -> list[str]:
    """Enter private mount (and network) namespaces and ``pivot_root`` into a minimal root built at ``root``.

    Returns the errors met: an empty list means full isolation; otherwise nothing was changed that matters
    (the caller runs jobs degraded, with a warning).
    """
    host_uid, host_gid = os.geteuid(), os.getegid()
    user = 0 if host_uid == 0 else CLONE_NEWUSER
    if _libc.unshare(user | CLONE_NEWNS | CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        return [f"unshare(mount, net{', user' if user else ''}): {os.strerror(err)}"]
    if user:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{host_uid} {host_uid} 1")
        _write("/proc/self/gid_map", f"{host_gid} {host_gid} 1")
    mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    os.makedirs(root, exist_ok=True)
    mount("tmpfs", root, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,nr_inodes=4096,mode=0755")
    build_root(root, uid=uid, gid=gid, disk_mb=disk_mb, packages=packages)
    os.chdir(root)
    _check(_libc.syscall(_SYS_PIVOT_ROOT[os.uname().machine], b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", _MNT_DETACH), "umount old root")
    os.chdir("/")
    mount(None, "/", None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    return []
