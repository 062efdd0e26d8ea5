"""The runs of the LocAteR design (Bao et al. 2024; the candidate formulas: §4), shared by
``bao.locater_effect`` and ``bao.small_variance_prevents_rank_collapse_in_training`` (the same
runs, through the cache), and what both read from them.

Two blocks of seeds (docs/methodology.md, "Protocols"):

- **calibration** (seeds from :data:`CALIBRATION_SEEDS`): every LocAteR coefficient of the grid
  and every coefficient of a plain Frobenius penalty on W_QK (``locater_kind="F"``) beside the
  unregularised run. They choose the coefficient to test, lambda*, as the one with the lowest
  mean paired validation loss, and the control's coefficient, mu*, as the one whose mean final
  eigen-variance is nearest lambda*'s (in log): the control shrinks W_QK as much as LocAteR
  does, by shrinking all of W instead of concentrating its spectrum around the mean;
- **decision** (seeds from :data:`DECISION_SEEDS`): none, LocAteR at lambda* and the control
  at mu*, trained once the calibration is known (``Claim.followup``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
from scipy import stats

from attnverify.compare.claim import Claim
from attnverify.compare.claims.bao.training import (
    LM_SETTINGS,
    PAPER_LM,
    LMSettings,
    final,
    lm_specs,
)
from attnverify.compare.groups import RunGroups, Specs
from attnverify.compare.protocol import check_disjoint
from attnverify.compare.space import Dimension
from attnverify.empirics import RunResult, RunSpec

if TYPE_CHECKING:
    from attnverify.empirics import AttentionLMConfig

DECISION_SEEDS, CALIBRATION_SEEDS = 300, 400
"""First seeds of the decision and calibration blocks. On record, deciding nothing: seeds 0
to 7 (the rule used before) and 100 to 107 with calibration 200 to 203 (a first version of
this protocol, in which the entropy change could veto a refutation)."""
MIN_PAIRS = 3
"""The fewest finished pairs of decision runs either claim decides on (else not testable)."""
FROBENIUS = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
"""The control's coefficient grid (R_F = ||W||_F^2 / d)."""


@dataclass(frozen=True)
class LocaterParams(LMSettings):
    """:class:`~attnverify.compare.claims.bao.training.LMSettings`, ``calibration_seeds``
    seeds for every coefficient of LocAteR (``lambdas``) and of the Frobenius control
    (``frobenius``), then ``seeds`` decision seeds."""

    calibration_seeds: int
    seeds: int
    lambdas: tuple[float, ...]
    frobenius: tuple[float, ...]


LOCATER_PARAMS = {
    "smoke": LocaterParams(**LM_SETTINGS["smoke"].as_dict(), calibration_seeds=2, seeds=3,
                           lambdas=(0.1, 1.0), frobenius=(0.1, 1.0)),
    "quick": LocaterParams(**LM_SETTINGS["quick"].as_dict(), calibration_seeds=3, seeds=8,
                           lambdas=(0.01, 0.1, 1.0), frobenius=FROBENIUS),
    "full": LocaterParams(**LM_SETTINGS["full"].as_dict(), calibration_seeds=3, seeds=5,
                          lambdas=(1e-4, 1e-3, 1e-2, 1e-1, 1.0), frobenius=FROBENIUS),
}
"""The LocAteR design per profile, on the shared model and training."""


def _spec(params: dict[str, Any], coefficient: float, kind: str, seed: int) -> RunSpec:
    base = lm_specs({**params, "lambdas": (coefficient,), "seeds": 1})[0]
    return replace(base, seed=seed, model=replace(cast("AttentionLMConfig", base.model),
                                                  locater=coefficient, locater_kind=kind))


def arm_of(run: RunResult) -> tuple[str, float]:
    """('none', 0), ('A', lambda) or ('F', mu) of a run."""
    model = cast("AttentionLMConfig", run.spec.model)
    return ("none", 0.0) if model.locater == 0 else (model.locater_kind, model.locater)


NONE = ("none", 0.0)


def paired_change(runs: Sequence[RunResult], arm: tuple[str, float], seeds: range, name: str,
            against: tuple[str, float] = NONE) -> list[float]:
    """Per seed of ``seeds``: ``name`` of ``arm`` minus that of ``against`` (the
    unregularised run), over the seeds where neither diverged."""
    by = {(arm_of(r), r.spec.seed): r for r in runs}
    out = []
    for seed in seeds:
        a, b = by.get((arm, seed)), by.get((against, seed))
        if a is not None and b is not None and not (a.diverged or b.diverged):
            out.append(final(a, name) - final(b, name))
    return out


def mean_final(runs: Sequence[RunResult], arm: tuple[str, float], name: str) -> float:
    values = [final(r, name) for r in runs if arm_of(r) == arm and not r.diverged]
    return float(np.mean(values)) if values else float("nan")


def calibrate(params: dict[str, Any], runs: Sequence[RunResult]) -> tuple[float, float]:
    """(lambda*, mu*) from the calibration runs (module docstring)."""
    seeds = range(CALIBRATION_SEEDS, CALIBRATION_SEEDS + params["calibration_seeds"])

    def gain(lam: float) -> float:
        diff = paired_change(runs, ("A", lam), seeds, "loss")
        return float(np.mean(diff)) if diff else float("inf")

    lam = min(params["lambdas"], key=lambda x: (gain(x), x))
    target = mean_final(runs, ("A", lam), "eig_var")

    def distance(mu: float) -> float:
        var = mean_final(runs, ("F", mu), "eig_var")
        return abs(np.log(var / target)) if var > 0 and target > 0 else float("inf")

    return lam, min(params["frobenius"], key=lambda x: (distance(x), x))


def one_sided_t(diff: Sequence[float], shift: float = 0.0) -> tuple[float, float]:
    """Paired t-test p-values of mean < shift and mean > shift (1, 1 without variance)."""
    x = np.asarray(diff, dtype=float)
    if x.size < 2 or np.all(x == x[0]):
        return 1.0, 1.0
    return (float(stats.ttest_1samp(x, shift, alternative="less").pvalue),
            float(stats.ttest_1samp(x, shift, alternative="greater").pvalue))


@dataclass(frozen=True)
class LocaterDecision:
    """The decision runs of the LocAteR design and what the calibration chose for them."""

    runs: list[RunResult]
    lam: float
    mu: float
    seeds: range

    def change(self, name: str, against: tuple[str, float] = NONE) -> list[float]:
        """Per decision seed: metric ``name`` of LocAteR at lambda* minus that of ``against``
        (the unregularised run by default)."""
        return paired_change(self.runs, ("A", self.lam), self.seeds, name, against)

    @property
    def control(self) -> tuple[str, float]:
        return ("F", self.mu)

    def finals(self, name: str) -> list[float]:
        """Final ``name`` of LocAteR at lambda*, per decision seed that did not diverge."""
        return [final(r, name) for r in self.runs
                if arm_of(r) == ("A", self.lam) and r.spec.seed in self.seeds and not r.diverged]


class LocaterRuns(Claim):
    """The runs of the LocAteR design (module docstring): calibration seeds for every
    coefficient of LocAteR and of the Frobenius control, then decision seeds for none,
    LocAteR at lambda* and the control at mu*. Claims reading these runs derive from it, so
    that they share them through the cache."""

    paper = "bao"
    paper_scale = PAPER_LM
    full_is_paper_scale = False
    overridable = ("corpus",)
    defaults: ClassVar[dict[str, LocaterParams]] = LOCATER_PARAMS
    space: ClassVar[dict[str, Dimension]] = {
        "locater": Dimension("LocAteR coefficient lambda (the only one calibrated)",
                             values=(0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)),
    }

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        return {"lambdas": (point["locater"],)}

    def check_params(self, params: dict[str, Any]) -> None:
        super().check_params(params)
        check_disjoint(decision=range(DECISION_SEEDS, DECISION_SEEDS + params["seeds"]),
                       calibration=range(CALIBRATION_SEEDS,
                                         CALIBRATION_SEEDS + params["calibration_seeds"]))

    def specs(self, params: dict[str, Any]) -> RunGroups:
        """The calibration block: none, every LocAteR coefficient, every control coefficient."""
        arms = ([(0.0, "A")] + [(lam, "A") for lam in params["lambdas"]]
                + [(mu, "F") for mu in params["frobenius"]])
        return {"calibration": [_spec(params, c, kind, CALIBRATION_SEEDS + i) for c, kind in arms
                                for i in range(params["calibration_seeds"])]}

    def staged(self, params: dict[str, Any]) -> bool:
        return True

    def followup(self, params: dict[str, Any], results: Sequence[RunResult]) -> Specs:
        """After the calibration block: the decision block (none, LocAteR at lambda*, the
        control at mu*); after that, nothing."""
        results = self.results_for(params, results)
        if "decision" in results:
            return []
        lam, mu = calibrate(params, results["calibration"])
        return {"decision": [_spec(params, c, kind, DECISION_SEEDS + i)
                             for c, kind in ((0.0, "A"), (lam, "A"), (mu, "F"))
                             for i in range(params["seeds"])]}

    def stage_note(self, params: dict[str, Any], results: Sequence[RunResult]) -> str:
        lam, mu = calibrate(params, self.results_for(params, results)["calibration"])
        return f"calibrated: LocAteR lambda* = {lam:g}, Frobenius control mu* = {mu:g}"

    def decision(self, params: dict[str, Any], results: Sequence[RunResult]) -> LocaterDecision:
        """The decision runs of ``results`` (none where they are missing), with lambda* and
        mu* from its calibration runs."""
        results = self.results_for(params, results)
        lam, mu = calibrate(params, results["calibration"])
        decided = "decision" in results  # not where the decision block was never trained
        return LocaterDecision(results["decision"] if decided else [], lam, mu,
                               range(DECISION_SEEDS, DECISION_SEEDS + params["seeds"]))

    def seed_plan(self, params: dict[str, Any]) -> str:
        arms = 1 + len(params["lambdas"]) + len(params["frobenius"])
        return (f"{params['calibration_seeds']} calibration seeds x {arms} arms, then "
                f"{params['seeds']} decision seeds x 3 arms (none, LocAteR at lambda*, the "
                f"control at mu*)")
