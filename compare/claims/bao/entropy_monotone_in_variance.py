"""``bao.entropy_monotone_in_variance`` (§3.6, found in simulation, not stated in the paper): at
a fixed eigen-mean the softmax entropy of the last-token query does not rise with the eigen-std,
and falls over the grid 0 to 2 (the rule: :mod:`.entropy_grid`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from attnverify.compare.claims.bao.common import (
    EIG_MEAN,
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

ENTROPY_MONOTONE_IN_VARIANCE = derivation(
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


@dataclass(frozen=True)
class EntropyInVarianceParams(Params):
    """Width ``d``, length ``T``, the fixed ``eig_mean`` and the grid of eigen-stds ``stds``
    (walked in order), ``n_samples`` walks from ``seed``."""

    d: int
    T: int
    eig_mean: float
    stds: tuple[float, ...]
    n_samples: int
    seed: int

    def __post_init__(self) -> None:
        check_width("d", self.d)
        check_length(self.T)
        check_mean("eig_mean", self.eig_mean)
        check_each(check_std, "stds", self.stds)
        check_seed("seed", self.seed)


class EntropyMonotoneInVariance(EntropyMonotone):
    """``bao.entropy_monotone_in_variance``: at fixed eigen-mean the entropy does not rise with
    the eigen-std, and falls over the grid 0 to 2."""

    id = "bao.entropy_monotone_in_variance"
    protocol = ENTROPY_MONOTONE_IN_VARIANCE
    code_version = 2  # 2: the Monte Carlo's walks drawn by numpy (MONTE_CARLO_VERSION 2)
    axis_label = "eigen-std sigma (eigen-mean fixed)"
    figure_name = "entropy_vs_std"
    statement = ("Softmax attention entropy falls as the eigen-variance rises at fixed mean "
                 "(common random numbers).")
    space: ClassVar[dict[str, Dimension]] = {
        "d": WIDTH,
        "eig_mean": EIG_MEAN,
    }
    defaults: ClassVar[dict[str, EntropyInVarianceParams]] = {
        p: EntropyInVarianceParams(d=64, T=128, eig_mean=0.1,
                                   stds=(0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0),
                                   **MONTE_CARLO[p])
        for p in ("smoke", "quick", "full")
    }

    def chains(self, params: dict[str, Any]) -> list[list[tuple[float, float]]]:
        return [[(params["eig_mean"], float(s)) for s in params["stds"]]]

    @staticmethod
    def axis(point: tuple[float, float]) -> float:
        return point[1]
