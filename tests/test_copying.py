"""The copying generators (§2.1): invariants for any (distribution, V, L)."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from attnverify.empirics import CopyTask


@st.composite
def tasks(draw):
    distribution = draw(st.sampled_from(["subset", "permutation", "iid"]))
    vocab = draw(st.integers(2, 50))
    if distribution == "permutation":
        return CopyTask(distribution, vocab, vocab)
    upper = vocab if distribution == "subset" else 60
    return CopyTask(distribution, vocab, draw(st.integers(1, upper)))


@given(tasks(), st.integers(1, 40), st.integers(0, 2**31))
def test_batch_layout_and_token_ranges(task, batch, seed):
    b = task.sample(batch, torch.Generator().manual_seed(seed))
    words = b["source"][:, :-1]
    assert b["source"].shape == (batch, task.length + 1)
    assert torch.all(b["source"][:, -1] == task.eos)
    assert torch.all(b["decoder_input"][:, 0] == task.sos)
    assert torch.equal(b["decoder_input"][:, 1:], words)
    assert torch.equal(b["target"], b["source"])
    assert words.min() >= 0 and words.max() < task.vocab_size


@given(tasks(), st.integers(0, 2**31))
def test_distinctness(task, seed):
    words = task.sample_words(64, torch.Generator().manual_seed(seed))
    distinct = torch.tensor([len(set(row.tolist())) for row in words])
    if task.distribution == "iid":
        return
    assert torch.all(distinct == task.length)
    if task.distribution == "permutation":
        assert torch.equal(words.sort(dim=1).values,
                           torch.arange(task.vocab_size).expand_as(words))


@given(tasks(), st.integers(0, 2**31))
def test_same_seed_same_stream(task, seed):
    a = task.sample(16, torch.Generator().manual_seed(seed))
    b = task.sample(16, torch.Generator().manual_seed(seed))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_positions_are_uniform():
    """Every token is equally likely at every position (chi-square, 4000 sequences)."""
    from scipy import stats

    task = CopyTask("subset", 12, 6)
    words = task.sample_words(4000, torch.Generator().manual_seed(0))
    counts = torch.stack([torch.bincount(words[:, p], minlength=12) for p in range(6)]).numpy()
    p_value = stats.chisquare(counts.ravel()).pvalue
    assert p_value > 1e-4
