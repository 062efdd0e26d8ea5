"""Claims of Mușat (2024, ICLR 2025), in report order (docs/derivations.md#mușat-2024).
The minimal formulation and the theory's integer forms are reconstructions [R]; every statistic
says so."""

from attnverify.compare.claims.musat.bounds import ConstructionMeetsBound, DepthBoundClosedForm
from attnverify.compare.claims.musat.composition import HeadsComposeSubchains
from attnverify.compare.claims.musat.depth_step import DepthStepAtRefinedBound
from attnverify.compare.claims.musat.emergence import DepthsEmergeInOrder, HeadsEmergeInSequence
from attnverify.compare.claims.musat.lens import TargetAppearsAtBound
from attnverify.compare.claims.musat.prompting import LlmsSolveByPrompting
from attnverify.compare.claims.musat.shallow import ShallowModelsFail
from attnverify.compare.claims.musat.training import ImplicitCurriculumNeeded, SufficientDepthLearns

CLAIMS = (
    DepthBoundClosedForm,
    ConstructionMeetsBound,
    ShallowModelsFail,
    DepthStepAtRefinedBound,
    SufficientDepthLearns,
    TargetAppearsAtBound,
    ImplicitCurriculumNeeded,
    DepthsEmergeInOrder,
    HeadsEmergeInSequence,
    HeadsComposeSubchains,
    LlmsSolveByPrompting,
)
__all__ = ["CLAIMS", *(c.__name__ for c in CLAIMS)]
