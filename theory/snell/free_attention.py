"""The minimal free-attention two-stage toy for Snell et al. (2021): derived by attnverify, not
in the paper (docs/derivations.md#free-attention-toy-and-permutation-saddle).

Parameters: a KTIW matrix B (V x V) and attention logits Q (T x L) shared across examples.
Copying, y = x, T = L:
    z_t = sum_l softmax(Q_t)_l B[x_l, :],    loss = mean over (example, t) of CE(z_t, y_t).
Exact facts: on permutations, {B row-constant, Q = 0} is invariant under gradient descent, and
(B, Q) = (0, 0) is a stationary point (every token is the target exactly once when V = L), so the
loss stays log V forever from the zero start. Subset data (V > L) break the symmetry.

numpy gradients here; the torch twin in ``empirics`` trains the same toy and the two are
cross-checked in the tests.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from attnverify.theory.prediction import Prediction

_SOURCE = ("derived by attnverify, not in Snell et al. 2021 (arXiv:2103.07601): "
           "docs/derivations.md#free-attention-toy-and-permutation-saddle (§4.6)")


def _forward(b: np.ndarray, q: np.ndarray, x: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The toy's forward pass: attention ``alpha`` (T, L), the KTIW rows of the source words
    (N, L, V) and the output log-probabilities (N, T, V)."""
    alpha = np.exp(q - q.max(axis=1, keepdims=True))
    alpha /= alpha.sum(axis=1, keepdims=True)  # (T, L)
    rows = b[x]  # (N, L, V)
    z = np.einsum("tl,nlv->ntv", alpha, rows)  # (N, T, V)
    zmax = z.max(axis=-1, keepdims=True)
    logp = z - zmax - np.log(np.exp(z - zmax).sum(axis=-1, keepdims=True))
    return alpha, rows, logp


def free_attention_loss(ktiw: ArrayLike, logits: ArrayLike, words: ArrayLike) -> float:
    """Mean cross-entropy of the toy on a batch ``words`` (N, L) of copying sequences."""
    b, q, x = np.asarray(ktiw, float), np.asarray(logits, float), np.asarray(words, int)
    _, _, logp = _forward(b, q, x)
    n, t = x.shape
    return float(-logp[np.arange(n)[:, None], np.arange(t)[None, :], x].mean())


def free_attention_gradients(ktiw: ArrayLike, logits: ArrayLike,
                             words: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Exact gradients (dLoss/dB, dLoss/dQ) of :func:`free_attention_loss`."""
    b, q, x = np.asarray(ktiw, float), np.asarray(logits, float), np.asarray(words, int)
    alpha, rows, logp = _forward(b, q, x)
    n, t = x.shape
    grad_z = np.exp(logp)  # (N, T, V): softmax - onehot, over N T terms
    grad_z[np.arange(n)[:, None], np.arange(t)[None, :], x] -= 1.0
    grad_z /= n * t
    grad_rows = np.einsum("tl,ntv->nlv", alpha, grad_z)  # (N, L, V)
    grad_b = np.zeros_like(b)
    np.add.at(grad_b, x, grad_rows)
    grad_alpha = np.einsum("ntv,nlv->tl", grad_z, rows)  # (T, L)
    grad_q = alpha * (grad_alpha - (alpha * grad_alpha).sum(axis=1, keepdims=True))
    return grad_b, grad_q


def permutation_saddle_loss(V: int) -> Prediction:
    """The loss the toy keeps forever from B = 0, Q = 0 on permutations of V tokens: log V."""
    if not isinstance(V, int) or V < 2:
        raise ValueError(f"V (vocabulary size) must be an integer >= 2; got {V!r}")
    return Prediction(value=math.log(V), equation="loss(tau) = log V for all tau",
                      source=_SOURCE, derived=True,
                      assumptions=("permutation data (V = L)", "B = 0 and Q = 0 at the start",
                                   "exact gradient descent (SGD; float round-off aside)"),
                      params={"V": V})
