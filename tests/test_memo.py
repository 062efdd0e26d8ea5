"""The claims' computation cache: computes once, reads back, recomputes a damaged entry, keys on
the declared version of the code that computes (not its source)."""

from __future__ import annotations

import numpy as np

from attnverify.compare.memo import memo, rooted


def test_memo_computes_once_and_survives_damage(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.arange(3.0)}

    with rooted(tmp_path):
        first = memo("ns", {"a": 1}, {"claim": 1}, compute)
        again = memo("ns", {"a": 1}, {"claim": 1}, compute)
        other = memo("ns", {"a": 2}, {"claim": 1}, compute)
    assert len(calls) == 2
    np.testing.assert_array_equal(first["x"], again["x"])
    np.testing.assert_array_equal(other["x"], first["x"])
    entry = next((tmp_path / "memo" / "ns").glob("*.npz"))
    entry.write_bytes(b"not an npz")
    with rooted(tmp_path):
        memo("ns", {"a": 1}, {"claim": 1}, compute)
        memo("ns", {"a": 2}, {"claim": 1}, compute)
    assert len(calls) == 3  # only the damaged entry was recomputed
    assert not list((tmp_path / "memo" / "ns").glob("*.tmp"))


def test_without_a_root_nothing_is_cached(tmp_path):
    calls = []
    for _ in range(2):
        memo("ns", {"a": 1}, {"claim": 1}, lambda: calls.append(1) or {"x": np.zeros(1)})
    assert len(calls) == 2 and not (tmp_path / "memo").exists()


def test_rooted_nests_and_restores_and_other_contexts_do_not_see_it(tmp_path):
    """``rooted`` sets the root for its block only (a nested ``rooted(None)`` switches caching
    off and back); a context copied before it was set (another evaluation) stays uncached."""
    import contextvars

    calls = []

    def compute():
        calls.append(1)
        return {"x": np.zeros(1)}

    outside = contextvars.copy_context()
    with rooted(tmp_path):
        memo("ns", {"a": 1}, {"claim": 1}, compute)
        with rooted(None):
            memo("ns", {"a": 1}, {"claim": 1}, compute)  # off: computed again
        memo("ns", {"a": 1}, {"claim": 1}, compute)  # restored: read back
        outside.run(memo, "ns", {"a": 1}, {"claim": 1}, compute)  # no root there
    memo("ns", {"a": 1}, {"claim": 1}, compute)  # after the block: no root
    assert len(calls) == 4


def test_a_bumped_version_recomputes_and_the_old_entry_is_not_read(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.full(2, float(len(calls)))}

    with rooted(tmp_path):
        v1 = memo("ns", {"a": 1}, {"claim": 1}, compute)
        v2 = memo("ns", {"a": 1}, {"claim": 2}, compute)
        again = memo("ns", {"a": 1}, {"claim": 1}, compute)
    assert len(calls) == 2
    assert v1["x"][0] == 1 and v2["x"][0] == 2 and again["x"][0] == 1


def test_a_flipped_or_truncated_entry_is_moved_aside_and_recomputed(tmp_path):
    """A byte flipped inside an array (the zip member's CRC) or a truncated file: recomputed on
    the next call, the damaged file kept in ``corrupt/``, never read again."""
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.arange(1000.0)}

    for damage in ("flip", "truncate"):
        with rooted(tmp_path / damage):
            memo("ns", {"a": 1}, {"claim": 1}, compute)
        entry = next((tmp_path / damage / "memo" / "ns").glob("*.npz"))
        raw = bytearray(entry.read_bytes())
        if damage == "flip":
            raw[len(raw) // 2] ^= 0xFF
        else:
            del raw[len(raw) // 2:]
        entry.write_bytes(bytes(raw))
        with rooted(tmp_path / damage):
            again = memo("ns", {"a": 1}, {"claim": 1}, compute)
            np.testing.assert_array_equal(again["x"], np.arange(1000.0))
            memo("ns", {"a": 1}, {"claim": 1}, compute)  # the rewritten entry is read back
        (aside,) = (tmp_path / damage / "corrupt").iterdir()
        assert aside.name.startswith("memo.ns.") and aside.read_bytes() == bytes(raw)
    assert len(calls) == 4  # per damage: the first computation and one recomputation
