"""Input checks and normalisation shared by every selection method."""

from __future__ import annotations

import math

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


class PreparedInputs:
    """Validated inputs of one selection call, in float64.

    The caller's candidate matrix is not copied when it is already float64: it is
    held as a read-only view (``vectors``) together with the inverse row norms, so
    cosine similarities are formed as scaled dot products and the (n, d) matrix is
    never rewritten. Unit-normalised rows (``candidates``) are built on first use
    only, for the methods that need them.

    Attributes:
        query: unit query vector, shape (d,).
        vectors: candidate vectors as given (read-only float64), shape (n, d).
        inv_norms: ``1 / ||vectors[i]||``, shape (n,).
        relevance: relevance of each candidate to the query, shape (n,). Cosine
            similarity unless the caller supplied its own scores.
        k: number of picks that will actually be returned, ``min(k, n)``.
    """

    __slots__ = ("query", "vectors", "inv_norms", "relevance", "k", "_unit")

    def __init__(
        self,
        query: FloatArray,
        vectors: FloatArray,
        inv_norms: FloatArray,
        relevance: FloatArray,
        k: int,
    ) -> None:
        self.query = query
        self.vectors = vectors
        self.inv_norms = inv_norms
        self.relevance = relevance
        self.k = k
        self._unit: FloatArray | None = None

    @property
    def n(self) -> int:
        """Number of candidates."""
        return int(self.vectors.shape[0])

    @property
    def candidates(self) -> FloatArray:
        """Unit-normalised candidate rows, shape (n, d) (computed once, on first use)."""
        if self._unit is None:
            unit = self.vectors * self.inv_norms[:, None]
            unit.flags.writeable = False
            self._unit = unit
        return self._unit

    def cosine_rows(self, indices: NDArray[np.int64] | list[int]) -> FloatArray:
        """Cosine similarity of every candidate to each of ``indices``, shape (len(indices), n)."""
        idx = np.asarray(indices, dtype=np.int64)
        block = self.vectors[idx] @ self.vectors.T
        block *= self.inv_norms[idx][:, None]
        block *= self.inv_norms[None, :]
        return np.asarray(block, dtype=np.float64)


def _as_float_array(value: ArrayLike, name: str, ndim: int) -> FloatArray:
    try:
        arr = np.array(value, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise DimensionMismatchError(f"{name} must be a numeric array; got {type(value).__name__}") from exc
    if arr.ndim != ndim:
        raise DimensionMismatchError(
            f"{name} must have {ndim} dimension(s); got shape {arr.shape}"
        )
    _raise_non_finite(arr, name)
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


def _raise_non_finite(arr: FloatArray, name: str) -> None:
    finite = np.isfinite(arr)
    if not np.all(finite):
        bad = np.argwhere(~finite)[0].tolist()
        raise NonFiniteInputError(f"{name} contains NaN or inf (first at index {bad})")


def _row_norms(arr: FloatArray, name: str) -> FloatArray:
    """Euclidean norms of the rows of ``arr`` (or of a 1-D ``arr``), validating as it goes.

    NaN/inf anywhere in a row makes its squared norm non-finite, so one pass over
    the data both checks finiteness and measures the rows; only then is the exact
    position of a bad value looked up (or huge-but-finite rows rescaled).
    """
    norms = np.sqrt(np.einsum("...i,...i->...", arr, arr))
    if not np.all(np.isfinite(norms)):
        _raise_non_finite(arr, name)
        scale = np.max(np.abs(arr), axis=-1)  # finite but overflowing: rescale first
        norms = scale * np.linalg.norm(arr / scale[..., None], axis=-1)
    zero = np.atleast_1d(norms <= np.finfo(np.float64).tiny)
    if np.any(zero):
        loc = f" (row {int(np.argmax(zero))})" if arr.ndim == 2 else ""
        raise ZeroVectorError(f"{name} contains a zero vector{loc}; cosine similarity is undefined")
    return np.asarray(norms, dtype=np.float64)


def _read_only_matrix(value: ArrayLike, name: str) -> FloatArray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DimensionMismatchError(f"{name} must be a numeric array; got {type(value).__name__}") from exc
    if arr.ndim != 2:
        raise DimensionMismatchError(f"{name} must have 2 dimension(s); got shape {arr.shape}")
    view: FloatArray = arr.view()
    view.flags.writeable = False  # never write through to the caller's array
    return view


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
    cand = _read_only_matrix(candidates, "candidates")
    if cand.shape[0] == 0:
        raise EmptyCandidatesError("candidates is empty (shape (0, d)); need at least one candidate")
    q = _as_float_array(query, "query", 1)
    if q.shape[0] != cand.shape[1]:
        raise DimensionMismatchError(
            f"query has dimension {q.shape[0]} but candidates have dimension {cand.shape[1]}"
        )
    q = q / _row_norms(q, "query")
    inv_norms = 1.0 / _row_norms(cand, "candidates")
    if relevance is None:
        rel = (cand @ q) * inv_norms
    else:
        rel = _as_float_array(relevance, "relevance", 1)
        if rel.shape[0] != cand.shape[0]:
            raise DimensionMismatchError(
                f"relevance has {rel.shape[0]} entries but there are {cand.shape[0]} candidates"
            )
    return PreparedInputs(
        query=q, vectors=cand, inv_norms=inv_norms, relevance=rel, k=min(k_int, cand.shape[0])
    )
