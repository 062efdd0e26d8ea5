"""A disk cache for the computations claims do themselves (Monte Carlo estimates, the
construction), so that a warm ``verify`` recomputes nothing (the run store does the same for
training runs).

An entry is a ``.npz`` of plain arrays (loaded with ``allow_pickle=False``) under
``ROOT/memo/NAMESPACE/``, named by the SHA-256 of the call's key, the package version and the
source of the modules that compute it: changing that code recomputes. Writes are atomic (a
temporary file renamed into place); an unreadable entry is recomputed, never used. With no root
set (library use, most tests) nothing is cached.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from attnverify.empirics.versions import package_version

log = logging.getLogger("attnverify.memo")
_root: Path | None = None


def set_root(path: Path | None) -> None:
    """Cache under ``path / "memo"`` (``None`` switches caching off)."""
    global _root
    _root = None if path is None else Path(path) / "memo"


@contextlib.contextmanager
def rooted(path: Path | None) -> Iterator[None]:
    """Cache under ``path / "memo"`` for the duration (e.g. next to a run store)."""
    global _root
    previous = _root
    set_root(path)
    try:
        yield
    finally:
        _root = previous


def _digest(key: dict[str, Any], sources: Sequence[ModuleType]) -> str:
    h = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode())
    h.update(package_version().encode())
    for module in sources:
        h.update(Path(module.__file__ or "").read_bytes())
    return h.hexdigest()[:24]


def memo(namespace: str, key: dict[str, Any], sources: Sequence[ModuleType],
         compute: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """``compute()``'s arrays, read from the cache when this key and code were seen before."""
    if _root is None:
        return compute()
    path = _root / namespace / f"{_digest(key, sources)}.npz"
    if path.exists():
        try:
            with np.load(path, allow_pickle=False) as npz:
                return {name: npz[name] for name in npz.files}
        except (OSError, ValueError) as exc:
            log.warning("memo entry %s unreadable (%s); recomputing", path.name, exc)
    arrays = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return arrays
