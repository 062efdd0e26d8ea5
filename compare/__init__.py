"""Claims, verdicts, statistics, reports and the CLI: imports ``theory`` and ``empirics``."""

from compare.claim import PROFILES, Assessment, Claim, Verdict
from compare.registry import CLAIMS, register, select
from compare.verify import ClaimOutcome, evaluate, evaluate_all

__all__ = ["CLAIMS", "PROFILES", "Assessment", "Claim", "ClaimOutcome", "Verdict", "evaluate",
           "evaluate_all",
           "register", "select"]
