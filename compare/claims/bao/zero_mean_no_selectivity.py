"""``bao.zero_mean_no_selectivity`` (§3.4, derived): zero eigen-mean gives mu_t = 0 exactly and a
flat rho-profile, no positional selectivity (the rank-collapse side of the (eigen-mean,
eigen-std) plane)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy.special import erf

from attnverify import theory
from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.bao.common import (
    MC_UNIT,
    MONTE_CARLO,
    TOKEN_MODEL,
    UNIFORM,
    ScorePoint,
    check_each,
    check_length,
    check_mean,
    check_seed,
    check_std,
    check_width,
    derivation,
    mc_summary,
    scores_at_many,
)
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.params import Params
from attnverify.compare.protocol import Reason
from attnverify.compare.space import Dimension
from attnverify.empirics import RunResult

ZERO_MEAN_NO_SELECTIVITY = derivation(
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


@dataclass(frozen=True)
class ZeroMeanParams(Params):
    """Width ``d``, length ``T``, the eigen-stds ``stds`` at eigen-mean 0 and the power
    check's ``contrast_mean``, ``n_samples`` walks from ``seed``."""

    d: int
    T: int
    stds: tuple[float, ...]
    contrast_mean: float
    n_samples: int
    seed: int

    def __post_init__(self) -> None:
        check_width("d", self.d)
        check_length(self.T)
        check_each(check_std, "stds", self.stds)
        check_mean("contrast_mean", self.contrast_mean)
        check_seed("seed", self.seed)


class ZeroMeanNoSelectivity(Claim):
    """``bao.zero_mean_no_selectivity``: tr W = 0 gives mu_t = 0 exactly and a flat profile.

    Theory (exact): mu_t = 0 and rho_t = erf(1/sqrt(2 v_t))/2 at every position; the regime is
    ``uniform`` (N_eff/T >= 0.9, the classifier's threshold). Measured: the Monte Carlo
    profile's N_eff/T at the same points. Power check: the same std with mean 0.1 must give a
    Monte Carlo N_eff/T below 0.9; if it does not, the measure cannot see selectivity and the
    verdict is inconclusive.
    """

    id = "bao.zero_mean_no_selectivity"
    protocol = ZERO_MEAN_NO_SELECTIVITY
    kind = ClaimKind.DERIVATION
    code_version = 2  # 2: the Monte Carlo's walks drawn by numpy (MONTE_CARLO_VERSION 2)
    paper = "bao"
    statement = ("Zero eigen-mean gives a flat rho-profile: no positional selectivity (uniform, "
                 "the rank-collapse side).")
    space: ClassVar[dict[str, Dimension]] = {
        "d": Dimension("width d of the query-key matrix", values=(64, 32, 16, 128, 8)),
    }
    defaults: ClassVar[dict[str, ZeroMeanParams]] = {
        p: ZeroMeanParams(d=64, T=128, stds=(0.05, 0.2, 0.5), contrast_mean=0.1,
                          **MONTE_CARLO[p])
        for p in ("smoke", "quick", "full")
    }

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        d, T = params["d"], params["T"]
        rows = []
        samples = iter(scores_at_many(
            [ScorePoint(d, T, m, s, offset=i) for i, s in enumerate(params["stds"])
             for m in (0.0, params["contrast_mean"])], params))
        for s in params["stds"]:
            mom = theory.bao.moments_from_traces(*theory.bao.spectrum_traces(d, 0.0, s), T=T,
                                                 c=1 / np.sqrt(d))
            rho_th = theory.bao.propagation_probability(mom.mu, mom.v)
            identity = float(np.abs(rho_th - 0.5 * erf(1 / np.sqrt(2 * mom.v))).max())
            regime = theory.bao.regime(d, T, 0.0, s).value["regime"]
            mc = mc_summary(next(samples)[1].rho()[0])
            contrast = mc_summary(next(samples)[1].rho()[0])
            theory_ratio = theory.bao.localization(rho_th).participation / T
            rows.append({"eig_std": s, "max_abs_mu": float(np.abs(mom.mu).max()),
                         "theory_participation_ratio": float(theory_ratio),
                         "identity_error": identity, "regime": regime,
                         "mc_participation_ratio": mc["participation_ratio"],
                         "contrast_participation_ratio": contrast["participation_ratio"]})
        exact = all(r["max_abs_mu"] == 0 and r["identity_error"] <= 1e-15 for r in rows)
        flat = all(r["regime"] == "uniform" and r["mc_participation_ratio"] >= UNIFORM
                   for r in rows)
        power = all(r["contrast_participation_ratio"] < UNIFORM for r in rows)
        lowest = min(r["mc_participation_ratio"] for r in rows)
        reason = None
        if not (exact and flat):
            verdict = Verdict.REFUTED
            why = (f"a zero-mean profile is not flat: min Monte Carlo N_eff/T = {lowest:.3f} "
                   f"(< {UNIFORM}) or the exact identities fail")
        elif not power:
            verdict, reason = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE
            why = "flat at zero mean, but also flat at the contrast mean: no power"
        else:
            verdict = Verdict.CONFIRMED
            why = (f"mu_t = 0 exactly; Monte Carlo N_eff/T >= {lowest:.3f} at every std, against "
                   f"{max(r['contrast_participation_ratio'] for r in rows):.3f} or less with mean "
                   f"{params['contrast_mean']}")
        return Assessment(
            verdict=verdict,
            theory=min(r["theory_participation_ratio"] for r in rows),
            empirical=Measurement(lowest, at="min N_eff/T over the stds (theory: mu_t = 0, "
                                             "regime uniform)"),
            statistic=(f"Monte Carlo rho-profiles over {params['n_samples']} walks, d = {d}, "
                       f"T = {T}, stds {list(params['stds'])}. {TOKEN_MODEL}"),
            tolerance=Tolerance("the regime classifier's uniform threshold (ours, theory.bao)",
                                {"N_eff/T": f">= {UNIFORM}"}),
            explanation=why, details={"points": rows}, reason=reason)
