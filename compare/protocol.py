"""Declared protocols: what a claim decides on, fixed before its decision runs
(docs/methodology.md, "Protocols").

Every claim declares one :class:`Protocol`: the primary endpoint (from the statement's
wording) and its unit, H0 and H1 (the smallest effect that matters), the primary test with
its error rates (``alpha`` for "confirmed", ``beta`` for "refuted"), the read-out, the
testability precondition, the secondary statistics (reported, never deciding) and the seed
blocks. The report shows it with a short hash (:meth:`Protocol.digest`), so a reader can see
that the rule a verdict followed is the one declared, and a changed rule shows as a new hash.

Every verdict carries a :class:`Reason`: ``decided`` for a confirmation or a refutation, and
for an inconclusive verdict why nothing was decided.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import asdict, dataclass
from enum import StrEnum


class Reason(StrEnum):
    """Why a verdict is what it is."""

    DECIDED = "decided"
    """The primary test reached a decision (confirmed or refuted)."""
    NOT_TESTABLE = "not testable here"
    """The configuration fails the protocol's testability precondition; the explanation says
    what would make it testable."""
    BUDGET_REACHED = "budget reached"
    """The planned seeds (or samples) ran out before the primary test decided either way."""
    INTERIM = "interim look"
    """A sequential design fell between its boundaries at a look before its last, and the
    next look's runs are not in the store (a report that trained nothing, or training that
    stopped early): running the claim again trains them and goes on deciding."""
    CONFLICTING = "conflicting evidence"
    """Two tests at the protocol's level point in opposite directions."""


class SeedUse(StrEnum):
    DECISION = "decision"
    """The seeds whose runs decide the verdict."""
    CALIBRATION = "calibration"
    """Seeds that choose something the decision then uses (a coefficient, a cell, a
    threshold) or measure the testability precondition; they decide nothing."""
    DEVELOPMENT = "development"
    """Seeds the rule was developed on before it was frozen; on record, deciding nothing."""


@dataclass(frozen=True)
class SeedBlock:
    """Seeds ``start``, ``start + 1``, ... (as many as the profile's parameters ask) used for
    ``use``."""

    use: SeedUse
    start: int
    note: str = ""


def check_disjoint(**blocks: range) -> None:
    """Raise ValueError when two named seed ranges overlap (a profile or ``--param`` with so
    many seeds that a decision block would run into a calibration block)."""
    named = sorted(blocks.items(), key=lambda item: item[1].start)
    for (name_a, a), (name_b, b) in itertools.pairwise(named):
        if a and b and a.stop > b.start:
            raise ValueError(f"the {name_a} seeds {a.start}..{a.stop - 1} run into the "
                             f"{name_b} seeds from {b.start}; use fewer seeds")


@dataclass(frozen=True)
class Protocol:
    """A claim's frozen decision protocol (module docstring). Text fields are read by people;
    ``alpha`` and ``beta`` are the error rates the rule is built for (None where a rule has no
    such rate, e.g. a tolerance on an exact computation; ``error_rates`` then says why)."""

    endpoint: str
    """The one primary endpoint, in the statement's terms."""
    unit: str
    """What one observation is: a per-seed success indicator, a paired difference per seed,
    a Monte Carlo statistic, an exact computation."""
    h0: str
    h1: str
    """The smallest effect that matters."""
    test: str
    """The primary test and its read-out of H0/H1."""
    confirm: str
    refute: str
    alpha: float | None
    """The probability of "confirmed" when H0 holds, at its boundary (one-sided); between H0
    and H1 "confirmed" is more likely (docs/methodology.md, "Protocols")."""
    beta: float | None
    """The probability of "refuted" when H1 holds, at the smallest effect that matters."""
    readout: str
    """Which value of a run's record is read (final value, max over evaluations, ...)."""
    frozen: str
    """The date the protocol was fixed (ISO), before its decision runs."""
    error_rates: str = ""
    """Why ``alpha`` or ``beta`` is None, or what bounds them when they are not exact."""
    precondition: str = ""
    """What the configuration must show for the claim to be testable there; empty: none
    (an exact computation, or a setting that tests the claim by construction of the task)."""
    secondary: tuple[str, ...] = ()
    """Statistics reported beside the primary one; they never decide."""
    seeds: tuple[SeedBlock, ...] = ()
    """The seed blocks (none for claims that train nothing)."""
    weaknesses: tuple[str, ...] = ()
    """What a sceptical reader should know about this design (stated, not hidden)."""

    def __post_init__(self) -> None:
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if value is not None and not 0 < value < 0.5:
                raise ValueError(f"protocol {name} must be in (0, 0.5) or None; got {value!r}")
        if (self.alpha is None or self.beta is None) and not self.error_rates:
            raise ValueError("a protocol without alpha or beta must say why (error_rates)")
        decision = [b for b in self.seeds if b.use is SeedUse.DECISION]
        if self.seeds and len(decision) != 1:
            raise ValueError(f"a protocol with seeds has exactly one decision block; got "
                             f"{len(decision)}")

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def digest(self) -> str:
        """A short hash of the whole record (12 hex digits): any change shows."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def decision_start(self) -> int:
        """The first seed of the decision block (0 for a protocol without seeds)."""
        return next((b.start for b in self.seeds if b.use is SeedUse.DECISION), 0)

    def seed_text(self) -> str:
        """The seed blocks in words, for the report."""
        return "; ".join(f"{b.use} from seed {b.start}" + (f" ({b.note})" if b.note else "")
                         for b in self.seeds) or "none (no training)"


def derivation_protocol(endpoint: str, unit: str, test: str, frozen: str,
                        secondary: tuple[str, ...] = ()) -> Protocol:
    """A derivation check's protocol: our closed form against our own simulator or Monte
    Carlo; H0 is that they agree (the code is right), a disagreement beyond the tolerance
    refutes. ``alpha`` and ``beta`` are None: a confirmation is a passed correctness check,
    not evidence for an effect."""
    return Protocol(
        endpoint=endpoint, unit=unit,
        h0="the closed form and the simulator agree (the theory code is right)",
        h1="they disagree beyond the tolerance (a bug in one of the two)",
        test=test, confirm="every compared value within its tolerance",
        refute="a value outside its tolerance", alpha=None, beta=None,
        readout="the computed values, once", frozen=frozen,
        error_rates=("a correctness check, not a test of an effect: its tolerance bounds the "
                     "rate of false alarms (refuted while the code is right), as the claim's "
                     "tolerance states; 'confirmed' is a passed check"),
        secondary=secondary)
