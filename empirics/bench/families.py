"""The runs ``attnverify bench`` times: one per model family and configuration.

These are the runs the claims train at their ``quick`` and ``full`` profiles (seed 0), so that
the benchmark measures what ``verify`` trains: Snell's copying LSTM (single head) and
multi-head GRU on permutations, Mușat's retrieval transformer at the deep cell with in-context
statements, and Bao's attention LM without LocAteR. They are written out here, since empirics
does not import the claims; tests/test_bench.py keeps every run's key equal to the claims' run.

The values that differ between the two configurations are the tables below; everything else
is written out in :func:`family_spec`.
"""

from __future__ import annotations

from typing import NamedTuple

from attnverify.empirics import (
    Adam,
    AttentionLMConfig,
    CopyTask,
    RandomWalkLMTask,
    RetrievalTask,
    RetrievalTransformerConfig,
    RunSpec,
    Seq2SeqConfig,
)

__all__ = ["CONFIGS", "FAMILIES", "family_spec"]

FAMILIES = ("snell_copying", "snell_multihead", "musat_retrieval", "bao_lm")
CONFIGS = ("quick", "full")

class Copying(NamedTuple):
    """Snell's copying runs (both families): ``hidden`` units, sequence length ``L``
    (permutations of L tokens, vocabulary L) and the training schedule."""

    hidden: int
    L: int
    steps: int
    batch_size: int
    eval_every: int
    eval_size: int


class Retrieval(NamedTuple):
    """Mușat's retrieval runs: chain depth ``D``, ``layers`` and width ``d_model`` of the
    transformer, the schedule."""

    D: int
    layers: int
    d_model: int
    lr: float
    steps: int
    batch_size: int
    eval_size: int


class LanguageModel(NamedTuple):
    """Bao's attention-LM runs: the random walk's ``vocab`` and length ``T``, the model width
    ``d`` (its feed-forward width too), the schedule."""

    vocab: int
    T: int
    d: int
    lr: float
    steps: int
    eval_every: int


COPYING = {"quick": Copying(hidden=64, L=20, steps=500, batch_size=64, eval_every=25,
                            eval_size=100),
           "full": Copying(hidden=256, L=40, steps=200, batch_size=128, eval_every=10,
                           eval_size=50)}
RETRIEVAL = {"quick": Retrieval(D=2, layers=4, d_model=32, lr=3e-3, steps=4000, batch_size=64,
                                eval_size=512),
             "full": Retrieval(D=3, layers=4, d_model=64, lr=1e-3, steps=24_000,
                               batch_size=128, eval_size=1024)}
LM = {"quick": LanguageModel(vocab=32, T=32, d=32, lr=3e-3, steps=400, eval_every=20),
      "full": LanguageModel(vocab=64, T=128, d=128, lr=5e-4, steps=2000, eval_every=100)}


def family_spec(family: str, config: str) -> RunSpec:
    """The run a claim of ``family`` trains at profile ``config`` (seed 0)."""
    if config not in CONFIGS:
        raise ValueError(f"unknown config {config!r}; accepted: {', '.join(CONFIGS)}")
    if family in ("snell_copying", "snell_multihead"):
        c = COPYING[config]
        model = (Seq2SeqConfig(hidden=c.hidden, heads=8, cell="gru", shared_embedding=False)
                 if family == "snell_multihead" else
                 Seq2SeqConfig(hidden=c.hidden, heads=1, cell="lstm", shared_embedding=True))
        return RunSpec(task=CopyTask("permutation", vocab_size=c.L, length=c.L),
                       model=model, optimizer=Adam(lr=1e-3), steps=c.steps,
                       batch_size=c.batch_size, eval_every=c.eval_every,
                       eval_size=c.eval_size, seed=0)
    if family == "musat_retrieval":
        r = RETRIEVAL[config]
        return RunSpec(task=RetrievalTask(D=r.D, K=4, vocab=64, ic=True, distractors=0),
                       model=RetrievalTransformerConfig(layers=r.layers, heads=4,
                                                        d_model=r.d_model),
                       optimizer=Adam(lr=r.lr), steps=r.steps, batch_size=r.batch_size,
                       eval_every=100, eval_size=r.eval_size, seed=0)
    if family == "bao_lm":
        m = LM[config]
        return RunSpec(task=RandomWalkLMTask(vocab=m.vocab, T=m.T),
                       model=AttentionLMConfig(d=m.d, ffn=m.d, locater=0.0),
                       optimizer=Adam(lr=m.lr), steps=m.steps, batch_size=32,
                       eval_every=m.eval_every, eval_size=256, seed=0)
    raise ValueError(f"unknown family {family!r}; accepted: {', '.join(FAMILIES)}")
