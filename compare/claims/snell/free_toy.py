"""The runs of the free-attention toy (§4.6) that several Snell claims train: float64 SGD from
a small or zero start, for a budget set by the stage-1 signal kappa (``snell.permutation_saddle``,
``snell.init_scale_breaks_symmetry``, ``snell.low_loss_without_aligned_attention``)."""

from __future__ import annotations

import math

from attnverify import theory
from attnverify.empirics import SGD, CopyTask, FreeAttentionToyConfig, RunSpec

ESCAPE_FACTOR = 1.0
"""The escape budget in units of L / (lr kappa(V, L)) SGD steps, fixed from the calibration
seeds 200 to 202: the subset runs' gold attention first passed 1/2 (on an evaluation grid of
budget/40) at kappa t = 5.5, 6.5, 11.5 and 22.0 for L = 8, 10, 20 and 40, so a factor 1 leaves
1.45 to 1.8 times the measured escape time (its history: docs/methodology.md,
``snell.permutation_saddle``)."""


def escape_budget(length: int, vocab: int, lr: float, factor: float = ESCAPE_FACTOR) -> int:
    """SGD steps the subset contrast gets to escape B = Q = 0: ``factor * L / (lr kappa)``.

    From B = Q = 0 the only stage-1 signal is the co-occurrence kappa(V, L) (§4.5), so
    the time for B to leave 0 scales with 1/kappa; the gold attention has to grow
    from 1/L, which the calibration runs found to add a factor about proportional to L."""
    kappa = theory.snell.kappa(vocab, length, "subset").value
    return max(1, math.ceil(factor * length / (lr * kappa)))


def free_toy_spec(distribution: str, vocab: int, length: int, steps: int, lr: float,
                  seed: int, evaluations: int, init_std: float = 0.0) -> RunSpec:
    """A float64 SGD run of the free-attention toy (§4.6), B and Q drawn with standard
    deviation ``init_std`` (0: exactly zero), evaluated about ``evaluations`` times."""
    return RunSpec(task=CopyTask(distribution, vocab, length),
                   model=FreeAttentionToyConfig(init_std_ktiw=init_std,
                                                init_std_attention=init_std),
                   optimizer=SGD(lr=lr), steps=steps, batch_size=64,
                   eval_every=max(1, steps // evaluations), eval_size=256, dtype="float64",
                   seed=seed)
