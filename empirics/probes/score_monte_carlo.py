"""Monte Carlo estimators under the random-walk token model (§2.2): the centred
scores of the last-token query, their moments, the signal-propagation frequency, the softmax
entropy and the rank-collapse measure. These are the measured counterparts of
:mod:`theory.bao` (parallel names: ``mu``/``v``/``rho``/``entropy``).

Tokens are generated in chunks of ``chunk`` walks, so the (n, T, d) token tensor never exists at
once; only per-walk (n, T) scores are kept, and only their summaries are returned. Everything is
float64 and seeded: the same ``seed`` draws the same walks for every W (common random numbers
across the points of a sweep).

Numerics: :data:`MONTE_CARLO_VERSION` below; ``token_residual`` also enters the attention LM's
metrics, so a change of it bumps ``AttentionLMConfig.code_version`` too.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch

from attnverify.empirics.probes.attention import attention_entropy
from attnverify.empirics.tasks.random_walk import gaussian_random_walk

MONTE_CARLO_VERSION = 2
"""The numerics version of these estimators (and of the walks and QK matrices they use): bump
it when what they compute changes; it keys the claims' memo entries of Monte Carlo summaries."""


@dataclass(frozen=True)
class ScoreSample:
    """Summaries of the centred scores ``z~`` of the last-token query over n walks (per
    position: mean, variance, frequency of 0 < z~ < 1, each with its standard error) and the
    raw-score softmax entropy (n,) of the same query over its T keys. Small enough to cache:
    :meth:`arrays` / :meth:`from_arrays` round-trip it."""

    n: int
    mu_mean: np.ndarray
    mu_se: np.ndarray
    v_mean: np.ndarray
    v_se: np.ndarray
    rho_mean: np.ndarray
    rho_se: np.ndarray
    entropy: np.ndarray

    @classmethod
    def from_scores(cls, centred: np.ndarray, entropy: np.ndarray) -> ScoreSample:
        """Standard errors: SD / sqrt(n) for the mean; the delta-method ``sqrt((m4 - s^4)/n)``
        for the variance (no normality assumed); binomial for the frequency."""
        n = centred.shape[0]
        dev = centred - centred.mean(0)
        var = (dev**2).sum(0) / (n - 1)
        m4 = (dev**4).mean(0)
        inside = ((centred > 0) & (centred < 1)).mean(0)
        return cls(n=n, mu_mean=centred.mean(0), mu_se=centred.std(0, ddof=1) / math.sqrt(n),
                   v_mean=var, v_se=np.sqrt(np.maximum(m4 - var**2, 0) / n),
                   rho_mean=inside, rho_se=np.sqrt(inside * (1 - inside) / n), entropy=entropy)

    def arrays(self) -> dict[str, np.ndarray]:
        return {f.name: np.asarray(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> ScoreSample:
        values: dict[str, Any] = {
            f.name: (int(arrays[f.name]) if f.name == "n" else arrays[f.name])
            for f in fields(cls)}
        return cls(**values)

    def mu(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean per position and its standard error."""
        return self.mu_mean, self.mu_se

    def v(self) -> tuple[np.ndarray, np.ndarray]:
        """Variance per position and its standard error."""
        return self.v_mean, self.v_se

    def rho(self) -> tuple[np.ndarray, np.ndarray]:
        """Frequency of ``0 < z~_t < 1`` per position, and its binomial standard error."""
        return self.rho_mean, self.rho_se

    def mean_entropy(self) -> tuple[float, float]:
        return float(self.entropy.mean()), float(self.entropy.std(ddof=1) / math.sqrt(self.n))


def _walk_chunks(d: int, T: int, n: int, seed: int, sx2: float,
                 chunk: int) -> Iterator[torch.Tensor]:
    """Consecutive chunks (b, T, d) of the ``n`` seeded walks (numpy draws its normals in order,
    so the walks do not depend on ``chunk``)."""
    rng = np.random.default_rng(seed)
    for start in range(0, n, chunk):
        yield gaussian_random_walk(min(chunk, n - start), T, d, rng, sx2)


def _scale(w: torch.Tensor, c: float | None) -> float:
    """The score scale c: 1/sqrt(d) unless given."""
    return 1 / math.sqrt(w.shape[0]) if c is None else c


def sample_scores(w: torch.Tensor, T: int, n: int, seed: int, c: float | None = None,
                  sx2: float = 1.0, chunk: int = 512) -> ScoreSample:
    """``n`` walks scored by ``z_t = c x_T^T W x_t`` (c defaults to 1/sqrt(d))."""
    return sample_scores_many([w], T, n, seed, c, sx2, chunk)[0]


def sample_scores_many(ws: Sequence[torch.Tensor], T: int, n: int, seed: int,
                       c: float | None = None, sx2: float = 1.0,
                       chunk: int = 512) -> list[ScoreSample]:
    """:func:`sample_scores` of each W in ``ws`` (all d x d) on the same walks, drawn once:
    each W's sample is the one ``sample_scores`` returns for it alone (the walks are most of
    the time). Memory: every W's (n, T) scores at once, e.g. 11 W's of 20,000 walks of
    T = 128 hold about 225 MB."""
    ws64 = [torch.as_tensor(w, dtype=torch.float64) for w in ws]
    if not ws64:
        return []
    d = ws64[0].shape[0]
    if any(w.shape != (d, d) for w in ws64):
        raise ValueError(f"sample_scores_many: every W must be {d} x {d}")
    scale = _scale(ws64[0], c)  # one d for all
    centred: list[list[np.ndarray]] = [[] for _ in ws64]
    entropy: list[list[np.ndarray]] = [[] for _ in ws64]
    for x in _walk_chunks(d, T, n, seed, sx2, chunk):
        for i, w64 in enumerate(ws64):
            z = scale * torch.einsum("bd,btd->bt", x[:, -1] @ w64, x)             # (b, T)
            centred[i].append((z - z.mean(1, keepdim=True)).numpy())
            entropy[i].append(attention_entropy(torch.softmax(z, dim=-1)).numpy())
    return [ScoreSample.from_scores(np.concatenate(cs), np.concatenate(es))
            for cs, es in zip(centred, entropy, strict=True)]


def token_residual(x: torch.Tensor) -> torch.Tensor:
    """``res(X) = ||X - 1 xbar^T||_F / ||X||_F`` per sequence: (..., T, d) -> (...). 0 when all
    tokens are equal (rank collapse; the residual of Dong et al. 2021 in Frobenius norm)."""
    centred = x - x.mean(dim=-2, keepdim=True)
    return centred.flatten(-2).norm(dim=-1) / x.flatten(-2).norm(dim=-1)


def rank_collapse(w: torch.Tensor, T: int, n: int, seed: int, c: float | None = None,
                  chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """``res`` of the walk tokens before and after one bidirectional attention layer with
    query-key matrix W and identity values, ``Y = softmax(c X W X^T) X``: two (n,) arrays."""
    w64 = torch.as_tensor(w, dtype=torch.float64)
    scale = _scale(w64, c)
    before, after = [], []
    for x in _walk_chunks(w64.shape[0], T, n, seed, 1.0, chunk):
        alpha = torch.softmax(scale * x @ w64 @ x.transpose(1, 2), dim=-1)    # (b, T, T)
        before.append(token_residual(x).numpy())
        after.append(token_residual(alpha @ x).numpy())
    return np.concatenate(before), np.concatenate(after)
