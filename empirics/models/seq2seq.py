"""The copying seq2seq models of Snell et al. (2021): the single-head and the multi-head model
of their code.

Default (``cell="lstm"``, ``heads=1``, shared embedding): the official single-head ``Seq2seq``.
One shared embedding for encoder and decoder input (output word o *is* token o), a
unidirectional 1-layer encoder and decoder, the decoder initialised with the encoder's final
state, teacher forcing, **no input feeding** (s_t does not see the context, so the decoder runs
over the whole target at once), and Luong "general" attention without scaling:

    score^h_{t,l} = (W^h_a s_t + b^h_a)^T h_l,      alpha^h_{t,l} = softmax_l(score^h_{t,l})
    c_t = (1/H) sum_h [W^h_c (sum_l alpha^h_{t,l} h_l) + b^h_c]
    o_t = tanh(W_o [s_t; c_t] + b_o),                log p(. | ...) = log_softmax(W_v o_t + b_v)

``cell="gru"``, ``heads=8``, ``shared_embedding=False`` is the official multi-head model
(per-head query map and value/output map, mean over heads; its ``[c; s]`` concatenation order is
ours ``[s; c]``, the same model up to a permutation of W_o's columns). With one head the two
forms coincide with the single-head model.

``attention="uniform"`` is the official ``--invasive_uniform`` ablation: scores are replaced by
zeros, so alpha = 1/S exactly and the attention maps W_a receive no gradient.

``base_seed`` and ``head_seeds`` give the initialisation of the official multi-head protocol: every
parameter outside the attention heads is drawn from ``base_seed`` alone (the same base for any
number of heads and any run seed), and head k's W^k_a, b^k_a, W^k_c, b^k_c from
``head_seeds[k]`` alone, so one head can be trained alone and then combined with others. The
distributions are PyTorch's defaults for each layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from attnverify.empirics.config import Batch, ModelConfig, TaskConfig, is_int, require
from attnverify.empirics.probes.attention import attention_entropy, entropy_ratio
from attnverify.empirics.tasks.copying import CopyTask


@dataclass(frozen=True)
class Seq2SeqConfig(ModelConfig):
    """``snell_seq2seq``: hidden size (= embedding size), attention mode, heads, cell type."""

    kind = "snell_seq2seq"
    seconds_per_cost = 5.5e-09
    code_version = 1
    hidden: int = 256
    attention: str = "learned"
    heads: int = 1
    cell: str = "lstm"
    shared_embedding: bool = True
    base_seed: int | None = None
    head_seeds: tuple[int, ...] = ()
    record_probe: bool = False
    """Report, at the end of the run, each word step's attention argmax and the KTIW probe
    beta on the evaluation batch (``final/attn_argmax``, ``final/ktiw_probe``), for the
    agreement metric A of spec §3.2; left out of the spec's form while false, so earlier run
    keys stay."""

    ATTENTION_MODES = ("learned", "uniform")
    CELLS = ("lstm", "gru")

    def validate(self) -> None:
        require(is_int(self.hidden) and self.hidden >= 1, "model.hidden", "an integer >= 1",
                self.hidden)
        require(self.attention in self.ATTENTION_MODES, "model.attention",
                f"one of {', '.join(self.ATTENTION_MODES)}", self.attention)
        require(is_int(self.heads) and self.heads >= 1, "model.heads", "an integer >= 1",
                self.heads)
        require(self.cell in self.CELLS, "model.cell", f"one of {', '.join(self.CELLS)}",
                self.cell)
        require(isinstance(self.shared_embedding, bool), "model.shared_embedding",
                "true or false", self.shared_embedding)
        require(self.base_seed is None or (is_int(self.base_seed) and self.base_seed >= 0),
                "model.base_seed", "null or an integer >= 0", self.base_seed)
        seeds = tuple(self.head_seeds)  # JSON gives a list
        require(seeds == () or (len(seeds) == self.heads
                                and all(is_int(s) and s >= 0 for s in seeds)),
                "model.head_seeds", f"empty or {self.heads} integers >= 0 (one per head)", seeds)
        object.__setattr__(self, "head_seeds", seeds)
        require(isinstance(self.record_probe, bool), "model.record_probe", "true or false",
                self.record_probe)

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        if not data["record_probe"]:
            del data["record_probe"]
        return data

    def relative_cost(self, task: TaskConfig) -> float:
        length = task.length if isinstance(task, CopyTask) else 1
        return length * self.hidden**2 * (1 + 0.15 * self.heads)

    def build(self, task: TaskConfig) -> CopyingSeq2Seq:
        require(isinstance(task, CopyTask), "task", "a copy task for snell_seq2seq", task)
        assert isinstance(task, CopyTask)
        model = CopyingSeq2Seq(self, task.n_tokens)
        if self.base_seed is not None:
            model.reset_base(torch.Generator().manual_seed(self.base_seed))
        for k, seed in enumerate(self.head_seeds):
            model.reset_head(k, torch.Generator().manual_seed(seed))
        return model


class CopyingSeq2Seq(nn.Module):
    def __init__(self, config: Seq2SeqConfig, n_tokens: int) -> None:
        super().__init__()
        hidden, heads = config.hidden, config.heads
        self.uniform = config.attention == "uniform"
        self.record_probe = config.record_probe
        self.heads = heads
        rnn = nn.LSTM if config.cell == "lstm" else nn.GRU
        self.embedding = nn.Embedding(n_tokens, hidden)
        self.decoder_embedding = (self.embedding if config.shared_embedding
                                  else nn.Embedding(n_tokens, hidden))
        self.encoder = rnn(hidden, hidden, batch_first=True)
        self.decoder = rnn(hidden, hidden, batch_first=True)
        self.attn_lin = nn.Linear(hidden, heads * hidden)  # W^h_a, b^h_a of every head
        # W^h_c, b^h_c per head, with nn.Linear's default init U(-1/sqrt(H), 1/sqrt(H))
        bound = 1 / math.sqrt(hidden)
        self.project_enc_weight = nn.Parameter(torch.empty(heads, hidden, hidden).uniform_(
            -bound, bound))
        self.project_enc_bias = nn.Parameter(torch.empty(heads, hidden).uniform_(-bound, bound))
        self.after_decoder = nn.Linear(2 * hidden, hidden)  # W_o, b_o
        self.hidden2vocab = nn.Linear(hidden, n_tokens)  # W_v, b_v

    @torch.no_grad()
    def reset_base(self, generator: torch.Generator) -> None:
        """Redraw every parameter outside the heads from ``generator`` (PyTorch's default
        distributions: N(0, 1) embeddings, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the recurrent
        and linear layers), in a fixed order independent of the number of heads."""
        embeddings = [self.embedding] + ([self.decoder_embedding]
                                         if self.decoder_embedding is not self.embedding else [])
        for emb in embeddings:
            emb.weight.normal_(0.0, 1.0, generator=generator)
        for rnn in (self.encoder, self.decoder):
            bound = 1 / math.sqrt(rnn.hidden_size)
            for param in rnn.parameters():
                param.uniform_(-bound, bound, generator=generator)
        for linear in (self.after_decoder, self.hidden2vocab):
            bound = 1 / math.sqrt(linear.in_features)
            linear.weight.uniform_(-bound, bound, generator=generator)
            linear.bias.uniform_(-bound, bound, generator=generator)

    @torch.no_grad()
    def reset_head(self, k: int, generator: torch.Generator) -> None:
        """Redraw head k's query map (W^k_a, b^k_a) and value map (W^k_c, b^k_c) from
        ``generator``, with nn.Linear's default U(-1/sqrt(H), 1/sqrt(H))."""
        h = self.project_enc_weight.shape[-1]
        bound = 1 / math.sqrt(h)
        rows = slice(k * h, (k + 1) * h)
        for tensor in (self.attn_lin.weight[rows], self.attn_lin.bias[rows],
                       self.project_enc_weight[k], self.project_enc_bias[k]):
            tensor.uniform_(-bound, bound, generator=generator)

    def states(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Encoder states h (B, S, H) and teacher-forced decoder states s (B, T, H)."""
        enc, state = self.encoder(self.embedding(batch["source"]))  # (B, S, H)
        dec, _ = self.decoder(self.decoder_embedding(batch["decoder_input"]), state)  # (B, T, H)
        return enc, dec

    def project(self, summary: torch.Tensor) -> torch.Tensor:
        """Mean over heads of W^h_c summary^h + b^h_c: (..., heads, H) -> (..., H), as one
        matmul: mean_h W^h x^h = [W^1 ... W^K] concat_h(x^h) / K."""
        k, h_out, h_in = self.project_enc_weight.shape
        weight = self.project_enc_weight.permute(1, 0, 2).reshape(h_out, k * h_in) / k
        return F.linear(summary.flatten(-2), weight, self.project_enc_bias.mean(dim=0))

    def readout(self, dec: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """Logits from decoder states and contexts (broadcast over leading dims):
        W_v tanh(W_o [s; c] + b_o) + b_v, with W_o [s; c] = W_o^s s + W_o^c c computed per
        factor before broadcasting (the probe pairs every s_t with every c_l)."""
        h = dec.shape[-1]
        w_s, w_c = self.after_decoder.weight[:, :h], self.after_decoder.weight[:, h:]
        pre = F.linear(dec, w_s, self.after_decoder.bias) + F.linear(context, w_c)
        return self.hidden2vocab(torch.tanh(pre))

    def forward(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (logits (B, T, n_tokens), attention (B, heads, T, S))."""
        enc, dec = self.states(batch)
        b, t, h = dec.shape
        k, n_src = self.heads, enc.shape[1]
        # the K heads of step t are rows t K .. t K + K - 1 of one (T K, H) x (H, S) matmul per
        # example: no head transposes, and the summary comes out as (B, T, K, H) directly
        if self.uniform:
            scores = dec.new_zeros(b, t * k, n_src)  # (B, T K, S)
        else:
            scores = self.attn_lin(dec).view(b, t * k, h) @ enc.transpose(1, 2)  # (B, T K, S)
        alpha = torch.softmax(scores, dim=-1)  # explicit so it can be recorded
        summary = (alpha @ enc).view(b, t, k, h)  # (B, T, K, H)
        alpha = alpha.view(b, t, k, n_src).transpose(1, 2)  # (B, K, T, S)
        return self.readout(dec, self.project(summary)), alpha

    def loss(self, batch: Batch) -> torch.Tensor:
        """Mean token negative log-likelihood over all B x T targets (official NLLLoss)."""
        logits, _ = self(batch)
        return F.cross_entropy(logits.flatten(0, 1), batch["target"].flatten())

    def attention(self, batch: Batch) -> torch.Tensor:
        """Attention pattern [batch, head, query_pos, key_pos] = (B, heads, T, S)."""
        return self(batch)[1]

    def ktiw_probe(self, batch: Batch) -> torch.Tensor:
        """KTIW probe beta (as in the official code): (B, T, S) log-probability of the gold token
        y_t when attention is replaced by a one-hot on source position l (in every head), the real
        decoder state s_t kept: ``beta_{t,l} = log p(y_t | s_t, c_t := mean_h W^h_c h_l + b^h_c)``.
        """
        enc, dec = self.states(batch)
        per_head = enc.unsqueeze(2).expand(-1, -1, self.heads, -1)  # (B, S, K, H)
        contexts = self.project(per_head).unsqueeze(1)  # (B, 1, S, H)
        logits = self.readout(dec.unsqueeze(2), contexts)  # (B, T, S, n_tokens)
        gold = batch["target"][:, :, None, None].expand(-1, -1, logits.shape[2], 1)
        return torch.log_softmax(logits, dim=-1).gather(-1, gold).squeeze(-1)  # (B, T, S)

    @torch.no_grad()
    def final_state(self, batch: Batch) -> dict[str, np.ndarray]:
        """With ``record_probe``: per (example, word step t < L), the source position of the
        best-aligned head's largest attention weight (``attn_argmax``, (B, L)) and the probe
        beta over source positions (``ktiw_probe``, (B, L, S), float32); otherwise nothing."""
        if not self.record_probe:
            return {}
        _, alpha = self(batch)  # (B, K, T, S)
        words = torch.arange(alpha.shape[2] - 1, device=alpha.device)
        argmax = alpha[:, :, :-1].argmax(dim=-1)  # (B, K, L)
        best = int((argmax == words).double().mean(dim=(0, 2)).argmax())
        return {"attn_argmax": argmax[:, best].cpu().numpy().astype(np.int16),
                "ktiw_probe": self.ktiw_probe(batch)[:, :-1].float().cpu().numpy()}

    def metrics(self, batch: Batch) -> dict[str, float]:
        """Evaluation metrics of the official code, plus gold attention, entropy and probe accuracy.

        ``loss``: mean token NLL over all T targets; ``loss_words``: over the L word positions
        (EOS step excluded, the convention of the bag-of-words bounds, §9.1); ``acc``:
        teacher-forced token accuracy over all T targets (incl. EOS, as the official code).
        Attention and probe metrics are over the L word steps t < L (the EOS step, trivially
        right, is excluded as in the official multihead.py), so their chance level is 1/S:
        ``attn_acc``: fraction of (example, t) with argmax_l alpha_{t,l} = t, for the
        best-aligned head (per head as ``attn_acc_head<k>`` when there are several);
        ``attn_acc_m1``/``_p1``: argmax at t+1 / t-1 (off-by-one alignments of a
        unidirectional encoder); ``attn_acc_best_offset``: the largest of the three;
        ``gold_attention``: mean alpha_{t,t}; ``attn_entropy`` (nats), ``attn_entropy_ratio``
        (/ log S), ``attn_max``: averaged over heads and all T steps; ``ktiw_acc``: fraction of
        (example, t) with argmax_l beta_{t,l} = t (KTIW probe accuracy).
        """
        logits, alpha = self(batch)  # alpha: (B, K, T, S)
        target = batch["target"]  # (B, T)
        words = torch.arange(alpha.shape[2] - 1)  # word steps t < L
        argmax = alpha[:, :, :-1].argmax(dim=-1)  # (B, K, L)
        per_head = (argmax == words).double().mean(dim=(0, 2))  # (K,)
        best = int(per_head.argmax())
        entropy = attention_entropy(alpha)  # (B, K, T)
        token_nll = F.cross_entropy(logits.transpose(1, 2), target, reduction="none")  # (B, T)
        probe_argmax = self.ktiw_probe(batch)[:, :-1].argmax(dim=-1)  # (B, L)
        on_time = per_head[best].item()
        early = (argmax[:, best] == words + 1).double().mean().item()
        late = (argmax[:, best] == words - 1).double().mean().item()
        out = {
            "loss": token_nll.mean().item(),
            "loss_words": token_nll[:, :-1].mean().item(),
            "acc": (logits.argmax(-1) == target).double().mean().item(),
            "attn_acc": on_time,
            "attn_acc_m1": early,
            "attn_acc_p1": late,
            "attn_acc_best_offset": max(on_time, early, late),
            "gold_attention": alpha[:, :, words, words].double().mean().item(),
            "attn_entropy": entropy.double().mean().item(),
            "attn_entropy_ratio": entropy_ratio(alpha).double().mean().item(),
            "attn_max": alpha.max(-1).values.double().mean().item(),
            "ktiw_acc": (probe_argmax == words).double().mean().item(),
        }
        if self.heads > 1:
            out.update({f"attn_acc_head{k}": v.item() for k, v in enumerate(per_head)})
        return out
