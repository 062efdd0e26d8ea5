"""The pytest plugin of the property-testing toolkit (entry point group ``pytest11``, loaded by
every pytest run where attnverify is installed; disable with ``-p no:attnverify``).

- ``attnverify_store`` (session): a run store in a temporary directory, shared by the whole
  session, so two tests that train the same RunSpec train it once; ``--attnverify-cache DIR``
  keeps it in ``DIR`` instead (a second session then reads the runs back).
- ``attnverify_executor`` (session): a local executor over that store, with
  ``--attnverify-workers N`` worker processes (default 1: one process, one torch thread, the
  same numbers as ``verify``'s workers).
- the marker ``trains`` for tests that train networks: a hypothesis test that carries it runs
  with :data:`TRAINS_SETTINGS` over the loaded profile (few examples, no deadline: one example
  trains for seconds), unless it sets its own ``@settings``. The same settings are registered
  as the hypothesis profile :data:`TRAINS_PROFILE` (``--hypothesis-profile attnverify-trains``
  applies them to every test).

Importing this module imports neither torch nor the claims: the fixtures load them on use.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, is_hypothesis_test, settings
from hypothesis.errors import InvalidArgument

if TYPE_CHECKING:
    from attnverify.empirics import Executor, RunStore

TRAINS_PROFILE = "attnverify-trains"
"""The name of the hypothesis profile of the tests that train."""
TRAINS_SETTINGS: dict[str, Any] = {
    "max_examples": 5,
    "deadline": None,
    "suppress_health_check": (HealthCheck.too_slow,),
}
"""What the ``trains`` marker sets: five examples (each trains), no deadline (training time
varies with the machine and with the store: a cached run reads back in milliseconds)."""

settings.register_profile(TRAINS_PROFILE, **TRAINS_SETTINGS)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("attnverify", "attnverify property testing")
    group.addoption("--attnverify-cache", metavar="DIR", default=None,
                    help="keep the attnverify_store fixture's runs in DIR (default: a "
                         "temporary directory of the session)")
    group.addoption("--attnverify-workers", metavar="N", type=int, default=1,
                    help="worker processes of the attnverify_executor fixture (default: 1)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"trains: the test trains networks (hypothesis tests run with the "
                   f"'{TRAINS_PROFILE}' settings: few examples, no deadline)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give the hypothesis tests marked ``trains`` :data:`TRAINS_SETTINGS` over the loaded
    profile, unless they carry their own ``@settings`` (hypothesis refuses a second one)."""
    loaded = settings.default
    suppressed = dict.fromkeys([*loaded.suppress_health_check,
                                *TRAINS_SETTINGS["suppress_health_check"]])
    trains = settings(loaded, **{**TRAINS_SETTINGS, "suppress_health_check": tuple(suppressed)})
    for item in items:
        test = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
        if item.get_closest_marker("trains") is None or not is_hypothesis_test(test):
            continue
        try:
            trains(test)
        except InvalidArgument:  # its own settings, or ours from a parametrized sibling
            continue


@pytest.fixture(scope="session")
def attnverify_store(request: pytest.FixtureRequest,
                     tmp_path_factory: pytest.TempPathFactory) -> RunStore:
    """A run store for the session (temporary unless ``--attnverify-cache`` is given)."""
    from attnverify.empirics import RunStore

    root = request.config.getoption("attnverify_cache")
    return RunStore(Path(root) if root else tmp_path_factory.mktemp("attnverify-store"))


@pytest.fixture(scope="session")
def attnverify_executor(request: pytest.FixtureRequest,
                        attnverify_store: RunStore) -> Iterator[Executor]:
    """A local executor over ``attnverify_store`` (``--attnverify-workers``, default 1)."""
    from attnverify.empirics import LocalExecutor

    workers = request.config.getoption("attnverify_workers")
    if workers < 1:
        raise pytest.UsageError(f"--attnverify-workers must be an integer >= 1; got {workers}")
    executor = LocalExecutor(attnverify_store, workers=workers, progress=False)
    yield executor
    executor.close()
