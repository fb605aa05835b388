"""Virtual environments for tests that run a script or a server from "a project venv"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def venv_with_these_packages(path: Path) -> Path:
    """A venv at ``path``, made from this interpreter, that sees this process's packages behind its own.

    A ``.pth`` file adds this process's site directories (``site.addsitedir``, so their ``.pth`` files run too, e.g.
    an editable teamgym). ``venv --system-site-packages`` would add the *base* interpreter's instead: when the tests
    run from a venv (CI's ``.venv``), those are bare on a fresh machine.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    purelib = subprocess.run([str(path / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path("
                              "'purelib'))"], capture_output=True, text=True, check=True).stdout.strip()
    sites = [entry for entry in sys.path if entry.endswith(("site-packages", "dist-packages"))]
    Path(purelib, "teamgym-test-sites.pth").write_text(
        "".join(f"import site; site.addsitedir({entry!r})\n" for entry in sites), encoding="utf-8")
    return path
