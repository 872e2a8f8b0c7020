"""Test-wide settings.

``HYPOTHESIS_PROFILE=ci`` (set by ``.ci/run``) makes the property tests derandomized:
the same examples on every CI run, so a red build always reproduces. Local runs keep
hypothesis' random exploration (e.g. ``pytest --hypothesis-seed=$RANDOM``).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


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
