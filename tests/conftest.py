"""Test-wide settings.

``HYPOTHESIS_PROFILE=ci`` (set by ``.ci/run``) makes the property tests derandomized:
the same examples on every CI run, so a red build always reproduces. Local runs keep
hypothesis' random exploration (e.g. ``pytest --hypothesis-seed=$RANDOM``).
"""

from __future__ import annotations

import os
import threading
import types
from collections.abc import Iterator

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def another_thread() -> Iterator[threading.Thread]:
    """A second Python thread, parked for the test's length: work that
    ``diverse_core.gil_blocks.work_blocks`` splits only while other threads may wait for the GIL is split."""
    stop = threading.Event()
    parked = threading.Thread(target=stop.wait, name="parked-for-test", daemon=True)
    parked.start()
    yield parked
    stop.set()
    parked.join(5)


@pytest.fixture
def alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """``diverse_core.gil_blocks`` sees one Python thread (whatever else the test run has started)."""
    import diverse_core.gil_blocks as gil_blocks

    monkeypatch.setattr(gil_blocks, "threading", types.SimpleNamespace(active_count=lambda: 1))


@pytest.fixture(params=["alone", "another_thread"])
def threads(request: pytest.FixtureRequest) -> str:
    """Run the test once as the only Python thread and once beside a parked one (both routes of
    ``work_blocks``)."""
    request.getfixturevalue(request.param)
    return str(request.param)


@pytest.fixture
def resolved_methods(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the methods whose parameters were resolved (``MethodSpec.resolve_params``), in order."""
    from diverse_core.registry import MethodSpec

    calls: list[str] = []
    original = MethodSpec.resolve_params

    def counting(self: MethodSpec, params: dict[str, object], **how: object) -> dict[str, object]:
        calls.append(self.name)
        return original(self, params, **how)  # type: ignore[arg-type]

    monkeypatch.setattr(MethodSpec, "resolve_params", counting)
    return calls
