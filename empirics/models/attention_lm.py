"""The one-layer, single-head self-attention language model of Bao et al. (2024): fairseq's
``transformer_lm`` with one decoder layer, one head, all widths ``d`` (128 in the paper),
reimplemented in plain PyTorch with fairseq's defaults.

    h0 = sqrt(d) E[x] + P              (sinusoidal positions, embeddings scaled by sqrt(d))
    a  = softmax_causal(c (W_q h0 + b_q)(W_k h0 + b_k)^T) (W_v h0 + b_v) W_o^T + b_o,  c = d^-1/2
    h1 = LN(h0 + drop(a));  h2 = LN(h1 + drop(FFN(h1)))        (Post-LN, the paper's setup)
    log p(x_{t+1} | x_<=t) = log_softmax(U h2)

``norm="pre"`` gives the Pre-LN variant (with a final LayerNorm). The analysed query-key matrix
is ``W = W_q^T W_k`` (d x d, biases ignored, §3.3): the score's bilinear part is ``c h^T W h'``.
LocAteR (§4, candidates A/B/C of :mod:`theory.bao.locater`, recomputed here with
autograd) adds ``locater * R(W)`` to the loss; ``locater_kind="F"`` is the plain control,
R_F = ||W||_F^2 / d, which shrinks the whole of W (its mean too) instead of concentrating its
spectrum around the mean.

``init_qk_mean`` and ``init_qk_std`` (both or neither) start W with a prescribed spectrum
(§3.3, the trainability argument): W_k = I and W_q = W = Q diag(lambda) Q^T with eigenvalue
mean and std exactly as given (:func:`~attnverify.empirics.probes.qk_spectrum.symmetric_qk`), Q and
the standardised noise drawn from a generator seeded by the run's own stream, so two runs of
one seed share them (common random numbers across spectra).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from attnverify.empirics.config import Batch, ModelConfig, TaskConfig, is_int, require
from attnverify.empirics.models.positions import sinusoidal_positions
from attnverify.empirics.probes.attention import attention_entropy
from attnverify.empirics.probes.qk_spectrum import eigen_stats, symmetric_qk
from attnverify.empirics.probes.score_monte_carlo import token_residual


@dataclass(frozen=True)
class AttentionLMConfig(ModelConfig):
    """``bao_attention_lm``: width d, FFN width, LayerNorm placement, dropout, LocAteR, and
    optionally the initial spectrum of W (left out of the spec's form while unset, so the
    keys of runs without it stay as they were)."""

    kind = "bao_attention_lm"
    seconds_per_cost = 3.7e-05
    code_version = 1
    d: int = 128
    ffn: int = 128
    norm: str = "post"
    dropout: float = 0.1
    locater: float = 0.0
    locater_kind: str = "A"
    init_qk_mean: float | None = None
    init_qk_std: float | None = None

    NORMS = ("post", "pre")
    LOCATER_KINDS = ("A", "B", "C", "F")

    def validate(self) -> None:
        for name in ("d", "ffn"):
            value = getattr(self, name)
            require(is_int(value) and value >= 1, f"model.{name}", "an integer >= 1", value)
        require(self.norm in self.NORMS, "model.norm", f"one of {', '.join(self.NORMS)}",
                self.norm)
        require(isinstance(self.dropout, int | float) and 0 <= self.dropout < 1, "model.dropout",
                "a probability in [0, 1)", self.dropout)
        require(isinstance(self.locater, int | float) and self.locater >= 0
                and math.isfinite(self.locater), "model.locater", "a finite number >= 0",
                self.locater)
        require(self.locater_kind in self.LOCATER_KINDS, "model.locater_kind",
                f"one of {', '.join(self.LOCATER_KINDS)}", self.locater_kind)
        require((self.init_qk_mean is None) == (self.init_qk_std is None), "model.init_qk_std",
                "set together with init_qk_mean (or neither)", self.init_qk_std)
        if self.init_qk_mean is not None:
            require(isinstance(self.init_qk_mean, int | float)
                    and math.isfinite(self.init_qk_mean), "model.init_qk_mean",
                    "a finite number", self.init_qk_mean)
            require(isinstance(self.init_qk_std, int | float) and self.init_qk_std >= 0
                    and math.isfinite(self.init_qk_std), "model.init_qk_std",
                    "a finite number >= 0", self.init_qk_std)

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        for name in ("init_qk_mean", "init_qk_std"):
            if data[name] is None:
                del data[name]
        return data

    def build(self, task: TaskConfig) -> AttentionLM:
        vocab: Any = getattr(task, "vocab_size", None)
        require(vocab is not None, "task", "a language-modelling task (with vocab_size)", task)
        return AttentionLM(self, vocab(), max_len=task.T)  # type: ignore[attr-defined]

    def seed_batchable(self) -> bool:
        """Only without dropout: the plain loop draws each seed's dropout masks from that
        seed's own noise stream, which one batched model cannot reproduce."""
        return self.dropout == 0

    def relative_cost(self, task: TaskConfig) -> float:
        T = getattr(task, "T", 64)
        vocab = task.vocab_size() if hasattr(task, "vocab_size") else 64
        return T * (4 * self.d**2 + 2 * self.d * self.ffn + self.d * vocab + T * self.d) / 4e4


def locater_penalty(w: torch.Tensor, kind: str, m0: torch.Tensor) -> torch.Tensor:
    """R_A, R_B (trace anchored at ``m0``, kappa = 1) or R_C of
    docs/derivations.md#locater-candidates, or the plain Frobenius penalty R_F = ||W||_F^2 / d
    (a control, not LocAteR), differentiable."""
    d = w.shape[0]
    frob2 = (w * w).sum() / d
    if kind == "F":
        return frob2
    mean = torch.trace(w) / d
    if kind == "A":
        return frob2 - mean**2
    if kind == "B":
        return frob2 + (mean - m0) ** 2
    return frob2 / (mean**2 + 1e-12)  # C: scale-free; guarded at tr W = 0


class AttentionLM(nn.Module):
    def __init__(self, config: AttentionLMConfig, vocab: int, max_len: int) -> None:
        super().__init__()
        d = config.d
        self.config = config
        self.embed = nn.Embedding(vocab, d)
        nn.init.normal_(self.embed.weight, std=d**-0.5)
        self.register_buffer("positions", sinusoidal_positions(max_len, d), persistent=False)
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d, d) for _ in range(4))
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            nn.init.xavier_uniform_(proj.weight, gain=2**-0.5)  # fairseq, equal q/k/v dims
        nn.init.xavier_uniform_(self.o_proj.weight)
        nn.init.zeros_(self.o_proj.bias)
        if config.init_qk_mean is not None:
            # validate() sets init_qk_std together with init_qk_mean
            self._prescribe_spectrum(config.init_qk_mean, cast(float, config.init_qk_std))
        self.fc1, self.fc2 = nn.Linear(d, config.ffn), nn.Linear(config.ffn, d)
        for fc in (self.fc1, self.fc2):
            nn.init.xavier_uniform_(fc.weight)
            nn.init.zeros_(fc.bias)
        self.ln_attn, self.ln_ffn = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ln_final = nn.LayerNorm(d) if config.norm == "pre" else nn.Identity()
        self.out = nn.Linear(d, vocab, bias=False)
        nn.init.normal_(self.out.weight, std=d**-0.5)
        self.drop = nn.Dropout(config.dropout)
        self.register_buffer("m0", (torch.trace(self.qk_matrix()) / d).detach())

    def _prescribe_spectrum(self, mean: float, std: float) -> None:
        """W_k = I and W_q = W with eigenvalue mean ``mean`` and std ``std`` (class docstring);
        one draw from the run's stream seeds the generator of Q and the noise."""
        seed = int(torch.randint(0, 2**62, ()).item())
        w = symmetric_qk(self.config.d, mean, std, torch.Generator().manual_seed(seed))
        with torch.no_grad():
            self.q_proj.weight.copy_(w.T.to(self.q_proj.weight.dtype))
            self.k_proj.weight.copy_(torch.eye(self.config.d, dtype=self.k_proj.weight.dtype))

    def qk_matrix(self) -> torch.Tensor:
        """``W = W_q^T W_k`` (d x d): scores are ``c h^T W h'`` plus bias terms, c = d^-1/2."""
        return self.q_proj.weight.T @ self.k_proj.weight

    def _attend(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(output (B, T, d), attention (B, 1, T, T), raw scores (B, T, T)) for inputs h."""
        T = h.shape[1]
        q = self.q_proj(h) * self.config.d**-0.5                             # (B, T, d)
        scores = q @ self.k_proj(h).transpose(1, 2)                          # (B, T, T)
        causal = torch.ones(T, T, dtype=torch.bool, device=h.device).tril()
        alpha = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        return alpha @ self.v_proj(h), alpha[:, None], scores               # (B, T, d)

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Logits (B, T, vocab) for inputs (B, T), and the internals the probes read."""
        T = tokens.shape[1]
        h0 = self.drop(self.embed(tokens) * self.config.d**0.5 + self.positions[:T])
        post = self.config.norm == "post"
        x = h0 if post else self.ln_attn(h0)
        mixed, alpha, scores = self._attend(x)
        h1 = h0 + self.drop(self.o_proj(mixed))
        h1 = self.ln_attn(h1) if post else h1
        f = self.fc2(F.relu(self.fc1(h1 if post else self.ln_ffn(h1))))
        h2 = h1 + self.drop(f)
        h2 = self.ln_ffn(h2) if post else self.ln_final(h2)
        values = self.v_proj(x)
        return self.out(h2), {"alpha": alpha, "scores": scores, "mixed": mixed, "values": values}

    def _cross_entropy(self, batch: Batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        tokens = batch["tokens"]
        logits, internals = self(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
        return loss, internals

    def regularizer(self) -> torch.Tensor:
        return locater_penalty(self.qk_matrix(), self.config.locater_kind, self.m0)

    def loss(self, batch: Batch) -> torch.Tensor:
        loss, _ = self._cross_entropy(batch)
        if self.config.locater > 0:
            loss = loss + self.config.locater * self.regularizer()
        return loss

    def attention(self, batch: Batch) -> torch.Tensor:
        return self(batch["tokens"][:, :-1])[1]["alpha"]                    # (B, 1, T, T)

    def metrics(self, batch: Batch) -> dict[str, float]:
        """Validation loss and perplexity; attention entropy over causal rows with at least two
        keys, raw (nats) and normalised by log i; the spectrum of W; the rank-collapse measure
        of the attention output; the rho-profile of the last query (per key position, the
        frequency over the batch of a centred score in (0, 1)), summarised by its mean and its
        participation ratio N_eff/T (§2.3)."""
        loss, internals = self._cross_entropy(batch)
        alpha = internals["alpha"][:, 0]                                      # (B, T, T)
        T = alpha.shape[-1]
        ent = attention_entropy(alpha)[:, 1:]                                 # (B, T-1) rows i>=2
        log_i = torch.log(torch.arange(2, T + 1, dtype=alpha.dtype))
        last = internals["scores"][:, -1]                                   # (B, T) all keys
        centred = last - last.mean(-1, keepdim=True)                          # (B, T)
        rho_profile = ((centred > 0) & (centred < 1)).double().mean(0)       # (T,)
        stats = eigen_stats(self.qk_matrix().detach().double())
        res_out = token_residual(internals["mixed"])
        res_in = token_residual(internals["values"])
        return {
            "loss": loss.item(),
            "ppl": math.exp(min(loss.item(), 50.0)),
            "attn_entropy": ent.mean().item(),
            "attn_entropy_norm": (ent / log_i).mean().item(),
            "eig_mean": stats.mean,
            "eig_var": stats.var_sym,
            "eig_frob2": stats.frob2,
            "eig_tr_w2": stats.tr_w2,
            "locater_penalty": self.regularizer().item(),
            "rank_res": res_out.mean().item(),
            "rank_res_ratio": (res_out / res_in).mean().item(),
            "rho_emp": rho_profile.mean().item(),
            "rho_emp_participation": (rho_profile.sum() ** 2 / (rho_profile.pow(2).sum() * T)
                                      ).item() if rho_profile.sum() > 0 else 0.0,
        }

    def final_state(self, batch: Batch) -> dict[str, np.ndarray]:
        """The trained W = W_q^T W_k, its (complex) eigenvalues, and the rho-profile of the
        last query on the evaluation batch (per key position, the frequency of a centred score
        in (0, 1))."""
        with torch.no_grad():
            w = self.qk_matrix().double()
            eig = torch.linalg.eigvals(w)
            last = self(batch["tokens"][:, :-1])[1]["scores"][:, -1]                # (B, T)
            centred = last - last.mean(-1, keepdim=True)
            profile = ((centred > 0) & (centred < 1)).double().mean(0)
        return {"w_qk": w.cpu().numpy(), "eig_real": eig.real.cpu().numpy(),
                "eig_imag": eig.imag.cpu().numpy(), "rho_profile": profile.cpu().numpy()}
