"""Claims and verdicts.

A :class:`Claim` ties a theory prediction to the experiments that test it: for a point of its
parameter space (the defaults of a profile, or a point given by the user) it lists the RunSpecs to
train and then turns their results into an :class:`Assessment`: the verdict, the theory value, the
measured value with a confidence interval, the statistic, the tolerance and why it is what it is.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

from attnverify.compare.groups import GroupedResults, Specs, flatten, staged_results
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.param_bounds import check_sizes, space_top
from attnverify.compare.params import ProfileParams, as_mapping
from attnverify.compare.protocol import Protocol, Reason
from attnverify.compare.space import Dimension

if TYPE_CHECKING:  # annotations only: importing the contract loads no torch
    from matplotlib.figure import Figure

    from attnverify.empirics import RunResult, RunSpec

PROFILES = ("smoke", "quick", "full")


def check_profile(profile: str) -> None:
    """ValueError naming the accepted profiles unless ``profile`` is one of them."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; accepted: {', '.join(PROFILES)}")


class Verdict(StrEnum):
    CONFIRMED = "confirmed"
    REFUTED = "refuted"
    INCONCLUSIVE = "inconclusive"


class ClaimKind(StrEnum):
    """What a verdict is evidence of; the report counts and tables them apart."""

    PAPER = "paper"
    """An empirical statement of the paper, tested on training runs or the paper's setting."""
    DEMONSTRATION = "demonstration"
    """A statement of existence (a model that does X exists; here, read as: training reaches
    one), shown by one run that does it: a demonstration, not a statistical confirmation (runs
    without one cannot refute it); counted apart from the paper claims and their multiplicity
    family, its "confirmed" read as "demonstrated"."""
    DERIVED = "derived"
    """A prediction this project derived (its spec says so), tested on training runs."""
    OBSERVATION = "observation"
    """What the runs show beside the claims: a sanity check of the setting a paper assumes,
    or an exploratory reading no statement of a paper predicts; it decides nothing about the
    papers."""
    DERIVATION = "derivation"
    """The project's closed form against its own simulator or Monte Carlo: a correctness check
    of ``attnverify.theory``, which can fail only through a bug; not evidence about a paper."""


KIND_SUMMARY = {ClaimKind.PAPER: "paper claims", ClaimKind.DEMONSTRATION: "demonstrations",
                ClaimKind.DERIVED: "derived predictions", ClaimKind.OBSERVATION: "observations",
                ClaimKind.DERIVATION: "derivation checks"}
"""How the summary line names each kind."""
KIND_NAMES = {
    ClaimKind.PAPER: "Paper claim",
    ClaimKind.DEMONSTRATION: ("Demonstration of existence (the paper's statement, shown by a run "
                              "that does it; not a statistical confirmation)"),
    ClaimKind.DERIVED: "Derived prediction (this project's, not the paper's)",
    ClaimKind.OBSERVATION: ("Observation (a sanity check or an exploratory reading; decides "
                            "nothing about the paper)"),
    ClaimKind.DERIVATION: "Derivation check (our theory against our own simulator; not evidence "
                          "about the paper)",
}
"""How a claim's own section names its kind."""


def verdict_word(kind: ClaimKind, verdict: Verdict) -> str:
    """How the report words ``verdict`` for a claim of ``kind``: a demonstration is
    "demonstrated" or "not demonstrated" (runs cannot refute an existence statement); every
    other kind says its verdict."""
    if kind is ClaimKind.DEMONSTRATION:
        return "demonstrated" if verdict is Verdict.CONFIRMED else "not demonstrated"
    return str(verdict)
KIND_TITLES = {
    ClaimKind.PAPER: "Paper claims",
    ClaimKind.DEMONSTRATION: ("Demonstrations of existence (the papers' statements that some "
                              "trained model does X, shown by one run; not statistical "
                              "confirmations, and outside the paper claims' counts)"),
    ClaimKind.DERIVED: "Derived predictions (this project's, tested on training)",
    ClaimKind.OBSERVATION: ("Observations (sanity checks of the papers' settings and "
                            "exploratory readings of the runs; they decide nothing)"),
    ClaimKind.DERIVATION: ("Derivation checks (our closed forms against our own simulators: "
                           "correctness of the theory code, not evidence about the papers)"),
}
"""The heading of each kind's verdict table."""


@dataclass
class Assessment:
    """What a claim concludes from its runs at one point.

    ``empirical`` is the headline :class:`~attnverify.compare.measurement.Measurement` (its
    value and, where it has one, a confidence interval with its confidence level), None when a
    claim measured nothing (its runs would train no step); ``tolerance`` is the
    :class:`~attnverify.compare.measurement.Tolerance` of the rule: its thresholds and why they
    are what they are. ``explanation`` says in words why the
    verdict is what it is (required reading for refuted and inconclusive verdicts).
    ``reason`` (:class:`~attnverify.compare.protocol.Reason`) is ``decided`` for a confirmation
    or a refutation; an inconclusive verdict says why nothing was decided (default: the planned
    seeds ran out, ``budget reached``). ``p_value`` is the one-sided p-value of the protocol's
    primary test in the direction of H1, where the test has one (the report adjusts the paper
    claims' p-values for multiplicity beside the per-claim verdicts); ``refuting_p``, for a
    refutation, is the p-value of the test that refuted (the refutation test of the smallest
    effect that matters, or the primary test the other way), which the report shows beside a
    refuted verdict. ``details`` holds what
    else the claim computed, in ``report.json``, including what its figures draw
    (:meth:`Claim.figures`: an assessment draws nothing).
    """

    verdict: Verdict
    theory: Any
    empirical: Measurement | None
    statistic: str
    tolerance: Tolerance
    explanation: str
    n_seeds: int = 0
    details: dict[str, Any] = field(default_factory=dict)
    reason: Reason | None = None
    p_value: float | None = None
    refuting_p: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.empirical, Measurement | None):
            raise TypeError(f"empirical must be a Measurement (attnverify.compare.measurement) "
                            f"or None; got {type(self.empirical).__name__}")
        if not isinstance(self.tolerance, Tolerance):
            raise TypeError(f"tolerance must be a Tolerance (attnverify.compare.measurement); "
                            f"got {type(self.tolerance).__name__}")
        if self.verdict is Verdict.INCONCLUSIVE:
            if self.reason is Reason.DECIDED:
                raise ValueError("an inconclusive verdict was not decided: give the reason "
                                 "nothing was (Reason)")
            self.reason = Reason(self.reason or Reason.BUDGET_REACHED)
        elif self.reason not in (None, Reason.DECIDED):
            raise ValueError(f"a {self.verdict} verdict is decided; got reason {self.reason!r}")
        else:
            self.reason = Reason.DECIDED
        if self.p_value is not None and not 0 <= self.p_value <= 1:
            raise ValueError(f"p_value must be in [0, 1]; got {self.p_value!r}")


COUNT_PARAMETERS = frozenset({
    "seeds", "n_samples", "n_sequences", "n_points", "instances", "combos", "random_heads",
    "needed", "classify_seeds", "stage_candidates", "max_candidates", "d_sets", "d_intervals",
    "L"})
"""Parameter names that count something (seeds, samples, heads, sequence length): an integer
>= 1 in every claim that has one (``Claim.check_params``). Sizes a run is built from (widths,
steps, batch) are checked by the run's spec, with its own field names."""


class Claim(ABC):
    """Subclass, set the class attributes, implement ``specs`` and ``assess``, and register;
    a claim with figures also implements ``figures``."""

    id: ClassVar[str]
    paper: ClassVar[str]
    statement: ClassVar[str]
    kind: ClassVar[ClaimKind]
    """``paper``, ``derived`` or ``derivation`` (:class:`ClaimKind`); every claim declares it."""
    protocol: ClassVar[Protocol]
    """The frozen decision protocol (:class:`~attnverify.compare.protocol.Protocol`): endpoint,
    hypotheses, error rates, read-out, testability precondition, secondary statistics and
    seed blocks; declared by every claim, shown in the report with its hash."""
    code_version: ClassVar[int]
    """The version of what the claim computes itself: its rule, its statistics, its own
    Monte Carlo, the theory functions whose results it caches (declared by every claim class;
    bump it when any of these changes). With the package version it keys the claim's memo
    entries (:mod:`~attnverify.compare.memo`) and marks saved falsify results of other code as
    stale; training runs carry their own versions (their keys)."""
    defaults: ClassVar[Mapping[str, ProfileParams]]
    """Parameters per profile (``smoke``, ``quick``, ``full``): a typed
    :class:`~attnverify.compare.params.Params` each (or a dict); read as a mapping
    (:meth:`params`)."""
    overridable: ClassVar[tuple[str, ...]] = ()
    """Parameters a user may set for every profile (e.g. ``corpus`` from ``verify --corpus``)."""
    paper_scale: ClassVar[str] = ""
    """The paper's own configuration in words; empty when the claim has no scale (pure theory)."""
    full_is_paper_scale: ClassVar[bool] = True
    """False when even ``full`` stays below the paper (unknown or unaffordable settings)."""
    space: ClassVar[dict[str, Dimension]] = {}
    """Where ``attnverify falsify`` may evaluate the claim (:mod:`compare.space`); empty: the
    claim has no searchable parameters."""
    not_run_note: ClassVar[str] = ""
    """Why the claim trains nothing where its parameters set ``train`` false (a profile whose
    budget leaves its runs out, :mod:`compare.quick_budget`); see :meth:`not_run`."""

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        """The claim parameters (as ``verify --param`` takes them) that a point of ``space``
        sets; the others keep the profile's values. Default: the same names."""
        return dict(point)

    def params(self, profile: str) -> dict[str, Any]:
        check_profile(profile)
        return as_mapping(self.defaults[profile])

    def check_params(self, params: dict[str, Any]) -> None:
        """Raise ValueError naming the first parameter a claim cannot be evaluated at, before
        anything is trained (``checked_specs``). Default: every count
        (:data:`COUNT_PARAMETERS`) is an integer >= 1 and every list holds at least one value
        (an empty list of cases leaves nothing to compare), and no size or count exceeds its
        bound (:mod:`compare.param_bounds`); a claim with more constraints extends this (its
        ``specs`` also rejects sizes a run cannot have)."""
        for name in sorted(COUNT_PARAMETERS & params.keys()):
            value = params[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1; got {value!r}")
        if not isinstance(params.get("train", True), bool):
            raise ValueError(f"train must be true or false; got {params['train']!r}")
        for name, value in sorted(params.items()):
            if isinstance(value, list | tuple) and not value:
                raise ValueError(f"{name} must be a list of at least one value; got an empty "
                                 f"list")
        check_sizes(params, self.size_references())

    def size_references(self) -> dict[str, dict[str, Any]]:
        """What the bounds of the claim's sizes are relative to (:mod:`compare.param_bounds`):
        its profiles and the top of its search space, by name and as the parameters it sets."""
        references = {profile: as_mapping(params) for profile, params in self.defaults.items()}
        if self.space:
            top = space_top(self.space)
            references["space"] = top
            with suppress(ValueError, KeyError, TypeError):  # not a valid point: by name only
                references["space parameters"] = self.point_params(top)
        return references

    def scale_note(self, profile: str) -> str | None:
        """Says so when ``profile`` computes the claim below the paper's scale."""
        if not self.paper_scale or (profile == "full" and self.full_is_paper_scale):
            return None
        if self.full_is_paper_scale:
            return (f"computed at the '{profile}' profile, below the paper's scale "
                    f"({self.paper_scale}); run --profile full for the paper's configuration")
        return (f"computed at the '{profile}' profile, below the paper's scale "
                f"({self.paper_scale}); even --profile full stays below it (see the claim's "
                f"full configuration)")

    def not_run(self, params: dict[str, Any]) -> str | None:
        """Why the claim's runs are left out at ``params``, None when they train: a profile
        may leave them out with ``train`` false (``--param train=true`` puts them back);
        verify then assesses the claim "not testable here" with this reason, running nothing,
        and the dry run counts nothing for it. A claim with no runs at ``params`` leaves
        nothing out (its own assessment says why it has none)."""
        if params.get("train", True) or not flatten(self.specs(params)):
            return None
        note = self.not_run_note or "not run at these parameters (train = false)"
        return f"{note} (`--claim {self.id} --param train=true` trains it here)"

    def specs(self, params: dict[str, Any]) -> Specs:
        """The training runs this claim reads at ``params`` (none for pure Monte Carlo claims):
        named groups (``{"subset": [...], ...}``, read back by name: :mod:`compare.groups`) or
        a flat list (read by position)."""
        return []

    def results_for(self, params: dict[str, Any],
                    results: Sequence[RunResult]) -> GroupedResults:
        """``results`` (of ``specs(params)`` in training order, then any follow-ups) as
        ``assess``, ``figures`` and ``followup`` receive them: readable by group name where
        ``specs`` or a ``followup`` names its groups. The stages are found again by calling
        ``followup`` on each stage's results, as verify did when it trained them."""
        if isinstance(results, GroupedResults):
            return results
        return staged_results(self.stages_for(params, results), results)

    def stages_for(self, params: dict[str, Any], results: Sequence[RunResult]) -> list[Specs]:
        """The stages whose runs ``results`` are (in training order): ``specs(params)``, then
        each ``followup`` called on the results before it, as verify called it."""
        stages: list[Specs] = [self.specs(params)]
        done = len(flatten(stages[0]))
        while done < len(results):
            more = self.followup(params, staged_results(stages, results[:done]))
            if not flatten(more):
                break
            stages.append(more)
            done += len(flatten(more))
        return stages

    def trains_at_some_profile(self) -> bool:
        """Whether the first stage trains runs at any of the claim's profiles: the report tells
        a claim that never trains (theory against Monte Carlo, a pretrained model) from one
        that trains nothing at the profile it shows."""
        return any(flatten(self.specs(self.params(profile))) for profile in self.defaults)

    def followup(self, params: dict[str, Any], results: GroupedResults) -> Specs:
        """More runs that depend on the results so far (a protocol in stages, e.g. Snell §5:
        classify heads, then combine them), as a list or named groups (names unique across
        stages); called with the results of every spec so far, in order and readable by the
        names of every earlier stage's groups, until it returns none. Default: a claim has one
        stage."""
        return []

    def checked_specs(self, params: dict[str, Any]) -> list[RunSpec]:
        """``specs`` after ``check_params``: the first stage as verify, its dry run and
        ``--param`` see it (a bad parameter fails here, before anything trains)."""
        self.check_params(params)
        return flatten(self.specs(params))

    def stage_note(self, params: dict[str, Any], results: Sequence[RunResult]) -> str:
        """Where a claim in stages stands after ``results`` (logged with each new stage, so a
        run of many hours says how far it got). Default: nothing to add."""
        return ""

    def staged(self, params: dict[str, Any]) -> bool:
        """Whether ``followup`` may add runs at ``params`` (for plans made before training:
        ``verify --dry-run``). Default: no."""
        return False

    def seed_plan(self, params: dict[str, Any]) -> str:
        """How many seeds the claim may train at ``params`` when that depends on results
        (sequential seeds, a precondition), in words for ``verify --dry-run``: the expected
        and the maximum count. Default: nothing to add (the runs are fixed)."""
        return ""

    def negative_control(self, params: dict[str, Any]) -> Sequence[RunResult] | None:
        """Constructed results for ``specs(params)`` (same order) on which the claim's
        statement is false: the contract (:mod:`compare.testing.contract`) checks that
        ``assess`` does not confirm on them. None (the default): none supplied yet, and the
        contract's ``negative_control`` item fails."""
        return None

    def reachable_verdicts(self, params: dict[str, Any]) -> frozenset[Verdict] | None:
        """The verdicts ``assess`` can reach at ``params`` (with sequential seeds: at their
        maximum), computed or simulated on constructed results; None (the default): not
        declared, and the contract's ``reachable_verdicts`` item fails."""
        return None

    @abstractmethod
    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        """Turn the results of ``specs(params)`` and of every ``followup`` (same order) into
        an assessment. It draws nothing: ``falsify`` and the rule tests call it alone."""

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        """The claim's figures by name, drawn from the same ``results`` and the ``assessment``
        ``assess`` made of them (its ``details`` hold what the figures need of its
        statistics); called only where figures are shown: the report, ``attnverify figures``
        and the Python API (:meth:`compare.evaluation.verify.ClaimOutcome.figures`). Default:
        none."""
        return {}
