"""The run keys of every built-in claim at every profile, against a committed snapshot
(``tests/golden/run_keys.json``).

A stored run is reused only under its own key (docs/run-store.md#run-identity), and the keys of
the shipped archives are hours of training. A refactor that moves, renames or retypes a claim
must leave each claim's first-stage runs (``Claim.checked_specs`` at each profile's defaults,
the runs ``verify --dry-run`` plans on an empty store) exactly as they were, in the same
order: a changed key re-trains, a reordered list would make an ``assess`` that reads its runs
by position read the wrong ones. A deliberate change (new runs, a bumped numerics version)
regenerates the snapshot with ``pytest tests/test_run_key_snapshot.py --update-golden``, so it
is always a reviewed diff of ``tests/golden/``. Staged claims' later stages depend on results;
at full they are checked by replaying the shipped archives (``verify --profile full
--dry-run`` plans no run to train).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnverify.compare.claim import PROFILES
from attnverify.compare.registry import select

SNAPSHOT = Path(__file__).parent / "golden" / "run_keys.json"


def current_keys() -> dict[str, dict[str, list[str]]]:
    """Claim id -> profile -> the keys of its first-stage runs, in ``specs`` order."""
    return {claim.id: {profile: [spec.key() for spec in
                                 claim.checked_specs(claim.params(profile))]
                       for profile in PROFILES}
            for claim in select() if type(claim).__module__.startswith("attnverify.")}


def test_run_keys_match_the_snapshot(request):
    keys = current_keys()
    if request.config.getoption("--update-golden"):
        SNAPSHOT.write_text(json.dumps(keys, indent=1) + "\n")
        pytest.skip("run-key snapshot rewritten; review its diff")
    stored = json.loads(SNAPSHOT.read_text())
    assert sorted(keys) == sorted(stored), "claims added or removed: regenerate the snapshot"
    changed = [f"{claim} at {profile}" for claim, by_profile in stored.items()
               for profile, want in by_profile.items() if keys[claim][profile] != want]
    assert not changed, (f"run keys changed for {', '.join(changed)}: a moved or retyped claim "
                         f"must keep its runs (regenerate with --update-golden only for a "
                         f"deliberate change)")


def test_the_snapshot_can_fail():
    """Negative control: a claim whose profile asks for one more seed has other keys."""
    claim = next(c for c in select() if c.id == "snell.permutation_is_hard")
    params = claim.params("smoke")
    more = params | {"seeds": params["seeds"] + 1}
    stored = json.loads(SNAPSHOT.read_text())[claim.id]["smoke"]
    assert [s.key() for s in claim.checked_specs(more)] != stored
