"""Claims of Mușat (2024, ICLR 2025), ``shared/papers/musat2024.md``, registered in report order.
The minimal formulation and the theory's integer forms are reconstructions [R]; every statistic
says so."""

from compare.claims.musat.bounds import ConstructionMeetsBound, DepthBoundClosedForm
from compare.claims.musat.training import (
    DepthsEmergeInOrder,
    HeadsEmergeInSequence,
    ImplicitCurriculumNeeded,
    ShallowModelsFail,
    SufficientDepthLearns,
)
from compare.registry import register

CLAIMS = (
    DepthBoundClosedForm,
    ConstructionMeetsBound,
    ShallowModelsFail,
    SufficientDepthLearns,
    ImplicitCurriculumNeeded,
    DepthsEmergeInOrder,
    HeadsEmergeInSequence,
)
for _claim in CLAIMS:
    register(_claim)

__all__ = ["CLAIMS", *(c.__name__ for c in CLAIMS)]
