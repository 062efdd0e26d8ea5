"""The claims' computation cache: computes once, reads back, recomputes a damaged entry, keys on
the code that computes."""

from __future__ import annotations

import numpy as np

from attnverify.compare import memo as memo_module
from attnverify.compare.memo import memo, rooted


def test_memo_computes_once_and_survives_damage(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.arange(3.0)}

    with rooted(tmp_path):
        first = memo("ns", {"a": 1}, (memo_module,), compute)
        again = memo("ns", {"a": 1}, (memo_module,), compute)
        other = memo("ns", {"a": 2}, (memo_module,), compute)
    assert len(calls) == 2
    np.testing.assert_array_equal(first["x"], again["x"])
    np.testing.assert_array_equal(other["x"], first["x"])
    entry = next((tmp_path / "memo" / "ns").glob("*.npz"))
    entry.write_bytes(b"not an npz")
    with rooted(tmp_path):
        memo("ns", {"a": 1}, (memo_module,), compute)
        memo("ns", {"a": 2}, (memo_module,), compute)
    assert len(calls) == 3  # only the damaged entry was recomputed
    assert not list((tmp_path / "memo" / "ns").glob("*.tmp"))


def test_without_a_root_nothing_is_cached(tmp_path):
    calls = []
    for _ in range(2):
        memo("ns", {"a": 1}, (memo_module,), lambda: calls.append(1) or {"x": np.zeros(1)})
    assert len(calls) == 2 and not (tmp_path / "memo").exists()
