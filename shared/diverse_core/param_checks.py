"""Checks of scalar parameters (``k``, weights in [0, 1], positive scales, grids of values, Rényi
orders): each returns the value normalised or raises :class:`InvalidParameterError` naming it."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .array_checks import REAL_KINDS, brief_repr
from .errors import InvalidParameterError

__all__ = [
    "ORDER_ONE_ATOL",
    "check_k",
    "check_non_negative",
    "check_positive",
    "check_renyi_order",
    "check_unit_interval",
    "check_values",
]

#: A Rényi order within this distance of 1 is order 1 (Shannon): the closed form
#: ``log(sum w^q) / (1 - q)`` is 0/0 there and its rounding error grows as ``1 / |1 - q|``.
ORDER_ONE_ATOL = 1e-12


def check_k(k: object, name: str = "k") -> int:
    """Return ``k`` as an int, or raise if it is not a positive integer."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or int(k) <= 0:
        raise InvalidParameterError(f"{name} must be a positive integer; got {name}={k!r}")
    return int(k)


def _check_finite_number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidParameterError(f"{name} must be a number; got {name}={value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise InvalidParameterError(f"{name} must be finite; got {name}={value!r}")
    return out


def check_unit_interval(value: object, name: str) -> float:
    """Return ``value`` as float, or raise if it is not in [0, 1]."""
    out = _check_finite_number(value, name)
    if not 0.0 <= out <= 1.0:
        raise InvalidParameterError(f"{name} must be in [0, 1]; got {name}={value!r}")
    return out


def check_positive(value: object, name: str) -> float:
    """Return ``value`` as float, or raise if it is not strictly positive."""
    out = _check_finite_number(value, name)
    if out <= 0.0:
        raise InvalidParameterError(f"{name} must be > 0; got {name}={value!r}")
    return out


def check_non_negative(value: object, name: str) -> float:
    """Return ``value`` as float, or raise if it is not a finite number ``>= 0``."""
    out = _check_finite_number(value, name)
    if out < 0.0:
        raise InvalidParameterError(f"{name} must be >= 0; got {name}={value!r}")
    return out


def check_values(values: object, name: str) -> NDArray[np.float64]:
    """Validate a non-empty grid of parameter values (range checks are the caller's).

    ``values`` must be a number or a sequence/array of real numbers (not bools, strings,
    dicts, generators or other objects); it is returned as a 1-D float64 copy.

    Raises:
        InvalidParameterError: anything else, an empty grid, NaN or inf.
    """
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(
            f"{name} must be a sequence of numbers; got {name}={brief_repr(values)}"
        ) from exc
    if arr.dtype.kind not in REAL_KINDS or arr.dtype.kind == "b":
        raise InvalidParameterError(
            f"{name} must be a sequence of numbers; got {name}={brief_repr(values)}"
            f" (dtype {arr.dtype})"
        )
    out = np.array(arr, dtype=np.float64, copy=True).reshape(-1)
    if out.size == 0:
        raise InvalidParameterError(
            f"{name} must contain at least one value; got {name}={brief_repr(values)}"
        )
    if not np.all(np.isfinite(out)):
        raise InvalidParameterError(f"{name} must be finite; got {name}={brief_repr(values)}")
    return out


def check_renyi_order(value: object, name: str = "order", *, allow_zero: bool = False) -> float:
    """A Rényi order: a number > 0 (``>= 0`` with ``allow_zero``) or ``math.inf``.

    Orders within :data:`ORDER_ONE_ATOL` of 1 are returned as exactly ``1.0`` (the
    Shannon limit), where the general formula would divide rounding noise by ``1 - q``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidParameterError(f"{name} must be a number; got {name}={value!r}")
    out = float(value)
    if math.isnan(out) or out < 0.0 or (out == 0.0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise InvalidParameterError(f"{name} must be {bound} (or math.inf); got {name}={value!r}")
    # (plus one rounding unit, so that a typed ``1 + 1e-12`` counts as within)
    return 1.0 if abs(out - 1.0) <= ORDER_ONE_ATOL + 2.0**-52 else out
