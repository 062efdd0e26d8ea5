"""Progress for logs: one plain line about every minute where no terminal shows a bar.

A batch job's log (stderr redirected to a file) gets no tqdm bar, since tqdm draws nothing where
stderr is not a terminal; a sweep of hours would then say nothing until it ends. A
:class:`ProgressLines` prints "runs: 3/40 runs done, 12% of the estimated cost, elapsed 4m05s"
every ``interval_s`` seconds from a background thread (so a long run in progress still shows the
sweep is alive), and one last line when a batch that printed any ends (a batch shorter than the
interval prints nothing, as before). Where runs of hours save checkpoints, ``partial`` adds
what those say: the share of the cost their saved steps stand for, and how far each got.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

LINE_INTERVAL_S = 60.0
"""How often a progress line is printed where there is no terminal."""


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is an interactive terminal (where tqdm draws its bar)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def elapsed_text(seconds: float) -> str:
    """A duration as "45s", "4m05s" or "2h03m"."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class ProgressLines:
    """Prints the batch's progress as one line every ``interval_s`` seconds on ``stream``.

    :meth:`update` records what is done (cheap, no output); a daemon thread prints; :meth:`close`
    stops it and prints the final line when any was printed before. ``partial``, called for each
    line, returns the percent of the cost that runs still training have done and a text saying
    so (empty: nothing to add)."""

    def __init__(self, n: int, desc: str, stream: TextIO | None = None,
                 interval_s: float | None = None,
                 partial: Callable[[], tuple[float, str]] | None = None) -> None:
        self.n, self.desc = n, desc
        self.partial = partial
        self.interval_s = LINE_INTERVAL_S if interval_s is None else interval_s
        self.stream = stream if stream is not None else sys.stderr
        self.finished, self.percent = 0, 0.0
        self.printed = 0
        self.start = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="progress-lines", daemon=True)
        self._thread.start()

    def update(self, finished: int, percent: float) -> None:
        with self._lock:
            self.finished, self.percent = finished, percent

    def line(self) -> str:
        with self._lock:
            finished, percent = self.finished, self.percent
        extra, note = self.partial() if self.partial is not None else (0.0, "")
        # the cost is an estimate: never claim 100% while runs remain
        shown = min(percent + extra, 100.0 if finished >= self.n else 99.0)
        text = (f"{self.desc}: {finished}/{self.n} runs done, {shown:.0f}% of the estimated "
                f"cost, elapsed {elapsed_text(time.monotonic() - self.start)}")
        return f"{text}; {note}" if note else text

    def _print(self) -> None:
        self.printed += 1
        with contextlib.suppress(OSError, ValueError):  # the log went away: not worth failing
            print(self.line(), file=self.stream, flush=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._print()

    def close(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join()
        if self.printed:
            self._print()
