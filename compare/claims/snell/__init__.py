"""Claims of Snell, Zhong, Klein, Steinhardt (2021), ``shared/papers/snell2021.md``, registered
in the order of the report."""

from compare.claims.snell.cooccurrence import KappaClosedForm, cooccurrence_max_z
from compare.claims.snell.copying import (
    KappaPredictsLearningSpeed,
    KtiwPrecedesAttention,
    PermutationIsHard,
    SubsetLearnedEverySeed,
)
from compare.claims.snell.initialisation import UniformAttentionAtInit
from compare.claims.snell.multihead import MultiheadRescuesPermutations
from compare.claims.snell.toys import PermutationSaddle, ToyClassifierClosedForm
from compare.claims.snell.uniform_attention import (
    KtiwLearnedUnderUniformAttention,
    Stage1BowOptimum,
)
from compare.registry import register

CLAIMS = (
    KappaClosedForm,
    UniformAttentionAtInit,
    Stage1BowOptimum,
    KtiwLearnedUnderUniformAttention,
    KtiwPrecedesAttention,
    PermutationIsHard,
    ToyClassifierClosedForm,
    PermutationSaddle,
    KappaPredictsLearningSpeed,
    MultiheadRescuesPermutations,
    SubsetLearnedEverySeed,
)
for _claim in CLAIMS:
    register(_claim)

__all__ = ["CLAIMS", "cooccurrence_max_z", *(c.__name__ for c in CLAIMS)]
