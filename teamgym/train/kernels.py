"""Which CPU kernels torch runs: pinned to AVX2 by default, so that a run gives the same numbers on any host.

torch picks its vectorised CPU kernels (softmax, layer norm, GELU, reductions) by the widest instruction set the CPU
has, and MKL picks its matrix-multiply code path by the CPU too. Wider vectors sum in another order, so the floats
differ in their last bits, and for a tiny model trained from scratch that acts like another seed: the same
``sokoban-v1`` warm start (seed 5, same code and versions) scored 70.5% greedy on an AVX2 host and 54.0% on an
AVX-512 one, and the main job's seed 0 (then on plan_path-v0) 74.5% and 76.0%; pinned to AVX2, the AVX-512 host
gives 70.5% and 74.5% as the AVX2 host did (docs/training.md, "Same numbers on every host").

:func:`pin_cpu_kernels` ``("avx2")`` sets, unless they are set already, ``ATEN_CPU_CAPABILITY=avx2`` (torch's
kernels), ``MKL_CBWR=AVX2,STRICT`` (MKL's conditional numerical reproducibility: the same results on every CPU with
AVX2, Intel or AMD) and ``ONEDNN_MAX_CPU_ISA=AVX2``. torch reads its variable at its first CPU operation and MKL
at its first call, so the pin must come before them: the trainer pins first thing, and a process where torch has
already run a CPU op keeps the kernels it chose (a warning says so, and ``summary.json``'s ``host`` records the
kernels every run used). ``"native"`` leaves torch's own choice (AVX-512 where there is one: a few percent faster).
"""

from __future__ import annotations

import logging
import os

from teamgym.errors import check_choice

__all__ = ["CPU_KERNELS", "PINNED_ENV", "cpu_capability", "pin_cpu_kernels", "set_kernel_env"]

logger = logging.getLogger(__name__)
_warned: set[tuple[str, str]] = set()  # (wanted, used) pairs already warned about in this process

#: The choices of ``TrainConfig.cpu_kernels``.
CPU_KERNELS = ("avx2", "native")

#: The variables :func:`pin_cpu_kernels` sets for each choice (``native``: none).
PINNED_ENV = {
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2,STRICT", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "native": {},
}


def cpu_capability() -> str:
    """The vectorised kernels torch runs in this process (``"AVX2"``, ``"AVX512"``, ``"DEFAULT"``...); fixes them
    if torch has not chosen yet."""
    import torch

    return torch.backends.cpu.get_cpu_capability()


def set_kernel_env(choice: str = "avx2") -> None:
    """Set the variables that pin ``choice`` (those the user has set already stay), without importing torch: what a
    command line does first, before its checks import torch (:func:`pin_cpu_kernels` then confirms the pin)."""
    check_choice("cpu_kernels", choice, CPU_KERNELS)
    for name, value in PINNED_ENV[choice].items():
        os.environ.setdefault(name, value)


def pin_cpu_kernels(choice: str = "avx2") -> str:
    """Pin torch's and MKL's CPU kernels to ``choice`` (see the module docstring) and return the kernels torch runs.

    A variable the user has set already is kept (their choice wins). Where torch has already chosen other kernels in
    this process, or the CPU has no AVX2, the kernels stay what they are and a warning names them.
    """
    set_kernel_env(choice)
    used = cpu_capability()
    wanted = os.environ.get("ATEN_CPU_CAPABILITY", "").upper()
    if choice != "native" and wanted and used != wanted and (wanted, used) not in _warned:
        _warned.add((wanted, used))
        logger.warning(
            "cpu_kernels=%r: torch runs %s kernels (it chose them before the pin, at its first CPU operation in this "
            "process, or the CPU lacks %s), so this run's floats may differ from a run pinned to %s; pin before "
            "torch's first operation (python -m teamgym.train does) or set ATEN_CPU_CAPABILITY=%s in the "
            "environment", choice, used, wanted, wanted, wanted.lower())
    return used
