"""attnverify: checks theories of how attention learns against real training runs.

One import root holds the four parts of the project (ARCHITECTURE.md, "Layout"):

- :mod:`attnverify.theory`: closed forms and numeric predictions (numpy, scipy, sympy; never
  torch), e.g. ``theory.predict("snell.kappa", V=60, L=40)``;
- :mod:`attnverify.empirics`: tasks, models, the training loop, the run store (torch);
- :mod:`attnverify.compare`: claims, verdicts, reports and the command line;
- :mod:`attnverify.paper_figures`: the figure regeneration script.

>>> from attnverify import theory
>>> theory.predict("snell.kappa", V=60, L=40).value
0.005649717514124294

The Python API of a verification (docs/python-api.md) sits at the top:

- :func:`attnverify.verify`: verify claims, get a report object
  (:func:`attnverify.compare.api.verify`); :func:`attnverify.load_report` reads a report
  directory back;
- :mod:`attnverify.runs`: stored runs as a tidy pandas DataFrame, ``runs.frame(...)``
  (:mod:`attnverify.compare.runs`; ``import attnverify.runs`` or
  ``from attnverify import runs``).

Importing ``attnverify`` itself loads none of them; each loads on first use
(``attnverify.theory`` works after a plain ``import attnverify``).
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers and editors; loaded on first use below
    from attnverify import runs
    from attnverify.compare.api import load_report, verify
    from attnverify.compare.report.view import Outcome, VerifyReport

try:
    __version__ = metadata.version("attnverify")
except metadata.PackageNotFoundError:  # a source tree that was not installed
    __version__ = "0+unknown"

_SUBPACKAGES = ("theory", "empirics", "compare", "paper_figures", "runs")
_API = {"verify": "compare.api", "load_report": "compare.api",
        "VerifyReport": "compare.report.view", "Outcome": "compare.report.view"}
__all__ = ["Outcome", "VerifyReport", "__version__", "compare", "empirics", "load_report",
           "paper_figures", "runs", "theory", "verify"]


def __getattr__(name: str) -> Any:
    """Load a subpackage, an API function or module on first attribute access (PEP 562), so
    ``import attnverify`` stays light and ``attnverify.theory`` never imports torch."""
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _API:
        return getattr(importlib.import_module(f"{__name__}.{_API[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
