"""Query-key matrices with a prescribed eigenspectrum, and the spectrum of a given one
(§3.3).

``symmetric_qk(d, mean, std)``: ``W = Q diag(lambda) Q^T`` with Q Haar-orthogonal and
``lambda = mean + std * xi``, xi standardised exactly to mean 0 and (population) std 1, so
``tr W = d mean`` and ``tr W^2 / d = std^2 + mean^2`` hold exactly. Passing the same generator
seed for several (mean, std) gives common random numbers (the same Q and xi).

``eigen_stats(W)``: the default statistics for a general W (§3.3):
``mean = tr W / d``, ``var_sym = tr(W_s^2)/d - mean^2`` with ``W_s = (W + W^T)/2`` (the eigenvalue
variance when W is symmetric), ``frob2 = ||W||_F^2 / d``, ``tr_w2 = tr(W^2)/d``.

Numerics: a change here bumps ``AttentionLMConfig.code_version`` (its spectrum metrics) and
``MONTE_CARLO_VERSION`` (the claims' QK matrices); shared helpers have no version of their own.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch


def haar_orthogonal(d: int, generator: torch.Generator,
                    dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """A Haar-distributed d x d orthogonal matrix (QR of a Gaussian matrix, signs fixed)."""
    z = torch.randn(d, d, generator=generator, dtype=dtype)
    q, r = torch.linalg.qr(z)
    return q * torch.sign(torch.diagonal(r))  # sign fix makes the distribution Haar


def standardised_noise(d: int, generator: torch.Generator,
                       dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """d values with mean exactly 0 and population std exactly 1 (zeros if d = 1)."""
    xi = torch.randn(d, generator=generator, dtype=dtype)
    xi = xi - xi.mean()
    std = xi.pow(2).mean().sqrt()
    return xi / std if std > 0 else xi


def symmetric_qk(d: int, mean: float, std: float, generator: torch.Generator,
                 dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Symmetric W with eigenvalue mean ``mean`` and std ``std`` exactly (Haar eigenvectors)."""
    if d < 1 or std < 0:
        raise ValueError(f"need d >= 1 and std >= 0; got d={d!r}, std={std!r}")
    q = haar_orthogonal(d, generator, dtype)
    eig = mean + std * standardised_noise(d, generator, dtype)
    w = (q * eig) @ q.T
    return (w + w.T) / 2  # exactly symmetric in floating point


def factored_qk(d: int, d_head: int, generator: torch.Generator, scale: float = 1.0,
                dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Non-symmetric ``W = W_Q W_K^T`` from Gaussian factors of shape (d, d_head), entries of
    variance ``scale / d_head`` (so ``||W||_F^2 / d`` is about ``scale^2 d / d_head``)."""
    wq = torch.randn(d, d_head, generator=generator, dtype=dtype) * math.sqrt(scale / d_head)
    wk = torch.randn(d, d_head, generator=generator, dtype=dtype) * math.sqrt(scale / d_head)
    return wq @ wk.T


class EigenStats(NamedTuple):
    mean: float
    var_sym: float
    frob2: float
    tr_w2: float


def eigen_stats(w: torch.Tensor) -> EigenStats:
    """Spectrum statistics of a square W (see the module docstring)."""
    d = w.shape[0]
    mean = torch.trace(w) / d
    w_sym = (w + w.T) / 2
    return EigenStats(mean=float(mean), var_sym=float((w_sym * w_sym).sum() / d - mean**2),
                      frob2=float((w * w).sum() / d), tr_w2=float(torch.trace(w @ w) / d))
