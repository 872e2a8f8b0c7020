"""Fixtures for the LlamaIndex face tests."""

from __future__ import annotations

import pytest
from li_fakes import KeyedEmbedding


@pytest.fixture
def keyed_embedding() -> KeyedEmbedding:
    return KeyedEmbedding()
