"""Stored runs as a tidy pandas table: ``attnverify.runs.frame(...)`` (docs/python-api.md).

The analysis face of :mod:`attnverify.compare.runs`, at the top of the import root so that
``import attnverify.runs`` and ``from attnverify import runs`` both work; every name is that
package's own (re-exported, never copied)."""

from attnverify.compare.runs import *  # noqa: F403  (the package's public names, as they are)
from attnverify.compare.runs import __all__ as __all__
