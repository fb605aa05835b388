from __future__ import annotations

import os
from pathlib import Path

import pytest

from teamgym.train.kernels import PINNED_ENV

ROOT = str(Path(__file__).resolve().parents[1])

# torch's and MKL's CPU kernels pinned to AVX2 for the whole session, before any test runs a torch op, as the trainer
# pins them (teamgym.train.kernels): numbers a test checks come out the same on AVX2 and AVX-512 hosts.
for _name, _value in PINNED_ENV["avx2"].items():
    os.environ.setdefault(_name, _value)


def pytest_collection_modifyitems(config, items):
    """Skip GPU tests on machines without CUDA."""
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    if has_gpu:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def local_ray():
    """A local Ray instance (2 CPUs; GPUs as detected) shared by the session's Ray tests.

    Workers get the repository root on ``PYTHONPATH`` so that actors can import ``tests.*`` fakes.
    """
    ray = pytest.importorskip("ray")
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH", "")) if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield ray
    ray.shutdown()
