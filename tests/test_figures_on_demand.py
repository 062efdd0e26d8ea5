"""Figures are drawn where they are shown, never while a claim is assessed: ``Claim.assess``
and ``falsify`` construct no matplotlib figure; ``ClaimOutcome.figures`` draws a claim's
figures once, and the report holds the same figures, under the same names, as when claims drew
them inside ``assess``. Claims without training (theory and Monte Carlo) at the smoke profile."""

from __future__ import annotations

import json

import pytest
from matplotlib.figure import Figure

from attnverify.compare.evaluation.falsify import falsify
from attnverify.compare.evaluation.verify import evaluate_all
from attnverify.compare.registry import select
from attnverify.compare.report.document import Report
from attnverify.empirics import LocalExecutor, RunStore

FIGURES = {
    "snell.kappa_closed_form": ["kappa"],
    "musat.depth_bound_closed_form": ["bound"],
    "musat.construction_meets_bound": ["construction"],
    "bao.score_moments": [],
    "bao.propagation_probability": ["rho_profiles"],
    "bao.small_variance_localizes": ["phase_map"],
    "bao.entropy_monotone_in_mean": ["entropy_vs_mean"],
    "bao.rank_collapse_at_uniform": ["rank_collapse"],
}
"""The figures of these claims' smoke reports when ``assess`` drew them (report.json's
``figures``, by name)."""


class Drawn:
    """Counts the matplotlib figures constructed while it is installed; with ``forbid``, a
    construction fails the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, forbid: bool = False) -> None:
        self.count = 0
        original = Figure.__init__

        def init(fig: Figure, *args, **kwargs) -> None:
            if forbid:
                raise AssertionError("a figure was drawn while claims were assessed")
            self.count += 1
            original(fig, *args, **kwargs)

        monkeypatch.setattr(Figure, "__init__", init)


@pytest.fixture(scope="module")
def executor(tmp_path_factory):
    with LocalExecutor(RunStore(tmp_path_factory.mktemp("cache")), workers=1,
                       progress=False) as executor:
        yield executor


@pytest.fixture(scope="module")
def outcomes(executor):
    """The claims assessed with figure construction forbidden."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        Drawn(monkeypatch, forbid=True)
        return evaluate_all(select_claims(), "smoke", executor)


def select_claims():
    return [select(claim_id=claim_id)[0] for claim_id in FIGURES]


def test_assess_draws_nothing_and_figures_are_drawn_once(outcomes, monkeypatch):
    assert [o.claim.id for o in outcomes] == list(FIGURES)  # assessed with figures forbidden
    drawn = Drawn(monkeypatch)
    for outcome in outcomes:
        figures = outcome.figures()
        assert list(figures) == FIGURES[outcome.claim.id]
        assert all(isinstance(fig, Figure) for fig in figures.values())
        assert outcome.figures() is figures  # kept, not drawn again
    assert drawn.count == sum(len(names) for names in FIGURES.values())


def test_the_report_holds_the_figures_it_held_before(outcomes, tmp_path, monkeypatch):
    report = Report(profile="smoke", versions={}, machine={}, outcomes=outcomes)
    for outcome in outcomes:
        outcome.figures()
    drawn = Drawn(monkeypatch)
    report.write(tmp_path / "report")
    doc = json.loads((tmp_path / "report" / "report.json").read_text())
    assert {c["id"]: c["figures"] for c in doc["claims"]} == {
        claim_id: [f"figures/{claim_id}.{name}.png" for name in names]
        for claim_id, names in FIGURES.items()}
    for claim in doc["claims"]:
        for path in claim["figures"]:
            assert (tmp_path / "report" / path).read_bytes().startswith(b"\x89PNG")
    html = (tmp_path / "report" / "report.html").read_text()
    assert html.count("<img") == sum(len(names) for names in FIGURES.values())
    assert drawn.count == 0  # report.json, .md, .html and figures/ use the figures drawn


def test_falsify_draws_no_figure(executor, monkeypatch):
    Drawn(monkeypatch, forbid=True)
    result = falsify(select(claim_id="snell.kappa_closed_form")[0], "smoke", executor,
                     budget=3, seed=0)
    assert 1 <= len(result.evaluated) <= 3
