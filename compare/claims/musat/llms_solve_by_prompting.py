"""``musat.llms_solve_by_prompting``: a pretrained causal language model answers retrieval
questions in words well above chance without fine-tuning, and its accuracy falls toward chance
as the chain grows (Mușat 2024, abstract and Figure 2; spec §3).

The model is the user's: ``verify --llm-dir DIR`` names a local directory in the Hugging Face
layout (nothing is downloaded, and no package on the registries ships a small pretrained causal
LM with its weights, so there is no default). Without one the claim is not run and says so.
Questions and formulations: :mod:`attnverify.empirics.tasks.retrieval_prompts`; answers by
likelihood: :mod:`attnverify.empirics.models.local_llm`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from matplotlib.ticker import NullLocator
from scipy import stats

from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.decision import rate_gain
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.memo import memo
from attnverify.compare.params import Params
from attnverify.compare.protocol import Protocol, Reason
from attnverify.compare.report.plotting import PALETTE, new_figure
from attnverify.compare.space import Dimension
from attnverify.compare.stats import binomial_ci
from attnverify.empirics.tasks.retrieval_prompts import check_question_sizes, make_questions

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from attnverify.empirics.models.local_llm import ChoiceScorer

log = logging.getLogger("attnverify.musat.prompting")

FROZEN = "2026-11-26"
"""The date this protocol was fixed, before any model answered a decision question."""
WELL_ABOVE = 0.25
"""'Well above chance': the smallest effect that matters is an accuracy of chance + 0.25 at the
shortest chain, D = 2 (0.5 with four options)."""
MIN_DROP = 0.2
"""'Falls toward chance': the smallest drop of accuracy from the shortest to the longest chain
that matters."""
DECISION_SEED = 100
"""The questions' seed; seed 0 made the questions the code was developed on."""
ALPHA, BETA = 0.025, 0.10
FORMULATION_NOTE = ("Reconstruction [R]: the paper's templates, models and depths are unknown; "
                    "the formulations are this project's, in the flavour of Figure 1 "
                    "(docs/claims.md#mușat).")

PROTOCOL = Protocol(
    endpoint=("per formulation: the multiple-choice accuracy at the shortest chain against "
              "chance (1/chains), and the drop of accuracy from the shortest to the longest "
              "chain"),
    unit=(f"per question: right or wrong (the option of highest likelihood); the questions "
          f"come from seed {DECISION_SEED}, seed 0 made those the code was developed on"),
    h0=("in some formulation the model is at or below chance at the shortest chain, or its "
        "accuracy does not fall from the shortest to the longest chain"),
    h1=(f"in every formulation the accuracy at the shortest chain is at least chance + "
        f"{WELL_ABOVE}, and it falls by at least {MIN_DROP} at the longest chain"),
    test=("per formulation two one-sided tests: exact binomial test of the shortest chain's "
          "accuracy against chance; exact unconditional test of the two accuracies "
          "(Suissa-Shuster); intersection-union over both tests of every formulation"),
    confirm=f"every one of the 2 x formulations tests has p < {ALPHA}",
    refute=(f"some test's refutation (accuracy below chance + {WELL_ABOVE}, or a drop smaller "
            f"than {MIN_DROP}) has p < {BETA} / (2 x formulations) (Bonferroni); where the "
            f"same test is also significant toward H1, the evidence conflicts"),
    alpha=ALPHA, beta=BETA,
    readout=("the option whose tokens have the highest summed log-probability after the "
             "prompt (no sampling)"),
    frozen=FROZEN,
    precondition=("a local pretrained causal language model (--llm-dir) with transformers "
                  "installed, and at least two chain depths"),
    secondary=("the accuracy at every depth with its Clopper-Pearson interval (figure)",),
    weaknesses=(
        "the paper's five templates, models and depths are unknown; the two formulations are "
        "reconstructions [R] in the flavour of Figure 1",
        "answers by likelihood of the options, not generated text: a model that would reason "
        "step by step before answering is not given the chance",
        "the verdict is about the one model given; the paper tested several",
        "summed log-probabilities favour short options; chance stays exact because the right "
        "option is drawn uniformly",
        "chain depth and prompt length grow together (chains x D statements): a drop may come "
        "from the longer context as well as from the longer chain",
        "the shortest chain is D = 2 (one link): D = 1 would ask for the root statement "
        "alone, which needs no retrieval"))


def _questions_key(params: dict[str, Any], formulation: str, depth: int) -> dict[str, Any]:
    return {"formulation": formulation, "depth": depth, "chains": params["chains"],
            "questions": params["questions"], "seed": DECISION_SEED}


def answer_cell(scorer: ChoiceScorer, formulation: str, depth: int, chains: int,
                n: int, seed: int) -> np.ndarray:
    """Whether the scorer answers each of the cell's ``n`` questions right."""
    from attnverify.empirics.models.local_llm import answer_questions

    questions = make_questions(formulation, depth, chains, n, seed)
    chosen = answer_questions(scorer, [q.prompt for q in questions],
                              [q.options for q in questions])
    return chosen == np.array([q.correct for q in questions])


def measure(params: dict[str, Any], scorer: ChoiceScorer, fingerprint: str
            ) -> dict[str, dict[int, np.ndarray]]:
    """Per formulation and depth, which questions the model answered right (memoised by the
    model's fingerprint and the cell's questions)."""
    out: dict[str, dict[int, np.ndarray]] = {}
    for formulation in params["formulations"]:
        out[formulation] = {}
        for depth in params["depths"]:
            key = {"model": fingerprint, **_questions_key(params, formulation, depth)}
            def cell(f: str = formulation, d: int = depth) -> dict[str, np.ndarray]:
                return {"right": answer_cell(scorer, f, d, params["chains"],
                                             params["questions"], DECISION_SEED)}

            right = memo("musat_prompting", key, {"claim": LlmsSolveByPrompting.code_version},
                         cell)["right"]
            log.info("prompting %s, D = %d: %d of %d right", formulation, depth,
                     int(right.sum()), right.size)
            out[formulation][depth] = right
    return out


def decide_prompting(counts: dict[str, dict[int, int]], n: int, chains: int
                     ) -> tuple[Verdict, Reason, str, float, list[dict[str, Any]]]:
    """The protocol's rule on right-answer counts per formulation and depth (``n`` questions
    per cell): verdict, reason, explanation, the intersection-union p-value and one row per
    formulation."""
    chance = 1 / chains
    rows, primaries, refutations = [], [], []
    m = 2 * len(counts)
    for formulation, by_depth in counts.items():
        short, long_ = min(by_depth), max(by_depth)
        k_short, k_long = by_depth[short], by_depth[long_]
        above = stats.binomtest(k_short, n, chance, alternative="greater").pvalue
        above_refute = stats.binomtest(k_short, n, min(chance + WELL_ABOVE, 1.0),
                                       alternative="less").pvalue
        drop, drop_refute = rate_gain(k_long, n, k_short, n, MIN_DROP,
                                      "exact unconditional (accuracy drops)")
        rows.append({"formulation": formulation, "shortest": short, "longest": long_,
                     "acc_shortest": k_short / n, "acc_longest": k_long / n,
                     "p_above_chance": float(above), "p_not_well_above": float(above_refute),
                     "p_drop": drop.p_h1, "p_drop_small": float(drop_refute)})
        primaries += [("above chance", formulation, float(above)),
                      ("accuracy falls", formulation, drop.p_h1)]
        refutations += [("above chance", formulation, float(above_refute)),
                        ("accuracy falls", formulation, float(drop_refute))]
    p_iut = max(p for *_, p in primaries)
    refuted = [(t, f) for t, f, p in refutations if p < BETA / m]
    significant = {(t, f) for t, f, p in primaries if p < ALPHA}
    shown = "; ".join(
        f"{r['formulation']}: D = {r['shortest']} {r['acc_shortest']:.2f} (p above chance "
        f"{r['p_above_chance']:.3g}), D = {r['longest']} {r['acc_longest']:.2f} (p drop "
        f"{r['p_drop']:.3g}; refutations {r['p_not_well_above']:.3g}, {r['p_drop_small']:.3g})"
        for r in rows)
    if refuted and all(r in significant for r in refuted):
        return (Verdict.INCONCLUSIVE, Reason.CONFLICTING,
                f"significant but smaller than the smallest effect that matters: "
                f"{', '.join(f'{t} ({f})' for t, f in refuted if (t, f) in significant)}. "
                f"{shown}", p_iut, rows)
    if refuted:
        return (Verdict.REFUTED, Reason.DECIDED,
                f"smaller than the smallest effect that matters (p < beta = {BETA} / {m}): "
                f"{', '.join(f'{t} ({f})' for t, f in refuted)}. "
                f"{shown}", p_iut, rows)
    if len(significant) == len(primaries):
        return (Verdict.CONFIRMED, Reason.DECIDED,
                f"every test below alpha = {ALPHA} (intersection-union p = {p_iut:.3g}). {shown}",
                p_iut, rows)
    return (Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED,
            f"not every test decides at {n} questions per cell. {shown}", p_iut, rows)


@dataclass(frozen=True)
class PromptingParams(Params):
    """The local model (``llm_dir``: a directory in the Hugging Face layout, None: not run;
    ``verify --llm-dir``), the question ``formulations``, the chain ``depths`` asked (the
    shortest and the longest decide), ``chains`` per question (the options: chance
    1/chains) and ``questions`` per formulation and depth (at least 1)."""

    llm_dir: str | None
    formulations: tuple[str, ...]
    depths: tuple[int, ...]
    chains: int
    questions: int

    def __post_init__(self) -> None:
        if self.questions < 1:
            raise ValueError(f"questions must be an integer >= 1; got {self.questions!r}")


class LlmsSolveByPrompting(Claim):
    """``musat.llms_solve_by_prompting`` (module docstring)."""

    id = "musat.llms_solve_by_prompting"
    kind = ClaimKind.PAPER
    protocol = PROTOCOL
    code_version = 1
    paper = "musat"
    statement = ("A pretrained language model answers retrieval questions in words well above "
                 "chance without fine-tuning, and its accuracy falls toward chance as the "
                 "chain grows.")
    paper_scale = "several LLMs, 500 questions per formulation, five formulations, 4 options"
    full_is_paper_scale = False
    overridable = ("llm_dir",)
    space: ClassVar[dict[str, Dimension]] = {
        "deepest": Dimension("the longest chain D asked (the shortest is 2)", low=3, high=16),
        "chains": Dimension("chains per question: the options (chance 1/chains)", low=2,
                            high=10)}
    defaults: ClassVar[dict[str, PromptingParams]] = {
        "smoke": PromptingParams(llm_dir=None, formulations=("assignment",), depths=(2, 4),
                                 chains=4, questions=20),
        "quick": PromptingParams(llm_dir=None, formulations=("assignment", "residence"),
                                 depths=(2, 4, 8), chains=4, questions=100),
        "full": PromptingParams(llm_dir=None, formulations=("assignment", "residence"),
                                depths=(2, 4, 8, 16), chains=4, questions=500),
    }

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        return {"depths": [2, point["deepest"]], "chains": point["chains"]}

    def check_params(self, params: dict[str, Any]) -> None:
        super().check_params(params)
        for formulation in params["formulations"]:
            for depth in params["depths"]:
                check_question_sizes(formulation, depth, params["chains"])
        if len(set(params["depths"])) < 2:
            raise ValueError(f"depths must hold at least two chain lengths; got "
                             f"{params['depths']}")
        if min(params["depths"]) < 2:
            raise ValueError(f"every depth must be >= 2 (D = 1 is the root statement alone: "
                             f"no link to follow); got {params['depths']}")

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        self.check_params(params)
        tolerance = Tolerance(
            "the smallest effects that matter, fixed before any decision question was asked",
            {"well_above_chance_by": WELL_ABOVE, "min_drop": MIN_DROP, "alpha": ALPHA,
             "beta": BETA})
        theory = (f"accuracy >= 1/{params['chains']} + {WELL_ABOVE} at the shortest chain, "
                  f"falling with D")
        if not params.get("llm_dir"):
            return self._not_run("no local model: give verify --llm-dir DIR (a causal LM and "
                                 "its tokenizer as save_pretrained writes them)", theory,
                                 tolerance)
        from attnverify.empirics.models.local_llm import (
            INSTALL_HINT,
            LocalCausalLM,
            check_model_directory,
            model_fingerprint,
        )

        if find_spec("transformers") is None:
            return self._not_run(f"a local model needs transformers: {INSTALL_HINT}", theory,
                                 tolerance)
        try:
            directory = check_model_directory(Path(params["llm_dir"]))
        except FileNotFoundError as exc:
            return self._not_run(str(exc), theory, tolerance)
        fingerprint = model_fingerprint(directory)
        scorer = _LazyModel(LocalCausalLM, directory)
        right = measure(params, scorer, fingerprint)
        counts = {f: {d: int(r.sum()) for d, r in by.items()} for f, by in right.items()}
        verdict, reason, text, p_iut, rows = decide_prompting(
            counts, params["questions"], params["chains"])
        first = rows[0]
        k_first = counts[first["formulation"]][first["shortest"]]
        return Assessment(
            verdict=verdict, reason=reason, p_value=p_iut, theory=theory,
            empirical=Measurement(
                first["acc_shortest"], quantity="accuracy at the shortest chain",
                ci=binomial_ci(k_first, params["questions"]), confidence=0.95,
                at=f"{first['formulation']}, D = {first['shortest']}",
                extras={"accuracy_longest": first["acc_longest"]}),
            statistic=(f"{params['questions']} questions per formulation and depth, "
                       f"{params['chains']} options, model {directory.name} "
                       f"(fingerprint {fingerprint}). {FORMULATION_NOTE}"),
            tolerance=tolerance, explanation=text,
            details={"counts": {f: {str(d): k for d, k in by.items()}
                                for f, by in counts.items()},
                     "questions": params["questions"], "chains": params["chains"],
                     "tests": rows, "model": fingerprint})

    @staticmethod
    def _not_run(why: str, theory: str, tolerance: Tolerance) -> Assessment:
        return Assessment(
            verdict=Verdict.INCONCLUSIVE, reason=Reason.NOT_TESTABLE, theory=theory,
            empirical=Measurement(None, quantity="accuracy at the shortest chain",
                                  at="no model answered"),
            statistic="no model answered", tolerance=tolerance,
            explanation=f"not run: {why}.")

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        counts = assessment.details.get("counts")
        if not counts:
            return {}
        return {"accuracy": accuracy_figure(counts, assessment.details["questions"],
                                            assessment.details["chains"])}


class _LazyModel:
    """Loads the model at its first question: a warm memo answers without loading it."""

    def __init__(self, loader: Any, directory: Path) -> None:
        self._loader, self._directory = loader, directory
        self._model: Any = None

    def option_scores(self, prompt: str, options: Sequence[str]) -> np.ndarray:
        if self._model is None:
            self._model = self._loader(self._directory)
        return self._model.option_scores(prompt, options)


COLOURS = ("blue", "orange", "green", "purple", "sky", "red")


def accuracy_figure(counts: Mapping[str, Mapping[str, int]], questions: int,
                    chains: int) -> Figure:
    """Accuracy against chain depth per formulation, with Clopper-Pearson intervals and the
    chance line (the layout of the paper's Figure 2, whose numbers are unknown);
    ``counts[formulation][depth]``: right answers of ``questions`` per cell."""
    fig, (ax,) = new_figure(width=5.0)
    for i, (formulation, by_depth) in enumerate(counts.items()):
        depths = sorted(by_depth, key=int)
        x = [int(d) for d in depths]
        acc = [by_depth[d] / questions for d in depths]
        cis = [stats.binomtest(by_depth[d], questions).proportion_ci(0.95, method="exact")
               for d in depths]
        low = [a - ci.low for a, ci in zip(acc, cis, strict=True)]
        high = [ci.high - a for a, ci in zip(acc, cis, strict=True)]
        ax.errorbar(x, acc, yerr=[low, high], marker="o", capsize=3, label=formulation,
                    color=PALETTE[COLOURS[i % len(COLOURS)]])
    ax.axhline(1 / chains, color=PALETTE["grey"], linestyle="--",
               label=f"chance (1/{chains})")
    ax.set_xscale("log", base=2)
    ticks = sorted({int(d) for by_depth in counts.values() for d in by_depth})
    ax.set_xticks(ticks, [str(d) for d in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("chain depth D (links)")
    ax.set_ylabel("multiple-choice accuracy")
    ax.set_title("a pretrained LM on retrieval questions")
    ax.legend(fontsize=7)
    return fig
