"""Figure regeneration: every claim's figures, read through the run store (ARCHITECTURE.md).

``python -m paper_figures [--profile P] [--out DIR]`` (or ``attnverify figures``) evaluates each
claim at the profile, training only runs missing from the cache (each lookup logs one line), and
writes every figure as PNG and PDF. Captions, a style file and the figure index are the subject of
the report-and-figures issue; this module is the single entry point they build on.
"""

from __future__ import annotations

from pathlib import Path

from compare import select
from compare.verify import evaluate_all
from empirics import LocalExecutor, RunStore


def regenerate(out: Path, profile: str = "quick", store: RunStore | None = None,
               workers: int | None = None, progress: bool = True) -> list[Path]:
    """Write every claim's figures under ``out``; returns the files written."""
    executor = LocalExecutor(store or RunStore(), workers=workers, progress=progress)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for outcome in evaluate_all(select(), profile, executor):
        claim = outcome.claim
        for name, fig in outcome.assessment.figures.items():
            for ext in ("png", "pdf"):
                path = out / f"{claim.id}.{name}.{ext}"
                fig.savefig(path, dpi=150)
                written.append(path)
    return written
