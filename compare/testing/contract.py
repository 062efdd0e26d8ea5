"""The claim contract: what every claim must satisfy, checked on the claim itself (in the
manner of scikit-learn's ``check_estimator``).

:func:`check_claim` runs one claim through every check of :func:`contract_checks` and raises
an AssertionError naming each failed item; :func:`parametrize_with_claim_checks` gives one
pytest case per (claim, check), so a plugin author's suite shows each item apart::

    from attnverify.compare.testing import parametrize_with_claim_checks

    @parametrize_with_claim_checks([MyClaim()])
    def test_my_claim_keeps_the_contract(claim, check):
        check(claim)

The items (docs/adding-a-claim.md, "The contract"):

- ``declarations``: a kind (:class:`~attnverify.compare.claim.ClaimKind`), a ``code_version``
  >= 1 and a :class:`~attnverify.compare.protocol.Protocol` whose endpoint, unit, H1 (the
  smallest effect that matters) and test are stated;
- ``profiles``: parameters for every profile, each accepted by ``check_params``;
- ``typed_params``: each profile's parameters are a typed ``Params``, not a dict;
- ``space``: the top of the search space, if any, is a valid point at every profile;
- ``deterministic_specs``: ``specs`` gives the same runs, in the same order, when asked twice;
- ``unique_run_keys``: no run appears twice in one claim's first stage;
- ``grouped_specs``: ``specs`` names its groups (a mapping of group name to runs), so that
  ``assess`` reads them by name, not by position;
- ``negative_control``: the claim supplies constructed results on which its statement is false
  (:meth:`~attnverify.compare.claim.Claim.negative_control`), and its rule does not confirm on
  them;
- ``grouping_stable``: on the negative control's results, ``assess`` concludes the same with
  the first stage's groups in another order (it reads its runs by name, not by position);
- ``reachable_verdicts``: at each profile (at its maximum seeds, where they are sequential),
  the verdicts the design can reach are declared
  (:meth:`~attnverify.compare.claim.Claim.reachable_verdicts`) and include "confirmed" or
  "refuted" wherever the claim runs; where only one of them is reachable, verify reports the
  claim "not testable here" (:func:`~attnverify.compare.decision.one_sided_design`), so a
  design that can only confirm (or only refute) never decides.

A check fails where a claim has not declared what it needs: a claim passes the contract only by
supplying the evidence, never by default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from attnverify.compare.claim import PROFILES, Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.groups import GroupedResults, staged_results
from attnverify.compare.param_bounds import space_top
from attnverify.compare.params import is_typed
from attnverify.compare.protocol import Protocol

if TYPE_CHECKING:
    from attnverify.empirics import RunResult

Check = Callable[[Claim], None]


class ContractError(AssertionError):
    """A claim breaks one item of the contract."""


def _fail(claim: Claim, item: str, why: str) -> None:
    raise ContractError(f"{claim.id} breaks the contract's {item!r} item: {why}")


def check_declarations(claim: Claim) -> None:
    kind = getattr(claim, "kind", None)
    if kind not in set(ClaimKind):
        _fail(claim, "declarations", f"kind must be one of {', '.join(ClaimKind)}; got "
              f"{kind!r}")
    from attnverify.empirics.versions import require_code_version  # torch: on use

    try:
        require_code_version(type(claim), f"claim {claim.id!r}")
    except TypeError as exc:
        _fail(claim, "declarations", str(exc))
    protocol = getattr(claim, "protocol", None)
    if not isinstance(protocol, Protocol):
        _fail(claim, "declarations", "no Protocol declared")
    assert isinstance(protocol, Protocol)
    empty = [name for name in ("endpoint", "unit", "h1", "test") if not getattr(protocol, name)]
    if empty:
        _fail(claim, "declarations", f"the protocol leaves {', '.join(empty)} empty")


def check_profiles(claim: Claim) -> None:
    missing = [p for p in PROFILES if p not in claim.defaults]
    if missing:
        _fail(claim, "profiles", f"no parameters for {', '.join(missing)}")
    for profile in PROFILES:
        try:
            claim.check_params(claim.params(profile))
        except ValueError as exc:
            _fail(claim, "profiles", f"its {profile} parameters are refused: {exc}")


def check_typed_params(claim: Claim) -> None:
    for profile in PROFILES:
        params = claim.defaults[profile]
        if not is_typed(params):
            _fail(claim, "typed_params", f"its {profile} parameters are a "
                  f"{type(params).__name__}, not a typed Params dataclass")


def check_space(claim: Claim) -> None:
    if not claim.space:
        return
    top = space_top(claim.space)
    for profile in PROFILES:
        try:
            claim.check_params(claim.params(profile) | claim.point_params(top))
        except ValueError as exc:
            _fail(claim, "space", f"the top of its space is refused at {profile}: {exc}")


def _keys(claim: Claim, profile: str) -> list[str]:
    return [spec.key() for spec in claim.checked_specs(claim.params(profile))]


def check_deterministic_specs(claim: Claim) -> None:
    for profile in PROFILES:
        if _keys(claim, profile) != _keys(claim, profile):
            _fail(claim, "deterministic_specs", f"two calls at {profile} give other runs")


def check_unique_run_keys(claim: Claim) -> None:
    for profile in PROFILES:
        keys = _keys(claim, profile)
        if len(set(keys)) != len(keys):
            _fail(claim, "unique_run_keys", f"{len(keys) - len(set(keys))} runs appear twice "
                  f"at {profile}")


def check_grouped_specs(claim: Claim) -> None:
    for profile in PROFILES:
        specs = claim.specs(claim.params(profile))
        if specs and not isinstance(specs, Mapping):
            _fail(claim, "grouped_specs", f"specs at {profile} is a flat "
                  f"{type(specs).__name__} read by position, not named groups")


def _negative_control(claim: Claim, item: str, params: dict[str, Any]) -> Sequence[RunResult]:
    """The claim's constructed results on which it is false, or the failure of ``item``."""
    results = claim.negative_control(params)
    if results is None:
        _fail(claim, item, "no constructed results on which the claim is false "
              "(Claim.negative_control)")
    assert results is not None
    return results


def check_negative_control(claim: Claim) -> None:
    for profile in PROFILES:
        params = claim.params(profile)
        results = _negative_control(claim, "negative_control", params)
        verdict = claim.assess(params, claim.results_for(params, results)).verdict
        if verdict is Verdict.CONFIRMED:
            _fail(claim, "negative_control", f"its rule confirms at {profile} on results on "
                  f"which the claim is false")


class _ByNameOnly(GroupedResults):
    """Results that refuse a read by position (an index or a slice): what a claim that reads
    its runs by group name never does."""

    def __init__(self, grouped: GroupedResults) -> None:
        super().__init__(list(grouped))
        self._groups = {name: slice(*grouped.span(name)) for name in grouped.groups()}

    def __getitem__(self, index: Any) -> Any:  # type: ignore[override]
        if not isinstance(index, str):
            raise _PositionalRead(f"results[{index!r}]")
        return super().__getitem__(index)


class _PositionalRead(LookupError):
    """A claim read its results by position inside the ``grouping_stable`` check."""


def _reordered(claim: Claim, params: dict[str, Any], results: Sequence[RunResult]
               ) -> tuple[GroupedResults, GroupedResults] | None:
    """``results`` as the claim reads them, and the same runs with the first stage's groups
    in the reverse order, readable by name only; None where that stage has fewer than two
    named groups."""
    stages = claim.stages_for(params, results)
    first = stages[0]
    if not isinstance(first, Mapping) or len(first) < 2:
        return None
    as_read = staged_results(stages, results)
    names = list(first)[::-1]
    n_first = sum(len(first[name]) for name in names)
    reversed_results = [r for name in names for r in as_read[name]] + list(results[n_first:])
    reversed_stages = [{name: first[name] for name in names}, *stages[1:]]
    return as_read, _ByNameOnly(staged_results(reversed_stages, reversed_results))


def check_grouping_stable(claim: Claim) -> None:
    for profile in PROFILES:
        params = claim.params(profile)
        pair = _reordered(claim, params, _negative_control(claim, "grouping_stable", params))
        if pair is None:
            continue
        before = claim.assess(params, pair[0])
        try:
            after = claim.assess(params, pair[1])
        except _PositionalRead as exc:
            _fail(claim, "grouping_stable", f"assess reads its runs by position ({exc}) at "
                  f"{profile}, not by group name")
        if _outcome(before) != _outcome(after):
            _fail(claim, "grouping_stable", f"at {profile}, the same runs with the groups in "
                  f"another order give another assessment: {_outcome(before)} against "
                  f"{_outcome(after)}")


def _outcome(assessment: Assessment) -> tuple[Any, ...]:
    empirical = assessment.empirical
    return (assessment.verdict, assessment.reason, assessment.p_value, assessment.explanation,
            None if empirical is None else repr(empirical))


def check_reachable_verdicts(claim: Claim) -> None:
    for profile in PROFILES:
        params = claim.params(profile)
        reachable = claim.reachable_verdicts(params)
        if reachable is None:
            _fail(claim, "reachable_verdicts", "which verdicts its design can reach is not "
                  "declared (Claim.reachable_verdicts)")
        assert reachable is not None
        if not {Verdict.CONFIRMED, Verdict.REFUTED} & set(reachable) and (
                claim.not_run(params) is None):
            _fail(claim, "reachable_verdicts", f"at {profile} it can reach neither "
                  f"'confirmed' nor 'refuted', yet it runs there")


CHECKS: dict[str, Check] = {
    "declarations": check_declarations,
    "profiles": check_profiles,
    "typed_params": check_typed_params,
    "space": check_space,
    "deterministic_specs": check_deterministic_specs,
    "unique_run_keys": check_unique_run_keys,
    "grouped_specs": check_grouped_specs,
    "negative_control": check_negative_control,
    "grouping_stable": check_grouping_stable,
    "reachable_verdicts": check_reachable_verdicts,
}
"""Every item of the contract, by name, in the order they are run."""


def contract_checks() -> dict[str, Check]:
    """The contract's checks by item name (module docstring)."""
    return dict(CHECKS)


def check_claim(claim: Claim, expected_failures: Mapping[str, str] | None = None) -> None:
    """Run ``claim`` through every contract item; AssertionError naming each failure that is
    not in ``expected_failures`` (item -> why it fails today), and each expected failure that
    passes (so the list cannot go stale)."""
    expected = dict(expected_failures or {})
    unknown = sorted(expected.keys() - CHECKS.keys())
    if unknown:
        raise ValueError(f"unknown contract items {', '.join(unknown)}; accepted: "
                         f"{', '.join(CHECKS)}")
    problems = []
    for item, check in CHECKS.items():
        try:
            check(claim)
        except ContractError as exc:
            if item not in expected:
                problems.append(str(exc))
        else:
            if item in expected:
                problems.append(f"{claim.id} passes {item!r}, listed as an expected failure "
                                f"({expected[item]}): take it off the list")
    if problems:
        raise AssertionError("\n".join(problems))


def parametrize_with_claim_checks(claims: Sequence[Claim],
                                  expected_failures: Mapping[str, Mapping[str, str]]
                                  | None = None) -> Any:
    """A ``pytest.mark.parametrize`` over (claim, check) for every claim and contract item;
    ``expected_failures`` maps claim id -> item -> reason, and those cases are strict xfails
    (a case that starts passing fails the suite until it is taken off the list)."""
    expected = expected_failures or {}
    cases = []
    for claim in claims:
        for item, check in CHECKS.items():
            reason = expected.get(claim.id, {}).get(item)
            marks = [pytest.mark.xfail(reason=reason, strict=True, raises=ContractError)] \
                if reason else []
            cases.append(pytest.param(claim, check, id=f"{claim.id}-{item}", marks=marks))
    return pytest.mark.parametrize(("claim", "check"), cases)
