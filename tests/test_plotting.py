"""The shared plot helpers (compare/plotting.py): the seed band is the Student-t interval of the
mean, cut to the metric's range where one is given."""

from __future__ import annotations

import numpy as np
from scipy import stats

from attnverify.compare.plotting import SHARE, new_figure, seed_band


def _band(ax) -> tuple[float, float]:
    (poly,) = ax.collections
    (path,) = poly.get_paths()
    ys = path.vertices[:, 1]
    return ys.min(), ys.max()


def test_the_band_is_the_t_interval_and_cut_to_bounds():
    steps = np.arange(3.0)
    curves = [np.array([0.0, 0.9, 1.0]), np.array([0.1, 1.0, 1.0]), np.array([0.0, 0.6, 0.7])]
    values = np.stack(curves)
    half = stats.t.ppf(0.975, 2) * values.std(0, ddof=1) / np.sqrt(3)
    _, (ax,) = new_figure(ncols=1)
    seed_band(ax, steps, curves, "k")
    low, high = _band(ax)
    assert np.isclose(low, (values.mean(0) - half).min()) and low < 0
    assert np.isclose(high, (values.mean(0) + half).max()) and high > 1
    _, (ax,) = new_figure(ncols=1)
    seed_band(ax, steps, curves, "k", bounds=SHARE)
    assert _band(ax) == (0.0, 1.0)
    (line,) = ax.lines
    assert np.allclose(line.get_ydata(), values.mean(0))  # the mean itself is never cut
