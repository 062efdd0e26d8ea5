"""Versions that identify a result (docs/run-store.md#run-identity).

A run's key is the canonical JSON of its spec plus **declared numerics versions**: the
``code_version`` of its task, model and optimizer config classes
(:class:`~attnverify.empirics.config.Config`) and :data:`LOOP_VERSION` of the training loop. No
source bytes are hashed, so a docstring, a rename, a moved file or a refactor keeps every key;
a change of numerics bumps the version of the part that changed, and the golden regression
runs (``tests/test_golden.py``) fail when numerics change without a bump. The package's own
version does not enter a key (a release that changes no numerics keeps every stored run).

Who owns which numerics: a config class owns what it computes (a task its batches, a model its
initialisation, forward pass and metrics, an optimizer its steps); :data:`LOOP_VERSION` owns the
loop. A helper module shared by several classes (``attention``, ``positions``, ``qk_spectrum``,
``score_monte_carlo``) has no version of its own: a change of its numerics bumps the
``code_version`` of every class that uses it (its module docstring says which), and the golden
runs of those families fail until that is done.

A fingerprint of the sources (:func:`source_fingerprint`) is recorded beside each result and
compared between the processes of one sweep, as a diagnostic: it never enters a key.
"""

from __future__ import annotations

import hashlib
import platform
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnverify.empirics.spec import RunSpec

_PACKAGE_DIR = Path(__file__).parent

LOOP_VERSION = 1
"""The numerics version of the training loop: :mod:`~attnverify.empirics.train` (batches,
evaluation schedule, early stop, divergence), the seed-batched path
(:mod:`~attnverify.empirics.seed_batch`), the seed derivation of
:meth:`~attnverify.empirics.spec.RunSpec.seeds` and the arrays a result records
(:mod:`~attnverify.empirics.result`). Bump it when any of them changes what a run computes."""


@cache
def package_version() -> str:
    try:
        return metadata.version("attnverify")
    except metadata.PackageNotFoundError:  # running from a source tree that was not installed
        return "0+unknown"


@cache
def source_fingerprint() -> str:
    """A hash of the ``empirics`` sources this process loaded, sub-packages included
    (computed once per process, at its first call): a diagnostic recorded beside each result
    and compared between the processes of one sweep (a pool worker, a Dask worker), never part
    of a run key."""
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE_DIR.rglob("*.py")):
        digest.update(path.relative_to(_PACKAGE_DIR).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def require_code_version(cls: type, what: str) -> None:
    """TypeError, in one line naming ``cls`` (``what`` says what it is), unless the class
    declares its own ``code_version``, an integer >= 1 (configs and claims alike)."""
    version = vars(cls).get("code_version")
    name = f"{cls.__module__}.{cls.__qualname__}"
    if version is None:
        raise TypeError(f"{name} ({what}) declares no code_version: add the class attribute "
                        f"'code_version = 1' and bump it whenever what the class computes "
                        f"changes")
    if not (isinstance(version, int) and not isinstance(version, bool) and version >= 1):
        raise TypeError(f"{name}.code_version must be an integer >= 1; got {version!r}")


def run_versions(spec: RunSpec) -> dict[str, int]:
    """The numerics versions a run's key carries: its task's, model's and optimizer's
    ``code_version`` and :data:`LOOP_VERSION`."""
    return {"task": type(spec.task).code_version, "model": type(spec.model).code_version,
            "optimizer": type(spec.optimizer).code_version, "loop": LOOP_VERSION}


def versions() -> dict[str, str]:
    """Versions of attnverify, its training loop, Python, torch and numpy, for reports and run
    results."""
    import numpy
    import torch

    return {
        "attnverify": package_version(),
        "loop": str(LOOP_VERSION),
        "empirics_source": source_fingerprint(),
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
