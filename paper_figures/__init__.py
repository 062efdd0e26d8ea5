"""Figure regeneration: ``python -m attnverify.paper_figures [--profile P] [--out DIR]`` (or
``attnverify figures``) writes every claim's figures, read through the run store; the code is
:mod:`attnverify.compare.report.figures` (re-exported here). The index of figures and the
claims they support is ``paper_figures/README.md``; the archived paper-scale runs are in
``paper_figures/runs/``.
"""

from attnverify.compare.report.figures import caption, regenerate

__all__ = ["caption", "regenerate"]
