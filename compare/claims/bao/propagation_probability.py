"""``bao.propagation_probability`` (§3.3): rho_t = P(0 < z~_t < 1) from the Gaussian
approximation of the derived moments against its Monte Carlo frequency, within the
approximation's calibrated accuracy (the formulas are derived under the token model, not the
paper's)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from attnverify import theory
from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.bao.common import (
    MC_UNIT,
    MONTE_CARLO,
    TOKEN_MODEL,
    Spectrum,
    check_each,
    check_length,
    check_seed,
    check_spectra,
    check_width,
    derivation,
    scores_at,
)
from attnverify.compare.claims.bao.figures import RhoProfile, rho_profiles_figure
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.params import Params
from attnverify.compare.protocol import Reason
from attnverify.compare.space import Dimension
from attnverify.empirics import RunResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PROPAGATION_PROBABILITY = derivation(
    endpoint=("max over positions of |rho^_t - rho_t|: the Monte Carlo frequency of "
              "0 < z~_t < 1 against the Gaussian-approximation rho_t, per d and (mean, std)"),
    unit=MC_UNIT,
    test=("tolerance per (d, mean, std): max_t |rho^ - rho| <= 0.06 for d >= 32, 0.12 for "
          "d < 32, plus 4 binomial SE of rho^ at the worst position"),
    confirm=("every (d, mean, std) within its allowance, and the same comparison rejects "
             "each of the power check's wrong formulas (twice the eigen-variance, half the "
             "eigen-mean) at some (d, mean, std); where it rejects one of them nowhere, not "
             "testable"),
    refute="some (d, mean, std) outside its allowance",
    h1=("they disagree beyond the tolerance: a bug in one of the two, or the Gaussian "
        "approximation coarser than the spec's calibrated accuracy"),
    precondition=("power: the comparison rejects each wrong formula of WRONG_FORMULAS at some "
                  "(d, mean, std) of the same Monte Carlo"),
    secondary=("max error per d", "rho-profiles at d = 64 (figure)"),
    weaknesses=(
        "the 0.06 / 0.12 accuracies come from the spec's own calibration simulation and are "
        "wide for a probability: a 0.05 error passes at d >= 32",
        "the power check's wrong formulas (twice the variance, half the mean) are two of many; "
        "an error of another shape within the allowance passes",
        "the 4-SE noise allowance is taken at the worst position only, with no correction for "
        "the many positions and cases",
    ))


WRONG_FORMULAS: dict[str, tuple[Callable[[float], float], Callable[[float], float]]] = {
    "rho with twice the eigen-variance": (lambda m: m, lambda s: s * math.sqrt(2.0)),
    "rho with the eigen-mean halved": (lambda m: m / 2, lambda s: s),
}
"""The power check's wrong formulas (a factor 2 in a derived moment, the size of error a
derivation slip makes): the check is testable only where the comparison that passes rho
rejects each of them at some (d, mean, std), on the same Monte Carlo."""

CASES = (Spectrum(0.0, 0.1), Spectrum(0.1, 0.02), Spectrum(0.1, 0.3), Spectrum(-0.2, 0.5),
         Spectrum(0.3, 1.0))
"""The (eigen-mean, eigen-std) of every profile (smoke: the first three)."""


@dataclass(frozen=True)
class PropagationParams(Params):
    """The widths ``dims`` and (eigen-mean, eigen-std) ``cases`` at which the rho-profile of
    length ``T`` is compared, over ``n_samples`` walks from ``seed``."""

    dims: tuple[int, ...]
    T: int
    cases: tuple[Spectrum, ...]
    n_samples: int
    seed: int

    def __post_init__(self) -> None:
        check_each(check_width, "dims", self.dims)
        check_length(self.T)
        check_spectra("cases", self.cases)
        check_seed("seed", self.seed)


class PropagationProbability(Claim):
    """``bao.propagation_probability``: rho_t from the derived moments against the Monte Carlo
    frequency of 0 < z~_t < 1.

    Tolerance (docs/derivations.md#propagation-probability-and-rho-profile): the Gaussian
    approximation behind rho is coarser at small d, where the quadratic form z~ = c q^T W y is
    far from Gaussian: max_t |rho^ - rho| <= 0.06 for d >= 32 and <= 0.12 for d in [8, 16], plus
    4 binomial standard errors of rho^ for sampling noise. These bounds were calibrated by
    simulation beforehand; they are the claim's statement of "within the Gaussian
    approximation's accuracy", not fitted here.
    """

    id = "bao.propagation_probability"
    protocol = PROPAGATION_PROBABILITY
    kind = ClaimKind.DERIVATION
    code_version = 2  # 2: the Monte Carlo's walks drawn by numpy (MONTE_CARLO_VERSION 2)
    paper = "bao"
    statement = ("rho_t = P(0 < z~_t < 1) from the Gaussian approximation matches Monte Carlo "
                 "within the approximation's accuracy (0.06 for d >= 32, 0.12 for d < 32).")
    space: ClassVar[dict[str, Dimension]] = {
        # the paper's regime (large d) first: the shrunk counterexample is the largest width at
        # which the Gaussian approximation misses the Monte Carlo by more than its tolerance
        "d": Dimension("width d of the query-key matrix", values=(128, 64, 48, 32, 24, 16, 12,
                                                                   8, 6, 4, 3, 2)),
        "eig_mean": Dimension("mean m of the W_QK eigenspectrum",
                              values=(0.1, 0.0, -0.1, 0.2, 0.3)),
        "eig_std": Dimension("standard deviation s of the W_QK eigenspectrum",
                             values=(0.02, 0.1, 0.3, 0.5, 1.0)),
    }

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        return {"dims": (point["d"],), "cases": (Spectrum(point["eig_mean"], point["eig_std"]),)}

    defaults: ClassVar[dict[str, PropagationParams]] = {
        "smoke": PropagationParams(dims=(16, 64), T=64, cases=CASES[:3], **MONTE_CARLO["smoke"]),
        "quick": PropagationParams(dims=(8, 16, 32, 64, 128), T=128, cases=CASES,
                                   **MONTE_CARLO["quick"]),
        "full": PropagationParams(dims=(8, 16, 32, 64, 128, 256), T=256, cases=CASES,
                                  **MONTE_CARLO["full"]),
    }

    @staticmethod
    def allowed(d: int) -> float:
        return 0.06 if d >= 32 else 0.12

    @staticmethod
    def profile(params: dict[str, Any], d: int, case: int) -> RhoProfile:
        """rho_t from theory, its Monte Carlo estimate and standard error at width ``d`` and
        the ``case``-th (mean, std) of ``params`` (the walks cached: :func:`scores_at`)."""
        T, (m, s) = params["T"], params["cases"][case]
        rho_mc, se = scores_at(d, T, m, s, params, offset=case)[1].rho()
        return np.asarray(theory.bao.rho(d, T, m, s).value), rho_mc, se

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        T = params["T"]
        rows = []
        rejected = dict.fromkeys(WRONG_FORMULAS, False)
        for d in params["dims"]:
            for j, (m, s) in enumerate(params["cases"]):
                rho_th, rho_mc, se = self.profile(params, d, j)
                err = np.abs(rho_mc - rho_th)
                peak = int(err.argmax())
                limit = self.allowed(d) + 4 * float(se[peak])
                rows.append({"d": d, "eig_mean": m, "eig_std": s, "max_abs_error": float(err.max()),
                             "at_position": peak + 1, "allowed": limit,
                             "agrees": bool(err.max() <= limit)})
                for name, (mean_of, std_of) in WRONG_FORMULAS.items():
                    wrong = np.asarray(theory.bao.rho(d, T, mean_of(m), std_of(s)).value)
                    gap = np.abs(rho_mc - wrong)
                    rejected[name] |= bool(gap.max() > self.allowed(d)
                                           + 4 * float(se[int(gap.argmax())]))
        failed = [r for r in rows if not r["agrees"]]
        ok = not failed
        blind = [name for name, hit in rejected.items() if not hit]
        worst = max(rows, key=lambda r: r["max_abs_error"] - r["allowed"])
        by_d = {d: max(r["max_abs_error"] for r in rows if r["d"] == d) for d in params["dims"]}
        explanation = (
            "max |rho^ - rho| per d: " + ", ".join(f"d={d}: {e:.3f}" for d, e in by_d.items())
            + (" -- all within the approximation's accuracy" if ok else
               f"; outside at d={worst['d']} mean={worst['eig_mean']} std={worst['eig_std']} "
               f"({worst['max_abs_error']:.3f} > {worst['allowed']:.3f}): the Gaussian "
               "approximation is coarser there than the spec's calibration"))
        verdict, reason = (Verdict.CONFIRMED if ok else Verdict.REFUTED), None
        if blind:
            explanation += (". The same comparison does not reject " + " or ".join(blind)
                            + (" either" if ok else "") + ": the allowance cannot tell rho "
                            "from such a formula at these widths and spectra.")
            if ok:
                verdict, reason = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE
                explanation = "Not testable here (power check): " + explanation
        else:
            explanation += (". The power check holds: the same comparison rejects "
                            + " and ".join(WRONG_FORMULAS) + " at some case.")
        return Assessment(
            verdict=verdict, reason=reason,
            theory="rho_t = Phi((1 - mu_t)/sqrt(v_t)) - Phi(-mu_t/sqrt(v_t))",
            empirical=Measurement(max(r["max_abs_error"] for r in rows),
                                  quantity="max |rho^ - rho| over d, (mean, std) and positions; "
                                           "allowed 0.06 (d >= 32) or 0.12 plus 4 SE per case, "
                                           f"closest to it at d = {worst['d']}: "
                                           f"{worst['max_abs_error']:.3f} of "
                                           f"{worst['allowed']:.3f}"),
            statistic=(f"Monte Carlo frequency of 0 < z~_t < 1 over {params['n_samples']} walks, "
                       f"T = {T}, d in {list(params['dims'])}. {TOKEN_MODEL}"),
            tolerance=Tolerance("the simulation-calibrated accuracy of the Gaussian approximation "
                                "(docs/derivations.md#propagation-probability-and-rho-profile) "
                                "plus sampling noise",
                                {"d >= 32": 0.06, "d < 32": 0.12, "plus": "4 binomial SE"}),
            explanation=explanation,
            details={"cases": rows, "max_error_by_d": by_d, "power_check": rejected},
        )

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        """The rho-profiles at d = 64 (none without that width) and the error per d."""
        if 64 not in params["dims"]:
            return {}
        profiles = {tuple(case): self.profile(params, 64, j)
                    for j, case in enumerate(params["cases"])}
        return {"rho_profiles": rho_profiles_figure(
            profiles, params["T"], assessment.details["max_error_by_d"],
            assessment.details["cases"])}
