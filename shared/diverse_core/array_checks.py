"""Checks that turn array-like input into real-number arrays, and the typed errors (naming the
parameter and the offending value) they raise."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import (
    DimensionMismatchError,
    DiverseRAGError,
    NonFiniteInputError,
    NonNumericInputError,
)

__all__ = ["REAL_KINDS", "as_float_array", "as_real_array", "brief_repr", "raise_non_finite"]

#: dtype kinds read as real numbers: bool, signed and unsigned integers, floats.
REAL_KINDS = frozenset("biuf")


def brief_repr(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def as_real_array(
    value: ArrayLike, name: str, error: type[DiverseRAGError] | None = None
) -> NDArray[Any]:
    """``np.asarray(value)`` (no copy for an array), checked to hold real numbers.

    Raises:
        DimensionMismatchError: nested sequences of unequal lengths (ragged).
        NonNumericInputError: strings, complex numbers, objects (dtype kind not b/i/u/f).
        ``error`` instead of either, when given.
    """
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise (error or DimensionMismatchError)(
            f"{name} must be a numeric array of one shape (no ragged rows); "
            f"got {type(value).__name__}: {exc}"
        ) from exc
    if arr.dtype.kind not in REAL_KINDS:
        shown = "" if isinstance(value, np.ndarray) else f" ({name}={brief_repr(value)})"
        raise (error or NonNumericInputError)(
            f"{name} must hold real numbers; got {type(value).__name__} of dtype {arr.dtype}"
            f"{shown}"
        )
    return arr


def as_float_array(value: ArrayLike, name: str, ndim: int) -> NDArray[np.float64]:
    """A float64 copy of ``value`` with ``ndim`` dimensions and finite values, or a typed error."""
    arr = np.array(as_real_array(value, name), dtype=np.float64, copy=True)
    if arr.ndim != ndim:
        raise DimensionMismatchError(
            f"{name} must have {ndim} dimension(s); got shape {arr.shape}"
        )
    raise_non_finite(arr, name)
    return arr


def raise_non_finite(arr: NDArray[np.floating[Any]], name: str) -> None:
    """Raise :class:`NonFiniteInputError` naming the first NaN or inf of ``arr`` (and which it is), if any.

    An inf in a float32 array may be a finite value beyond float32's range (e.g. ``1e300``)
    that was read into it; the message says so.
    """
    finite = np.isfinite(arr)
    if not np.all(finite):
        at = tuple(np.argwhere(~finite)[0].tolist())
        value = float(arr[at])
        what = "NaN" if value != value else f"{value}"
        if what != "NaN" and arr.dtype == np.float32:
            what += " (or a value beyond float32's range, about 3.4e38, read as inf)"
        raise NonFiniteInputError(f"{name} contains {what} (first at index {list(at)})")
