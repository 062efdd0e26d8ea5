"""The protocols of the copying claims of :mod:`attnverify.compare.claims.snell.copying`
(docs/methodology.md, "Protocols")."""

from __future__ import annotations

from attnverify.compare.claims.snell.common import DECISION_SEEDS
from attnverify.compare.protocol import Protocol, SeedBlock, SeedUse

DEVELOPED = "the seeds the rule was developed on, not a fresh block"

PERMUTATION_IS_HARD = Protocol(
    endpoint="steps to success (SUCCESS) of permutation runs against subset runs, a run that "
             "never succeeds censored at the step budget: 'less often or more slowly' is a "
             "later time to success",
    unit="one run per seed and distribution: its step of success or a censored budget",
    h0="permutations learn at the subset's rate or faster (equal or lower survival of "
       "'not yet learned')",
    h1="permutations learn later or never more often than subsets",
    test="one-sided log-rank test on right-censored steps to success (scipy.stats.logrank, "
         "normal approximation)",
    confirm="log-rank p (permutations slower) < 0.025, unless a test is significant the "
            "other way (then inconclusive: conflicting evidence)",
    refute=("log-rank p (permutations faster) < 0.025, unless Fisher is significant toward "
            "H1 (then inconclusive: conflicting evidence)"),
    alpha=0.025, beta=None,
    error_rates="refuting needs the opposite effect at 0.025, stronger evidence than "
                "rejecting a smallest effect would; no smallest effect is declared for a "
                "time-to-event comparison here",
    readout="the first evaluation meeting SUCCESS (token accuracy >= 0.95 and aligned "
            "attention >= 0.9), on the fixed evaluation grid",
    frozen="2026-11-25",
    secondary=("Fisher's exact test on the success counts (both directions)",
               "Kaplan-Meier median steps to success per distribution"),
    seeds=(SeedBlock(SeedUse.DECISION, DECISION_SEEDS, "seeds per distribution as the "
                     "profile's 'seeds'; subset runs shared with snell.subset_learned_every_seed"),
           SeedBlock(SeedUse.DEVELOPMENT, 0, "the Mann-Whitney rule used before")),
    weaknesses=("the log-rank p-value is a normal approximation at 12 runs per group",
                "no testability precondition: the subset distribution learning reliably is "
                "another claim's verdict, not checked here"))

KTIW_PRECEDES = Protocol(
    endpoint="per seed whose attention is learned: the KTIW probe reaches 0.5 no later than "
             "attention accuracy does ('seed by seed')",
    unit="one run per seed (permutation and subset runs): indicator 'KTIW no later'",
    h0="the probability that KTIW comes no later is <= 0.5 (no consistent order)",
    h1="it is >= 0.9 ('seed by seed' read as nearly every seed)",
    test="exact Clopper-Pearson 95% interval over the qualifying seeds",
    confirm="every qualifying seed holds and the interval's lower bound exceeds 0.5 (needs "
            ">= 6 seeds)",
    refute="the interval's upper bound is below 0.9",
    alpha=0.025, beta=0.025,
    readout="the first evaluation at which each curve reaches 0.5, on the fixed evaluation "
            "grid; a tie (same evaluation) counts as no later",
    frozen="2026-11-25",
    precondition="at least 6 seeds whose attention accuracy reaches 0.5 (fewer can never "
                 "confirm)",
    secondary=("the number of ties", "the median lead in steps"),
    seeds=(SeedBlock(SeedUse.DECISION, DECISION_SEEDS, "the runs of snell.permutation_is_hard"),
           SeedBlock(SeedUse.DEVELOPMENT, 0, "the rule was developed on these")),
    weaknesses=("the seeds that count are selected on an outcome (attention learned)",
                "ties at the evaluation grid's resolution count for the claim",
                "confirming needs every seed while refuting needs the interval: a single "
                "exception makes the verdict inconclusive at a dozen seeds"))
