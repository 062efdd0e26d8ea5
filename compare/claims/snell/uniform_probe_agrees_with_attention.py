"""``snell.uniform_probe_agrees_with_attention`` (P2; spec §3.2-3.3): the KTIW probe of a model
trained with attention frozen uniform agrees with the attention of a normally trained model far
above the shuffled baseline, on copying.

Pairs of runs share a seed, so they share the evaluation batch: the normal run reports its
attention's argmax per word step, the frozen-uniform run its probe beta over source positions
(``Seq2SeqConfig.record_probe``). The agreement A (spec §3.2, the official "top 5% match")
counts the word steps where the normal attention's argmax lies in the top ceil(0.05 S) of the
probe; the baseline shuffles the probe's positions. The subset distribution decides (the
paper's P2, where stage 1 can learn KTIW); the permutation distribution is reported beside it,
where P3 expects less agreement.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from scipy import stats

from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.snell.common import (
    COPYING_PARAMS,
    LENGTH_SPACE,
    PAPER_COPYING,
    SUCCESS,
    CopyingParams,
    copy_spec,
    copy_task,
    scale_text,
)
from attnverify.compare.claims.snell.copying_runs import UNIFORM_STEPS
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason, SeedBlock, SeedUse
from attnverify.compare.report.plotting import PALETTE, new_figure
from attnverify.compare.space import Dimension
from attnverify.empirics import RunResult, RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FROZEN = "2026-11-26"
SEEDS = 300
"""The decision block's first seed (fresh: no run of these seeds existed when the rule was
fixed)."""
MIN_GAP = 0.3
"""'Far above the baseline': the smallest mean excess of A over the shuffled baseline that
matters (A is a fraction of word steps)."""
MIN_PAIRS = 3
"""The fewest subset pairs whose normal run learned with which the claim is tested."""
ALPHA, BETA = 0.025, 0.10
DISTRIBUTIONS = ("subset", "permutation")
"""The distributions, in training order (the subset decides)."""


@dataclass(frozen=True)
class ProbeAgreementParams(CopyingParams):
    """The copying configuration of the normal runs, ``seeds`` pairs per distribution; the
    frozen-uniform run of a pair trains ``uniform_steps`` steps (the frozen-uniform claims'
    budget)."""

    uniform_steps: int


@dataclass(frozen=True)
class ProbeAgreementParamsWithTrain(ProbeAgreementParams):
    """:class:`ProbeAgreementParams` at quick, whose budget leaves the runs out: ``train``
    false trains nothing (compare.quick_budget), ``--param train=true`` trains them."""

    train: bool


PAIR_SEEDS = {"smoke": 2, "quick": 4, "full": 8}
"""Seed pairs per distribution and profile."""

PROTOCOL = Protocol(
    endpoint=("on subset copying: A(alpha, beta^uf) minus its shuffled baseline, per seed pair "
              "(the normal run's final attention, the frozen-uniform run's final probe, on the "
              "pair's shared evaluation batch)"),
    unit=("per seed pair whose normal run learned to copy (token acc >= 0.95 with aligned "
          "attention); a pair whose normal run did not learn has no attention to agree with"),
    h0="the mean excess of A over its baseline is <= 0",
    h1=f"the mean excess is >= {MIN_GAP}",
    test="one-sample t-test of the per-pair excess, one-sided each way",
    confirm=f"p (mean excess <= 0) < {ALPHA}",
    refute=f"p (mean excess >= {MIN_GAP}) < {BETA}",
    alpha=ALPHA, beta=BETA,
    readout=("the last evaluation: the normal run's attention argmax per word step (best-"
             "aligned head) and the uniform run's probe beta_{t,l} = log p(y_t | s_t, c_t := "
             "W_c h_l + b_c); A = share of word steps whose attention argmax is in the top "
             "ceil(0.05 S) of beta, ties in its favour; the baseline permutes beta's positions "
             "per word step (seeded)"),
    frozen=FROZEN,
    precondition=f"at least {MIN_PAIRS} subset pairs whose normal run learned to copy",
    secondary=("the same excess on permutations (P3 expects less agreement there)",
               "A(alpha, beta) of the normal run's own probe (the paper's agr_normal)",
               "xi(alpha, beta^uf) against xi*: the token accuracy at which the normal runs' "
               "attention first agrees with the gold alignment (top-1, attn_acc) as well as the "
               "uniform probe does (top-1, ktiw_acc), against their best accuracy; on copying "
               "the gold alignment stands for the paper's gold attention"),
    seeds=(SeedBlock(SeedUse.DECISION, SEEDS, note="normal and frozen-uniform run of each seed, "
                                                   "both distributions"),),
    weaknesses=("the paper measured P2 on translation, where KTIW is word translation; on "
                "copying KTIW is the identity map and co-occurrence alone teaches it on subsets",
                "a normal run that learned attends to the gold position, so on copying A is "
                "close to the uniform probe's accuracy at the gold position (its top-1 form, "
                "ktiw_acc, is reported beside A): the normal run adds little beyond the "
                "alignment that the task fixes; the test is the paper's P2 on copying and "
                "also the derived stage-1 prediction (kappa > 0), a weak test",
                "a normal run aligned at t - 1 or t + 1 counts as learned but scores low A "
                "(biased toward refutation)",
                f"the smallest effect ({MIN_GAP}) is this project's reading of 'strongly "
                f"agrees', fixed before any decision run",
                "the t-test on a few pairs assumes roughly normal excesses",
                "xi uses the gold alignment and top-1 matches, not a second normal run's "
                "attention at each checkpoint (which the run store does not keep)"))


def top_k(sources: int) -> int:
    """The official top-5% match's k for ``sources`` source positions (1 up to 20)."""
    return math.ceil(0.05 * sources)


def agreement(argmax: np.ndarray, scores: np.ndarray) -> float:
    """A(u, v) of spec §3.2 from u's argmax per (example, step) ``argmax`` (B, L) and v's
    scores (B, L, S): the share of steps where fewer than k positions score above v at u's
    argmax."""
    at = np.take_along_axis(scores, argmax[..., None].astype(np.int64), axis=-1)
    return float(((scores > at).sum(-1) < top_k(scores.shape[-1])).mean())


def shuffled_agreement(argmax: np.ndarray, scores: np.ndarray, seed: int) -> float:
    """The baseline: :func:`agreement` with v's positions permuted at every step."""
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random(scores.shape), axis=-1)
    return agreement(argmax, np.take_along_axis(scores, order, axis=-1))


def excess_test(excess: Sequence[float]) -> tuple[float, float]:
    """One-sided t-test p-values: mean excess > 0, and mean excess < MIN_GAP."""
    if len(excess) < 2 or np.ptp(excess) == 0:  # no spread: the t statistic is undefined,
        return 1.0, 1.0  # and identical excesses are no evidence of a spread-free effect
    up = stats.ttest_1samp(excess, 0.0, alternative="greater").pvalue
    down = stats.ttest_1samp(excess, MIN_GAP, alternative="less").pvalue
    return float(up), float(down)


def decide_agreement(excess: Sequence[float]) -> tuple[Verdict, Reason, str, float]:
    """The protocol's rule on the per-pair excesses of the subset distribution."""
    if len(excess) < MIN_PAIRS:
        return (Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE,
                f"not testable here: {len(excess)} subset pairs whose normal run learned, "
                f"fewer than {MIN_PAIRS} (more seeds or a longer budget would)", 1.0)
    p_up, p_down = excess_test(excess)
    shown = (f"mean excess {np.mean(excess):.3f} over {len(excess)} pairs; p (> 0) = "
             f"{p_up:.3g}, p (< {MIN_GAP}) = {p_down:.3g}")
    if p_up < ALPHA and p_down < BETA:
        return (Verdict.INCONCLUSIVE, Reason.CONFLICTING,
                f"above the baseline but by less than {MIN_GAP}: {shown}", p_up)
    if p_up < ALPHA:
        return Verdict.CONFIRMED, Reason.DECIDED, f"far above the baseline: {shown}", p_up
    if p_down < BETA:
        return (Verdict.REFUTED, Reason.DECIDED,
                f"not {MIN_GAP} above the baseline: {shown}", p_up)
    return Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED, f"undecided: {shown}", p_up


def _xi(normal: Sequence[RunResult], uniform_probe_acc: float) -> float | None:
    """Mean over normal runs of the token accuracy at their first evaluation whose attention
    accuracy exceeds ``uniform_probe_acc`` (None where a run never does)."""
    values = []
    for r in normal:
        above = np.flatnonzero(r.metric("attn_acc") > uniform_probe_acc)
        if not above.size:
            return None
        values.append(float(r.metric("acc")[above[0]]))
    return float(np.mean(values)) if values else None


def _secondary(perm: Sequence[float], xi: dict[str, dict[str, float | None]],
               probe_acc: dict[str, float]) -> str:
    """The permutation excess and xi against xi*, in words."""
    parts = [f"on permutations the mean excess is {np.mean(perm):.3f} over {len(perm)} pairs"
             if perm else "no permutation pair learned"]
    for dist, v in probe_acc.items():
        parts.append(f"the uniform probe's top-1 accuracy at the gold position ({dist}) "
                     f"{v:.3f}")
    for dist, cell in xi.items():
        value = "never reached" if cell["xi"] is None else f"{cell['xi']:.3f}"
        parts.append(f"xi ({dist}) {value} against xi* {cell['xi_star']:.3f}")
    return "; ".join(parts) + "."


class UniformProbeAgreesWithAttention(Claim):
    """``snell.uniform_probe_agrees_with_attention`` (module docstring)."""

    id = "snell.uniform_probe_agrees_with_attention"
    kind = ClaimKind.OBSERVATION
    code_version = 1
    protocol = PROTOCOL
    paper = "snell"
    statement = ("The KTIW probe of a model trained with attention frozen uniform agrees with "
                 "a normally trained model's attention far above the shuffled baseline.")
    paper_scale = PAPER_COPYING
    space: ClassVar[dict[str, Dimension]] = LENGTH_SPACE
    defaults: ClassVar[dict[str, ProbeAgreementParams]] = {
        profile: ProbeAgreementParams(**replace(cfg, seeds=PAIR_SEEDS[profile]).as_dict(),
                                      uniform_steps=UNIFORM_STEPS[profile])
        for profile, cfg in COPYING_PARAMS.items() if profile != "quick"} | {
        # quick: trained only with --param train=true (compare.quick_budget: an observation,
        # which decides nothing, left out for the first stage's guard)
        "quick": ProbeAgreementParamsWithTrain(
            **replace(COPYING_PARAMS["quick"], seeds=PAIR_SEEDS["quick"]).as_dict(),
            uniform_steps=UNIFORM_STEPS["quick"], train=False)}
    not_run_note = ("not run at quick: an observation (it decides nothing), its 16 runs left "
                    "out so that the quick profile's first stage stays within its guard "
                    "(compare.quick_budget); the full profile decides it")

    @staticmethod
    def pairs(params: dict[str, Any]) -> dict[str, tuple[str, int]]:
        """The seed pairs in training order, by group name ("<distribution>_<seed>"): per
        distribution (subset, then permutation) and seed, the pair's (distribution, seed)."""
        return {f"{dist}_{SEEDS + i}": (dist, SEEDS + i)
                for dist in DISTRIBUTIONS for i in range(params["seeds"])}

    def specs(self, params: dict[str, Any]) -> dict[str, list[RunSpec]]:
        """One group per seed pair (:meth:`pairs`): the normal run, then the frozen-uniform
        run, of the same seed and so the same evaluation batch."""
        uniform = params | {"steps": params["uniform_steps"]}
        vocab = {"subset": params["subset_V"], "permutation": params["L"]}
        return {name: [copy_spec(params, dist, vocab[dist], seed, record_probe=True),
                       copy_spec(uniform, dist, vocab[dist], seed, attention="uniform",
                                 record_probe=True)]
                for name, (dist, seed) in self.pairs(params).items()}

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        results = self.results_for(params, results)
        pairs = [results[name] for name in self.pairs(params)]  # (normal, frozen uniform)
        rows: list[dict[str, Any]] = []
        for normal, uniform in pairs:
            learned = (not normal.diverged and not uniform.diverged
                       and normal.first_step_reaching(SUCCESS) is not None)
            row: dict[str, Any] = {"distribution": copy_task(normal.spec).distribution,
                                   "seed": normal.spec.seed, "learned": learned}
            if learned:
                argmax = normal.final["attn_argmax"]
                a = agreement(argmax, uniform.final["ktiw_probe"])
                base = shuffled_agreement(argmax, uniform.final["ktiw_probe"], normal.spec.seed)
                row |= {"agreement": a, "baseline": base, "excess": a - base,
                        "agreement_normal": agreement(argmax, normal.final["ktiw_probe"]),
                        "uniform_probe_acc": float(uniform.metric("ktiw_acc")[-1])}
            rows.append(row)
        subset = [r for r in rows if r["distribution"] == "subset" and r["learned"]]
        excess = [r["excess"] for r in subset]
        verdict, reason, text, p = decide_agreement(excess)
        perm = [r["excess"] for r in rows if r["distribution"] == "permutation" and r["learned"]]
        xi, probe_acc = {}, {}
        for dist in ("subset", "permutation"):
            normals = [n for (n, _), row in zip(pairs, rows, strict=True)
                       if row["distribution"] == dist and row["learned"]]
            probe = [row["uniform_probe_acc"] for row in rows
                     if row["distribution"] == dist and row["learned"]]
            if normals:
                probe_acc[dist] = float(np.mean(probe))
                xi[dist] = {"xi": _xi(normals, float(np.mean(probe))),
                            "xi_star": float(np.mean([n.metric("acc").max() for n in normals]))}
        ci = (tuple(float(x) for x in stats.t.interval(0.95, len(excess) - 1, np.mean(excess),
                                                       stats.sem(excess)))
              if len(excess) >= 2 and np.ptp(excess) > 0 else None)
        return Assessment(
            verdict=verdict, reason=reason, p_value=p if subset else None,
            theory=f"A - baseline >= {MIN_GAP} on subsets",
            empirical=Measurement(float(np.mean(excess)) if excess else None, ci=ci,
                                  confidence=0.95 if ci else None,
                                  quantity="mean excess of A(alpha, beta^uf) over its baseline",
                                  at="subset copying",
                                  extras={"permutation_excess": float(np.mean(perm)) if perm
                                          else None}),
            statistic=(f"{len(subset)} subset and {len(perm)} permutation pairs whose normal "
                       f"run learned ({scale_text(params)}; uniform runs "
                       f"{params['uniform_steps']} steps); k = {top_k(params['L'] + 1)} of "
                       f"S = {params['L'] + 1} positions"),
            tolerance=Tolerance("the smallest excess that matters, fixed before any decision "
                                "run", {"min_excess": MIN_GAP, "alpha": ALPHA, "beta": BETA}),
            explanation=(text[:1].upper() + text[1:] + ". Secondary: "
                         + _secondary(perm, xi, probe_acc)),
            n_seeds=len(subset) + len(perm),
            details={"pairs": rows, "xi": xi, "uniform_probe_acc": probe_acc})

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        return {"agreement": agreement_figure(assessment.details["pairs"])}


def agreement_figure(pairs: Sequence[dict[str, Any]]) -> Figure:
    """``pairs``: the claim's rows (distribution, seed, learned, agreement, baseline)."""
    fig, axes = new_figure(ncols=2, width=3.6)
    for ax, dist in zip(axes, ("subset", "permutation"), strict=True):
        rows = [p for p in pairs if p["distribution"] == dist and p["learned"]]
        x = range(len(rows))
        ax.bar([i - 0.2 for i in x], [p["agreement"] for p in rows], width=0.4,
               color=PALETTE["blue"], label="A(alpha, beta^uf)")
        ax.bar([i + 0.2 for i in x], [p["baseline"] for p in rows], width=0.4,
               color=PALETTE["grey"], label="shuffled baseline")
        ax.set_xticks(list(x), [str(p["seed"]) for p in rows])
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("seed pair")
        ax.set_title(f"{dist} ({len(rows)} pairs learned)")
    axes[0].set_ylabel("agreement (top-5% match)")
    axes[0].legend(fontsize=7)
    return fig
