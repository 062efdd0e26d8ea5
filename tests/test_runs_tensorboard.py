"""``runs export --format tensorboard``: each stored run becomes one TensorBoard run whose
scalars are the run's metrics at its evaluated steps and its training loss at every trained step,
read back with TensorBoard's own event reader; a key named twice is written once, a damaged
entry is left out; the output folder is refused when not new or empty and is written whole or
not at all; a missing tensorboard package is one line."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from attnverify.compare.cli import main
from attnverify.compare.registry import select
from attnverify.empirics import RunResult, RunStore

pytest.importorskip("tensorboard")


@pytest.fixture
def stored(tmp_path):
    """Two runs of a smoke claim with known curves."""
    store = RunStore(tmp_path / "cache")
    claim = select(claim_id="snell.permutation_is_hard")[0]
    results = []
    for index, spec in enumerate(claim.checked_specs(claim.params("smoke"))[:2]):
        steps = np.array(spec.eval_steps())
        loss = np.arange(spec.steps) + 0.5 + index
        result = RunResult(spec=spec, status="ok", eval_steps=steps,
                           metrics={"acc": np.linspace(0.1, 0.2, steps.size)},
                           train_loss=loss,
                           attention={s: np.zeros((1, 1, 2, 2)) for s in spec.attention_snapshots})
        store.put(result)
        results.append(result)
    return store, results


def _scalars(folder):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)]
            for tag in events.Tags()["scalars"]}, events.Tags()["tensors"]


def test_each_run_is_a_tensorboard_run_with_its_curves(stored, tmp_path, capsys):
    from attnverify.compare.runs.tensorboard import run_folder

    store, results = stored
    out = tmp_path / "tb"
    assert main(["runs", "export", "--format", "tensorboard", "--out", str(out), "--cache",
                 str(store.root)]) == 0
    assert "wrote 2 runs" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == sorted(run_folder(r) for r in results)
    assert not list(tmp_path.glob(".tb.*"))  # the scratch folder is gone
    for result in results:
        scalars, texts = _scalars(out / run_folder(result))
        acc = scalars["metric/acc"]
        assert [s for s, _ in acc] == result.eval_steps.tolist()
        np.testing.assert_allclose([v for _, v in acc], result.metrics["acc"], rtol=1e-6)
        loss = scalars["train/loss"]
        assert [s for s, _ in loss] == list(range(1, result.train_loss.size + 1))
        np.testing.assert_allclose([v for _, v in loss], result.train_loss, rtol=1e-6)
        assert any("spec" in tag for tag in texts)


def test_only_the_named_runs_and_only_into_a_new_folder(stored, tmp_path, capsys):
    from attnverify.compare.runs.tensorboard import run_folder

    store, results = stored
    out = tmp_path / "tb"
    out.mkdir()  # empty: accepted
    assert main(["runs", "export", results[1].key, results[1].key, "--format", "tensorboard",
                 "--out", str(out), "--cache", str(store.root)]) == 0
    assert [p.name for p in out.iterdir()] == [run_folder(results[1])]
    assert len(list((out / run_folder(results[1])).iterdir())) == 1  # one events file
    assert "wrote 1 run to" in capsys.readouterr().err
    capsys.readouterr()
    assert main(["runs", "export", "--format", "tensorboard", "--out", str(out), "--cache",
                 str(store.root)]) == 2  # not empty now
    assert "goes into a new or empty directory" in capsys.readouterr().err
    assert main(["runs", "export", "--format", "tensorboard", "--cache",
                 str(store.root)]) == 2
    assert "needs --out DIR" in capsys.readouterr().err
    assert main(["runs", "export", "0" * 24, "--format", "tensorboard", "--out",
                 str(tmp_path / "other"), "--cache", str(store.root)]) == 2
    assert "no run" in capsys.readouterr().err and not (tmp_path / "other").exists()
    (tmp_path / "file").write_text("x")
    assert main(["runs", "export", "--format", "tensorboard", "--out", str(tmp_path / "file"),
                 "--cache", str(store.root)]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_a_failure_midway_leaves_nothing_and_a_damaged_entry_is_left_out(stored, tmp_path,
                                                                          monkeypatch, caplog):
    from attnverify.compare.runs import tensorboard as runs_tensorboard

    store, results = stored
    out = tmp_path / "tb"
    out.mkdir()
    real, calls = runs_tensorboard.write_run, []

    def fails_second(result, folder):
        calls.append(result.key)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(result, folder)

    monkeypatch.setattr(runs_tensorboard, "write_run", fails_second)
    with pytest.raises(OSError, match="No space"):
        runs_tensorboard.write_tensorboard(store, out)
    assert out.is_dir() and not list(out.iterdir())  # the empty folder as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "tb"]  # no scratch left
    monkeypatch.setattr(runs_tensorboard, "write_run", real)
    (store.entry_path(results[0].key) / "arrays.npz").write_bytes(b"garbage")
    assert runs_tensorboard.write_tensorboard(store, out) == 1
    assert [p.name for p in out.iterdir()] == [runs_tensorboard.run_folder(results[1])]
    assert "left out" in caplog.text


def test_without_tensorboard_is_one_line(stored, tmp_path, capsys, monkeypatch):
    store, _ = stored
    for name in ("tensorboard", "torch.utils.tensorboard"):  # importing them now fails
        monkeypatch.setitem(sys.modules, name, None)
    assert main(["runs", "export", "--format", "tensorboard", "--out", str(tmp_path / "tb"),
                 "--cache", str(store.root)]) == 2
    assert "pip install 'attnverify[tensorboard]'" in capsys.readouterr().err
    assert not (tmp_path / "tb").exists()
