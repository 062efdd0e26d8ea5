"""The warm-up toy classifier (§4.2) as a trainable model.

Two unigram weights beta_0, beta_1 and an unconstrained attention weight p on token 1; the loss
L = p (beta_0 - beta_1) needs no data, so its task yields empty batches. Trained by plain SGD
(gradient descent, the Euler discretisation of the gradient flow that ``theory.snell`` solves)
through the one training loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from attnverify.empirics.config import Batch, ModelConfig, TaskConfig, require


@dataclass(frozen=True)
class ToyClassifierTask(TaskConfig):
    """``toy_classifier``: the two-example task {0,0} -> negative, {0,1} -> positive, whose
    loss is closed-form in the parameters; a batch carries no data."""

    kind = "toy_classifier"
    code_version = 1

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        return {}


@dataclass(frozen=True)
class ToyClassifierConfig(ModelConfig):
    kind = "toy_classifier"
    seconds_per_cost = 3.6e-04
    code_version = 1
    p0: float = 0.5
    beta0: float = 0.0
    beta1: float = 0.0

    def validate(self) -> None:
        for name in ("p0", "beta0", "beta1"):
            value = getattr(self, name)
            require(isinstance(value, int | float) and abs(value) < 1e6, f"model.{name}",
                    "a finite number", value)

    def build(self, task: TaskConfig) -> ToyClassifier:
        require(isinstance(task, ToyClassifierTask), "task", "the toy_classifier task", task)
        return ToyClassifier(self.p0, self.beta0, self.beta1)


class ToyClassifier(nn.Module):
    def __init__(self, p0: float, beta0: float, beta1: float) -> None:
        super().__init__()
        self.p = nn.Parameter(torch.tensor(float(p0)))
        self.beta0 = nn.Parameter(torch.tensor(float(beta0)))
        self.beta1 = nn.Parameter(torch.tensor(float(beta1)))

    def loss(self, batch: Batch) -> torch.Tensor:
        return self.p * (self.beta0 - self.beta1)  # s_0 - s_1

    def metrics(self, batch: Batch) -> dict[str, float]:
        return {"loss": self.loss(batch).item(), "p": self.p.item(),
                "beta0": self.beta0.item(), "beta1": self.beta1.item()}

    def attention(self, batch: Batch) -> torch.Tensor:
        """Attention on (token 0, token 1) of the example {0, 1}: (1, 1, 1, 2)."""
        return torch.stack([1 - self.p, self.p]).view(1, 1, 1, 2)
