"""Many seeds as one model: the seed-batched training step.

Runs that differ only in their seed have parameters of the same shapes. Their parameters are
stacked along a new leading axis (``torch.func.stack_module_state``) and one vmapped loss
(``torch.func.vmap`` over ``functional_call``) evaluates every seed on its own batch in one
pass: each op runs once for the whole group instead of once per seed, which shares the per-op
overhead that dominates small models. The optimizer (Adam, SGD) acts elementwise, so one
optimizer over the stacked tensors is each seed's optimizer. The total loss is the sum of the
seeds' losses, so each seed's gradient is its own loss's gradient. A seed whose loss is not
finite is left out of the sum from that step on (its run ends as diverged, as in the plain
loop), and the others never see it: slices of stacked tensors do not mix.

Only models without in-model randomness can train this way (vmap is called with
``randomness="error"``, so a model that draws random numbers fails loudly instead of sharing
one stream between seeds).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from attnverify.empirics.config import Batch
from attnverify.empirics.optim import OptimizerConfig


class _LossOf(nn.Module):
    """A module whose forward is the model's training loss (what functional_call calls)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, batch: Batch) -> torch.Tensor:
        return self.model.loss(batch)  # type: ignore[operator]


class SeedBatchStep:
    """The training step of a group of same-shaped models, one per seed.

    ``models`` are the freshly initialised per-seed models (each from its own init seed); they
    stay the evaluated models: :meth:`sync` copies the trained slices back into them.
    """

    def __init__(self, models: Sequence[nn.Module], optimizer: OptimizerConfig) -> None:
        self.models = list(models)
        shells = [_LossOf(m) for m in self.models]
        params, buffers = stack_module_state(shells)  # type: ignore[arg-type]
        self.params = {k: v.detach().requires_grad_() for k, v in params.items()}
        self.buffers = buffers
        self.optimizer = optimizer.build(self.params.values())
        self.base = copy.deepcopy(shells[0])  # the structure functional_call fills in

        def one_seed(params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor],
                     batch: Batch) -> torch.Tensor:
            return functional_call(self.base, (params, buffers), (batch,))

        self.losses = vmap(one_seed, randomness="error")

    def __call__(self, batches: list[Batch], live: list[bool]) -> list[float]:
        """One optimizer step for every live seed; the loss of every seed (live or not)."""
        stacked = {k: torch.stack([b[k] for b in batches]) for k in batches[0]}
        losses = self.losses(self.params, self.buffers, stacked)                # (S,)
        values = losses.detach().cpu().tolist()
        keep = torch.tensor([alive and math.isfinite(v)
                             for alive, v in zip(live, values, strict=True)],
                            device=losses.device)
        if keep.any():
            self.optimizer.zero_grad(set_to_none=True)
            torch.where(keep, losses, torch.zeros_like(losses)).sum().backward()
            self.optimizer.step()
        return values

    def state(self) -> dict[str, object]:
        """The stacked parameters and buffers and the optimizer's state (a checkpoint's part;
        each seed's model is saved with its run)."""
        return {"params": {k: v.detach() for k, v in self.params.items()},
                "buffers": dict(self.buffers), "optimizer": self.optimizer.state_dict()}

    @torch.no_grad()
    def load_state(self, state: dict[str, Any]) -> None:
        if state["params"].keys() != self.params.keys():
            raise ValueError("the checkpoint's parameters are not this model's")
        for name, tensor in self.params.items():
            tensor.copy_(state["params"][name])
        for name, tensor in self.buffers.items():
            tensor.copy_(state["buffers"][name])
        self.optimizer.load_state_dict(state["optimizer"])

    @torch.no_grad()
    def sync(self, live: list[bool]) -> None:
        """Copy each live seed's trained parameters and buffers into its own model. A seed
        that is no longer live keeps the model of its last sync: the optimizer still moves
        its slice (Adam's momentum acts on a zero gradient), which must not reach the model
        a stopped run reports."""
        for i, model in enumerate(self.models):
            if not live[i]:
                continue
            for name, tensor in model.named_parameters():
                tensor.copy_(self.params[f"model.{name}"][i])
            for name, tensor in model.named_buffers():
                tensor.copy_(self.buffers[f"model.{name}"][i])
