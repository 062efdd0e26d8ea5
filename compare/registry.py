"""The claim registry: every claim id, in report order (paper by paper: the three papers of
``PAPERS`` first, then the papers of third-party claims in the order they were registered;
within a paper, in registration order).

The built-in claims are an explicit list (:data:`attnverify.compare.claims.BUILTIN`).
Third-party claims come in through the entry point group ``attnverify.claims``: each
entry point names a :class:`~compare.claim.Claim` subclass (registered here) or a module that
registers its claims with :func:`register` when imported. ``select`` loads them once; a plugin
that fails to load is reported in one warning line and left out, so one broken plugin never
stops a verification.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Sequence
from importlib.metadata import entry_points

from attnverify.compare.claim import Claim, ClaimKind
from attnverify.compare.protocol import Protocol

CLAIMS: dict[str, Claim] = {}
PAPERS = ("snell", "musat", "bao")
"""The built-in papers, in report order."""
ENTRY_POINT_GROUP = "attnverify.claims"
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_extra_papers: list[str] = []
_plugins_loaded = False
_builtins_loaded = False
log = logging.getLogger("attnverify.plugins")


def papers() -> tuple[str, ...]:
    """Every paper a claim is registered for: the built-in ones, then third-party papers."""
    return PAPERS + tuple(_extra_papers)


def register(cls: type[Claim]) -> type[Claim]:
    """Class decorator: instantiate and register a claim under its id (``PAPER.NAME``)."""
    if cls.id in CLAIMS:
        raise ValueError(f"claim id {cls.id!r} registered twice")
    paper, _, name = cls.id.partition(".")
    if paper != cls.paper or not (_NAME.fullmatch(paper) and _NAME.fullmatch(name)):
        raise ValueError(f"claim id {cls.id!r} must read PAPER.NAME (lower case, digits and "
                         f"underscores) with PAPER = its paper {cls.paper!r}")
    from attnverify.empirics.versions import require_code_version  # torch: on first use

    require_code_version(cls, f"claim {cls.id!r}")
    kind = getattr(cls, "kind", None)
    if kind not in set(ClaimKind):
        raise TypeError(f"{cls.__module__}.{cls.__qualname__} (claim {cls.id!r}) must declare "
                        f"its kind, one of {', '.join(ClaimKind)} (ClaimKind); got {kind!r}")
    cls.kind = ClaimKind(kind)
    if not isinstance(getattr(cls, "protocol", None), Protocol):
        raise TypeError(f"{cls.__module__}.{cls.__qualname__} (claim {cls.id!r}) must declare "
                        f"its decision protocol (attnverify.compare.protocol.Protocol)")
    if cls.paper not in papers():
        _extra_papers.append(cls.paper)
    CLAIMS[cls.id] = cls()
    return cls


def load_builtins() -> None:
    """Register the built-in claims (:data:`attnverify.compare.claims.BUILTIN`), once. The
    claims modules are imported here, on first use, so that importing the registry stays
    light and the claims never import the registry."""
    global _builtins_loaded
    if _builtins_loaded:
        return
    from attnverify.compare.claims import BUILTIN

    _builtins_loaded = True
    for cls in BUILTIN:
        if type(CLAIMS.get(cls.id)) is not cls:  # register refuses an id taken by another
            register(cls)


def load_plugins() -> list[str]:
    """Register the claims of the ``attnverify.claims`` entry points (once); returns the names
    of the entry points that loaded."""
    global _plugins_loaded
    if _plugins_loaded:
        return []
    _plugins_loaded = True
    loaded = []
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            target = entry.load()
            if isinstance(target, type) and issubclass(target, Claim):
                if target.id in CLAIMS and type(CLAIMS[target.id]) is not target:
                    raise ValueError(f"claim id {target.id!r} is taken by another claim")
                if target.id not in CLAIMS:
                    register(target)
            elif not hasattr(target, "__file__"):  # neither a claim class nor a module
                raise TypeError(f"{entry.value} is neither a Claim subclass nor a module")
        except Exception as exc:  # a third party's bug must not stop the verification
            log.warning("claim plugin %r (%s) left out: %s: %s", entry.name, entry.value,
                        type(exc).__name__, exc)
            continue
        loaded.append(entry.name)
    return loaded


def select_many(claim_ids: Sequence[str] = (), paper: str | None = None) -> list[Claim]:
    """The claims named in ``claim_ids`` (every claim of ``paper``, or every claim, when none
    is), in report order; ValueError for an unknown id or paper (empty when none matches)."""
    wanted: Sequence[str | None] = claim_ids or [None]
    named = {c.id for claim_id in wanted for c in select(paper, claim_id)}
    return [c for c in select(paper) if c.id in named]


def _suggestion(claim_id: str, ordered: Sequence[Claim]) -> str:
    """"did you mean" for an unknown id (the ids it starts, or the closest spellings), then
    every accepted id; "accepted: ..." alone where nothing is close."""
    ids = [c.id for c in ordered]
    close = [i for i in ids if i.startswith(claim_id)][:3] or difflib.get_close_matches(
        claim_id, ids, n=3, cutoff=0.6)
    accepted = f"accepted: {', '.join(ids)}"
    return f"did you mean {' or '.join(close)}? ({accepted})" if close else accepted


def select(paper: str | None = None, claim_id: str | None = None) -> list[Claim]:
    """Claims filtered by paper and/or id; ValueError naming the accepted values otherwise."""
    load_builtins()
    load_plugins()
    order = papers()
    if paper is not None and paper not in order:
        raise ValueError(f"unknown paper {paper!r}; accepted: {', '.join(order)}")
    ordered = sorted(CLAIMS.values(), key=lambda c: order.index(c.paper))  # stable sort
    if claim_id is not None and claim_id not in CLAIMS:
        raise ValueError(f"unknown claim {claim_id!r}; {_suggestion(claim_id, ordered)}")
    if claim_id is not None and paper is not None and CLAIMS[claim_id].paper != paper:
        raise ValueError(f"claim {claim_id!r} belongs to paper {CLAIMS[claim_id].paper!r}, not "
                         f"{paper!r}; drop --paper or pick one of its claims")
    return [c for c in ordered
            if (paper is None or c.paper == paper) and (claim_id is None or c.id == claim_id)]
