"""Random inputs shared by the adaptive-selector tests."""

from __future__ import annotations

import numpy as np
from diverse_core.adaptive import TextView

__all__ = ["random_view", "unit_rows"]


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` scaled to unit length."""
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def random_view(rng: np.random.Generator, n: int, n_terms: int, n_names: int) -> TextView:
    """A TextView of ``n`` candidates with random hit matrices (``n_terms``/``n_names`` may be 0)."""
    return TextView(
        terms=tuple(f"t{i}" for i in range(n_terms)),
        names=tuple(f"n{i}" for i in range(n_names)),
        term_hits=rng.random((n, n_terms)) < 0.4,
        name_hits=rng.random((n, n_names)) < 0.3,
        other_names=rng.random((n, int(rng.integers(1, 6)))) < 0.3,
    )
