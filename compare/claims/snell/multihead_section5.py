"""The official multi-head protocol of Snell et al. (``multihead.py`` of their code), the
``section5`` protocol of ``snell.multihead_rescues_permutations``
(:mod:`~attnverify.compare.claims.snell.multihead`).

One base initialisation is shared by every model (``base_seed``); candidate heads, each drawn
from its own seed, are classified by training the single-head model with data seeds 0..2:
*good* when every seed reaches token accuracy > 0.95 at an evaluation, *bad* when every seed
ends below 0.6, else discarded; the first ``needed`` good and the first ``needed`` bad heads, in
the order the candidates are drawn, are kept (or as many as ``max_candidates`` candidates give).
Then, for idx = 0..combos-1, three ``heads``-head models are trained once (data seed 0): 8 bad
heads, 7 bad + 1 good, and 8 of ``random_heads`` unclassified heads, drawn with Python's
``random.Random(3 idx + g)`` (the official code seeds ``random`` with 3 idx + g too, but
shuffles its lists in place, one shuffle after another: other sets, drawn from the same
distribution, uniform subsets; a set of heads drawn twice is trained once: the mean over heads
does not depend on their order).

The classification runs in stages (``Claim.followup``) and lazily: a candidate's data seed k + 1
is trained only when its seeds 0..k agree on a label that is still needed, i.e. the candidate
is among the first ``needed`` candidates that can still turn out good (or bad). A seed that
says neither, or disagrees, discards the candidate at once; a candidate whose first seed says
"good" is not trained further once ``needed`` earlier candidates are known good. Stages of
``stage_candidates`` new candidates (data seed 0) are drawn while fewer than ``needed``
candidates can still be good (or bad). The heads kept are exactly those of the official
sequential loop (classify candidate after candidate with every seed, keep a head while its
list is not full): a kept head is the n-th candidate, in order, that all seeds call good,
and every candidate before it was resolved far enough to rule the label out or in
(``tests/test_multihead_protocol.py`` checks this on random label tables). What changes is
the cost: runs that cannot change the outcome are not trained.

Success, as the official outputs count it: token accuracy > 0.95 by step 190 (the evaluations
before the last step).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from attnverify.compare.claim import Assessment
from attnverify.compare.claims.snell.common import copy_spec, seq2seq_model
from attnverify.compare.claims.snell.multihead_decision import CountDecision
from attnverify.compare.claims.snell.multihead_figures import section5_curves, section5_figure
from attnverify.compare.claims.snell.multihead_success import (
    CANDIDATE_SEEDS,
    GOOD_ACC,
    RANDOM_SEEDS,
    HeadState,
    head_state,
    official_success_steps,
    section5_success_text,
)
from attnverify.compare.stats import binomial_ci, compare_groups
from attnverify.empirics import RunResult, RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def multihead_spec(params: dict[str, Any], seed: int, heads: int,
                   head_seeds: tuple[int, ...] = (), base: bool = False) -> RunSpec:
    """A ``heads``-head GRU model on the permutation task with data seed ``seed``; with
    ``base``, on the shared base initialisation with the heads of ``head_seeds`` (both
    protocols' models)."""
    extra: dict[str, Any] = {"heads": heads, "cell": "gru", "shared_embedding": False}
    if base:
        extra |= {"base_seed": params["base_seed"], "head_seeds": head_seeds}
    return copy_spec(params, "permutation", params["L"], seed, **extra)


class Section5Protocol(CountDecision):
    """The runs and the assessment of the §5 protocol (module docstring), mixed into the claim.
    The claim supplies the decision on the success counts (``_decide``), which both protocols
    share."""

    # -- runs --------------------------------------------------------------------------------
    def _section5_specs(self, params: dict[str, Any]) -> list[RunSpec]:
        """The first stage: data seed 0 of the first ``stage_candidates`` candidates."""
        return self._first_seeds(params, range(min(params["stage_candidates"],
                                                    params["max_candidates"])))

    def _candidate(self, params: dict[str, Any], i: int, seed: int) -> RunSpec:
        """Candidate i's single-head run with data seed ``seed``. It stops at the first
        evaluation above 0.95, as the official loop does when ``can_learn`` returns "good"
        there: the label is ``can_learn``'s and the step of success that the decision reads
        off these runs is the whole run's (a "bad" label needs the last evaluation, which a
        run that never passes 0.95 reaches). One difference from training every step, the
        official loop's too: a run that would diverge after passing 0.95 is good, not
        diverged."""
        spec = multihead_spec(params, seed, 1, (CANDIDATE_SEEDS + i,), base=True)
        return replace(spec, stop_when=("acc", GOOD_ACC))

    def _first_seeds(self, params: dict[str, Any], candidates: range) -> list[RunSpec]:
        return [self._candidate(params, i, 0) for i in candidates]

    def _section5_followup(self, params: dict[str, Any],
                           results: Sequence[RunResult]) -> list[RunSpec]:
        """The next seeds of the candidates that can still fill a list, new candidates while a
        list cannot be filled otherwise, then the combos; nothing once the combos ran."""
        if any(seq2seq_model(r.spec).heads > 1 for r in results):
            return []
        states = self.states(params, results)
        needed, more = self.needed(params), []
        short = False
        for label in ("good", "bad"):
            possible = [i for i, st in states.items() if st.label == label]
            short |= len(possible) < needed[label]
            more += [self._candidate(params, i, states[i].seeds_run)
                     for i in possible[:needed[label]] if not states[i].complete]
        n = len(states)
        if short and n < params["max_candidates"]:
            more += self._first_seeds(params, range(
                n, min(n + params["stage_candidates"], params["max_candidates"])))
        if more:
            return more
        return self._combos(params, *self.kept(params, states))

    def needed(self, params: dict[str, Any]) -> dict[str, int]:
        """How many heads of each label the protocol keeps: ``needed`` of each (§5)."""
        return {"good": params["needed"], "bad": params["needed"]}

    def kept(self, params: dict[str, Any], states: dict[int, HeadState]) -> tuple[list[int],
                                                                                list[int]]:
        """Head seeds of the first good and first bad candidates (as many as :meth:`needed`
        says) that are classified to the end."""
        needed = self.needed(params)

        def first(label: str) -> list[int]:
            return [CANDIDATE_SEEDS + i for i, st in states.items()
                    if st.complete and st.label == label][:needed[label]]

        return first("good"), first("bad")

    def _combos(self, params: dict[str, Any], good: list[int], bad: list[int]) -> list[RunSpec]:
        k = params["heads"]
        pool = [RANDOM_SEEDS + j for j in range(params["random_heads"])]
        out: dict[str, RunSpec] = {}
        for idx in range(params["combos"]):
            groups = []
            if len(bad) >= k:
                groups.append(random.Random(3 * idx).sample(bad, k))
            if len(bad) >= k - 1 and good:
                rng = random.Random(3 * idx + 1)
                groups.append([*rng.sample(bad, k - 1), rng.choice(good)])
            if len(pool) >= k:
                groups.append(random.Random(3 * idx + 2).sample(pool, k))
            for heads in groups:
                # the mean over heads does not depend on their order: one run per set of heads
                spec = multihead_spec(params, 0, k, tuple(sorted(heads)), base=True)
                out.setdefault(spec.key(), spec)
        return list(out.values())

    @staticmethod
    def states(params: dict[str, Any], results: Sequence[RunResult]) -> dict[int, HeadState]:
        """Candidate index -> its :class:`HeadState`, in candidate order, from the single-head
        runs (each candidate's runs taken in data-seed order)."""
        runs: dict[int, list[RunResult]] = {}
        for r in sorted((r for r in results if seq2seq_model(r.spec).heads == 1),
                        key=lambda r: (seq2seq_model(r.spec).head_seeds[0], r.spec.seed)):
            runs.setdefault(seq2seq_model(r.spec).head_seeds[0] - CANDIDATE_SEEDS, []).append(r)
        return {i: head_state(rs, params["classify_seeds"]) for i, rs in sorted(runs.items())}

    @staticmethod
    def _head_counts(states: dict[int, HeadState], kept_good: list[int],
                     kept_bad: list[int]) -> dict[str, int]:
        return {"candidates": len(states), "good": len(kept_good), "bad": len(kept_bad),
                "discarded": sum(st.label is None for st in states.values()),
                "not_needed": sum(st.label is not None for st in states.values())
                - len(kept_good) - len(kept_bad),
                "single_head_runs": sum(st.seeds_run for st in states.values())}

    def _section5_note(self, params: dict[str, Any], results: Sequence[RunResult]) -> str:
        """The candidates drawn so far and the heads kept (the bundles are the last stage)."""
        states = self.states(params, results)
        counts = self._head_counts(states, *self.kept(params, states))
        needed = self.needed(params)
        return (f"{counts['candidates']} of at most {params['max_candidates']} candidates "
                f"drawn, {counts['single_head_runs']} single-head runs; kept {counts['good']} "
                f"of {needed['good']} good and {counts['bad']} of {needed['bad']} bad")

    # -- assessment --------------------------------------------------------------------------
    @staticmethod
    def bundle_names(heads: int) -> dict[str, str]:
        """The bundle kinds of §5 in words (8 heads: 8 random, 7 bad + 1 good, 8 bad)."""
        return {"random": f"{heads} random", "bad + 1 good": f"{heads - 1} bad + 1 good",
                "bad": f"{heads} bad"}

    @staticmethod
    def bundles(results: Sequence[RunResult],
                good: set[int]) -> tuple[list[RunResult], dict[str, list[RunResult]]]:
        """The single-head runs, one per candidate head: its data-seed-0 run (the combos' data
        seed; its other seeds share its initialisation and served only to classify it), and
        the bundles by kind (:meth:`bundle_names`), a bundle with a head of ``good`` being
        "bad + 1 good"."""
        single = [r for r in results if seq2seq_model(r.spec).heads == 1 and r.spec.seed == 0]
        groups: dict[str, list[RunResult]] = {"random": [], "bad + 1 good": [], "bad": []}
        for r in (r for r in results if seq2seq_model(r.spec).heads > 1):
            seeds = seq2seq_model(r.spec).head_seeds
            kind = ("random" if min(seeds) >= RANDOM_SEEDS else
                    "bad + 1 good" if good & set(seeds) else "bad")
            groups[kind].append(r)
        return single, groups

    def _section5_figures(self, params: dict[str, Any],
                          results: Sequence[RunResult]) -> dict[str, Figure]:
        """The success rates of single heads and of each bundle kind, and the bundles'
        curves (:mod:`~attnverify.compare.claims.snell.multihead_figures`)."""
        good = set(self.kept(params, self.states(params, results))[0])
        single, groups = self.bundles(results, good)
        names = self.bundle_names(params["heads"])
        return {"section5": section5_figure(single, groups, names,
                                            section5_success_text(params)),
                "section5_curves": section5_curves(groups, names, good)}

    def _assess_section5(self, params: dict[str, Any],
                         results: Sequence[RunResult]) -> Assessment:
        states = self.states(params, results)
        kept_good, kept_bad = self.kept(params, states)
        single, groups = self.bundles(results, set(kept_good))
        k = params["heads"]
        names = self.bundle_names(k)
        rescue = (compare_groups(official_success_steps(groups["bad"]),
                                 official_success_steps(groups["bad + 1 good"]),
                                 params["steps"])
                  if groups["bad"] and groups["bad + 1 good"] else None)
        counts = self._head_counts(states, kept_good, kept_bad)
        note = (f" Heads: {counts['candidates']} candidates drawn, classified lazily with up "
                f"to {params['classify_seeds']} data seeds ({counts['single_head_runs']} "
                f"single-head runs, each stopped at its first evaluation above 0.95, as "
                f"the official can_learn): {counts['good']} good and {counts['bad']} bad kept "
                f"(the first {params['needed']} of each, in order), {counts['discarded']} "
                f"discarded, {counts['not_needed']} agreeing so far but not needed.")
        if rescue is not None:
            (k_bad, k_good), (n_bad, n_good) = rescue.successes, rescue.n
            note += (f" Reported, not decided on: {names['bad + 1 good']} {k_good}/{n_good} vs "
                     f"{names['bad']} {k_bad}/{n_bad} (one-sided Fisher p, one good head rescues: "
                     f"{rescue.fisher_p_a_worse:.3g}).")
            if len(kept_bad) == k:
                note += (f" With exactly {k} bad heads every {names['bad']} draw is the same set "
                         f"of heads, trained once (data seed 0, like every bundle), so that "
                         f"group is one model (the official loop draws {k} of its "
                         f"{params['needed']} bad heads: mostly different sets, each also "
                         f"trained with data seed 0).")
        else:
            note += (f" Too few heads kept for the rescue comparison: it needs {k} bad heads "
                     f"(for the {names['bad']} bundles) and a good one.")
        note += self.shortfall_note(params, counts)
        note += (f" The random bundles draw {k} of {params['random_heads']} "
                 f"heads, so they share heads: the test treats them as independent, which "
                 f"overstates its significance somewhat.")
        return self._decide(params, single, groups["random"],
                            f"single random heads ({len(single)} runs)",
                            f"{k} random heads ({len(groups['random'])} models)",
                            details={"heads": counts,
                                     "rescue": asdict(rescue) if rescue else None,
                                     "groups": {g: len(v) for g, v in groups.items()}},
                            note=note)

    def shortfall_note(self, params: dict[str, Any], counts: dict[str, int]) -> str:
        """Why a list stayed short: the official loop samples heads until it holds ``needed``
        of each label; ours stops at ``max_candidates``. When a list is short after every
        candidate was drawn, each candidate's membership in it was decided (the lazy
        classification trains every seed of a candidate that can still fill a short list),
        so the label's rate among the candidates is a plain binomial proportion, and
        ``needed / rate`` is about how many candidates the unbounded loop would draw."""
        n, needed_by_label = counts["candidates"], self.needed(params)
        if n < params["max_candidates"]:
            return ""
        parts = []
        for label in ("good", "bad"):
            k, needed = counts[label], needed_by_label[label]
            if k >= needed:
                continue
            lo, hi = binomial_ci(k, n)
            draws = (f"about {needed * n / k:.0f} candidates at this rate" if k else
                     f"more than {needed / hi:.0f} candidates (at the rate's upper bound)")
            parts.append(f"{label} heads (every seed {label}) are rare on this base: {k} of "
                         f"{n} candidates ({k / n:.1%}, 95% CI {lo:.1%} to {hi:.1%}); the "
                         f"official loop, which draws heads until it has {needed}, would need "
                         f"{draws}")
        if not parts:
            return ""
        text = "; ".join(parts)
        return (" " + text[:1].upper() + text[1:] + f". The protocol stops at "
                f"{params['max_candidates']} candidates to bound its cost (up to "
                f"{params['classify_seeds']} single-head runs each).")
