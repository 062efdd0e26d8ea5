"""The runs of the §5 protocol of Snell et al. (the official ``multihead.py``) in stages: the
candidate heads, their classification, and the last stage the claim trains from the heads it
keeps (:class:`Section5Stages`, one per claim).

One base initialisation is shared by every model (``base_seed``); candidate heads, each drawn
from its own seed, are classified by training the single-head model with data seeds 0..2:
*good* when every seed reaches token accuracy > 0.95 at an evaluation, *bad* when every seed
ends below 0.6, else discarded; the first good and the first bad heads a claim needs, in the
order the candidates are drawn, are kept (or as many as ``max_candidates`` candidates give).

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

Each stage names its groups of runs with its number k (1 for the first): ``candidates_k`` (new
candidates, data seed 0), ``good_seeds_k`` and ``bad_seeds_k`` (the next data seed of the
candidates that can still be one of the good, or bad, heads needed), in that order, and the
last stage one group (``combos_k``, ``bundles_k``: the claim's). The claims read the runs by
what they are (head count, head seeds, data seed), not by group or position.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from attnverify.compare.claims.snell.common import copy_spec, seq2seq_model
from attnverify.compare.claims.snell.section5.success import GOOD_ACC, HeadState, head_state
from attnverify.compare.groups import GroupedResults
from attnverify.compare.stats import binomial_ci
from attnverify.empirics import RunResult, RunSpec

CANDIDATE_SEEDS = 1_000_000
"""Head seeds of the candidates to classify: CANDIDATE_SEEDS + i."""
RANDOM_SEEDS = 2_000_000
"""Head seeds of the unclassified random heads: RANDOM_SEEDS + j (never a candidate)."""

Runs = dict[str, list[RunSpec]]
LastStage = Callable[[dict[str, Any], list[int], list[int]], list[RunSpec]]
"""What a claim trains from the heads it keeps: (params, good head seeds, bad head seeds) ->
its runs."""


def multihead_spec(params: dict[str, Any], seed: int, heads: int,
                   head_seeds: tuple[int, ...] = (), base: bool = False) -> RunSpec:
    """A ``heads``-head GRU model on the permutation task with data seed ``seed``; with
    ``base``, on the shared base initialisation with the heads of ``head_seeds`` (both
    protocols' models)."""
    extra: dict[str, Any] = {"heads": heads, "cell": "gru", "shared_embedding": False}
    if base:
        extra |= {"base_seed": params["base_seed"], "head_seeds": head_seeds}
    return copy_spec(params, "permutation", params["L"], seed, **extra)


def candidate_spec(params: dict[str, Any], i: int, seed: int) -> RunSpec:
    """Candidate i's single-head run with data seed ``seed``. It stops at the first
    evaluation above 0.95, as the official loop does when ``can_learn`` returns "good"
    there: the label is ``can_learn``'s and the step of success that the decision reads
    off these runs is the whole run's (a "bad" label needs the last evaluation, which a
    run that never passes 0.95 reaches). One difference from training every step, the
    official loop's too: a run that would diverge after passing 0.95 is good, not
    diverged."""
    spec = multihead_spec(params, seed, 1, (CANDIDATE_SEEDS + i,), base=True)
    return replace(spec, stop_when=("acc", GOOD_ACC))


def first_seeds(params: dict[str, Any], candidates: range) -> list[RunSpec]:
    """Data seed 0 of each of ``candidates``."""
    return [candidate_spec(params, i, 0) for i in candidates]


def candidate_states(params: dict[str, Any],
                     results: Sequence[RunResult]) -> dict[int, HeadState]:
    """Candidate index -> its :class:`HeadState`, in candidate order, from the single-head
    runs (each candidate's runs taken in data-seed order)."""
    runs: dict[int, list[RunResult]] = {}
    for r in sorted((r for r in results if seq2seq_model(r.spec).heads == 1),
                    key=lambda r: (seq2seq_model(r.spec).head_seeds[0], r.spec.seed)):
        runs.setdefault(seq2seq_model(r.spec).head_seeds[0] - CANDIDATE_SEEDS, []).append(r)
    return {i: head_state(rs, params["classify_seeds"]) for i, rs in sorted(runs.items())}


def stage_number(results: GroupedResults) -> int:
    """The number of the next stage: one more than the highest stage the groups of
    ``results`` name (their names end in ``_k``, module docstring)."""
    return 1 + max((int(name.rsplit("_", 1)[1]) for name in results.groups()), default=0)


def single_heads(results: Sequence[RunResult]) -> list[RunResult]:
    """The single-head runs, one per candidate head: its data-seed-0 run (the bundles' data
    seed in §5; its other seeds share its initialisation and served only to classify it)."""
    return [r for r in results if seq2seq_model(r.spec).heads == 1 and r.spec.seed == 0]


def bundle_names(heads: int) -> dict[str, str]:
    """The bundle kinds of §5 in words (8 heads: 8 random, 7 bad + 1 good, 8 bad)."""
    return {"random": f"{heads} random", "bad + 1 good": f"{heads - 1} bad + 1 good",
            "bad": f"{heads} bad"}


def head_counts(states: dict[int, HeadState], kept_good: list[int],
                kept_bad: list[int]) -> dict[str, int]:
    """The candidates drawn, the heads kept, discarded and not needed, and the single-head
    runs trained."""
    return {"candidates": len(states), "good": len(kept_good), "bad": len(kept_bad),
            "discarded": sum(st.label is None for st in states.values()),
            "not_needed": sum(st.label is not None for st in states.values())
            - len(kept_good) - len(kept_bad),
            "single_head_runs": sum(st.seeds_run for st in states.values())}


@dataclass(frozen=True)
class Section5Stages:
    """One claim's §5 stages: how many bad heads it keeps (the parameter ``needed_bad_param``
    names; ``needed`` good heads for every claim) and what it trains from the kept heads
    (``last_stage``, its runs named ``<last_group>_k``)."""

    needed_bad_param: str
    last_group: str
    last_stage: LastStage

    def needed(self, params: dict[str, Any]) -> dict[str, int]:
        """How many heads of each label the claim keeps."""
        return {"good": params["needed"], "bad": params[self.needed_bad_param]}

    def kept(self, params: dict[str, Any],
             states: dict[int, HeadState]) -> tuple[list[int], list[int]]:
        """Head seeds of the first good and first bad candidates (as many as :meth:`needed`
        says) that are classified to the end."""
        needed = self.needed(params)

        def first(label: str) -> list[int]:
            return [CANDIDATE_SEEDS + i for i, st in states.items()
                    if st.complete and st.label == label][:needed[label]]

        return first("good"), first("bad")

    def first_stage(self, params: dict[str, Any]) -> Runs:
        """Data seed 0 of the first ``stage_candidates`` candidates."""
        return {"candidates_1": first_seeds(params, range(min(params["stage_candidates"],
                                                              params["max_candidates"])))}

    def followup(self, params: dict[str, Any], results: GroupedResults) -> Runs:
        """The next seeds of the candidates that can still fill a list, new candidates while a
        list cannot be filled otherwise (module docstring), then the last stage; nothing once
        a multi-head run is in ``results``."""
        if any(seq2seq_model(r.spec).heads > 1 for r in results):
            return {}
        stage = stage_number(results)
        states = candidate_states(params, results)
        needed, groups = self.needed(params), {}
        short = False
        for label in ("good", "bad"):
            possible = [i for i, st in states.items() if st.label == label]
            short |= len(possible) < needed[label]
            groups[f"{label}_seeds_{stage}"] = [
                candidate_spec(params, i, states[i].seeds_run)
                for i in possible[:needed[label]] if not states[i].complete]
        n = len(states)
        if short and n < params["max_candidates"]:
            groups[f"candidates_{stage}"] = first_seeds(params, range(
                n, min(n + params["stage_candidates"], params["max_candidates"])))
        groups = {name: runs for name, runs in groups.items() if runs}
        if groups:
            return groups
        last = self.last_stage(params, *self.kept(params, states))
        return {f"{self.last_group}_{stage}": last} if last else {}

    def note(self, params: dict[str, Any], results: Sequence[RunResult]) -> str:
        """The candidates drawn so far and the heads kept (the stage note)."""
        states = candidate_states(params, results)
        counts = head_counts(states, *self.kept(params, states))
        needed = self.needed(params)
        return (f"{counts['candidates']} of at most {params['max_candidates']} candidates "
                f"drawn, {counts['single_head_runs']} single-head runs; kept {counts['good']} "
                f"of {needed['good']} good and {counts['bad']} of {needed['bad']} bad")

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
