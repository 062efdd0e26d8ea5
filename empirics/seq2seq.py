"""The copying LSTM seq2seq of Snell et al. (2021), snell2021.md §1.1 (official ``Seq2seq``).

One shared embedding for encoder and decoder input (output word o *is* token o), a unidirectional
1-layer LSTM encoder and decoder, the decoder initialised with the encoder's final (h, c), teacher
forcing, **no input feeding** (the decoder state s_t does not see the context, so the decoder runs
over the whole target at once), and single-head Luong "general" attention without scaling:

    score_{t,l} = (W_a s_t + b_a)^T h_l,     alpha_{t,l} = softmax_l(score_{t,l})
    c_t = W_c (sum_l alpha_{t,l} h_l) + b_c
    o_t = tanh(W_o [s_t; c_t] + b_o),        log p(. | ...) = log_softmax(W_v o_t + b_v)

``attention="uniform"`` is the official ``--invasive_uniform`` ablation: scores are replaced by
zeros, so alpha = 1/S exactly and the attention map W_a receives no gradient.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from empirics.config import Batch, ModelConfig, TaskConfig, is_int, require
from empirics.copying import CopyTask


@dataclass(frozen=True)
class Seq2SeqConfig(ModelConfig):
    """``snell_seq2seq``: hidden size (= embedding size) and the attention mode."""

    kind = "snell_seq2seq"
    hidden: int = 256
    attention: str = "learned"

    ATTENTION_MODES = ("learned", "uniform")

    def validate(self) -> None:
        require(is_int(self.hidden) and self.hidden >= 1, "model.hidden", "an integer >= 1",
                self.hidden)
        require(self.attention in self.ATTENTION_MODES, "model.attention",
                f"one of {', '.join(self.ATTENTION_MODES)}", self.attention)

    def build(self, task: TaskConfig) -> CopyingSeq2Seq:
        require(isinstance(task, CopyTask), "task", "a copy task for snell_seq2seq", task)
        assert isinstance(task, CopyTask)
        return CopyingSeq2Seq(task.n_tokens, self.hidden, uniform=self.attention == "uniform")


class CopyingSeq2Seq(nn.Module):
    def __init__(self, n_tokens: int, hidden: int, uniform: bool = False) -> None:
        super().__init__()
        self.uniform = uniform
        self.embedding = nn.Embedding(n_tokens, hidden)
        self.encoder = nn.LSTM(hidden, hidden, batch_first=True)
        self.decoder = nn.LSTM(hidden, hidden, batch_first=True)
        self.attn_lin = nn.Linear(hidden, hidden)  # W_a, b_a
        self.project_enc = nn.Linear(hidden, hidden)  # W_c, b_c
        self.after_decoder = nn.Linear(2 * hidden, hidden)  # W_o, b_o
        self.hidden2vocab = nn.Linear(hidden, n_tokens)  # W_v, b_v

    def forward(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (logits (B, T, n_tokens), attention (B, 1, T, S))."""
        enc, state = self.encoder(self.embedding(batch["source"]))  # (B, S, H)
        dec, _ = self.decoder(self.embedding(batch["decoder_input"]), state)  # (B, T, H)
        if self.uniform:
            scores = dec.new_zeros(dec.shape[0], dec.shape[1], enc.shape[1])  # (B, T, S)
        else:
            scores = self.attn_lin(dec) @ enc.transpose(1, 2)  # (B, T, S)
        alpha = torch.softmax(scores, dim=-1)  # (B, T, S), explicit so it can be recorded
        context = self.project_enc(alpha @ enc)  # (B, T, H)
        out = torch.tanh(self.after_decoder(torch.cat([dec, context], dim=-1)))  # (B, T, H)
        return self.hidden2vocab(out), alpha.unsqueeze(1)

    def loss(self, batch: Batch) -> torch.Tensor:
        """Mean token negative log-likelihood over all B x T targets (official NLLLoss)."""
        logits, _ = self(batch)
        return F.cross_entropy(logits.flatten(0, 1), batch["target"].flatten())

    def attention(self, batch: Batch) -> torch.Tensor:
        """Attention pattern [batch, head, query_pos, key_pos] = (B, 1, T, S)."""
        return self(batch)[1]

    def metrics(self, batch: Batch) -> dict[str, float]:
        """Evaluation metrics of snell2021.md §3.4 plus the recommended additions.

        ``acc``: teacher-forced token accuracy over all T targets (incl. EOS); ``attn_acc``:
        fraction of (example, t) with argmax_l alpha_{t,l} = t; ``attn_acc_m1``/``_p1``: argmax at
        t+1 / t-1; ``gold_attention``: mean alpha_{t,t}; ``attn_entropy``: mean entropy in nats;
        ``attn_max``: mean max_l alpha_{t,l}.
        """
        logits, attn = self(batch)
        target = batch["target"]  # (B, T)
        alpha = attn[:, 0]  # (B, T, S)
        steps = torch.arange(alpha.shape[1])
        argmax = alpha.argmax(dim=-1)  # (B, T)
        entropy = -(alpha * torch.log(alpha.clamp_min(1e-30))).sum(-1)  # (B, T)
        n_src = alpha.shape[-1]
        return {
            "loss": F.cross_entropy(logits.flatten(0, 1), target.flatten()).item(),
            "acc": (logits.argmax(-1) == target).double().mean().item(),
            "attn_acc": (argmax == steps).double().mean().item(),
            "attn_acc_m1": (argmax == steps + 1).double().mean().item(),
            "attn_acc_p1": (argmax == steps - 1).double().mean().item(),
            "gold_attention": alpha[:, steps, steps].double().mean().item(),
            "attn_entropy": entropy.double().mean().item(),
            "attn_entropy_ratio": entropy.double().mean().item() / math.log(n_src),
            "attn_max": alpha.max(-1).values.double().mean().item(),
        }
