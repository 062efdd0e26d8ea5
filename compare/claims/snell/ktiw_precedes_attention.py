"""``snell.ktiw_precedes_attention`` (P3): in normal training the KTIW probe crosses its
threshold no later than attention accuracy, seed by seed (Snell et al. 2021: KTIW is learned
first, and attention follows it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.snell.common import (
    COPYING_PARAMS,
    DECISION_SEEDS,
    LENGTH_SPACE,
    PAPER_COPYING,
    CopyingParams,
    copy_task,
    every_seed_verdict,
    scale_text,
)
from attnverify.compare.claims.snell.copying_runs import normal_copying_specs
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason, SeedBlock, SeedUse
from attnverify.compare.report.plotting import PALETTE, new_figure
from attnverify.compare.space import Dimension
from attnverify.compare.stats import binomial_ci
from attnverify.empirics import RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MIN_QUALIFYING = 6
"""The fewest qualifying seeds with which ``every_seed_verdict`` can confirm (lower bound of
n/n above 0.5)."""

SENSITIVITY_THRESHOLDS = (0.3, 0.5, 0.7)
"""The crossing thresholds at which the order is also reported (0.5 decides)."""

KTIW_PRECEDES = Protocol(
    endpoint="per seed whose attention is learned: the KTIW probe reaches 0.5 no later than "
             "attention accuracy does ('seed by seed')",
    unit="one run per seed (permutation and subset runs): indicator 'KTIW no later'",
    h0="the probability that KTIW comes no later is <= 0.5 (no consistent order)",
    h1="it is >= 0.9 ('seed by seed' read as nearly every seed)",
    test="exact Clopper-Pearson 95% interval over the qualifying seeds",
    confirm="every qualifying seed holds and the interval's lower bound exceeds 0.5 (needs "
            ">= 6 seeds)",
    refute="the interval's upper bound is below 0.9",
    alpha=0.025, beta=0.025,
    readout="the first evaluation at which each curve reaches 0.5, on the fixed evaluation "
            "grid; a tie (same evaluation) counts as no later",
    frozen="2026-11-25",
    precondition="at least 6 seeds whose attention accuracy reaches 0.5 (fewer can never "
                 "confirm)",
    secondary=("the number of ties", "the median lead in steps",
               "the same count with both curves read at 0.3 and at 0.7 (the sensitivity of the "
               "order to the crossing threshold)"),
    seeds=(SeedBlock(SeedUse.DECISION, DECISION_SEEDS, "the runs of snell.permutation_is_hard"),
           SeedBlock(SeedUse.DEVELOPMENT, 0, "the rule was developed on these")),
    weaknesses=("the seeds that count are selected on an outcome (attention learned)",
                "ties at the evaluation grid's resolution count for the claim",
                "confirming needs every seed while refuting needs the interval: a single "
                "exception makes the verdict inconclusive at a dozen seeds"))


class KtiwPrecedesAttention(Claim):
    """``snell.ktiw_precedes_attention`` (P3): in normal training the KTIW probe crosses its
    threshold no later than attention accuracy, seed by seed.

    Per seed whose attention is learned (attention accuracy reaches 0.5; seeds whose attention
    never does say nothing about the order): first evaluated step with KTIW-probe accuracy
    >= 0.5 versus first step with attention accuracy >= 0.5 (the spec's T9; 0.5 is S/2 times
    chance 1/S: about 10x at quick's L = 20, 20x at the paper's L = 40). KTIW holds "no
    later" when its step is <= the attention step: a tie (both crossed within the same
    evaluation interval) is no later at the schedule's resolution and is reported separately;
    no slack beyond that. The per-seed outcomes are counted with
    ``every_seed_verdict`` (every seed, Clopper-Pearson). Runs: the permutation and subset runs
    of ``snell.permutation_is_hard`` (shared), on the fresh decision seeds from
    ``DECISION_SEEDS`` (the rule was developed on seeds 0 to 19; its protocol's history:
    docs/methodology.md).
    """

    id = "snell.ktiw_precedes_attention"
    kind = ClaimKind.PAPER
    code_version = 1
    protocol = KTIW_PRECEDES
    paper = "snell"
    statement = ("In normal training the KTIW probe is learned before attention: probe "
                 "accuracy crosses 0.5 no later than attention accuracy, seed by seed.")
    paper_scale = PAPER_COPYING
    space: ClassVar[dict[str, Dimension]] = LENGTH_SPACE
    defaults: ClassVar[dict[str, CopyingParams]] = COPYING_PARAMS
    threshold = 0.5

    def specs(self, params: dict[str, Any]) -> dict[str, list[RunSpec]]:
        """The runs of ``snell.permutation_is_hard`` (the same keys: trained once)."""
        return normal_copying_specs(params)

    @staticmethod
    def order(results: GroupedResults, threshold: float) -> list[dict[str, Any]]:
        """Per run whose attention accuracy reaches ``threshold``: the first steps at which
        the probe and attention accuracy reach it, and whether the probe came no later."""
        rows: list[dict[str, Any]] = []
        for r in results:
            attn = r.first_step_reaching({"attn_acc": threshold})
            ktiw = r.first_step_reaching({"ktiw_acc": threshold})
            if attn is None:
                continue
            rows.append({"distribution": copy_task(r.spec).distribution, "seed": r.spec.seed,
                         "ktiw_step": ktiw, "attention_step": attn,
                         "precedes": ktiw is not None and ktiw <= attn,
                         "tie": ktiw == attn})
        return rows

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        rows = self.order(results, self.threshold)
        sensitivity = {f"{t:g}": (sum(r["precedes"] for r in other), len(other))
                       for t in SENSITIVITY_THRESHOLDS
                       for other in [self.order(results, t)]}
        k = sum(r["precedes"] for r in rows)
        ties = sum(r["tie"] for r in rows)
        verdict, why = every_seed_verdict(k, len(rows))
        reason = (Reason.NOT_TESTABLE if verdict is Verdict.INCONCLUSIVE
                  and len(rows) < MIN_QUALIFYING else None)
        if reason is not None:
            why += (f" (not testable here: fewer than {MIN_QUALIFYING} seeds learn attention, "
                    f"and fewer can never confirm; more seeds or a longer budget would)")
        leads = [r["attention_step"] - r["ktiw_step"] for r in rows if r["ktiw_step"] is not None]
        return Assessment(
            verdict=verdict, reason=reason, theory="KTIW first",
            empirical=Measurement(k / len(rows) if rows else None,
                                  ci=list(binomial_ci(k, len(rows))) if rows else None,
                                  confidence=0.95,
                                  quantity="fraction of seeds where KTIW precedes attention",
                                  extras={"median_lead_steps": float(np.median(leads)) if leads
                                          else None}),
            statistic=f"first step with KTIW-probe acc >= 0.5 vs attention acc >= 0.5, over "
                      f"{len(rows)} seeds whose attention is learned ({scale_text(params)}, "
                      f"permutation and subset)",
            tolerance=Tolerance("the schedule's resolution only (ties count as no later); "
                                "'seed by seed' read as every seed, Clopper-Pearson",
                                {"eval_every": params["eval_every"], "rate_claimed": 0.9}),
            explanation=f"KTIW no later than attention in {why}; {ties} of them ties (same "
                        f"evaluation interval); median lead "
                        f"{np.median(leads) if leads else float('nan'):.0f} steps. "
                        f"Sensitivity (reported, not decided): with both curves read at "
                        + ", ".join(f"{t}: {k_t} of {n_t}" for t, (k_t, n_t)
                                    in sensitivity.items()) + " seeds hold.",
            n_seeds=len(rows), details={"seeds": rows, "ties": ties,
                                        "threshold_sensitivity": sensitivity},
        )

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        return {"ktiw_vs_attention": ktiw_vs_attention_figure(
            assessment.details["seeds"], params["steps"], params["eval_every"])}


def ktiw_vs_attention_figure(rows: Sequence[dict[str, Any]], steps: int,
                             eval_every: int) -> Figure:
    """Per seed (``rows``: the claim's ``details["seeds"]``), the first step with KTIW-probe
    accuracy >= 0.5 against the first with attention accuracy >= 0.5; a probe that never
    crossed is drawn past the budget."""
    fig, (ax,) = new_figure()
    top = steps + eval_every
    for row in rows:
        colour = PALETTE["red"] if row["distribution"] == "permutation" else PALETTE["blue"]
        y = row["ktiw_step"] if row["ktiw_step"] is not None else top
        ax.plot(row["attention_step"], y, "o", color=colour, alpha=0.7)
    ax.plot([0, top], [0, top], color=PALETTE["theory"], lw=1, label="same step")
    ax.plot([], [], "o", color=PALETTE["red"], label="permutation")
    ax.plot([], [], "o", color=PALETTE["blue"], label="subset")
    ax.set_xlabel("first step attention acc >= 0.5")
    ax.set_ylabel("first step KTIW-probe acc >= 0.5")
    ax.set_title("KTIW before attention: points below the line")
    ax.legend(fontsize=7)
    return fig
