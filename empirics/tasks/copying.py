"""The copying task of Snell et al. (2021) (§2.1), vectorized and always seeded.

Tokens are ``0..V-1``; ``EOS = V``; ``SOS = V + 1``. A source is ``x + [EOS]`` (S = L + 1
positions); the decoder reads ``[SOS] + x`` and predicts ``x + [EOS]`` (T = L + 1 steps), so the
gold source position of target step t is t. Distributions:

- ``subset``: L distinct tokens drawn uniformly without replacement from V, in random order (the
  official ``--no_rep``); V = L gives a uniformly random permutation (the "hard" distribution).
- ``permutation``: the same generator with the constraint V = L, named for readability.
- ``iid``: L tokens i.i.d. uniform over V (repetitions allowed).

Unlike the official code (bug B3), the data stream comes from a seeded ``torch.Generator``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnverify.empirics.config import Batch, TaskConfig, is_int, require


@dataclass(frozen=True)
class CopyTask(TaskConfig):
    kind = "copy"
    code_version = 1
    distribution: str = "subset"
    vocab_size: int = 60
    length: int = 40

    DISTRIBUTIONS = ("subset", "permutation", "iid")

    def validate(self) -> None:
        require(self.distribution in self.DISTRIBUTIONS, "task.distribution",
                f"one of {', '.join(self.DISTRIBUTIONS)}", self.distribution)
        require(is_int(self.vocab_size) and self.vocab_size >= 2, "task.vocab_size (V)",
                "an integer >= 2", self.vocab_size)
        require(is_int(self.length) and self.length >= 1, "task.length (L)",
                "an integer >= 1", self.length)
        if self.distribution == "subset":
            require(self.length <= self.vocab_size, "task.length (L)",
                    f"<= V = {self.vocab_size} for the subset distribution", self.length)
        if self.distribution == "permutation":
            require(self.length == self.vocab_size, "task.length (L)",
                    f"equal to V = {self.vocab_size} for the permutation distribution",
                    self.length)

    @property
    def eos(self) -> int:
        return self.vocab_size

    @property
    def sos(self) -> int:
        return self.vocab_size + 1

    @property
    def n_tokens(self) -> int:
        """Embedding/output size: V words, EOS and SOS."""
        return self.vocab_size + 2

    def sample_words(self, batch_size: int, generator: torch.Generator) -> torch.Tensor:
        """(B, L) int64 words, without EOS/SOS."""
        shape = (batch_size, self.vocab_size)
        if self.distribution == "iid":
            return torch.randint(0, self.vocab_size, (batch_size, self.length),
                                 generator=generator)
        # argsort of i.i.d. uniform keys is a uniformly random permutation of 0..V-1 per row;
        # its first L entries are L distinct tokens in uniformly random order.
        keys = torch.rand(shape, generator=generator)  # (B, V)
        return keys.argsort(dim=1)[:, : self.length]  # (B, L)

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        words = self.sample_words(batch_size, generator)  # (B, L)
        eos = torch.full((batch_size, 1), self.eos, dtype=torch.long)
        sos = torch.full((batch_size, 1), self.sos, dtype=torch.long)
        source = torch.cat([words, eos], dim=1)  # (B, S)
        return {
            "source": source,
            "decoder_input": torch.cat([sos, words], dim=1),  # (B, T)
            "target": source,  # (B, T): the copy of x, then EOS
        }


@dataclass(frozen=True)
class CooccurrenceEstimate:
    """Monte Carlo estimate of ``C[i, o] = E[n_i(x) m_o(y)]`` (y = x) and of kappa, with SEs."""

    matrix: np.ndarray  # (V, V)
    matrix_se: np.ndarray  # (V, V)
    kappa: float
    kappa_se: float
    n_sequences: int


def estimate_cooccurrence(task: CopyTask, n_sequences: int, seed: int,
                          chunk: int = 8192) -> CooccurrenceEstimate:
    """Empirical twin of ``theory.snell.cooccurrence`` / ``theory.snell.kappa``.

    Streams ``n_sequences`` sequences from the task's own generator in chunks (bounded memory).
    kappa is estimated from V fixed pairs (i, i + 1 mod V): per sequence, with counts n (V,),
    ``(1/L) mean_i (n_i^2 - n_i n_{i+1})``, an unbiased estimate with a real sampling error
    (averaging over *all* pairs would make it an identity for distinct tokens). The entries of
    C carry their own SEs.
    """
    if n_sequences < 2:
        raise ValueError(f"n_sequences must be >= 2; got {n_sequences}")
    v, ell = task.vocab_size, task.length
    generator = torch.Generator().manual_seed(seed)
    sum_c = np.zeros((v, v))
    sum_c2 = np.zeros((v, v))
    kappas = []
    done = 0
    while done < n_sequences:
        b = min(chunk, n_sequences - done)
        words = task.sample_words(b, generator)  # (b, L)
        counts = torch.zeros(b, v, dtype=torch.float64).scatter_add_(
            1, words, torch.ones(words.shape, dtype=torch.float64)).numpy()  # (b, V)
        sum_c += counts.T @ counts
        sum_c2 += (counts**2).T @ (counts**2)
        neighbour = np.roll(counts, -1, axis=1)  # n_{i+1 mod V}
        kappas.append((counts**2 - counts * neighbour).mean(axis=1) / ell)
        done += b
    n = float(n_sequences)
    mean = sum_c / n
    var = np.maximum(sum_c2 / n - mean**2, 0.0) * n / (n - 1)
    k = np.concatenate(kappas)
    return CooccurrenceEstimate(
        matrix=mean,
        matrix_se=np.sqrt(var / n),
        kappa=float(k.mean()),
        kappa_se=float(k.std(ddof=1) / np.sqrt(n)),
        n_sequences=n_sequences,
    )
