"""A disk cache for the computations claims do themselves (Monte Carlo estimates, the
construction), so that a warm ``verify`` recomputes nothing (the run store does the same for
training runs).

An entry is a ``.npz`` of plain arrays (loaded with ``allow_pickle=False``) under
``ROOT/memo/NAMESPACE/``, named by the SHA-256 of the call's key, the declared version of the
code that computes it (a claim's ``code_version``, or the numerics version of a shared
computation such as :data:`~attnverify.empirics.score_monte_carlo.MONTE_CARLO_VERSION`) and the
package version: a bumped version or a new release recomputes (these entries cost seconds to
minutes, unlike training runs), a comment or a refactor does not. Writes are atomic (a
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
from collections.abc import Callable, Iterator
from pathlib import Path
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


def _digest(key: dict[str, Any], version: dict[str, int]) -> str:
    payload = {"key": key, "version": version, "package": package_version()}
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def memo(namespace: str, key: dict[str, Any], version: dict[str, int],
         compute: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """``compute()``'s arrays, read from the cache when this key was computed before by code of
    the same declared ``version`` (e.g. ``{"claim": 1}`` or ``{"monte_carlo": 1}``)."""
    if _root is None:
        return compute()
    path = _root / namespace / f"{_digest(key, version)}.npz"
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
