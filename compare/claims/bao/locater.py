"""``bao.locater_effect`` (Bao et al. 2024; the candidate formulas: §4): training with LocAteR
improves validation loss (perplexity) against training without it.

Two blocks of seeds (docs/methodology.md, "Protocols"):

- **calibration** (seeds from :data:`CALIBRATION_SEEDS`): every LocAteR coefficient of the grid
  and every coefficient of a plain Frobenius penalty on W_QK (``locater_kind="F"``) beside the
  unregularised run. They choose the coefficient to test, lambda*, as the one with the lowest
  mean paired validation loss, and the control's coefficient, mu*, as the one whose mean final
  eigen-variance is nearest lambda*'s (in log): the control shrinks W_QK as much as LocAteR
  does, by shrinking all of W instead of concentrating its spectrum around the mean;
- **decision** (seeds from :data:`DECISION_SEEDS`): none, LocAteR at lambda* and the control
  at mu*, trained once the calibration is known (``Claim.followup``).

The paired change of final validation loss (LocAteR - none) decides: a one-sided paired
t-test confirms an improvement at 0.025; an improvement of at least :data:`MIN_IMPROVEMENT`
nats (1% in perplexity) is refuted at 0.10. The entropy change (the paper's other observation,
a different endpoint) is reported with its own one-sided p-values and decides nothing;
LocAteR against the control
at matched eigen-variance says whether a concentrated spectrum, rather than a smaller W, is
what helps, and is reported, not decided on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
from scipy import stats

from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.bao.figures import locater_figure
from attnverify.compare.claims.bao.protocols import LOCATER_EFFECT
from attnverify.compare.claims.bao.training import LM, PAPER_LM, final, lm_specs
from attnverify.compare.decision import OneSided, decide
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Reason, check_disjoint
from attnverify.compare.space import Dimension
from attnverify.compare.stats import mean_ci
from attnverify.empirics import RunResult, RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from attnverify.empirics import AttentionLMConfig

DECISION_SEEDS, CALIBRATION_SEEDS = 300, 400
"""First seeds of the decision and calibration blocks. On record, deciding nothing: seeds 0
to 7 (the rule used before) and 100 to 107 with calibration 200 to 203 (a first version of
this protocol, in which the entropy change could veto a refutation)."""
ALPHA, BETA = 0.025, 0.10
MIN_IMPROVEMENT = 0.01
"""nats: the smallest improvement of validation loss that matters (1% in perplexity)."""
MIN_PAIRS = 3
FROBENIUS = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
"""The control's coefficient grid (R_F = ||W||_F^2 / d)."""

DESIGN: dict[str, dict[str, Any]] = {
    "smoke": {"calibration_seeds": 2, "seeds": 3, "lambdas": (0.1, 1.0),
              "frobenius": (0.1, 1.0)},
    "quick": {"calibration_seeds": 3, "seeds": 8, "lambdas": (0.01, 0.1, 1.0),
              "frobenius": FROBENIUS},
    "full": {"calibration_seeds": 3, "seeds": 5, "lambdas": (1e-4, 1e-3, 1e-2, 1e-1, 1.0),
             "frobenius": FROBENIUS},
}


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
    defaults: ClassVar[dict[str, dict[str, Any]]] = {
        profile: {**{k: v for k, v in LM[profile].items() if k not in ("seeds", "lambdas")},
                  **DESIGN[profile]} for profile in LM}
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

    def specs(self, params: dict[str, Any]) -> list[RunSpec]:
        arms = ([(0.0, "A")] + [(lam, "A") for lam in params["lambdas"]]
                + [(mu, "F") for mu in params["frobenius"]])
        return [_spec(params, c, kind, CALIBRATION_SEEDS + i) for c, kind in arms
                for i in range(params["calibration_seeds"])]

    def staged(self, params: dict[str, Any]) -> bool:
        return True

    def followup(self, params: dict[str, Any], results: Sequence[RunResult]) -> list[RunSpec]:
        if any(r.spec.seed < CALIBRATION_SEEDS for r in results):
            return []
        lam, mu = calibrate(params, results)
        return [_spec(params, c, kind, DECISION_SEEDS + i)
                for c, kind in ((0.0, "A"), (lam, "A"), (mu, "F"))
                for i in range(params["seeds"])]

    def stage_note(self, params: dict[str, Any], results: Sequence[RunResult]) -> str:
        lam, mu = calibrate(params, results)
        return f"calibrated: LocAteR lambda* = {lam:g}, Frobenius control mu* = {mu:g}"

    @staticmethod
    def decision(params: dict[str, Any], results: Sequence[RunResult]) -> LocaterDecision:
        """The decision runs of ``results``, with lambda* and mu* from its calibration runs."""
        lam, mu = calibrate(params, [r for r in results if r.spec.seed >= CALIBRATION_SEEDS])
        return LocaterDecision([r for r in results if r.spec.seed < CALIBRATION_SEEDS], lam,
                               mu, range(DECISION_SEEDS, DECISION_SEEDS + params["seeds"]))

    def seed_plan(self, params: dict[str, Any]) -> str:
        arms = 1 + len(params["lambdas"]) + len(params["frobenius"])
        return (f"{params['calibration_seeds']} calibration seeds x {arms} arms, then "
                f"{params['seeds']} decision seeds x 3 arms (none, LocAteR at lambda*, the "
                f"control at mu*)")


class LocaterEffect(LocaterRuns):
    """``bao.locater_effect`` (see the module docstring).

    Changed on 2026-11-25 (docs/methodology.md): the rule was three co-primary paired
    t-intervals at the grid's largest coefficient (chosen in a one-seed pilot), with the loss
    as non-inferiority while the paper claims an improvement, and no control for plain
    shrinkage; the decision moved to fresh seeds.
    """

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
            verdict=d.verdict, reason=d.reason, p_value=d.p_value, theory=theory,
            empirical=Measurement(float(np.mean(loss)), ci=[lo, hi], confidence=0.95,
                                  at=f"paired change of validation loss (nats), lambda* = {lam:g}"),
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
