"""Versions that identify a result: the package version enters every run key."""

from __future__ import annotations

import ast
import hashlib
import platform
from collections.abc import Callable, Iterable
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


def project_imports(source: str, packages: frozenset[str],
                    is_module: Callable[[str], bool]) -> set[str]:
    """Dotted names of the modules of ``packages`` that ``source`` imports (read, not run):
    ``import p.x``, ``from p.x import y`` (``p.x``, and ``p.x.y`` when ``is_module`` says it is
    a module) and ``from p import x`` (``p.x`` when it is a module). Shared by the run keys
    (this module) and the code version of a claim (:mod:`compare.code_version`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in packages:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names
                             if is_module(f"{node.module}.{alias.name}"))
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names
                         if alias.name.split(".")[0] in packages)
    return found


def import_closure(start: Iterable[str], imports_of: Callable[[str], set[str]]) -> tuple[str,
                                                                                          ...]:
    """``start`` and every module reachable from it through ``imports_of``, sorted."""
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(imports_of(name) - seen)
    return tuple(sorted(seen))


def _is_empirics_module(dotted: str) -> bool:
    parts = dotted.split(".")
    return len(parts) == 2 and (_PACKAGE_DIR / f"{parts[1]}.py").exists()


def _empirics_imports(name: str) -> set[str]:
    """The ``empirics`` modules (names inside the package) that module ``name`` imports."""
    source = (_PACKAGE_DIR / f"{name}.py").read_text()
    return {dotted.split(".")[1]
            for dotted in project_imports(source, frozenset({"empirics"}), _is_empirics_module)
            if dotted.count(".") >= 1}


@cache
def source_closure(modules: frozenset[str]) -> tuple[str, ...]:
    """``modules`` (names inside ``empirics``) and every empirics module they import,
    transitively, sorted."""
    return import_closure(modules, _empirics_imports)


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
