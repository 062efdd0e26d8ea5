"""Figure regeneration: every claim's figures, read through the run store (``attnverify figures``).

``python -m attnverify.paper_figures [--profile P] [--out DIR]`` (or ``attnverify figures``)
evaluates each claim at the profile, training only the runs missing from the cache, draws its
figures (``ClaimOutcome.figures``) and writes every figure as PNG and PDF with a caption file
(what is plotted, the profile, the seeds, the run keys). It says for every figure, in one line,
whether it came from the cache or what it had to train.
The index of figures and the claims they support is ``paper_figures/README.md``.
"""

from __future__ import annotations

import logging
from pathlib import Path

from attnverify.compare import select
from attnverify.compare.evaluation.verify import ClaimOutcome, evaluate_all
from attnverify.empirics import LocalExecutor, RunStore

log = logging.getLogger("attnverify.figures")


def caption(outcome: ClaimOutcome, name: str) -> str:
    """The caption file of one figure."""
    a = outcome.assessment
    keys = ", ".join(outcome.run_keys) or "none (no training)"
    lines = [
        f"Figure {outcome.claim.id}.{name} -- claim {outcome.claim.id} ({a.verdict}).",
        f"Claim: {outcome.claim.statement}",
        f"Plotted: {a.statistic}.",
        f"Verdict: {a.explanation}",
        f"Profile: {outcome.profile}; seeds: {a.n_seeds}.",
    ]
    if outcome.scale_note:
        lines.append(f"Scale: {outcome.scale_note}.")
    lines.append(f"Run keys: {keys}")
    return "\n".join(lines) + "\n"


def regenerate(out: Path, profile: str = "quick", store: RunStore | None = None,
               workers: int | None = None, progress: bool = True,
               device: str | None = None) -> list[Path]:
    """Write every claim's figures (PNG, PDF, caption) under ``out``; returns the files.
    Missing runs train on ``workers`` processes (default: one per core) on ``device`` (default:
    the CPU), as ``verify`` trains them."""
    executor = LocalExecutor(store or RunStore(), workers=workers, progress=progress,
                             device=device)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for outcome in evaluate_all(select(), profile, executor):
        trained = sum(k in executor.computed for k in set(outcome.run_keys))
        total = len(set(outcome.run_keys))
        source = ("no training (theory and Monte Carlo)" if not total else
                  f"cached: all {total} runs from the store" if not trained else
                  f"computed {trained} of {total} runs (not in the cache)")
        for name, fig in outcome.figures().items():
            stem = out / f"{outcome.claim.id}.{name}"
            for ext in ("png", "pdf"):
                fig.savefig(Path(f"{stem}.{ext}"), dpi=150)
                written.append(Path(f"{stem}.{ext}"))
            Path(f"{stem}.txt").write_text(caption(outcome, name))
            written.append(Path(f"{stem}.txt"))
            log.debug("figure %s.%s: %s", outcome.claim.id, name, source)
    return written
