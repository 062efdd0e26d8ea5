"""LocAteR candidates: regularizers that shrink the QK eigenspectrum's scale while keeping its
mean (Bao, Hataya, Karakida 2024). The paper's exact formula is unknown [U]; these are
attnverify's candidates with their gradients in closed form (derived), for a direct-W
parametrisation (docs/derivations.md#locater-candidates).

- ``A`` (default): ``R_A = tr(W W^T)/d - (tr W / d)^2``, the eigenvalue variance for symmetric W.
  ``grad R_A = (2/d) W - (2/d^2) (tr W) I`` is traceless, so a gradient step keeps ``tr W`` (the
  eigen-mean) exactly and scales ``W - (tr W/d) I`` by ``1 - 2 eta / d``.
- ``B``: ``R_B = tr(W W^T)/d + kappa (tr W / d - m0)^2``, a scale penalty with a trace anchor.
- ``C``: ``R_C = d tr(W W^T) / (tr W)^2``, scale-free (``1 + sigma^2/m^2`` for symmetric W).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

KINDS = ("A", "B", "C")


def _check(W: np.ndarray) -> np.ndarray:
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"W must be a square matrix; got shape {W.shape}")
    return W


def locater_a(W: np.ndarray) -> tuple[float, np.ndarray]:
    """``R_A(W)`` and its gradient."""
    W = _check(W)
    d = W.shape[0]
    tr = np.trace(W)
    value = np.sum(W * W) / d - (tr / d) ** 2
    return float(value), 2 * W / d - 2 * tr / d**2 * np.eye(d)


def locater_b(W: np.ndarray, m0: float, kappa: float = 1.0) -> tuple[float, np.ndarray]:
    """``R_B(W)`` and its gradient (``m0`` is held fixed: a stop-gradient target)."""
    W = _check(W)
    d = W.shape[0]
    gap = np.trace(W) / d - m0
    value = np.sum(W * W) / d + kappa * gap**2
    return float(value), 2 * W / d + 2 * kappa * gap / d * np.eye(d)


def locater_c(W: np.ndarray) -> tuple[float, np.ndarray]:
    """``R_C(W)`` and its gradient (undefined at tr W = 0: ValueError)."""
    W = _check(W)
    d = W.shape[0]
    tr = np.trace(W)
    if tr == 0:
        raise ValueError("R_C is undefined for tr W = 0 (zero eigen-mean)")
    frob2 = np.sum(W * W)
    value = d * frob2 / tr**2
    return float(value), 2 * d * W / tr**2 - 2 * d * frob2 / tr**3 * np.eye(d)


def locater(kind: str = "A") -> Callable[..., tuple[float, np.ndarray]]:
    """The regularizer named ``kind`` (A, B or C)."""
    table: dict[str, Callable[..., tuple[float, np.ndarray]]] = {
        "A": locater_a, "B": locater_b, "C": locater_c}
    if kind not in table:
        raise ValueError(f"unknown LocAteR kind {kind!r}; accepted: {', '.join(KINDS)}")
    return table[kind]
