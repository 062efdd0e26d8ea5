"""What the Mușat claims share: the reconstruction note every statistic carries, the date the
protocols were fixed, the learned and near-chance thresholds, the retrieval claims' seed blocks,
their read-out and the two sequential designs several claims use (docs/methodology.md,
"Protocols")."""

from __future__ import annotations

from attnverify.compare.protocol import SeedBlock, SeedUse

RECONSTRUCTION = ("Reconstruction [R] (docs/derivations.md#mușat-2024): the paper's body was "
                  "not available; D = "
                  "links of the queried chain, statements of 2 tokens, Assumption 1 formalised "
                  "as the information-flow game of §2.2.")
FROZEN = "2026-11-25"
"""The date the Mușat claims' protocols were fixed."""

LEARNED = 0.9
"""A query (or a depth) counts as learned at accuracy >= 0.9 (the example threshold of the
reconstruction's test plan, docs/methodology.md#starting-values)."""
NEAR_CHANCE_ALPHA = 0.025
"""'Near chance': the final query accuracy is not above 1/K at one-sided exact binomial
p < 0.025 over the evaluation examples (a model that knows the roots but not the chain reads
1/K, and below the bound Theorem 1 leaves it no more; its history: docs/methodology.md)."""
DECISION_SEEDS = 200
"""The first seed of the retrieval claims' decision block; seeds 0 to 4 trained the cells, the
roles and the rules before they were frozen, and the calibration block (100 on) chose the full
profile's evaluation grid: neither decides anything (the block's history:
docs/methodology.md)."""
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
"""H0: a sufficiently deep model learns in at most half of the seeds; H1: in 90% or more
(``musat.sufficient_depth_learns``, and the at-bound cell of
``musat.depth_step_at_refined_bound``)."""
SHALLOW_DESIGN = {"p0": 0.5, "p1": 0.95, "alpha": 0.025, "beta": 0.10}
"""Below the bound (compare.claims.musat.below_bound): H0, a model that learns the statement
depths its layers allow stays near chance in at most half of such seeds; H1, it stays near
chance in 95% of the seeds or more."""
