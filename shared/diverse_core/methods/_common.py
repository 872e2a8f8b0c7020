"""Helpers shared by the greedy selection methods."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["argmax_rows", "TIE_RTOL"]

#: Objective values within this relative distance of a row's maximum count as tied;
#: ties go to the lowest candidate index. This keeps picks stable against
#: last-bit rounding differences between a batched sweep and a single run.
TIE_RTOL = 1e-12


def argmax_rows(obj: NDArray[np.float64]) -> NDArray[np.int64]:
    """Row-wise argmax of ``obj`` (L, n) with tolerant, lowest-index tie-breaking.

    Entries equal to ``-inf`` are never chosen unless a whole row is ``-inf``.
    """
    best = obj.max(axis=1, keepdims=True)
    tol = TIE_RTOL * np.maximum(1.0, np.abs(best))
    near = obj >= best - tol
    return np.asarray(np.argmax(near, axis=1), dtype=np.int64)
