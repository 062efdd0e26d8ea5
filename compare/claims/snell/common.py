"""What the Snell claims share: the copying configurations of each profile (so that claims
reading the same runs share them through the cache), the success criterion, and the two
decision rules used by several claims."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from attnverify.compare.claim import Verdict
from attnverify.compare.space import Dimension
from attnverify.compare.stats import binomial_ci
from attnverify.empirics import CopyTask, RunResult, RunSpec, Seq2SeqConfig

PAPER_COPYING = "H = 256, V = L = 40 and 40 of 60, batch 128, Adam 1e-3, 200 steps, 20 seeds"

COPYING: dict[str, dict[str, Any]] = {
    # smoke: wiring only; quick: L = 20 and H = 64, the smallest scale at which permutations
    # cannot be solved by a non-aligned shortcut (snell2021.md §9.2); full: the paper (§1.6)
    "smoke": {"hidden": 48, "L": 16, "subset_V": 24, "batch_size": 64, "steps": 400,
              "eval_every": 25, "eval_size": 64, "seeds": 3},
    "quick": {"hidden": 64, "L": 20, "subset_V": 30, "batch_size": 64, "steps": 500,
              "eval_every": 25, "eval_size": 100, "seeds": 12},
    "full": {"hidden": 256, "L": 40, "subset_V": 60, "batch_size": 128, "steps": 200,
             "eval_every": 10, "eval_size": 50, "seeds": 20},
}

SUCCESS = {"acc": 0.95, "attn_acc_best_offset": 0.9}
"""A seed has learned to copy when, at one evaluation, teacher-forced token accuracy >= 0.95
(the official threshold, multihead.py ``can_learn``, read inclusively) and its attention is
aligned:
argmax at t, or consistently at t - 1 or t + 1 (the off-by-one alignments a unidirectional
encoder produces, §3.4), for >= 90% of word steps -- so that a non-aligned shortcut (an EOS or
diffuse band solution, snell2021.md §9.2) does not count; chance is 1/S. A diverged run never
succeeds."""

SUCCESS_ACC_ONLY = {"acc": 0.95}
"""Token accuracy alone, for the multi-head model's direct protocol (its §5 protocol counts
success exactly as the official outputs do; see its claim)."""


def copy_spec(params: dict[str, Any], distribution: str, vocab: int, seed: int,
              **model: Any) -> RunSpec:
    """A copying run at the scale of ``params`` (a COPYING entry, possibly overridden)."""
    return RunSpec(task=CopyTask(distribution, vocab, params["L"]),
                   model=Seq2SeqConfig(hidden=params["hidden"], **model),
                   steps=params["steps"], batch_size=params["batch_size"],
                   eval_every=params["eval_every"], eval_size=params["eval_size"], seed=seed)


LENGTH_SPACE = {
    # shortest first (cheapest): a counterexample shrinks toward the smallest sequence length
    # at which the claim fails (pitfall §9.2: short permutations can be solved through EOS)
    "L": Dimension("sequence length L (permutations of L tokens; subsets of L of subset_V)",
                   low=4, high=16),
}
"""The parameter space of the copying claims; subset_V >= 16 at every profile."""


def scale_text(params: dict[str, Any]) -> str:
    """The scale of a copying experiment in words, for statistics lines."""
    return (f"H={params['hidden']}, L={params['L']}, batch {params['batch_size']}, "
            f"{params['steps']} steps, {params['seeds']} seeds")


def success_steps(results: list[RunResult],
                  criterion: dict[str, float] = SUCCESS) -> list[int | None]:
    return [r.first_step_reaching(criterion) for r in results]


def every_seed_verdict(k: int, n: int, rate: float = 0.9) -> tuple[Verdict, str]:
    """Decide "holds in every seed", read as a per-seed probability p >= ``rate``.

    Exact 95% Clopper-Pearson interval [lo, hi]: refuted when hi < rate (p >= rate rejected);
    confirmed only when every seed holds (k = n) and lo > 0.5, i.e. n >= 6 (with k = n - 1 a
    true rate of 0.8 would be confirmed about a quarter of the time at n = 12); else
    inconclusive.
    """
    if n == 0:
        return Verdict.INCONCLUSIVE, "no seed qualified, so there is nothing to count"
    lo, hi = binomial_ci(k, n)
    text = f"{k}/{n} seeds (95% CI {lo:.2f}-{hi:.2f})"
    if hi < rate:
        return Verdict.REFUTED, f"{text}: the upper bound is below {rate}"
    if k == n and lo > 0.5:
        return Verdict.CONFIRMED, f"{text}: every seed, and the lower bound excludes a minority"
    return Verdict.INCONCLUSIVE, f"{text}: p >= {rate} is not rejected, but not every seed " \
                                 f"holds or the seeds are too few for a lower bound above 0.5"


def compare_groups(steps_a: list[int | None], steps_b: list[int | None],
                   budget: int) -> dict[str, Any]:
    """Is group A (e.g. permutations) learned less often or later than group B (e.g. subset)?

    Two one-sided tests, each at 0.025 (Bonferroni over the pair): Fisher's exact test on the
    success counts, and the Mann-Whitney U test on steps-to-success with failures ranked
    after every success (censored at the budget). Returns p-values in both directions.
    """
    def times(steps: list[int | None]) -> np.ndarray:
        return np.array([budget + 1 if s is None else s for s in steps], dtype=float)

    ok_a = sum(s is not None for s in steps_a)
    ok_b = sum(s is not None for s in steps_b)
    table = [[ok_a, len(steps_a) - ok_a], [ok_b, len(steps_b) - ok_b]]
    ta, tb = times(steps_a), times(steps_b)
    same = np.all(ta == ta[0]) and np.all(tb == ta[0])

    def mw(alternative: str) -> float:
        return 1.0 if same else float(stats.mannwhitneyu(ta, tb, alternative=alternative).pvalue)

    return {
        "successes": [ok_a, ok_b], "n": [len(steps_a), len(steps_b)],
        "median_steps": [float(np.median(ta)), float(np.median(tb))],
        "fisher_p_a_worse": float(stats.fisher_exact(table, alternative="less").pvalue),
        "fisher_p_a_better": float(stats.fisher_exact(table, alternative="greater").pvalue),
        "mannwhitney_p_a_slower": mw("greater"),
        "mannwhitney_p_a_faster": mw("less"),
    }


def group_test_text(cmp: dict[str, Any], subject: str, alpha: float = 0.025) -> str:
    """The four one-sided p-values of :func:`compare_groups` for the explanation, and why
    :func:`group_verdict` is inconclusive when it is."""
    text = (f"One-sided p ({subject} worse): Fisher {cmp['fisher_p_a_worse']:.3g}, Mann-Whitney "
            f"{cmp['mannwhitney_p_a_slower']:.3g}; ({subject} better): Fisher "
            f"{cmp['fisher_p_a_better']:.3g}, Mann-Whitney {cmp['mannwhitney_p_a_faster']:.3g}.")
    if group_verdict(cmp, alpha) is Verdict.INCONCLUSIVE:
        text += (f" None of the four one-sided p-values is below {alpha} (each test's level, "
                 f"Bonferroni over Fisher and Mann-Whitney): no significant difference either "
                 f"way.")
    worse, better = _significant_directions(cmp, alpha)
    if worse and better:
        text += (f" The tests point in opposite directions (each below {alpha}): {subject} "
                 f"is worse by one and better by the other. The verdict follows the "
                 f"'worse' direction, which is checked first.")
    return text


def group_verdict(cmp: dict[str, Any], alpha: float = 0.025) -> Verdict:
    """Confirmed when A is significantly worse (fewer successes or slower); refuted when A is
    significantly better; inconclusive otherwise."""
    worse, better = _significant_directions(cmp, alpha)
    if worse:
        return Verdict.CONFIRMED
    if better:
        return Verdict.REFUTED
    return Verdict.INCONCLUSIVE


def _significant_directions(cmp: dict[str, Any], alpha: float) -> tuple[bool, bool]:
    """(A significantly worse, A significantly better) by either test of :func:`compare_groups`."""
    return (min(cmp["fisher_p_a_worse"], cmp["mannwhitney_p_a_slower"]) < alpha,
            min(cmp["fisher_p_a_better"], cmp["mannwhitney_p_a_faster"]) < alpha)
