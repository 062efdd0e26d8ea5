"""Group-sequential designs for a per-seed success rate (docs/methodology.md, "Sequential
seeds").

A claim whose endpoint is a rate over seeds ("every seed learns", "a sufficient depth learns")
looks at its successes after planned seed counts n_1 < ... < n_K. At look k it stops:

- **efficacy** (confirmed) when the successes S_k >= ``efficacy[k]``;
- **futility** (refuted: the smallest rate that matters, p1, is rejected) when
  S_k <= ``futility[k]``;
- otherwise it trains the next block of seeds; after the last look, a count between the two
  boundaries gives ``budget reached``.

H0: p <= p0 against H1: p >= p1. The boundaries spend alpha (under p0) and beta (under p1)
with the O'Brien-Fleming-type Lan-DeMets function f(t) = 2 - 2 Phi(z_{1 - e/2} / sqrt(t)) of
the information fraction t = n_k / n_K (Lan and DeMets 1983): little is spent at early looks,
so an early stop needs strong evidence. The futility boundary is binding: alpha is computed
over the paths that futility has not stopped, which a claim honours by never continuing past
a futility stop. Everything is exact: the distribution of S_k over the continuing paths is
carried look to look (a convolution with the next block's binomial), so the type I error,
the power and the expected seed count (:meth:`SequentialDesign.operating_characteristics`)
are computed, not simulated; ``tests/test_sequential.py`` checks them by simulation too.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from scipy import stats


class Stop(StrEnum):
    EFFICACY = "efficacy"
    FUTILITY = "futility"
    CONTINUE = "continue"
    BUDGET = "budget reached"


def _advance(alive: np.ndarray, previous: int, n: int, p: float) -> np.ndarray:
    """The distribution of the success count after the seeds ``previous + 1 .. n``, from its
    distribution ``alive`` at ``previous`` seeds (the new block's binomial convolved in)."""
    return np.convolve(alive, stats.binom.pmf(np.arange(n - previous + 1), n - previous, p))


def _continuing(alive: np.ndarray, efficacy: int, futility: int) -> np.ndarray:
    """``alive`` restricted to the counts strictly between the two boundaries (the paths
    that go on to the next look)."""
    keep = np.zeros(alive.size, dtype=bool)
    keep[max(futility + 1, 0):efficacy] = True
    return alive * keep


def obf_spending(fraction: float, rate: float) -> float:
    """O'Brien-Fleming-type spending: the error spent by information fraction ``fraction``
    of a total ``rate`` (one-sided)."""
    if fraction <= 0:
        return 0.0
    z = stats.norm.isf(rate / 2)
    return float(2 * stats.norm.sf(z / np.sqrt(min(fraction, 1.0))))


@dataclass(frozen=True)
class OperatingCharacteristics:
    """At a true per-seed rate ``p``: the probability of each ending and the expected number
    of seeds trained."""

    p: float
    confirmed: float
    refuted: float
    budget_reached: float
    expected_seeds: float


@dataclass(frozen=True)
class LookResult:
    look: int
    """1-based: the look at which the design stopped (or the last one)."""
    seeds: int
    successes: int
    stop: Stop


@dataclass(frozen=True)
class SequentialDesign:
    """A group-sequential design for a rate (module docstring): looks at cumulative seed
    counts ``looks``, H0 p <= ``p0``, H1 p >= ``p1``, one-sided ``alpha`` and ``beta``."""

    looks: tuple[int, ...]
    p0: float
    p1: float
    alpha: float
    beta: float

    def __post_init__(self) -> None:
        if not self.looks or any(b <= a for a, b in zip((0, *self.looks), self.looks,
                                                         strict=False)):
            raise ValueError(f"looks must be increasing seed counts >= 1; got {self.looks}")
        if not 0 <= self.p0 < self.p1 <= 1:
            raise ValueError(f"need 0 <= p0 < p1 <= 1; got p0={self.p0}, p1={self.p1}")
        for name in ("alpha", "beta"):
            if not 0 < getattr(self, name) < 0.5:
                raise ValueError(f"{name} must be in (0, 0.5)")

    @property
    def n_max(self) -> int:
        return self.looks[-1]

    def boundaries(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(efficacy, futility): per look, the smallest success count that confirms and the
        largest that refutes (-1: none refutes; n_k + 1: none confirms)."""
        return self._boundaries

    @functools.cached_property
    def _boundaries(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return _choose_boundaries(self)

    def decide(self, outcomes: Sequence[bool]) -> LookResult:
        """Walk the looks over per-seed outcomes in seed order; stop at the first boundary
        crossed. Outcomes beyond the stopping look are ignored; fewer outcomes than the next
        look gives ``continue`` at the last complete look (zero looks: look 0)."""
        efficacy, futility = self.boundaries()
        last = LookResult(0, 0, 0, Stop.CONTINUE)
        for k, n in enumerate(self.looks):
            if len(outcomes) < n:
                return last
            s = int(sum(bool(x) for x in outcomes[:n]))
            if s >= efficacy[k]:
                return LookResult(k + 1, n, s, Stop.EFFICACY)
            if s <= futility[k]:
                return LookResult(k + 1, n, s, Stop.FUTILITY)
            last = LookResult(k + 1, n, s, Stop.CONTINUE if k + 1 < len(self.looks)
                              else Stop.BUDGET)
        return last

    def pending(self, outcomes: Sequence[bool]) -> range:
        """The seed indices still to train after ``outcomes``: the rest of the next look's
        block while the design continues, none once it has stopped."""
        result = self.decide(outcomes)
        if result.stop is not Stop.CONTINUE:
            return range(0)
        return range(len(outcomes), self.looks[result.look])

    def p_value(self, result: LookResult) -> float:
        """The one-sided p-value of a stop under H0 (p = p0) in the stage-wise ordering: the
        probability of confirming at an earlier look, plus that of reaching the stopping look
        and counting at least as many successes there."""
        efficacy, futility = self.boundaries()
        if result.look == 0:
            return 1.0
        alive = np.ones(1)
        p: float = 0
        previous = 0
        for k, n in enumerate(self.looks[:result.look]):
            alive, previous = _advance(alive, previous, n, self.p0), n
            if k + 1 == result.look:
                return float(min(1.0, p + alive[result.successes:].sum()))
            p += float(alive[efficacy[k]:].sum())
            alive = _continuing(alive, efficacy[k], futility[k])
        raise AssertionError("unreachable: result.look is within the looks")

    def operating_characteristics(self, p: float) -> OperatingCharacteristics:
        """Exact probabilities of confirmed, refuted and budget reached at a true rate ``p``,
        and the expected seeds trained."""
        efficacy, futility = self.boundaries()
        return _characteristics(self.looks, efficacy, futility, p)

    def seed_text(self) -> str:
        """Expected and maximum seeds, for dry runs."""
        at = {p: self.operating_characteristics(p).expected_seeds for p in (self.p0, self.p1)}
        return (f"sequential, {self.looks[0]} to {self.n_max} seeds: expected "
                f"{at[self.p1]:.1f} at p = {self.p1} (H1), {at[self.p0]:.1f} at p = {self.p0} "
                f"(H0)")

    def oc_table(self, rates: Sequence[float]) -> str:
        """The operating characteristics at ``rates`` as a markdown table (the methodology
        document shows it; a test keeps the two equal)."""
        lines = ["| true rate p | P(confirmed) | P(refuted) | P(budget reached) | expected "
                 "seeds |", "|---|---|---|---|---|"]
        for p in rates:
            o = self.operating_characteristics(p)
            lines.append(f"| {p:g} | {o.confirmed:.3f} | {o.refuted:.3f} | "
                         f"{o.budget_reached:.3f} | {o.expected_seeds:.1f} |")
        return "\n".join(lines)

    def look_text(self, result: LookResult) -> str:
        """Where ``result`` stopped, against the boundaries of its look."""
        efficacy, futility = self.boundaries()
        k = result.look - 1
        return (f"look {result.look} of {len(self.looks)} at {result.seeds} seeds: "
                f"{result.successes} (confirm at >= {efficacy[k]}, refute at <= "
                f"{futility[k]}): {result.stop}")

    def describe(self) -> str:
        """The design in one line, for protocols and the dry run."""
        efficacy, futility = self.boundaries()
        parts = [f"n={n}: confirm at >= {e}" + (f", refute at <= {f}" if f >= 0 else "")
                 for n, e, f in zip(self.looks, efficacy, futility, strict=True)]
        return (f"H0 p <= {self.p0} vs H1 p >= {self.p1}, alpha {self.alpha}, beta "
                f"{self.beta}, O'Brien-Fleming-type spending; looks " + "; ".join(parts))


def _choose_boundaries(design: SequentialDesign) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Choose each look's boundaries in turn: the efficacy boundary is the smallest count
    whose cumulative probability of confirming under p0 stays within the alpha spent so far;
    the futility boundary the largest whose cumulative probability of refuting under p1
    stays within the beta spent (and below the efficacy boundary). Both carry the continuing
    paths under p0 and p1 (binding futility)."""
    n_max = design.n_max
    alive0, alive1 = np.ones(1), np.ones(1)  # P(S = s, still running) under p0 and p1
    spent_alpha = spent_beta = 0.0
    efficacy: list[int] = []
    futility: list[int] = []
    previous = 0
    for n in design.looks:
        alive0, alive1 = (_advance(alive0, previous, n, design.p0),
                          _advance(alive1, previous, n, design.p1))
        previous = n
        allowed_alpha = obf_spending(n / n_max, design.alpha) - spent_alpha
        allowed_beta = obf_spending(n / n_max, design.beta) - spent_beta
        upper0 = np.cumsum(alive0[::-1])[::-1]  # P0(S >= s, running)
        e = next((s for s in range(n + 1) if upper0[s] <= allowed_alpha + 1e-15), n + 1)
        lower1 = np.cumsum(alive1)  # P1(S <= s, running)
        f = max((s for s in range(e) if lower1[s] <= allowed_beta + 1e-15), default=-1)
        spent_alpha += float(upper0[e]) if e <= n else 0.0
        spent_beta += float(lower1[f]) if f >= 0 else 0.0
        efficacy.append(e)
        futility.append(f)
        alive0, alive1 = _continuing(alive0, e, f), _continuing(alive1, e, f)
    return tuple(efficacy), tuple(futility)


def _characteristics(looks: Sequence[int], efficacy: Sequence[int], futility: Sequence[int],
                     p: float) -> OperatingCharacteristics:
    """Exact OC of boundaries ``efficacy``/``futility`` at rate ``p`` (any boundaries: the
    tests use this on deliberately broken ones)."""
    alive = np.ones(1)
    confirmed = refuted = expected = 0.0
    previous = 0
    for n, e, f in zip(looks, efficacy, futility, strict=True):
        expected += float(alive.sum()) * (n - previous)
        alive, previous = _advance(alive, previous, n, p), n
        confirmed += float(alive[e:].sum())            # empty past the last count: 0
        refuted += float(alive[:max(f + 1, 0)].sum())
        alive = _continuing(alive, e, f)
    return OperatingCharacteristics(p, confirmed, refuted, float(alive.sum()), expected)
