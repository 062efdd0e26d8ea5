"""The frozen decision protocols of the Bao claims (:mod:`compare.protocol`), one record per
claim, describing each rule as :mod:`.moments`, :mod:`.regimes` and :mod:`.training` implement
it. The derivation checks build on :func:`derivation_protocol` and state their own rule, the
testability precondition and what a sceptical reader should know."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from attnverify.compare.protocol import Protocol, SeedBlock, SeedUse, derivation_protocol

FROZEN = "2026-11-25"
MC_UNIT = ("a Monte Carlo statistic over random-walk sequences (1,000 / 4,000 / 20,000 walks at "
           "smoke / quick / full, seed 0) under the spec's token model")
TOKEN_MODEL_WEAKNESS = ("the token model (Gaussian random walk, last-token query) is the spec's, "
                        "not the paper's (unavailable): agreement checks our code, not the paper")
NO_PRECONDITION = "no testability precondition is checked"


def _derivation(endpoint: str, unit: str, test: str, confirm: str, refute: str, *,
                h0: str | None = None, h1: str | None = None, error_rates: str | None = None,
                precondition: str = "", secondary: tuple[str, ...] = (),
                weaknesses: tuple[str, ...] = ()) -> Protocol:
    """:func:`derivation_protocol` with the claim's own rule, precondition and weaknesses."""
    overrides: dict[str, Any] = {name: value for name, value in (("h0", h0), ("h1", h1),
                                                               ("error_rates", error_rates))
                                 if value is not None}
    return replace(derivation_protocol(endpoint, unit, test, FROZEN, secondary),
                   confirm=confirm, refute=refute, precondition=precondition,
                   weaknesses=(*weaknesses, TOKEN_MODEL_WEAKNESS), **overrides)


SCORE_MOMENTS = _derivation(
    endpoint=("max |z| of the Monte Carlo mean and variance of the centred scores against the "
              "derived mu_t, v_t, over positions, random (d, T, mean, std) points and symmetric "
              "and non-symmetric W"),
    unit=MC_UNIT,
    test=("z-test per position and moment (SE: sample SD / sqrt(n) for the mean, delta-method "
          "sqrt((m4 - s^4)/n) for the variance), Bonferroni over 2 moments x 2 kinds of W x all "
          "positions of all points at family-wise 1e-3 (|z| bound about 5.0 to 5.4)"),
    confirm=("every |z| within the bound, and the naive variance (tr W^2 in place of ||W||_F^2) "
             "beyond it on the non-symmetric W of some point"),
    refute="some |z| beyond the bound (any point, position, moment or W)",
    precondition=("power check: the naive tr W^2 variance must be rejected by the same z-test on "
                  "the non-symmetric W at some point; else not testable (the sample cannot tell "
                  "the formulas apart)"),
    secondary=("max |z| of the mean and of the variance per (point, W)",
               "max |z| of the naive variance"),
    weaknesses=(
        "the power check covers only the ||W||_F^2 vs tr W^2 term and passes if one point "
        "rejects it; a wrong mean or another wrong factor has no power check",
        "Bonferroni over thousands of position tests puts the bound near |z| = 5: a systematic "
        "error below about 5 SE per position passes",
        "the variance SE rests on a sample fourth moment (delta method), itself noisy",
        "2 / 5 / 20 random points from one fixed point seed (1), the same in every run",
    ))

PROPAGATION_PROBABILITY = _derivation(
    endpoint=("max over positions of |rho^_t - rho_t|: the Monte Carlo frequency of "
              "0 < z~_t < 1 against the Gaussian-approximation rho_t, per d and (mean, std)"),
    unit=MC_UNIT,
    test=("tolerance per (d, mean, std): max_t |rho^ - rho| <= 0.06 for d >= 32, 0.12 for "
          "d < 32, plus 4 binomial SE of rho^ at the worst position"),
    confirm="every (d, mean, std) within its allowance",
    refute="some (d, mean, std) outside its allowance",
    h1=("they disagree beyond the tolerance: a bug in one of the two, or the Gaussian "
        "approximation coarser than the spec's calibrated accuracy"),
    secondary=("max error per d", "rho-profiles at d = 64 (figure)"),
    weaknesses=(
        "the 0.06 / 0.12 accuracies come from the spec's own calibration simulation and are "
        "wide for a probability: a 0.05 error passes at d >= 32",
        "no power check: a wrong rho formula within the allowance passes",
        "the 4-SE noise allowance is taken at the worst position only, with no correction for "
        "the many positions and cases",
        NO_PRECONDITION,
    ))

ANTRP_VARIANT_DISAGREES = _derivation(
    endpoint=("max |z| of the Monte Carlo score variance against the ANTRP variance "
              "(2 i^2/T^2 + 7/12) ||W||_F^2/d^2 (i = t - 1) and against the derived one, per d"),
    unit=MC_UNIT,
    test=("the variance z-test of bao.score_moments, Bonferroni over positions x widths x the "
          "two formulas at family-wise 1e-3"),
    confirm=("the ANTRP variance beyond the bound at every d while the derived one is within "
             "it at every d"),
    refute="the ANTRP variance within the bound at some d, whatever the derived one does",
    h0=("the ANTRP variance disagrees with Monte Carlo at every d while the derived one agrees "
        "(the documented discrepancy holds under this token model)"),
    h1="the ANTRP variance passes the z-test at some d",
    precondition=("the derived variance passes the same z-test at every d (the Monte Carlo "
                  "reference is trusted); else, with ANTRP rejected, not testable"),
    secondary=("ANTRP / derived variance ratio per d against the predicted [1/d, 13.5/d]",),
    weaknesses=(
        "it documents a discrepancy under our token model and our index alignment "
        "(i = t - 1), not that the third-party formula is wrong under its own assumptions",
        "only the variance is compared, not the mean",
        "the ANTRP variance is smaller by about a factor d, so it is rejected by a wide margin: "
        "the check cannot fail by lack of power, nor tell much",
        "the predicted ratio range [1/d, 13.5/d] is reported, not decided",
        "a refutation does not need the derived variance to pass",
    ))

ZERO_MEAN_NO_SELECTIVITY = _derivation(
    endpoint=("min over the stds (0.05, 0.2, 0.5; d = 64, T = 128) of the Monte Carlo N_eff/T "
              "of the rho-profile at eigen-mean 0, with mu_t = 0 and the regime as exact checks"),
    unit=MC_UNIT,
    test=("exact checks (max |mu_t| = 0, |rho_t - erf(1/sqrt(2 v_t))/2| <= 1e-15, theory "
          "regime 'uniform') and the Monte Carlo N_eff/T against 0.9, the project's uniform "
          "threshold"),
    confirm=("the exact checks hold and Monte Carlo N_eff/T >= 0.9 at every std, and the power "
             "check passes"),
    refute=("an exact check fails, or Monte Carlo N_eff/T < 0.9 at some std (before the power "
            "check is read)"),
    h0="at tr W = 0, mu_t = 0 exactly and the rho-profile is flat (N_eff/T >= 0.9) at every std",
    h1="some zero-mean profile is not flat, or an exact identity fails",
    precondition=("power check: the same stds at eigen-mean 0.1 must give Monte Carlo "
                  "N_eff/T < 0.9 at every std; else not testable (the measure cannot see "
                  "selectivity)"),
    secondary=("theory N_eff/T per std",),
    weaknesses=(
        "mu_t = 0 at tr W = 0 holds by construction of the formula: that half checks arithmetic",
        "N_eff/T is compared with 0.9 as a point estimate, with no sampling error",
        "'no selectivity' is read as N_eff/T >= 0.9, the project's classifier threshold, not "
        "the paper's: a mildly selective profile passes",
        "one width and length and three stds, one W per std",
    ))

LARGE_VARIANCE_VANISHES = _derivation(
    endpoint=("Monte Carlo max_t rho^_t along the eigen-std grid 0.5 to 16 at eigen-mean 0.1 "
              "(d = 64, T = 128), read at the largest std"),
    unit=MC_UNIT + "; common random numbers along the grid",
    test=("each step along the grid may rise by at most 4 binomial SE (the larger of the two "
          "maxima's); the last max rho^ against 1/4, the project's vanishing threshold, with the "
          "theory regime at the last std"),
    confirm=("no step rises by more than 4 SE, the last max rho^ < 0.25, and the theory regime "
             "at the last std is 'vanishing'"),
    refute=("a rise beyond 4 SE, a last max rho^ >= 0.25, or theory not vanishing at the last "
            "std"),
    h0="max rho falls along the grid and ends in the vanishing regime that theory predicts",
    h1="max rho rises beyond the noise at some step, or does not end below 1/4",
    error_rates=("a correctness check, not a test of an effect, with no stated rate: the 4-SE "
                 "step allowance uses one maximum's SE, not that of the (correlated) difference, "
                 "and the end threshold (max rho^ < 1/4) is a point estimate; 'confirmed' is a "
                 "passed check"),
    secondary=("theory max rho per std", "95% normal interval of the last max rho^"),
    weaknesses=(
        "'every rho_t to zero' is decided as max rho^ < 1/4 at std 16: a point estimate "
        "against the project's classifier threshold, not a limit",
        "'falls' allows flat steps; each rise is tested at 4 SE with no correction for the "
        "5 steps",
        "the max over positions of noisy estimates is biased upward, and its SE is taken at the "
        "argmax only",
        "a grid that stops short of the theory's vanishing regime gives 'refuted', not 'not "
        "testable'",
        NO_PRECONDITION,
    ))

SMALL_VARIANCE_LOCALIZES = _derivation(
    endpoint=("the rho-profile's window at 4 fixed (d, mean, std) cases with max v_t < 1/64 "
              "(T = 128): rho_t where mu_t in [delta, 1 - delta] and where mu_t is outside "
              "[-delta, 1 + delta], delta = 4 max_t sqrt(v_t)"),
    unit=MC_UNIT + "; and the theory profile",
    test=("theory: rho_t >= 0.95 inside and <= 0.05 outside; Monte Carlo: the same within "
          "4 binomial SE per position; Monte Carlo profile localized (N_eff/T < 0.9, max "
          "rho^ >= 1/4)"),
    confirm="every check holds at every case",
    refute="some check fails at some case",
    h0=("every case has a sharp window (rho near 1 inside, near 0 outside), in theory and "
        "Monte Carlo"),
    h1="some case's window is not sharp",
    precondition=("at every case delta < 1/2 (max v_t < 1/64), with at least one position "
                  "inside and one outside the window; else not testable"),
    secondary=("Monte Carlo N_eff/T per case", "min Monte Carlo rho^ inside the windows",
               "the theory's phase map of the (mean, std) plane (figure)"),
    weaknesses=(
        "the 4 cases were picked so that the window test applies; 'small variance' is not "
        "probed toward its edge by default",
        "the 4-SE allowance per position, with no multiplicity correction, leans toward "
        "confirmation",
        "as std -> 0 the Gaussian rho_t tends to the indicator by construction, so the theory "
        "half checks arithmetic; positions within delta of mu = 0 or 1 are not tested",
    ))

ENTROPY_MONOTONE_IN_VARIANCE = _derivation(
    endpoint=("Monte Carlo softmax entropy of the last-token query along the eigen-std grid 0 "
              "to 2 at eigen-mean 0.1 (d = 64, T = 128): each step and H(std 2) - H(std 0)"),
    unit=("per-walk paired entropy differences between stds (common random numbers: the same "
          "eigenvectors, noise and walks), mean and SE over the walks (1,000 / 4,000 / 20,000)"),
    test=("paired z-tests of each consecutive step and of the total change, at the two-sided "
          "Bonferroni z over the grid's steps at family-wise 1e-3 (3.84 for the 8 default "
          "steps)"),
    confirm="no step's mean difference above z SE, and the total's mean + z SE < 0",
    refute="some step's mean difference above z SE (a significant rise)",
    h0=("entropy does not rise along the grid and falls over it (the statement holds under "
        "the token model)"),
    h1="entropy rises significantly at some step",
    error_rates=("not a closed form against a simulator but a Monte Carlo test of the statement: "
                 "a false 'refuted' (a rise flagged where entropy does not rise) has rate at "
                 "most 5e-4 (8 one-sided tests at 6.25e-5), a false fall at most 6.25e-5; no "
                 "rate is set for missing a rise below the noise"),
    secondary=("annealed-approximation entropy (§3.6) and its gap to Monte Carlo for std <= 0.3",
               "95% normal interval of the total change"),
    weaknesses=(
        "monotonicity is checked between 9 grid points only, and a flat step passes",
        "one W per std (common eigenvectors) at one (d, T, mean): a statement about that W, "
        "not an average over W",
        "the only theory here, the annealed approximation, is reported and does not decide (it "
        "is off at large std)",
        NO_PRECONDITION,
    ))

ENTROPY_MONOTONE_IN_MEAN = _derivation(
    endpoint=("Monte Carlo softmax entropy of the last-token query along |eigen-mean| 0 to 0.5 "
              "at eigen-std 0.1 (d = 64, T = 128), for positive and for negative means: each "
              "step and H(|m| = 0.5) - H(m = 0) per sign"),
    unit=("per-walk paired entropy differences between means (common random numbers: the "
          "same eigenvectors, noise and walks), mean and SE over the walks (1,000 / 4,000 / "
          "20,000)"),
    test=("paired z-tests of each consecutive step and of each sign's total change, at the "
          "two-sided Bonferroni z over the 10 steps at family-wise 1e-3 (3.89)"),
    confirm="no step's mean difference above z SE, and each sign's total mean + z SE < 0",
    refute="some step's mean difference above z SE (a significant rise)",
    h0=("entropy does not rise with |mean| and falls over the grid on both signs (the "
        "statement holds under the token model)"),
    h1="entropy rises significantly at some step",
    error_rates=("a Monte Carlo test of the statement, not a closed form against a simulator: "
                 "a false 'refuted' has rate at most 5e-4 (10 one-sided tests at 5e-5); no "
                 "rate is set for missing a rise below the noise"),
    secondary=("annealed-approximation entropy (§3.6) along the grid and its gap to Monte "
               "Carlo", "95% normal interval of the first chain's total change"),
    weaknesses=(
        "monotonicity is checked between 6 grid points per sign only, and a flat step passes",
        "one W per mean (common eigenvectors and noise) at one (d, T, std): a statement about "
        "those W, not an average over W",
        "the grid's mean 0 is shared by both chains, so the two signs are not independent",
        "a property of the derivation's score model found in simulation (§3.6), not a "
        "theorem of the paper",
        NO_PRECONDITION,
    ))

RANK_COLLAPSE_AT_UNIFORM = _derivation(
    endpoint=("token diversity after one attention layer with identity values, res(Y)/res(X): "
              "at W = 0, and at the localized point (mean 0.1, std 0.01) against a zero-mean W "
              "with the same second moment (d = 64, T = 128)"),
    unit=("a Monte Carlo mean over random-walk sequences (100 / 400 / 2,000 at smoke / quick / "
          "full, seed 0), the same walks for every W"),
    test=("W = 0: max ratio <= 1e-12 (round-off); separation: the localized mean's one-sided "
          "99.9% lower bound above the zero-mean W's one-sided 99.9% upper bound (normal, "
          "z = 3.09)"),
    confirm="max ratio at W = 0 <= 1e-12, and the two one-sided 99.9% bounds separate",
    refute="otherwise, including a separation that is merely not significant",
    h0=("W = 0 collapses the tokens exactly, and the localized point keeps more diversity than "
        "zero mean at the same ||W||_F"),
    h1="W = 0 does not collapse, or the localized point does not keep significantly more",
    error_rates=("a correctness check, not a test of an effect: W = 0 is held to round-off, and "
                 "a false separation has rate below 1e-3; a refutation for lack of separation "
                 "has no error rate (absence of significance); 'confirmed' is a passed check"),
    secondary=("mean res ratio along eigen-mean 0 to 0.5 at std 0.01 (figure)",
               "95% interval of the localized mean (the share of the input's token spread "
               "that one layer keeps)"),
    weaknesses=(
        "'the localized regime does not collapse' is tested as 'keeps significantly more "
        "diversity than a zero-mean W of the same norm', with no absolute threshold: the "
        "paper states no size, and the kept share depends on d (about 0.04 at d = 16, 0.075 "
        "at d = 64, 0.10 at d = 128), so any threshold would be set by the width chosen",
        "W = 0 gives uniform attention, so its exact collapse holds by construction",
        "the two W share their walks but are compared by non-overlap of two separate intervals "
        "(conservative, not a paired test), and a lack of separation refutes",
        "one untrained layer: trained models are "
        "bao.small_variance_prevents_rank_collapse_in_training's",
        NO_PRECONDITION,
    ))

SPECTRUM_SEEDS = (SeedBlock(SeedUse.DECISION, 600, note="one run per seed and coefficient"),
                  SeedBlock(SeedUse.DEVELOPMENT, 0, note="the rule was developed on these"))
LM_SCALE_WEAKNESS = ("the default task is a synthetic random-walk language task, not "
                     "WikiText-2, and even full stays below the paper's setting (its "
                     "hyper-parameters are unknown)")

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
