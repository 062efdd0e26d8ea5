"""A linear lens on the residual stream: what the stream after each layer says about the answer.

For the retrieval transformer (:mod:`empirics.models.retrieval_transformer`) the question of Mușat
(2024, Theorem 1, as the reviewers paraphrase it) is *when* the target appears in the residual
stream of a position. A linear probe answers it layer by layer: after layer ``l``, an affine map
``A_l`` is fitted by least squares from the stream to the final stream at the same positions
(before the final LayerNorm), on the first half of the evaluation examples; the second half is
decoded through the model's own read-out (final LayerNorm, then the output layer) and scored
against each position's answer. This is the "tuned lens" of Belrose et al. (2023) with a
closed-form fit: the probe needs no class labels (the answer is an example's own random
symbol, so a probe with one weight vector per symbol would see each symbol a few times only),
and after the last layer the map is the identity (up to the ridge term), so the lens's accuracy
there is the model's.

Limits (stated where the lens is used): a linear map finds information that is linearly
readable; an answer encoded non-linearly, for a later MLP to decode, reads as absent. The map
is fitted per layer and per position class (statement tokens, the query), not per depth.
Fitted on the evaluation batch of the run, it is as noisy as that batch is small.

The fit uses float64 and a ridge term of ``RIDGE`` times the mean squared feature, on the
positions the caller names (for the retrieval transformer: the statement tokens of the chains,
or the query); positions without an evaluation target are never scored. Least squares onto the
final stream shrinks toward the mean stream where the information is only partly there, so a
weak signal reads as absent: the claims that use the lens check that it reads something at the
layers they test.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

RIDGE = 1e-4
"""The ridge term, relative to the mean squared (centred) feature: small enough not to bias a
well-posed fit, large enough to keep a rank-deficient one (a LayerNorm'd stream) stable."""


def fit_affine(source: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Least-squares affine map ``target ~ source @ W + b`` over the rows (n, d) of both, in
    float64 with the ridge term; returns (W, b)."""
    x = source.double()
    y = target.double()
    mean_x, mean_y = x.mean(0), y.mean(0)
    xc, yc = x - mean_x, y - mean_y
    gram = xc.T @ xc
    scale = float(gram.diagonal().mean()) if gram.numel() else 1.0
    eye = torch.eye(gram.shape[0], dtype=gram.dtype, device=gram.device)
    W = torch.linalg.solve(gram + RIDGE * max(scale, 1e-12) * eye, xc.T @ yc)
    return W, mean_y - mean_x @ W


def lens_accuracy(streams: Sequence[torch.Tensor], readout: Callable[[torch.Tensor], torch.Tensor],
                  targets: torch.Tensor, fit: torch.Tensor,
                  scores: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """Accuracy of the lens after each layer, per group of positions.

    ``streams``: the residual stream (B, T, d) after each layer, the embedding first and the
    last layer's output last; ``readout`` maps a final stream to logits; ``targets`` (B, T) the
    answer per position (``< 0`` for none); ``fit`` a (B, T) boolean mask of the positions the
    map is fitted on (those of the first half of the examples); ``scores`` maps a name to a
    (B, T) mask of the positions it scores (those of the second half that have a target).
    Returns per name an array (layers + 1,): NaN where it has no scored position.
    """
    B = targets.shape[0]
    first = torch.arange(B, device=targets.device)[:, None] < B // 2
    fit_mask = fit & first
    final = streams[-1]
    maps = [fit_affine(stream[fit_mask], final[fit_mask]) if fit_mask.any() else None
            for stream in streams]
    out: dict[str, np.ndarray] = {}
    for name, mask in scores.items():
        scored = mask & ~first & (targets >= 0)
        accs = np.full(len(streams), np.nan)
        if scored.any():
            answers = targets[scored]
            for layer, (stream, fitted) in enumerate(zip(streams, maps, strict=True)):
                if fitted is None:
                    continue
                W, b = fitted
                mapped = (stream[scored].double() @ W + b).to(final.dtype)
                accs[layer] = (readout(mapped).argmax(-1) == answers).double().mean().item()
        out[name] = accs
    return out
