"""``bao.locater_effect`` (Bao et al. 2024; the candidate formulas: §4): training with LocAteR
improves validation loss (perplexity) against training without it.

A calibration block of seeds chooses the coefficient to test, lambda*, and the coefficient of a
plain Frobenius penalty on W_QK at matched eigen-variance, mu*; a decision block then trains
none, LocAteR at lambda* and the control at mu* (:mod:`.locater_runs`). The paired change of
final validation loss (LocAteR - none) decides: a one-sided paired t-test confirms an
improvement at 0.025; an improvement of at least :data:`MIN_IMPROVEMENT` nats (1% in
perplexity) is refuted at 0.10. The entropy change (the paper's other observation, a different
endpoint) is reported with its own one-sided p-values and decides nothing; LocAteR against the
control at matched eigen-variance says whether a concentrated spectrum, rather than a smaller
W, is what helps, and is reported, not decided on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from attnverify.compare.claim import Assessment, ClaimKind, Verdict
from attnverify.compare.claims.bao.common import FROZEN
from attnverify.compare.claims.bao.figures import locater_figure
from attnverify.compare.claims.bao.locater_runs import (
    MIN_PAIRS,
    NONE,
    LocaterRuns,
    arm_of,
    mean_final,
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

ALPHA, BETA = 0.025, 0.10
MIN_IMPROVEMENT = 0.01
"""nats: the smallest improvement of validation loss that matters (1% in perplexity)."""

LOCATER_EFFECT = Protocol(
    endpoint=("the paired change (LocAteR - none) of final validation loss at the coefficient "
              "lambda* chosen on calibration seeds: 'improves validation perplexity'"),
    unit=("per decision seed: the paired difference of final validation loss (same "
          "initialisation and data stream), 8 seeds at quick, 5 at full"),
    h0="LocAteR does not lower the validation loss (mean paired change >= 0)",
    h1="it lowers it by at least 0.01 nats (1% in perplexity)",
    test="one-sided paired t-tests on the loss changes",
    confirm="mean change < 0 at p < 0.025",
    refute=("mean change > -0.01 nats at p < 0.10: an improvement of 1% is rejected (unless "
            "the loss also falls significantly at 0.025: an improvement smaller than the "
            "smallest that matters, inconclusive)"),
    alpha=0.025, beta=0.10,
    readout=("the last evaluation of each run (the final step) on the validation batch; a "
             "pair with a diverged run is dropped and counted"),
    frozen=FROZEN,
    precondition="at least 3 finished pairs on the decision seeds",
    secondary=("the paired change of normalised validation attention entropy (the paper's "
               "other observation: expected to rise; reported with its one-sided p-values)",
               "the paired change of eigen-variance",
               "LocAteR against a plain Frobenius penalty on W_QK at matched eigen-variance "
               "(mu* chosen on calibration seeds): a concentrated spectrum against a smaller W",
               "the calibration seeds' loss change at every coefficient"),
    seeds=(SeedBlock(SeedUse.DECISION, 300, note="none, LocAteR at lambda*, control at mu*"),
           SeedBlock(SeedUse.CALIBRATION, 400,
                     note="every coefficient of the grid and of the control; lambda* has the "
                          "lowest mean paired loss, mu* the eigen-variance nearest lambda*'s"),
           SeedBlock(SeedUse.DEVELOPMENT, 0,
                     note="seeds 0 to 7, the runs of the three-interval rule used before; "
                          "100 to 107 and 200 to 203, a first version of this protocol")),
    weaknesses=(
        "LocAteR is the spec's candidate A (the paper's formula is unknown); "
        + LM_SCALE_WEAKNESS,
        "a diverged pair is dropped, not counted as a loss",
        "the paired t-test assumes near-normal loss differences over 8 seeds",
    ))


class LocaterEffect(LocaterRuns):
    """``bao.locater_effect`` (see the module docstring; its protocol's history:
    docs/methodology.md)."""

    id = "bao.locater_effect"
    kind = ClaimKind.PAPER
    code_version = 2
    protocol = LOCATER_EFFECT
    statement = ("Training with LocAteR improves validation loss (perplexity) against training "
                 "without it (Bao et al. 2024); the rise of attention entropy and a plain "
                 "Frobenius penalty at matched eigen-variance are reported beside it.")

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        runs = self.decision(params, results)
        decision, lam, mu = runs.runs, runs.lam, runs.mu
        loss, entropy = runs.change("loss"), runs.change("attn_entropy_norm")
        variance, control = runs.change("eig_var"), runs.change("loss", against=runs.control)
        theory = "LocAteR lowers validation loss"
        chosen = f"lambda* = {lam:g}, control mu* = {mu:g} (chosen on calibration seeds)"
        if len(loss) < MIN_PAIRS:
            return Assessment(
                verdict=Verdict.INCONCLUSIVE, reason=Reason.NOT_TESTABLE, theory=theory,
                empirical=Measurement(None), statistic=f"paired loss change, {chosen}",
                tolerance=Tolerance("the protocol's precondition", {"min_pairs": MIN_PAIRS}),
                explanation=(f"{len(loss)} finished pairs at {chosen}: fewer than "
                             f"{MIN_PAIRS}; more decision seeds (or runs that do not diverge) "
                             f"would make it testable."),
                n_seeds=len(loss))
        improve, worsen = one_sided_t(loss)
        _, smaller = one_sided_t(loss, -MIN_IMPROVEMENT)
        ent_down, ent_up = one_sided_t(entropy)
        d = decide(OneSided("paired t on validation loss (LocAteR lower)", improve, worsen),
                   ALPHA, refutation=smaller, beta=BETA,
                   effect="an improvement of validation loss")
        lo, hi = mean_ci(loss)
        var_ratio = (mean_final(decision, ("A", lam), "eig_var")
                     / mean_final(decision, ("F", mu), "eig_var"))
        c_better, c_worse = one_sided_t(control) if len(control) >= 2 else (1.0, 1.0)
        explanation = (
            f"At {chosen}, over {len(loss)} paired decision seeds: validation loss "
            f"{np.mean(loss):+.4f} nats (95% CI {lo:+.4f} to {hi:+.4f}), attention entropy "
            f"{np.mean(entropy):+.3f} (reported: one-sided p {ent_up:.3g} for a rise, "
            f"{ent_down:.3g} for a fall), eigen-variance {np.mean(variance):+.3g}. {d.text} "
            f"Control (reported, not decided on): at eigen-variance ratio {var_ratio:.2f} "
            f"(LocAteR / Frobenius), LocAteR's loss minus the control's is "
            f"{np.mean(control):+.4f} nats (one-sided p {c_better:.3g} LocAteR lower, "
            f"{c_worse:.3g} higher): "
            + ("a concentrated spectrum helps beyond a smaller W" if c_better < ALPHA else
               "the plain penalty is significantly better" if c_worse < ALPHA else
               "not told apart from a plain shrinkage of W") + ".")
        return Assessment(
            verdict=d.verdict, reason=d.reason, p_value=d.p_value,
            refuting_p=d.refuting_p, theory=theory,
            empirical=Measurement(float(np.mean(loss)), ci=[lo, hi], confidence=0.95,
                                  quantity=(f"paired change of validation loss (nats), "
                                            f"lambda* = {lam:g}")),
            statistic=(f"final validation loss, LocAteR at {lam:g} minus none, paired over "
                       f"{len(loss)} decision seeds, task {results[0].spec.task.kind}"),
            tolerance=Tolerance("one-sided paired t-tests; 0.01 nats is 1% in perplexity",
                                {"alpha": ALPHA, "beta": BETA, "min_improvement": MIN_IMPROVEMENT}),
            explanation=explanation, n_seeds=len(loss),
            details={"lambda_star": lam, "mu_star": mu, "loss_diff": loss,
                     "entropy_diff": entropy, "variance_diff": variance,
                     "control_loss_diff": control, "variance_ratio": var_ratio})

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        """The decision runs' curves per arm, where the claim was testable."""
        if "loss_diff" not in assessment.details:
            return {}
        runs = self.decision(params, results)
        arms = ((NONE, "none"), (("A", runs.lam), f"LocAteR λ = {runs.lam:g}"),
                (runs.control, f"Frobenius μ = {runs.mu:g}"))
        return {"locater_curves": locater_figure(
            [(label, [r for r in runs.runs if arm_of(r) == arm and not r.diverged])
             for arm, label in arms])}
