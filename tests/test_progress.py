"""Progress where no terminal shows a bar (empirics/progress.py): one plain line about every
minute on stderr, and the tqdm bar unchanged on a terminal."""

from __future__ import annotations

import io
import time

import pytest

from attnverify.empirics import CopyTask, RunSpec, Seq2SeqConfig, progress
from attnverify.empirics.progress import ProgressLines, elapsed_text


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
    from attnverify.empirics import executor

    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 0.05)
    monkeypatch.setattr(executor, "is_terminal", lambda stream: False)
    batch = _specs()
    with executor._CostBar(batch, {}, "training", disable=None) as bar:
        assert bar.lines is not None and bar.bar.disable  # no tqdm bar in a log
        bar.done(batch[0])
        time.sleep(0.2)
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("training: ") for line in err)
    assert "1/2 runs done" in err[0] and "1/2 runs done" in err[-1]


def test_a_terminal_keeps_the_bar_and_quiet_prints_nothing(monkeypatch):
    from attnverify.empirics import executor

    monkeypatch.setattr(executor, "is_terminal", lambda stream: True)
    with executor._CostBar(_specs(), {}, "training", disable=None) as bar:
        assert bar.lines is None
    monkeypatch.setattr(executor, "is_terminal", lambda stream: False)
    with executor._CostBar(_specs(), {}, "training", disable=True) as bar:  # --quiet
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
