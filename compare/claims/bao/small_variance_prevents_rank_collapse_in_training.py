"""``bao.small_variance_prevents_rank_collapse_in_training`` (Bao et al. 2024): in
trained models, a smaller query-key eigen-variance does not push the tokens after attention
together (rank collapse); the paper argues that small variance with a non-zero mean avoids
both rank collapse and entropy collapse.

An intervention, not seed-to-seed variation: LocAteR at lambda* lowers the eigen-variance of
W_QK, with the same initialisation and data stream as the unregularised run of each decision
seed (the runs of ``bao.locater_effect``: :mod:`.locater_runs`, shared through the cache). The
primary endpoint is the paired change of token diversity after attention, the final
validation ``res(Y)/res(X)`` (``res(X) = ||X - 1 xbar^T||_F / ||X||_F``, averaged over the
validation batch). The claim is testable only where LocAteR did lower the eigen-variance on
these pairs; then a significant rise of diversity confirms and a significant fall (the tokens
closer together with smaller variance: toward rank collapse) refutes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from attnverify.compare.claim import Assessment, ClaimKind, Verdict
from attnverify.compare.claims.bao.common import FROZEN
from attnverify.compare.claims.bao.figures import token_diversity_figure
from attnverify.compare.claims.bao.locater_runs import (
    CALIBRATION_SEEDS,
    DECISION_SEEDS,
    MIN_PAIRS,
    LocaterRuns,
    one_sided_t,
)
from attnverify.compare.claims.bao.training import LM_SCALE_WEAKNESS
from attnverify.compare.decision import OneSided, decide
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason, SeedBlock, SeedUse
from attnverify.compare.stats import mean_ci
from attnverify.empirics import RunResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ALPHA = 0.025

TOKEN_DIVERSITY_IN_TRAINING = Protocol(
    endpoint=("the paired change (LocAteR at lambda* - none) of final validation token "
              "diversity after attention, res(Y)/res(X), where LocAteR lowered the "
              "eigen-variance of W_QK"),
    unit=("per decision seed of bao.locater_effect: the paired difference of the final "
          "res(Y)/res(X) (same initialisation and data stream)"),
    h0=("a smaller eigen-variance leaves token diversity unchanged or lowers it (mean paired "
        "change <= 0)"),
    h1="a smaller eigen-variance keeps the tokens apart: diversity rises (mean change > 0)",
    test="one-sided paired t-tests on the diversity changes, both directions",
    confirm="mean change > 0 at p < 0.025",
    refute=("mean change < 0 at p < 0.025: with smaller variance the tokens after attention "
            "are closer together, toward rank collapse"),
    alpha=ALPHA, beta=None,
    error_rates=("refuting needs the opposite effect at 0.025; no smallest effect is "
                 "declared, so 'no change' stays inconclusive"),
    readout=("the last evaluation of each run (the final step) on the validation batch, the "
             "runs of bao.locater_effect at its lambda*; a pair with a diverged run or a "
             "non-finite value is dropped, and the dropped pairs are counted in the report"),
    frozen=FROZEN,
    precondition=("at least 3 finished pairs; LocAteR lowered the eigen-variance on them "
                  "(one-sided paired t p < 0.025), else there is no intervention on the "
                  "variance to test; and the LocAteR runs' final eigen-mean is non-zero "
                  "(two-sided one-sample t p < 0.05), since the argument is about small "
                  "variance around a non-zero mean (at mean 0 small variance is the "
                  "rank-collapse side)"),
    secondary=("the number of dropped pairs",
               "LocAteR against the Frobenius control at matched eigen-variance, on "
               "diversity (a concentrated spectrum against a smaller W)"),
    seeds=(SeedBlock(SeedUse.DECISION, DECISION_SEEDS,
                     note="the decision runs of bao.locater_effect (none and LocAteR at "
                          "lambda*)"),
           SeedBlock(SeedUse.CALIBRATION, CALIBRATION_SEEDS,
                     note="bao.locater_effect's calibration, which chose lambda*")),
    weaknesses=(
        "LocAteR changes more than the eigen-variance (it is a penalty on the whole "
        "spectrum), so the intervention is not on the variance alone",
        "lambda* was chosen for validation loss, not for this endpoint",
        "res(Y)/res(X) is one summary of rank collapse (Dong et al.'s and the stable rank "
        "are others) after a single layer; the paper concerns deep networks",
        "a 1-layer causal model: the first query attends to itself only",
        "the decision runs are bao.locater_effect's, so the two verdicts are not independent",
        LM_SCALE_WEAKNESS))


class SmallVarianceKeepsTokenDiversity(LocaterRuns):
    """``bao.small_variance_prevents_rank_collapse_in_training`` (see the module docstring).

    The trained-model evidence that ``bao.rank_collapse_at_uniform`` (a Monte Carlo check of
    one untrained layer) cannot give (its protocol's history: docs/methodology.md).
    """

    id = "bao.small_variance_prevents_rank_collapse_in_training"
    kind = ClaimKind.PAPER
    code_version = 1
    protocol = TOKEN_DIVERSITY_IN_TRAINING
    statement = ("In trained models, a smaller query-key eigen-variance (LocAteR) keeps the "
                 "tokens after attention apart rather than collapsing them (Bao et al. 2024: "
                 "small variance prevents rank collapse).")

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        runs = self.decision(params, results)
        lam, mu = runs.lam, runs.mu
        pairs = [(d, v) for d, v in zip(runs.change("rank_res_ratio"), runs.change("eig_var"),
                                        strict=True) if np.isfinite(d) and np.isfinite(v)]
        diversity, variance = [d for d, _ in pairs], [v for _, v in pairs]
        dropped = len(runs.seeds) - len(pairs)
        mean = [m for m in runs.finals("eig_mean") if np.isfinite(m)]
        control = [c for c in runs.change("rank_res_ratio", against=runs.control)
                   if np.isfinite(c)]
        var_lower, _ = one_sided_t(variance)
        mean_p = (float(stats.ttest_1samp(mean, 0.0).pvalue) if len(mean) >= 2 and np.ptp(mean) > 0
                  else 0.0 if mean and mean[0] != 0 else 1.0)  # constant: non-zero or not
        theory = "token diversity does not fall when the eigen-variance is smaller"
        at = f"LocAteR lambda* = {lam:g} (chosen on calibration seeds for validation loss)"
        if len(diversity) < MIN_PAIRS or var_lower >= ALPHA or mean_p >= 2 * ALPHA:
            why = (f"{len(diversity)} finished pairs at {at} ({dropped} dropped): fewer than "
                   f"{MIN_PAIRS}" if len(diversity) < MIN_PAIRS else
                   f"at {at} the eigen-variance did not fall significantly (paired change "
                   f"{np.mean(variance):+.3g}, one-sided p {var_lower:.3g}): no intervention "
                   f"on the variance to test" if var_lower >= ALPHA else
                   f"at {at} the LocAteR runs' eigen-mean ({np.mean(mean):+.3g}) is not "
                   f"told apart from 0 (two-sided p {mean_p:.3g}): small variance around a "
                   f"zero mean is the rank-collapse side, not the claim's regime")
            return Assessment(
                verdict=Verdict.INCONCLUSIVE, reason=Reason.NOT_TESTABLE, theory=theory,
                empirical=Measurement(None), statistic=f"paired diversity change, {at}",
                tolerance=Tolerance("the protocol's precondition",
                                    {"min_pairs": MIN_PAIRS, "alpha": ALPHA}),
                explanation=why + "; more decision seeds, or a larger LocAteR coefficient, "
                                  "would make it testable.",
                n_seeds=len(diversity))
        fall, rise = one_sided_t(diversity)
        d = decide(OneSided("paired t on token diversity (rises)", rise, fall), ALPHA,
                   effect="a rise of token diversity")
        lo, hi = mean_ci(diversity)
        c_up, c_down = (one_sided_t(control)[::-1] if len(control) >= 2 else (1.0, 1.0))
        explanation = (
            f"At {at}, over {len(diversity)} paired decision seeds ({dropped} dropped): "
            f"eigen-variance {np.mean(variance):+.3g} (one-sided p {var_lower:.3g} for a fall: "
            f"the intervention took), LocAteR's eigen-mean {np.mean(mean):+.3g} (non-zero, "
            f"two-sided p {mean_p:.3g}); token diversity "
            f"res(Y)/res(X) {np.mean(diversity):+.4f} (95% CI {lo:+.4f} to {hi:+.4f}; "
            f"one-sided p {rise:.3g} for a rise, {fall:.3g} for a fall). {d.text} Control "
            f"(reported): LocAteR minus the Frobenius penalty at mu* = {mu:g} on diversity "
            f"{np.mean(control) if control else float('nan'):+.4f} (one-sided p {c_up:.3g} "
            f"higher, {c_down:.3g} lower).")
        return Assessment(
            verdict=d.verdict, reason=d.reason, p_value=d.p_value,
            refuting_p=d.refuting_p, theory=theory,
            empirical=Measurement(float(np.mean(diversity)), ci=[lo, hi], confidence=0.95,
                                  quantity=f"paired change of res(Y)/res(X), lambda* = {lam:g}"),
            statistic=(f"final validation res(Y)/res(X), LocAteR at {lam:g} minus none, "
                       f"paired over {len(diversity)} decision seeds, task "
                       f"{results[0].spec.task.kind}"),
            tolerance=Tolerance("one-sided paired t-tests, the same level both ways",
                                {"alpha": ALPHA}),
            explanation=explanation, n_seeds=len(diversity),
            details={"lambda_star": lam, "mu_star": mu, "diversity_diff": diversity,
                     "variance_diff": variance, "locater_eig_mean": mean,
                     "dropped_pairs": dropped,
                     "control_diversity_diff": control, "p_variance_fall": var_lower})

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        """The paired changes of the decision seeds, where the claim was testable."""
        details = assessment.details
        if "diversity_diff" not in details:
            return {}
        return {"token_diversity": token_diversity_figure(
            details["variance_diff"], details["diversity_diff"], details["lambda_star"])}
