"""The statistics every claim uses: confidence intervals and a theory-vs-estimate comparator.

- :func:`binomial_ci`: exact (Clopper-Pearson) interval for a success rate over seeds.
- :func:`mean_ci`: Student-t interval for a mean over a few seeds (honest at small n, where a
  percentile bootstrap is too narrow).
- :func:`bootstrap_ci`: percentile bootstrap for statistics without a closed-form interval.
- :func:`max_abs_z`, :func:`normal_ci`, :func:`mean_and_se`: Monte Carlo estimates against
  theory, in standard errors.
- :func:`compare`: theory vs estimate with a relative and an absolute tolerance, elementwise,
  ``|estimate - theory| <= atol + rtol * |theory|`` (the convention of ``numpy.isclose``; the
  report of the worst element follows neural-tangents' ``assert_close_matrices``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

Interval = tuple[float, float]


def binomial_ci(successes: int, trials: int, confidence: float = 0.95) -> Interval:
    """Exact two-sided Clopper-Pearson interval for a binomial proportion."""
    if trials < 1:
        raise ValueError(f"trials must be >= 1; got {trials}")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be in [0, {trials}]; got {successes}")
    ci = stats.binomtest(successes, trials).proportion_ci(confidence, method="exact")
    return float(ci.low), float(ci.high)


def mean_ci(samples: ArrayLike, confidence: float = 0.95) -> Interval:
    """Student-t interval for the mean; a single sample gives an unbounded interval."""
    x = np.asarray(samples, dtype=float)
    if x.size == 0:
        raise ValueError("mean_ci needs at least one sample")
    mean = float(x.mean())
    if x.size == 1:
        return -np.inf, np.inf
    sem = float(x.std(ddof=1) / np.sqrt(x.size))
    if sem == 0.0:
        return mean, mean
    half = float(stats.t.ppf(0.5 + confidence / 2, df=x.size - 1)) * sem
    return mean - half, mean + half


def bootstrap_ci(samples: ArrayLike, statistic: Callable[[np.ndarray], float] = np.median,
                 confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> Interval:
    """Percentile bootstrap interval of ``statistic`` (seeded, so reports are reproducible)."""
    x = np.asarray(samples, dtype=float)
    if x.size < 2:
        raise ValueError("bootstrap_ci needs at least two samples")
    if np.all(x == x[0]):
        value = float(statistic(x))
        return value, value
    res = stats.bootstrap((x,), statistic, confidence_level=confidence, method="percentile",
                          n_resamples=n_resamples, random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


@dataclass(frozen=True)
class Comparison:
    """Outcome of :func:`compare`: whether every element is within tolerance, and the worst one."""

    passed: bool
    max_abs_error: float
    max_rel_error: float
    worst_index: tuple[int, ...]
    rtol: float
    atol: float

    def describe(self) -> str:
        return (f"max |estimate - theory| = {self.max_abs_error:.3g} "
                f"(relative {self.max_rel_error:.3g}) at index {self.worst_index}; "
                f"allowed atol + rtol*|theory| with atol={self.atol:.3g}, rtol={self.rtol:.3g}")


def compare(theory: ArrayLike, estimate: ArrayLike, rtol: float = 0.0,
            atol: ArrayLike = 0.0) -> Comparison:
    """Elementwise ``|estimate - theory| <= atol + rtol * |theory|`` (atol may be per element)."""
    t = np.asarray(theory, dtype=float)
    e = np.asarray(estimate, dtype=float)
    a = np.broadcast_to(np.asarray(atol, dtype=float), np.broadcast_shapes(t.shape, e.shape))
    if t.shape != e.shape:
        raise ValueError(f"theory shape {t.shape} != estimate shape {e.shape}")
    err = np.abs(e - t)
    allowed = a + rtol * np.abs(t)
    excess = np.where(np.isfinite(err), err - allowed, np.inf)
    worst = np.unravel_index(int(np.argmax(excess)), t.shape) if t.size else ()
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(t != 0, err / np.abs(t), np.where(err == 0, 0.0, np.inf))
    return Comparison(
        passed=bool(np.all(excess <= 0)),
        max_abs_error=float(err.max()) if t.size else 0.0,
        max_rel_error=float(rel.max()) if t.size else 0.0,
        worst_index=tuple(int(i) for i in worst),
        rtol=float(rtol),
        atol=float(a.max()) if a.size else 0.0,
    )


def max_abs_z(estimate: ArrayLike, se: ArrayLike, theory: ArrayLike) -> float:
    """Largest ``|estimate - theory| / SE`` (0 for no entries); an entry with SE 0 must agree
    to 1e-12 (else its z is infinite): exact estimates are held to round-off."""
    diff = np.abs(np.asarray(estimate, dtype=float) - np.asarray(theory, dtype=float))
    se = np.asarray(se, dtype=float)
    z = np.where(se > 0, diff / np.where(se > 0, se, 1.0), np.where(diff <= 1e-12, 0.0, np.inf))
    return float(z.max()) if z.size else 0.0


def normal_ci(value: float, se: float, z: float = 1.96) -> list[float]:
    """``[value - z se, value + z se]``: the normal-approximation interval (95% by default)."""
    return [float(value - z * se), float(value + z * se)]


def mean_and_se(samples: ArrayLike) -> tuple[float, float]:
    """Sample mean and its standard error ``SD / sqrt(n)``."""
    x = np.asarray(samples, dtype=float)
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size))


def bonferroni_z(n_tests: int, family_alpha: float = 1e-3) -> float:
    """Two-sided normal critical value with a Bonferroni correction over ``n_tests`` tests."""
    return float(stats.norm.isf(family_alpha / (2 * max(n_tests, 1))))
