"""The typed parameters of the two §5 claims: what both read to build and classify the
candidate heads (:class:`Section5Params`), and each claim's own parameters on top
(:class:`MultiheadParams`, :class:`OneGoodHeadParams`).

Each check is one function over the parameters as a mapping (:func:`check_multihead`,
:func:`check_rescue`), called by the class's ``__post_init__`` (``verify --param`` builds each
point as an instance, so a value is refused before anything runs) and by the claim's
``check_params`` (which also sees parameters given as a plain mapping): one rule, one message
naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attnverify.compare.claims.snell.common import CopyingModel
from attnverify.compare.params import Params

PROTOCOLS = ("direct", "section5")
"""The protocols of ``snell.multihead_rescues_permutations``, by the name its ``protocol``
parameter gives."""
BUNDLE_DATA_SEED = 3
"""The data seed of the bundles of ``snell.one_good_head_rescues``: not one of the
classification seeds (0 to ``classify_seeds`` - 1)."""


def _at_least(name: str, value: Any, low: int, why: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low} ({why}); got {value!r}")


def check_multihead(params: Mapping[str, Any]) -> None:
    """ValueError naming the field unless ``params`` name one of :data:`PROTOCOLS` and
    more heads than one."""
    if params["protocol"] not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}; got "
                         f"{params['protocol']!r}")
    _at_least("heads", params["heads"], 2, "more heads than one")


def check_rescue(params: Mapping[str, Any]) -> None:
    """Where ``params`` train: ValueError naming the first field at which the bundles of
    ``snell.one_good_head_rescues`` cannot test it (one head per bundle, too few bad heads for
    more than one all-bad set, no draw, a classification seed that is the bundles' data
    seed)."""
    if not params["train"]:
        return
    k = params["heads"]
    for name, low, why in (
            ("heads", 2, "a bundle has more than one head"),
            ("needed_bad", k + 2, "at least two more bad heads than a bundle holds, so "
                                  "that the all-bad draws are more than one set"),
            ("draws", 1, "one draw of each kind at least")):
        _at_least(name, params[name], low, why)
    if params["classify_seeds"] > BUNDLE_DATA_SEED:
        raise ValueError(f"classify_seeds must be at most {BUNDLE_DATA_SEED}: the bundles "
                         f"train with data seed {BUNDLE_DATA_SEED}, which must not label "
                         f"heads; got {params['classify_seeds']!r}")


@dataclass(frozen=True)
class Section5Params(CopyingModel):
    """The candidate heads of §5, as both claims build and classify them: the GRU copying
    model of ``hidden`` units on permutations of ``L`` tokens (``subset_V``: the copying
    configuration's subset vocabulary, which these runs do not read), trained ``steps`` steps
    at ``batch_size``, evaluated every ``eval_every`` steps on ``eval_size`` examples;
    ``heads``-head bundles on the base initialisation ``base_seed``; each candidate classified
    with up to ``classify_seeds`` data seeds, drawn ``stage_candidates`` at a time (at most
    ``max_candidates``) until the first ``needed`` good heads are known
    (:mod:`~attnverify.compare.claims.snell.section5.stages`). Where two claims give these
    fields the same values (both full profiles, but ``max_candidates``, which only bounds how
    many are drawn), they train the same candidate runs (the same keys)."""

    heads: int
    base_seed: int
    classify_seeds: int
    needed: int
    stage_candidates: int
    max_candidates: int


@dataclass(frozen=True)
class MultiheadParams(Section5Params):
    """``snell.multihead_rescues_permutations``: :class:`Section5Params` and the ``protocol``
    (one of :data:`PROTOCOLS`). ``direct``: ``seeds`` runs per head count after
    ``calibration_seeds`` single-head runs that measure the precondition; ``section5``: the
    first ``needed`` bad heads as well, ``random_heads`` unclassified heads and ``combos``
    draws of each bundle kind."""

    seeds: int
    protocol: str
    calibration_seeds: int
    random_heads: int
    combos: int

    def __post_init__(self) -> None:
        check_multihead(self.as_dict())


@dataclass(frozen=True)
class MultiheadParamsWithTrain(MultiheadParams):
    """:class:`MultiheadParams` at a profile whose budget leaves the runs out (quick):
    ``train`` false trains nothing (compare.quick_budget), ``--param train=true`` trains them.
    A class of its own since the other profiles have no ``train`` parameter."""

    train: bool


@dataclass(frozen=True)
class OneGoodHeadParams(Section5Params):
    """``snell.one_good_head_rescues``: :class:`Section5Params`, the first ``needed_bad`` bad
    heads kept besides the ``needed`` good ones, and ``draws`` bundles of each kind drawn from
    these pools; ``train`` false trains nothing."""

    needed_bad: int
    draws: int
    train: bool

    def __post_init__(self) -> None:
        check_rescue(self.as_dict())


@dataclass(frozen=True)
class TrainOnlyParams(Params):
    """A profile of ``snell.one_good_head_rescues`` that trains nothing (quick: the pools cost
    hours there) and so sets no protocol parameter: ``train`` false. ``train`` true is refused
    by the claim's ``check_params``, which names the parameters this profile lacks."""

    train: bool
