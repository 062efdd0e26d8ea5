"""``bao.trained_spectrum_predicts_localization`` (Bao et al. 2024): across trained one-layer
attention language models, whether the trained spectrum tells how localized the trained
attention is (the runs: :mod:`.training`; LocAteR's own effect is ``bao.locater_effect``'s)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from scipy import stats

from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.bao.common import FROZEN
from attnverify.compare.claims.bao.figures import spectrum_figure
from attnverify.compare.claims.bao.training import (
    LM,
    LM_SCALE_WEAKNESS,
    PAPER_LM,
    LMParams,
    final,
    lambda_group,
    lm_specs,
)
from attnverify.compare.groups import RunGroups
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason, SeedBlock, SeedUse
from attnverify.compare.space import Dimension
from attnverify.empirics import RunResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SPECTRUM_DECISION_SEEDS = 600
"""First seed of the decision block; seeds 0 to 7 developed the rule and decide nothing."""
SPECTRUM_SEEDS = (SeedBlock(SeedUse.DECISION, SPECTRUM_DECISION_SEEDS,
                            note="one run per seed and coefficient"),
                  SeedBlock(SeedUse.DEVELOPMENT, 0, note="the rule was developed on these"))

TRAINED_SPECTRUM_PREDICTS_LOCALIZATION = Protocol(
    endpoint=("the mean over LocAteR coefficients of the within-coefficient Spearman "
              "correlation, across seeds, of final W_QK eigen-variance and final normalised "
              "validation attention entropy"),
    unit=("one trained model per seed and coefficient (seeds from 600, coefficients 0, 0.01, "
          "0.1, 1 at quick; not the blocks of bao.locater_effect); "
          "coefficients with 3 or more finished runs are the strata"),
    h0="no relation within coefficients: the entropies are exchangeable across its seeds",
    h1="a negative relation (mean within-coefficient Spearman below 0; no smallest effect set)",
    test=("stratified permutation test: entropies permuted within each coefficient, 2000 "
          "permutations (generator seed 0), p = (1 + #{null <= observed}) / 2001"),
    confirm="one-sided permutation p toward a negative relation < 0.025",
    refute="one-sided permutation p toward a positive relation < 0.025",
    alpha=0.025, beta=0.025,
    readout="the last evaluation of each run (the final step); diverged runs left out",
    frozen=FROZEN,
    precondition=("at least one LocAteR coefficient with 3 or more non-diverged runs (else not "
                  "testable)"),
    secondary=("Spearman per coefficient", "Spearman pooled over coefficients (driven by "
               "LocAteR itself)", "diverged runs"),
    seeds=SPECTRUM_SEEDS,
    weaknesses=(
        "seed-to-seed variation, not an intervention: an association within coefficients does "
        "not show that the spectrum sets the entropy",
        "3 to 8 seeds per coefficient give coarse Spearman values and little power; every "
        "coefficient weighs the same whatever its run count",
        "H1 is any negative correlation: no relation stays inconclusive, never refuted",
        "the variance read is of the symmetric part of a non-symmetric trained W_QK, and the "
        "entropy averages all causal rows, while the theory concerns the last query",
        "no check that the eigen-variance varies enough within a coefficient to show a relation",
        LM_SCALE_WEAKNESS,
    ))


class TrainedSpectrumPredictsLocalization(Claim):
    """``bao.trained_spectrum_predicts_localization``: across trained models, eigen-variance of
    W_QK and validation attention entropy relate with the predicted sign (negative).

    LocAteR lowers the variance by construction, so pooling all coefficients would mostly
    re-measure ``bao.locater_effect``. The decision uses the variation within each coefficient
    (seed to seed): the statistic is the mean of the per-coefficient Spearman correlations, and
    its null distribution comes from permuting the entropies within each coefficient (2000
    seeded permutations). Confirmed when the one-sided p-value for a negative relation is below
    0.025, refuted when the one for a positive relation is, inconclusive otherwise. The pooled
    correlation is reported for description only.
    """

    id = "bao.trained_spectrum_predicts_localization"
    protocol = TRAINED_SPECTRUM_PREDICTS_LOCALIZATION
    kind = ClaimKind.PAPER
    code_version = 1
    paper = "bao"
    paper_scale = PAPER_LM
    full_is_paper_scale = False
    overridable = ("corpus",)
    defaults: ClassVar[dict[str, LMParams]] = LM
    statement = ("Across trained models, eigen-variance and attention entropy relate with the "
                 "predicted sign (more variance, lower entropy); observed across seeds within "
                 "a LocAteR coefficient, not by intervening on the spectrum: a weak design.")
    PERMUTATIONS = 2000

    space: ClassVar[dict[str, Dimension]] = {
        "d": Dimension("model width d", values=(32, 16, 64)),
    }

    def specs(self, params: dict[str, Any]) -> RunGroups:
        """The seeds of the decision block at each coefficient, one group per coefficient."""
        return {lambda_group(lam): lm_specs({**params, "lambdas": (lam,)},
                                            first_seed=SPECTRUM_DECISION_SEEDS)
                for lam in params["lambdas"]}

    def by_lambda(self, params: dict[str, Any],
                  results: Sequence[RunResult]) -> dict[float, list[RunResult]]:
        """The runs of each coefficient, read by their group's name."""
        grouped = self.results_for(params, results)
        return {lam: grouped[lambda_group(lam)] for lam in params["lambdas"]}

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        strata = []
        for lam, runs in self.by_lambda(params, results).items():
            good = [r for r in runs if not r.diverged]
            if len(good) >= 3:
                strata.append((lam, np.array([final(r, "eig_var") for r in good]),
                               np.array([final(r, "attn_entropy_norm") for r in good])))
        n_runs = sum(len(v) for _, v, _ in strata)

        def statistic(entropies: list[np.ndarray]) -> float:
            return float(np.mean([stats.spearmanr(v, e).statistic
                                  for (_, v, _), e in zip(strata, entropies, strict=True)]))

        if not strata:
            return Assessment(
                verdict=Verdict.INCONCLUSIVE, theory="negative",
                empirical=Measurement(float("nan"), at="no coefficient with 3 finished runs"),
                statistic="within-coefficient Spearman", tolerance=Tolerance(),
                explanation="fewer than three finished runs per coefficient", n_seeds=0,
                reason=Reason.NOT_TESTABLE)
        observed = statistic([e for _, _, e in strata])
        rng = np.random.default_rng(0)
        null = np.array([statistic([rng.permutation(e) for _, _, e in strata])
                         for _ in range(self.PERMUTATIONS)])
        p_negative = float((np.sum(null <= observed) + 1) / (len(null) + 1))
        p_positive = float((np.sum(null >= observed) + 1) / (len(null) + 1))
        verdict = (Verdict.CONFIRMED if p_negative < 0.025 else
                   Verdict.REFUTED if p_positive < 0.025 else Verdict.INCONCLUSIVE)
        within = {f"{lam:g}": float(stats.spearmanr(v, e).statistic) for lam, v, e in strata}
        all_v = np.concatenate([v for _, v, _ in strata])
        all_e = np.concatenate([e for _, _, e in strata])
        pooled = float(stats.spearmanr(all_v, all_e).statistic)
        why = (f"mean within-coefficient Spearman {observed:+.2f} (permutation p = "
               f"{p_negative:.3f} for negative, {p_positive:.3f} for positive) over {n_runs} "
               "runs; per coefficient: " + ", ".join(f"λ={k}: {v:+.2f}" for k, v in
                                                    within.items())
               + f"; pooled over coefficients {pooled:+.2f} (driven by LocAteR itself)")
        return Assessment(
            verdict=verdict, theory="negative (sign of d entropy / d variance)",
            empirical=Measurement(observed,
                                  quantity=("mean within-coefficient Spearman(eigen-variance, "
                                            "entropy)")),
            statistic=(f"final eigen-variance and validation attention entropy of {n_runs} "
                       f"trained models ({results[0].spec.task.kind}), stratified by LocAteR "
                       "coefficient"),
            tolerance=Tolerance("the sign is the prediction; permuting within a coefficient "
                                "keeps LocAteR's own effect out of the test",
                                {"p": "0.025 one-sided, stratified permutation test"}),
            explanation=why, n_seeds=params["seeds"],
            details={"within_lambda_spearman": within, "pooled_spearman": pooled,
                     "p_negative": p_negative, "p_positive": p_positive,
                     "diverged": len(results) - n_runs},
            p_value=p_negative)

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        finished = {lam: [r for r in runs if not r.diverged]
                    for lam, runs in self.by_lambda(params, results).items()}
        return {"spectrum_vs_entropy": spectrum_figure(finished)}
