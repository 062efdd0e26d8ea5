"""Eigenspectrum statistics of a query-key matrix W_QK
(docs/derivations.md#eigenspectrum-statistics).

For a general W the spectrum is complex, so the statistics are defined through traces
(attnverify's default): ``mean = tr W / d`` (the mean of the eigenvalues, real), the
variance of the symmetric part ``var_sym = tr(W_s^2)/d - mean^2`` with ``W_s = (W + W^T)/2``
(the eigenvalue variance when W is symmetric), the Frobenius scale ``frob2 = ||W||_F^2 / d`` and
``tr_w2 = tr(W^2)/d``. For symmetric W with eigenvalue mean m and std sigma:
``tr W = d m`` and ``tr W^2 = ||W||_F^2 = d (sigma^2 + m^2)`` (:func:`spectrum_traces`).

The empirical side logs the same statistics of trained weights (``empirics.eigen_stats``, in
torch); a test checks that the two agree.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from attnverify.theory.bao.moments import spectrum_traces

__all__ = ["SpectrumStats", "spectrum_stats", "spectrum_traces"]


class SpectrumStats(NamedTuple):
    mean: float
    var_sym: float
    frob2: float
    tr_w2: float

    @property
    def std(self) -> float:
        """The eigenvalue std of a symmetric W (of the symmetric part otherwise)."""
        return float(np.sqrt(max(self.var_sym, 0.0)))


def spectrum_stats(W: np.ndarray) -> SpectrumStats:
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"W must be a square matrix; got shape {W.shape}")
    d = W.shape[0]
    mean = np.trace(W) / d
    sym = (W + W.T) / 2
    return SpectrumStats(mean=float(mean), var_sym=float(np.sum(sym * sym) / d - mean**2),
                         frob2=float(np.sum(W * W) / d), tr_w2=float(np.trace(W @ W) / d))
