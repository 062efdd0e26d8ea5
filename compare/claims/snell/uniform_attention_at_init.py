"""``snell.uniform_attention_at_init`` (P1): attention starts uniform (Snell et al. 2021: stage 1
is early training, while attention is uniform)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np
import torch

from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.snell.common import DECISION_SEEDS, PAPER_COPYING
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.params import Params
from attnverify.compare.protocol import Protocol, Reason, SeedBlock, SeedUse
from attnverify.compare.report.plotting import PALETTE, new_figure
from attnverify.compare.space import Dimension
from attnverify.compare.stats import mean_ci
from attnverify.empirics import CopyTask, RunResult, RunSpec, Seq2SeqConfig
from attnverify.empirics.probes.attention import entropy_ratio, max_weight_ratio
from attnverify.theory.snell.cooccurrence import check_sizes

if TYPE_CHECKING:
    from matplotlib.figure import Figure


class InitConfig(NamedTuple):
    """One untrained configuration: a seq2seq of ``hidden`` units on copying data."""

    hidden: int
    distribution: str
    V: int
    L: int

    @property
    def group(self) -> str:
        """The name of its group of runs."""
        return f"H{self.hidden}_{self.distribution}_V{self.V}_L{self.L}"


@dataclass(frozen=True)
class InitParams(Params):
    """The configurations ``configs``, ``seeds`` untrained models each, their attention read
    on ``eval_size`` examples."""

    configs: tuple[InitConfig, ...]
    seeds: int
    eval_size: int

    def __post_init__(self) -> None:
        for config in self.configs:
            try:
                check_sizes(config.V, config.L, config.distribution)
            except ValueError as exc:
                raise ValueError(f"configs must be (hidden, distribution, V, L) with a copying "
                                 f"generator; {tuple(config)!r}: {exc}") from None
        if len({InitConfig(*c) for c in self.configs}) < len(self.configs):
            raise ValueError(f"configs must be distinct configurations; got {self.configs!r}")


def _attention_stats(result: RunResult) -> tuple[np.ndarray, np.ndarray]:
    """Per-query entropy / log S and S * max weight at step 0, from the attention snapshot."""
    alpha = torch.from_numpy(result.attention[0]).double()  # (B, heads, T, S)
    return entropy_ratio(alpha).ravel().numpy(), max_weight_ratio(alpha).ravel().numpy()


UNIFORM_AT_INIT_PROTOCOL = Protocol(
    endpoint="attention entropy / log S at step 0 (mean over the evaluation batch's queries "
             "of one untrained model), with the max-weight criterion S * max weight <= 3",
    unit="per-seed value",
    h0="the mean entropy ratio is below e = 0.95 (attention not close to uniform)",
    h1="the mean entropy ratio is at least 0.95 (KL from uniform at most 5% of log S), and "
       "every seed has max weight <= 3/S on >= 95% of its queries",
    test="95% two-sided Student-t interval over seeds of the per-seed mean entropy ratio, per "
         "configuration, against 0.95; the max-weight criterion counted per seed",
    confirm="in every configuration: the interval's lower end >= 0.95 and every seed has max "
            "weight <= 3/S on >= 95% of its queries",
    refute="in any configuration: the interval's upper end < 0.95, or fewer than half the "
           "seeds meet the max-weight criterion",
    alpha=0.025, beta=None,
    error_rates="alpha: the interval's lower end at 0.95 (one-sided 0.025); requiring every "
                "seed and every configuration only lowers it. beta: none stated; the "
                "refutation ORs the interval's upper end (0.025 per configuration, not "
                "adjusted) with a majority count of the max-weight criterion, which has no "
                "error rate",
    readout="the attention snapshot at step 0, before any update, on the run's evaluation "
            "batch (eval_size examples, all T query steps including EOS)",
    frozen="2026-11-25",
    secondary=("mean S * max weight per configuration",),
    seeds=(SeedBlock(SeedUse.DECISION, DECISION_SEEDS, note="one untrained model per seed and "
                                                             "configuration"),
           SeedBlock(SeedUse.DEVELOPMENT, 0, note="the rule was developed on these")),
    weaknesses=(
        "At step 0 nothing is learned: the test checks the initialisation scheme (PyTorch "
        "defaults), which makes near-uniform attention likely by construction.",
        "Thresholds e = 0.95 and 3/S are the spec's suggested values, not calibrated: a KL "
        "of 5% of log S is a loose reading of 'close to uniform'.",
        "Entropy above 0.95 with most seeds failing the max-weight criterion refutes; the two "
        "criteria are not reported as conflicting.",
        "The configurations' refutations are OR-ed without multiplicity adjustment.",
        "No testability precondition is checked."))


class UniformAttentionAtInit(Claim):
    """``snell.uniform_attention_at_init`` (P1): at step 0 attention is close to uniform.

    Statistic, per seed: the mean over (example, t) of the attention entropy divided by log S,
    and the fraction of queries whose largest weight is at most k/S. Thresholds are the
    suggested starting values of the reconstruction's test plan
    (docs/methodology.md#starting-values), fixed before any run: entropy ratio >= e = 0.95 (a
    KL from uniform of at most 5% of log S), and max weight <= 3/S for >= 95% of queries. An
    aligned, learned attention has entropy ratio near 0 and S * max near S, so both thresholds
    separate "uniform" from "learned" by a wide margin.

    Verdict per configuration: confirmed when the 95% t-interval of the mean entropy ratio over
    seeds lies above e and every seed meets the max-weight criterion; refuted when the interval
    lies below e or most seeds fail the max-weight criterion; inconclusive otherwise.
    """

    id = "snell.uniform_attention_at_init"
    kind = ClaimKind.OBSERVATION
    protocol = UNIFORM_AT_INIT_PROTOCOL
    code_version = 1
    paper = "snell"
    statement = ("At initialisation the copying seq2seq's attention is close to uniform: "
                 "entropy close to log S and max weight close to 1/S, over several seeds.")
    paper_scale = PAPER_COPYING
    entropy_ratio_min = 0.95
    max_weight_factor = 3.0
    query_fraction_min = 0.95
    space: ClassVar[dict[str, Dimension]] = {
        "hidden": Dimension("hidden size H", values=(32, 16, 64, 128)),
        "L": Dimension("sequence length L (subset of L of L + 5)", low=2, high=20),
    }
    defaults: ClassVar[dict[str, InitParams]] = {
        "smoke": InitParams(configs=(InitConfig(32, "subset", 15, 10),), seeds=3, eval_size=32),
        "quick": InitParams(configs=(InitConfig(64, "subset", 30, 20),
                                     InitConfig(256, "permutation", 40, 40)),
                            seeds=8, eval_size=64),
        "full": InitParams(configs=(InitConfig(256, "subset", 60, 40),
                                    InitConfig(256, "permutation", 40, 40)),
                           seeds=20, eval_size=50),
    }

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        return {"configs": (InitConfig(point["hidden"], "subset", point["L"] + 5, point["L"]),)}

    def specs(self, params: dict[str, Any]) -> dict[str, list[RunSpec]]:
        """One group per configuration (:attr:`InitConfig.group`), ``seeds`` untrained models
        each."""
        return {config.group: [RunSpec(task=CopyTask(config.distribution, config.V, config.L),
                                       model=Seq2SeqConfig(hidden=config.hidden), steps=0,
                                       eval_size=params["eval_size"], seed=DECISION_SEEDS + i,
                                       attention_snapshots=(0,))
                               for i in range(params["seeds"])]
                for config in map(InitConfig._make, params["configs"])}

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        results = self.results_for(params, results)
        n_seeds = params["seeds"]
        rows: list[dict[str, Any]] = []
        verdicts, per_config = [], []
        for cfg in map(InitConfig._make, params["configs"]):
            stats = [_attention_stats(r) for r in results[cfg.group]]
            ratios = np.array([s[0].mean() for s in stats])
            fractions = np.array([(s[1] <= self.max_weight_factor).mean() for s in stats])
            lo, hi = mean_ci(ratios)
            seeds_ok = int((fractions >= self.query_fraction_min).sum())
            if lo >= self.entropy_ratio_min and seeds_ok == n_seeds:
                verdict, why = Verdict.CONFIRMED, ""
            elif hi < self.entropy_ratio_min or seeds_ok < n_seeds / 2:
                verdict, why = Verdict.REFUTED, (
                    f" (entropy interval below {self.entropy_ratio_min}"
                    if hi < self.entropy_ratio_min else
                    " (fewer than half the seeds meet the max-weight criterion") + ")"
            else:
                verdict, why = Verdict.INCONCLUSIVE, (
                    f" (entropy interval reaches below {self.entropy_ratio_min}"
                    if lo < self.entropy_ratio_min else
                    " (not every seed meets the max-weight criterion") + ")"
            verdicts.append(verdict)
            per_config.append(stats)
            rows.append({"hidden": cfg.hidden, "distribution": cfg.distribution, "V": cfg.V,
                         "L": cfg.L,
                         "entropy_ratio_mean": float(ratios.mean()), "entropy_ratio_ci": [lo, hi],
                         "max_weight_times_S_mean": float(np.mean([s[1].mean() for s in stats])),
                         "seeds_meeting_max_criterion": seeds_ok, "verdict": str(verdict),
                         "why": why})
        verdict = (Verdict.REFUTED if Verdict.REFUTED in verdicts else
                   Verdict.INCONCLUSIVE if Verdict.INCONCLUSIVE in verdicts else
                   Verdict.CONFIRMED)
        head = rows[0]
        explanation = "; ".join(
            f"H={r['hidden']} {r['distribution']} V={r['V']} L={r['L']}: entropy/log S = "
            f"{r['entropy_ratio_mean']:.4f} (95% CI {r['entropy_ratio_ci'][0]:.4f}-"
            f"{r['entropy_ratio_ci'][1]:.4f}), S*max = {r['max_weight_times_S_mean']:.2f}, "
            f"{r['seeds_meeting_max_criterion']}/{n_seeds} seeds with max <= 3/S on >= 95% of "
            f"queries -> {r['verdict']}{r['why']}" for r in rows)
        untestable = verdict is Verdict.INCONCLUSIVE and n_seeds < 2
        if untestable:
            explanation += (". One seed gives no t-interval over seeds: not testable with "
                            "fewer than 2 seeds ('--param seeds=N').")
        return Assessment(
            verdict=verdict,
            theory=1.0,
            empirical=Measurement(head["entropy_ratio_mean"], ci=head["entropy_ratio_ci"],
                                  confidence=0.95, quantity="attention entropy / log S at step 0",
                                  at=f"H={head['hidden']} V={head['V']} L={head['L']}"),
            statistic="mean attention entropy / log S per seed (t-interval over seeds), and the "
                      "fraction of queries with max weight <= 3/S",
            tolerance=Tolerance("suggested starting values of the reconstruction's test plan, "
                                "fixed before measuring; a learned aligned attention is far "
                                "outside both",
                                {"entropy_ratio_min": self.entropy_ratio_min,
                                 "max_weight_times_S": self.max_weight_factor,
                                 "query_fraction_min": self.query_fraction_min}),
            explanation=explanation,
            n_seeds=n_seeds,
            reason=Reason.NOT_TESTABLE if untestable else None,
            details={"configs": rows},
        )

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        results = self.results_for(params, results)
        per_config = [[_attention_stats(r) for r in results[cfg.group]]
                      for cfg in map(InitConfig._make, params["configs"])]
        return {"attention_at_init": attention_at_init_figure(
            assessment.details["configs"], per_config, self.entropy_ratio_min,
            self.max_weight_factor)}


def attention_at_init_figure(rows: Sequence[dict[str, Any]],
                             per_config: Sequence[Sequence[tuple[np.ndarray, np.ndarray]]],
                             entropy_ratio_min: float, max_weight_factor: float) -> Figure:
    """Histograms over every query of every seed, per configuration (``rows``: the claim's
    ``details["configs"]``; ``per_config``: per configuration and seed, the per-query entropy
    / log S and S * max weight), with the thresholds and the uniform value."""
    fig, (ax_h, ax_m) = new_figure(ncols=2)
    colors = [PALETTE["blue"], PALETTE["orange"], PALETTE["green"]]
    ratios = [np.concatenate([s[0] for s in stats]) for stats in per_config]
    maxima = [np.concatenate([s[1] for s in stats]) for stats in per_config]
    # fixed ranges that always show the thresholds (and never collapse to zero width)
    ratio_bins = np.linspace(min(min(r.min() for r in ratios), entropy_ratio_min - 0.01),
                             1.0 + 1e-9, 41)
    max_bins = np.linspace(1.0, max(max(m.max() for m in maxima), max_weight_factor + 0.5), 41)
    for row, ratio, maximum, color in zip(rows, ratios, maxima, colors, strict=False):
        label = f"H={row['hidden']}, S={row['L'] + 1}"
        ax_h.hist(ratio, bins=ratio_bins, color=color, alpha=0.6, label=label)
        ax_m.hist(maximum, bins=max_bins, color=color, alpha=0.6, label=label)
    ax_h.axvline(entropy_ratio_min, color=PALETTE["red"], linestyle="--",
                 label="threshold e = 0.95")
    ax_h.axvline(1.0, color=PALETTE["theory"], label="uniform (theory)")
    ax_m.axvline(max_weight_factor, color=PALETTE["red"], linestyle="--",
                 label="threshold k = 3")
    ax_m.axvline(1.0, color=PALETTE["theory"], label="uniform (theory)")
    ax_h.set_xlabel(r"entropy$(\alpha_t)$ / log S per query")
    ax_m.set_xlabel(r"S $\cdot$ max$_l\ \alpha_{t,l}$ per query")
    for ax in (ax_h, ax_m):
        ax.set_ylabel("queries (all seeds)")
        ax.legend(fontsize=7)
    fig.suptitle("Attention at step 0")
    return fig
