"""The signal-propagation probability and what it says about localization
(docs/derivations.md#propagation-probability-and-rho-profile and
docs/derivations.md#regimes-and-thresholds).

``rho_t = P(0 < z~_t < 1)`` with ``z~_t ~ N(mu_t, v_t)``: the probability that the gradient passes
through token t under the piecewise-linear softmax surrogate whose linear region is (0, 1). The
formula is the one of the third-party implementation [S]; the moments it is fed with are the
derived exact ones of :mod:`theory.bao.moments`.

The summaries (mean rho, participation number, fraction above 1/2, max) are attnverify's
candidates; the paper's own scalar metric is unknown. The regime thresholds of
:func:`classify_regime` are ours (derived from the limits of the rho profile), stated in its
docstring.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
from scipy.special import ndtr

from attnverify.theory.bao.moments import (
    ASSUMPTIONS,
    check_spectrum,
    walk_covariances,
)
from attnverify.theory.prediction import Prediction

SOURCE_RHO = ("formula P(0 < z < 1): third-party implementation [S] of Bao, Hataya, Karakida "
              "2024 (arXiv:2402.02098) in Everlyn-Labs/ANTRP; moments derived by attnverify: "
              "docs/derivations.md#propagation-probability-and-rho-profile (§2.2, §3.2)")
REGIMES = ("uniform", "localized", "vanishing")


def propagation_probability(mu: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``rho = Phi((1 - mu)/sqrt(v)) - Phi(-mu/sqrt(v))`` elementwise; ``v = 0`` (a
    deterministic score, e.g. W = 0) gives the exact ``P(0 < mu < 1)``: the indicator, 0 on
    the boundary."""
    return _probability_from_sd(mu, np.sqrt(np.asarray(v, dtype=np.float64)))


def _probability_from_sd(mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """:func:`propagation_probability` from the standard deviation, so that a tiny but
    non-zero one (below 1e-154, whose square underflows to 0) keeps its limit: 1/2 at
    ``mu = 0``, not the deterministic score's 0."""
    mu = np.asarray(mu, dtype=np.float64)
    sd = np.asarray(sd, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = ndtr((1 - mu) / sd) - ndtr(-mu / sd)  # ndtr = Phi; ~5x faster than erf
    limit = ((mu > 0) & (mu < 1)).astype(np.float64)
    return np.where(sd > 0, rho, limit)


class Localization(NamedTuple):
    """Summaries of a rho-profile (last axis = positions),
    docs/derivations.md#propagation-probability-and-rho-profile."""

    mean: np.ndarray
    participation: np.ndarray
    """``N_eff = (sum rho)^2 / sum rho^2``: T for a flat profile, smaller when localized."""
    fraction_above_half: np.ndarray
    max: np.ndarray

    def participation_ratio(self, T: int) -> np.ndarray:
        return self.participation / T


def localization(rho: np.ndarray) -> Localization:
    rho = np.asarray(rho, dtype=np.float64)
    total = rho.sum(-1)
    sq = (rho**2).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        n_eff = np.where(sq > 0, total**2 / np.where(sq > 0, sq, 1.0), 0.0)
    return Localization(mean=rho.mean(-1), participation=n_eff,
                        fraction_above_half=(rho > 0.5).mean(-1), max=rho.max(-1))


VANISHING_MAX = 0.25
"""Below this max_t rho_t no token passes the gradient with even a one-in-four chance."""
UNIFORM_PARTICIPATION = 0.9
"""At or above this N_eff/T the profile has no positional selectivity."""


def classify_regime(summary: Localization, T: int) -> np.ndarray:
    """``vanishing`` when max rho < 1/4; else ``uniform`` when N_eff/T >= 0.9; else
    ``localized``. Thresholds are ours (docs/derivations.md#regimes-and-thresholds derives only
    the limits: rho -> 0 everywhere as the variance grows; a flat profile at zero mean; a window
    at non-zero mean and small variance)."""
    ratio = summary.participation_ratio(T)
    return np.where(summary.max < VANISHING_MAX, "vanishing",
                    np.where(ratio >= UNIFORM_PARTICIPATION, "uniform", "localized"))


def rho_profile_grid(d: np.ndarray | int, T: int, eig_mean: np.ndarray | float,
                     eig_std: np.ndarray | float) -> np.ndarray:
    """rho_t for every broadcast point of (d, eig_mean, eig_std) at one T: shape (..., T).

    For symmetric W with c = 1/sqrt(d) the moments factor as ``mu_t = sqrt(d) m C_t`` and
    ``v_t = (sigma^2 + m^2)(A B_t + C_t^2)`` (:mod:`theory.bao.moments` with the traces of
    :func:`spectrum_traces`), so the profile is an outer product of per-point and per-position
    factors; this is what makes a grid of a million points take about a second.
    """
    cov = walk_covariances(T)
    d, m, s = (np.asarray(x, dtype=np.float64)[..., None] for x in (d, eig_mean, eig_std))
    mu = np.sqrt(d) * m * cov.C                                  # (..., T)
    sd = np.hypot(s, m) * np.sqrt(cov.A * cov.B + cov.C**2)  # (..., T); hypot: no underflow
    return _probability_from_sd(mu, sd)


def localization_grid(d: np.ndarray | int, T: np.ndarray | int, eig_mean: np.ndarray | float,
                      eig_std: np.ndarray | float, chunk: int = 16_384,
                      threads: int | None = None) -> Localization:
    """Localization summaries at many (d, T, mean, std) points at once (1-d arrays of one
    length, or scalars broadcast to it).

    Points are grouped by T and evaluated in chunks, so memory stays at a few ``chunk * T``
    floats whatever the grid size; chunks run on ``threads`` threads (default: the usable
    cores; numpy's ufuncs release the GIL, so this is real parallelism).
    """
    d, T, m, s = np.broadcast_arrays(*(np.asarray(x) for x in (d, T, eig_mean, eig_std)))
    d, T, m, s = (x.ravel() for x in (d, T, m, s))
    out = {name: np.empty(d.shape) for name in Localization._fields}

    def work(t_value: int, sel: np.ndarray) -> None:
        summary = localization(rho_profile_grid(d[sel], t_value, m[sel], s[sel]))
        for name in Localization._fields:
            out[name][sel] = getattr(summary, name)

    jobs = []
    for t_value in np.unique(T):
        idx = np.flatnonzero(t_value == T)
        jobs += [(int(t_value), idx[i:i + chunk]) for i in range(0, idx.size, chunk)]
    n_threads = threads or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                            else os.cpu_count() or 1)
    if n_threads == 1 or len(jobs) == 1:
        for job in jobs:
            work(*job)
    else:
        with ThreadPoolExecutor(n_threads) as pool:
            list(pool.map(lambda job: work(*job), jobs))
    return Localization(**out)


def rho(d: int, T: int, eig_mean: float, eig_std: float) -> Prediction:
    """The rho-profile over positions t = 1..T for a symmetric W_QK with the given eigenvalue
    mean and std, c = 1/sqrt(d) (``attnverify predict bao.rho --d 64 --T 128 --eig-mean 0.1
    --eig-std 0.05``)."""
    check_spectrum(d, T, eig_mean, eig_std)
    profile = rho_profile_grid(d, T, eig_mean, eig_std)
    return Prediction(
        value=profile.tolist(),
        equation="rho_t = Phi((1 - mu_t)/sqrt(v_t)) - Phi(-mu_t/sqrt(v_t))",
        source=SOURCE_RHO, assumptions=(*ASSUMPTIONS, "z~_t is approximately Gaussian (large d)"),
        derived=True, params={"d": d, "T": T, "eig_mean": eig_mean, "eig_std": eig_std},
    )


def regime(d: int, T: int, eig_mean: float, eig_std: float) -> Prediction:
    """The regime (uniform / localized / vanishing) at one point, with the profile summaries."""
    check_spectrum(d, T, eig_mean, eig_std)
    summary = localization(rho_profile_grid(d, T, eig_mean, eig_std))
    label = str(classify_regime(summary, T))
    return Prediction(
        value={"regime": label, "mean_rho": float(summary.mean),
               "participation_ratio": float(summary.participation_ratio(T)),
               "fraction_above_half": float(summary.fraction_above_half),
               "max_rho": float(summary.max)},
        equation=(f"vanishing if max rho < {VANISHING_MAX}; else uniform if N_eff/T >= "
                  f"{UNIFORM_PARTICIPATION}; else localized"),
        source=("derived by attnverify from the limits of the rho profile (Bao, Hataya, Karakida "
                "2024, arXiv:2402.02098, state the regimes verbally); thresholds are "
                "attnverify's: docs/derivations.md#regimes-and-thresholds (§3.4)"),
        assumptions=ASSUMPTIONS, derived=True,
        params={"d": d, "T": T, "eig_mean": eig_mean, "eig_std": eig_std},
    )
