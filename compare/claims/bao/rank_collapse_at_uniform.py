"""``bao.rank_collapse_at_uniform`` (rank collapse as in Dong et al. 2021): one untrained
attention layer with W = 0 makes every output token the same (rank collapse), while the
localized regime keeps them apart; a Monte Carlo check under the derivation's token model
(§2.2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.bao.common import (
    MC_VERSION,
    NO_PRECONDITION,
    WIDTH,
    Spectrum,
    check_each,
    check_length,
    check_mean,
    check_seed,
    check_std,
    check_width,
    derivation,
    mc_key,
    qk_matrix,
)
from attnverify.compare.claims.bao.figures import rank_collapse_figure
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.memo import memo
from attnverify.compare.params import Params
from attnverify.compare.space import Dimension
from attnverify.compare.stats import mean_and_se, normal_ci
from attnverify.empirics import RunResult, rank_collapse

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RANK_COLLAPSE_AT_UNIFORM = derivation(
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


@dataclass(frozen=True)
class RankCollapseParams(Params):
    """Width ``d``, length ``T``, the ``localized`` (eigen-mean, eigen-std), ``n_samples``
    walks from ``seed`` and the eigen-means ``means`` of the sweep at the localized std."""

    d: int
    T: int
    localized: Spectrum
    n_samples: int
    seed: int
    means: tuple[float, ...]

    def __post_init__(self) -> None:
        check_width("d", self.d)
        check_length(self.T)
        check_mean("the eigen-mean of localized", self.localized.eig_mean)
        check_std("the eigen-std of localized", self.localized.eig_std)
        check_seed("seed", self.seed)
        check_each(check_mean, "means", self.means)


class RankCollapseAtUniform(Claim):
    """``bao.rank_collapse_at_uniform``: W = 0 collapses the tokens; the localized regime keeps
    them apart.

    One bidirectional attention layer with identity values, ``Y = softmax(c X W X^T) X``, on
    random-walk tokens. Measure: ``res(Y)/res(X)`` with ``res(X) = ||X - 1 xbar^T||_F/||X||_F``
    (0 = all output tokens equal). W = 0 must give exactly 0 (to 1e-12, round-off); the
    localized point (mean != 0, small std) must retain significantly more than a zero-mean point
    with the same second moment ``m^2 + sigma^2`` (same ||W||_F; one-sided, 99.9% intervals
    over walks): the rank-collapse side is zero mean, not a small W. The sizes are reported as
    measured: at moderate d the localized layer still averages most of the sequence. No
    absolute threshold decides (the paper states none, and the kept share grows with d); trained
    models are decided by ``bao.small_variance_prevents_rank_collapse_in_training``.
    """

    id = "bao.rank_collapse_at_uniform"
    protocol = RANK_COLLAPSE_AT_UNIFORM
    kind = ClaimKind.DERIVATION
    code_version = 2  # 2: the Monte Carlo's walks drawn by numpy (MONTE_CARLO_VERSION 2)
    paper = "bao"
    statement = ("W = 0 collapses the output tokens (rank-collapse measure 0); the localized "
                 "regime does not.")
    space: ClassVar[dict[str, Dimension]] = {
        "d": WIDTH,
    }
    defaults: ClassVar[dict[str, RankCollapseParams]] = {
        p: RankCollapseParams(d=64, T=128, localized=Spectrum(0.1, 0.01), n_samples=n, seed=0,
                              means=(0.0, 0.05, 0.1, 0.2, 0.3, 0.5))
        for p, n in (("smoke", 100), ("quick", 400), ("full", 2000))
    }

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        d, T, n, seed = params["d"], params["T"], params["n_samples"], params["seed"]
        m_loc, s_loc = params["localized"]

        def ratio(w: torch.Tensor) -> np.ndarray:
            out = memo("bao_rank_collapse", mc_key(w, T, n, seed), MC_VERSION, lambda: dict(zip(
                ("before", "after"), rank_collapse(w, T, n, seed), strict=True)))
            return out["after"] / out["before"]

        zero = ratio(torch.zeros(d, d, dtype=torch.float64))
        sweep = {m: ratio(qk_matrix(d, m, s_loc, seed)) for m in params["means"]}
        loc = sweep.get(m_loc, ratio(qk_matrix(d, m_loc, s_loc, seed)))
        # zero mean at the same second moment (same ||W||_F): only the mean differs
        s_flat = float(np.hypot(m_loc, s_loc))
        flat = ratio(qk_matrix(d, 0.0, s_flat, seed))
        (loc_mean, loc_se), (flat_mean, flat_se) = mean_and_se(loc), mean_and_se(flat)
        lo_loc = normal_ci(loc_mean, loc_se, z=3.09)[0]  # one-sided 99.9%
        hi_flat = normal_ci(flat_mean, flat_se, z=3.09)[1]
        collapsed = float(zero.max()) <= 1e-12
        separated = lo_loc > hi_flat
        verdict = Verdict.CONFIRMED if collapsed and separated else Verdict.REFUTED
        why = (f"W = 0: max res ratio {zero.max():.1e} (exact collapse); localized (mean "
               f"{m_loc}, std {s_loc}): {loc_mean:.3f} against {flat_mean:.3f} at zero mean "
               f"with the same second moment (std {s_flat:.4f})"
               + ("" if separated else " -- not significantly larger"))
        return Assessment(
            verdict=verdict, theory="0 at W = 0",
            empirical=Measurement(loc_mean, ci=normal_ci(loc_mean, loc_se), confidence=0.95,
                                  at=f"res(Y)/res(X), localized point, d = {d}"),
            statistic=(f"res(Y)/res(X) over {n} random-walk sequences, one bidirectional "
                       f"attention layer with identity values, d = {d}, T = {T}"),
            tolerance=Tolerance("exact collapse up to float64 round-off; separation beyond "
                                "sampling noise",
                                {"W = 0": "<= 1e-12", "localized vs zero mean": "one-sided 99.9%"}),
            explanation=why,
            details={"zero_max": float(zero.max()),
                     "sweep_mean_ratio": {str(m): float(r.mean()) for m, r in sweep.items()},
                     "sweep_se_ratio": {str(m): mean_and_se(r)[1] for m, r in sweep.items()}})

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        """The sweep along the eigen-mean at the localized point's std."""
        mean = assessment.details["sweep_mean_ratio"]  # eigen-mean (as text) -> mean ratio
        se = assessment.details["sweep_se_ratio"]
        return {"rank_collapse": rank_collapse_figure(
            [float(m) for m in mean], list(mean.values()), [se[m] for m in mean],
            params["localized"][1], params["d"])}
