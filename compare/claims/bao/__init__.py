"""Claims of Bao, Hataya, Karakida (2024), in the order of the report. The theory they test is
attnverify's derivation (docs/derivations.md#bao-hataya-karakida-2024) under a stated token
model, not the paper's own theorem (which was not available); every statistic says so."""

from attnverify.compare.claims.bao.entropy import EntropyMonotoneInMean, EntropyMonotoneInVariance
from attnverify.compare.claims.bao.entropy_collapse import SmallVarianceAvoidsEntropyCollapse
from attnverify.compare.claims.bao.locater import LocaterEffect
from attnverify.compare.claims.bao.moments import (
    AntrpVariantDisagrees,
    PropagationProbability,
    ScoreMoments,
)
from attnverify.compare.claims.bao.rank_collapse import RankCollapseAtUniform
from attnverify.compare.claims.bao.regimes import (
    LargeVarianceVanishes,
    SmallVarianceLocalizes,
    ZeroMeanNoSelectivity,
)
from attnverify.compare.claims.bao.token_diversity import SmallVarianceKeepsTokenDiversity
from attnverify.compare.claims.bao.training import TrainedSpectrumPredictsLocalization

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
