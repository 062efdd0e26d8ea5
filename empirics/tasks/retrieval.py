"""The retrieval problem of Mușat (2024) in its minimal formulation: K chains of D links,
statements shuffled, the query last. The minimal formulation is a reconstruction [R]; the
default is R1, the smallest formulation consistent with what is known of the paper, and the
alternatives are options.

R1 (default): vocabulary of ``vocab`` abstract symbols; each chain ``s_0 -> s_1 -> ... -> s_D``
over distinct symbols; link i is the 2-token statement ``(s_i, s_{i-1})`` ("s_i = s_{i-1}");
all K D statements are shuffled and concatenated, then the query token ``s_D`` of one chain is
appended (optionally after a query-marker token). The answer is the chain's root ``s_0``.

- ``statement_order="value_first"`` writes ``(s_{i-1}, s_i)`` (R2);
- ``distractors`` adds statements between fresh symbols that belong to no chain (R4-like: more
  statements, so that reading fixed slots by absolute position is no shortcut);
- supervision: with the implicit curriculum (``ic=True``) every position's target is the root
  its symbol resolves to (depth-i targets at both tokens of link i, the query at depth D), so
  each example holds sub-problems of every depth; otherwise only the query is supervised.
  Distractor tokens are never supervised. Per-position depths are returned for evaluation.

- ``arrangement="in_order"`` (R5, literal concatenation): each chain's statements appear in
  chain order (link 1 before link 2 ...), at positions randomised by the other chains and the
  distractors interleaved with them; the default ``"shuffled"`` is R1's;
- ``ic_scope="prefix"`` (R3's targets, for a causal model): a position keeps its IC target only
  when it is computable from the prefix, i.e. every statement of the chain from its symbol down
  to the root ends at or before it (depth-0 symbols, the roots, keep theirs); the default
  ``"all"`` supervises every chain position. The query is always supervised.

- ``train_examples=N`` trains on a fixed set of N examples (the paper's 2^18 or 2^20 randomly
  generated examples), drawn once from ``dataset_seed`` and shared by every
  run with that seed; batches are drawn from it uniformly with replacement from the run's data
  stream. The default 0 draws fresh examples for every batch. Evaluation always uses fresh
  examples.

R3's causal attention is a model option (``RetrievalTransformerConfig.causal``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

from attnverify.empirics.config import Batch, TaskConfig, is_int, require

STATEMENT_ORDERS = ("lhs_first", "value_first")
ARRANGEMENTS = ("shuffled", "in_order")
IC_SCOPES = ("all", "prefix")
IGNORE = -100
"""Target of unsupervised positions (``F.cross_entropy``'s ignore index)."""


@dataclass(frozen=True)
class RetrievalTask(TaskConfig):
    """``musat_retrieval``: chains of D links, K chains, with or without the IC targets."""

    kind = "musat_retrieval"
    code_version = 1
    D: int = 2
    K: int = 4
    vocab: int = 64
    ic: bool = True
    statement_order: str = "lhs_first"
    distractors: int = 0
    query_marker: bool = False
    arrangement: str = "shuffled"
    ic_scope: str = "all"
    train_examples: int = 0
    dataset_seed: int = 0

    def validate(self) -> None:
        for name, low in (("D", 1), ("K", 2), ("vocab", 2)):
            value = getattr(self, name)
            require(is_int(value) and value >= low, f"task.{name}", f"an integer >= {low}",
                    value)
        require(is_int(self.distractors) and self.distractors >= 0, "task.distractors",
                "an integer >= 0", self.distractors)
        needed = self.K * (self.D + 1) + 2 * self.distractors
        require(self.vocab >= needed, "task.vocab",
                f">= K (D + 1) + 2 distractors = {needed} distinct symbols", self.vocab)
        require(self.statement_order in STATEMENT_ORDERS, "task.statement_order",
                f"one of {', '.join(STATEMENT_ORDERS)}", self.statement_order)
        require(isinstance(self.ic, bool), "task.ic", "true or false", self.ic)
        require(self.arrangement in ARRANGEMENTS, "task.arrangement",
                f"one of {', '.join(ARRANGEMENTS)}", self.arrangement)
        require(self.ic_scope in IC_SCOPES, "task.ic_scope", f"one of {', '.join(IC_SCOPES)}",
                self.ic_scope)
        require(isinstance(self.query_marker, bool), "task.query_marker", "true or false",
                self.query_marker)
        require(is_int(self.train_examples) and self.train_examples >= 0, "task.train_examples",
                "an integer >= 0 (0: fresh examples for every batch)", self.train_examples)
        require(is_int(self.dataset_seed) and 0 <= self.dataset_seed < 2**32,
                "task.dataset_seed", "an integer in [0, 2^32)", self.dataset_seed)

    @property
    def T(self) -> int:
        """Sequence length: 2 (K D + distractors) statement tokens, the marker, the query."""
        return 2 * (self.K * self.D + self.distractors) + 1 + int(self.query_marker)

    def vocab_size(self) -> int:
        return self.vocab + int(self.query_marker)

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        """A training batch: fresh examples, or ``batch_size`` draws from the fixed set."""
        if not self.train_examples:
            return self.fresh(batch_size, generator)
        pool = _training_set(self)
        rows = torch.randint(self.train_examples, (batch_size,), generator=generator)
        return {name: values[rows] for name, values in pool.items()}

    def sample_eval(self, batch_size: int, generator: torch.Generator) -> Batch:
        """Fresh examples, also when training uses a fixed set."""
        return self.fresh(batch_size, generator)

    def fresh(self, batch_size: int, generator: torch.Generator) -> Batch:
        """``batch_size`` new examples from the generator."""
        B, K, D, n_dis = batch_size, self.K, self.D, self.distractors
        n_sym = K * (D + 1) + 2 * n_dis
        symbols = torch.argsort(torch.rand(B, self.vocab, generator=generator), dim=1)[:, :n_sym]
        chains = symbols[:, :K * (D + 1)].reshape(B, K, D + 1)                   # (B, K, D+1)
        var = chains[:, :, 1:].reshape(B, K * D)                                 # s_i
        val = chains[:, :, :-1].reshape(B, K * D)                                # s_{i-1}
        depth_var = torch.arange(1, D + 1).repeat(K).expand(B, -1)               # hops of s_i
        root = chains[:, :, :1].expand(B, K, D).reshape(B, K * D)
        extra = symbols[:, K * (D + 1):].reshape(B, n_dis, 2)
        first = torch.cat([var, extra[:, :, 0]], 1)                              # (B, S)
        second = torch.cat([val, extra[:, :, 1]], 1)
        t_first = torch.cat([root, torch.full((B, n_dis), IGNORE)], 1)
        t_second = t_first.clone()
        d_first = torch.cat([depth_var, torch.full((B, n_dis), -1)], 1)
        d_second = torch.cat([depth_var - 1, torch.full((B, n_dis), -1)], 1)
        if self.statement_order == "value_first":
            first, second = second, first
            d_first, d_second = d_second, d_first
        order = torch.argsort(torch.rand(B, first.shape[1], generator=generator), dim=1)
        if self.arrangement == "in_order":
            order = _chains_in_order(order, K, D)

        def interleave(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            a, b = a.gather(1, order), b.gather(1, order)
            return torch.stack([a, b], dim=2).reshape(B, -1)                     # (B, 2S)

        tokens = interleave(first, second)
        targets = interleave(t_first, t_second)
        depth = interleave(d_first, d_second)
        chain = torch.randint(K, (B,), generator=generator)
        rows = torch.arange(B)
        query = chains[rows, chain, D]
        answer = chains[rows, chain, 0]
        parts_t, parts_y, parts_d = [tokens], [targets], [depth]
        if self.query_marker:
            parts_t.append(torch.full((B, 1), self.vocab))
            parts_y.append(torch.full((B, 1), IGNORE))
            parts_d.append(torch.full((B, 1), -1))
        parts_t.append(query[:, None])
        parts_y.append(answer[:, None])
        parts_d.append(torch.full((B, 1), D))
        tokens = torch.cat(parts_t, 1)
        all_targets = torch.cat(parts_y, 1)
        depth = torch.cat(parts_d, 1)
        if self.ic_scope == "prefix":  # what a causal model cannot compute is neither
            # supervised nor evaluated (its depth becomes -1, like a distractor's)
            computable = _computable_from_prefix(tokens[:, :2 * first.shape[1]], depth,
                                                 self.statement_order)
            all_targets = torch.where(computable, all_targets, IGNORE)
            depth = torch.where(computable, depth, -1)
        supervised = all_targets if self.ic else torch.full_like(all_targets, IGNORE)
        supervised[:, -1] = answer
        return {"tokens": tokens, "targets": supervised, "eval_targets": all_targets,
                "depth": depth}


@lru_cache(maxsize=4)
def _training_set(task: RetrievalTask) -> Batch:
    """The fixed training set of ``task.train_examples`` examples from ``task.dataset_seed``,
    built once per process."""
    return task.fresh(task.train_examples, torch.Generator().manual_seed(task.dataset_seed))


def _chains_in_order(order: torch.Tensor, K: int, D: int) -> torch.Tensor:
    """R5: keep the slots each chain's statements occupy in ``order`` (B, S), a permutation of
    statement indices (chain c, link i is index c D + i - 1; distractors come after K D), and
    give them to the chain's links in increasing order."""
    is_chain = order < K * D
    chain = torch.where(is_chain, order // D, K)                      # distractors: class K
    onehot = torch.nn.functional.one_hot(chain, K + 1)                 # (B, S, K + 1)
    rank = (onehot.cumsum(1) * onehot).sum(-1) - 1                    # earlier slots of its chain
    return torch.where(is_chain, chain * D + rank, order)


def _computable_from_prefix(statements: torch.Tensor, depth: torch.Tensor,
                            statement_order: str) -> torch.Tensor:
    """(B, T) mask of positions whose IC target a causal model can compute (R3): the root of
    the position's symbol is reachable through statements that end at or before it. Depth-0
    positions (roots) are computable; the query and the marker get True (the query is always
    supervised; the marker never is)."""
    B, T = depth.shape
    n = statements.shape[1]
    lhs = statements[:, 0::2] if statement_order == "lhs_first" else statements[:, 1::2]
    rhs = statements[:, 1::2] if statement_order == "lhs_first" else statements[:, 0::2]
    end = torch.arange(1, n, 2).expand(B, -1)                         # last position of each
    # ready[b, j]: the step at which statement j's lhs becomes resolvable (its own end, or
    # later if the statement defining its rhs ends later); iterate over the chain depth
    defines = lhs[:, None, :] == rhs[:, :, None]          # (B, j, j'): statement j' defines rhs_j
    ready = end.clone()
    for _ in range(int(depth.max()) + 1):
        parent = torch.where(defines, ready[:, None, :], -1).amax(-1)   # -1: rhs_j is a root
        ready = torch.maximum(end, parent)
    # a statement position resolves its own symbol: the lhs needs its statement ready, the rhs
    # needs the statement that defines it (or nothing when it is a root)
    position = torch.arange(n).expand(B, -1)
    at_lhs = position % 2 == (0 if statement_order == "lhs_first" else 1)
    stmt_ready = ready.repeat_interleave(2, dim=1)                    # (B, n)
    rhs_symbol = rhs.repeat_interleave(2, dim=1)
    defines_rhs = lhs[:, None, :] == rhs_symbol[:, :, None]           # (B, n, j')
    rhs_ready = torch.where(defines_rhs, ready[:, None, :], -1).amax(-1)
    needed = torch.where(at_lhs, stmt_ready, rhs_ready)
    ok = torch.ones(B, T, dtype=torch.bool)
    ok[:, :n] = (needed <= position) | (depth[:, :n] == 0)
    return ok
