"""What the Bao Monte Carlo claims share: the token model the derivation assumes (stated in every
report section), Monte Carlo sample sizes per profile, the W of a (d, mean, std) point with common
random numbers, the z-test of Monte Carlo moments against theory, the wording their protocols
share (:func:`derivation`), the regime thresholds and the up-front checks of their parameters
(``Params.__post_init__``: the values the theory and the Monte Carlo would refuse only when they
compute)."""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
import torch

from attnverify import theory
from attnverify.compare.memo import memo
from attnverify.compare.protocol import Protocol, derivation_protocol
from attnverify.compare.space import Dimension
from attnverify.compare.stats import bonferroni_z
from attnverify.empirics import (
    ScoreSample,
    factored_qk,
    sample_scores_many,
    symmetric_qk,
)
from attnverify.empirics.probes import score_monte_carlo

TOKEN_MODEL = (
    "Token model of the derivation (docs/derivations.md#random-walk-token-model, not the "
    "paper's own statement, which was not available): tokens are an isotropic Gaussian random "
    "walk, Cov(x_j, x_k) = min(j, k)/T I; "
    "the query is the last token; scores z_t = x_T^T W x_t / sqrt(d) are centred over the keys; "
    "rho_t = P(0 < z~_t < 1) with z~_t taken as Gaussian (the surrogate's linear region (0, 1))."
)

MONTE_CARLO: dict[str, dict[str, Any]] = {
    "smoke": {"n_samples": 1_000, "seed": 0},
    "quick": {"n_samples": 4_000, "seed": 0},
    "full": {"n_samples": 20_000, "seed": 0},
}
"""Walks per point. 4,000 is the minimum of the reconstruction's test plan for the moment
tests."""

FAMILY_ALPHA = 1e-3
"""Family-wise false-alarm rate of every z-test family (Bonferroni over positions and points)."""

WIDTH = Dimension("width d of the query-key matrix", values=(64, 32, 16, 128))
"""The widths the regime claims are searched over (the default first)."""
EIG_MEAN = Dimension("mean m of the W_QK eigenspectrum", values=(0.1, 0.2, 0.05, -0.1, 0.3))
"""The eigen-means the fixed-mean claims are searched over (the default first)."""
UNIFORM = theory.bao.propagation.UNIFORM_PARTICIPATION
"""N_eff/T at or above which a rho-profile is flat (the regime classifier's 'uniform')."""
VANISHING = theory.bao.propagation.VANISHING_MAX
"""max rho below which a rho-profile has vanished (the regime classifier's 'vanishing')."""


class Spectrum(NamedTuple):
    """One (eigen-mean, eigen-std) of W_QK: a cell of a claim's parameters."""

    eig_mean: float
    eig_std: float


def check_width(name: str, d: int) -> None:
    """ValueError unless ``d`` (the field ``name``) is a width >= 1."""
    if d < 1:
        raise ValueError(f"{name} must be an integer >= 1 (a width d); got {d!r}")


def check_length(T: int) -> None:
    """ValueError unless the sequence length T is >= 2 (the theory's domain)."""
    if T < 2:
        raise ValueError(f"T must be an integer >= 2 (one query and its keys); got {T!r}")


def check_mean(name: str, value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number; got {value!r}")


def check_std(name: str, value: float) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite eigen-std, std >= 0; got {value!r}")


def check_each(check: Any, name: str, values: Iterable[Any]) -> None:
    """``check`` on every value of the list field ``name`` (an empty list is left to
    ``Claim.check_params``, which names it)."""
    for value in values:
        check(f"every value of {name}", value)


def check_seed(name: str, seed: int) -> None:
    """ValueError unless the seed is >= 0 (numpy's generators take no negative seed)."""
    if seed < 0:
        raise ValueError(f"{name} must be an integer >= 0; got {seed!r}")


def check_spectra(name: str, cases: Iterable[Spectrum]) -> None:
    """Each (eigen-mean, eigen-std) of the list field ``name``: finite, the std >= 0."""
    for case in cases:
        check_mean(f"the eigen-mean of every case of {name}", case[0])
        check_std(f"the eigen-std of every case of {name}", case[1])


def qk_matrix(d: int, eig_mean: float, eig_std: float, seed: int,
              symmetric: bool = True) -> torch.Tensor:
    """The W of a point. Symmetric: exact eigen-mean and -std with Haar eigenvectors; the same
    ``seed`` gives the same eigenvectors and standardised noise for every (mean, std) (common
    random numbers). Non-symmetric: ``W_Q W_K^T`` from Gaussian factors plus ``eig_mean I``,
    with ``||W_Q W_K^T||_F^2 / d`` about ``eig_std^2``."""
    generator = torch.Generator().manual_seed(seed)
    if symmetric:
        return symmetric_qk(d, eig_mean, eig_std, generator)
    return factored_qk(d, d, generator, scale=eig_std) + eig_mean * torch.eye(d,
                                                                                dtype=torch.float64)


MC_VERSION = {"monte_carlo": score_monte_carlo.MONTE_CARLO_VERSION}
"""The declared version of the Monte Carlo summaries (it enters their memo keys)."""


@dataclass(frozen=True)
class ScorePoint:
    """One Monte Carlo point: W's width, eigen-mean and -std and kind, the sequence length, and
    the offset of its seeds from the profile's (W's and the walks')."""

    d: int
    T: int
    eig_mean: float
    eig_std: float
    symmetric: bool = True
    offset: int = 0


def mc_key(w: torch.Tensor, T: int, n: int, seed: int) -> dict[str, Any]:
    """The memo key of a Monte Carlo over ``n`` walks of length T from walk seed ``seed`` for
    the matrix ``w`` (W is drawn by torch, the walks by numpy: both versions enter it)."""
    return {"w_sha": hashlib.sha256(w.numpy().tobytes()).hexdigest(), "T": T, "n": n,
            "seed": seed, "torch": torch.__version__, "numpy": np.__version__}


class _SharedDraw:
    """The Monte Carlo samples of W's that share their walks, drawn for all of them the first
    time one of them is not in the cache."""

    def __init__(self, ws: list[torch.Tensor], T: int, n: int, seed: int) -> None:
        self.ws, self.T, self.n, self.seed = ws, T, n, seed
        self.samples: list[dict[str, np.ndarray]] | None = None

    def arrays(self, k: int) -> dict[str, np.ndarray]:
        """The k-th W's sample, as the arrays the cache stores."""
        if self.samples is None:
            self.samples = [sample.arrays() for sample in sample_scores_many(
                self.ws, self.T, self.n, seed=self.seed)]
        return self.samples[k]


def scores_at(d: int, T: int, eig_mean: float, eig_std: float, params: dict[str, Any],
              symmetric: bool = True, offset: int = 0) -> tuple[torch.Tensor, ScoreSample]:
    """W and its Monte Carlo scores at one point (:func:`scores_at_many`)."""
    return scores_at_many([ScorePoint(d, T, eig_mean, eig_std, symmetric, offset)], params)[0]


def scores_at_many(points: Sequence[ScorePoint], params: dict[str, Any]
                   ) -> list[tuple[torch.Tensor, ScoreSample]]:
    """W and its Monte Carlo scores at each point; the walks depend only on the seed, the
    ``offset``, d and T (common random numbers across (mean, std)), and points that share them
    are scored on one draw of them (:func:`~attnverify.empirics.sample_scores_many`: the same
    numbers as one point at a time). Cached per point (:mod:`compare.memo`)."""
    ws = [qk_matrix(p.d, p.eig_mean, p.eig_std, params["seed"] + p.offset, p.symmetric)
          for p in points]
    groups: dict[tuple[int, int, int], list[int]] = {}
    for i, p in enumerate(points):
        groups.setdefault((p.d, p.T, params["seed"] + 10_000 + p.offset), []).append(i)
    out: dict[int, ScoreSample] = {}
    for (_, T, walk_seed), members in groups.items():
        draw = _SharedDraw([ws[i] for i in members], T, params["n_samples"], walk_seed)
        for k, i in enumerate(members):
            key = mc_key(ws[i], T, params["n_samples"], walk_seed)
            out[i] = ScoreSample.from_arrays(
                memo("bao_scores", key, MC_VERSION, functools.partial(draw.arrays, k)))
    return [(w, out[i]) for i, w in enumerate(ws)]


def z_bound(n_tests: int) -> float:
    return bonferroni_z(n_tests, FAMILY_ALPHA)


def mc_summary(rho_mc: np.ndarray) -> dict[str, float]:
    """N_eff/T, max and mean of a Monte Carlo rho-profile."""
    loc = theory.bao.localization(rho_mc)
    return {"participation_ratio": float(loc.participation) / rho_mc.size,
            "max_rho": float(loc.max), "mean_rho": float(loc.mean)}


def draw_points(n_points: int, seed: int) -> list[tuple[int, int, float, float]]:
    """Random (d, T, mean, std) in the ranges of the reconstruction's test plan: d in [16, 128]
    (log-uniform), T in [16, 256], mean in [-0.3, 0.3], std in [0, 0.5]."""
    rng = np.random.default_rng(seed)
    return [(round(2 ** rng.uniform(4, 7)), int(rng.integers(16, 257)),
             round(float(rng.uniform(-0.3, 0.3)), 4), round(float(rng.uniform(0, 0.5)), 4))
            for _ in range(n_points)]


FROZEN = "2026-11-25"
"""The date the Bao claims' protocols were fixed (the entropy-collapse claim's: 2026-11-26)."""
MC_UNIT = ("a Monte Carlo statistic over random-walk sequences (1,000 / 4,000 / 20,000 walks at "
           "smoke / quick / full, seed 0) under the spec's token model")
TOKEN_MODEL_WEAKNESS = ("the token model (Gaussian random walk, last-token query) is the spec's, "
                        "not the paper's (unavailable): agreement checks our code, not the paper")
NO_PRECONDITION = "no testability precondition is checked"


def derivation(endpoint: str, unit: str, test: str, confirm: str, refute: str, *,
               h0: str | None = None, h1: str | None = None, error_rates: str | None = None,
               precondition: str = "", secondary: tuple[str, ...] = (),
               weaknesses: tuple[str, ...] = ()) -> Protocol:
    """The protocol of a derivation check (:func:`derivation_protocol`) with the claim's own
    rule, testability precondition and what a sceptical reader should know (the token
    model's weakness added to every one)."""
    overrides: dict[str, Any] = {name: value for name, value in (("h0", h0), ("h1", h1),
                                                               ("error_rates", error_rates))
                                 if value is not None}
    return replace(derivation_protocol(endpoint, unit, test, FROZEN, secondary),
                   confirm=confirm, refute=refute, precondition=precondition,
                   weaknesses=(*weaknesses, TOKEN_MODEL_WEAKNESS), **overrides)
