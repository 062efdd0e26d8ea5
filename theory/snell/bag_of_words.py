"""The stage-1 bag-of-words optimum of Snell et al. (2021): derived by attnverify, not stated
in the paper (docs/derivations.md#stage-1-bag-of-words-optimum).

Under uniform attention and assumption (a) the context is the same bag of words for every target
step, so the best a pure bag-of-words model can do on subset copying is p*(o | x) = 1/L for o in
x: a per-token loss of log L over the L word positions (EOS excluded), against log V at the
start. On permutations the bag is constant, so p* is the marginal 1/V and the loss stays log V:
stage 1 learns nothing beyond the marginal.

A teacher-forced decoder also knows which words it has already emitted. If it uses the bag and
excludes emitted words, step t (0-based) has L - t candidates: the accuracy bound
(H_L + 1)/(L + 1) with the EOS step included, and the loss bound log(L!)/L over the word
positions (by the same counting argument).
"""

from __future__ import annotations

import math

from attnverify.theory.prediction import Prediction
from attnverify.theory.snell.cooccurrence import check_sizes

_SOURCE = ("derived by attnverify, not stated in Snell et al. 2021 (arXiv:2103.07601): "
           "docs/derivations.md#stage-1-bag-of-words-optimum (§4.5)")


def stage1_loss(V: int, L: int, distribution: str = "subset") -> Prediction:
    """Best per-word loss of a pure bag-of-words model: log L (subset), log V (permutation)."""
    check_sizes(V, L, distribution)
    if distribution == "iid":
        raise ValueError("stage1_loss is defined for the subset and permutation distributions")
    value = math.log(V) if distribution == "permutation" else math.log(L)
    return Prediction(
        value=value,
        equation="log L (subset); log V (permutation: constant bag, marginal 1/V)",
        source=_SOURCE,
        assumptions=("uniform attention", "context = bag of input words (assumption (a))",
                     "EOS step excluded"),
        derived=True,
        params={"V": V, "L": L, "distribution": distribution},
    )


def stage1_exclusion_loss(L: int) -> Prediction:
    """Per-word loss bound log(L!)/L of a bag-of-words decoder that excludes emitted words."""
    if not isinstance(L, int) or L < 1:
        raise ValueError(f"L (sequence length) must be an integer >= 1; got {L!r}")
    return Prediction(
        value=math.lgamma(L + 1) / L,
        equation="(1/L) sum_{t=0}^{L-1} log(L - t) = log(L!)/L",
        source=_SOURCE,
        assumptions=("uniform attention", "bag of words plus the emitted prefix, no order "
                     "information", "EOS step excluded"),
        derived=True,
        params={"L": L},
    )


def stage1_accuracy_bound(L: int) -> Prediction:
    """Accuracy bound (H_L + 1)/(L + 1) of a bag-of-words decoder excluding emitted words."""
    if not isinstance(L, int) or L < 1:
        raise ValueError(f"L (sequence length) must be an integer >= 1; got {L!r}")
    harmonic = sum(1.0 / k for k in range(1, L + 1))
    return Prediction(
        value=(harmonic + 1) / (L + 1),
        equation="(H_L + 1) / (L + 1)",
        source=_SOURCE,
        assumptions=("uniform attention", "teacher forcing, emitted words excluded",
                     "EOS step included"),
        derived=True,
        params={"L": L},
    )
