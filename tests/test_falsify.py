"""Falsification search: a seeded hypothesis search over a claim's parameter space
that finds the smallest refuted point, says where the claim still held, bounds its budget, and
shows up in the report."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnverify.compare import select
from attnverify.compare.claim import Assessment, Claim, Verdict
from attnverify.compare.evaluation.falsify import falsify, load_saved, result_path, save
from attnverify.compare.groups import flatten
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.space import Dimension, space_strategy
from attnverify.empirics import LocalExecutor, RunResult


class Threshold(Claim):
    """A claim that holds below a threshold: refuted for x >= 7 (unless y is 'safe')."""

    id = "test.threshold"
    code_version = 1
    paper = "snell"
    statement = "x stays below 7"
    defaults: ClassVar[dict[str, dict[str, Any]]] = {p: {"x": 1, "y": "safe"}
                                                    for p in ("smoke", "quick", "full")}
    space: ClassVar[dict[str, Dimension]] = {
        "x": Dimension("a size", low=1, high=40),
        "y": Dimension("a mode", values=("plain", "safe")),
    }
    limit = 7

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        self.calls.append(params)
        bad = params["x"] >= self.limit and params["y"] != "safe"
        return Assessment(verdict=Verdict.REFUTED if bad else Verdict.CONFIRMED, theory="< 7",
                          empirical=Measurement(params["x"]), statistic="x",
                          tolerance=Tolerance(),
                          explanation=f"x = {params['x']}")


@pytest.fixture
def executor(store):
    return LocalExecutor(store, workers=1, progress=False)


def test_finds_the_smallest_counterexample_and_the_point_that_still_holds(executor):
    claim = Threshold()
    result = falsify(claim, "smoke", executor, budget=60, seed=3)
    assert result.found and result.counterexample.point == {"x": 7, "y": "plain"}
    assert result.counterexample.verdict == "refuted"
    assert len(result.evaluated) == len(claim.calls) <= 60  # every point evaluated once
    assert result.reproduce() == ("attnverify verify --claim test.threshold --profile smoke "
                                  "--param x=7 --param 'y=\"plain\"'")
    assert result.still_holds() == {"x": 6}  # shrinking tried x = 6 (plain): not refuted
    data = result.to_dict()
    assert data["found"] is True and json.loads(json.dumps(data)) == data
    assert data["region"]["x"][0] <= 7 <= data["region"]["x"][1]


def test_same_seed_same_points_and_no_counterexample_is_said(executor):
    class Never(Threshold):
        limit = 10_000

    first = falsify(Never(), "smoke", executor, budget=15, seed=1)
    again = falsify(Never(), "smoke", executor, budget=15, seed=1)
    assert not first.found and first.reproduce() is None
    assert [p.point for p in first.evaluated] == [p.point for p in again.evaluated]
    assert len(first.evaluated) <= 15
    assert first.summary().startswith("no counterexample within the budget: ")
    assert "region covered: x in [" in first.summary()


def test_budget_and_max_cost_cut_the_search(executor):
    claim = Threshold()
    result = falsify(claim, "smoke", executor, budget=2, seed=0)
    assert len(claim.calls) == 2 and not result.found  # seed 0 proposes x = 1, then y = 'safe'
    assert result.cut == "budget" and "cut by its budget limit" in result.summary()
    slow = Threshold()
    result = falsify(slow, "smoke", executor, budget=50, seed=0, max_cost=1e-9)
    assert len(slow.calls) <= 1 and result.cut == "max-cost"


def test_bad_arguments(executor):
    class Spaceless(Threshold):
        space: ClassVar[dict[str, Dimension]] = {}

    with pytest.raises(ValueError, match="declares no parameter space"):
        falsify(Spaceless(), "smoke", executor)
    with pytest.raises(ValueError, match="budget must be an integer >= 1"):
        falsify(Threshold(), "smoke", executor, budget=0)


def test_saved_results_are_read_back_for_the_report(executor, tmp_path):
    result = falsify(Threshold(), "smoke", executor, budget=30, seed=0)
    save(result, result_path(tmp_path, "test.threshold", "smoke"))
    (tmp_path / "falsify" / "test.threshold.quick.json").write_text("{broken")
    saved = load_saved(tmp_path, [Threshold(), select(claim_id="snell.kappa_closed_form")[0]])
    assert [s["claim_id"] for s in saved] == ["test.threshold"]
    assert saved[0]["stale"] is False


def test_a_search_saved_by_other_code_is_flagged_stale_in_the_report(executor, tmp_path):
    from attnverify.compare.report.document import Report

    path = result_path(tmp_path, "test.threshold", "smoke")
    save(falsify(Threshold(), "smoke", executor, budget=30, seed=0), path)
    data = json.loads(path.read_text())
    data["code"] = "0123456789ab"  # as if the claim's code had changed since the search
    path.write_text(json.dumps(data))
    (stale,) = load_saved(tmp_path, [Threshold()])
    assert stale["stale"] is True
    del data["code"]  # a search saved before searches recorded their code
    path.write_text(json.dumps(data))
    assert load_saved(tmp_path, [Threshold()])[0]["stale"] is True

    report = Report(profile="smoke", versions={}, machine={}, outcomes=[], boundaries=[stale])
    text = "\n".join(report._boundary_markdown())
    assert "STALE (searched by other code" in text
    assert "attnverify falsify test.threshold --profile smoke --seed 0 --budget 30" in text
    assert data["summary"] in text  # what it found is still shown, flagged


SEARCHABLE = [c for c in select() if c.space]


def test_every_paper_has_a_searchable_claim():
    assert {c.paper for c in SEARCHABLE} == {"snell", "musat", "bao"}


@pytest.mark.parametrize("claim", SEARCHABLE, ids=lambda c: c.id)
def test_every_point_of_a_space_builds_valid_runs(claim):
    """The property behind every space: any point it proposes is a valid parameter point (the
    claim's RunSpecs validate) at every profile."""

    @settings(max_examples=25)
    @given(point=space_strategy(claim.space), profile=st.sampled_from(("smoke", "quick", "full")))
    def check(point, profile):
        params = claim.params(profile) | claim.point_params(point)
        assert set(claim.point_params(point)) <= set(params)
        for spec in flatten(claim.specs(params)):
            assert spec.key()

    check()


def test_falsify_finds_the_toy_classifier_step_size_boundary(capsys, tmp_path):
    """A real boundary (Snell §4.2): gradient descent follows the flow's closed form within the
    first-order Euler tolerance up to a step of 0.1 and not at 0.2 (smoke horizon)."""
    from attnverify.compare.cli import main

    cache, out = tmp_path / "cache", tmp_path / "out"
    argv = ["falsify", "snell.toy_classifier_closed_form", "--budget", "12", "--cache",
            str(cache), "--out", str(out), "--workers", "1", "--quiet"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "COUNTEREXAMPLE" in printed and "--param lr=0.2" in printed
    data = json.loads((out / "falsify-snell.toy_classifier_closed_form.json").read_text())
    assert data["counterexample"]["point"] == {"lr": 0.2}
    assert data["still_holds"] == {"lr": 0.1}
    # the next report shows it in its boundary-of-validity section
    assert main(["verify", "--claim", "snell.toy_classifier_closed_form", "--profile", "smoke",
                 "--cache", str(cache), "--out", str(tmp_path / "r"), "--quiet"]) == 0
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert [b["claim_id"] for b in report["boundaries"]] == ["snell.toy_classifier_closed_form"]
    assert "Boundary of validity" in (tmp_path / "r" / "report.md").read_text()
    assert "id='boundaries'" in (tmp_path / "r" / "report.html").read_text()
    # the reproduction command reproduces the refutation
    capsys.readouterr()
    assert main(["verify", "--claim", "snell.toy_classifier_closed_form", "--profile", "smoke",
                 "--param", "lr=0.2", "--cache", str(cache), "--out", str(tmp_path / "r2"),
                 "--quiet"]) == 0
    assert "refuted" in capsys.readouterr().out


THEORY = [c for c in SEARCHABLE if not c.specs(c.params("smoke"))]


@pytest.mark.parametrize("claim", THEORY, ids=lambda c: c.id)
def test_claims_without_training_evaluate_at_points_of_their_space(claim, store):
    """Two points of each theory/Monte Carlo claim's space (drawn by hypothesis, seeded)
    evaluate to a verdict with a measured value: the space holds no point the claim cannot
    take."""
    from attnverify.compare import evaluate

    executor = LocalExecutor(store, workers=1, progress=False)

    @settings(max_examples=2, derandomize=True)
    @given(point=space_strategy(claim.space))
    def check(point):
        params = claim.params("smoke") | claim.point_params(point)
        a = evaluate(claim, "smoke", executor, params).assessment
        assert a.verdict in set(Verdict) and a.empirical is not None

    check()
