"""compare.stats: intervals against known values and coverage; the comparator."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnverify.compare.stats import binomial_ci, bonferroni_z, bootstrap_ci, compare, mean_ci


def test_clopper_pearson_known_values():
    lo, hi = binomial_ci(6, 6)
    assert lo == pytest.approx(0.025 ** (1 / 6)) and hi == 1.0
    lo, hi = binomial_ci(0, 10)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10))


@given(st.integers(1, 60), st.data())
def test_binomial_interval_contains_the_estimate(n, data):
    k = data.draw(st.integers(0, n))
    lo, hi = binomial_ci(k, n)
    assert 0 <= lo <= k / n <= hi <= 1


def test_mean_ci_coverage():
    """A 95% t-interval covers the true mean in about 95% of 2000 samples of size 5."""
    rng = np.random.default_rng(0)
    hits = sum(lo <= 1.0 <= hi for lo, hi in (mean_ci(rng.normal(1.0, 2.0, 5))
                                               for _ in range(2000)))
    # binomial SE of a 95% rate over 2000 trials is 0.0049; allow 4 SE
    assert abs(hits / 2000 - 0.95) < 4 * 0.0049


def test_mean_ci_edge_cases():
    assert mean_ci([3.0, 3.0]) == (3.0, 3.0)
    assert mean_ci([1.0]) == (-np.inf, np.inf)
    with pytest.raises(ValueError):
        mean_ci([])


def test_bootstrap_ci_brackets_the_median_and_is_seeded():
    x = np.random.default_rng(1).normal(size=50)
    lo, hi = bootstrap_ci(x)
    assert lo <= np.median(x) <= hi
    assert bootstrap_ci(x) == (lo, hi)
    assert bootstrap_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)


def test_compare_relative_and_absolute_tolerance():
    assert compare(1.0, 1.05, rtol=0.1).passed
    assert not compare(1.0, 1.2, rtol=0.1).passed
    assert compare(0.0, 1e-9, atol=1e-8).passed
    c = compare([1.0, 2.0, 3.0], [1.0, 2.5, 3.0], rtol=0.1)
    assert not c.passed and c.worst_index == (1,) and c.max_abs_error == pytest.approx(0.5)
    assert not compare(1.0, np.nan, rtol=1.0).passed
    assert compare([1.0, 2.0], [1.1, 2.0], atol=[0.2, 0.0]).passed
    with pytest.raises(ValueError, match="shape"):
        compare([1.0, 2.0], [1.0])


def test_bonferroni_z():
    assert bonferroni_z(1, 0.05) == pytest.approx(1.959964, rel=1e-5)
    assert bonferroni_z(100, 0.05) > bonferroni_z(10, 0.05)


def test_mean_difference_test_is_the_exact_permutation_test_of_the_shifted_samples():
    """Against a brute-force enumeration of every split on small samples, both ways and
    shifted; and it is deterministic where it samples."""
    import itertools

    from attnverify.compare.stats import mean_difference_test

    a, b = [0.9, 0.7, 0.8, 0.95], [0.2, 0.4, 0.75]

    def brute(delta, alternative):
        x = np.asarray(a) - delta
        pooled = np.concatenate([x, b])
        observed = x.mean() - np.mean(b)
        diffs = []
        for idx in itertools.combinations(range(len(pooled)), len(a)):
            mask = np.zeros(len(pooled), bool)
            mask[list(idx)] = True
            diffs.append(pooled[mask].mean() - pooled[~mask].mean())
        diffs = np.array(diffs)
        tail = diffs >= observed - 1e-12 if alternative == "greater" else diffs <= observed + 1e-12
        return tail.mean()

    for delta, alternative in ((0.0, "greater"), (0.0, "less"), (0.3, "less"), (0.6, "less")):
        assert mean_difference_test(a, b, delta, alternative) == pytest.approx(
            brute(delta, alternative)), (delta, alternative)
    big_a, big_b = np.linspace(0, 1, 20), np.linspace(0.1, 0.9, 20)  # C(40, 20) splits
    first = mean_difference_test(big_a, big_b, 0.1, "less")
    assert first == mean_difference_test(big_a, big_b, 0.1, "less") and 0 < first < 0.5
    with pytest.raises(ValueError, match="alternative"):
        mean_difference_test(a, b, 0.0, "two-sided")
    with pytest.raises(ValueError, match="both groups"):
        mean_difference_test([], b, 0.0, "less")
