"""Stage 2 of the approximation of Snell et al. (2021): where attention moves given KTIW
(derived by attnverify from the assumptions (a) and (b) of the authors' blog post, not stated in
the paper; docs/derivations.md#stage-2-attention-logit-velocity).

With the output linear in the context and attention logits a_{t,l} treated as free parameters,
    g_{t,l} = B[x_l, y_t] - sum_o p_t(o) B[x_l, o],
    da_{t,l}/dtau = alpha_{t,l} (g_{t,l} - gbar_t)
where B is the KTIW matrix (B[i, o] = how strongly input word i votes for output word o) and p_t
the model's output distribution. At uniform attention a position gains attention iff the model
already translates its word into the target better than the average source word.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from attnverify.theory.prediction import Prediction

_SOURCE = ("derived by attnverify from assumptions (a) and (b) of Snell et al. 2021 "
           "(arXiv:2103.07601), not stated in the paper: "
           "docs/derivations.md#stage-2-attention-logit-velocity (§4.4, §4.5b)")


def stage2_logit_velocity(ktiw: ArrayLike, source: ArrayLike, target: int) -> Prediction:
    """da_l/dtau for every source position at uniform attention, given the KTIW matrix.

    ``ktiw``: (V_in, V_out) matrix B; ``source``: (L,) input words; ``target``: the gold output
    word y_t. p_t = softmax of the bag-of-words logits (1/L) sum_l B[x_l, :].
    """
    b = np.asarray(ktiw, dtype=float)
    x = np.asarray(source, dtype=int)
    if b.ndim != 2 or x.ndim != 1 or x.size == 0:
        raise ValueError("ktiw must be a (V_in, V_out) matrix and source a non-empty 1-d array")
    if not 0 <= target < b.shape[1] or x.min() < 0 or x.max() >= b.shape[0]:
        raise ValueError("source words and target must index the KTIW matrix")
    rows = b[x]  # (L, V_out): B[x_l, :]
    logits = rows.mean(axis=0)
    p = np.exp(logits - logits.max())
    p /= p.sum()
    g = rows[:, target] - rows @ p  # (L,)
    alpha = 1.0 / x.size
    return Prediction(value=alpha * (g - alpha * g.sum()),
                      equation="da_l/dtau = alpha_l (g_l - sum_l' alpha_l' g_l'), alpha = 1/L",
                      source=_SOURCE, derived=True,
                      assumptions=("output linear in the context", "attention logits are free "
                                   "parameters (assumption (b))", "uniform attention"),
                      params={"target": int(target)})


def stage2_onset_rate(K: float, L: int) -> Prediction:
    """Growth rate K/L of the gold-vs-other attention logit gap when B = K I
    (docs/derivations.md#stage-2-attention-logit-velocity)."""
    if not isinstance(L, int) or L < 1:
        raise ValueError(f"L (sequence length) must be an integer >= 1; got {L!r}")
    if isinstance(K, bool) or not isinstance(K, int | float):
        raise ValueError(f"K (KTIW strength) must be a number; got {K!r}")
    return Prediction(value=K / L, equation="d(a_gold - a_other)/dtau = K / L", source=_SOURCE,
                      derived=True, assumptions=("subset copying", "B = K I (stage-1 solution)",
                                                 "uniform attention"),
                      params={"K": K, "L": L})
