"""Removing what a job left behind, whatever it made: used by the server between jobs (its ``/job``) and by the host
when a server is gone (the server's whole folder). Stdlib only: the server imports it by name (see :mod:`_server`).

A job can nest folders thousands deep (deeper than a recursive walk's stack, and than ``PATH_MAX``), lock them,
name them like the cleanup's own renames, or put a link where a folder was: nothing here recurses, builds a long
path or follows a link.
"""

from __future__ import annotations

import os
import time

EMPTY_SECONDS = 10.0  # the most time emptying one folder may take


def empty(folder: str) -> None:
    """Remove everything inside ``folder``, whatever a job left there: no recursion, no path longer than a name, no link
    followed. Each pass removes the files and empty folders at the top and lifts the contents of the other folders
    to the top, under names no entry there has, so a tree of any depth (a job can nest thousands of folders, deeper
    than a recursive walk's stack or ``PATH_MAX``) is gone after as many passes as it is deep. Folders the job made
    unreadable are opened up first (that matters without root), and ``folder`` gets its mode back. Never raises:
    what cannot be removed within ``EMPTY_SECONDS`` (a process of a degraded-mode job that outlived it and keeps
    writing) stays."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    top = _open_folder(folder, flags)
    if top is None:  # without namespaces a job can put a link or a file in its place: the next job makes it again
        _removed(os.unlink, folder, None)
        return
    deadline = time.monotonic() + EMPTY_SECONDS
    lifted = 0
    try:
        os.fchmod(top, 0o700)  # the job may have locked its working directory against the next one
        while time.monotonic() < deadline:
            with os.scandir(top) as it:
                entries = {entry.name: entry.is_dir(follow_symlinks=False) for entry in it}
            taken = set(entries)
            moved = False
            for name, is_dir in entries.items():
                if not is_dir:
                    moved = _removed(os.unlink, name, top) or moved
                    continue
                if _removed(os.rmdir, name, top):
                    moved = True
                    continue
                inner = _open_folder(name, flags, top)
                if inner is None:
                    continue
                try:
                    with os.scandir(inner) as it:
                        children = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in it]
                    for child, child_is_dir in children:
                        if not child_is_dir:
                            moved = _removed(os.unlink, child, inner) or moved
                            continue
                        while f".lifted-{lifted}" in taken:
                            lifted += 1
                        taken.add(f".lifted-{lifted}")
                        try:
                            os.chmod(child, 0o700, dir_fd=inner)  # moving a folder writes its ".." entry
                            os.rename(child, f".lifted-{lifted}", src_dir_fd=inner, dst_dir_fd=top)
                            moved = True
                        except OSError:
                            pass
                finally:
                    os.close(inner)
            if not entries or not moved:
                return
    except OSError:
        return
    finally:
        os.close(top)


def _open_folder(name: str, flags: int, dir_fd: int | None = None) -> int | None:
    """An fd of the folder ``name`` (not a link), made readable first if it has to be; None if it cannot be."""
    for _ in range(2):
        try:
            return os.open(name, flags, dir_fd=dir_fd)
        except PermissionError:
            try:
                os.chmod(name, 0o700, dir_fd=dir_fd)
            except OSError:
                return None
        except OSError:
            return None
    return None


def _removed(remove, name: str, dir_fd: int | None) -> bool:
    try:
        remove(name, dir_fd=dir_fd)
        return True
    except OSError:
        return False


def remove(folder: str) -> None:
    """Remove ``folder`` and everything in it (see :func:`empty`); never raises."""
    empty(folder)
    _removed(os.rmdir, folder, None)
