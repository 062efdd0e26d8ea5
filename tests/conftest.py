"""Hypothesis profiles and shared fixtures.

Profiles: ``ci`` (deterministic, no deadline; loaded automatically when ``CI`` is set), ``dev``
(the default) and ``thorough`` (many examples). Choose one with ``HYPOTHESIS_PROFILE=thorough``.
"""

from __future__ import annotations

import os

import pytest
import torch
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=30, derandomize=True, deadline=None,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None)
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(autouse=True)
def _one_thread():
    """Tests run like workers: one torch thread (results then match the executor exactly)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(autouse=True)
def _plain_terminal_output(monkeypatch):
    """The CLI's output as on a pipe: no verdict colours, whatever the CI sets (FORCE_COLOR)."""
    monkeypatch.delenv("FORCE_COLOR", raising=False)


@pytest.fixture
def store(tmp_path):
    from attnverify.empirics import RunStore

    return RunStore(tmp_path / "cache")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """No test touches the user's real cache."""
    monkeypatch.setenv("ATTNVERIFY_CACHE", str(tmp_path / "default-cache"))


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/ from the current code (review the diff: it "
                          "is a change of numerics)")
