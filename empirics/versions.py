"""Versions that identify a result: the package version enters every run key."""

from __future__ import annotations

import ast
import hashlib
import platform
from functools import cache
from importlib import metadata
from pathlib import Path

_PACKAGE_DIR = Path(__file__).parent


@cache
def package_version() -> str:
    try:
        return metadata.version("attnverify")
    except metadata.PackageNotFoundError:  # running from a source tree that was not installed
        return "0+unknown"


CORE_MODULES = ("config", "optim", "result", "spec", "train")
"""Modules every run passes through: the configs, the optimizers, the result and the one loop."""


def _empirics_imports(name: str) -> set[str]:
    """The ``empirics`` modules that module ``name`` imports (read from its source, not run)."""
    tree = ast.parse((_PACKAGE_DIR / f"{name}.py").read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] == "empirics" and len(parts) > 1:
                found.add(parts[1])
            elif parts == ["empirics"]:
                found.update(alias.name for alias in node.names
                             if (_PACKAGE_DIR / f"{alias.name}.py").exists())
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "empirics" and len(parts) > 1:
                    found.add(parts[1])
    return found


@cache
def source_closure(modules: frozenset[str]) -> tuple[str, ...]:
    """``modules`` (names inside ``empirics``) and every empirics module they import,
    transitively, sorted."""
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(_empirics_imports(name) - seen)
    return tuple(sorted(seen))


@cache
def code_version(modules: frozenset[str] | None = None) -> str:
    """Hash of the ``empirics`` sources that produce a result, beyond the package version,
    which an editable install never bumps.

    With ``modules`` (e.g. the modules defining a run's task and model) only those, the core
    modules and what they import transitively are hashed: editing the retrieval transformer
    does not invalidate cached copying runs. Without, every module of the package is hashed
    (the version reported next to results).
    """
    if modules is None:
        names = tuple(sorted(p.stem for p in _PACKAGE_DIR.glob("*.py")))
    else:
        names = source_closure(frozenset(modules) | frozenset(CORE_MODULES))
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode())
        digest.update((_PACKAGE_DIR / f"{name}.py").read_bytes())
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
