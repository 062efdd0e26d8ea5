"""Claims of Bao, Hataya, Karakida (2024), in the order of the report. The theory they test is
attnverify's derivation (docs/derivations.md#bao-hataya-karakida-2024) under a stated token
model, not the paper's own theorem (which was not available); every statistic says so.

One module per claim, named after the claim's id; what several share: :mod:`.common` (the
Monte Carlo, the token model, the derivation checks' protocol wording), :mod:`.entropy_grid`
(the rule of the two entropy claims), :mod:`.training` (the trained models' configuration and
runs), :mod:`.locater_runs` (the LocAteR design two claims read) and :mod:`.figures`."""

from attnverify.compare.claims.bao.antrp_variant_disagrees import AntrpVariantDisagrees
from attnverify.compare.claims.bao.entropy_monotone_in_mean import EntropyMonotoneInMean
from attnverify.compare.claims.bao.entropy_monotone_in_variance import EntropyMonotoneInVariance
from attnverify.compare.claims.bao.large_variance_vanishes import LargeVarianceVanishes
from attnverify.compare.claims.bao.locater_effect import LocaterEffect
from attnverify.compare.claims.bao.propagation_probability import PropagationProbability
from attnverify.compare.claims.bao.rank_collapse_at_uniform import RankCollapseAtUniform
from attnverify.compare.claims.bao.score_moments import ScoreMoments
from attnverify.compare.claims.bao.small_variance_avoids_entropy_collapse import (
    SmallVarianceAvoidsEntropyCollapse,
)
from attnverify.compare.claims.bao.small_variance_localizes import SmallVarianceLocalizes
from attnverify.compare.claims.bao.small_variance_prevents_rank_collapse_in_training import (
    SmallVarianceKeepsTokenDiversity,
)
from attnverify.compare.claims.bao.trained_spectrum_predicts_localization import (
    TrainedSpectrumPredictsLocalization,
)
from attnverify.compare.claims.bao.zero_mean_no_selectivity import ZeroMeanNoSelectivity

CLAIMS = (
    ScoreMoments,
    PropagationProbability,
    ZeroMeanNoSelectivity,
    LargeVarianceVanishes,
    SmallVarianceLocalizes,
    EntropyMonotoneInVariance,
    EntropyMonotoneInMean,
    RankCollapseAtUniform,
    LocaterEffect,
    SmallVarianceKeepsTokenDiversity,
    SmallVarianceAvoidsEntropyCollapse,
    TrainedSpectrumPredictsLocalization,
    AntrpVariantDisagrees,
)
__all__ = ["CLAIMS", *(c.__name__ for c in CLAIMS)]
