"""The one-layer attention LM of Bao et al. (fairseq's ``transformer_lm``), its random-walk task,
the WikiText-format loader (on a sample the test writes) and LocAteR against
theory.bao.locater."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnverify import theory
from attnverify.empirics import (
    AttentionLMConfig,
    RandomWalkLMTask,
    RunSpec,
    TextCorpusTask,
    build_model,
    train,
)
from attnverify.empirics.models.attention_lm import locater_penalty


def lm_spec(task=None, steps=60, **model) -> RunSpec:
    task = task or RandomWalkLMTask(vocab=16, T=12)
    return RunSpec(task=task, model=AttentionLMConfig(d=16, ffn=16, dropout=0.0, **model),
                   steps=steps, batch_size=16, eval_every=20, eval_size=32, seed=0)


def test_random_walk_task_steps_are_drift_plus_noise():
    task = RandomWalkLMTask(vocab=50, T=40, max_drift=3, noise=0.2)
    tokens = task.sample(500, torch.Generator().manual_seed(0))["tokens"]
    steps = torch.diff(tokens, dim=1) % 50                                      # (B, T-1)
    drift = torch.mode(steps, dim=1).values[:, None]
    assert set(drift.unique().tolist()) <= {1, 2, 3}
    jitter = (steps - drift + 25) % 50 - 25
    assert set(jitter.unique().tolist()) <= {-1, 0, 1}
    # noise rate: binomial SE over 500 * 39 steps is 0.003; 5 SE
    assert (jitter != 0).double().mean().item() == pytest.approx(0.2, abs=0.015)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_attention_is_causal_and_normalised(norm):
    spec = RunSpec(task=RandomWalkLMTask(vocab=16, T=12),
                   model=AttentionLMConfig(d=16, ffn=16, dropout=0.0, norm=norm), seed=0)
    model = build_model(spec).eval()
    tokens = spec.task.sample(4, torch.Generator().manual_seed(1))["tokens"]
    logits, internals = model(tokens)
    alpha = internals["alpha"]                                                   # (B, 1, T, T)
    assert alpha.shape == (4, 1, 12, 12)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(4, 1, 12))
    assert torch.all(alpha.triu(1) == 0)
    changed = tokens.clone()
    changed[:, 8:] = (changed[:, 8:] + 1) % 16
    torch.testing.assert_close(model(changed)[0][:, :8], logits[:, :8])


def test_training_learns_and_locater_shrinks_the_spectrum():
    base = train(lm_spec(steps=150))
    reg = train(lm_spec(steps=150, locater=1.0))
    loss = base.metric("loss")
    assert loss[-1] < loss[0] - 0.5  # from about log 16 = 2.77
    assert reg.metric("eig_var")[-1] < 0.5 * base.metric("eig_var")[-1]
    w = reg.final["w_qk"]
    eig = np.sort_complex(reg.final["eig_real"] + 1j * reg.final["eig_imag"])
    np.testing.assert_allclose(eig, np.sort_complex(np.linalg.eigvals(w)), atol=1e-8)
    assert reg.metric("eig_mean")[-1] == pytest.approx(np.trace(w) / 16, abs=1e-6)


@pytest.mark.parametrize("kind", ["A", "B", "C"])
def test_torch_locater_matches_theory_value_and_gradient(kind):
    rng = np.random.default_rng(0)
    w_np = rng.normal(size=(6, 6)) + 0.3 * np.eye(6)
    w = torch.tensor(w_np, requires_grad=True)
    m0 = torch.tensor(0.2, dtype=torch.float64)
    value = locater_penalty(w, kind, m0)
    value.backward()
    args = (0.2,) if kind == "B" else ()
    expected, grad = theory.bao.locater(kind)(w_np, *args)
    assert value.item() == pytest.approx(expected, rel=1e-9)
    np.testing.assert_allclose(w.grad.numpy(), grad, rtol=1e-7, atol=1e-10)


def test_bad_model_config_names_the_field():
    with pytest.raises(ValueError, match=r"model\.norm must be one of post, pre"):
        AttentionLMConfig(norm="sandwich")
    with pytest.raises(ValueError, match=r"model\.locater must be a finite number >= 0"):
        AttentionLMConfig(locater=-1.0)
    with pytest.raises(ValueError, match=r"task\.max_drift"):
        RandomWalkLMTask(vocab=4, max_drift=4)


def write_corpus(root, train_lines, valid_lines):
    root.mkdir(parents=True, exist_ok=True)
    (root / "wiki.train.tokens").write_text("\n".join(train_lines) + "\n")
    (root / "wiki.valid.tokens").write_text("\n".join(valid_lines) + "\n")
    return root


def test_wikitext_loader_vocabulary_windows_and_validation_split(tmp_path):
    train_lines = [" = Title = ", "", " the cat sat on the mat . ", " the <unk> ran . "] * 5
    root = write_corpus(tmp_path / "wt", train_lines, [" the dog sat . "] * 4)
    task = TextCorpusTask.from_directory(root, T=6)
    from attnverify.empirics.tasks.text_corpus import load_corpus

    vocab, ids = load_corpus(task.directory, task.fingerprint)
    assert vocab[0] in {"the", "<eos>"} and "<unk>" in vocab and "dog" not in vocab
    assert task.vocab_size() == len(vocab)
    unk = vocab.index("<unk>")
    assert (ids["valid"] == unk).sum().item() == 4  # "dog" four times
    train_batch = task.sample(8, torch.Generator().manual_seed(0))["tokens"]
    valid_batch = task.sample_eval(8, torch.Generator().manual_seed(0))["tokens"]
    assert train_batch.shape == valid_batch.shape == (8, 6)
    assert set(valid_batch.unique().tolist()) <= set(ids["valid"].tolist())
    result = train(lm_spec(task=task, steps=5))
    assert result.status == "ok" and np.isfinite(result.metric("loss")).all()


def test_changed_corpus_is_detected(tmp_path):
    root = write_corpus(tmp_path / "wt", [" a b c d e f g . "] * 5, [" a b c d e f . "] * 5)
    task = TextCorpusTask.from_directory(root, T=4)
    (root / "wiki.train.tokens").write_text(" z z z z z z z z . \n" * 5)
    from attnverify.empirics.tasks.text_corpus import load_corpus

    load_corpus.cache_clear()
    with pytest.raises(ValueError, match="changed"):
        task.sample(2, torch.Generator())
    with pytest.raises(FileNotFoundError, match=r"wiki\.valid\.tokens"):
        TextCorpusTask.from_directory(write_corpus(tmp_path / "x", ["a"], ["a"]).parent / "none")


def test_a_corpus_run_keeps_its_key_wherever_the_corpus_lives(tmp_path):
    """The run key names the corpus by its content (the fingerprint), not its directory: the
    same files elsewhere find the stored run, which stays current; other content is another
    run. The spec still carries its directory, which is where a run reads the data."""
    from attnverify.empirics import RunStore

    lines = [" the cat sat on the mat . "] * 5, [" the cat sat . "] * 4
    here = TextCorpusTask.from_directory(write_corpus(tmp_path / "here", *lines), T=4)
    there = TextCorpusTask.from_directory(write_corpus(tmp_path / "there", *lines), T=4)
    other = TextCorpusTask.from_directory(
        write_corpus(tmp_path / "other", [" a dog ran on the mat . "] * 5, lines[1]), T=4)
    assert here.directory != there.directory and here.fingerprint == there.fingerprint
    spec_here, spec_there = lm_spec(task=here, steps=2), lm_spec(task=there, steps=2)
    assert spec_here.key() == spec_there.key() != lm_spec(task=other, steps=2).key()
    assert spec_there.to_dict()["task"]["directory"] == there.directory
    store = RunStore(tmp_path / "store")
    store.put(train(spec_here))
    assert spec_there.key() in set(store.keys()) and store.is_current(spec_there.key())


def test_dropout_runs_do_not_depend_on_the_global_generator():
    """A run with dropout gives the same numbers whatever the global RNG state before it."""
    spec = RunSpec(task=RandomWalkLMTask(vocab=16, T=12),
                   model=AttentionLMConfig(d=16, ffn=16, dropout=0.3), steps=10, batch_size=8,
                   eval_every=5, eval_size=8, seed=1)
    torch.manual_seed(123)
    first = train(spec)
    torch.rand(1000)
    second = train(spec)
    np.testing.assert_array_equal(first.train_loss, second.train_loss)
