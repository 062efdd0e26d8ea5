"""Progress where no terminal shows a bar (empirics/execute/progress.py): one plain line about every
minute on stderr, and the tqdm bar unchanged on a terminal."""

from __future__ import annotations

import dataclasses
import io
import time

import pytest

from attnverify.empirics import CopyTask, RunSpec, Seq2SeqConfig
from attnverify.empirics.execute import progress
from attnverify.empirics.execute.progress import ProgressLines, elapsed_text


def _wait_for_lines(stream: io.StringIO, n: int, timeout_s: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        lines = stream.getvalue().splitlines()
        if len(lines) >= n:
            return lines
        time.sleep(0.01)
    return stream.getvalue().splitlines()


def test_lines_are_printed_on_the_interval_and_once_at_the_end():
    stream = io.StringIO()
    lines = ProgressLines(4, "training", stream=stream, interval_s=0.05)
    lines.update(2, 49.6)
    assert _wait_for_lines(stream, 2)[0].startswith(
        "training: 2/4 runs done, 50% of the estimated cost, elapsed 0s")
    lines.update(4, 100.0)
    lines.close()
    last = stream.getvalue().splitlines()[-1]
    assert last.startswith("training: 4/4 runs done, 100% of the estimated cost, elapsed")
    printed = len(stream.getvalue().splitlines())
    time.sleep(0.15)
    assert len(stream.getvalue().splitlines()) == printed  # closed: the thread stopped


def test_a_batch_shorter_than_the_interval_prints_nothing():
    stream = io.StringIO()
    lines = ProgressLines(3, "runs", stream=stream, interval_s=60.0)
    lines.update(3, 100.0)
    lines.close()
    assert stream.getvalue() == ""


@pytest.mark.parametrize(("seconds", "text"), [(0.4, "0s"), (59, "59s"), (245, "4m05s"),
                                               (7380, "2h03m")])
def test_elapsed_text(seconds, text):
    assert elapsed_text(seconds) == text


def _specs() -> list[RunSpec]:
    return [RunSpec(task=CopyTask("subset", 10, 6), model=Seq2SeqConfig(hidden=16), steps=8,
                    batch_size=8, eval_every=4, eval_size=8, seed=s) for s in range(2)]


def test_the_cost_bar_prints_lines_without_a_terminal(monkeypatch, capsys):
    from attnverify.empirics.execute import executor

    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 0.05)
    monkeypatch.setattr(executor, "is_terminal", lambda stream: False)
    batch = _specs()
    with executor.CostBar(batch, {}, "training", disable=None) as bar:
        assert bar.lines is not None and bar.bar.disable  # no tqdm bar in a log
        bar.done(batch[0])
        time.sleep(0.2)
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("training: ") for line in err)
    assert "1/2 runs done" in err[0] and "1/2 runs done" in err[-1]


def test_a_terminal_keeps_the_bar_and_quiet_prints_nothing(monkeypatch):
    from attnverify.empirics.execute import executor

    monkeypatch.setattr(executor, "is_terminal", lambda stream: True)
    with executor.CostBar(_specs(), {}, "training", disable=None) as bar:
        assert bar.lines is None
    monkeypatch.setattr(executor, "is_terminal", lambda stream: False)
    with executor.CostBar(_specs(), {}, "training", disable=True) as bar:  # --quiet
        assert bar.lines is None


def test_the_line_never_says_100_percent_while_runs_remain():
    """The cost is an estimate: runs the estimate undervalues can remain at its 100%."""
    stream = io.StringIO()
    lines = ProgressLines(10, "training", stream=stream, interval_s=60)
    lines.update(6, 100.0)
    assert "6/10 runs done, 99% of the estimated cost" in lines.line()
    lines.update(10, 100.0)
    assert "10/10 runs done, 100% of the estimated cost" in lines.line()
    lines.close()


def test_lines_count_what_the_runs_in_training_have_checkpointed(tmp_path):
    """A run of hours shows how far it got by its last checkpoint, in the percent and by name;
    a finished run's checkpoint no longer counts."""
    from attnverify.empirics.execute import executor
    from attnverify.empirics.store.checkpoint import CheckpointDir

    batch = _specs()
    checkpoints = CheckpointDir(tmp_path)
    checkpoints.save([batch[1].key()], False, step=4, steps=8, elapsed_s=1.0, state={})
    with executor.CostBar(batch, {}, "training", disable=True, checkpoints=checkpoints) as bar:
        percent, note = bar.checkpointed()
        half_of_one = 50.0 * batch[1].time_estimate() / bar.total_cost
        assert percent == pytest.approx(half_of_one) and percent > 0
        assert note == "checkpoints: seed 1 at step 4/8"
        bar.done(batch[1])
        assert bar.checkpointed() == (0.0, "")
    stream = io.StringIO()
    lines = ProgressLines(2, "training", stream=stream, interval_s=60,
                          partial=lambda: (30.0, "checkpoints: seed 1 at step 4/8"))
    lines.update(1, 40.0)
    assert lines.line().startswith("training: 1/2 runs done, 70% of the estimated cost")
    assert lines.line().endswith("; checkpoints: seed 1 at step 4/8")
    lines.close()


def test_lines_name_a_few_checkpointed_runs_and_count_the_rest(tmp_path):
    from attnverify.empirics.execute import executor
    from attnverify.empirics.store.checkpoint import CheckpointDir

    batch = [dataclasses.replace(_specs()[0], seed=s) for s in range(7)]
    checkpoints = CheckpointDir(tmp_path)
    for spec in batch:
        checkpoints.save([spec.key()], False, step=2, steps=8, elapsed_s=1.0, state={})
    with executor.CostBar(batch, {}, "training", disable=True, checkpoints=checkpoints) as bar:
        percent, note = bar.checkpointed()
    assert percent == pytest.approx(25.0)
    assert note.count("at step 2/8") == executor.CHECKPOINTS_LISTED
    assert note.endswith(f", {7 - executor.CHECKPOINTS_LISTED} more")
