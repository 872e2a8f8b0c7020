"""Fixtures of the Vendi-RAG tests (the fakes live in ``vendi_fakes.py``)."""

from __future__ import annotations

import pytest
from vendi_fakes import CORPUS, CountingSource, hash_embed


@pytest.fixture
def source() -> CountingSource:
    return CountingSource(CORPUS, embedder=hash_embed)
