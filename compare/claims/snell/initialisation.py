"""Attention starts uniform (Snell et al. 2021: stage 1 is early training, while attention is
uniform)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.snell.common import DECISION_SEEDS, PAPER_COPYING
from attnverify.compare.claims.snell.figures import attention_at_init_figure
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason, SeedBlock, SeedUse
from attnverify.compare.space import Dimension
from attnverify.compare.stats import mean_ci
from attnverify.empirics import CopyTask, RunResult, RunSpec, Seq2SeqConfig
from attnverify.empirics.probes.attention import entropy_ratio, max_weight_ratio

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _attention_stats(result: RunResult) -> tuple[np.ndarray, np.ndarray]:
    """Per-query entropy / log S and S * max weight at step 0, from the attention snapshot."""
    alpha = torch.from_numpy(result.attention[0]).double()  # (B, heads, T, S)
    return entropy_ratio(alpha).ravel().numpy(), max_weight_ratio(alpha).ravel().numpy()


UNIFORM_AT_INIT_PROTOCOL = Protocol(
    endpoint="attention entropy / log S at step 0 (mean over the evaluation batch's queries "
             "of one untrained model), with the max-weight criterion S * max weight <= 3",
    unit="per-seed value",
    h0="the mean entropy ratio is below e = 0.95 (attention not close to uniform)",
    h1="the mean entropy ratio is at least 0.95 (KL from uniform at most 5% of log S), and "
       "every seed has max weight <= 3/S on >= 95% of its queries",
    test="95% two-sided Student-t interval over seeds of the per-seed mean entropy ratio, per "
         "configuration, against 0.95; the max-weight criterion counted per seed",
    confirm="in every configuration: the interval's lower end >= 0.95 and every seed has max "
            "weight <= 3/S on >= 95% of its queries",
    refute="in any configuration: the interval's upper end < 0.95, or fewer than half the "
           "seeds meet the max-weight criterion",
    alpha=0.025, beta=None,
    error_rates="alpha: the interval's lower end at 0.95 (one-sided 0.025); requiring every "
                "seed and every configuration only lowers it. beta: none stated; the "
                "refutation ORs the interval's upper end (0.025 per configuration, not "
                "adjusted) with a majority count of the max-weight criterion, which has no "
                "error rate",
    readout="the attention snapshot at step 0, before any update, on the run's evaluation "
            "batch (eval_size examples, all T query steps including EOS)",
    frozen="2026-11-25",
    secondary=("mean S * max weight per configuration",),
    seeds=(SeedBlock(SeedUse.DECISION, DECISION_SEEDS, note="one untrained model per seed and "
                                                             "configuration"),
           SeedBlock(SeedUse.DEVELOPMENT, 0, note="the rule was developed on these")),
    weaknesses=(
        "At step 0 nothing is learned: the test checks the initialisation scheme (PyTorch "
        "defaults), which makes near-uniform attention likely by construction.",
        "Thresholds e = 0.95 and 3/S are the spec's suggested values, not calibrated: a KL "
        "of 5% of log S is a loose reading of 'close to uniform'.",
        "Entropy above 0.95 with most seeds failing the max-weight criterion refutes; the two "
        "criteria are not reported as conflicting.",
        "The configurations' refutations are OR-ed without multiplicity adjustment.",
        "No testability precondition is checked."))


class UniformAttentionAtInit(Claim):
    """``snell.uniform_attention_at_init`` (P1): at step 0 attention is close to uniform.

    Statistic, per seed: the mean over (example, t) of the attention entropy divided by log S,
    and the fraction of queries whose largest weight is at most k/S. Thresholds are the
    suggested starting values of the reconstruction's test plan
    (docs/methodology.md#starting-values), fixed before any run: entropy ratio >= e = 0.95 (a
    KL from uniform of at most 5% of log S), and max weight <= 3/S for >= 95% of queries. An
    aligned, learned attention has entropy ratio near 0 and S * max near S, so both thresholds
    separate "uniform" from "learned" by a wide margin.

    Verdict per configuration: confirmed when the 95% t-interval of the mean entropy ratio over
    seeds lies above e and every seed meets the max-weight criterion; refuted when the interval
    lies below e or most seeds fail the max-weight criterion; inconclusive otherwise.
    """

    id = "snell.uniform_attention_at_init"
    kind = ClaimKind.PAPER
    protocol = UNIFORM_AT_INIT_PROTOCOL
    code_version = 1
    paper = "snell"
    statement = ("At initialisation the copying seq2seq's attention is close to uniform: "
                 "entropy close to log S and max weight close to 1/S, over several seeds.")
    paper_scale = PAPER_COPYING
    entropy_ratio_min = 0.95
    max_weight_factor = 3.0
    query_fraction_min = 0.95
    space: ClassVar[dict[str, Dimension]] = {
        "hidden": Dimension("hidden size H", values=(32, 16, 64, 128)),
        "L": Dimension("sequence length L (subset of L of L + 5)", low=2, high=20),
    }

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        return {"configs": ((point["hidden"], "subset", point["L"] + 5, point["L"]),)}
    defaults: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {"configs": ((32, "subset", 15, 10),), "seeds": 3, "eval_size": 32},
        "quick": {"configs": ((64, "subset", 30, 20), (256, "permutation", 40, 40)),
                  "seeds": 8, "eval_size": 64},
        "full": {"configs": ((256, "subset", 60, 40), (256, "permutation", 40, 40)),
                 "seeds": 20, "eval_size": 50},
    }

    def specs(self, params: dict[str, Any]) -> list[RunSpec]:
        return [RunSpec(task=CopyTask(dist, vocab, length), model=Seq2SeqConfig(hidden=hidden),
                        steps=0, eval_size=params["eval_size"], seed=DECISION_SEEDS + i,
                        attention_snapshots=(0,))
                for hidden, dist, vocab, length in params["configs"]
                for i in range(params["seeds"])]

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        n_seeds = params["seeds"]
        rows, verdicts, per_config = [], [], []
        for i, cfg in enumerate(params["configs"]):
            runs = results[i * n_seeds:(i + 1) * n_seeds]
            stats = [_attention_stats(r) for r in runs]
            ratios = np.array([s[0].mean() for s in stats])
            fractions = np.array([(s[1] <= self.max_weight_factor).mean() for s in stats])
            lo, hi = mean_ci(ratios)
            seeds_ok = int((fractions >= self.query_fraction_min).sum())
            if lo >= self.entropy_ratio_min and seeds_ok == n_seeds:
                verdict, why = Verdict.CONFIRMED, ""
            elif hi < self.entropy_ratio_min or seeds_ok < n_seeds / 2:
                verdict, why = Verdict.REFUTED, (
                    f" (entropy interval below {self.entropy_ratio_min}"
                    if hi < self.entropy_ratio_min else
                    " (fewer than half the seeds meet the max-weight criterion") + ")"
            else:
                verdict, why = Verdict.INCONCLUSIVE, (
                    f" (entropy interval reaches below {self.entropy_ratio_min}"
                    if lo < self.entropy_ratio_min else
                    " (not every seed meets the max-weight criterion") + ")"
            verdicts.append(verdict)
            per_config.append(stats)
            rows.append({"hidden": cfg[0], "distribution": cfg[1], "V": cfg[2], "L": cfg[3],
                         "entropy_ratio_mean": float(ratios.mean()), "entropy_ratio_ci": [lo, hi],
                         "max_weight_times_S_mean": float(np.mean([s[1].mean() for s in stats])),
                         "seeds_meeting_max_criterion": seeds_ok, "verdict": str(verdict),
                         "why": why})
        verdict = (Verdict.REFUTED if Verdict.REFUTED in verdicts else
                   Verdict.INCONCLUSIVE if Verdict.INCONCLUSIVE in verdicts else
                   Verdict.CONFIRMED)
        head = rows[0]
        explanation = "; ".join(
            f"H={r['hidden']} {r['distribution']} V={r['V']} L={r['L']}: entropy/log S = "
            f"{r['entropy_ratio_mean']:.4f} (95% CI {r['entropy_ratio_ci'][0]:.4f}-"
            f"{r['entropy_ratio_ci'][1]:.4f}), S*max = {r['max_weight_times_S_mean']:.2f}, "
            f"{r['seeds_meeting_max_criterion']}/{n_seeds} seeds with max <= 3/S on >= 95% of "
            f"queries -> {r['verdict']}{r['why']}" for r in rows)
        untestable = verdict is Verdict.INCONCLUSIVE and n_seeds < 2
        if untestable:
            explanation += (". One seed gives no t-interval over seeds: not testable with "
                            "fewer than 2 seeds ('--param seeds=N').")
        return Assessment(
            verdict=verdict,
            theory=1.0,
            empirical=Measurement(head["entropy_ratio_mean"], ci=head["entropy_ratio_ci"],
                                  confidence=0.95, quantity="attention entropy / log S at step 0",
                                  at=f"H={head['hidden']} V={head['V']} L={head['L']}"),
            statistic="mean attention entropy / log S per seed (t-interval over seeds), and the "
                      "fraction of queries with max weight <= 3/S",
            tolerance=Tolerance("suggested starting values of the reconstruction's test plan, "
                                "fixed before measuring; a learned aligned attention is far "
                                "outside both",
                                {"entropy_ratio_min": self.entropy_ratio_min,
                                 "max_weight_times_S": self.max_weight_factor,
                                 "query_fraction_min": self.query_fraction_min}),
            explanation=explanation,
            n_seeds=n_seeds,
            reason=Reason.NOT_TESTABLE if untestable else None,
            details={"configs": rows},
        )

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        n = params["seeds"]
        per_config = [[_attention_stats(r) for r in results[i * n:(i + 1) * n]]
                      for i in range(len(params["configs"]))]
        return {"attention_at_init": attention_at_init_figure(
            assessment.details["configs"], per_config, self.entropy_ratio_min,
            self.max_weight_factor)}
