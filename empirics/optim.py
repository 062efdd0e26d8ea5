"""Optimizer configs. The papers train with Adam at PyTorch defaults (Snell et al. 2021, in
their code); exact symmetry statements use plain SGD, which does not amplify round-off
(docs/derivations.md#free-attention-toy-and-permutation-saddle)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

from attnverify.empirics.config import Config, require


class OptimizerConfig(Config):
    family = "optimizer"

    def build(self, params: Iterable[torch.nn.Parameter]) -> torch.optim.Optimizer:
        raise NotImplementedError


@dataclass(frozen=True)
class Adam(OptimizerConfig):
    kind = "adam"
    code_version = 1
    lr: float = 1e-3

    def validate(self) -> None:
        require(isinstance(self.lr, int | float) and self.lr > 0, "optimizer.lr", "> 0", self.lr)

    def build(self, params: Iterable[torch.nn.Parameter]) -> torch.optim.Optimizer:
        # a plain float (the same value): a NumPy scalar in the optimizer's state would make a
        # checkpoint unreadable under torch.load(weights_only=True)
        return torch.optim.Adam(params, lr=float(self.lr))


@dataclass(frozen=True)
class SGD(OptimizerConfig):
    kind = "sgd"
    code_version = 1
    lr: float = 0.1

    def validate(self) -> None:
        require(isinstance(self.lr, int | float) and self.lr > 0, "optimizer.lr", "> 0", self.lr)

    def build(self, params: Iterable[torch.nn.Parameter]) -> torch.optim.Optimizer:
        return torch.optim.SGD(params, lr=float(self.lr))  # a plain float, as for Adam
