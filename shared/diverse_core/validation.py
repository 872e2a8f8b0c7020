"""Input checks and normalisation shared by every selection method.

This module prepares the arrays of one selection call (:func:`prepare_inputs`,
:class:`PreparedInputs`, the products with the candidate matrix). The checks it builds on
live by job in :mod:`~diverse_core.array_checks` (array-like input and its typed errors),
:mod:`~diverse_core.param_checks` (scalar parameters) and :mod:`~diverse_core.row_norms`
(norms and unit rows); their public names stay importable from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .array_checks import as_float_array, as_real_array, brief_repr
from .candidate_screen import Screen, blank_texts, check_on_bad, screen_rows
from .errors import DimensionMismatchError, EmptyCandidatesError, InvalidParameterError
from .param_checks import (
    ORDER_ONE_ATOL,
    check_k,
    check_non_negative,
    check_positive,
    check_renyi_order,
    check_unit_interval,
    check_values,
)
from .row_norms import SAFE_NORMS, row_dots, row_norms, scaled_unit, unit_copy, unit_rows

__all__ = [
    "PreparedInputs",
    "prepare_inputs",
    "as_real_array",
    "brief_repr",
    "unit_rows",
    "check_k",
    "check_unit_interval",
    "check_positive",
    "check_non_negative",
    "check_values",
    "check_renyi_order",
    "RELEVANCE_MAX",
    "ORDER_ONE_ATOL",
    "TIE_RTOL_FLOAT32",
    "product_with_rows",
    "row_dots",
    "TIE_RTOL_FLOAT64",
]

FloatArray = NDArray[np.float64]

#: Tie tolerance (relative) when the candidates are float64.
TIE_RTOL_FLOAT64 = 1e-12
#: Tie tolerance (relative) when the candidates are float32 and products run in float32.
TIE_RTOL_FLOAT32 = 1e-5
#: Largest accepted relevance magnitude. The methods take differences of relevance
#: values (range normalisation, marginal gains) and sums over the picks; within
#: ``±1e300`` those stay finite in float64 for any realistic ``k``, beyond it they
#: overflow to inf (duplicate picks, NaN scores).
RELEVANCE_MAX = 1e300
#: Relevance magnitudes above this make float32 work arrays (gMMR's objective) overflow
#: or lose every digit of the similarity terms: such calls work in float64.
_FLOAT32_RELEVANCE_MAX = 1e30


class PreparedInputs:
    """Validated inputs of one selection call.

    The caller's candidate matrix is not copied: float32 input stays float32 and
    every other real dtype is read as float64 (float32 input too when the caller's
    relevance exceeds ``1e30`` in magnitude, which float32 work arrays cannot hold).
    It is held as a read-only view (``vectors``) together with the inverse row norms,
    so cosine similarities are scaled dot products and the (n, d) matrix is never
    rewritten. Products with the matrix run in its own precision (float32 input: float32 BLAS, half the memory
    traffic); relevance and similarity columns are float64 (the gMMR sweep keeps its
    per-value work arrays in the working precision). Ties are judged at the working
    precision (:attr:`tie_rtol`).

    Attributes:
        query: unit query vector in the working precision, shape (d,).
        vectors: candidate vectors as given (read-only float32 or float64), shape (n, d);
            unit-normalised copies instead when some row's norm is so large or so small
            that products between rows would overflow or underflow (``inv_norms`` then 1).
        inv_norms: ``1 / ||vectors[i]||`` in float64, shape (n,).
        relevance: relevance of each candidate to the query in float64, shape (n,).
            Cosine similarity unless the caller supplied its own scores.
        k: number of picks that will actually be returned, ``min(k, n)``.
        tie_rtol: objective values closer than ``tie_rtol * max(1, |best|)`` to the
            best count as tied (``1e-12`` for float64 input, ``1e-5`` for float32,
            a margin far above the rounding of either precision).
        screen: ``None``, or (``on_bad="drop"``) the candidates left out: every array here
            then holds the kept rows only, and ``screen.kept`` maps their positions back to
            the caller's.
    """

    __slots__ = ("query", "vectors", "inv_norms", "relevance", "k", "tie_rtol", "screen", "_unit")

    def __init__(
        self,
        query: NDArray[np.floating[Any]],
        vectors: NDArray[np.floating[Any]],
        inv_norms: FloatArray,
        relevance: FloatArray,
        k: int,
    ) -> None:
        self.query = query
        self.vectors = vectors
        self.inv_norms = inv_norms
        self.relevance = relevance
        self.k = k
        self.tie_rtol = TIE_RTOL_FLOAT32 if vectors.dtype == np.float32 else TIE_RTOL_FLOAT64
        self.screen: Screen | None = None
        self._unit: FloatArray | None = None

    @property
    def n(self) -> int:
        """Number of candidates."""
        return int(self.vectors.shape[0])

    @property
    def candidates(self) -> FloatArray:
        """Unit-normalised candidate rows in float64, shape (n, d) (computed once, on first use)."""
        if self._unit is None:
            # one pass: each entry read in float64, times its row's inverse norm
            unit: FloatArray = np.multiply(self.vectors, self.inv_norms[:, None], dtype=np.float64)
            unit.flags.writeable = False
            self._unit = unit
        return self._unit

    def unit_rows(self, indices: NDArray[np.int64]) -> FloatArray:
        """Unit-normalised float64 copies of the rows ``indices``, shape (len(indices), d)."""
        idx = np.asarray(indices, dtype=np.int64)
        rows = np.asarray(self.vectors[idx], dtype=np.float64)
        rows *= self.inv_norms[idx][:, None]
        return rows

    def cosine_rows(self, indices: NDArray[np.int64] | list[int]) -> FloatArray:
        """Cosine similarity of every candidate to each of ``indices``, shape (len(indices), n).

        One product (:func:`product_with_rows`) in the working precision; scaled in
        float64.
        """
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        raw = product_with_rows(self.vectors, self.vectors[idx]).T
        # the float64 promotion happens in the first multiply
        block: FloatArray = np.multiply(raw, self.inv_norms, order="C")
        block *= self.inv_norms[idx][:, None]
        return block


def product_with_rows(
    matrix: NDArray[np.floating[Any]], rows: NDArray[np.floating[Any]]
) -> NDArray[np.floating[Any]]:
    """``matrix @ rows.T`` (shape (n, m)); a single row is a matrix-vector product."""
    if rows.shape[0] == 1:
        return np.asarray(matrix @ rows[0])[:, None]
    return np.asarray(matrix @ rows.T)


def _read_only_matrix(value: ArrayLike, name: str) -> NDArray[np.floating[Any]]:
    """The candidates as a read-only view: float32 kept as is, anything else as float64."""
    arr = as_real_array(value, name)
    if arr.dtype != np.float32:
        arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim != 2:
        raise DimensionMismatchError(f"{name} must have 2 dimension(s); got shape {arr.shape}")
    view: NDArray[np.floating[Any]] = arr.view()
    view.flags.writeable = False  # never write through to the caller's array
    return view


def _unit_query(query: ArrayLike, cand: NDArray[np.floating[Any]]) -> NDArray[np.floating[Any]]:
    """The query as a unit vector in the candidates' dtype, after the shape and value checks."""
    q = as_float_array(query, "query", 1)
    if q.shape[0] != cand.shape[1]:
        raise DimensionMismatchError(
            f"query has dimension {q.shape[0]} but candidates have dimension {cand.shape[1]}; "
            "were both made by the same embeddings model?"
        )
    norm = float(row_norms(q, "query"))
    low, high = SAFE_NORMS[0]
    if low < norm < high:
        q /= norm
    else:  # the norm is subnormal or beyond the float range
        q = scaled_unit(q)
    return q.astype(cand.dtype, copy=False)


def _relevance(value: ArrayLike, n: int) -> FloatArray:
    """Caller-supplied relevance as a float64 copy, checked for shape, finiteness and magnitude."""
    rel = as_float_array(value, "relevance", 1)
    if rel.shape[0] != n:
        raise DimensionMismatchError(
            f"relevance has {rel.shape[0]} entries but there are {n} candidates"
        )
    top = int(np.abs(rel).argmax())
    if abs(rel[top]) > RELEVANCE_MAX:
        raise InvalidParameterError(
            f"relevance values must lie within ±{RELEVANCE_MAX:g} (their differences and sums "
            f"must stay finite); got relevance[{top}]={float(rel[top])!r}"
        )
    return rel


def prepare_inputs(
    query: ArrayLike,
    candidates: ArrayLike,
    k: object,
    relevance: ArrayLike | None = None,
    *,
    texts: Sequence[Any] | None = None,
    on_bad: str = "raise",
) -> PreparedInputs:
    """Validate and normalise the inputs of a selection call.

    Args:
        query: query embedding, shape (d,).
        candidates: candidate embeddings, shape (n, d), n ≥ 1.
        k: number of items wanted (k > n is allowed and returns all n).
        relevance: optional precomputed relevance of each candidate, shape (n,);
            when omitted, cosine similarity to the query is used.
        texts: the candidates' texts, when the method reads them; with ``on_bad="drop"``
            an empty or blank one makes its candidate unusable.
        on_bad: ``"raise"`` (default here): a NaN, inf or zero candidate vector is a typed
            error. ``"drop"``: such candidates (and blank texts) are left out and the
            arrays hold the rest; :attr:`PreparedInputs.screen` says which and why. A bad
            query is an error either way, and so is a pool with no usable candidate.

    Raises:
        EmptyCandidatesError: no candidates.
        DimensionMismatchError: wrong shapes, ragged nesting, vectors of length 0.
        NonNumericInputError: strings, complex numbers or objects instead of real numbers.
        NonFiniteInputError: NaN or inf anywhere.
        ZeroVectorError: a zero query or candidate vector.
        InvalidParameterError: a bad ``k`` or ``on_bad``, or relevance beyond ``±RELEVANCE_MAX``.
    """
    k_int = check_k(k)
    drop = check_on_bad(on_bad) == "drop"
    blank = blank_texts(texts) if drop else None
    cand = _read_only_matrix(candidates, "candidates")
    if cand.shape[0] == 0:
        raise EmptyCandidatesError("candidates is empty (shape (0, d)); need at least one candidate")
    if cand.shape[1] == 0:
        raise DimensionMismatchError(
            f"candidates have dimension 0 (shape {cand.shape}); need vectors of length >= 1"
        )
    rel: FloatArray | None = None
    if relevance is not None:
        rel = _relevance(relevance, cand.shape[0])
        if cand.dtype == np.float32 and np.abs(rel).max() > _FLOAT32_RELEVANCE_MAX:
            # float32 work arrays cannot hold such relevance: the call works in float64
            cand = _read_only_matrix(cand.astype(np.float64), "candidates")
    q = _unit_query(query, cand)
    squares: NDArray[np.floating[Any]] | None = None
    screen = None
    if drop:
        if blank is not None and blank.shape[0] != cand.shape[0]:
            blank = None  # the method reports the length mismatch
        with np.errstate(all="ignore"):  # measured once, for the screen and the norms alike
            squares = row_dots(cand)
        screen = screen_rows(cand, squares, blank)
    if screen is not None:
        cand = _read_only_matrix(cand[screen.kept], "candidates")
        rel = None if rel is None else rel[screen.kept]
        squares = None if squares is None else squares[screen.kept]
    norms = row_norms(cand, "candidates", squares)
    limits = SAFE_NORMS[cand.dtype == np.float32]
    if norms.min() > limits[0] and norms.max() < limits[1]:
        inv_norms = 1.0 / norms
    else:
        # Products of such rows would overflow or lose their digits: work on unit rows.
        cand = unit_copy(cand)
        inv_norms = np.ones(cand.shape[0])
    if rel is None:
        rel = np.asarray(cand @ q, dtype=np.float64)
        rel *= inv_norms
    prep = PreparedInputs(query=q, vectors=cand, inv_norms=inv_norms, relevance=rel, k=min(k_int, cand.shape[0]))
    prep.screen = screen
    return prep
