"""Claims on the three regimes of the (eigen-mean, eigen-std) plane (§3.4, derived):
zero mean gives no selectivity (the rank-collapse side), large variance makes rho vanish (the
entropy-collapse side), non-zero mean with small variance localizes (softmax
entropy across the plane is :mod:`.entropy`, the rank-collapse measure :mod:`.rank_collapse`)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from scipy.special import erf

from attnverify import theory
from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.bao.common import (
    EIG_MEAN,
    MONTE_CARLO,
    TOKEN_MODEL,
    WIDTH,
    ScorePoint,
    scores_at,
    scores_at_many,
)
from attnverify.compare.claims.bao.figures import phase_map_figure
from attnverify.compare.claims.bao.protocols import (
    LARGE_VARIANCE_VANISHES,
    SMALL_VARIANCE_LOCALIZES,
    ZERO_MEAN_NO_SELECTIVITY,
)
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Reason
from attnverify.compare.space import Dimension
from attnverify.compare.stats import normal_ci
from attnverify.empirics import RunResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

LOCALIZED_CASES = ((128, 0.1, 0.0), (128, 0.1, 0.02), (128, -0.1, 0.02), (64, 0.12, 0.01))
"""(d, mean, std) with max v_t < 1/64, so that the window test of §8.2 item 5 applies."""
UNIFORM = theory.bao.propagation.UNIFORM_PARTICIPATION
VANISHING = theory.bao.propagation.VANISHING_MAX


def _mc_summary(rho_mc: np.ndarray) -> dict[str, float]:
    loc = theory.bao.localization(rho_mc)
    return {"participation_ratio": float(loc.participation) / rho_mc.size,
            "max_rho": float(loc.max), "mean_rho": float(loc.mean)}


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
    defaults: ClassVar[dict[str, dict[str, Any]]] = {
        p: {"d": 64, "T": 128, "stds": (0.05, 0.2, 0.5), "contrast_mean": 0.1, **MONTE_CARLO[p]}
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
            mc = _mc_summary(next(samples)[1].rho()[0])
            contrast = _mc_summary(next(samples)[1].rho()[0])
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


class LargeVarianceVanishes(Claim):
    """``bao.large_variance_vanishes``: at fixed non-zero mean, growing eigen-std drives every
    rho_t to zero.

    Theory: ``rho_t <= 1/sqrt(2 pi v_t)`` -> 0 and the regime turns ``vanishing``
    (max rho < 1/4). Measured: Monte Carlo max_t rho^_t along the std grid (common random
    numbers). Confirmed when the measured max falls along the grid (each step down, or up by
    at most 4 binomial SE: noise) and ends below 1/4 where theory says vanishing.
    """

    id = "bao.large_variance_vanishes"
    protocol = LARGE_VARIANCE_VANISHES
    kind = ClaimKind.DERIVATION
    code_version = 2  # 2: the Monte Carlo's walks drawn by numpy (MONTE_CARLO_VERSION 2)
    paper = "bao"
    statement = ("Large eigen-variance drives rho to zero everywhere (the entropy-collapse / "
                 "plateau side).")
    space: ClassVar[dict[str, Dimension]] = {
        "d": WIDTH,
        "eig_mean": EIG_MEAN,
    }
    defaults: ClassVar[dict[str, dict[str, Any]]] = {
        p: {"d": 64, "T": 128, "eig_mean": 0.1, "stds": (0.5, 1.0, 2.0, 4.0, 8.0, 16.0),
            **MONTE_CARLO[p]} for p in ("smoke", "quick", "full")
    }

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        d, T, m = params["d"], params["T"], params["eig_mean"]
        rows = []
        samples = scores_at_many([ScorePoint(d, T, m, s) for s in params["stds"]], params)
        for s, (_, sample) in zip(params["stds"], samples, strict=True):
            rho_mc, se = sample.rho()
            pred = theory.bao.regime(d, T, m, s).value
            rows.append({"eig_std": s, "mc_max_rho": float(rho_mc.max()),
                         "se": float(se[rho_mc.argmax()]), "theory_max_rho": pred["max_rho"],
                         "theory_regime": pred["regime"]})
        falls = all(b["mc_max_rho"] <= a["mc_max_rho"] + 4 * max(a["se"], b["se"])
                    for a, b in itertools.pairwise(rows))
        last = rows[-1]
        vanished = last["mc_max_rho"] < VANISHING and last["theory_regime"] == "vanishing"
        ok = falls and vanished
        return Assessment(
            verdict=Verdict.CONFIRMED if ok else Verdict.REFUTED,
            theory=last["theory_max_rho"],
            empirical=Measurement(last["mc_max_rho"], ci=normal_ci(last["mc_max_rho"], last["se"]),
                                  confidence=0.95,
                                  at=f"max_t rho_t at std = {last['eig_std']} (theory regime: "
                                     f"{last['theory_regime']})"),
            statistic=(f"Monte Carlo max_t rho^_t along std {list(params['stds'])} at mean {m}, "
                       f"d = {d}, T = {T}, {params['n_samples']} walks. {TOKEN_MODEL}"),
            tolerance=Tolerance("the classifier's vanishing threshold; 4 SE absorbs sampling noise",
                                {"vanishing": f"max rho < {VANISHING}",
                                 "monotone": "4 SE per step"}),
            explanation=("max rho^ falls from " + f"{rows[0]['mc_max_rho']:.3f} to "
                         f"{last['mc_max_rho']:.3f}" + ("" if ok else
                         " -- but not monotonically or not below the vanishing threshold")),
            details={"points": rows})


class SmallVarianceLocalizes(Claim):
    """``bao.small_variance_localizes``: non-zero mean and small std give a window of tokens
    with rho near 1 (docs/derivations.md#regimes-and-thresholds).

    With ``delta = 4 max_t sqrt(v_t)`` (needs max v < 1/64 so that delta < 1/2): rho_t >= 0.95
    where mu_t in [delta, 1 - delta] and rho_t <= 0.05 where mu_t outside [-delta, 1 + delta],
    checked for theory and for Monte Carlo (each within 4 binomial SE); the Monte Carlo profile
    is localized (N_eff/T < 0.9, max >= 1/4). The figure is the phase map of the (mean, std)
    plane from the theory.
    """

    id = "bao.small_variance_localizes"
    protocol = SMALL_VARIANCE_LOCALIZES
    kind = ClaimKind.DERIVATION
    code_version = 2  # 2: the Monte Carlo's walks drawn by numpy (MONTE_CARLO_VERSION 2)
    paper = "bao"
    statement = ("Non-zero eigen-mean with small eigen-variance gives a localized window of "
                 "tokens with rho near 1.")
    defaults: ClassVar[dict[str, dict[str, Any]]] = {
        p: {"T": 128, "cases": LOCALIZED_CASES, **MONTE_CARLO[p]}
        for p in ("smoke", "quick", "full")
    }
    space: ClassVar[dict[str, Dimension]] = {
        # the paper's regime first (wide, mean 0.1, zero variance): the shrunk counterexample
        # is the nearest point to it at which the window is not sharp
        "d": Dimension("width d of the query-key matrix", values=(128, 64, 32, 16, 8, 4)),
        "eig_mean": Dimension("mean m of the W_QK eigenspectrum",
                              values=(0.1, -0.1, 0.05, 0.2, 0.3, 0.02, 0.01)),
        "eig_std": Dimension("standard deviation s of the W_QK eigenspectrum",
                             values=(0.0, 0.005, 0.01, 0.02, 0.03, 0.05)),
    }

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        return {"cases": ((point["d"], point["eig_mean"], point["eig_std"]),)}

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        T = params["T"]
        rows = []
        for i, (d, m, s) in enumerate(params["cases"]):
            mom = theory.bao.moments_from_traces(*theory.bao.spectrum_traces(d, m, s), T=T,
                                                 c=1 / np.sqrt(d))
            rho_th = theory.bao.propagation_probability(mom.mu, mom.v)
            rho_mc, se = scores_at(d, T, m, s, params, offset=i)[1].rho()
            delta = 4 * float(np.sqrt(mom.v.max()))
            inside = (mom.mu >= delta) & (mom.mu <= 1 - delta)
            outside = (mom.mu < -delta) | (mom.mu > 1 + delta)
            mc = _mc_summary(rho_mc)
            rows.append({
                "d": d, "eig_mean": m, "eig_std": s, "delta": delta,
                "window_size": int(inside.sum()), "outside_size": int(outside.sum()),
                "theory_ok": bool(np.all(rho_th[inside] >= 0.95)
                                  and np.all(rho_th[outside] <= 0.05)),
                "mc_min_inside": float(rho_mc[inside].min()) if inside.any() else None,
                "mc_max_outside": float(rho_mc[outside].max()) if outside.any() else None,
                "mc_ok": bool(np.all(rho_mc[inside] + 4 * se[inside] >= 0.95)
                              and np.all(rho_mc[outside] - 4 * se[outside] <= 0.05)),
                "mc_participation_ratio": mc["participation_ratio"], "mc_max_rho": mc["max_rho"],
            })
        valid = all(r["delta"] < 0.5 and r["window_size"] > 0 and r["outside_size"] > 0
                    for r in rows)
        ok = all(r["theory_ok"] and r["mc_ok"] and r["mc_participation_ratio"] < UNIFORM
                 and r["mc_max_rho"] >= VANISHING for r in rows)
        verdict = (Verdict.INCONCLUSIVE if not valid else
                   Verdict.CONFIRMED if ok else Verdict.REFUTED)
        why = ("nothing to test: delta >= 1/2, or no position inside or outside the window, at "
               "some case" if not valid else
               "every case has a window with rho >= 0.95 and rho <= 0.05 away from it, in "
               "theory and Monte Carlo; Monte Carlo N_eff/T from "
               f"{min(r['mc_participation_ratio'] for r in rows):.2f} to "
               f"{max(r['mc_participation_ratio'] for r in rows):.2f}" if ok else
               "the window is not sharp at some case (see details)")
        return Assessment(
            verdict=verdict, theory="rho_t -> 1{0 < mu_t < 1} as std -> 0",
            empirical=Measurement(min(1.0 if r["mc_min_inside"] is None else r["mc_min_inside"]
                                      for r in rows),
                                  at="min Monte Carlo rho inside the windows"),
            statistic=(f"theory and Monte Carlo rho-profiles at (d, mean, std) in "
                       f"{list(params['cases'])}, T = {T}, {params['n_samples']} walks. "
                       f"{TOKEN_MODEL}"),
            tolerance=Tolerance("the small-variance limit of "
                                "docs/derivations.md#regimes-and-thresholds; 4 SE absorbs "
                                "sampling noise",
                                {"inside": ">= 0.95", "outside": "<= 0.05",
                                 "delta": "4 max sqrt(v_t)"}),
            explanation=why, details={"cases": rows},
            reason=None if valid else Reason.NOT_TESTABLE)

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        return {"phase_map": phase_map_figure(params["T"])}
