"""Fixed sinusoidal position table shared by the models that use one (the Bao language model,
as in fairseq, and the Mușat retrieval transformer's ``pos_encoding="sinusoidal"`` option).

Numerics: a change here bumps ``AttentionLMConfig.code_version`` and
``RetrievalTransformerConfig.code_version`` (shared helpers have no version of their own)."""

from __future__ import annotations

import math

import torch
from torch.nn import functional as F


def sinusoidal_positions(n: int, d: int) -> torch.Tensor:
    """fairseq's sinusoidal table (sin in the first half of the channels, cos in the second)."""
    half = d // 2
    freq = torch.exp(torch.arange(half) * -(math.log(10000.0) / max(half - 1, 1)))
    angles = torch.arange(n)[:, None] * freq[None, :]                    # (n, half)
    table = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)      # (n, 2 half)
    return F.pad(table, (0, d - 2 * half))                                # (n, d)
