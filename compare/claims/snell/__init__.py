"""Claims of Snell, Zhong, Klein, Steinhardt (2021), in the order of the report (the
derivations they test: docs/derivations.md#snell-et-al-2021)."""

from attnverify.compare.claims.snell.cooccurrence import KappaClosedForm, cooccurrence_max_z
from attnverify.compare.claims.snell.copying import KtiwPrecedesAttention, PermutationIsHard
from attnverify.compare.claims.snell.dynamics import DynamicsNotExpressiveness
from attnverify.compare.claims.snell.initialisation import UniformAttentionAtInit
from attnverify.compare.claims.snell.kappa_speed import KappaPredictsLearningSpeed
from attnverify.compare.claims.snell.low_loss import LowLossWithoutAlignedAttention
from attnverify.compare.claims.snell.multihead import MultiheadRescuesPermutations
from attnverify.compare.claims.snell.one_good_head import OneGoodHeadRescues
from attnverify.compare.claims.snell.onset_rate import Stage2OnsetRate
from attnverify.compare.claims.snell.probe_agreement import UniformProbeAgreesWithAttention
from attnverify.compare.claims.snell.subset import SubsetLearnedEverySeed
from attnverify.compare.claims.snell.symmetry import InitScaleBreaksSymmetry
from attnverify.compare.claims.snell.toys import PermutationSaddle, ToyClassifierClosedForm
from attnverify.compare.claims.snell.uniform_attention import (
    KtiwLearnedUnderUniformAttention,
    Stage1BowOptimum,
)

CLAIMS = (
    KappaClosedForm,
    UniformAttentionAtInit,
    Stage1BowOptimum,
    KtiwLearnedUnderUniformAttention,
    UniformProbeAgreesWithAttention,
    KtiwPrecedesAttention,
    PermutationIsHard,
    ToyClassifierClosedForm,
    PermutationSaddle,
    InitScaleBreaksSymmetry,
    LowLossWithoutAlignedAttention,
    Stage2OnsetRate,
    KappaPredictsLearningSpeed,
    MultiheadRescuesPermutations,
    OneGoodHeadRescues,
    DynamicsNotExpressiveness,
    SubsetLearnedEverySeed,
)
__all__ = ["CLAIMS", "cooccurrence_max_z", *(c.__name__ for c in CLAIMS)]
