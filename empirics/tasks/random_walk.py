"""Random-walk token data (§2.2): the Gaussian walk the theory assumes, and a discrete
random-walk language task for training the one-layer attention model.

Gaussian walk: ``x_t = sum_{u<=t} eps_u``, ``eps_u ~ N(0, (sx2/T) I_d)``, t = 1..T, so that
``Cov(x_j, x_k) = sx2 min(j, k)/T I``.

Language task (ours; the paper trains on WikiText-2, which cannot be downloaded here): each
sequence walks on a cycle of ``vocab`` tokens with its own drift k, drawn uniformly from
1..``max_drift``; each step adds k and, with probability ``noise``, an extra -1 or +1. Predicting
the next token needs the drift, which the current token alone does not reveal: the model must
read earlier tokens through attention. The Bayes-optimal loss given the drift is the step noise's
entropy, which :meth:`RandomWalkLMTask.noise_entropy` returns as a floor.

Numerics: ``RandomWalkLMTask.code_version`` for the language task; a change of
``gaussian_random_walk`` bumps ``MONTE_CARLO_VERSION`` (the Monte Carlo draws its walks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from attnverify.empirics.config import Batch, TaskConfig, is_int, require


def gaussian_random_walk(n: int, T: int, d: int, rng: np.random.Generator,
                         sx2: float = 1.0) -> torch.Tensor:
    """``n`` walks of T steps in R^d: shape (n, T, d), float64,
    ``Cov(x_j, x_k) = sx2 min(j, k)/T I``. Drawn with numpy's generator (its ziggurat normals,
    then an in-place cumulative sum: about twice as fast as torch's float64 ``randn`` and
    ``cumsum`` on one CPU core, which is what the Monte Carlo's time goes to)."""
    steps = rng.standard_normal((n, T, d))  # (n, T, d)
    steps *= math.sqrt(sx2 / T)
    np.cumsum(steps, axis=1, out=steps)
    return torch.from_numpy(steps)


@dataclass(frozen=True)
class RandomWalkLMTask(TaskConfig):
    """``random_walk_lm``: next-token prediction on drifting walks over a cycle of tokens."""

    kind = "random_walk_lm"
    code_version = 1
    vocab: int = 64
    T: int = 64
    max_drift: int = 4
    noise: float = 0.1

    def validate(self) -> None:
        require(is_int(self.vocab) and self.vocab >= 2, "task.vocab", "an integer >= 2",
                self.vocab)
        require(is_int(self.T) and self.T >= 2, "task.T", "an integer >= 2", self.T)
        require(is_int(self.max_drift) and 1 <= self.max_drift < self.vocab, "task.max_drift",
                f"an integer in [1, vocab = {self.vocab})", self.max_drift)
        require(isinstance(self.noise, int | float) and 0 <= self.noise <= 1, "task.noise",
                "a probability in [0, 1]", self.noise)

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        start = torch.randint(self.vocab, (batch_size, 1), generator=generator)
        drift = torch.randint(1, self.max_drift + 1, (batch_size, 1), generator=generator)
        jitter = torch.where(torch.rand(batch_size, self.T - 1, generator=generator) < self.noise,
                             2 * torch.randint(2, (batch_size, self.T - 1), generator=generator)
                             - 1, 0)                                       # (B, T-1)
        steps = torch.cat([start, drift + jitter], dim=1)                 # (B, T)
        return {"tokens": torch.cumsum(steps, dim=1) % self.vocab}        # (B, T)

    def vocab_size(self) -> int:
        return self.vocab

    def noise_entropy(self) -> float:
        """Per-step loss floor (nats) for a predictor that knows the drift."""
        p = self.noise
        stay = 0.0 if p == 1 else -(1 - p) * math.log(1 - p)
        return stay + (0.0 if p == 0 else -p * math.log(p / 2))
