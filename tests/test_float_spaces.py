"""Float ranges of a claim's parameter space (``compare.space.Dimension``), the integer
ranges and value lists beside them unchanged, and falsify's search over them, steered by each
point's margin to the decision boundary (``hypothesis.target``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from hypothesis import find, given, settings

from attnverify.compare.claim import Assessment, Claim, Verdict
from attnverify.compare.evaluation.falsify import VERDICT_SCORE, falsify, margins
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.space import Dimension
from attnverify.empirics import LocalExecutor, RunResult


def find_minimal(strategy: Any, condition: Any) -> Any:
    """``hypothesis.find`` without the example database (whose entries are keyed by the
    condition's code: one condition shared by several tests would replay another's example)."""
    return find(strategy, condition, settings=settings(database=None))


def test_a_float_range_draws_its_grid_and_shrinks_to_the_point_nearest_the_boundary():
    dim = Dimension("eigen-std", low=0.25, high=2.0, resolution=1024)
    assert dim.is_float and dim.bounds() == (0.25, 2.0)
    assert dim.describe() == {"doc": "eigen-std", "low": 0.25, "high": 2.0, "type": "float",
                              "resolution": 1024}
    assert find_minimal(dim.strategy(), lambda x: True) == 0.25  # the front of the dimension
    step = 1.75 / 1024
    found = find_minimal(dim.strategy(), lambda x: x >= 1.1)  # not 2.0, the simplest float
    assert found - step < 1.1 <= found
    assert dim.contains(1.1) and dim.contains(2) and not dim.contains(2.5)
    assert not dim.contains(math.nan) and not dim.contains("1.0")

    @given(x=dim.strategy())
    def on_the_grid(x):
        assert isinstance(x, float) and 0.25 <= x <= 2.0 and dim.contains(x)
        assert (x - 0.25) / step == pytest.approx(round((x - 0.25) / step), abs=1e-6)

    on_the_grid()


def test_integer_ranges_and_values_mean_what_they_meant():
    ints = Dimension("a size", low=1, high=40)
    assert not ints.is_float
    assert ints.describe() == {"doc": "a size", "low": 1, "high": 40}  # no "type" key added
    assert find_minimal(ints.strategy(), lambda x: x >= 7) == 7
    assert ints.contains(7) and not ints.contains(7.0) and not ints.contains(True)
    assert not ints.contains(41)
    values = Dimension("a mode", values=(0.1, 0.0, 0.05))
    assert not values.is_float and values.contains(0.05) and not values.contains(0.2)
    assert not Dimension("flag", values=(1, 0)).contains(True)  # True == 1, but not a value


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"low": 0.0, "high": math.nan}, "finite numbers"),
    ({"low": -math.inf, "high": 1.0}, "finite numbers"),
    ({"low": False, "high": 1.0}, "finite numbers"),
    ({"low": 2.0, "high": 1.0}, "empty range"),
    ({"low": -1e308, "high": 1e308}, "wider than a float"),
    ({}, "either an integer range"),
    ({"low": 0.0, "high": 1.0, "resolution": 0}, "resolution must be an integer >= 1"),
])
def test_bad_ranges_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Dimension("x", **kwargs)


class Boundary(Claim):
    """Refuted for x >= 0.5 (a float dimension), with a p-value that grows toward it."""

    id = "test.boundary"
    code_version = 1
    paper = "snell"
    statement = "x stays below one half"
    defaults: ClassVar[dict[str, dict[str, Any]]] = {p: {"x": 0.0}
                                                    for p in ("smoke", "quick", "full")}
    space: ClassVar[dict[str, Dimension]] = {"x": Dimension("a rate", low=0.0, high=1.0)}

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        x = params["x"]
        return Assessment(verdict=Verdict.REFUTED if x >= 0.5 else Verdict.CONFIRMED,
                          theory="< 0.5", empirical=Measurement(x), statistic="x",
                          tolerance=Tolerance(),
                          explanation=f"x = {x}", p_value=min(1.0, 0.01 + x))


def test_falsify_searches_a_float_range_and_steers_by_the_margin(store):
    executor = LocalExecutor(store, workers=1, progress=False)
    result = falsify(Boundary(), "smoke", executor, budget=60, seed=0)
    assert result.found and result.counterexample.point == {"x": 0.5}
    assert result.space == {"x": {"doc": "a rate", "low": 0.0, "high": 1.0, "type": "float",
                                  "resolution": 1024}}
    # every point records what the search steered by (the claim declares no protocol: no alpha)
    assert all(p.margins == {"verdict": VERDICT_SCORE[Verdict(p.verdict)]}
               for p in result.evaluated)


def test_falsify_hands_every_points_margins_to_hypothesis_target(store, monkeypatch):
    class WithAlpha(Boundary):
        protocol = SimpleNamespace(alpha=0.025)  # the one field of a protocol the search reads

    seen: list[tuple[str, float]] = []
    monkeypatch.setattr("attnverify.compare.evaluation.falsify.target",
                        lambda value, label: seen.append((label, value)))
    executor = LocalExecutor(store, workers=1, progress=False)
    result = falsify(WithAlpha(), "smoke", executor, budget=30, seed=0)
    assert {label for label, _ in seen} == {"verdict", "log10(p/alpha)"}
    observed = {label: value for label, value in seen}
    assert len(seen) >= 2 * len(result.evaluated)  # every test case, cached points too
    assert observed.keys() == result.counterexample.margins.keys()
    x = result.counterexample.point["x"]
    assert result.counterexample.margins["log10(p/alpha)"] == pytest.approx(
        math.log10(min(1.0, 0.01 + x) / 0.025))


def test_margins_grow_toward_a_refutation():
    def assessment(verdict, p):
        return Assessment(verdict=verdict, theory=0, empirical=None, statistic="",
                          tolerance=Tolerance(), explanation="", p_value=p)

    confirmed = margins(assessment(Verdict.CONFIRMED, 1e-4), alpha=0.025)
    undecided = margins(assessment(Verdict.INCONCLUSIVE, 0.3), alpha=0.025)
    refuted = margins(assessment(Verdict.REFUTED, 0.999), alpha=0.025)
    assert confirmed["verdict"] < undecided["verdict"] < refuted["verdict"]
    assert confirmed["log10(p/alpha)"] == pytest.approx(math.log10(1e-4 / 0.025))
    assert confirmed["log10(p/alpha)"] < 0 < undecided["log10(p/alpha)"] < refuted[
        "log10(p/alpha)"]
    # p = 0 is clipped: an observation for hypothesis.target must be finite
    assert math.isfinite(margins(assessment(Verdict.CONFIRMED, 0.0), 0.025)["log10(p/alpha)"])
    assert set(margins(assessment(Verdict.CONFIRMED, None), 0.025)) == {"verdict"}
