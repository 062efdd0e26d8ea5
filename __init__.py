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

Importing ``attnverify`` itself loads none of them; each loads on first use
(``attnverify.theory`` works after a plain ``import attnverify``).
"""

from __future__ import annotations

import importlib
from importlib import metadata
from types import ModuleType

try:
    __version__ = metadata.version("attnverify")
except metadata.PackageNotFoundError:  # a source tree that was not installed
    __version__ = "0+unknown"

_SUBPACKAGES = ("theory", "empirics", "compare", "paper_figures")
__all__ = ["__version__", *_SUBPACKAGES]


def __getattr__(name: str) -> ModuleType:
    """Load a subpackage on first attribute access (PEP 562), so ``import attnverify`` stays
    light and ``attnverify.theory`` never imports torch."""
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
