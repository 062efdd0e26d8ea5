"""Per-query statistics of attention patterns [batch, head, query_pos, key_pos], shared by the
models' metrics and the claims that read attention snapshots (one implementation of each).

Numerics: a change here bumps ``Seq2SeqConfig.code_version``, ``AttentionLMConfig.code_version``
and ``MONTE_CARLO_VERSION`` (:mod:`attnverify.empirics.versions`: shared helpers have no version
of their own)."""

from __future__ import annotations

import math

import torch


def attention_entropy(alpha: torch.Tensor) -> torch.Tensor:
    """Entropy in nats of each query's distribution over keys: (..., S) -> (...)."""
    return -(alpha * torch.log(alpha.clamp_min(1e-30))).sum(-1)


def entropy_ratio(alpha: torch.Tensor) -> torch.Tensor:
    """Entropy / log S per query: 1 for uniform attention, 0 for one-hot."""
    return attention_entropy(alpha) / math.log(alpha.shape[-1])


def max_weight_ratio(alpha: torch.Tensor) -> torch.Tensor:
    """S * max_l alpha_l per query: 1 for uniform attention, S for one-hot."""
    return alpha.shape[-1] * alpha.max(dim=-1).values
