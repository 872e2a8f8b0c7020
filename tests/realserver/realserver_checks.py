"""Skip-or-fail check for the real-server tests (imported by the tests as ``realserver_checks``).

A module of its own, not ``conftest``: several test folders have a ``conftest.py``, and
``from conftest import ...`` picks whichever pytest imported last.
"""

from __future__ import annotations

import os

import pytest
from llama_server import server_available

__all__ = ["require_server"]


def require_server() -> None:
    """Skip (or, in CI, fail) when the server cannot run here."""
    why = server_available()
    if why is None:
        return
    if os.environ.get("DIVERSE_RAG_REQUIRE_REAL_SERVER") == "1":
        pytest.fail(f"DIVERSE_RAG_REQUIRE_REAL_SERVER=1 but {why}")
    pytest.skip(why)
