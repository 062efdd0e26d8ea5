"""The protocols of the retrieval claims of :mod:`attnverify.compare.claims.musat.training`
(docs/methodology.md, "Protocols")."""

from __future__ import annotations

from attnverify.compare.claims.musat.bounds import FROZEN
from attnverify.compare.protocol import Protocol, SeedBlock, SeedUse

LEARNED = 0.9
"""A query (or a depth) counts as learned at accuracy >= 0.9 (the example threshold of the
reconstruction's test plan, docs/methodology.md#starting-values)."""
NEAR_CHANCE_ALPHA = 0.025
"""'Near chance': the final query accuracy is not above 1/K at one-sided exact binomial
p < 0.025 over the evaluation examples (a model that knows the roots but not the chain reads
1/K, and below the bound Theorem 1 leaves it no more). It was 'at most 1/K + 0.1' (the starting
value of delta in the reconstruction's test plan) until 2026-11-27, before any run of a cell
it decides: that counted seeds significantly above 1/K, which contradict the theorem, as
support (docs/methodology.md)."""
HEAD_THRESHOLD = 0.5
"""A head has emerged when its best structural score is >= 0.5 for 3 evaluations in a row."""
DECISION_SEEDS = 200
"""The first seed of the retrieval claims' decision block (moved from 100 on 2026-11-26, when
two runs of the full profile's deep cell chose that profile's evaluation grid); seeds 0 to 4
trained the cells, the roles and the rules before they were frozen and decide nothing."""
SEEDS = (SeedBlock(SeedUse.DECISION, DECISION_SEEDS,
                   note="the retrieval cells' runs (deep, shallow, the control and the depth "
                        "step's cells), shared by the retrieval claims"),
         SeedBlock(SeedUse.CALIBRATION, 100,
                   note="full, deep IC cell, seeds 100 and 101 evaluated every 500 steps: "
                        "every depth crossed 0.9 between steps 500 and 2000, which chose the "
                        "full profile's 100-step evaluations. Seeds 100 to 102 at smoke and "
                        "quick decided until the block moved; they stay on record and decide "
                        "nothing"),
         SeedBlock(SeedUse.DEVELOPMENT, 0,
                   note="the runs the cells, the head roles and the rules were chosen on"))
FINAL = ("the query accuracy of the last evaluation (step 300, 4000, 24000 by profile) on "
         "fresh examples (256, 512, 1024); learned: >= 0.9")
BUDGET = ("a short step budget (quick: 4000 steps at batch 64; the paper: 24k at batch 128): "
          "'not learned' means not learned in this budget")

SUFFICIENT_DESIGN = {"p0": 0.5, "p1": 0.9, "alpha": 0.025, "beta": 0.10}
"""H0: a sufficiently deep model learns in at most half of the seeds; H1: in 90% or more."""
SHALLOW_DESIGN = {"p0": 0.5, "p1": 0.95, "alpha": 0.025, "beta": 0.10}
"""Below the bound (compare.claims.musat.below_bound): H0, a model that learns the statement
depths its layers allow stays near chance in at most half of such seeds; H1, it stays near
chance in 95% of the seeds or more."""
IC_MIN_GAP = 0.5
"""The smallest gap in success rate (IC minus query-only) that reads as 'query-only fails
where IC succeeds'."""


SHALLOW_PROTOCOL = Protocol(
    endpoint=("whether a model with min_layers(D) - 1 >= 2 layers, trained with the implicit "
              "curriculum, learns the statement depths its layers allow under both bounds "
              "(depths 1 and 2 for 2 layers, final accuracy >= 0.9 at each) and yet stays "
              "near chance on the query (final accuracy not above 1/K at one-sided exact "
              "binomial p < 0.025 over the evaluation examples), per seed"),
    unit=("per-seed outcome: supports (learned the allowed depths, near chance), contradicts "
          "(above chance, whatever it learned) or untrained (did not learn the allowed "
          "depths, near chance: evidence neither way); the shallow cell's seeds must all "
          "finish: a diverged run makes the claim not testable"),
    h0=("among seeds that learn the allowed depths, the shallow model stays near chance in at "
        "most half"),
    h1="it stays near chance in 95% of the seeds or more (trained or not)",
    test=("group-sequential exact binomial design, O'Brien-Fleming-type spending, binding "
          "futility; looks at 8 and 12 seeds (full), trained only after the control has "
          "learned in half of its seeds"),
    confirm=("the supporting seeds reach a look's efficacy boundary (8 of 8, or 10 of 12, at "
             "full); an untrained seed counts as no support"),
    refute=("the supporting seeds fall to a look's futility boundary (5 or fewer of 8, or 9 "
            "or fewer of 12) and so do the seeds that do not contradict (untrained ones "
            "counted as support); a futility stop that only the untrained seeds cause is "
            "'not testable at this budget'"),
    alpha=0.025, beta=0.10, readout=FINAL, frozen="2026-11-28",
    error_rates=("confirmed at most 0.025 under H0 (a per-seed support rate is at most the "
                 "near-chance rate among trained seeds); refuted under H1 at most the sum over "
                 "looks of P(Bin(n_k, 0.95) <= futility_k), 0.025 at full; untrained seeds "
                 "cost power, never error rate (derived here; compare.claims.musat."
                 "below_bound)"),
    precondition=("the shallow cell has at least 2 layers (one layer cannot find the roots "
                  "under any mechanism, so its failure says nothing about depth), fewer than "
                  "min_layers(D), and a control with the refined bound + 1 layers at the same "
                  "D, distractors and budget learns (final query >= 0.9) in at least half of "
                  "its seeds (whether the shallow seeds learned the statements their layers "
                  "allow is part of each seed's outcome, not a gate)"),
    secondary=("the mean final query accuracy of the shallow and control cells",
               "the deep and query-only cells (heat map only)",
               "for one layer, the value-slot level 1/(K D + distractors) (derived here)"),
    seeds=SEEDS,
    weaknesses=("'near chance' is an upper limit: an accuracy far below 1/K also counts",
                "a seed exactly at 1/K counts as near chance with probability 0.975, so H1's "
                "95% is reachable; one at 1/K + 0.03 (1024 examples) already counts as above",
                "the control gate is a point estimate: 3 of 5 control seeds pass it, and 5 "
                "seeds cannot show the control learns in half of all seeds (the 95% lower "
                "bound at 5 of 5 is 0.48), so where the budget rather than the depth makes "
                "the shallow cell fail, the gate passes 32% of the time at a control rate of "
                "0.4 and the confirmation then says 'fails at this budget'", BUDGET,
                "at quick the shallow cell is one layer at D = 2: not testable there",
                "one cell (D = 5, 2 layers, 8 distractors at full): a confirmation says that "
                "these models stay near chance, not where the bound steps",
                "the shallow cell shares its first seeds (data stream, first layers' "
                "initialisation) with its control, and the gate selects budgets where the "
                "control learns: this makes the shallow seeds likelier to learn, both to "
                "learn the allowed depths (more seeds can support) and the query (against a "
                "confirmation)",
                "untrained seeds count as no support: at a 95% near-chance rate among "
                "trained seeds the power is 0.98 with every seed trained, 0.90 with 5% "
                "untrained, 0.43 with 20% (exact, compare.sequential); where many shallow "
                "seeds learn nothing at this budget, the claim can neither confirm nor "
                "refute"))


SUFFICIENT_PROTOCOL = Protocol(
    endpoint=("whether the query is learned (final accuracy >= 0.9) under the implicit "
              "curriculum with at least the refined bound + 1 layers (the 'deep' cell), per "
              "seed"),
    unit="per-seed success indicator (a diverged run is a failed seed)",
    h0="a seed learns with probability <= 0.5", h1="it learns with probability >= 0.9",
    test=("group-sequential exact binomial design, O'Brien-Fleming-type spending, binding "
          "futility; looks at 5, 10 and 15 seeds (full); quick's single look at 3 seeds "
          "cannot confirm (the full profile decides)"),
    confirm="the count of learned seeds reaches a look's efficacy boundary",
    refute="it falls to a look's futility boundary (p >= 0.9 rejected)",
    alpha=0.025, beta=0.10, readout=FINAL, frozen=FROZEN,
    precondition="the cell has at least the refined bound + 1 layers",
    secondary=("the mean final query accuracy", "the depth-D statement accuracy of the seeds "
               "that did not learn (the query plateau)"),
    seeds=SEEDS,
    weaknesses=("one cell per profile: 'enough layers' is tested at a single D", BUDGET,
                "quick cannot confirm: 3 seeds of about 85 s each are what the quick budget "
                "affords"))


IC_PROTOCOL = Protocol(
    endpoint=("the success rate (final query >= 0.9) under the implicit curriculum against "
              "query-only supervision, at the same cell, size and budget (the 'deep' cell)"),
    unit=("per-seed success indicator per arm (a diverged IC run is a failed seed; a diverged "
          "query-only run is left out: a crash is no evidence that query-only fails)"),
    h0="IC succeeds no more often than query-only",
    h1=f"IC succeeds more often by at least {IC_MIN_GAP} in rate",
    test=("exact unconditional test of the difference of two rates (Suissa-Shuster, "
          "supremum over the nuisance rate)"),
    confirm="p (IC rate - query-only rate <= 0) < 0.025",
    refute=f"p (IC rate - query-only rate >= {IC_MIN_GAP}) < 0.10",
    alpha=0.025, beta=0.10, readout=FINAL, frozen=FROZEN,
    precondition="IC learns in at least half of its seeds (else 'fails where IC succeeds' "
                 "cannot be judged)",
    secondary=("the paired difference of final query accuracies (mean)",
               "query accuracy curves of both arms (figure)"),
    seeds=SEEDS,
    weaknesses=("3 seeds per arm at quick: only 3 of 3 against 0 of 3 can confirm", BUDGET,
                "'fails' is 'not learned' (final query below 0.9), not 'near chance': a "
                "query-only run at 0.85 counts as failing (the explanation lists the "
                "query-only accuracies)",
                "the precondition is measured on the IC runs that also decide: where IC "
                "learns in fewer than half, a refutation the counts would give is reported "
                "as not testable"))


ORDER_PROTOCOL = Protocol(
    endpoint=("the order in which the per-depth accuracies of depths >= 1 first reach 0.9 under "
              "the implicit curriculum (the 'deep' cell)"),
    unit="per seed: the first crossing step of each learned depth >= 1",
    h0="some deeper depth is learned before a shallower one",
    h1="in every seed the learned depths >= 1 cross in increasing order",
    test="per-seed check of the crossing steps; no statistical test",
    confirm=("every seed learns every depth 1..D, each at a later evaluation than the depth "
             "before"),
    refute=("a seed in which a deeper depth first reaches 0.9 at an earlier evaluation than a "
            "shallower one (a depth never learned counts as later than any learned one)"),
    alpha=None, beta=None, frozen=FROZEN,
    error_rates=("a deterministic rule without an error rate; a confirmation needs every seed "
                 "to order all D >= 3 depths, which a random order passes with probability "
                 "1/D! (1/6 at D = 3) per seed"),
    readout="the first evaluation at which acc_depth{k} >= 0.9 (no hold), k = 1..D",
    precondition=("D >= 3 (an order of depths beyond a single pair); two depths crossing at "
                  "the same evaluation are a tie and depths not all learned leave the order "
                  "incomplete, both inconclusive (budget reached)"),
    secondary=("depth 0's crossing step (the token itself, learned at once)",
               "fraction of seeds in order"),
    seeds=SEEDS,
    weaknesses=("no statistical test: every seed ordered confirms, one inversion refutes",
                "a crossing is one evaluation at >= 0.9 (no hold), so a transient spike can "
                "make an inversion",
                "0.9 is the spec's example threshold, not calibrated",
                "at quick D = 2: not testable there"))


HEADS_PROTOCOL = Protocol(
    endpoint=("the order of the first emergence of (layer, role) head events under the "
              "implicit curriculum, across seeds (the 'deep' cell)"),
    unit=("per-seed event steps: a head emerges when its best structural score (6 roles, "
          "frozen before the decision seeds) stays >= 0.5 for 3 evaluations; one event per "
          "(layer, role)"),
    h0="roles emerge in no consistent order across seeds, or together",
    h1=("in every seed roles emerge at distinct evaluations, and no two seeds order two "
        "shared roles oppositely by more than one evaluation interval"),
    test="deterministic checks on the emergence steps; no statistical test",
    confirm=("every seed has an emerged role; every pair of seeds shares two (layer, role) "
             "events; no order contradiction; every seed's events at distinct evaluations"),
    refute=("two seeds order two shared (layer, role) events oppositely, each by more than one "
            "evaluation interval"),
    alpha=None, beta=None, frozen=FROZEN,
    error_rates=("deterministic checks on 3 to 15 seeds without an error rate; the thresholds "
                 "(score 0.5, 3 evaluations) are the project's, not calibrated"),
    readout="structural head scores at every evaluation",
    precondition=("a head emerges in every seed that did not diverge, and every pair of seeds "
                  "shares two (layer, role) events to order"),
    secondary=("single-head zero-ablation at the end: the largest per-depth accuracy drop "
               "(reported, not required)", "each seed's best structural score",
               "attention maps of the first seed"),
    seeds=SEEDS,
    weaknesses=("no statistical test and no error rate: a confirmation rests on the shared "
                "roles of each pair of seeds agreeing, which with two shared roles a random "
                "order does half the time per pair; one opposite order refutes",
                "events in the same evaluation make 'one at a time' undecidable there "
                "(inconclusive), not refuted",
                "the paper judged emergence by inspection; the scores, roles and thresholds "
                "are this project's reconstruction [R]"))
