"""A property-based testing toolkit: write your own tests of a theory against training.

- :func:`strategy_for`: the points of a claim's parameter space, as a hypothesis strategy.
- :func:`theory_arguments`: valid arguments of a theory quantity (``attnverify predict``'s
  names), as a hypothesis strategy of keyword dicts; :data:`ARGUMENTS` holds their domains.
- :func:`assert_close`: a theory value against an estimate at ``rtol``/``atol``, the one
  comparison of the project (:func:`attnverify.compare.stats.compare`).
- :func:`assert_claim_holds`: a claim evaluated at a point of its space, confirmed or an
  AssertionError with the claim's explanation.
- :func:`check_claim` and :func:`parametrize_with_claim_checks`: a claim run through the claim
  contract (:mod:`attnverify.compare.testing.contract`), as a plugin author's tests do.
- The pytest plugin (:mod:`attnverify.compare.testing.plugin`, loaded through the ``pytest11``
  entry point): fixtures ``attnverify_store`` and ``attnverify_executor``, the marker
  ``trains`` and the hypothesis settings of the tests that carry it.

Walk-through: ``docs/property-testing.md``. The names load on first use (PEP 562), so that
pytest loading the plugin imports neither torch nor the claims.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnverify.compare.testing.assertions import assert_claim_holds, assert_close
    from attnverify.compare.testing.contract import check_claim, parametrize_with_claim_checks
    from attnverify.compare.testing.plugin import TRAINS_PROFILE, TRAINS_SETTINGS
    from attnverify.compare.testing.strategies import ARGUMENTS, strategy_for, theory_arguments

_EXPORTS = {
    "assert_claim_holds": "assertions", "assert_close": "assertions",
    "check_claim": "contract", "parametrize_with_claim_checks": "contract",
    "TRAINS_PROFILE": "plugin", "TRAINS_SETTINGS": "plugin",
    "ARGUMENTS": "strategies", "strategy_for": "strategies", "theory_arguments": "strategies",
}

__all__ = ["ARGUMENTS", "TRAINS_PROFILE", "TRAINS_SETTINGS", "assert_claim_holds",
           "assert_close", "check_claim", "parametrize_with_claim_checks", "strategy_for",
           "theory_arguments"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
