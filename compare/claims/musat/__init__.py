"""Claims of Mușat (2024, ICLR 2025), in report order (docs/derivations.md#mușat-2024), one
module per claim (named after the id's second part); what they share: :mod:`.common` (the
reconstruction note, thresholds, seed blocks, designs), :mod:`.runs` (the retrieval runs and
their typed profiles), :mod:`.retrieval_claim` (the base of the training claims),
:mod:`.below_bound`, :mod:`.heads`, :mod:`.lens_common`, :mod:`.reach` and :mod:`.figures`.
The minimal formulation and the theory's integer forms are reconstructions [R]; every statistic
says so."""

from attnverify.compare.claims.musat.construction_meets_bound import ConstructionMeetsBound
from attnverify.compare.claims.musat.depth_bound_closed_form import DepthBoundClosedForm
from attnverify.compare.claims.musat.depth_step_at_refined_bound import DepthStepAtRefinedBound
from attnverify.compare.claims.musat.depths_emerge_in_order import DepthsEmergeInOrder
from attnverify.compare.claims.musat.heads_compose_subchains import HeadsComposeSubchains
from attnverify.compare.claims.musat.heads_emerge_in_sequence import HeadsEmergeInSequence
from attnverify.compare.claims.musat.implicit_curriculum_needed import ImplicitCurriculumNeeded
from attnverify.compare.claims.musat.llms_solve_by_prompting import LlmsSolveByPrompting
from attnverify.compare.claims.musat.shallow_models_fail import ShallowModelsFail
from attnverify.compare.claims.musat.sufficient_depth_learns import SufficientDepthLearns
from attnverify.compare.claims.musat.target_appears_at_bound import TargetAppearsAtBound

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
