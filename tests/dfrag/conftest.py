"""Small synthetic inputs for the DF-RAG tests (the scripted fakes are in dfrag_fakes.py)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def pool() -> tuple[list[str], np.ndarray, np.ndarray]:
    """12 clustered candidates: the λ sweep yields several distinct sets."""
    rng = np.random.default_rng(7)
    centers = rng.normal(size=(4, 16))
    cands = np.repeat(centers, 3, axis=0) + 0.25 * rng.normal(size=(12, 16))
    query = centers[0] + 0.6 * centers[1] + 0.1 * rng.normal(size=16)
    texts = [f"chunk {i}" for i in range(12)]
    return texts, query, cands
