"""Claims, verdicts, statistics, reports and the CLI: imports ``theory`` and ``empirics``.

The public names load on first use (PEP 562), so that the command line's light commands
(``attnverify predict``, ``--version``) never import torch or hypothesis.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnverify.compare.claim import PROFILES, Assessment, Claim, Verdict
    from attnverify.compare.evaluation.verify import ClaimOutcome, evaluate, evaluate_all
    from attnverify.compare.measurement import Measurement, Tolerance
    from attnverify.compare.registry import CLAIMS, register, select

_EXPORTS = {
    "PROFILES": "claim", "Assessment": "claim", "Claim": "claim", "Verdict": "claim",
    "Measurement": "measurement", "Tolerance": "measurement",
    "CLAIMS": "registry", "register": "registry", "select": "registry",
    "ClaimOutcome": "evaluation.verify", "evaluate": "evaluation.verify",
    "evaluate_all": "evaluation.verify",
}

__all__ = ["CLAIMS", "PROFILES", "Assessment", "Claim", "ClaimOutcome", "Measurement",
           "Tolerance", "Verdict", "evaluate", "evaluate_all", "register", "select"]


def __getattr__(name: str) -> Any:
    if name == "CLAIMS":  # the registry with the built-in claims in it
        importlib.import_module(f"{__name__}.registry").load_builtins()
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
