"""Exact claims on the two toys of the spec: the warm-up classifier (§4.2) and the
free-attention toy's permutation saddle (§4.6). Both train with plain SGD in float64, where an
exact statement can be checked exactly (Adam amplifies round-off, §9.2)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from attnverify import theory
from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.snell.toy_figures import saddle_figure, toy_classifier_figure
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import (
    Reason,
    SeedBlock,
    SeedUse,
    check_disjoint,
    derivation_protocol,
)
from attnverify.compare.space import Dimension
from attnverify.empirics import (
    SGD,
    CopyTask,
    FreeAttentionToyConfig,
    RunResult,
    RunSpec,
    ToyClassifierConfig,
    ToyClassifierTask,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

STARTS = {"uniform": (0.5, 0.0, 0.0), "adversarial": (0.5, 10.0, -10.0)}
"""(p0, beta0, beta1): the two starts of the blog (§4.2)."""

TOY_CLASSIFIER_PROTOCOL = replace(
    derivation_protocol(
        endpoint="the gradient-descent trajectory of (p, beta_0, beta_1) on the warm-up toy "
                 "against the sympy solution of its gradient flow, from the uniform and the "
                 "adversarial start",
        unit="exact computation: deterministic float64 gradient descent at step h and h/2 "
             "(no data, no random initialisation)",
        test="per start: max deviation over (p, beta_0, beta_1) relative to the largest "
             "|theory| value <= 2 h tau_max; deviation(h) / deviation(h/2) in [1.8, 2.2]; "
             "uniform start: p exactly unchanged after step 1; adversarial start: p decreases "
             "at step 1 and first crosses 0 within 2h of the predicted tau",
        frozen="2026-11-25",
        secondary=("tau* where p first reaches 1 from the uniform start (shown beside the "
                   "closed form, not checked)",)),
    readout="every evaluation up to tau_max (every step from the adversarial start, about 200 "
            "evenly spaced from the uniform start), coarse and fine step",
    seeds=(SeedBlock(SeedUse.DECISION, 0, note="deterministic: the seed changes nothing"),),
    weaknesses=(
        "The tolerance 2 h tau_max is the leading Euler term doubled: it holds for small steps "
        "only ('falsify' finds it refuted at h = 0.2, holding at 0.1).",
        "The deviation is relative to the largest |theory| value of the whole trajectory, so "
        "the early, small-valued part of the flow is checked loosely.",
        "The crossing check allows two steps of slack, one of them for Euler's own shift.",
        "tau* (the headline value) is reported but not compared with the closed form."))


class ToyClassifierClosedForm(Claim):
    """``snell.toy_classifier_closed_form``: gradient descent on the warm-up toy (§4.2) follows
    the closed-form gradient flow that ``sympy.dsolve`` derives.

    Gradient descent with step h is the Euler discretisation of the flow; its error is first
    order in h. On the growing mode exp(sqrt2 tau) Euler's relative error is to leading order
    h tau lambda^2 / 2 = h tau (lambda^2 = 2). Tolerances, fixed from that analysis: the
    largest deviation over (p, beta_0, beta_1), relative to the largest |theory| value, at most
    2 h tau_max (twice the leading term); halving h must shrink the deviation by a factor in
    [1.8, 2.2] (first-order convergence, which a wrong closed form would not show). Qualitative
    predictions checked exactly: from the uniform start p does not move in the first step;
    from the adversarial start p first decreases and crosses 0 within two steps of the
    predicted tau = atanh(sqrt2 p_0 / |D_0|)/sqrt2: one step because a crossing is only seen at
    the first step past it, one for Euler's O(h) shift of the crossing time (p crosses 0 after
    about 25 steps at h = 1e-3, so the shift is of the order of a step).
    """

    id = "snell.toy_classifier_closed_form"
    kind = ClaimKind.DERIVATION
    protocol = TOY_CLASSIFIER_PROTOCOL
    code_version = 1
    paper = "snell"
    statement = ("Gradient descent on the toy classifier (loss p(beta_0 - beta_1)) matches the "
                 "sympy solution of its gradient flow; attention moves only after the unigram "
                 "weights separate, and moves the wrong way first from an adversarial start.")
    space: ClassVar[dict[str, Dimension]] = {
        # smallest step first: the shrunk counterexample is the smallest step at which the
        # first-order (Euler) analysis behind the tolerance stops holding
        "lr": Dimension("gradient-descent step h (the Euler step of the flow, §4.2)",
                        values=(1e-3, 2e-3, 5e-3, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)),
    }
    defaults: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {"lr": 2e-3, "tau_max": {"uniform": 1.0, "adversarial": 0.5}},
        "quick": {"lr": 1e-3, "tau_max": {"uniform": 2.0, "adversarial": 1.0}},
        "full": {"lr": 1e-4, "tau_max": {"uniform": 2.0, "adversarial": 1.0}},
    }

    def specs(self, params: dict[str, Any]) -> list[RunSpec]:
        out = []
        for name, (p0, b0, b1) in STARTS.items():
            for lr in (params["lr"], params["lr"] / 2):
                steps = round(params["tau_max"][name] / lr)
                out.append(RunSpec(task=ToyClassifierTask(), model=ToyClassifierConfig(p0, b0, b1),
                                   optimizer=SGD(lr=lr), steps=steps, batch_size=1,
                                   eval_every=max(1, steps // 200) if name == "uniform" else 1,
                                   eval_size=1, dtype="float64", attention_snapshots=(1,)))
        return out

    @staticmethod
    def deviation(result: RunResult) -> float:
        cfg = cast(ToyClassifierConfig, result.spec.model)
        lr = cast(SGD, result.spec.optimizer).lr
        tau = result.eval_steps * lr
        flow = theory.snell.toy_classifier_trajectory(tau, cfg.p0, cfg.beta0, cfg.beta1).value
        err = max(np.abs(result.metric(k) - flow[k]).max() for k in ("p", "beta0", "beta1"))
        scale = max(np.abs(flow[k]).max() for k in ("p", "beta0", "beta1"))
        return float(err / scale)

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        rows, ok = [], True
        for i, name in enumerate(STARTS):
            coarse, fine = results[2 * i], results[2 * i + 1]
            dev, dev_fine = self.deviation(coarse), self.deviation(fine)
            bound = 2 * params["lr"] * params["tau_max"][name]
            ratio = dev / dev_fine if dev_fine > 0 else math.inf
            row = {"start": name, "relative_deviation": dev, "bound": bound,
                   "halving_ratio": ratio}
            checks = [dev <= bound, 1.8 <= ratio <= 2.2]
            p = coarse.metric("p")
            if name == "uniform":
                moved = abs(p[list(coarse.eval_steps).index(1)] - p[0])
                row["p_change_first_step"] = moved
                checks.append(moved == 0.0)
            else:
                p0, b0, b1 = STARTS[name]
                predicted = theory.snell.toy_classifier_first_crossing(p0, b0, b1).value
                below = np.flatnonzero(p < 0)
                # no crossing within the run is a disagreement (the flow predicts one)
                crossing = (coarse.eval_steps[below[0]] * params["lr"] if below.size
                            else float("inf"))
                row.update({"first_crossing_predicted": predicted,
                            "first_crossing_measured": float(crossing),
                            "p_decreases_first": bool(p[1] < p[0])})
                checks += [p[1] < p[0], abs(crossing - predicted) <= 2 * params["lr"]]
            row["agrees"] = all(checks)
            ok &= row["agrees"]
            rows.append(row)
        tau_star = theory.snell.toy_classifier_tau_star().value
        explanation = "; ".join(
            f"{r['start']} start: relative deviation {r['relative_deviation']:.2e} (bound "
            f"{r['bound']:.1e}), halving h shrinks it {r['halving_ratio']:.2f}x"
            + (f", p unchanged after step 1 (change {r['p_change_first_step']:.1e})"
               if r["start"] == "uniform" else
               f", p decreases first and crosses 0 at tau = {r['first_crossing_measured']:.4f} "
               f"(theory {r['first_crossing_predicted']:.4f})")
            + ("" if r["agrees"] else " -- DISAGREES") for r in rows)
        head = rows[0]
        return Assessment(
            verdict=Verdict.CONFIRMED if ok else Verdict.REFUTED,
            theory=tau_star,
            empirical=Measurement(self._measured_tau_star(results[0]),
                                  quantity="tau* where p reaches 1 from the uniform start (GD)",
                                  extras={"relative_deviation": head["relative_deviation"]}),
            statistic=f"gradient descent (step h = {params['lr']:g} and h/2, float64) vs the "
                      f"closed form, over tau in [0, tau_max]",
            tolerance=Tolerance("Euler's leading-order error h tau lambda^2/2 with lambda^2 = 2, "
                                "doubled; first-order convergence; two steps of slack for the "
                                "crossing (detection and Euler shift)",
                                {"relative_deviation_max": "2 h tau_max",
                                 "halving_ratio": [1.8, 2.2], "crossing_slack": 2 * params["lr"]}),
            explanation=explanation, details={"starts": rows},
        )

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        """Per start, its run at step h (the first of its two) against the closed form."""
        return {"toy_classifier": toy_classifier_figure(results[::2], STARTS,
                                                        params["tau_max"], params["lr"])}

    @staticmethod
    def _measured_tau_star(result: RunResult) -> float | None:
        step = result.first_step_reaching({"p": 1.0})
        return None if step is None else step * cast(SGD, result.spec.optimizer).lr

SADDLE_DECISION_SEEDS, SADDLE_CALIBRATION_SEEDS = 100, 200
"""First seeds of the saddle's decision and calibration blocks; seeds 0 to 4 developed the
rule and decide nothing."""
ESCAPE_FACTOR = 1.0
"""The escape budget in units of L / (lr kappa(V, L)) SGD steps, fixed on 2026-11-25 from the
calibration seeds 200 to 202: the subset runs' gold attention first passed 1/2 (on an
evaluation grid of budget/40) at kappa t = 5.5, 6.5, 11.5 and 22.0 for L = 8, 10, 20 and 40,
so a factor 1 leaves 1.45 to 1.8 times the measured escape time."""


def escape_budget(length: int, vocab: int, lr: float, factor: float = ESCAPE_FACTOR) -> int:
    """SGD steps the subset contrast gets to escape B = Q = 0: ``factor * L / (lr kappa)``.

    From B = Q = 0 the only stage-1 signal is the co-occurrence kappa(V, L) (§4.5), so
    the time for B to leave 0 scales with 1/kappa; the gold attention has to grow
    from 1/L, which the calibration runs found to add a factor about proportional to L."""
    kappa = theory.snell.kappa(vocab, length, "subset").value
    return max(1, math.ceil(factor * length / (lr * kappa)))


def free_toy_spec(distribution: str, vocab: int, length: int, steps: int, lr: float,
                  seed: int, evaluations: int, init_std: float = 0.0) -> RunSpec:
    """A float64 SGD run of the free-attention toy (§4.6), B and Q drawn with standard
    deviation ``init_std`` (0: exactly zero), evaluated about ``evaluations`` times."""
    return RunSpec(task=CopyTask(distribution, vocab, length),
                   model=FreeAttentionToyConfig(init_std_ktiw=init_std,
                                                init_std_attention=init_std),
                   optimizer=SGD(lr=lr), steps=steps, batch_size=64,
                   eval_every=max(1, steps // evaluations), eval_size=256, dtype="float64",
                   seed=seed)


PERMUTATION_SADDLE_PROTOCOL = replace(
    derivation_protocol(
        endpoint="the free-attention toy on permutations from B = Q = 0: loss exactly log V, "
                 "B row-constant and Q = 0 under SGD, with subset data escaping as contrast",
        unit="exact computation: float64 SGD runs, one per seed and distribution",
        test="every evaluation of every permutation run: |loss - log V| <= 1e-9, B row spread "
             "<= 1e-10, max |Q| <= 1e-10 (round-off only, spec T5); escape: every subset "
             "run's final mean gold attention > 0.5 (it starts at 1/L)",
        frozen="2026-11-25"),
    confirm="every permutation run within the round-off tolerances at every evaluation, and "
            "every subset run's final gold attention > 0.5",
    refute="a permutation run beyond a round-off tolerance (loss, B row spread or |Q|) at any "
           "evaluation; inconclusive (budget reached) when the saddle holds but a subset run "
           "does not escape",
    readout="both distributions train for the escape budget ceil(escape_factor * L / (lr "
            "kappa(subset_V, L))) SGD steps (escape_factor 1: 264, 420 and 7080 steps at "
            "smoke, quick and full), fixed by kappa before any run; permutations: the largest "
            "deviation over the evaluations (every budget/20 steps and the last); subsets: "
            "the gold attention at the last evaluation",
    seeds=(SeedBlock(SeedUse.DECISION, SADDLE_DECISION_SEEDS,
                     note="one run per seed and distribution"),
           SeedBlock(SeedUse.CALIBRATION, SADDLE_CALIBRATION_SEEDS,
                     note="three subset runs at each of L = 8, 10, 20, 40 measured the escape "
                          "time that set escape_factor"),
           SeedBlock(SeedUse.DEVELOPMENT, 0,
                     note="the fixed 200 / 400 / 2000 step budgets used before")),
    weaknesses=(
        "The escape factor was set after the full profile's fixed 2000-step budget had been "
        "seen to be too short, on calibration seeds; the margin over the measured escape "
        "time is 1.45 to 1.8, not more.",
        "From B = Q = 0 the seed changes only the data stream: the subset runs' gold "
        "attention differs between seeds by about 1e-6, so the calibration seeds are in "
        "effect the decision runs and several seeds are not independent replications; a "
        "budget too short gives 'budget reached', never a false confirmation.",
        "No perturbed start: zero gradient at B = Q = 0 is checked, not that the point is a "
        "saddle (unstable) rather than a flat stationary point.",
        "The saddle is checked at the evaluations only (every budget/20 steps), not every "
        "step.",
        "Escape is a fixed threshold (gold attention > 0.5) at the last evaluation."))


class PermutationSaddle(Claim):
    """``snell.permutation_saddle``: the free-attention toy (§4.6) started at B = 0, Q = 0 stays
    at loss log V exactly under SGD on permutations, while the subset distribution escapes.

    Exact statement, checked in float64 with SGD: on permutations every evaluated loss equals
    log V within 1e-9, B stays row-constant (max_o spread over i < 1e-10) and Q stays 0
    (max |Q| < 1e-10) -- the spec's T5 tolerances, which leave room only for round-off. Subset
    data must escape: the gold attention weight ends above 0.5 in every seed (it starts at 1/L).
    Refuted if the permutation run leaves the saddle; inconclusive if it stays but a subset run
    does not escape within the budget.

    Changed on 2026-11-25 (docs/methodology.md): the budget was a fixed step count per profile,
    too short at full (kappa = 0.0056); it is now :func:`escape_budget`, set by kappa before
    any run, and the decision moved to fresh seeds.
    """

    id = "snell.permutation_saddle"
    kind = ClaimKind.DERIVATION
    protocol = PERMUTATION_SADDLE_PROTOCOL
    code_version = 2
    paper = "snell"
    statement = ("In the free-attention toy, zero initialisation on permutations is a saddle: "
                 "the loss stays at log V exactly under SGD, while subset data escape.")
    space: ClassVar[dict[str, Dimension]] = {
        "L": Dimension("sequence length L (= V for permutations)", low=2, high=8),
        "extra": Dimension("subset_V - L for the subset contrast", low=1, high=8),
    }

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        return {"L": point["L"], "subset_V": point["L"] + point["extra"]}
    defaults: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {"L": 8, "subset_V": 12, "escape_factor": ESCAPE_FACTOR, "seeds": 1,
                  "lr": 1.0},
        "quick": {"L": 10, "subset_V": 15, "escape_factor": ESCAPE_FACTOR, "seeds": 3,
                  "lr": 1.0},
        "full": {"L": 40, "subset_V": 60, "escape_factor": ESCAPE_FACTOR, "seeds": 5,
                 "lr": 1.0},
    }

    @staticmethod
    def budget(params: dict[str, Any]) -> int:
        return escape_budget(params["L"], params["subset_V"], params["lr"],
                             params["escape_factor"])

    def check_params(self, params: dict[str, Any]) -> None:
        super().check_params(params)
        factor = params["escape_factor"]
        if isinstance(factor, bool) or not isinstance(factor, int | float) or not (
                0 < factor <= 10):
            raise ValueError(f"escape_factor must be a number in (0, 10] (10 budgets of "
                             f"L / (lr kappa) steps are far past any escape); got {factor!r}")
        check_disjoint(decision=range(SADDLE_DECISION_SEEDS,
                                      SADDLE_DECISION_SEEDS + params["seeds"]),
                       calibration=range(SADDLE_CALIBRATION_SEEDS, SADDLE_CALIBRATION_SEEDS + 3))

    def specs(self, params: dict[str, Any]) -> list[RunSpec]:
        steps = self.budget(params)
        return [free_toy_spec(dist, vocab, params["L"], steps, params["lr"],
                              SADDLE_DECISION_SEEDS + i, evaluations=20)
                for dist, vocab in (("permutation", params["L"]), ("subset", params["subset_V"]))
                for i in range(params["seeds"])]

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        n, length, steps = params["seeds"], params["L"], self.budget(params)
        perm, subset = results[:n], results[n:]
        log_v = theory.snell.permutation_saddle_loss(length).value
        loss_dev = max(float(np.abs(r.metric("loss") - log_v).max()) for r in perm)
        spread = max(float(r.metric("ktiw_row_spread").max()) for r in perm)
        q_max = max(float(r.metric("attention_abs_max").max()) for r in perm)
        stays = loss_dev <= 1e-9 and spread <= 1e-10 and q_max <= 1e-10
        gold = [float(r.metric("gold_attention")[-1]) for r in subset]
        escapes = all(g > 0.5 for g in gold)
        verdict = (Verdict.REFUTED if not stays else
                   Verdict.CONFIRMED if escapes else Verdict.INCONCLUSIVE)
        explanation = (
            f"permutations (V = L = {length}): max |loss - log V| = {loss_dev:.1e}, B row "
            f"spread {spread:.1e}, max |Q| {q_max:.1e} -> {'stays' if stays else 'LEAVES'} at "
            f"the saddle; subset (V = {params['subset_V']}): final gold attention "
            f"{', '.join(f'{g:.2f}' for g in gold)} (start 1/L = {1 / length:.2f}) -> "
            f"{'escapes' if escapes else 'does not escape within the budget'}.")
        if stays and not escapes:
            kappa = theory.snell.kappa(params["subset_V"], length, "subset").value
            explanation += (
                f" Why inconclusive: from B = Q = 0 the subset runs' only stage-1 signal is the "
                f"co-occurrence kappa(V, L) = {kappa:.4f} (§4.5), which sets how fast B leaves "
                f"0 before attention can follow; the budget of {steps} SGD steps at lr "
                f"{params['lr']} (escape factor {params['escape_factor']:g}) was too short "
                f"for the contrast, so the saddle half holds but the escape half is not shown "
                f"('verify --claim {self.id} --param escape_factor=F' tries a longer budget).")
        return Assessment(
            verdict=verdict, theory=log_v,
            reason=Reason.BUDGET_REACHED if verdict is Verdict.INCONCLUSIVE else None,
            empirical=Measurement(float(perm[0].metric("loss")[-1]),
                                  quantity="final loss on permutations",
                                  extras={"max_abs_deviation": loss_dev,
                                          "subset_final_gold_attention": gold}),
            statistic=f"free-attention toy, B = Q = 0 at the start, SGD lr {params['lr']}, "
                      f"float64, {steps} steps (escape budget), {n} seeds per distribution",
            tolerance=Tolerance("exact statement: only float64 round-off is allowed (§4.6); "
                                "escape = gold attention past one half",
                                {"loss": 1e-9, "row_spread": 1e-10, "max_abs_Q": 1e-10,
                                 "subset_gold_attention_min": 0.5}),
            explanation=explanation, n_seeds=2 * n,
            details={"loss_deviation": loss_dev, "row_spread": spread, "max_abs_Q": q_max},
        )

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        n, log_v = params["seeds"], theory.snell.permutation_saddle_loss(params["L"]).value
        return {"saddle": saddle_figure(results[:n], results[n:], log_v)}
