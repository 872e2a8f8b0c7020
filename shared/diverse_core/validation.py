"""Input checks and normalisation shared by every selection method."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import (
    DimensionMismatchError,
    EmptyCandidatesError,
    InvalidParameterError,
    NonFiniteInputError,
    ZeroVectorError,
)

__all__ = [
    "PreparedInputs",
    "prepare_inputs",
    "check_k",
    "check_unit_interval",
    "check_positive",
    "check_values",
]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class PreparedInputs:
    """Validated, unit-normalised inputs in float64 (copies; the caller's arrays are untouched).

    Attributes:
        query: unit query vector, shape (d,).
        candidates: unit candidate vectors, shape (n, d).
        relevance: relevance of each candidate to the query, shape (n,). Cosine
            similarity unless the caller supplied its own scores.
        k: number of picks that will actually be returned, ``min(k, n)``.
    """

    query: FloatArray
    candidates: FloatArray
    relevance: FloatArray
    k: int


def _as_float_array(value: ArrayLike, name: str, ndim: int) -> FloatArray:
    try:
        arr = np.array(value, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise DimensionMismatchError(f"{name} must be a numeric array; got {type(value).__name__}") from exc
    if arr.ndim != ndim:
        raise DimensionMismatchError(
            f"{name} must have {ndim} dimension(s); got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0].tolist()
        raise NonFiniteInputError(f"{name} contains NaN or inf (first at index {bad})")
    return arr


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


def check_values(values: ArrayLike, name: str) -> FloatArray:
    """Validate a 1-D, non-empty grid of parameter values (range checks are the caller's)."""
    arr = np.array(values, dtype=np.float64, copy=True).reshape(-1)
    if arr.size == 0:
        raise InvalidParameterError(f"{name} must contain at least one value; got {name}={values!r}")
    if not np.all(np.isfinite(arr)):
        raise InvalidParameterError(f"{name} must be finite; got {name}={values!r}")
    return arr


def _unit_rows(arr: FloatArray, name: str) -> FloatArray:
    """Normalise the rows of ``arr`` in place (``arr`` is always a private copy)."""
    norms = np.sqrt(np.einsum("...i,...i->...", arr, arr))[..., None]
    zero = norms[..., 0] <= np.finfo(np.float64).tiny
    if np.any(zero):
        where = np.argwhere(np.atleast_1d(zero))[0].tolist()
        loc = f" (row {where[0]})" if arr.ndim == 2 else ""
        raise ZeroVectorError(f"{name} contains a zero vector{loc}; cosine similarity is undefined")
    arr /= norms
    return arr


def prepare_inputs(
    query: ArrayLike,
    candidates: ArrayLike,
    k: object,
    relevance: ArrayLike | None = None,
) -> PreparedInputs:
    """Validate and normalise the inputs of a selection call.

    Args:
        query: query embedding, shape (d,).
        candidates: candidate embeddings, shape (n, d), n ≥ 1.
        k: number of items wanted (k > n is allowed and returns all n).
        relevance: optional precomputed relevance of each candidate, shape (n,);
            when omitted, cosine similarity to the query is used.

    Raises:
        EmptyCandidatesError, DimensionMismatchError, NonFiniteInputError,
        ZeroVectorError, InvalidParameterError.
    """
    k_int = check_k(k)
    cand = _as_float_array(candidates, "candidates", 2)
    if cand.shape[0] == 0:
        raise EmptyCandidatesError("candidates is empty (shape (0, d)); need at least one candidate")
    q = _as_float_array(query, "query", 1)
    if q.shape[0] != cand.shape[1]:
        raise DimensionMismatchError(
            f"query has dimension {q.shape[0]} but candidates have dimension {cand.shape[1]}"
        )
    q = _unit_rows(q, "query")
    cand = _unit_rows(cand, "candidates")
    if relevance is None:
        rel = cand @ q
    else:
        rel = _as_float_array(relevance, "relevance", 1)
        if rel.shape[0] != cand.shape[0]:
            raise DimensionMismatchError(
                f"relevance has {rel.shape[0]} entries but there are {cand.shape[0]} candidates"
            )
    return PreparedInputs(query=q, candidates=cand, relevance=rel, k=min(k_int, cand.shape[0]))
