"""Which code decided a claim's verdict: a hash of the claim's module, of every module of the
project's packages it imports (transitively, read from the sources, not run) and of the package
version.

Runs carry their code in their key (:mod:`empirics.versions`); a result saved outside the run
store, such as a falsification search (:mod:`compare.falsify`), records this hash instead, so that
a report can tell a result of other code from a current one.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from functools import cache
from pathlib import Path

from attnverify.compare.claim import Claim
from attnverify.empirics.versions import import_closure, package_version, project_imports

PACKAGES = frozenset({"compare", "theory", "empirics"})
"""Imports from these packages are followed; anything else (numpy, torch) is not hashed."""
EVALUATION = "compare.verify"
"""The module that plans a claim's parameters and runs and calls its assessment."""


def _source(name: str) -> Path | None:
    """The source file of module ``name``, None when it has none (or does not exist)."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        origin = getattr(loaded, "__file__", None)
    else:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None
        origin = spec.origin if spec is not None else None
    return Path(origin) if origin and origin.endswith(".py") else None


def _project_imports(name: str) -> set[str]:
    """The project modules that module ``name`` imports by name (none when it has no source)."""
    path = _source(name)
    if path is None:
        return set()
    return project_imports(path.read_text(), PACKAGES, lambda m: _source(m) is not None)


@cache
def module_closure(name: str) -> tuple[str, ...]:
    """Module ``name`` and every project module it imports, transitively, sorted."""
    return import_closure([name], _project_imports)


def claim_code_version(claim: Claim) -> str:
    """Hash of the package version and the sources of the module closures of ``claim``'s
    module and of :data:`EVALUATION`."""
    digest = hashlib.sha256(package_version().encode())
    names = set(module_closure(type(claim).__module__)) | set(module_closure(EVALUATION))
    for name in sorted(names):
        if (path := _source(name)) is not None:
            digest.update(name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]
