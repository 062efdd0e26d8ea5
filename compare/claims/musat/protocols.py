"""The protocols of the retrieval claims of :mod:`attnverify.compare.claims.musat.training`
(docs/methodology.md, "Protocols")."""

from __future__ import annotations

from attnverify.compare.claims.musat.bounds import FROZEN
from attnverify.compare.protocol import Protocol, SeedBlock, SeedUse

LEARNED = 0.9
"""A query (or a depth) counts as learned at accuracy >= 0.9 (musat2024.md §9.2-§9.3)."""
CHANCE_MARGIN = 0.1
"""'Near chance': at most 1/K + 0.1 (the spec's starting value of delta, §9.3)."""
HEAD_THRESHOLD = 0.5
"""A head has emerged when its best structural score is >= 0.5 for 3 evaluations in a row."""
SEEDS = (SeedBlock(SeedUse.DECISION, 0,
                   note="the seeds the rule was developed on, not a fresh block"),)
"""Every retrieval claim trains seeds 0, 1, ... (``_RetrievalClaim.specs``)."""
FINAL = ("the query accuracy of the last evaluation (step 300, 4000, 24000 by profile) on "
         "fresh examples (256, 512, 1024)")
DEV_SEEDS = ("decision seeds are the development seeds: the quick cell and its budget were "
             "chosen after runs of these seeds")


SHALLOW_PROTOCOL = Protocol(
    endpoint=("final query accuracy with fewer layers than min_layers(D), trained with the "
              "implicit curriculum (the 'shallow' cell: D = 2, 1 layer, 4 distractor statements "
              "at quick; D = 4, 1 layer, 8 at full)"),
    unit="per-seed final query accuracy (a diverged run is left out)",
    h0="the mean final query accuracy is above 1/K + 0.1 (more than near chance)",
    h1="the mean final query accuracy is at most 1/K + 0.1 (0.35 at K = 4): near chance or below",
    test="Student-t 95% two-sided interval of the mean final query accuracy over seeds",
    confirm="the interval's upper end <= 1/K + 0.1 (0.35 at K = 4, every profile)",
    refute="the interval's lower end > 1/K + 0.1",
    alpha=0.025, beta=0.025, readout=FINAL, frozen=FROZEN,
    secondary=("final query accuracy of the deep cell and of the query-only runs (heat map only)",
               "for one layer, the value-slot level 1/(K D + distractors) (derived here; "
               "explanation only)", "diverged runs"),
    seeds=SEEDS,
    weaknesses=(
        "only one-layer models are tested (D = 2 at quick, D = 4 at full), never "
        "t = min_layers(D) - 1 >= 2 (e.g. D = 5 with 2 layers)",
        "t-interval over 3 seeds at quick (2 at smoke, 5 at full): 2 degrees of freedom, on "
        "accuracies bounded in [0, 1]",
        "'near chance' is only an upper limit: an accuracy far below 1/K (one layer sits near "
        "1/(K D + distractors)) also confirms",
        "delta = 0.1 is the spec's starting value, marked 'to be calibrated'; it was not "
        "calibrated",
        "a short step budget (quick: 4000 steps at batch 64; the paper: 24k at batch 128) "
        "favours staying near chance",
        "no precondition is checked: nothing shows that the same budget trains a deep enough "
        "model (the deep runs are only drawn), nor that a --param cell is below the bound",
        "decision seeds are the development seeds (the one-layer probe of the docstring used "
        "runs of this cell)"))


SUFFICIENT_PROTOCOL = Protocol(
    endpoint=("final query accuracy under the implicit curriculum with at least the refined "
              "bound + 1 layers (the 'deep' cell: D = 2 with 4 layers at quick, refined + 2; "
              "D = 3 with 4 layers at full, refined + 1)"),
    unit="per-seed final query accuracy (a diverged run counts as a failed seed: 0)",
    h0="the mean final query accuracy is below 0.9 (not learned)",
    h1="the mean final query accuracy is >= 0.9 (learned)",
    test=("Student-t 95% two-sided interval of the mean final query accuracy over seeds, with "
          "the point mean"),
    confirm="the point mean >= 0.9 and the interval's lower end > 1/K + 0.1 (0.35 at K = 4)",
    refute="the interval's upper end < 0.9",
    alpha=None, beta=0.025, readout=FINAL, frozen=FROZEN,
    error_rates=("alpha None: confirmation rests on the point mean >= 0.9, so a true mean just "
                 "below 0.9 confirms about half the time; its interval condition bounds at "
                 "0.025 only the rate of confirming a mean at or below 1/K + 0.1. beta 0.025: "
                 "the one-sided rate of the upper end falling below 0.9 when the mean is >= 0.9"),
    secondary=("seeds at >= 0.9 (count)", "depth-D statement accuracy of the seeds below 0.9 "
               "(the query plateau)", "diverged runs"),
    seeds=SEEDS,
    weaknesses=(
        "confirms on a point estimate (mean >= 0.9) but refutes only on a whole interval "
        "(upper end < 0.9)",
        "t-interval over per-seed accuracies that cluster near 1 or at the chance plateau "
        "(learned or stuck), far from normal; 2 degrees of freedom at quick",
        "with the same accuracy in every seed (e.g. all 1.0) the interval collapses to a point",
        "decision seeds are the development seeds: the quick cell (refined + 2 layers) was "
        "chosen after 3 of 4 development seeds learned there, where at refined + 1 (other "
        "settings) 1 of 3 did",
        "one cell per profile: 'enough layers' is tested at a single D",
        "a refutation means only 'not learned in this budget' (quick: 4000 steps at batch 64; "
        "the paper: 24k at batch 128)",
        "no precondition is checked: that the cell has at least the refined bound + 1 layers "
        "is set by the profiles and falsify points, not checked for a --param cell"))


IC_PROTOCOL = Protocol(
    endpoint=("IC minus query-only final query accuracy, paired by seed, at the same cell, size "
              "and step budget (the 'deep' cell)"),
    unit=("per-seed paired difference of final query accuracies (a diverged IC run counts as "
          "0; a diverged query-only run drops its pair)"),
    h0="IC is no better than query-only at this cell (mean paired difference <= 0)",
    h1=("IC learns (mean >= 0.9) where query-only does not (mean < 0.9), with a mean paired "
        "difference > 0 (no minimum size beyond that)"),
    test=("Student-t 95% two-sided interval of the mean paired difference, with each arm's "
          "point mean against 0.9"),
    confirm="IC mean >= 0.9, query-only mean < 0.9 and the interval's lower end > 0",
    refute=("query-only mean >= 0.9 (a point estimate), or the interval's upper end < 0 (IC "
            "significantly worse)"),
    alpha=0.025, beta=None, readout=FINAL, frozen=FROZEN,
    error_rates=("alpha 0.025 bounds confirming when the mean paired difference is <= 0; the "
                 "0.9 conditions on each arm are point estimates without an error rate. beta "
                 "None: the refutation by query-only's mean >= 0.9 is a point estimate (the "
                 "other, upper end < 0, has 0.025 against a positive difference)"),
    precondition=("IC learns at the cell: IC mean >= 0.9 (a point estimate), over at least 2 "
                  "pairs; checked only when neither refutation rule fires"),
    secondary=("each arm's mean final query accuracy", "diverged runs per arm",
               "query accuracy curves of both arms (figure)"),
    seeds=SEEDS,
    weaknesses=(
        "'query-only fails' is read as its mean below 0.9, not near chance (the spec's idea: at "
        "most 1/K + 0.1): a query-only mean of 0.85 counts as failing",
        "the 0.9 conditions on both arms are point estimates; only the paired difference has an "
        "interval",
        "refutes on a point estimate (query-only mean >= 0.9) but confirms only with an interval",
        "the precondition is not checked before refuting: where IC does not learn, query-only "
        ">= 0.9 or IC significantly worse still refutes 'fails where IC succeeds'",
        "t-interval over paired differences of accuracies that cluster near 1 or near chance; "
        "2 degrees of freedom at quick",
        "one cell and one budget (quick: 4000 steps at batch 64; the paper: 24k at batch 128): "
        "a short budget favours query-only failing",
        DEV_SEEDS))


ORDER_PROTOCOL = Protocol(
    endpoint=("the order in which the per-depth accuracies of depths >= 1 first reach 0.9 under "
              "the implicit curriculum (the 'deep' cell: D = 2 at quick, D = 3 at full)"),
    unit="per-seed indicator: no inversion among the learned depths >= 1 (diverged runs left out)",
    h0="some deeper depth is learned before a shallower one (no consistent increasing order)",
    h1=("in every seed, no learned depth >= 1 first reaches 0.9 more than one evaluation "
        "interval before a shallower learned depth"),
    test="per-seed check of the first crossing steps for inversions; no statistical test",
    confirm="no inversion in any seed, and at least two depths >= 1 reach 0.9 in every seed",
    refute=("a seed in which a deeper depth first reaches 0.9 more than one evaluation interval "
            "(100 steps at quick, 500 at full) before a shallower one"),
    alpha=None, beta=None, frozen=FROZEN,
    error_rates=("a deterministic rule on 2 to 5 seeds, without an error rate: at quick (D = 2) "
                 "each seed orders the single pair of depths 1 and 2, which a random order "
                 "passes with probability at least 1/2 (ties within one interval pass), so all 3 "
                 "seeds pass by chance with probability at least 1/8; one inversion refutes"),
    readout=("the first evaluation at which acc_depth{k} >= 0.9 (a single evaluation, no hold), "
             "k = 1..D"),
    precondition=("at least two depths >= 1 reach 0.9 in every seed that did not diverge (never "
                  "at D = 1); checked after the refutation rule"),
    secondary=("depth 0's crossing step (the token itself, learned at once)",
               "fraction of seeds in order"),
    seeds=SEEDS,
    weaknesses=(
        "no statistical test: every seed ordered confirms, one inversion in one seed refutes",
        "at quick each seed orders a single pair of depths (1 and 2)",
        "a crossing is one evaluation at >= 0.9 (no hold), so a transient spike counts",
        "a shallower depth that never reaches 0.9 while a deeper one does is no inversion",
        "0.9 is the spec's example threshold, marked 'to be calibrated'; it was not calibrated",
        "diverged runs are left out", DEV_SEEDS))


HEADS_PROTOCOL = Protocol(
    endpoint=("the order and spacing of the first emergence of (layer, role) head events under "
              "the implicit curriculum across seeds, and the effect of zero-ablating an emerged "
              "head (the 'deep' cell)"),
    unit=("per-seed event steps: a head emerges when its best structural score (6 roles) stays "
          ">= 0.5 for 3 evaluations, one event per (layer, role); per-seed largest per-depth "
          "accuracy drop under single-head zero-ablation at the end"),
    h0="roles emerge in no consistent order across seeds, or together, or emerged heads do "
       "not matter",
    h1=("in every seed roles emerge at distinct evaluations, no two seeds order two shared roles "
        "oppositely by more than one evaluation interval, and an emerged head's ablation drops "
        "a depth's accuracy by >= 0.3"),
    test="deterministic checks on the emergence steps and ablation drops; no statistical test",
    confirm=("every seed has an emerged role; no order contradiction between any two seeds; some "
             "pair of seeds shares two (layer, role) events; every seed's events are at distinct "
             "evaluations; every seed's largest single-head ablation drop is >= 0.3"),
    refute=("two seeds order two shared (layer, role) events oppositely, each by more than one "
            "evaluation interval (100 steps at quick, 500 at full)"),
    alpha=None, beta=None, frozen=FROZEN,
    error_rates=("deterministic checks on 2 to 5 seeds without an error rate; the thresholds "
                 "(score 0.5, 3 evaluations, drop 0.3) are the project's, not calibrated"),
    readout=("structural head scores at every evaluation (emergence: first of 3 evaluations in a "
             "row at >= 0.5); zero-ablation per-depth accuracy at the final step"),
    precondition=("a head emerges in every seed that did not diverge (checked first), and two "
                  "seeds share two (layer, role) events to order (checked after the refutation "
                  "rule)"),
    secondary=("each seed's best structural score", "mean over seeds of the largest ablation "
               "drop", "attention maps of the first seed"),
    seeds=SEEDS,
    weaknesses=(
        "no statistical test: one opposite order between two seeds refutes; one pair of seeds "
        "sharing two roles can carry a confirmation",
        "the ablation check needs one emerged head per seed to drop a depth by >= 0.3, not "
        "every emerged head, so it does not show that each head serves its depths",
        "a failed ablation check is put down to redundant heads without a joint ablation of a "
        "layer's copies to show it",
        "emergence is read on the evaluation grid (every 100 steps at quick): events one "
        "evaluation apart count as 'one at a time'",
        "a head counts once, at its earliest role; later role changes are not events",
        "the paper judged emergence by inspection; the scores, roles and thresholds are this "
        "project's reconstruction [R]",
        "diverged runs are left out",
        "decision seeds are the development seeds: the role set was fitted to their runs (the "
        "directional partner roles after quick seed 0)"))
