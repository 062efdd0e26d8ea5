"""The free-attention two-stage toy (§4.6), as a trainable model.

Parameters: a KTIW matrix B (V x V) and attention logits Q (L x L) shared across examples
(assumption (b): attention weights are free parameters). On a copying batch (EOS dropped, T = L):
    z_t = sum_l softmax(Q_t)_l B[x_l, :],    loss = mean CE(z_t, x_t).
Trained with SGD in float64 for the exact symmetry statements (Adam amplifies round-off, §9.2).
The theory twin with numpy gradients is ``theory.snell.free_attention_gradients``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from attnverify.empirics.config import Batch, ModelConfig, TaskConfig, require
from attnverify.empirics.tasks.copying import CopyTask


@dataclass(frozen=True)
class FreeAttentionToyConfig(ModelConfig):
    """``free_attention_toy``: initial standard deviations of B and of Q (0 = exactly zero);
    ``attention="frozen"`` keeps Q = 0 (uniform attention): the bag-of-words model of §4.5."""

    kind = "free_attention_toy"
    seconds_per_cost = 1.5e-05
    code_version = 1
    init_std_ktiw: float = 0.0
    init_std_attention: float = 0.0
    attention: str = "free"

    def validate(self) -> None:
        require(self.attention in ("free", "frozen"), "model.attention", "free or frozen",
                self.attention)
        if self.attention == "frozen":
            require(self.init_std_attention == 0, "model.init_std_attention",
                    "0 when attention is frozen", self.init_std_attention)
        for name in ("init_std_ktiw", "init_std_attention"):
            value = getattr(self, name)
            require(isinstance(value, int | float) and value >= 0, f"model.{name}", ">= 0",
                    value)

    def build(self, task: TaskConfig) -> FreeAttentionToy:
        require(isinstance(task, CopyTask) and task.distribution != "iid", "task",
                "a subset or permutation copy task for free_attention_toy", task)
        assert isinstance(task, CopyTask)
        return FreeAttentionToy(task.vocab_size, task.length, self.init_std_ktiw,
                                self.init_std_attention, frozen=self.attention == "frozen")


class FreeAttentionToy(nn.Module):
    def __init__(self, vocab: int, length: int, std_ktiw: float, std_attention: float,
                 frozen: bool = False) -> None:
        super().__init__()
        self.ktiw = nn.Parameter(torch.randn(vocab, vocab) * std_ktiw)  # B: (V, V)
        logits = torch.randn(length, length) * std_attention  # Q: (T, L)
        if frozen:
            self.register_buffer("logits", logits)
        else:
            self.logits = nn.Parameter(logits)

    def _words(self, batch: Batch) -> torch.Tensor:
        return batch["source"][:, :-1]  # (N, L): drop EOS

    def forward(self, words: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        alpha = torch.softmax(self.logits, dim=-1)  # (T, L)
        z = torch.einsum("tl,nlv->ntv", alpha, self.ktiw[words])  # (N, T, V)
        return z, alpha

    def loss(self, batch: Batch) -> torch.Tensor:
        words = self._words(batch)
        z, _ = self(words)
        return F.cross_entropy(z.flatten(0, 1), words.flatten())

    def attention(self, batch: Batch) -> torch.Tensor:
        words = self._words(batch)
        alpha = torch.softmax(self.logits, dim=-1)
        return alpha.expand(words.shape[0], 1, *alpha.shape)  # (N, 1, T, L)

    def metrics(self, batch: Batch) -> dict[str, float]:
        """``loss``, ``acc``, ``gold_attention`` (mean alpha_{t,t}), ``attn_acc``, ``ktiw_acc``
        (fraction of output words o with argmax_i B[i, o] = o), ``ktiw_row_spread``
        (max_o max_{i,j} |B[i, o] - B[j, o]|: 0 while B is row-constant) and
        ``attention_abs_max`` (max |Q|: 0 while attention stays uniform)."""
        words = self._words(batch)
        z, alpha = self(words)
        steps = torch.arange(alpha.shape[0])
        b = self.ktiw
        return {
            "loss": F.cross_entropy(z.flatten(0, 1), words.flatten()).item(),
            "acc": (z.argmax(-1) == words).double().mean().item(),
            "gold_attention": alpha[steps, steps].double().mean().item(),
            "attn_acc": (alpha.argmax(-1) == steps).double().mean().item(),
            "ktiw_acc": (b.argmax(0) == torch.arange(b.shape[1])).double().mean().item(),
            "ktiw_row_spread": (b.max(0).values - b.min(0).values).max().item(),
            "attention_abs_max": self.logits.abs().max().item(),
        }
