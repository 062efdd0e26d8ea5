"""Claims of Snell, Zhong, Klein, Steinhardt (2021), in the order of the report (the
derivations they test: docs/derivations.md#snell-et-al-2021)."""

from attnverify.compare.claims.snell.dynamics_not_expressiveness import (
    DynamicsNotExpressiveness,
)
from attnverify.compare.claims.snell.init_scale_breaks_symmetry import InitScaleBreaksSymmetry
from attnverify.compare.claims.snell.kappa_closed_form import KappaClosedForm, cooccurrence_max_z
from attnverify.compare.claims.snell.kappa_predicts_learning_speed import (
    KappaPredictsLearningSpeed,
)
from attnverify.compare.claims.snell.ktiw_harder_on_permutations import KtiwHarderOnPermutations
from attnverify.compare.claims.snell.ktiw_learned_under_uniform_attention import (
    KtiwLearnedUnderUniformAttention,
)
from attnverify.compare.claims.snell.ktiw_precedes_attention import KtiwPrecedesAttention
from attnverify.compare.claims.snell.low_loss_without_aligned_attention import (
    LowLossWithoutAlignedAttention,
)
from attnverify.compare.claims.snell.permutation_is_hard import PermutationIsHard
from attnverify.compare.claims.snell.permutation_ktiw_at_chance import PermutationKtiwAtChance
from attnverify.compare.claims.snell.permutation_saddle import PermutationSaddle
from attnverify.compare.claims.snell.section5.multihead_rescues_permutations import (
    MultiheadRescuesPermutations,
)
from attnverify.compare.claims.snell.section5.one_good_head_rescues import OneGoodHeadRescues
from attnverify.compare.claims.snell.stage1_bow_optimum import Stage1BowOptimum
from attnverify.compare.claims.snell.stage2_onset_rate import Stage2OnsetRate
from attnverify.compare.claims.snell.subset_learned_every_seed import SubsetLearnedEverySeed
from attnverify.compare.claims.snell.toy_classifier_closed_form import ToyClassifierClosedForm
from attnverify.compare.claims.snell.uniform_attention_at_init import UniformAttentionAtInit
from attnverify.compare.claims.snell.uniform_probe_agrees_with_attention import (
    UniformProbeAgreesWithAttention,
)

CLAIMS = (
    KappaClosedForm,
    UniformAttentionAtInit,
    Stage1BowOptimum,
    KtiwLearnedUnderUniformAttention,
    KtiwHarderOnPermutations,
    PermutationKtiwAtChance,
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
