"""``bao.entropy_monotone_in_mean`` (§3.6, found in simulation, not stated in the paper): at a
fixed eigen-std the softmax entropy of the last-token query does not rise with |eigen-mean|, on
both signs of the mean, and falls over each (the rule: :mod:`.entropy_grid`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from attnverify.compare.claims.bao.common import (
    MONTE_CARLO,
    NO_PRECONDITION,
    WIDTH,
    check_each,
    check_length,
    check_mean,
    check_seed,
    check_std,
    check_width,
    derivation,
)
from attnverify.compare.claims.bao.entropy_grid import EntropyMonotone
from attnverify.compare.params import Params
from attnverify.compare.space import Dimension

ENTROPY_MONOTONE_IN_MEAN = derivation(
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


@dataclass(frozen=True)
class EntropyInMeanParams(Params):
    """Width ``d``, length ``T``, the fixed ``eig_std`` and the grid of |eigen-mean|
    ``abs_means`` (walked in order, once per sign), ``n_samples`` walks from ``seed``."""

    d: int
    T: int
    eig_std: float
    abs_means: tuple[float, ...]
    n_samples: int
    seed: int

    def __post_init__(self) -> None:
        check_width("d", self.d)
        check_length(self.T)
        check_std("eig_std", self.eig_std)
        check_each(check_mean, "abs_means", self.abs_means)
        check_seed("seed", self.seed)


class EntropyMonotoneInMean(EntropyMonotone):
    """``bao.entropy_monotone_in_mean``: at fixed eigen-std the entropy does not rise with
    |eigen-mean|, on both signs of the mean (two chains from mean 0), and falls over each."""

    id = "bao.entropy_monotone_in_mean"
    protocol = ENTROPY_MONOTONE_IN_MEAN
    code_version = 2  # 2: the Monte Carlo's walks drawn by numpy (MONTE_CARLO_VERSION 2)
    axis_label = "|eigen-mean m| (eigen-std fixed)"
    figure_name = "entropy_vs_mean"
    statement = ("Softmax attention entropy does not rise as |eigen-mean| grows at fixed "
                 "eigen-variance, for either sign of the mean (common random numbers).")
    space: ClassVar[dict[str, Dimension]] = {
        "d": WIDTH,
        "eig_std": Dimension("std sigma of the W_QK eigenspectrum",
                             values=(0.1, 0.0, 0.05, 0.3, 1.0)),
    }
    defaults: ClassVar[dict[str, EntropyInMeanParams]] = {
        p: EntropyInMeanParams(d=64, T=128, eig_std=0.1,
                               abs_means=(0.0, 0.05, 0.1, 0.2, 0.3, 0.5), **MONTE_CARLO[p])
        for p in ("smoke", "quick", "full")
    }

    def chains(self, params: dict[str, Any]) -> list[list[tuple[float, float]]]:
        return [[(sign * float(m), params["eig_std"]) for m in params["abs_means"]]
                for sign in (1.0, -1.0)]

    @staticmethod
    def axis(point: tuple[float, float]) -> float:
        return point[0]
