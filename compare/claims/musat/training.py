"""Claims on trained transformers (musat2024.md §4-§5 and §9.3): depth below the bound fails,
enough depth with the implicit curriculum learns, query-only supervision does not, depths and
heads emerge in order.

Configurations are CPU-sized at ``quick`` and keep the spec's pitfalls in mind (§9.2): K = 4
chains (chance 1/4 on the query, no single-chain shortcut); a separate query token, so the
learning runs use refined bound + 1 layers (pitfall b); the same step budget for IC and
query-only (pitfall c). Runs are shared between the claims through the cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

import theory
from compare.claim import Assessment, Claim, Verdict
from compare.claims.musat.bounds import RECONSTRUCTION
from compare.plotting import PALETTE, new_figure
from compare.stats import mean_ci
from empirics import Adam, RunResult, RunSpec
from empirics.retrieval import RetrievalTask
from empirics.retrieval_transformer import RetrievalTransformerConfig

PAPER_RETRIEVAL = ("64 transformers per formulation, 24k steps, batch 128, 2^18-2^20 examples; "
                   "architecture unknown (musat2024.md §4)")

RETRIEVAL: dict[str, dict[str, Any]] = {
    # shallow: (D, layers) below min_layers(D); deep: (D, layers) = refined bound + 1
    "smoke": {"shallow": (2, 1), "deep": (1, 3), "K": 4, "vocab": 64, "d_model": 32,
              "heads": 4, "steps": 300, "lr": 3e-3, "batch_size": 64, "eval_every": 50,
              "eval_size": 256, "seeds": 2},
    "quick": {"shallow": (2, 1), "deep": (1, 3), "K": 4, "vocab": 64, "d_model": 32,
              "heads": 4, "steps": 4000, "lr": 3e-3, "batch_size": 64, "eval_every": 100,
              "eval_size": 512, "seeds": 3},
    "full": {"shallow": (4, 1), "deep": (2, 3), "K": 4, "vocab": 64, "d_model": 64,
             "heads": 4, "steps": 24_000, "lr": 1e-3, "batch_size": 128, "eval_every": 500,
             "eval_size": 1024, "seeds": 5},
}
LEARNED = 0.9
"""A query (or a depth) counts as learned at accuracy >= 0.9 (musat2024.md §9.2-§9.3)."""
CHANCE_MARGIN = 0.1
"""'Near chance': at most 1/K + 0.1 (the spec's starting value of delta, §9.3)."""
HEAD_THRESHOLD = 0.5
"""A head has emerged when its best structural score is >= 0.5 for 3 evaluations in a row."""


def retrieval_spec(params: dict[str, Any], cell: str, ic: bool, seed: int) -> RunSpec:
    D, layers = params[cell]
    return RunSpec(task=RetrievalTask(D=D, K=params["K"], vocab=params["vocab"], ic=ic),
                   model=RetrievalTransformerConfig(layers=layers, heads=params["heads"],
                                                    d_model=params["d_model"]),
                   optimizer=Adam(lr=params["lr"]), steps=params["steps"],
                   batch_size=params["batch_size"], eval_every=params["eval_every"],
                   eval_size=params["eval_size"], seed=seed)


def final_query(result: RunResult) -> float:
    return 0.0 if result.diverged else float(result.metric("query_acc")[-1])


def crossing_step(result: RunResult, name: str, threshold: float, hold: int = 1) -> int | None:
    """First evaluated step from which ``name`` stays >= threshold for ``hold`` evaluations."""
    if result.diverged:
        return None
    above = result.metric(name) >= threshold
    for i in range(len(above) - hold + 1):
        if above[i:i + hold].all():
            return int(result.eval_steps[i])
    return None


class _RetrievalClaim(Claim):
    paper = "musat"
    paper_scale = PAPER_RETRIEVAL
    defaults: ClassVar[dict[str, dict[str, Any]]] = RETRIEVAL
    cells: ClassVar[tuple[tuple[str, bool], ...]] = ()
    """(cell, ic) groups this claim reads, each over every seed, in this order."""

    def specs(self, params: dict[str, Any]) -> list[RunSpec]:
        return [retrieval_spec(params, cell, ic, seed) for cell, ic in self.cells
                for seed in range(params["seeds"])]

    def groups(self, params: dict[str, Any], results: Sequence[RunResult]) -> list[list]:
        n = params["seeds"]
        return [list(results[i * n:(i + 1) * n]) for i in range(len(self.cells))]

    @staticmethod
    def describe(params: dict[str, Any], cell: str, ic: bool) -> str:
        D, layers = params[cell]
        return (f"D = {D}, {layers} layer(s), {'IC' if ic else 'query-only'}, K = {params['K']}, "
                f"d_model {params['d_model']}, {params['steps']} steps")


class ShallowModelsFail(_RetrievalClaim):
    """``musat.shallow_models_fail``: with fewer layers than min_layers(D) the query stays near
    chance (at most 1/K + 0.1), even with the implicit curriculum. Per-seed final query
    accuracies; 95% Student-t interval of their mean: confirmed when its upper end is at most
    1/K + 0.1, refuted when its lower end is above, inconclusive otherwise."""

    id = "musat.shallow_models_fail"
    statement = ("Trained models with fewer layers than the bound stay near chance on the query "
                 "(many chains, so slot-reading shortcuts are closed).")
    cells = (("shallow", True), ("deep", True))  # the deep runs only for the heat map

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        accs = [final_query(r) for r in self.groups(params, results)[0]]
        lo, hi = mean_ci(accs)
        limit = 1 / params["K"] + CHANCE_MARGIN
        D, layers = params["shallow"]
        bound = theory.musat.min_layers_value(D)
        verdict = (Verdict.CONFIRMED if hi <= limit else Verdict.REFUTED if lo > limit
                   else Verdict.INCONCLUSIVE)
        return Assessment(
            verdict=verdict, theory=f"<= {limit:.2f} (bound: {bound} layers for D = {D})",
            empirical={"value": float(np.mean(accs)), "ci": [lo, hi], "confidence": 0.95,
                       "at": self.describe(params, "shallow", True)},
            statistic=f"final query accuracy over {len(accs)} seeds. {RECONSTRUCTION}",
            tolerance={"near_chance": limit, "why": "chance 1/K plus the spec's delta = 0.1"},
            explanation=(f"{layers} layer(s) < min_layers({D}) = {bound}: query accuracy "
                         f"{np.mean(accs):.3f} (95% CI {lo:.3f}-{hi:.3f}) against chance "
                         f"{1 / params['K']:.2f}"),
            n_seeds=len(accs), details={"query_acc": accs},
            figures={"depth_heatmap": depth_heatmap(params, results, self.cells)})


class SufficientDepthLearns(_RetrievalClaim):
    """``musat.sufficient_depth_learns``: with the refined bound + 1 layers (a separate query
    token needs the refined bound, and the bound is only necessary: pitfalls b, c of §9.2) and
    IC, the query is learned (accuracy >= 0.9). Per-seed final accuracies, 95% t-interval:
    confirmed when the mean is >= 0.9 and the lower end above chance + 0.1; refuted when the
    upper end is below 0.9; inconclusive otherwise."""

    id = "musat.sufficient_depth_learns"
    statement = ("With enough layers (refined bound + 1, for the separate query token) and the "
                 "implicit curriculum, the query is learned.")
    cells = (("deep", True),)

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        accs = [final_query(r) for r in results]
        lo, hi = mean_ci(accs)
        mean = float(np.mean(accs))
        floor = 1 / params["K"] + CHANCE_MARGIN
        verdict = (Verdict.CONFIRMED if mean >= LEARNED and lo > floor else
                   Verdict.REFUTED if hi < LEARNED else Verdict.INCONCLUSIVE)
        D, layers = params["deep"]
        why = (f"{layers} layers for D = {D} (paper bound {theory.musat.min_layers_value(D)}, "
               f"refined {theory.musat.min_layers_refined_value(D)}): query accuracy {mean:.3f} "
               f"(95% CI {lo:.3f}-{hi:.3f}) after {params['steps']} steps")
        if verdict is Verdict.REFUTED:
            why += "; not learned within this step budget (the paper trains 24k steps at batch 128)"
        return Assessment(
            verdict=verdict, theory=f">= {LEARNED}",
            empirical={"value": mean, "ci": [lo, hi], "confidence": 0.95,
                       "at": self.describe(params, "deep", True)},
            statistic=f"final query accuracy over {len(accs)} seeds. {RECONSTRUCTION}",
            tolerance={"learned": LEARNED, "why": "the spec's success threshold (> 90%)"},
            explanation=why, n_seeds=len(accs), details={"query_acc": accs},
            figures={"emergence": emergence_figure(results[0])} if results else {})


class ImplicitCurriculumNeeded(_RetrievalClaim):
    """``musat.implicit_curriculum_needed``: at the same size and steps, query-only supervision
    fails where IC succeeds. Paired per seed (same seed: same initialisation and data): the IC
    minus query-only final accuracy, 95% t-interval. Confirmed when IC learns (mean >= 0.9) and
    query-only does not (its mean below 0.9) with the paired difference's interval above 0;
    refuted when query-only learns too (mean >= 0.9 at the same budget) or IC is significantly
    worse (interval below 0); inconclusive otherwise."""

    id = "musat.implicit_curriculum_needed"
    statement = ("At the same size and steps, query-only supervision fails where the implicit "
                 "curriculum succeeds.")
    cells = (("deep", True), ("deep", False))

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        ic, query_only = ([final_query(r) for r in g] for g in self.groups(params, results))
        diff = np.subtract(ic, query_only)
        lo, hi = mean_ci(diff)
        ic_mean, q_mean = float(np.mean(ic)), float(np.mean(query_only))
        if ic_mean >= LEARNED and q_mean < LEARNED and lo > 0:
            verdict = Verdict.CONFIRMED
        elif q_mean >= LEARNED or hi < 0:
            verdict = Verdict.REFUTED
        else:
            verdict = Verdict.INCONCLUSIVE
        why = (f"IC {ic_mean:.3f} vs query-only {q_mean:.3f} (paired difference "
               f"{diff.mean():+.3f}, 95% CI {lo:+.3f} to {hi:+.3f}) at "
               f"{self.describe(params, 'deep', True)}")
        if verdict is Verdict.INCONCLUSIVE and ic_mean < LEARNED:
            why += "; IC itself has not reached 0.9 within the budget, so 'fails where IC "\
                   "succeeds' cannot be decided"
        return Assessment(
            verdict=verdict, theory="IC learns, query-only does not",
            empirical={"value": float(diff.mean()), "ci": [lo, hi], "confidence": 0.95,
                       "at": "IC minus query-only final query accuracy (paired seeds)"},
            statistic=f"paired final query accuracies over {len(diff)} seeds. {RECONSTRUCTION}",
            tolerance={"learned": LEARNED, "why": "the spec's success threshold; pairing by "
                                                  "seed removes initialisation noise"},
            explanation=why, n_seeds=len(diff),
            details={"ic": ic, "query_only": query_only},
            figures={"ic_vs_query": ic_figure(self.groups(params, results))})


class DepthsEmergeInOrder(_RetrievalClaim):
    """``musat.depths_emerge_in_order``: under IC, per-depth accuracy crosses 0.9 in increasing
    order of depth (ties within one evaluation interval allowed), for the depths that are
    learned. Per seed: ordered or not; confirmed when every seed is ordered and at least two
    depths are learned in each; refuted when a seed learns a deeper depth more than one
    interval before a shallower one."""

    id = "musat.depths_emerge_in_order"
    statement = ("Under the implicit curriculum, per-depth accuracy crosses its threshold in "
                 "increasing order of depth.")
    cells = (("deep", True),)

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        D = params["deep"][0]
        rows = []
        for r in results:
            steps = [crossing_step(r, f"acc_depth{k}", LEARNED) for k in range(D + 1)]
            learned = [(k, s) for k, s in enumerate(steps) if s is not None]
            inversions = [(a, b) for (a, sa) in learned for (b, sb) in learned
                          if a < b and sb < sa - params["eval_every"]]
            rows.append({"seed": r.spec.seed, "crossing_steps": steps,
                         "learned_depths": len(learned), "inversions": inversions})
        ordered = all(not row["inversions"] for row in rows)
        enough = all(row["learned_depths"] >= 2 for row in rows)
        verdict = (Verdict.REFUTED if not ordered else
                   Verdict.CONFIRMED if enough else Verdict.INCONCLUSIVE)
        why = "; ".join(f"seed {row['seed']}: depth crossings {row['crossing_steps']}"
                        for row in rows)
        if verdict is Verdict.INCONCLUSIVE:
            why += " -- fewer than two depths learned in some seed: no order to test"
        return Assessment(
            verdict=verdict, theory="depth 0, then 1, ..., then D",
            empirical={"value": sum(not row["inversions"] for row in rows) / len(rows),
                       "at": "fraction of seeds with depths in order"},
            statistic=(f"first step with per-depth accuracy >= {LEARNED}, "
                       f"{self.describe(params, 'deep', True)}. {RECONSTRUCTION}"),
            tolerance={"tie": f"{params['eval_every']} steps (one evaluation interval)",
                       "why": "crossings are only seen at evaluation steps"},
            explanation=why, n_seeds=len(rows), details={"seeds": rows})


class HeadsEmergeInSequence(_RetrievalClaim):
    """``musat.heads_emerge_in_sequence``: heads emerge one at a time in a consistent order,
    and ablating an emerged head removes the depths it serves.

    Emergence [R, §5]: a head's best structural score (attention mass on the statement partner,
    the same symbol, or itself) reaches 0.5 and stays for 3 evaluations. Heads within a layer
    are interchangeable, so the order compared across seeds is that of (layer, role). One at a
    time: no two heads emerge at the same evaluation. Ablation: zeroing each emerged head at the
    end of training, the largest per-depth accuracy drop must be >= 0.3 for at least one
    emerged head per seed. Confirmed when all three hold in every seed; refuted when the order
    differs between seeds or no ablation matters; inconclusive when no head emerges.
    """

    id = "musat.heads_emerge_in_sequence"
    statement = ("Heads emerge one at a time in a consistent order across seeds, and ablating "
                 "an emerged head removes the depths it serves.")
    cells = (("deep", True),)
    ROLES = ("partner", "same_symbol", "self")

    def emerged(self, result: RunResult) -> list[tuple[int, int, int, str]]:
        """(step, layer, head, role) of every emerged head, in order."""
        heads = {}
        for name in result.metrics:
            if name.startswith("head") and name.endswith("_partner"):
                layer, head = (int(x) for x in name[4:].split("_")[0].split("."))
                heads[(layer, head)] = None
        out = []
        for layer, head in sorted(heads):
            best = None
            for role in self.ROLES:
                if role == "self":  # attending to itself is not a retrieval role
                    continue
                step = crossing_step(result, f"head{layer}.{head}_{role}", HEAD_THRESHOLD, 3)
                if step is not None and (best is None or step < best[0]):
                    best = (step, role)
            if best is not None:
                out.append((best[0], layer, head, best[1]))
        return sorted(out)

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        rows = []
        for r in results:
            events = self.emerged(r)
            steps = [e[0] for e in events]
            drops = {}
            if r.final and events:
                base = r.final["depth_acc"]
                for _, layer, head, _ in events:
                    drops[f"{layer}.{head}"] = float(np.max(base - r.final["ablation_zero"]
                                                            [layer, head]))
            scores = [float(v.max()) for k, v in r.metrics.items()
                      if k.startswith("head") and not k.endswith("_self")]
            full_drops = (r.final["depth_acc"] - r.final["ablation_zero"]).max(-1) \
                if r.final else np.zeros(1)
            rows.append({"seed": r.spec.seed, "best_head_score": max(scores, default=0.0),
                         "largest_drop_any_head": float(full_drops.max()),
                         "sequence": [(layer, role) for _, layer, _, role in events],
                         "steps": steps, "one_at_a_time": len(set(steps)) == len(steps),
                         "max_ablation_drop": max(drops.values(), default=0.0),
                         "ablation_drops": drops})
        if any(not row["sequence"] for row in rows):
            verdict = Verdict.INCONCLUSIVE
            why = ("no head emerged in some seed: best structural scores "
                   f"{[round(row['best_head_score'], 2) for row in rows]} (threshold "
                   f"{HEAD_THRESHOLD}), largest per-depth drop when zeroing any single head "
                   f"{[round(row['largest_drop_any_head'], 2) for row in rows]}: at this scale "
                   "the mechanism is spread over several heads rather than carried by one")
        else:
            same_order = all(row["sequence"] == rows[0]["sequence"] for row in rows)
            single = all(row["one_at_a_time"] for row in rows)
            causal = all(row["max_ablation_drop"] >= 0.3 for row in rows)
            verdict = (Verdict.CONFIRMED if same_order and single and causal else
                       Verdict.REFUTED if not same_order or not causal else
                       Verdict.INCONCLUSIVE)
            why = (f"order {'identical' if same_order else 'differs'} across seeds, "
                   f"{'one at a time' if single else 'some heads emerge together'}, largest "
                   f"ablation drops {[round(row['max_ablation_drop'], 2) for row in rows]}; "
                   + "; ".join(f"seed {row['seed']}: {row['sequence']} at {row['steps']}"
                               for row in rows))
        return Assessment(
            verdict=verdict, theory="one head at a time, fixed order",
            empirical={"value": float(np.mean([row["max_ablation_drop"] for row in rows])),
                       "at": "largest per-depth accuracy drop when zeroing an emerged head"},
            statistic=(f"structural head scores at every evaluation and zero-ablation at the end, "
                       f"{self.describe(params, 'deep', True)}. {RECONSTRUCTION}"),
            tolerance={"emerged": f"score >= {HEAD_THRESHOLD} for 3 evaluations",
                       "ablation": ">= 0.3 accuracy drop",
                       "why": "the spec's protocol (§5, [R]); thresholds are ours"},
            explanation=why, n_seeds=len(rows), details={"seeds": rows},
            figures={"attention_maps": attention_figure(results[0])} if results else {})


def depth_heatmap(params: dict[str, Any], results: Sequence[RunResult],
                  cells: tuple[tuple[str, bool], ...]):
    """Query accuracy over (layers, D) for the cells available, with the frontier
    max_depth(t) (the paper's Figure 4 in spirit)."""
    fig, (ax,) = new_figure(width=4.6)
    n = params["seeds"]
    for i, (cell, _) in enumerate(cells):
        D, layers = params[cell]
        acc = np.mean([final_query(r) for r in results[i * n:(i + 1) * n]])
        ax.scatter([D], [layers], s=600, c=[acc], cmap="cividis", vmin=0, vmax=1,
                   marker="s", edgecolors="black")
        ax.annotate(f"{acc:.2f}", (D, layers), ha="center", va="center", color="white")
    t = np.arange(1, 5)
    ax.step([theory.musat.max_depth_value(int(k)) for k in t], t, where="post",
            color=PALETTE["theory"], label="frontier: max_depth(t) = (3^t - 1)/2")
    ax.set_xlabel("chain length D")
    ax.set_ylabel("layers")
    ax.set_xlim(0, 5)
    ax.set_ylim(0, 4.5)
    ax.set_title("query accuracy (mean over seeds)")
    ax.legend(fontsize=7)
    return fig


def emergence_figure(result: RunResult):
    """Per-depth accuracy over training with head emergence steps marked."""
    fig, (ax,) = new_figure(width=5.0)
    colours = [PALETTE[c] for c in ("blue", "orange", "green", "red", "purple")]
    depths = sorted(int(k[9:]) for k in result.metrics if k.startswith("acc_depth"))
    for colour, k in zip(colours, depths, strict=False):
        ax.plot(result.eval_steps, result.metric(f"acc_depth{k}"), color=colour,
                label=f"depth {k}")
    ax.plot(result.eval_steps, result.metric("query_acc"), color=PALETTE["theory"],
            linestyle="--", label="query")
    for step, layer, head, role in HeadsEmergeInSequence().emerged(result):
        ax.axvline(step, color=PALETTE["grey"], linewidth=0.8, linestyle=":")
        ax.annotate(f"L{layer}H{head} {role}", (step, 0.02), rotation=90, fontsize=6,
                    color=PALETTE["grey"])
    ax.set_xlabel("training step")
    ax.set_ylabel("accuracy")
    ax.set_title(f"per-depth accuracy, seed {result.spec.seed} (dotted: head emergence)")
    ax.legend(fontsize=7)
    return fig


def ic_figure(groups: list[list[RunResult]]):
    fig, (ax,) = new_figure()
    for runs, colour, label in zip(groups, (PALETTE["blue"], PALETTE["red"]),
                                   ("IC", "query-only"), strict=True):
        for i, r in enumerate(runs):
            ax.plot(r.eval_steps, r.metric("query_acc"), color=colour, alpha=0.8,
                    label=label if i == 0 else None)
    ax.axhline(LEARNED, color=PALETTE["grey"], linestyle=":", label="learned (0.9)")
    ax.set_xlabel("training step")
    ax.set_ylabel("query accuracy")
    ax.set_title("implicit curriculum vs query-only (per seed)")
    ax.legend(fontsize=7)
    return fig


def attention_figure(result: RunResult):
    """Every head's attention map on one evaluation instance at the end of training."""
    maps = result.final.get("attention_example")
    if maps is None:
        fig, (ax,) = new_figure()
        ax.text(0.5, 0.5, "no attention recorded", ha="center")
        return fig
    layers, heads = maps.shape[:2]
    fig, axes = new_figure(ncols=heads, nrows=layers, width=2.0, height=2.0)
    for i, ax in enumerate(axes):
        layer, head = divmod(i, heads)
        ax.imshow(maps[layer, head], cmap="Greys", vmin=0, vmax=1)
        ax.set_title(f"layer {layer} head {head}", fontsize=7)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
    return fig
