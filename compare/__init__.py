"""Claims, verdicts, statistics, reports and the CLI: imports ``theory`` and ``empirics``.

The plugin API (docs/adding-a-claim.md): what a claim is built from (:class:`Claim`, its
:class:`Assessment`, :class:`Verdict` and :class:`ClaimKind`, its :class:`Protocol`,
:class:`Params` and :class:`Dimension`, :class:`Measurement` and :class:`Tolerance`), how it
is registered and found (:func:`register`, :func:`select`) and evaluated (:func:`evaluate`,
:func:`evaluate_all`, :class:`ClaimOutcome`). The registry itself is not part of it: a
claim is added with :func:`register` (or an ``attnverify.claims`` entry point), never by
editing a table.

Importing this package imports neither torch nor hypothesis (the contract's modules load the
run records for annotations only), so the command line's light commands (``attnverify
predict``, ``--version``) stay light; the claims and the training code load on first use.
"""

from attnverify.compare.claim import PROFILES, Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.evaluation.verify import ClaimOutcome, evaluate, evaluate_all
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.params import Params
from attnverify.compare.protocol import Protocol
from attnverify.compare.registry import register, select
from attnverify.compare.space import Dimension

__all__ = ["PROFILES", "Assessment", "Claim", "ClaimKind", "ClaimOutcome", "Dimension",
           "Measurement", "Params", "Protocol", "Tolerance", "Verdict", "evaluate",
           "evaluate_all", "register", "select"]
