"""The transformer trained on the retrieval problem of Mușat (2024) (defaults [R]: the paper's
architecture is unknown): token embeddings and positions, ``layers`` blocks of multi-head
self-attention and an MLP (``mlp_ratio`` x the width, 4 by default), pre-LayerNorm by default,
bidirectional attention by default (R1; ``causal=True`` for R3), a linear read-out at every
position.

Positions (``pos_encoding``; the paper's choice is unknown): ``"learned"`` absolute embeddings
(default), ``"sinusoidal"`` fixed absolute ones (Vaswani et al. 2017; the fairseq table of
:mod:`empirics.models.positions`, shared with the Bao language model), or ``"rope"``, rotary
embeddings of the queries and keys in every head (Su et al. 2021), which carry only relative
position into the attention scores: absolute positions let one layer read fixed statement
slots, which sidesteps Assumption 1 on small instances.

Attention patterns are computed with an explicit softmax and returned as
``[batch, head, query_pos, key_pos]`` per layer, so probes can score heads on structural
targets. A head can be ablated (its output zeroed, or replaced by its mean over the batch) for
the per-depth accuracy drop (a causal check of a head's role; not in the paper).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from attnverify.empirics.config import Batch, ModelConfig, TaskConfig, is_int, require
from attnverify.empirics.models.positions import sinusoidal_positions
from attnverify.empirics.probes.residual_lens import lens_accuracy
from attnverify.empirics.probes.retrieval_metrics import QUERY_ACCURACY, HeadMetric, depth_metric
from attnverify.empirics.tasks.retrieval import IGNORE


@dataclass(frozen=True)
class RetrievalTransformerConfig(ModelConfig):
    """``musat_transformer``: depth, heads, width, LayerNorm placement, attention mask."""

    kind = "musat_transformer"
    seconds_per_cost = 2.6e-05
    code_version = 2
    layers: int = 2
    heads: int = 4
    d_model: int = 64
    norm: str = "pre"
    causal: bool = False
    pos_encoding: str = "learned"
    mlp_ratio: int = 4

    NORMS = ("pre", "post")
    POS_ENCODINGS = ("learned", "sinusoidal", "rope")

    def validate(self) -> None:
        for name in ("layers", "heads", "d_model"):
            value = getattr(self, name)
            require(is_int(value) and value >= 1, f"model.{name}", "an integer >= 1", value)
        require(self.d_model % self.heads == 0, "model.d_model",
                f"a multiple of heads = {self.heads}", self.d_model)
        require(self.norm in self.NORMS, "model.norm", f"one of {', '.join(self.NORMS)}",
                self.norm)
        require(isinstance(self.causal, bool), "model.causal", "true or false", self.causal)
        require(self.pos_encoding in self.POS_ENCODINGS, "model.pos_encoding",
                f"one of {', '.join(self.POS_ENCODINGS)}", self.pos_encoding)
        require(self.pos_encoding != "rope" or (self.d_model // self.heads) % 2 == 0,
                "model.d_model", "an even width per head for rope", self.d_model)
        require(is_int(self.mlp_ratio) and self.mlp_ratio >= 1, "model.mlp_ratio",
                "an integer >= 1", self.mlp_ratio)

    def build(self, task: TaskConfig) -> RetrievalTransformer:
        require(hasattr(task, "vocab_size") and hasattr(task, "T"), "task",
                "a sequence task (with vocab_size and T)", task)
        return RetrievalTransformer(self, task.vocab_size(), task.T)  # type: ignore[attr-defined]

    def seed_batchable(self) -> bool:
        """No dropout and only vmappable ops: seeds train as one batched model."""
        return True

    def relative_cost(self, task: TaskConfig) -> float:
        T = getattr(task, "T", 32)
        width = 4 + 2 * self.mlp_ratio  # qkv and projection, then the MLP, per d_model^2
        return self.layers * T * (width * self.d_model**2 + 2 * T * self.d_model) / 5e4


def rotary_angles(T: int, head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin (T, head_dim / 2) of the rotary angles position / 10000^(2i/head_dim)."""
    rate = 10000.0 ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.arange(T, dtype=torch.float32)[:, None] * rate
    return torch.cos(angles), torch.sin(angles)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each (even, odd) pair of the last dimension of x (..., T, head_dim) by its
    position's angle: the score of a rotated query and key depends on their offset only."""
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, config: RetrievalTransformerConfig, T: int) -> None:
        super().__init__()
        d = config.d_model
        self.heads, self.head_dim = config.heads, d // config.heads
        self.pre = config.norm == "pre"
        self.causal = config.causal
        self.rope = config.pos_encoding == "rope"
        if self.rope:
            cos, sin = rotary_angles(T, self.head_dim)
            self.register_buffer("cos", cos, persistent=False)
            self.register_buffer("sin", sin, persistent=False)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        hidden = config.mlp_ratio * d
        self.mlp = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d))

    def attend(self, x: torch.Tensor, ablate: dict[int, str]
               ) -> tuple[torch.Tensor, torch.Tensor]:
        B, T, d = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        if self.rope:
            q, k = rotate(q, self.cos[:T], self.sin[:T]), rotate(k, self.cos[:T], self.sin[:T])
        scores = q @ k.transpose(-1, -2) / self.head_dim**0.5                   # (B, H, T, T)
        if self.causal:
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            scores = scores.masked_fill(~mask, float("-inf"))
        alpha = torch.softmax(scores, dim=-1)                                    # (B, H, T, T)
        heads = alpha @ v                                                        # (B, H, T, hd)
        for h, mode in ablate.items():
            heads[:, h] = 0.0 if mode == "zero" else heads[:, h].mean(0, keepdim=True)
        return self.proj(heads.transpose(1, 2).reshape(B, T, d)), alpha

    def forward(self, x: torch.Tensor, ablate: dict[int, str]
                ) -> tuple[torch.Tensor, torch.Tensor]:
        if self.pre:
            a, alpha = self.attend(self.ln1(x), ablate)
            x = x + a
            return x + self.mlp(self.ln2(x)), alpha
        a, alpha = self.attend(x, ablate)
        x = self.ln1(x + a)
        return self.ln2(x + self.mlp(x)), alpha


class RetrievalTransformer(nn.Module):
    def __init__(self, config: RetrievalTransformerConfig, vocab: int, T: int) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(vocab, config.d_model)
        if config.pos_encoding == "learned":
            self.pos = nn.Parameter(torch.randn(T, config.d_model))  # as the token embeddings
        elif config.pos_encoding == "sinusoidal":
            self.register_buffer("pos", sinusoidal_positions(T, config.d_model),
                                 persistent=False)
        else:  # rope: positions enter the attention scores only
            self.register_buffer("pos", torch.zeros(T, config.d_model), persistent=False)
        self.blocks = nn.ModuleList(Block(config, T) for _ in range(config.layers))
        self.ln_f = nn.LayerNorm(config.d_model) if config.norm == "pre" else nn.Identity()
        self.out = nn.Linear(config.d_model, vocab)

    def forward(self, tokens: torch.Tensor, ablate: dict[tuple[int, int], str] | None = None
                ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits (B, T, vocab) and one attention pattern (B, H, T, T) per layer; ``ablate``
        maps (layer, head) to "zero" or "mean"."""
        logits, patterns, _ = self.run(tokens, ablate)
        return logits, patterns

    def run(self, tokens: torch.Tensor, ablate: dict[tuple[int, int], str] | None = None
            ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """Logits, the attention patterns and the residual stream (B, T, d_model) after each
        layer (the embedding first, the last block's output last)."""
        ablate = ablate or {}
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]
        patterns, streams = [], [x]
        for i, block in enumerate(self.blocks):
            x, alpha = block(x, {h: m for (layer, h), m in ablate.items() if layer == i})
            patterns.append(alpha)
            streams.append(x)
        return self.readout(x), patterns, streams

    def readout(self, stream: torch.Tensor) -> torch.Tensor:
        """Logits from a final residual stream (the final LayerNorm, then the output layer)."""
        return self.out(self.ln_f(stream))

    def loss(self, batch: Batch) -> torch.Tensor:
        logits, _ = self(batch["tokens"])
        return F.cross_entropy(logits.flatten(0, 1), batch["targets"].flatten(),
                               ignore_index=IGNORE)

    def attention(self, batch: Batch) -> torch.Tensor:
        """All layers' patterns stacked: (B, layers * heads, T, T)."""
        return torch.cat(self(batch["tokens"])[1], dim=1)

    def depth_accuracy(self, batch: Batch, ablate: dict[tuple[int, int], str] | None = None
                       ) -> tuple[float, np.ndarray]:
        """Query accuracy and per-depth accuracy: depth 0..D over the chain's statement tokens
        that have a target in evaluation, so depths are visible whatever the training
        supervision. The query (the last position) is left out of the per-depth accuracies and
        reported on its own: it sits at depth D but is a separate token that needs one more
        read (the same-symbol hop to its statement; see the refined bound in
        docs/derivations.md#information-flow-game-and-refined-bound), and trained models can
        solve every statement while the query stays at chance."""
        logits, _ = self(batch["tokens"], ablate)
        correct = logits.argmax(-1) == batch["eval_targets"]
        D = int(batch["depth"].max())
        statements, depth = correct[:, :-1], batch["depth"][:, :-1]
        per_depth = np.array([statements[depth == k].double().mean().item()
                              for k in range(D + 1)])
        return correct[:, -1].double().mean().item(), per_depth

    def metrics(self, batch: Batch) -> dict[str, float]:
        """Loss; query accuracy; per-depth accuracy ``acc_depth{k}``; and per head (layer l,
        head h) the mean attention mass on structural targets (a reconstruction [R]), over the
        query positions that have such a target (a perfect head scores 1):
        ``head{l}.{h}_partner`` (the other token of the same statement),
        ``_partner_from_first``, ``_partner_from_second`` (the same, from first or second
        tokens only), ``_same_symbol`` (the
        other occurrences of the same symbol), ``_chain_next`` and ``_chain_prev`` (the
        neighbouring statements of the chain, :func:`structural_masks`), ``_self``."""
        tokens = batch["tokens"]
        logits, patterns = self(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), batch["targets"].flatten(),
                               ignore_index=IGNORE)
        query_acc, per_depth = self.depth_accuracy(batch)
        out = {"loss": loss.item(), QUERY_ACCURACY: query_acc}
        out.update({depth_metric(k): float(a) for k, a in enumerate(per_depth)})
        masks = structural_masks(tokens)
        for layer, alpha in enumerate(patterns):
            for name, mask in masks.items():
                has_target = mask.any(-1)                                        # (B, T)
                mass = (alpha * mask[:, None]).sum(-1)                           # (B, H, T)
                score = (mass * has_target[:, None]).sum((0, 2)) / has_target.sum().clamp_min(1)
                for h, value in enumerate(score.tolist()):
                    out[HeadMetric(layer, h, name).name] = value
        return out

    def final_state(self, batch: Batch) -> dict[str, np.ndarray]:
        """Per-depth accuracy intact and with each head zero- or mean-ablated in turn:
        ``ablation_{mode}`` has shape (layers, heads, D + 1); one attention map per layer of
        the first evaluation example (``attention_example``: layers, heads, T, T)."""
        with torch.no_grad():
            _, base = self.depth_accuracy(batch)
            out = {"depth_acc": base}
            for mode in ("zero", "mean"):
                table = np.stack([np.stack([
                    self.depth_accuracy(batch, {(layer, h): mode})[1]
                    for h in range(self.config.heads)]) for layer in range(self.config.layers)])
                out[f"ablation_{mode}"] = table
            _, patterns = self(batch["tokens"][:1])
            out["attention_example"] = torch.stack([p[0] for p in patterns]).cpu().numpy()
            out["tokens_example"] = batch["tokens"][0].cpu().numpy()
            out.update(self.lens(batch))
        return out

    def lens(self, batch: Batch) -> dict[str, np.ndarray]:
        """The linear lens of :mod:`empirics.probes.residual_lens`: after each layer (0 = the
        embedding), the accuracy of each position's answer read from its residual stream.
        ``lens_depth`` (layers + 1, D + 1): statement tokens by depth (one map per layer fitted
        on all statement tokens); ``lens_first`` and ``lens_second``: the same for the first
        and for the second token of each statement only (in the default order, a link's
        symbol and the symbol it is bound to); ``lens_query`` (layers + 1,): the query (its
        own map)."""
        tokens, targets, depth = batch["tokens"], batch["eval_targets"], batch["depth"]
        _, _, streams = self.run(tokens)
        statement = torch.zeros_like(depth, dtype=torch.bool)
        statement[:, :-1] = depth[:, :-1] >= 0
        first = statement & (torch.arange(depth.shape[1], device=depth.device) % 2 == 0)
        query = torch.zeros_like(statement)
        query[:, -1] = True
        D = int(depth.max())
        slots = {"depth": statement, "first": first, "second": statement & ~first}
        masks = {f"{slot}/{k}": mask & (depth == k) for slot, mask in slots.items()
                 for k in range(D + 1)}
        read = lens_accuracy(streams, self.readout, targets, statement, masks)
        out = {f"lens_{slot}": np.stack([read[f"{slot}/{k}"] for k in range(D + 1)], axis=1)
               for slot in slots}
        out["lens_query"] = lens_accuracy(streams, self.readout, targets, query,
                                          {"query": query})["query"]
        return out


def structural_masks(tokens: torch.Tensor) -> dict[str, torch.Tensor]:
    """Boolean (B, T, T) masks of each query position's structural targets (a reconstruction
    [R]): its statement partner (positions 2j <-> 2j + 1); the other positions holding its
    symbol; the chain neighbours of its statement (a, b) (both tokens of each):
    ``chain_next``, the statement whose first token is b, and ``chain_prev``, the statement
    whose second token is a (in the default R1 order (s_i, s_{i-1}), next leads toward the
    root: the hop a retrieval head makes); itself. ``partner_from_first`` and
    ``partner_from_second``: the partner, from one token of each statement only (the other
    has no target): a head that reads the partner in one direction and does something else
    from the other token scores 1 on one of them but only about 1/2 as ``partner`` (in R1
    order, a first token reading its second is a symbol reading its value: the first hop).
    Positions outside the statements (the marker, the query) have no partner and no chain
    neighbours."""
    B, T = tokens.shape
    idx = torch.arange(T)
    partner = torch.zeros(T, T, dtype=torch.bool)
    n_stmt = (T - 1) // 2 * 2
    partner[idx[:n_stmt], idx[:n_stmt] ^ 1] = True
    from_first = torch.zeros(T, T, dtype=torch.bool)
    from_first[idx[0:n_stmt:2], idx[1:n_stmt:2]] = True
    same = (tokens[:, :, None] == tokens[:, None, :]) & ~torch.eye(T, dtype=torch.bool)
    first = tokens[:, 0:n_stmt:2].repeat_interleave(2, dim=1)                   # (B, n_stmt)
    second = tokens[:, 1:n_stmt:2].repeat_interleave(2, dim=1)
    chain_next = torch.zeros(B, T, T, dtype=torch.bool)
    chain_prev = torch.zeros(B, T, T, dtype=torch.bool)
    # query side: the statement of position p; key side: the statement of position q
    chain_next[:, :n_stmt, :n_stmt] = second[:, :, None] == first[:, None, :]
    chain_prev[:, :n_stmt, :n_stmt] = first[:, :, None] == second[:, None, :]
    return {"partner": partner.expand(B, T, T),
            "partner_from_first": from_first.expand(B, T, T),
            "partner_from_second": from_first.T.expand(B, T, T), "same_symbol": same,
            "chain_next": chain_next, "chain_prev": chain_prev,
            "self": torch.eye(T, dtype=torch.bool).expand(B, T, T)}
