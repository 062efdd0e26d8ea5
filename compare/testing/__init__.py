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

Walk-through: ``docs/property-testing.md``. Importing the toolkit imports neither torch nor
the claims (pytest loads the plugin in every session): they load when a test uses them.
"""

from attnverify.compare.testing.assertions import assert_claim_holds, assert_close
from attnverify.compare.testing.contract import check_claim, parametrize_with_claim_checks
from attnverify.compare.testing.plugin import TRAINS_PROFILE, TRAINS_SETTINGS
from attnverify.compare.testing.strategies import ARGUMENTS, strategy_for, theory_arguments

__all__ = ["ARGUMENTS", "TRAINS_PROFILE", "TRAINS_SETTINGS", "assert_claim_holds",
           "assert_close", "check_claim", "parametrize_with_claim_checks", "strategy_for",
           "theory_arguments"]
