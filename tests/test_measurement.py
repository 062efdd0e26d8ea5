"""The typed measurement and tolerance of an assessment (compare/measurement.py): report.json
keeps its shape (``empirical`` and ``tolerance`` objects, the same keys in the same order), a
report saved before they were typed loads, and an assessment refuses the untyped dicts."""

from __future__ import annotations

import json
import math

import pytest

from attnverify.compare.claim import Assessment, Verdict
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.report.cells import measured_text, tolerance_items
from attnverify.compare.report.view import VerifyReport

EMPIRICAL = [  # report.json's "empirical" objects as claims wrote them (key order included)
    {},
    {"value": None},
    {"value": 0.5, "at": "mismatches between game and closed form"},
    {"value": 0.25, "ci": [0.1, 0.4], "confidence": 0.95, "quantity": "fraction of seeds",
     "at": "D = 2, 4 layer(s)"},
    {"value": 0.25, "ci": [0.1, 0.4], "confidence": 0.95, "quantity": "fraction of seeds",
     "mean_query_acc": 0.6, "at": "D = 2"},
    {"value": -0.3, "p_value": 0.01, "quantity": "Spearman rho", "branches": {"rising": {}}},
    {"value": None, "single_head_failures": 3},
    {"value": 0.1, "ci": [None, None], "confidence": 0.95},
]
TOLERANCE = [
    {},
    {"why": "nothing was measured"},
    {"design": "looks at 4, 8"},
    {"alpha": 0.025, "beta": 0.1, "min_rescue": 0.2, "why": "exact unconditional test"},
    {"d >= 32": 0.06, "halving_ratio": [1.8, 2.2], "why": "calibrated"},
]


@pytest.mark.parametrize("data", EMPIRICAL)
def test_measurement_round_trips_report_json(data):
    measurement = Measurement.from_dict(data)
    expected = data or {"value": None}  # a claim that measured nothing has no value either
    assert measurement.to_dict() == expected
    assert list(measurement.to_dict()) == list(expected)  # the order report.json shows
    assert Measurement.from_dict(measurement.to_dict()) == measurement


@pytest.mark.parametrize("data", TOLERANCE)
def test_tolerance_round_trips_report_json(data):
    tolerance = Tolerance.from_dict(data)
    assert tolerance.to_dict() == data and list(tolerance.to_dict()) == list(data)
    assert Tolerance.from_dict(tolerance.to_dict()) == tolerance


def test_fields_and_extras_do_not_overlap():
    with pytest.raises(ValueError, match="extras"):
        Measurement(1.0, extras={"at": "here"})
    with pytest.raises(ValueError, match="pair"):
        Measurement(1.0, ci=(0.0, 1.0, 2.0))
    with pytest.raises(ValueError, match="why"):
        Tolerance("w", {"why": "twice"})


def test_an_assessment_refuses_untyped_dicts():
    with pytest.raises(TypeError, match="Measurement"):
        Assessment(verdict=Verdict.CONFIRMED, theory=0, empirical={"value": 0}, statistic="s",
                   tolerance=Tolerance(), explanation="e")
    with pytest.raises(TypeError, match="Tolerance"):
        Assessment(verdict=Verdict.CONFIRMED, theory=0, empirical=Measurement(0), statistic="s",
                   tolerance={"why": "w"}, explanation="e")


def test_cells_read_the_typed_records():
    assert measured_text(None) == "—"
    assert measured_text(Measurement(0.25, ci=(0.1, math.nan), at="D = 2")) == "0.25 (D = 2)"
    assert measured_text(Measurement(0.25, ci=(0.1, 0.4))) == "0.25 [0.1, 0.4]"
    assert measured_text(Measurement(75.5, quantity="mean steps to success, A minus B",
                                     at="L = 40")) == ("75.5 mean steps to success, A minus B "
                                                       "(L = 40)")
    assert tolerance_items(Tolerance("w", {"alpha": 0.025, "learned_above": ">= 0.9"})) == [
        ("significance level (alpha)", "0.025"), ("learned above", "at least 0.9")]


def test_a_report_saved_before_loads_with_typed_outcomes():
    """A claim record as report.json held it before the records were typed."""
    record = {"id": "snell.permutation_saddle", "paper": "snell", "kind": "derivation",
              "statement": "s", "verdict": "confirmed", "reason": "decided", "p_value": None,
              "theory": 2.0794, "empirical": EMPIRICAL[5], "statistic": "st",
              "tolerance": TOLERANCE[3], "n_seeds": 2, "run_keys": ["k"], "elapsed_s": 1.0,
              "figures": [], "explanation": "e", "scale_note": None, "params": {},
              "details": {}, "at_full": None}
    text = json.dumps({"profile": "smoke", "versions": {}, "machine": {},
                       "summary": {"derivation": {"confirmed": 1, "refuted": 0,
                                                  "inconclusive": 0}},
                       "claims": [record], "boundaries": []}, indent=2)
    report = VerifyReport.from_json(text)
    outcome = report["snell.permutation_saddle"]
    assert outcome.measurement == Measurement(-0.3, p_value=0.01, quantity="Spearman rho",
                                              extras={"branches": {"rising": {}}})
    assert outcome.tolerance.why == "exact unconditional test"
    assert dict(outcome.tolerance.thresholds) == {"alpha": 0.025, "beta": 0.1,
                                                  "min_rescue": 0.2}
    assert report.to_json() == text  # the document itself is kept as read
