"""Trained one-layer attention language models (Bao et al. 2024): the configuration and runs the
Bao training claims share (``bao.locater_effect`` and
``bao.small_variance_prevents_rank_collapse_in_training`` through :mod:`.locater_runs`,
``bao.small_variance_avoids_entropy_collapse``, ``bao.trained_spectrum_predicts_localization``).

The default task is the random-walk language task of :mod:`empirics.tasks.random_walk` (WikiText-2
cannot be downloaded here); ``verify --corpus DIR`` trains on a local WikiText-format corpus
instead. Runs are paired: the same seed gives the same initialisation and data stream for every
LocAteR coefficient, so effects are measured as per-seed differences.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnverify.compare.params import Params
from attnverify.empirics import (
    Adam,
    AttentionLMConfig,
    RandomWalkLMTask,
    RunResult,
    RunSpec,
    TaskConfig,
    TextCorpusTask,
)

PAPER_LM = ("1 layer, 1 head, Post-LN, d = 128 throughout, fairseq transformer_lm on "
            "WikiText-2, at least 3 seeds per coefficient (hyper-parameters unknown, §5.3)")
LM_SCALE_WEAKNESS = ("the default task is a synthetic random-walk language task, not "
                     "WikiText-2, and even full stays below the paper's setting (its "
                     "hyper-parameters are unknown)")


@dataclass(frozen=True)
class LMSettings(Params):
    """The model and training of every Bao run: width ``d`` (and feed-forward width),
    ``vocab`` tokens, sequences of ``T``, ``steps`` of Adam at ``lr`` on batches of
    ``batch_size``, evaluated every ``eval_every`` steps on ``eval_size`` validation
    sequences. Each claim's parameters extend these (the fields first, in this order)."""

    d: int
    vocab: int
    T: int
    steps: int
    lr: float
    batch_size: int
    eval_every: int
    eval_size: int


LM_SETTINGS = {
    # smoke: wiring; quick: d = 32 on the random-walk task; full: the paper's widths (d = 128)
    "smoke": LMSettings(d=32, vocab=32, T=32, steps=200, lr=3e-3, batch_size=32, eval_every=20,
                        eval_size=256),
    "quick": LMSettings(d=32, vocab=32, T=32, steps=400, lr=3e-3, batch_size=32, eval_every=20,
                        eval_size=256),
    "full": LMSettings(d=128, vocab=64, T=128, steps=2000, lr=5e-4, batch_size=32,
                       eval_every=100, eval_size=256),
}
"""The model and training per profile, shared by every Bao training claim."""


@dataclass(frozen=True)
class LMParams(LMSettings):
    """:class:`LMSettings`, ``seeds`` paired seeds per LocAteR coefficient of ``lambdas``
    (distinct: each names its group of runs, :func:`lambda_group`)."""

    seeds: int
    lambdas: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(set(self.lambdas)) < len(self.lambdas):
            raise ValueError(f"lambdas must be distinct coefficients; got {self.lambdas!r}")


LM = {
    # quick: 8 paired seeds; full: the spec's log grid of coefficients
    "smoke": LMParams(**LM_SETTINGS["smoke"].as_dict(), seeds=3, lambdas=(0.0, 1.0)),
    "quick": LMParams(**LM_SETTINGS["quick"].as_dict(), seeds=8,
                      lambdas=(0.0, 0.01, 0.1, 1.0)),
    "full": LMParams(**LM_SETTINGS["full"].as_dict(), seeds=5,
                     lambdas=(0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)),
}
"""Paired seeds per LocAteR coefficient (``bao.trained_spectrum_predicts_localization``)."""


def lm_task(params: dict[str, Any]) -> TaskConfig:
    if params.get("corpus"):
        return TextCorpusTask.from_directory(params["corpus"], T=params["T"])
    return RandomWalkLMTask(vocab=params["vocab"], T=params["T"])


def lm_specs(params: dict[str, Any], first_seed: int = 0) -> list[RunSpec]:
    """Seeds ``first_seed``, ``first_seed + 1``, ... x coefficients, coefficient-major."""
    task = lm_task(params)
    return [RunSpec(task=task, model=AttentionLMConfig(d=params["d"], ffn=params["d"],
                                                       locater=lam),
                    optimizer=Adam(lr=params["lr"]), steps=params["steps"],
                    batch_size=params["batch_size"], eval_every=params["eval_every"],
                    eval_size=params["eval_size"], seed=first_seed + i)
            for lam in params["lambdas"] for i in range(params["seeds"])]


def lambda_group(lam: float) -> str:
    """The name of the group of runs at LocAteR coefficient ``lam``."""
    return f"lambda_{lam!r}"


def final(result: RunResult, name: str) -> float:
    return float(result.metric(name)[-1]) if not result.diverged else float("nan")
