"""``snell.permutation_ktiw_at_chance`` (derived; spec §4.5, pitfall §9.2): under the §4.5
argument's assumption (a), h_l ~ E[x_l], permutations give KTIW no stage-1 signal, so with
attention frozen uniform the probe stays at chance on them. It counts the permutation seeds
whose final probe is below twice chance, on the runs it shares with
``snell.ktiw_learned_under_uniform_attention`` and ``snell.ktiw_harder_on_permutations``
(:mod:`~attnverify.compare.claims.snell.ktiw_uniform_runs`). The paper's own statement, that
permutations make KTIW hard to learn, is the latter's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from attnverify import theory
from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.snell.common import LENGTH_SPACE, PAPER_COPYING, CopyingParams
from attnverify.compare.claims.snell.copying_runs import final_ci
from attnverify.compare.claims.snell.figures import curves_figure
from attnverify.compare.claims.snell.ktiw_uniform_runs import (
    KTIW_PARAMS,
    KTIW_SEED_BLOCKS,
    RATE_ALPHA,
    RATE_BETA,
    READOUT,
    constructed_probe_run,
    final_probes,
    ktiw_specs,
    probe_levels,
    rate_tolerance,
    rate_verdicts,
    read_rate,
)
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason
from attnverify.compare.space import Dimension
from attnverify.empirics import RunResult, RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

AT_CHANCE_PROTOCOL = Protocol(
    endpoint="the share of permutation seeds whose final KTIW-probe accuracy with attention "
             "frozen uniform is below twice chance, 2/S (S = L + 1)",
    unit="seed (one frozen-uniform permutation run; diverged runs are left out)",
    h0="at most half of the seeds stay at chance (rate <= 1/2)",
    h1="most seeds stay at chance: a rate of 3/4 or more (the smallest effect that matters)",
    test="exact binomial on the count of seeds at chance, one-sided",
    confirm="P(X >= k | rate 1/2) < alpha",
    refute="P(X <= k | rate 3/4) < beta: a rate of 3/4 or more is rejected",
    alpha=RATE_ALPHA, beta=RATE_BETA,
    error_rates="alpha 0.025 at rate 1/2, beta 0.10 at rate 3/4 (exact binomial tails)",
    readout=READOUT,
    frozen="2026-12-04",
    secondary=("the same runs' final per-word loss against log(L!)/L, the best a decoder "
               "without the source order can do (explains a probe above chance; never "
               "decides)",),
    seeds=KTIW_SEED_BLOCKS,
    weaknesses=(
        "It tests the §4.5 argument under its assumption (a), which a recurrent encoder need "
        "not meet: a refutation says the assumption fails in this model, not that the paper "
        "is wrong.",
        "The factor 2 is the spec's; the rates 1/2 and 3/4 were set knowing that on other "
        "seeds the full runs' permutation probe ended at 0.68 and the quick runs' at 0.061."))


class PermutationKtiwAtChance(Claim):
    """``snell.permutation_ktiw_at_chance`` (module docstring)."""

    id = "snell.permutation_ktiw_at_chance"
    kind = ClaimKind.DERIVED
    protocol = AT_CHANCE_PROTOCOL
    code_version = 1
    paper = "snell"
    statement = ("With attention frozen uniform, the KTIW probe stays at chance on "
                 "permutations (the §4.5 argument under its assumption (a)).")
    paper_scale = PAPER_COPYING
    space: ClassVar[dict[str, Dimension]] = LENGTH_SPACE
    defaults: ClassVar[dict[str, CopyingParams]] = KTIW_PARAMS

    def specs(self, params: dict[str, Any]) -> dict[str, list[RunSpec]]:
        return ktiw_specs(params)

    @staticmethod
    def _order_note(params: dict[str, Any], perm_runs: Sequence[RunResult]) -> str:
        """Why the probe may leave chance, read off the same runs: their per-word loss against
        log(L!)/L (``snell.stage1_bow_optimum``). Below it the network uses the source order,
        which reaches the output through the LSTM states (attention is frozen), and assumption
        (a) fails."""
        losses, lo, hi = final_ci(perm_runs, "loss_words")
        floor = theory.snell.stage1_exclusion_loss(params["L"]).value
        if hi >= floor:
            return (f" The per-word loss ({losses.mean():.2f}, 95% CI {lo:.2f}-{hi:.2f}) is "
                    f"not below log(L!)/L = {floor:.2f}: the source order does not explain a "
                    f"probe above chance here.")
        return (f" The same runs' per-word loss, {losses.mean():.2f} (95% CI {lo:.2f}-"
                f"{hi:.2f}), is below log(L!)/L = {floor:.2f}, the best a decoder without the "
                f"source order can do: the network uses the order, which reaches the output "
                f"through the LSTM states (attention is frozen), so assumption (a), "
                f"h_l ~ E[x_l], fails in these runs.")

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        levels, runs = probe_levels(params["L"]), results["permutation"]
        probes = final_probes(runs, diverged_as=None)
        theory_text = f"share of seeds with probe < {levels.at_chance:.3f} (2/S) > 1/2"
        if not probes.size:
            return Assessment(
                verdict=Verdict.INCONCLUSIVE, reason=Reason.NOT_TESTABLE, theory=theory_text,
                empirical=Measurement(float("nan"), quantity="share of permutation seeds "
                                                             "whose probe is at chance"),
                statistic="no permutation run finished",
                tolerance=Tolerance("at chance: probe below twice chance",
                                    {"at_chance_below": levels.at_chance}),
                explanation="Not testable here: every permutation run diverged.", n_seeds=0)
        n, at_chance = probes.size, int((probes < levels.at_chance).sum())
        rate = read_rate(at_chance, n, "at chance", "most permutation seeds staying at chance")
        decision, (lo, hi) = rate.decision, rate.ci
        dropped = sum(r.diverged for r in runs)
        explanation = (f"{at_chance} of {n} permutation seeds end with the probe at chance "
                       f"(final accuracy < {levels.at_chance:.3f} = 2/S; mean "
                       f"{probes.mean():.3f}, chance 1/S = {levels.chance:.3f}). "
                       f"{decision.text}"
                       + (f" {dropped} diverged run(s) left out." if dropped else ""))
        if at_chance < n:
            explanation += self._order_note(params, runs)
        return Assessment(
            verdict=decision.verdict, reason=decision.reason, p_value=decision.p_value,
            refuting_p=decision.refuting_p, theory=theory_text,
            empirical=Measurement(at_chance / n, ci=[lo, hi], confidence=0.95,
                                  quantity="share of permutation seeds whose probe is at "
                                           "chance",
                                  extras={"mean_probe": float(probes.mean())}),
            statistic=f"final KTIW-probe accuracy after {params['steps']} steps with frozen "
                      f"uniform attention (H={params['hidden']}, L={params['L']}, {n} "
                      f"permutation seeds)",
            tolerance=rate_tolerance("at chance: probe below twice chance",
                                     {"at_chance_below": levels.at_chance}),
            explanation=explanation, n_seeds=n,
            details={"permutation": probes.tolist(), "at_chance": at_chance,
                     "chance": levels.chance})

    def negative_control(self, params: dict[str, Any]) -> list[RunResult]:
        """The probe learned on permutations: every permutation seed ends at 1."""
        specs = self.specs(params)
        return [constructed_probe_run(spec, 1.0) for group in specs.values() for spec in group]

    def reachable_verdicts(self, params: dict[str, Any]) -> frozenset[Verdict]:
        return rate_verdicts(params["seeds"])

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        return {"ktiw_uniform_permutations": curves_figure(
            {"permutation": results["permutation"]}, ["ktiw_acc", "acc"],
            "Frozen uniform attention on permutations: KTIW probe and token accuracy")}
