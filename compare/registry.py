"""The claim registry: every claim id, in report order (paper by paper, in the order of
``PAPERS``; within a paper, in registration order)."""

from __future__ import annotations

from compare.claim import Claim

CLAIMS: dict[str, Claim] = {}
PAPERS = ("snell", "musat", "bao")


def register(cls: type[Claim]) -> type[Claim]:
    """Class decorator: instantiate and register a claim under its id."""
    if cls.id in CLAIMS:
        raise ValueError(f"claim id {cls.id!r} registered twice")
    if cls.paper not in PAPERS:
        raise ValueError(f"claim {cls.id!r} names unknown paper {cls.paper!r}")
    CLAIMS[cls.id] = cls()
    return cls


def select(paper: str | None = None, claim_id: str | None = None) -> list[Claim]:
    """Claims filtered by paper and/or id; ValueError naming the accepted values otherwise."""
    import compare.claims  # noqa: F401  (registers the claims)

    if paper is not None and paper not in PAPERS:
        raise ValueError(f"unknown paper {paper!r}; accepted: {', '.join(PAPERS)}")
    ordered = sorted(CLAIMS.values(), key=lambda c: PAPERS.index(c.paper))  # stable sort
    if claim_id is not None and claim_id not in CLAIMS:
        raise ValueError(f"unknown claim {claim_id!r}; accepted: "
                         f"{', '.join(c.id for c in ordered)}")
    return [c for c in ordered
            if (paper is None or c.paper == paper) and (claim_id is None or c.id == claim_id)]
