"""Theory of Snell, Zhong, Klein, Steinhardt (2021), *Approximating How Single Head Attention
Learns* (arXiv:2103.07601), one module per concept. The closed forms are derived by attnverify
from the paper's two-stage approximation (not stated in the paper); docs/derivations.md derives
each one:

- :mod:`~theory.snell.cooccurrence`: the stage-1 KTIW signal kappa and co-occurrence
  (docs/derivations.md#co-occurrence-and-kappa, docs/derivations.md#peak-of-kappa)
- :mod:`~theory.snell.bag_of_words`: the stage-1 bag-of-words optimum
  (docs/derivations.md#stage-1-bag-of-words-optimum)
- :mod:`~theory.snell.toy_classifier`: the warm-up toy's gradient flow, solved with sympy
  (docs/derivations.md#warm-up-toy-classifier)
- :mod:`~theory.snell.stage2`: the attention gradient at uniform attention given KTIW
  (docs/derivations.md#stage-2-attention-logit-velocity)
- :mod:`~theory.snell.free_attention`: the free-attention toy and its permutation saddle
  (docs/derivations.md#free-attention-toy-and-permutation-saddle)
"""

from attnverify.theory.snell.bag_of_words import (
    stage1_accuracy_bound,
    stage1_exclusion_loss,
    stage1_loss,
)
from attnverify.theory.snell.cooccurrence import DISTRIBUTIONS, cooccurrence, kappa, kappa_peak
from attnverify.theory.snell.free_attention import (
    free_attention_gradients,
    free_attention_loss,
    permutation_saddle_loss,
)
from attnverify.theory.snell.stage2 import stage2_logit_velocity, stage2_onset_rate
from attnverify.theory.snell.toy_classifier import (
    toy_classifier_first_crossing,
    toy_classifier_solution,
    toy_classifier_tau_star,
    toy_classifier_trajectory,
)

__all__ = [
    "DISTRIBUTIONS",
    "cooccurrence",
    "free_attention_gradients",
    "free_attention_loss",
    "kappa",
    "kappa_peak",
    "permutation_saddle_loss",
    "stage1_accuracy_bound",
    "stage1_exclusion_loss",
    "stage1_loss",
    "stage2_logit_velocity",
    "stage2_onset_rate",
    "toy_classifier_first_crossing",
    "toy_classifier_solution",
    "toy_classifier_tau_star",
    "toy_classifier_trajectory",
]
