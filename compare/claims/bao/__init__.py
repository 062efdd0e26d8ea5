"""Claims of Bao, Hataya, Karakida (2024), ``shared/papers/bao2024.md``, registered in the order
of the report. The theory they test is the spec's derivation under a stated token model, not
the paper's own theorem (which was not available); every statistic says so."""

from compare.claims.bao.moments import (
    AntrpVariantDisagrees,
    PropagationProbability,
    ScoreMoments,
)
from compare.claims.bao.regimes import (
    EntropyMonotoneInVariance,
    LargeVarianceVanishes,
    RankCollapseAtUniform,
    SmallVarianceLocalizes,
    ZeroMeanNoSelectivity,
)
from compare.claims.bao.training import LocaterEffect, TrainedSpectrumPredictsLocalization
from compare.registry import register

CLAIMS = (
    ScoreMoments,
    PropagationProbability,
    ZeroMeanNoSelectivity,
    LargeVarianceVanishes,
    SmallVarianceLocalizes,
    EntropyMonotoneInVariance,
    RankCollapseAtUniform,
    LocaterEffect,
    TrainedSpectrumPredictsLocalization,
    AntrpVariantDisagrees,
)
for _claim in CLAIMS:
    register(_claim)

__all__ = ["CLAIMS", *(c.__name__ for c in CLAIMS)]
