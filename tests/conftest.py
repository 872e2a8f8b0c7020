"""Test-wide settings.

``HYPOTHESIS_PROFILE=ci`` (set by ``.ci/run``) makes the property tests derandomized:
the same examples on every CI run, so a red build always reproduces. Local runs keep
hypothesis' random exploration (e.g. ``pytest --hypothesis-seed=$RANDOM``).
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
