"""Versions that identify a result: the package version enters every run key."""

from __future__ import annotations

import hashlib
import platform
from functools import cache
from importlib import metadata
from pathlib import Path


@cache
def package_version() -> str:
    try:
        return metadata.version("attnverify")
    except metadata.PackageNotFoundError:  # running from a source tree that was not installed
        return "0+unknown"


NOT_RESULT_AFFECTING = ("executor.py", "store.py")
"""Modules that schedule and store runs but never change a run's numbers."""


@cache
def code_version() -> str:
    """Hash of the ``empirics`` sources that produce a result (tasks, models, loop, configs),
    beyond the package version, which an editable install never bumps."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if path.name in NOT_RESULT_AFFECTING:
            continue
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def versions() -> dict[str, str]:
    """Versions of attnverify, Python, torch and numpy, for reports and run results."""
    import numpy
    import torch

    return {
        "attnverify": package_version(),
        "empirics_code": code_version(),
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
