"""``snell.stage2_onset_rate`` (derivation check, spec §4.5b): the velocity of the attention
logits that ``theory.snell.stage2_logit_velocity`` derives from a KTIW matrix, against the
gradient of the free-attention toy (§4.6) that our simulator trains, at uniform attention.

The toy's loss is the mean cross-entropy over the batch and the T output positions, and its
attention logits Q (T x L) are shared by every example, so under gradient flow on the loss
times T, dQ[t, l]/dtau = -T dLoss/dQ[t, l] is the batch mean of the per-example velocity
alpha_l (g_l - gbar) of the derivation (docs/derivations.md#stage-2-attention-logit-velocity).
Two cases, both exact up to float64 round-off:

- the stage-1 solution of subset copying, B = K I: the gap between the gold position's logit
  and any other's grows at exactly K / L (``theory.snell.stage2_onset_rate``), for every
  output position and every K of the grid;
- random KTIW matrices (standard normal entries): every entry of dQ/dtau against the batch
  mean of ``stage2_logit_velocity`` over the same sequences.

A check of our derivation against our own simulator, not evidence about the paper: the toy
is the model the derivation assumes (output linear in the context, free attention logits).
On the paper's seq2seq the attention logits are computed from hidden states, so assumption (b)
does not hold there and no onset rate is compared with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from attnverify import theory
from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.params import Params
from attnverify.compare.protocol import derivation_protocol
from attnverify.compare.report.plotting import PALETTE, new_figure
from attnverify.compare.space import Dimension
from attnverify.empirics import CopyTask, FreeAttentionToy, RunResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RTOL = 1e-10
"""Relative to the largest |velocity| compared: float64 round-off of sums over L and V terms,
with four orders of magnitude of room."""

ONSET_PROTOCOL = replace(
    derivation_protocol(
        endpoint="the attention-logit velocity at uniform attention: the derivation's "
                 "stage2_logit_velocity (batch mean) and onset rate K / L against -T times the "
                 "free-attention toy's autograd gradient with respect to Q",
        unit="exact computation in float64 on one seeded batch of copying sequences per case",
        test=f"largest |difference| relative to the largest |velocity| <= {RTOL:g}, for B = K I "
             f"(gold-minus-other gap rate against K / L, every K) and for random B (every entry "
             f"of dQ/dtau)",
        frozen="2026-11-26",
        secondary=("the gap rates per K (figure)",)),
    weaknesses=(
        "Checks the derivation on the toy it assumes; it says nothing about how far the "
        "paper's LSTM seq2seq, whose attention logits are not free parameters, follows it.",
        "Only the instant at uniform attention (Q = 0) is compared; later, B and Q move "
        "together and the derivation gives no closed form."))


@dataclass(frozen=True)
class OnsetParams(Params):
    """Subset copying of length ``L`` (V = 1.5 L) on ``n_sequences`` sequences: B = K I for
    each K of ``Ks``, and ``instances`` random KTIW matrices."""

    L: int
    Ks: tuple[float, ...]
    n_sequences: int
    instances: int

    def __post_init__(self) -> None:
        if not all(k != 0 for k in self.Ks):
            raise ValueError(f"Ks must be non-zero numbers (the error is relative to K / L); "
                             f"got {self.Ks!r}")


def toy_velocity(ktiw: np.ndarray, words: torch.Tensor) -> np.ndarray:
    """dQ/dtau = -T dLoss/dQ of the free-attention toy at Q = 0 with KTIW matrix ``ktiw`` on the
    copying sequences ``words`` (N, L), by autograd in float64; (T, L) with T = L."""
    vocab, length = ktiw.shape[0], words.shape[1]
    toy = FreeAttentionToy(vocab, length, 0.0, 0.0).double()
    with torch.no_grad():
        toy.ktiw.copy_(torch.as_tensor(ktiw, dtype=torch.float64))
    eos = torch.full((words.shape[0], 1), vocab, dtype=torch.long)
    loss = toy.loss({"source": torch.cat([words, eos], dim=1)})
    (grad,) = torch.autograd.grad(loss, toy.logits)
    return -length * grad.numpy()


def theory_velocity(ktiw: np.ndarray, words: torch.Tensor) -> np.ndarray:
    """The batch mean of ``stage2_logit_velocity`` for every output position t (target x_t)."""
    seqs = words.numpy()
    return np.mean([[theory.snell.stage2_logit_velocity(ktiw, x, int(x[t])).value
                     for t in range(len(x))] for x in seqs], axis=0)


def gap_rates(velocity: np.ndarray) -> np.ndarray:
    """Per output position t and every other position l: d/dtau of Q[t, t] - Q[t, l], the gap
    the derivation states, (T, L - 1)."""
    length = velocity.shape[1]
    others = ~np.eye(length, dtype=bool)
    return np.diag(velocity)[:, None] - velocity[others].reshape(length, length - 1)


class Stage2OnsetRate(Claim):
    """``snell.stage2_onset_rate`` (see the module docstring)."""

    id = "snell.stage2_onset_rate"
    kind = ClaimKind.DERIVATION
    code_version = 1
    protocol = ONSET_PROTOCOL
    paper = "snell"
    statement = ("At uniform attention the attention logits move as the KTIW matrix says: the "
                 "gold-minus-other gap grows at K / L from B = K I, and every logit at "
                 "alpha (g - gbar) (§4.5b, a derivation not stated in the paper).")
    space: ClassVar[dict[str, Dimension]] = {
        "L": Dimension("sequence length L (V = 1.5 L, subset copying)", low=2, high=40),
    }
    defaults: ClassVar[dict[str, OnsetParams]] = {
        "smoke": OnsetParams(L=6, Ks=(0.5, 2.0), n_sequences=16, instances=2),
        "quick": OnsetParams(L=10, Ks=(0.25, 1.0, 4.0, 16.0), n_sequences=64, instances=4),
        "full": OnsetParams(L=40, Ks=(0.25, 1.0, 4.0, 16.0), n_sequences=256, instances=8),
    }

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        return {"L": point["L"]}

    def check_params(self, params: dict[str, Any]) -> None:
        super().check_params(params)
        if params["L"] < 2:
            raise ValueError(f"L must be >= 2 (a gap needs a second position); got "
                             f"{params['L']!r}")

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        length = params["L"]
        task = CopyTask("subset", length + length // 2, length)
        generator = torch.Generator().manual_seed(0)
        words = task.sample_words(params["n_sequences"], generator)
        vocab = task.vocab_size
        rows = []
        for k in params["Ks"]:
            rates = gap_rates(toy_velocity(k * np.eye(vocab), words))
            onset = theory.snell.stage2_onset_rate(float(k), length).value
            rows.append({"K": float(k), "theory": onset, "min": float(rates.min()),
                         "max": float(rates.max()),
                         "error": float(np.abs(rates - onset).max() / abs(onset))})
        random_errors = []
        for _ in range(params["instances"]):
            ktiw = torch.randn(vocab, vocab, generator=generator, dtype=torch.float64).numpy()
            toy = toy_velocity(ktiw, words)
            derived = theory_velocity(ktiw, words)
            random_errors.append(float(np.abs(toy - derived).max() / np.abs(derived).max()))
        worst = max([r["error"] for r in rows] + random_errors)
        verdict = Verdict.CONFIRMED if worst <= RTOL else Verdict.REFUTED
        explanation = (
            f"B = K I: every gold-minus-other gap rate K / L within "
            f"{max(r['error'] for r in rows):.1e} (relative), at every output position, for K "
            f"in {tuple(params['Ks'])}; random B "
            f"({params['instances']} standard normal matrices): every entry of dQ/dtau within "
            f"{max(random_errors):.1e} of the derived velocity; tolerance {RTOL:g}.")
        return Assessment(
            verdict=verdict, theory=f"K / L = {rows[0]['theory']:.4g} at K = {rows[0]['K']:g}",
            empirical=Measurement(worst, at="largest relative difference, toy autograd against "
                                            "the derivation"),
            statistic=(f"free-attention toy at Q = 0, subset copying V = {vocab}, L = {length}, "
                       f"{params['n_sequences']} sequences, float64"),
            tolerance=Tolerance(why="exact identity: only float64 round-off is allowed",
                                thresholds={"relative_difference_max": RTOL}),
            explanation=explanation, details={"onset": rows, "random_errors": random_errors})

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        return {"onset_rate": onset_figure(assessment.details["onset"], params["L"])}


def onset_figure(rows: list[dict[str, Any]], length: int) -> Figure:
    """Measured gap rates against K, with the line K / L."""
    fig, (ax,) = new_figure()
    ks = np.array([r["K"] for r in rows])
    ax.plot(ks, ks / length, color=PALETTE["theory"], label="K / L (theory)")
    ax.scatter(ks, [r["min"] for r in rows], color=PALETTE["blue"], s=18,
               label="toy: smallest gap rate")
    ax.scatter(ks, [r["max"] for r in rows], color=PALETTE["red"], s=8, marker="x",
               label="toy: largest gap rate")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("KTIW strength K (B = K I)")
    ax.set_ylabel("d(gold - other logit)/dtau")
    ax.set_title(f"Stage-2 onset rate at uniform attention (L = {length})")
    ax.legend(fontsize=7)
    return fig
