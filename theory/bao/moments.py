"""Exact moments of the centred attention scores under the random-walk token model
(derived by attnverify, not stated in the paper; docs/derivations.md#random-walk-token-model and
docs/derivations.md#score-moments).

Token model: ``x_t = sum_{u<=t} eps_u`` with ``eps_u ~ N(0, (sx2/T) I_d)``, t = 1..T, so
``Cov(x_j, x_k) = sx2 min(j, k)/T I``. The query is the last token ``q = x_T``; the score of key t
is ``z_t = c q^T W x_t`` and the surrogate acts on the centred scores
``z~_t = z_t - (1/T) sum_j z_j = c q^T W y_t`` with ``y_t = x_t - xbar``. Isserlis' theorem for
jointly Gaussian isotropic vectors gives, for a general (non-symmetric) W,

    mu_t = c C_t tr W,        v_t = c^2 (A B_t ||W||_F^2 + C_t^2 tr(W^2)),

with the scalar covariances ``A = Var-scale(q)``, ``B_t = Var-scale(y_t)``, ``C_t = Cov-scale(q,
y_t)`` of :func:`walk_covariances`. Everything is vectorized: trace arguments broadcast against
each other and against the position axis, which is always the last one.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from attnverify.theory.prediction import Prediction

SOURCE = ("derived by attnverify (Isserlis' theorem under the random-walk token model), not "
          "stated in Bao, Hataya, Karakida 2024 (arXiv:2402.02098): "
          "docs/derivations.md#score-moments (§3.2)")
ASSUMPTIONS = (
    "tokens are an isotropic Gaussian random walk, Cov(x_j, x_k) = sx2 min(j, k)/T I",
    "the query is the last token x_T and sees every key",
    "scores are centred over the keys (softmax is shift-invariant)",
    "biases of the query/key maps are ignored",
)


class WalkCovariances(NamedTuple):
    """Scalar covariance scales of the walk: ``A`` (query), ``B`` and ``C`` (per position)."""

    A: float
    B: np.ndarray
    C: np.ndarray


def walk_covariances(T: int, sx2: float = 1.0) -> WalkCovariances:
    """Exact discrete ``A``, ``B_t``, ``C_t`` (docs/derivations.md#random-walk-token-model),
    positions t = 1..T.

    ``C_t = sx2 [t/T - (T+1)/(2T)]`` and
    ``B_t = sx2 [t/T - 2 (t(t+1)/2 + t(T-t))/T^2 + (T+1)(2T+1)/(6T^2)]``; closed forms of the
    row means and grand mean of ``min(j, k)/T``, so no T x T matrix is formed.
    """
    t = np.arange(1, T + 1, dtype=np.float64)
    row_mean = (t * (t + 1) / 2 + t * (T - t)) / T**2
    grand_mean = (T + 1) * (2 * T + 1) / (6 * T**2)
    B = sx2 * (t / T - 2 * row_mean + grand_mean)
    C = sx2 * (t / T - (T + 1) / (2 * T))
    return WalkCovariances(A=float(sx2), B=B, C=C)


class ScoreMoments(NamedTuple):
    mu: np.ndarray
    v: np.ndarray


def moments_from_traces(tr_w: np.ndarray | float, tr_w2: np.ndarray | float,
                        frob2: np.ndarray | float, T: int, c: np.ndarray | float,
                        sx2: float = 1.0) -> ScoreMoments:
    """``mu_t`` and ``v_t`` from the three traces of W: ``tr W``, ``tr W^2``, ``||W||_F^2``.

    The traces and ``c`` broadcast against each other; the result has a trailing axis of
    length T (positions t = 1..T).
    """
    cov = walk_covariances(T, sx2)
    tr_w, tr_w2, frob2, c = (np.asarray(x, dtype=np.float64)[..., None]
                             for x in (tr_w, tr_w2, frob2, c))
    mu = c * cov.C * tr_w
    v = c**2 * (cov.A * cov.B * frob2 + cov.C**2 * tr_w2)
    return ScoreMoments(mu=mu, v=v)


def spectrum_traces(d: np.ndarray | int, eig_mean: np.ndarray | float,
                    eig_std: np.ndarray | float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``tr W``, ``tr W^2`` and ``||W||_F^2`` of a symmetric d x d W whose eigenvalues have mean
    ``eig_mean`` and standard deviation ``eig_std`` (population std,
    docs/derivations.md#score-moments):
    ``tr W = d m`` and ``tr W^2 = ||W||_F^2 = d (sigma^2 + m^2)``."""
    d, m, s = (np.asarray(x, dtype=np.float64) for x in (d, eig_mean, eig_std))
    second = d * (s**2 + m**2)
    return d * m, second, second


def check_spectrum(d: int, T: int, eig_mean: float, eig_std: float) -> None:
    """ValueError naming the parameter unless d >= 1, T >= 2, eig_std >= 0, all finite."""
    value: float  # both loops' values: integers, then numbers
    for name, value in (("d", d), ("T", T)):
        if not isinstance(value, int | np.integer) or isinstance(value, bool):
            raise ValueError(f"{name} must be an integer; got {value!r}")
    if d < 1:
        raise ValueError(f"d must be an integer >= 1; got {d!r}")
    if T < 2:
        raise ValueError(f"T must be an integer >= 2 (one query and its keys); got {T!r}")
    for name, value in (("eig_mean", eig_mean), ("eig_std", eig_std)):
        if not isinstance(value, int | float | np.floating) or not np.isfinite(value):
            raise ValueError(f"{name} must be a finite number; got {value!r}")
    if eig_std < 0:
        raise ValueError(f"eig_std must be >= 0 (a standard deviation); got {eig_std!r}")


def score_moments(d: int, T: int, eig_mean: float, eig_std: float, c: float | None = None,
                  sx2: float = 1.0) -> Prediction:
    """Exact ``mu_t``, ``v_t`` (t = 1..T) for a symmetric W with the given eigen-mean and -std.

    ``c`` defaults to ``1/sqrt(d)`` (the attention scale of a head of size d).
    """
    check_spectrum(d, T, eig_mean, eig_std)
    scale = 1 / np.sqrt(d) if c is None else c
    mom = moments_from_traces(*spectrum_traces(d, eig_mean, eig_std), T=T, c=scale, sx2=sx2)
    return Prediction(
        value={"mu": mom.mu.tolist(), "v": mom.v.tolist()},
        equation="mu_t = c C_t tr W;  v_t = c^2 (A B_t ||W||_F^2 + C_t^2 tr W^2)",
        source=SOURCE, assumptions=ASSUMPTIONS, derived=True,
        params={"d": d, "T": T, "eig_mean": eig_mean, "eig_std": eig_std, "c": scale,
                "sx2": sx2},
    )


def score_moments_of_matrix(W: np.ndarray, T: int, c: float | None = None,
                            sx2: float = 1.0) -> ScoreMoments:
    """Exact ``mu_t``, ``v_t`` for any square W (symmetric or not)."""
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"W must be a square matrix; got shape {W.shape}")
    scale = 1 / np.sqrt(W.shape[0]) if c is None else c
    return moments_from_traces(np.trace(W), np.trace(W @ W), np.sum(W * W), T=T, c=scale,
                               sx2=sx2)
