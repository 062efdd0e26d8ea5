"""A transformer with written-down weights that solves the retrieval problem (reconstruction [R]
by attnverify: the paper's construction, if any, is unknown;
docs/derivations.md#written-down-construction).

Layout (R1): statements ``(s_i, s_{i-1})`` ("s_i = s_{i-1}") of K chains, shuffled, occupy
positions ``(2j, 2j + 1)``; the query symbol ``s_D`` of one chain is the last token; the answer
is that chain's root ``s_0``. Along a chain the tokens form the path of the information-flow
game (:mod:`theory.musat.information_flow`): ``rhs_1 - lhs_1 ~ rhs_2 - ... - lhs_D ~ query``.

Residual stream (one-hot blocks): each position keeps the two end *nodes* of the path interval
it knows (symbol and position, split by node type: a value-side token's left neighbour shares
its symbol, a variable-side token's left neighbour is its statement partner), whether its left
end is the chain's root, and the bag S of symbols its interval holds. Each layer has two
hard-attention heads and ReLU MLPs:

- *extend left*: p attends to the q whose interval's right end is the left neighbour of p's
  left end (score 1), or, preferred, to a q anchored at the root whose bag holds p's left-end
  symbol (score 2: near the root no interval ends exactly there); p copies q's left end;
- *extend right*: the mirror image of the first rule;
- p itself scores 1/2: the fallback that leaves an end in place;
- MLPs replace the old ends by the copied ones, union the bags, flag the root in layer 1 (a
  value-side left end that did not move has no left neighbour) and gate the bag by the flag.

Scores are ``beta (x W_Q)(x W_K)^T`` with ``beta`` large (hard attention). Intervals then grow as
in the game, so the query knows its root after ``min_layers_refined(D)`` layers: the answering
end of the path, one layer more than the paper's ``min_layers(D)`` for some D (a gap the claim
``musat.construction_meets_bound`` reports).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RetrievalInstance:
    """Token ids (n,), with statement j at positions (2j, 2j + 1) and the query last; the
    answer; and, for checking, each chain's path of positions (root side first)."""

    tokens: np.ndarray
    answer: int
    query_chain: int
    paths: tuple[tuple[int, ...], ...]


def random_instance(D: int, K: int, vocab: int, rng: np.random.Generator) -> RetrievalInstance:
    """K chains of D links over distinct symbols, statements shuffled, the query last."""
    if vocab < K * (D + 1):
        raise ValueError(f"need vocab >= K (D + 1) = {K * (D + 1)} distinct symbols; "
                         f"got {vocab}")
    symbols = rng.permutation(vocab)[:K * (D + 1)].reshape(K, D + 1)
    statements = [(k, i) for k in range(K) for i in range(1, D + 1)]
    order = rng.permutation(len(statements))
    tokens = np.empty(2 * len(statements) + 1, dtype=np.int64)
    slot = {}
    for j, idx in enumerate(order):
        k, i = statements[idx]
        tokens[2 * j], tokens[2 * j + 1] = symbols[k, i], symbols[k, i - 1]
        slot[(k, i)] = j
    chain = int(rng.integers(K))
    tokens[-1] = symbols[chain, D]
    paths = []
    for k in range(K):
        path = []
        for i in range(1, D + 1):  # rhs_i (value side), then lhs_i (variable side)
            path += [2 * slot[(k, i)] + 1, 2 * slot[(k, i)]]
        if k == chain:
            path.append(len(tokens) - 1)
        paths.append(tuple(path))
    return RetrievalInstance(tokens=tokens, answer=int(symbols[chain, 0]), query_chain=chain,
                             paths=tuple(paths))


BLOCKS = ("sym_val", "sym_var", "pos_val", "pos_var")


class Layout:
    """Channel offsets of the residual stream for vocabulary V and sequence length n."""

    def __init__(self, V: int, n: int) -> None:
        self.V, self.n = V, n
        sizes = {"sym_val": V, "sym_var": V, "pos_val": n, "pos_var": n}
        names: list[tuple[str, int]] = [("sym", V), ("pos", n), ("one", 1)]
        for prefix in ("", "new"):
            for end in ("L", "R"):
                names += [(f"{prefix}{end}{b}", sizes[b]) for b in BLOCKS]
            names += [(f"{prefix}Lroot", 1), (f"{prefix}S", V)]
        names += [("Sroot", V)]
        self.slices: dict[str, slice] = {}
        start = 0
        for name, size in names:
            self.slices[name] = slice(start, start + size)
            start += size
        self.width = start

    def __getitem__(self, name: str) -> slice:
        return self.slices[name]


def embed(tokens: np.ndarray, V: int) -> tuple[np.ndarray, Layout]:
    """Token and positional one-hots; both ends of every interval start at the position itself
    (variable side: even positions; value side: odd positions and the query); S = own symbol."""
    n = len(tokens)
    lay = Layout(V, n)
    x = np.zeros((n, lay.width))
    rows = np.arange(n)
    x[rows, lay["sym"].start + tokens] = 1
    x[rows, lay["pos"].start + rows] = 1
    x[:, lay["one"].start] = 1
    x[rows, lay["S"].start + tokens] = 1
    is_var = (rows % 2 == 0) & (rows < n - 1)
    for end in ("L", "R"):
        for kind, mask in (("val", ~is_var), ("var", is_var)):
            x[rows[mask], lay[f"{end}sym_{kind}"].start + tokens[mask]] = 1
            x[rows[mask], lay[f"{end}pos_{kind}"].start + rows[mask]] = 1
    return x, lay


def partner_matrix(n: int) -> np.ndarray:
    """P with P[a, b] = 1 when positions a and b hold one statement (2j <-> 2j + 1)."""
    P = np.zeros((n, n))
    for a in range(0, n - 1, 2):
        P[a, a + 1] = P[a + 1, a] = 1
    return P


@dataclass(frozen=True)
class Head:
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray  # reads q's copied channels and writes them into p's scratch (W_O folded in)


@dataclass(frozen=True)
class MLP:
    W_1: np.ndarray
    b_1: np.ndarray
    W_2: np.ndarray

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(x @ self.W_1 + self.b_1, 0) @ self.W_2


def _eye(rows: slice) -> np.ndarray:
    return np.eye(rows.stop - rows.start)


def _head(lay: Layout, end: str) -> Head:
    """Extend-left (``end = "L"``) or extend-right (``"R"``); see the module docstring."""
    V, n = lay.V, lay.n
    other = "R" if end == "L" else "L"
    sym_kind, partner_kind = ("val", "var") if end == "L" else ("var", "val")
    cols = {"sym": slice(0, V), "pos": slice(V, V + n), "self": slice(V + n, V + 2 * n),
            "root": slice(V + 2 * n, 2 * V + 2 * n)}
    width = 2 * V + 2 * n
    W_Q = np.zeros((lay.width, width))
    W_K = np.zeros((lay.width, width))
    # neighbour through the symbol: q's other end holds my end's symbol at another position
    W_Q[lay[f"{end}sym_{sym_kind}"], cols["sym"]] = _eye(lay[f"{end}sym_{sym_kind}"])
    W_Q[lay[f"{end}pos_{sym_kind}"], cols["pos"]] = -_eye(lay[f"{end}pos_{sym_kind}"])
    # neighbour through the statement: q's other end is my end's partner position
    W_Q[lay[f"{end}pos_{partner_kind}"], cols["pos"]] = partner_matrix(n)
    W_Q[lay["pos"], cols["self"]] = 0.5 * np.eye(n)
    for blk in ("sym_val", "sym_var"):
        W_K[lay[f"{other}{blk}"], cols["sym"]] = _eye(lay[f"{other}{blk}"])
    for blk in ("pos_val", "pos_var"):
        W_K[lay[f"{other}{blk}"], cols["pos"]] = _eye(lay[f"{other}{blk}"])
    W_K[lay["pos"], cols["self"]] = np.eye(n)
    if end == "L":  # preferred near the root: a root-anchored q whose bag holds my left symbol
        for blk in ("sym_val", "sym_var"):
            W_Q[lay[f"L{blk}"], cols["root"]] = 2 * _eye(lay[f"L{blk}"])
        W_K[lay["Sroot"], cols["root"]] = _eye(lay["Sroot"])
    W_V = np.zeros((lay.width, lay.width))
    copied = [f"{end}{b}" for b in BLOCKS] + (["Lroot"] if end == "L" else [])
    for name in [*copied, "S"]:
        W_V[lay[name], lay[f"new{name}"]] = _eye(lay[name])
    return Head(W_Q, W_K, W_V)


def _mlp(lay: Layout, hidden: list[tuple[dict[str, float], float, dict[str, float]]]) -> MLP:
    """An MLP from unit specs ``(inputs {channel block: weight}, bias, outputs {block: weight})``
    where each unit is replicated elementwise over the (equal-sized) blocks it names."""
    units = []
    for inputs, bias, outputs in hidden:
        size = next(iter(lay[k].stop - lay[k].start for k in inputs))
        units.append((inputs, bias, outputs, size))
    total = sum(u[3] for u in units)
    W_1, b_1 = np.zeros((lay.width, total)), np.zeros(total)
    W_2 = np.zeros((total, lay.width))
    col = 0
    for inputs, bias, outputs, size in units:
        cols = slice(col, col + size)
        for name, weight in inputs.items():
            W_1[lay[name], cols] += weight * np.eye(size)
        b_1[cols] = bias
        for name, weight in outputs.items():
            W_2[cols, lay[name]] += weight * np.eye(size)
        col += size
    return MLP(W_1, b_1, W_2)


def replace_mlp(lay: Layout) -> MLP:
    """Old ends <- copied ends (and the root flag); S <- step(S + copied bags); scratch cleared.
    ``step(z) = relu(c (z - tau)) - relu(c (z - tau) - 1)`` with ``tau = 1/(4n)``, ``c = 4n``
    turns any bag entry of at least 1/(2n) (an average over attended positions) into 1 and the
    softmax's leakage (about e^(-beta/2)) into exactly 0, so it cannot grow over layers."""
    c, tau = 4.0 * lay.n, 1.0 / (4.0 * lay.n)
    units: list[tuple[dict[str, float], float, dict[str, float]]] = []
    for name in [f"{e}{b}" for e in ("L", "R") for b in BLOCKS] + ["Lroot"]:
        units.append(({name: 1.0}, 0.0, {name: -1.0}))
        units.append(({f"new{name}": 1.0}, 0.0, {name: 1.0, f"new{name}": -1.0}))
    units.append(({"S": 1.0}, 0.0, {"S": -1.0}))
    units.append(({"newS": 1.0}, 0.0, {"newS": -1.0}))
    units.append(({"S": c, "newS": c}, -c * tau, {"S": 1.0}))
    units.append(({"S": c, "newS": c}, -c * tau - 1.0, {"S": -1.0}))
    return _mlp(lay, units)


def root_mlp(lay: Layout) -> MLP:
    """Layer 1 only: flag the root, a value-side left end that did not move:
    ``newLroot += sum_i relu(newLpos_val_i + Lpos_val_i - 1)``."""
    n = lay.n
    W_1 = np.zeros((lay.width, n))
    W_1[lay["newLpos_val"], :] = np.eye(n)
    W_1[lay["Lpos_val"], :] += np.eye(n)
    W_2 = np.zeros((n, lay.width))
    W_2[:, lay["newLroot"].start] = 1.0
    return MLP(W_1, -np.ones(n), W_2)


def gate_mlp(lay: Layout) -> MLP:
    """``Sroot <- relu(S + Lroot - 1)``: the bag of root-anchored positions, zero elsewhere."""
    V = lay.V
    W_1 = np.zeros((lay.width, 2 * V))
    W_1[lay["S"], :V] = np.eye(V)
    W_1[lay["Lroot"].start, :V] = 1.0
    W_1[lay["Sroot"], V:] = np.eye(V)
    b_1 = np.concatenate([-np.ones(V), np.zeros(V)])
    W_2 = np.zeros((2 * V, lay.width))
    W_2[:V, lay["Sroot"]] = np.eye(V)
    W_2[V:, lay["Sroot"]] = -np.eye(V)
    return MLP(W_1, b_1, W_2)


def forward(tokens: np.ndarray, V: int, layers: int, beta: float = 40.0
            ) -> tuple[np.ndarray, Layout, list[np.ndarray]]:
    """Run the construction; returns the residual stream, its layout and the attention
    patterns, one (head, query_pos, key_pos) array per layer."""
    x, lay = embed(tokens, V)
    head_l, head_r = _head(lay, "L"), _head(lay, "R")
    replace, root, gate = replace_mlp(lay), root_mlp(lay), gate_mlp(lay)
    patterns = []
    for layer in range(layers):
        update = np.zeros_like(x)
        pattern = []
        for h in (head_l, head_r):
            scores = beta * (x @ h.W_Q) @ (x @ h.W_K).T                          # (n, n)
            alpha = np.exp(scores - scores.max(1, keepdims=True))
            alpha /= alpha.sum(1, keepdims=True)
            update += alpha @ (x @ h.W_V)
            pattern.append(alpha)
        x = x + update
        if layer == 0:
            x = x + root(x)
        x = x + replace(x)
        x = x + gate(x)
        patterns.append(np.stack(pattern))
    return x, lay, patterns


def answer(x: np.ndarray, lay: Layout) -> int:
    """The symbol at the left end of the query's interval (the root once it is covered)."""
    q = x[-1]
    return int(np.argmax(q[lay["Lsym_val"]] + q[lay["Lsym_var"]]))


def left_end(x: np.ndarray, lay: Layout, position: int) -> int:
    """The position of the left end of ``position``'s interval."""
    return int(np.argmax(x[position, lay["Lpos_val"]] + x[position, lay["Lpos_var"]]))
