"""Versions that identify a result: the package version enters every run key."""

from __future__ import annotations

import platform
from functools import cache
from importlib import metadata


@cache
def package_version() -> str:
    try:
        return metadata.version("attnverify")
    except metadata.PackageNotFoundError:  # running from a source tree that was not installed
        return "0+unknown"


def versions() -> dict[str, str]:
    """Versions of attnverify, Python, torch and numpy, for reports and run results."""
    import numpy
    import torch

    return {
        "attnverify": package_version(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
    }


def machine() -> dict[str, str | int | bool]:
    """The machine a report was computed on: CPU, core count, GPU availability."""
    import os

    import torch

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cores": os.cpu_count() or 1,
        "cuda_available": torch.cuda.is_available(),
        "torch_threads": torch.get_num_threads(),
    }
