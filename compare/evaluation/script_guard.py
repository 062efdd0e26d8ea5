"""Worker processes and the ``if __name__ == "__main__":`` guard of a user's script.

The local executor starts its workers with the ``spawn`` method (:mod:`empirics.execute.executor`:
forking after torch has started can deadlock). A spawned worker imports the main module of the
process that started it again, under the name ``__mp_main__`` (Python's ``multiprocessing``
documentation, "Safe importing of main module"): a script that calls
:func:`attnverify.verify` at its top level, outside the guard, would start that verification
once more in every worker. This module tells such a call apart before any worker starts:

- :func:`unguarded_call` finds, on the call stack, the top-level statement of the running
  script that led to the call and reads the script's syntax tree: the call is guarded when
  that statement is an ``if __name__ == "__main__":`` whose body holds the line. A main module
  without a file (a notebook, the interactive prompt, ``python -c``) is never imported again by
  a worker, so any call from it is safe.
- :func:`reimported_main` says whether the call comes from a main module being imported again
  by a worker (the safety net when the script's source cannot be read).
"""

from __future__ import annotations

import ast
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

REIMPORTED_MAIN = "__mp_main__"
"""The name a spawned worker gives the main module it imports again."""


@dataclass(frozen=True)
class CallSite:
    """Where the running script calls: its file and the line of the top-level statement."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}, line {self.line}"


def _module_frames() -> list[FrameType]:
    """The frames of module-level code on the current call stack, innermost first."""
    frames = []
    frame = inspect.currentframe()
    while frame is not None:
        if frame.f_code.co_name == "<module>":
            frames.append(frame)
        frame = frame.f_back
    return frames


def _is_main_test(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    texts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(texts) == 1


def guarded(source: str, line: int) -> bool:
    """Whether ``line`` of the module ``source`` lies in the body of a top-level
    ``if __name__ == "__main__":`` (False too when the source does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    for node in tree.body:
        if isinstance(node, ast.If) and _is_main_test(node.test) and any(
                stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno) for stmt in node.body):
            return True
    return False


def unguarded_call() -> CallSite | None:
    """Where the running script calls, when it is a file a worker would import again and the
    call is not under its ``if __name__ == "__main__":`` guard; None when the call is safe
    (or the script's source cannot be read: :func:`reimported_main` is the safety net)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or path is None:  # notebook, interactive prompt, python -c
        return None
    outermost = [f for f in _module_frames() if f.f_globals is vars(main)]
    if not outermost:  # not called from the script's top-level code (a thread, a callback)
        return None
    line = outermost[-1].f_lineno
    try:
        source = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return None if guarded(source, line) else CallSite(str(path), line)


def reimported_main() -> bool:
    """Whether the call comes from a main module being imported again by a spawned worker."""
    return any(f.f_globals.get("__name__") == REIMPORTED_MAIN for f in _module_frames())


def guard_message(what: str, workers: int | None, site: CallSite | None) -> str:
    """What to do when ``what`` is asked for ``workers`` worker processes (None: every core)
    from a script's top-level code outside its guard (``site``; None: the call comes from a
    worker importing the script again)."""
    if site is None:
        return (f"{what} was called while a worker process imported the main script again: "
                f"the script calls it outside 'if __name__ == \"__main__\":'. Put the "
                f"script's top-level code under that guard, or use workers=1 (everything in "
                f"one process; the default).")
    return (f"{what} with workers={workers!r} starts worker processes, and each one runs this "
            f"script again from the top: the call ({site}) is not under "
            f"'if __name__ == \"__main__\":'. Put the script's top-level code under that "
            f"guard, or use workers=1 (everything in this process; the default).")
