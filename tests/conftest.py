from __future__ import annotations

import pytest


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
