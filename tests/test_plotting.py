"""The shared plot helpers (compare/report/plotting.py): the seed band is the seeds' median with
their interquartile range."""

from __future__ import annotations

import numpy as np
from scipy import stats

from attnverify.compare.report.plotting import new_figure, seed_band


def _band(ax) -> tuple[float, float]:
    (poly,) = ax.collections
    (path,) = poly.get_paths()
    ys = path.vertices[:, 1]
    return ys.min(), ys.max()


def test_the_band_is_the_seeds_interquartile_range_around_their_median():
    """Two of five seeds learn, three stay stuck: the line is the median (a stuck seed's
    curve), the band runs from the first to the third quartile and never leaves the seeds'
    values (a t-band of the mean would reach above 1 here)."""
    steps = np.arange(3.0)
    stuck, learned = np.array([0.0, 0.05, 0.1]), np.array([0.1, 0.9, 1.0])
    curves = [stuck, stuck + 0.01, stuck + 0.02, learned, learned]
    values = np.stack(curves)
    _, (ax,) = new_figure(ncols=1)
    seed_band(ax, steps, curves, "k")
    (line,) = ax.lines
    assert np.allclose(line.get_ydata(), stuck + 0.02)
    low, high = _band(ax)
    assert np.isclose(low, 0.01) and high == 1.0  # the quartiles of the seeds' own values
    half = stats.t.ppf(0.975, 4) * values.std(0, ddof=1) / np.sqrt(5)
    assert (values.mean(0) + half).max() > 1  # what the band no longer draws
    _, (ax,) = new_figure(ncols=1)
    seed_band(ax, steps, curves[:1], "k")
    assert not ax.collections  # one seed: no band
