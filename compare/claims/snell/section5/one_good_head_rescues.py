"""``snell.one_good_head_rescues`` (Snell et al. 2021, §5 and the official ``multihead.py``):
on a shared base initialisation, a model of 7 bad heads and 1 good head learns the permutation
task where a model of 8 bad heads does not: one head that can learn alone is enough.

The heads are §5's (:mod:`~attnverify.compare.claims.snell.section5.stages`): candidates
on base 0, each classified good or bad by single-head runs with data seeds 0 to 2, lazily and
in stages, here until the first ``needed_bad`` bad heads (12 at full) and the first ``needed``
good heads (20) are known. The candidate runs are the same runs (the same keys) as those of
``snell.multihead_rescues_permutations``. Then ``draws`` bundles of each kind are drawn
uniformly from these pools: 8 of the bad heads, and 7 of the bad heads with 1 of the good
ones. Each set drawn is trained once, with data seed ``BUNDLE_DATA_SEED`` (3), outside the
seeds that labelled the heads (§5 trains its bundles with data seed 0, one of them: a head's
luck on that data order would push the two kinds apart, toward H1). Given the pools, a draw is
an independent draw of a set of heads and its outcome is a function of the set, so the
success indicators of a kind are i.i.d. Bernoulli: the exact tests of
:mod:`~attnverify.compare.claims.snell.section5.decision` apply as they are, with a set drawn
twice counted twice.

The inference is about these pools on this base, and the pools are small: a bundle holds 8 of
the 12 bad heads, so any two all-bad bundles share at least 4 heads and every bad head is in
about two thirds of them. One bad head that learns in company can carry a kind's rate; the
report gives each bad head's share of the all-bad successes (secondary, never deciding).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, fields
from typing import TYPE_CHECKING, Any, ClassVar

from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.snell.common import PAPER_COPYING, seq2seq_model
from attnverify.compare.claims.snell.section5.decision import (
    ALPHA,
    BETA,
    MIN_RESCUE,
    rescue_decision,
)
from attnverify.compare.claims.snell.section5.figures import section5_curves, section5_figure
from attnverify.compare.claims.snell.section5.params import (
    BUNDLE_DATA_SEED,
    OneGoodHeadParams,
    TrainOnlyParams,
    check_rescue,
)
from attnverify.compare.claims.snell.section5.stages import (
    CANDIDATE_SEEDS,
    Section5Stages,
    bundle_names,
    candidate_states,
    head_counts,
    multihead_spec,
    single_heads,
)
from attnverify.compare.claims.snell.section5.success import (
    official_success_steps,
    section5_success_text,
)
from attnverify.compare.groups import Specs
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason, SeedBlock, SeedUse
from attnverify.compare.stats import binomial_ci
from attnverify.empirics import RunResult, RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DRAW_SEED = 10_000
"""Draw ``idx`` of the 8-bad bundles uses ``random.Random(DRAW_SEED + 2 idx)``, of the
7-bad-1-good bundles ``random.Random(DRAW_SEED + 2 idx + 1)`` (other streams than the bundles
of ``snell.multihead_rescues_permutations``)."""
KINDS = ("bad", "bad + 1 good")

QUICK_NOT_TRAINED = (
    "quick trains nothing: the claim needs a pool of at least 12 bad heads on one base, each "
    "found by 3 single-head runs, and at the paper's width 1 candidate head in 20 is bad (8 of "
    "160 on base 0), so the pool alone costs about 240 candidates and hours of training; "
    "full decides")

PROTOCOL = Protocol(
    endpoint=("the probability that a bundle of heads on the shared base learns the "
              "permutation task (token accuracy > 0.95 by the official loop's last "
              "evaluation), for 7 bad + 1 good heads against 8 bad heads, each bundle a "
              "uniform draw from the pools of classified heads"),
    unit=("one bundle per draw: a set of heads drawn uniformly from the pools (the first "
          "needed_bad bad and needed good heads of the §5 classification on base 0), trained "
          "with data seed 3 (not a classification seed); a set drawn twice is trained once "
          "and counted twice"),
    h0="7 bad + 1 good heads succeed no more often than 8 bad heads (p_good - p_bad <= 0)",
    h1=f"7 bad + 1 good heads succeed more often by at least {MIN_RESCUE}",
    test=("exact unconditional test of the difference of two rates (Suissa-Shuster), on "
          "draws that are i.i.d. given the pools"),
    confirm=(f"p (p_good - p_bad <= 0) < {ALPHA}, unless a secondary test is significant the "
             f"other way (then inconclusive: conflicting evidence)"),
    refute=(f"p (p_good - p_bad >= {MIN_RESCUE}) < {BETA}, unless a test is significant toward "
            f"H1 at {ALPHA} (then inconclusive)"),
    alpha=ALPHA, beta=BETA,
    readout="the official evaluations before the last step (§5's success)",
    frozen="2026-11-26",
    precondition=("the classification fills both pools (needed_bad bad heads, needed good "
                  "heads; 12 and 20 at full) within max_candidates candidates"),
    secondary=("log-rank on steps to success, censored at the budget (8 bad heads slower)",
               "Fisher's exact test on the counts",
               "the number of distinct sets drawn and of diverged bundles per kind",
               "each bad head's share of the all-bad bundles that learned"),
    seeds=(SeedBlock(SeedUse.DECISION, DRAW_SEED, "the draws of the bundles (random.Random "
                     "streams, module docstring); every bundle trains with data seed 3 on base "
                     "0"),
           SeedBlock(SeedUse.CALIBRATION, 0, "data seeds 0 to 2 of the single-head runs that "
                     "classify the candidate heads (§5's, shared with "
                     "snell.multihead_rescues_permutations)")),
    weaknesses=(
        "The inference is about these pools on this base: a draw is i.i.d. given the pools, "
        "not across bases or pools. With 12 bad heads any two all-bad bundles share at least "
        "4 heads, so one bad head that learns in company can carry the all-bad rate (each bad "
        "head's share of its successes is reported); disjoint bundles would need 16 bad heads "
        "(about 320 candidates), independent pools other bases.",
        "This claim began as a reported, undecided comparison of "
        "snell.multihead_rescues_permutations, whose runs had been seen: on the first 8 bad "
        "heads, 7 bad + 1 good learned in 38 of 41 draws and the one 8-bad set did not learn. "
        "Those 8 heads and the same 20 good heads are in this claim's pools, so the good arm's "
        "rate was close to known; the rule (the multi-head claim's, frozen 2026-11-25, its "
        "smallest rescue 0.3), the pool sizes and the draws were fixed afterwards, before any "
        "bundle of this claim ran (docs/methodology.md). No set drawn here is one of the "
        "archived bundles, and their data seed differs.",
        "A diverged bundle counts as a failure, as §5's outputs count it (the diverged count "
        "per kind is reported).",
        "Quick trains nothing (the pool is too costly there); only full decides."))


def pools_full(params: dict[str, Any], good: list[int], bad: list[int]) -> bool:
    """The precondition: both pools hold as many heads as the protocol keeps."""
    return len(bad) >= params["needed_bad"] and len(good) >= params["needed"]


def draws(params: dict[str, Any], good: list[int],
          bad: list[int]) -> dict[str, list[tuple[int, ...]]]:
    """The head seeds (sorted) of every draw of each kind, in draw order; none while a
    pool is short of the precondition."""
    k = params["heads"]
    out: dict[str, list[tuple[int, ...]]] = {kind: [] for kind in KINDS}
    if not pools_full(params, good, bad):
        return out
    for idx in range(params["draws"]):
        out["bad"].append(tuple(sorted(random.Random(DRAW_SEED + 2 * idx).sample(bad, k))))
        rng = random.Random(DRAW_SEED + 2 * idx + 1)
        out["bad + 1 good"].append(tuple(sorted([*rng.sample(bad, k - 1),
                                                 rng.choice(good)])))
    return out


def bundle_spec(params: dict[str, Any], heads: tuple[int, ...]) -> RunSpec:
    """The bundle of ``heads`` on the base, data seed ``BUNDLE_DATA_SEED``."""
    return multihead_spec(params, BUNDLE_DATA_SEED, params["heads"], heads, base=True)


def bundle_runs(params: dict[str, Any], good: list[int], bad: list[int]) -> list[RunSpec]:
    """One run per distinct set of heads drawn (the bundles' stage)."""
    sets = dict.fromkeys(s for kind in KINDS for s in draws(params, good, bad)[kind])
    return [bundle_spec(params, heads) for heads in sets]


STAGES = Section5Stages(needed_bad_param="needed_bad", last_group="bundles",
                        last_stage=bundle_runs)
"""The §5 stages of this claim: ``needed`` good and ``needed_bad`` bad heads, then the
bundles of every draw."""


def drawn_runs(params: dict[str, Any], results: Sequence[RunResult],
               good: list[int], bad: list[int]) -> dict[str, list[RunResult]]:
    """Each kind's runs in draw order from the pools ``good`` and ``bad`` (a set drawn
    twice appears twice; a draw whose run is missing is left out)."""
    by_key = {r.spec.key(): r for r in results if seq2seq_model(r.spec).heads > 1}
    return {kind: [by_key[key] for key in (bundle_spec(params, s).key() for s in sets)
                   if key in by_key]
            for kind, sets in draws(params, good, bad).items()}


def head_shares(runs: Sequence[RunResult], steps: Sequence[int | None],
                bad: list[int]) -> dict[int, tuple[int, int]]:
    """Per bad head: (all-bad draws with it that learned, all-bad draws with it), in pool
    order (a secondary view of which heads carry the all-bad rate)."""
    return {h: (sum(s is not None for r, s in zip(runs, steps, strict=True)
                    if h in seq2seq_model(r.spec).head_seeds),
                sum(h in seq2seq_model(r.spec).head_seeds for r in runs)) for h in bad}


def not_testable(theory: str, why: str, details: dict[str, Any]) -> Assessment:
    return Assessment(
        verdict=Verdict.INCONCLUSIVE, reason=Reason.NOT_TESTABLE, theory=theory,
        empirical=Measurement(None), statistic="bundles of bad heads with and without a "
                                               "good one",
        tolerance=Tolerance("the testability precondition of the protocol", {}),
        explanation=why[:1].upper() + why[1:], details=details)


class OneGoodHeadRescues(Claim):
    """``snell.one_good_head_rescues`` (module docstring). Its runs are read by what they are
    (head count, head seeds), not by group or position."""

    id = "snell.one_good_head_rescues"
    kind = ClaimKind.PAPER
    code_version = 1
    protocol = PROTOCOL
    paper = "snell"
    statement = ("On a shared base initialisation, 7 bad heads and 1 good head learn the "
                 "permutation task where 8 bad heads do not: one head that learns alone "
                 "rescues a bundle of heads that do not (§5; tested on one base, with bundles "
                 "drawn from its pools of classified heads).")
    paper_scale = PAPER_COPYING
    defaults: ClassVar[dict[str, OneGoodHeadParams | TrainOnlyParams]] = {
        # smoke: wiring at a toy scale (2-head bundles, one classification seed)
        "smoke": OneGoodHeadParams(
            hidden=8, L=5, subset_V=8, batch_size=16, steps=40, eval_every=10, eval_size=16,
            heads=2, base_seed=0, classify_seeds=1, needed=1, stage_candidates=4,
            max_candidates=12, needed_bad=4, draws=3, train=True),
        "quick": TrainOnlyParams(train=False),
        # full: the §5 candidates of snell.multihead_rescues_permutations at full (the same
        # candidate fields, so the same candidate runs), drawn further until 12 bad heads are
        # known
        "full": OneGoodHeadParams(
            hidden=256, L=40, subset_V=60, batch_size=128, steps=200, eval_every=10,
            eval_size=400, heads=8, base_seed=0, classify_seeds=3, needed=20,
            stage_candidates=16, max_candidates=400, needed_bad=12, draws=20, train=True),
    }

    def check_params(self, params: dict[str, Any]) -> None:
        super().check_params(params)
        if not params["train"]:
            return
        missing = sorted({f.name for f in fields(OneGoodHeadParams)} - set(params))
        if missing:
            raise ValueError(f"train=true needs the protocol's parameters, which this profile "
                             f"does not set ({', '.join(missing)}): use --profile full")
        check_rescue(params)  # the bundles' sizes and seeds, as the profiles' class checks

    # -- runs --------------------------------------------------------------------------------
    def specs(self, params: dict[str, Any]) -> Specs:
        return STAGES.first_stage(params) if params["train"] else {}

    def staged(self, params: dict[str, Any]) -> bool:
        return bool(params["train"])

    def followup(self, params: dict[str, Any], results: Sequence[RunResult]) -> Specs:
        """The next classification seeds and candidates while a pool is short, then the
        bundles of every draw (module docstring)."""
        if not params["train"]:
            return {}
        return STAGES.followup(params, self.results_for(params, results))

    def stage_note(self, params: dict[str, Any], results: Sequence[RunResult]) -> str:
        return STAGES.note(params, results) if params["train"] else ""

    def seed_plan(self, params: dict[str, Any]) -> str:
        if not params["train"]:
            return ""
        return (f"candidates in stages of {params['stage_candidates']} until "
                f"{params['needed_bad']} bad and {params['needed']} good heads are known (at most "
                f"{params['max_candidates']}, up to {params['classify_seeds']} single-head runs "
                f"each), then one run per distinct set of {2 * params['draws']} draws")

    # -- assessment --------------------------------------------------------------------------
    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        theory = "7 bad + 1 good heads learn more often than 8 bad heads"
        if not params["train"]:
            return not_testable(theory, QUICK_NOT_TRAINED, {})
        states = candidate_states(params, results)
        good, bad = STAGES.kept(params, states)
        counts = head_counts(states, good, bad)
        pools = (f"Pools: {counts['bad']} bad and {counts['good']} good heads from "
                 f"{counts['candidates']} candidates ({counts['single_head_runs']} single-head "
                 f"runs).")
        if not pools_full(params, good, bad):
            return not_testable(
                theory, f"the classification found {len(bad)} bad heads and {len(good)} good "
                f"ones within {params['max_candidates']} candidates (the precondition needs "
                f"{params['needed_bad']} and {params['needed']})."
                + STAGES.shortfall_note(params, counts), {"heads": counts})
        drawn = drawn_runs(params, results, good, bad)
        if any(len(drawn[kind]) < params["draws"] for kind in KINDS):
            return not_testable(theory, f"bundle runs are missing. {pools}", {"heads": counts})
        k = params["heads"]
        names = bundle_names(k)
        successes = {kind: official_success_steps(runs) for kind, runs in drawn.items()}
        decision, cmp = rescue_decision(successes["bad"], successes["bad + 1 good"],
                                        params["steps"], rescued=f"{k} bad heads",
                                        rescuer=f"{k - 1} bad + 1 good heads")
        (k_bad, k_good), (n_bad, n_good) = cmp.successes, cmp.n
        distinct = {kind: len({r.spec.key() for r in runs}) for kind, runs in drawn.items()}
        diverged = {kind: sum(r.diverged for r in runs) for kind, runs in drawn.items()}
        shares = head_shares(drawn["bad"], successes["bad"], bad)

        def rate(kind: str, k_: int, n_: int) -> str:
            lo, hi = binomial_ci(k_, n_)
            return (f"{names[kind]}: {k_}/{n_} draws learned (95% CI {lo:.2f} to {hi:.2f}; "
                    f"{distinct[kind]} distinct sets, {diverged[kind]} diverged)")

        explanation = (f"{rate('bad + 1 good', k_good, n_good)}; {rate('bad', k_bad, n_bad)}. "
                       f"{decision.text}")
        if decision.verdict is Verdict.REFUTED:
            explanation += " " + (
                f"The {names['bad']} bundles learn too: no room for the rescue."
                if k_bad > n_bad / 2 else
                "The bundles with a good head fail too: one good head does not rescue."
                if k_good <= n_good / 2 else "Both kinds learn at similar rates.")
        if k_bad:
            explanation += (f" Learned {names['bad']} draws by bad head (head seed - "
                            f"{CANDIDATE_SEEDS}: learned/draws with it): "
                            + ", ".join(f"{h - CANDIDATE_SEEDS}: {a}/{n}"
                                        for h, (a, n) in shares.items()) + ".")
        return Assessment(
            verdict=decision.verdict, reason=decision.reason, p_value=decision.p_value,
            refuting_p=decision.refuting_p,
            theory=theory,
            empirical=Measurement(k_good / n_good - k_bad / n_bad,
                                  quantity=f"success rate, {names['bad + 1 good']} minus "
                                           f"{names['bad']}",
                                  extras={"rate_good_bundle": k_good / n_good,
                                          "rate_bad_bundle": k_bad / n_bad,
                                          "distinct_sets": distinct}),
            statistic=(f"success ({section5_success_text(params)}) on "
                       f"permutations, GRU, {k}-head bundles on base {params['base_seed']}, "
                       f"data seed {BUNDLE_DATA_SEED} (H={params['hidden']}, L={params['L']}, "
                       f"batch {params['batch_size']}, {params['steps']} steps)"),
            tolerance=Tolerance("exact unconditional test of the success rates (protocol)",
                                {"alpha": ALPHA, "beta": BETA, "min_rescue": MIN_RESCUE}),
            explanation=f"{explanation} {pools}", n_seeds=sum(distinct.values()),
            details={"test": asdict(cmp), "heads": counts, "distinct_sets": distinct,
                     "diverged": diverged,
                     "bad_head_shares": {str(h): list(v) for h, v in shares.items()}})

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        """The success rate of each kind (every draw) and the distinct bundles' curves."""
        if not params["train"]:
            return {}
        good, bad = STAGES.kept(params, candidate_states(params, results))
        drawn = drawn_runs(params, results, good, bad)
        names = bundle_names(params["heads"])
        distinct = {kind: list({r.spec.key(): r for r in runs}.values())
                    for kind, runs in drawn.items()}
        return {"rescue": section5_figure(single_heads(results), drawn, names,
                                          section5_success_text(params)),
                "rescue_curves": section5_curves(distinct, names, set(good))}
