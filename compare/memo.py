"""A disk cache for the computations claims do themselves (Monte Carlo estimates, the
construction), so that a warm ``verify`` recomputes nothing (the run store does the same for
training runs).

An entry is a ``.npz`` of plain arrays (loaded with ``allow_pickle=False``) under
``ROOT/memo/NAMESPACE/``, named by the SHA-256 of the call's key, the declared version of the
code that computes it (a claim's ``code_version``, or the numerics version of a shared
computation such as :data:`~attnverify.empirics.probes.score_monte_carlo.MONTE_CARLO_VERSION`) and
the package version: a bumped version or a new release recomputes (these entries cost seconds to
minutes, unlike training runs), a comment or a refactor does not. Writes are atomic (a
temporary file renamed into place); an unreadable entry (truncated, a flipped byte) is moved
aside to ``ROOT/corrupt/`` and recomputed, never used. With no root set (library use, most
tests) nothing is cached. The root is a context variable (:func:`rooted`): an evaluation
changes it for its own context only, and a thread started without a copy of that context
caches nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import uuid
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any, cast

import numpy as np

log = logging.getLogger("attnverify.memo")
_root: ContextVar[Path | None] = ContextVar("attnverify_memo_root", default=None)
"""Where entries go (``ROOT/memo``) in the current context; None: nothing is cached."""


@contextlib.contextmanager
def rooted(path: Path | None) -> Iterator[None]:
    """Cache under ``path / "memo"`` for the duration (e.g. next to a run store); ``None``
    switches caching off for the duration."""
    token = _root.set(None if path is None else Path(path) / "memo")
    try:
        yield
    finally:
        _root.reset(token)


def _digest(key: dict[str, Any], version: dict[str, int]) -> str:
    from attnverify.empirics.versions import package_version  # torch: on first use

    payload = {"key": key, "version": version, "package": package_version()}
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


DAMAGE = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error)
"""What reading a damaged ``.npz`` raises: a truncated file, a flipped byte (a zip member's
CRC), a header that is not one."""


def _move_aside(path: Path, corrupt: Path, namespace: str) -> str:
    """Rename a damaged entry into ``corrupt`` (``ROOT/corrupt/``, beside the run store's
    damaged entries; kept for inspection, never read again) under a unique name; where it went,
    in words (it stays in place, to be overwritten, when it cannot be moved)."""
    target = corrupt / f"memo.{namespace}.{path.stem}.{uuid.uuid4().hex[:8]}.npz"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(path, target)
    except FileNotFoundError:  # another process moved it first
        return "another process"
    except OSError as exc:
        return f"nowhere ({exc.strerror}); it will be overwritten"
    return str(target)


def memo(namespace: str, key: dict[str, Any], version: dict[str, int],
         compute: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """``compute()``'s arrays, read from the cache when this key was computed before by code of
    the same declared ``version`` (e.g. ``{"claim": 1}`` or ``{"monte_carlo": 1}``)."""
    root = _root.get()
    if root is None:
        return compute()
    path = root / namespace / f"{_digest(key, version)}.npz"
    if path.exists():
        try:
            with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as npz:
                return {name: npz[name] for name in npz.files}
        except DAMAGE as exc:
            aside = _move_aside(path, root.parent / "corrupt", namespace)
            log.warning("memo entry %s unreadable (%s: %s); moved to %s, recomputing",
                        path.name, type(exc).__name__, exc, aside)
    arrays = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    from attnverify.empirics.store.output_paths import atomic_file

    with atomic_file(path) as out:
        # cast: to numpy's stub any keyword might be allow_pickle (a bool)
        np.savez(out, **cast("dict[str, Any]", arrays))
    return arrays
