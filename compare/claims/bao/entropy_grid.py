"""The rule the entropy claims share (``bao.entropy_monotone_in_variance``,
``bao.entropy_monotone_in_mean``): softmax entropy of the last-token query across the
(eigen-mean, eigen-std) plane (§3.6, found in simulation, not stated in the paper): at fixed
mean it does not rise with the eigen-std, and at fixed std it does not rise with |eigen-mean|.

Both claims walk a grid along one axis with common random numbers (the same eigenvectors,
standardised noise and walks at every grid point), compare consecutive entropies per walk
(paired differences) and count a step up only if it is significant: mean paired difference
above z * SE, z Bonferroni over every step at family-wise 1e-3. Confirmed when no step rises
and the grid's last entropy is significantly below its first; refuted by a significant rise;
inconclusive when nothing moves significantly. The annealed approximation (§3.6) is drawn for
reference and does not decide.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from attnverify import theory
from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.bao.common import (
    FAMILY_ALPHA,
    TOKEN_MODEL,
    ScorePoint,
    scores_at_many,
    z_bound,
)
from attnverify.compare.claims.bao.figures import entropy_figure
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Reason
from attnverify.compare.stats import mean_and_se, normal_ci
from attnverify.empirics import RunResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure


class EntropyMonotone(Claim):
    """One grid walk per chain of ``chains``; each chain is a sequence of (mean, std) points
    along which the entropy must not rise (the module docstring has the rule). A claim names
    its axis (``axis_label``, :meth:`axis`), its figure and its chains."""

    kind = ClaimKind.DERIVATION
    paper = "bao"
    axis_label = ""
    figure_name = ""

    def chains(self, params: dict[str, Any]) -> list[list[tuple[float, float]]]:
        raise NotImplementedError

    @staticmethod
    def axis(point: tuple[float, float]) -> float:
        raise NotImplementedError

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        d, T = params["d"], params["T"]
        chains = self.chains(params)
        points = list(dict.fromkeys(p for chain in chains for p in chain))
        entropy = {p: sample.entropy for p, (_, sample) in zip(points, scores_at_many(
            [ScorePoint(d, T, m, s) for m, s in points], params), strict=True)}
        n_steps = sum(len(c) - 1 for c in chains)
        z = z_bound(n_steps)
        rises, totals = [], []
        rows: list[dict[str, Any]] = []
        for chain in chains:
            for a, b in itertools.pairwise(chain):
                diff_mean, diff_se = mean_and_se(entropy[b] - entropy[a])
                if diff_mean > z * diff_se:
                    rises.append(f"{self.axis(a):g}->{self.axis(b):g} ({diff_mean:+.4f} nats)")
            total_mean, total_se = mean_and_se(entropy[chain[-1]] - entropy[chain[0]])
            totals.append((total_mean, total_se))
            rows.append({"points": [list(p) for p in chain],
                         "mc_entropy": [float(entropy[p].mean()) for p in chain],
                         "mc_entropy_se": [mean_and_se(entropy[p])[1] for p in chain],
                         "annealed_entropy": [float(theory.bao.annealed_entropy(
                             d, T, p[0], p[1]).value) for p in chain],
                         "total_change": total_mean})
        falls = all(m + z * se < 0 for m, se in totals)
        if rises:
            verdict, reason = Verdict.REFUTED, None
            why = f"entropy rises significantly along {self.axis_label}: " + ", ".join(rises)
        elif not falls:
            verdict, reason = Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED
            why = (f"no significant rise along {self.axis_label}, but no significant fall over "
                   "every chain of the grid either")
        else:
            verdict, reason = Verdict.CONFIRMED, None
            why = (f"no significant rise along {self.axis_label}; over the grid the entropy "
                   "falls by " + ", ".join(f"{m:+.4f}" for m, _ in totals)
                   + f" nats (log T = {np.log(T):.4f})")
        gaps = [abs(a - h) for row in rows for p, a, h in zip(
            row["points"], row["annealed_entropy"], row["mc_entropy"], strict=True) if p[1] <= 0.3]
        if gaps:
            why += (f"; the annealed approximation is within {max(gaps):.4f} nats of Monte Carlo "
                    "where std <= 0.3 (reported, not decided; it ignores condensation on a few "
                    "tokens at large std, docs/derivations.md#annealed-entropy)")
        head_mean, head_se = totals[0]
        return Assessment(
            verdict=verdict, reason=reason,
            theory=(f"< 0 beyond {z:.2f} SE over every chain, no step rising beyond it (the "
                    f"rule); the annealed approximation gives "
                    f"{rows[0]['annealed_entropy'][-1] - rows[0]['annealed_entropy'][0]:+.4f} "
                    f"nats over the first chain (reported, not decided)"),
            empirical=Measurement(head_mean, ci=normal_ci(head_mean, head_se), confidence=0.95,
                                  quantity=f"Monte Carlo entropy change over the first chain "
                                           f"of {self.axis_label}, nats"),
            statistic=(f"Monte Carlo softmax entropy of the last-token query, "
                       f"{params['n_samples']} walks, d = {d}, T = {T}, paired along "
                       f"{self.axis_label}. {TOKEN_MODEL}"),
            tolerance=Tolerance(f"Bonferroni over the {n_steps} steps at family-wise "
                                f"{FAMILY_ALPHA:g} on paired differences (the same z for the "
                                "totals)", {"step_z": z}),
            explanation=why, details={"chains": rows})

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        return {self.figure_name: entropy_figure(assessment.details["chains"], self.axis,
                                                 self.axis_label, params["T"])}
