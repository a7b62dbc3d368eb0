"""Suite-wide fixtures: every test leaves no actor running; Hypothesis profiles."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pykka
import pytest
from hypothesis import HealthCheck, settings

# One example budget for every property test instead of per-test counts. `dev` explores at
# random (a new seed each run); `ci` is derandomized, so CI always draws the same examples and
# `CI=true pytest tests/property` reproduces a CI failure locally. HYPOTHESIS_PROFILE overrides
# the choice (e.g. a long `dev` hunt with HYPOTHESIS_PROFILE=deep).
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("deep", max_examples=2_000, deadline=None)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


# A server keeps its handshake answers in the user's cache as well as its data dir
# (graphmem/kept_answer.py). Tests point that cache at a folder of their own, so a run never
# writes into the developer's ~/.cache nor reads answers another checkout kept there; servers
# spawned by the tests inherit it. tests/e2e/support.server_params gives each data dir its own.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="graphmem-tests-cache-")

_SUBPROCESS_DIRS = ("e2e", "compat")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests under tests/e2e and tests/compat drive real processes: `-m e2e` selects them,
    `-m "not e2e"` leaves the in-process suite."""
    tests_root = Path(__file__).parent
    for item in items:
        relative = (
            item.path.relative_to(tests_root) if item.path.is_relative_to(tests_root) else None
        )
        if relative is not None and relative.parts[0] in _SUBPROCESS_DIRS:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True)
def _stop_all_actors() -> Iterator[None]:
    yield
    pykka.ActorRegistry.stop_all(block=True, timeout=10)
