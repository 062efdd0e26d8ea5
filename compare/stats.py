"""The statistics every claim uses: confidence intervals and a theory-vs-estimate comparator.

- :func:`binomial_ci`: exact (Clopper-Pearson) interval for a success rate over seeds.
- :func:`mean_ci`: Student-t interval for a mean over a few seeds (honest at small n, where a
  percentile bootstrap is too narrow).
- :func:`bootstrap_ci`: percentile bootstrap for statistics without a closed-form interval.
- :func:`max_abs_z`, :func:`normal_ci`, :func:`mean_and_se`: Monte Carlo estimates against
  theory, in standard errors.
- :func:`compare_groups`: two groups of runs with a time to success each (censored at the
  budget when a run never succeeds): exact tests on the success counts and the log-rank test
  on the censored times; :func:`rate_difference_test`: exact unconditional test of a shifted
  difference of two rates (the smallest effect that matters, for refuting it);
  :func:`mean_difference_test`: permutation test of a shifted difference of two means (a
  smallest difference of bounded per-run values, for refuting it).
- :func:`rank_trend_test`: Spearman's rho of x and y with one-sided permutation p-values (exact
  level with ties in blocks, where the t approximation is not).
- :func:`holm`, :func:`benjamini_hochberg`: multiplicity adjustment over the paper claims.
- :func:`compare`: theory vs estimate with a relative and an absolute tolerance, elementwise,
  ``|estimate - theory| <= atol + rtol * |theory|`` (the convention of ``numpy.isclose``; the
  report of the worst element follows neural-tangents' ``assert_close_matrices``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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
                          n_resamples=n_resamples, rng=np.random.default_rng(seed))
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


@dataclass(frozen=True)
class GroupComparison:
    """Group A against group B, one run per seed, each with its step of success or None
    (:func:`compare_groups`). One-sided p-values in both directions; "worse" for A means
    fewer successes (Fisher) or later success with failures censored at the budget
    (log-rank)."""

    successes: tuple[int, int]
    n: tuple[int, int]
    median_steps: tuple[float | None, float | None]
    """Kaplan-Meier median step of success (None: half the group or more never succeeded)."""
    restricted_mean_steps: tuple[float, float]
    """Restricted mean step of success up to the budget: the area under the Kaplan-Meier
    curve of "not yet succeeded" from 0 to the budget. Every censored run is censored at the
    budget, so it is the mean of min(step, budget) with a run that never succeeds at the
    budget; the one summary that, like the log-rank test, grows with both "less often" and
    "more slowly"."""
    fisher_p_a_worse: float
    fisher_p_a_better: float
    logrank_p_a_slower: float
    logrank_p_a_faster: float

    def rates(self) -> tuple[float, float]:
        return self.successes[0] / self.n[0], self.successes[1] / self.n[1]


def compare_groups(steps_a: Sequence[int | None], steps_b: Sequence[int | None],
                   budget: int) -> GroupComparison:
    """Success counts (Fisher's exact test) and times to success (log-rank on right-censored
    times: a run that never succeeds is censored at ``budget``; ``scipy.stats.logrank``, a
    normal approximation) of group A against group B, one-sided both ways."""
    if not steps_a or not steps_b:
        raise ValueError("compare_groups needs at least one run in each group")
    ok = [sum(s is not None for s in group) for group in (steps_a, steps_b)]
    n = [len(steps_a), len(steps_b)]
    table = [[ok[0], n[0] - ok[0]], [ok[1], n[1] - ok[1]]]
    data = [_censored(group, budget) for group in (steps_a, steps_b)]

    def logrank(alternative: str) -> float:
        if ok[0] + ok[1] == 0:  # no event: the times say nothing
            return 1.0
        with np.errstate(invalid="ignore", divide="ignore"):
            p = float(stats.logrank(data[0], data[1], alternative=alternative).pvalue)
        return 1.0 if np.isnan(p) else p  # no variance (every run learns at one step)

    return GroupComparison(
        successes=(ok[0], ok[1]), n=(n[0], n[1]),
        median_steps=(_km_median(data[0]), _km_median(data[1])),
        restricted_mean_steps=(_restricted_mean(steps_a, budget),
                               _restricted_mean(steps_b, budget)),
        fisher_p_a_worse=float(stats.fisher_exact(table, alternative="less").pvalue),
        fisher_p_a_better=float(stats.fisher_exact(table, alternative="greater").pvalue),
        logrank_p_a_slower=logrank("less"),  # A's rate of success lower: A slower
        logrank_p_a_faster=logrank("greater"))


def _times(steps: Sequence[int | None], budget: int) -> np.ndarray:
    """Each run's step of success, or ``budget`` where it never succeeded."""
    return np.array([budget if s is None else s for s in steps], dtype=float)


def _censored(steps: Sequence[int | None], budget: int) -> stats.CensoredData:
    return stats.CensoredData.right_censored(_times(steps, budget),
                                             np.array([s is None for s in steps]))


def _restricted_mean(steps: Sequence[int | None], budget: int) -> float:
    return float(np.minimum(_times(steps, budget), budget).mean())


def _km_median(data: stats.CensoredData) -> float | None:
    """The first time the Kaplan-Meier survival (not yet succeeded) falls to 0.5 or below."""
    if data.num_censored() == len(data):
        return None
    sf = stats.ecdf(data).sf
    below = np.flatnonzero(sf.probabilities <= 0.5)
    return float(sf.quantiles[below[0]]) if below.size else None


NUISANCE_GRID = 2001
"""Points of the nuisance rate over which :func:`rate_difference_test` takes its supremum."""


def rate_difference_test(k_a: int, n_a: int, k_b: int, n_b: int, delta: float,
                         alternative: str) -> float:
    """Exact unconditional p-value for the difference of two binomial rates, d = p_b - p_a,
    with the statistic D = k_b/n_b - k_a/n_a and the supremum over the nuisance rate (a grid
    of :data:`NUISANCE_GRID` points; Suissa and Shuster 1985):

    - ``"greater"``: H: d <= delta against d > delta; p = sup P(D >= D_obs | d = delta);
    - ``"less"``: H: d >= delta against d < delta; p = sup P(D <= D_obs | d = delta).

    With ``delta = 0`` and ``"greater"`` it tests "B succeeds more often than A"; with the
    smallest difference that matters and ``"less"`` it tests that the difference is smaller
    than that, which refutes a claimed effect of that size.
    """
    if alternative not in ("greater", "less"):
        raise ValueError(f"alternative must be 'greater' or 'less'; got {alternative!r}")
    if not -1 < delta < 1:
        raise ValueError(f"delta must be in (-1, 1); got {delta!r}")
    for k, n in ((k_a, n_a), (k_b, n_b)):
        if n < 1 or not 0 <= k <= n:
            raise ValueError(f"successes must be in [0, n] with n >= 1; got {k} of {n}")
    d = np.arange(n_b + 1)[None, :] / n_b - np.arange(n_a + 1)[:, None] / n_a
    observed = k_b / n_b - k_a / n_a
    tail = d >= observed - 1e-12 if alternative == "greater" else d <= observed + 1e-12
    p_a = np.linspace(max(0.0, -delta), min(1.0, 1.0 - delta), NUISANCE_GRID)
    pmf_a = stats.binom.pmf(np.arange(n_a + 1)[None, :], n_a, p_a[:, None])
    pmf_b = stats.binom.pmf(np.arange(n_b + 1)[None, :], n_b, (p_a + delta)[:, None])
    prob = np.einsum("gi,gj,ij->g", pmf_a, pmf_b, tail.astype(float))
    return float(min(1.0, prob.max()))


MEAN_DIFFERENCE_RESAMPLES = 200_000
"""Resamples of :func:`mean_difference_test` beyond which it samples (fixed seed); below, it
enumerates every split (two groups of 10: 184,756)."""


def mean_difference_test(a: ArrayLike, b: ArrayLike, delta: float, alternative: str) -> float:
    """Permutation p-value for d = mean(a) - mean(b) against ``delta``, under the shift model
    (the test of ``a - delta`` against ``b``; Lehmann, Nonparametrics, ch. 2): ``"greater"``
    tests H: d <= delta against d > delta, ``"less"`` H: d >= delta against d < delta. Exact
    where the splits of the pooled sample number at most :data:`MEAN_DIFFERENCE_RESAMPLES`,
    else that many random splits from a fixed seed (the same p for the same data)."""
    if alternative not in ("greater", "less"):
        raise ValueError(f"alternative must be 'greater' or 'less'; got {alternative!r}")
    x, y = np.asarray(a, dtype=float) - delta, np.asarray(b, dtype=float)
    if x.size < 1 or y.size < 1:
        raise ValueError(f"both groups need a value; got {x.size} and {y.size}")

    def difference(u: np.ndarray, v: np.ndarray, axis: int) -> np.ndarray:
        return u.mean(axis=axis) - v.mean(axis=axis)

    result = stats.permutation_test((x, y), difference, permutation_type="independent",
                                    alternative=alternative, vectorized=True,
                                    n_resamples=MEAN_DIFFERENCE_RESAMPLES,
                                    rng=np.random.default_rng(0))
    return float(result.pvalue)


def bonferroni_min(p_values: Iterable[float], n_tests: int | None = None) -> float:
    """The family-wise p-value that some one of the tests rejects (Bonferroni): the smallest
    p-value times the number of tests (``n_tests``, else how many are given), at most 1; 1
    where there are none."""
    p = list(p_values)
    return min(1.0, min(p, default=1.0) * max(n_tests if n_tests is not None else len(p), 1))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error), in the input order."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return [float(x) for x in out]


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (false discovery rate; scipy's
    ``false_discovery_control``), in the input order."""
    if not p_values:
        return []
    return [float(x) for x in stats.false_discovery_control(np.asarray(p_values, dtype=float))]


@dataclass(frozen=True)
class RankTrend:
    rho: float
    p_greater: float
    """One-sided permutation p-value of a positive relation."""
    p_less: float


def _spearman_with(x: Sequence[float]) -> Callable[..., np.ndarray]:
    """Spearman's rho of ``x`` with ``y`` along ``axis`` (vectorised over resamples)."""
    rx = stats.rankdata(x)
    rx = (rx - rx.mean()) / np.linalg.norm(rx - rx.mean())

    def statistic(y: np.ndarray, axis: int = -1) -> np.ndarray:
        ry = np.moveaxis(stats.rankdata(y, axis=axis), axis, -1)
        ry = ry - ry.mean(axis=-1, keepdims=True)
        norm = np.linalg.norm(ry, axis=-1)
        return np.where(norm > 0, (ry @ rx) / np.where(norm > 0, norm, 1.0), 0.0)

    return statistic


def rank_trend_test(x: Sequence[float], y: Sequence[float] | np.ndarray,
                    n_resamples: int = 9999, seed: int = 0) -> RankTrend:
    """Spearman's rho of ``x`` and ``y`` with one-sided p-values from permuting ``y``
    (``scipy.stats.permutation_test``, pairings; exact when there are fewer distinct pairings
    than ``n_resamples``). Ties (blocks of equal x, a common censoring value in y) keep the
    test's level. (nan, 1, 1) when x or y is constant."""
    if len(set(x)) < 2 or len(set(y)) < 2:
        return RankTrend(float("nan"), 1.0, 1.0)
    statistic = _spearman_with(x)
    p = {side: float(stats.permutation_test(
        (np.asarray(y, float),), statistic, permutation_type="pairings", alternative=side,
        n_resamples=n_resamples, vectorized=True, rng=np.random.default_rng(seed)).pvalue)
        for side in ("greater", "less")}
    return RankTrend(float(stats.spearmanr(x, y).statistic), p["greater"], p["less"])
