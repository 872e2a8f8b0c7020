"""Row norms and unit rows of candidate matrices, exact for rows whose squares would overflow or
underflow, with the typed errors for NaN, inf and zero rows."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .array_checks import raise_non_finite
from .errors import ZeroVectorError

__all__ = ["SAFE_NORMS", "row_dots", "row_norms", "scaled_unit", "unit_copy", "unit_rows"]

FloatArray = NDArray[np.float64]


def row_dots(arr: NDArray[np.floating[Any]]) -> NDArray[np.floating[Any]]:
    """``sum(arr * arr, axis=-1)``: ``np.vecdot`` (numpy >= 2, BLAS dot per row) when present."""
    vecdot = getattr(np, "vecdot", None)
    if vecdot is not None:
        return np.asarray(vecdot(arr, arr))
    return np.asarray(np.einsum("...i,...i->...", arr, arr))


def row_norms(
    arr: NDArray[np.floating[Any]], name: str, squares: NDArray[np.floating[Any]] | None = None
) -> FloatArray:
    """Euclidean norms (float64) of the rows of ``arr`` (or of a 1-D ``arr``), validating as it goes.

    NaN/inf anywhere in a row makes its squared norm non-finite, so one pass over
    the data both checks finiteness and measures the rows; only then is the exact
    position of a bad value looked up, and rows whose squares overflow or underflow
    are measured again after scaling by their largest entry. ``squares``, when
    given, are the rows' squared norms already computed in ``arr``'s dtype.
    """
    if squares is None:
        with np.errstate(over="ignore", under="ignore"):  # handled below, not worth a warning
            squares = np.dot(arr, arr) if arr.ndim == 1 else row_dots(arr)
    norms = np.sqrt(np.asarray(squares, dtype=np.float64))
    tiny = np.finfo(arr.dtype).tiny
    if norms.min() > tiny and np.isfinite(norms.max()):  # NaN fails the first test
        return norms
    # Some row is non-finite, zero, or its square over/underflowed.
    raise_non_finite(arr, name)
    scale = np.max(np.abs(arr), axis=-1).astype(np.float64)
    safe = np.where(scale > 0.0, scale, 1.0)
    rescaled = np.asarray(arr, dtype=np.float64) / np.asarray(safe)[..., None]
    with np.errstate(over="ignore"):  # a norm beyond the float range is inf: see scaled_unit
        norms = np.where(scale > 0.0, scale * np.linalg.norm(rescaled, axis=-1), 0.0)
    zero = np.atleast_1d(norms <= 0.0)
    if np.any(zero):
        loc = f" (row {int(np.argmax(zero))})" if arr.ndim == 2 else ""
        raise ZeroVectorError(f"{name} contains a zero vector{loc}; cosine similarity is undefined")
    return np.asarray(norms, dtype=np.float64)


#: (lowest, highest) row norm whose pairwise products stay clear of float underflow and
#: overflow, for float64 (index 0) and float32 (index 1) candidates.
SAFE_NORMS = tuple(
    (2.0 * math.sqrt(float(np.finfo(t).tiny)), 0.5 * math.sqrt(float(np.finfo(t).max)))
    for t in (np.float64, np.float32)
)


def scaled_unit(arr: NDArray[np.floating[Any]]) -> FloatArray:
    """Unit-length float64 copies of the rows of ``arr`` (or of a 1-D ``arr``), no zero rows.

    Each row is divided by its largest magnitude before its norm is taken, so rows
    whose norm is beyond the float range (entries near ``1e308``) or whose squares
    underflow (subnormal entries) come out exact, not as zeros or infs.
    """
    rows = np.array(arr, dtype=np.float64, copy=True)
    rows /= np.max(np.abs(rows), axis=-1, keepdims=True)
    rows /= np.linalg.norm(rows, axis=-1, keepdims=True)
    return rows


def unit_rows(arr: NDArray[np.floating[Any]], name: str) -> FloatArray:
    """Unit-length float64 copies of the rows of the 2-D ``arr``.

    Raises:
        NonFiniteInputError: NaN or inf in ``arr``.
        ZeroVectorError: a zero row.
    """
    norms = row_norms(arr, name)
    low, high = SAFE_NORMS[0]
    if norms.min() > low and norms.max() < high:
        out: FloatArray = np.asarray(arr, dtype=np.float64) / norms[:, None]
        return out
    return scaled_unit(arr)


def unit_copy(arr: NDArray[np.floating[Any]]) -> NDArray[np.floating[Any]]:
    """Read-only unit rows of ``arr`` (see :func:`scaled_unit`), in ``arr``'s dtype."""
    unit: NDArray[np.floating[Any]] = scaled_unit(arr).astype(arr.dtype, copy=False)
    unit.flags.writeable = False
    return unit
