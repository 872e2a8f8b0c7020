"""Input checks and normalisation shared by every selection method.

This module prepares the arrays of one selection call (:func:`prepare_inputs`,
:class:`PreparedInputs`, the products with the candidate matrix). The checks it builds on
live by job in :mod:`~diverse_core.array_checks` (array-like input and its typed errors),
:mod:`~diverse_core.param_checks` (scalar parameters) and :mod:`~diverse_core.row_norms`
(norms and unit rows); their public names stay importable from here.
"""

from __future__ import annotations

import math
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
    "product_with_vector",
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
            unit = self.candidates_unkept()
            unit.flags.writeable = False
            self._unit = unit
        return self._unit

    def candidates_unkept(self) -> FloatArray:
        """:attr:`candidates` without keeping a new copy: the cached rows when computed before, else fresh ones
        (a large array that is freed as soon as the caller drops it, so that the call's later arrays can
        take its place in memory instead of growing the heap)."""
        if self._unit is not None:
            return self._unit
        # one pass: each entry read in float64, times its row's inverse norm
        unit: FloatArray = np.multiply(self.vectors, self.inv_norms[:, None], dtype=np.float64)
        return unit

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


#: Largest row chunk of the stacked product in :func:`product_with_rows`.
_CHUNK = 128
#: Chunks are also kept to at most this many output entries (rows x count) and this
#: many multiply-adds (rows x count x d): past either, OpenBLAS took a slower path on
#: the project's benchmark machine (e.g. 10 rows at d = 768: 377 us in chunks of 125
#: rows, 160 us in chunks of 100, n = 1000, float32).
_CHUNK_ENTRIES = 800
_CHUNK_WORK = 800_000
#: Below this chunk size (more than about 25 rows) one plain product is as fast.
_CHUNK_MIN = 32


def product_with_rows(
    matrix: NDArray[np.floating[Any]], rows: NDArray[np.floating[Any]]
) -> NDArray[np.floating[Any]]:
    """``matrix @ rows.T`` (shape (n, m)) for a few ``rows``, fast for tall matrices.

    For a tall matrix and a handful of rows, one stacked product over equal chunks
    of at most :data:`_CHUNK` rows (fewer for more rows, see :data:`_CHUNK_ENTRIES`)
    ran markedly faster than one plain matrix product on the project's benchmark
    machine (OpenBLAS handles such small blocks without repacking the tall operand);
    the values are the same up to float rounding. The chunks are sized so that they
    cover ``n`` with fewer than one chunk count of rows left over (a separate small
    product). A single row is a matrix-vector product (:func:`product_with_vector`).
    """
    if rows.shape[0] == 1:
        return product_with_vector(matrix, rows[0])[:, None]
    n, d = matrix.shape
    count = rows.shape[0]
    chunk = min(_CHUNK, _CHUNK_ENTRIES // count, _CHUNK_WORK // (count * d))
    if n < 4 * _CHUNK or chunk < _CHUNK_MIN or not matrix.flags.c_contiguous:
        return np.asarray(matrix @ rows.T)
    chunks = -(-n // chunk)
    size = n // chunks
    full = size * chunks
    out = np.empty((n, rows.shape[0]), dtype=np.result_type(matrix, rows))
    stacked = out[:full].reshape(chunks, size, rows.shape[0])
    np.matmul(matrix[:full].reshape(chunks, size, d), rows.T, out=stacked)
    if full < n:
        np.matmul(matrix[full:], rows.T, out=out[full:])
    return out


#: Rows per block of :func:`_squares_and_products`: a block (768 KiB at d = 768,
#: float32) stays in cache between its two passes.
_FUSED_ROWS = 256
#: Candidate matrices larger than this (bytes) take the blocked pass; smaller ones
#: stay in the CPU cache between two whole passes anyway (no gain was measured at
#: 1.5 MiB, about 20% at 3 MiB and more).
_FUSED_MIN_BYTES = 2 * 2**20


def _blocked(matrix: NDArray[np.floating[Any]]) -> bool:
    """Whether ``matrix`` is read block by block (large and C-contiguous)."""
    return matrix.nbytes > _FUSED_MIN_BYTES and bool(matrix.flags.c_contiguous)


def _squares_and_products(
    cand: NDArray[np.floating[Any]], q: NDArray[np.floating[Any]]
) -> tuple[NDArray[np.floating[Any]], NDArray[np.floating[Any]]]:
    """Squared row norms and ``cand @ q`` (both in ``cand``'s dtype), block by block.

    The two are separate passes over the candidates; taking them one row block at
    a time reads each block from memory once instead of twice, which is most of
    what the input checks of a large pool cost.
    """
    n = cand.shape[0]
    squares = np.empty(n, dtype=cand.dtype)
    raw = np.empty(n, dtype=cand.dtype)
    # NaN/inf input or over/underflow: judged by row_norms afterwards (which raises
    # or re-measures), so no floating-point warning here.
    with np.errstate(all="ignore"):
        for start in range(0, n, _FUSED_ROWS):
            block = cand[start : start + _FUSED_ROWS]
            squares[start : start + _FUSED_ROWS] = row_dots(block)
            np.matmul(block, q, out=raw[start : start + _FUSED_ROWS])
    return squares, raw


def product_with_vector(
    matrix: NDArray[np.floating[Any]], vector: NDArray[np.floating[Any]]
) -> NDArray[np.floating[Any]]:
    """``matrix @ vector`` (shape (n,)), ordered to find the matrix in cache.

    Matrices large enough for the blocked input pass (:func:`prepare_inputs` reads
    them front to back, block by block) are multiplied block by block from the last
    block back: the blocks read last are the ones still in the CPU cache. The values
    are those of one product up to float rounding.
    """
    n = matrix.shape[0]
    if not _blocked(matrix):
        return np.asarray(matrix @ vector)
    out = np.empty(n, dtype=np.result_type(matrix, vector))
    for start in range(((n - 1) // _FUSED_ROWS) * _FUSED_ROWS, -1, -_FUSED_ROWS):
        np.matmul(matrix[start : start + _FUSED_ROWS], vector, out=out[start : start + _FUSED_ROWS])
    return out


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


#: Pools up to this size (bytes of the candidate matrix) try :func:`_prepare_fast` first.
_FAST_MAX_BYTES = _FUSED_MIN_BYTES
_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _prepare_fast(query: object, candidates: object, k_int: int) -> PreparedInputs | None:
    """The validated inputs of a well-formed call in a few numpy passes, or ``None``.

    Taken for a float32/float64 candidate ndarray (2-D, not empty, at most
    :data:`_FAST_MAX_BYTES`) and a float query ndarray of the same dimension, with no
    caller relevance. The row norms are the check: NaN or inf anywhere in a row makes
    its squared norm NaN or inf, a zero row makes it 0, and entries whose products would
    overflow or underflow push it outside :data:`SAFE_NORMS`; any of these (or any other
    input) returns ``None`` and the full checks of :func:`prepare_inputs` run and raise
    the same typed errors as before. The values computed are those of the full path,
    operation for operation (same dtypes, same order), so a call gives the same picks
    either way.
    """
    if type(candidates) is not np.ndarray or type(query) is not np.ndarray:
        return None
    if candidates.dtype not in _FLOAT_DTYPES or candidates.ndim != 2 or candidates.nbytes > _FAST_MAX_BYTES:
        return None
    n, d = candidates.shape
    if n == 0 or d == 0 or query.ndim != 1 or query.shape[0] != d or query.dtype.kind != "f":
        return None
    q = np.array(query, dtype=np.float64)
    with np.errstate(all="ignore"):  # NaN/inf/overflow: judged below, then the full checks
        q_norm = math.sqrt(q @ q)  # BLAS ddot as np.dot, without releasing the GIL; NaN/inf judged below
        norms = np.sqrt(np.asarray(row_dots(candidates), dtype=np.float64))
    low, high = SAFE_NORMS[0]
    if not low < q_norm < high:  # NaN fails too
        return None
    low, high = SAFE_NORMS[candidates.dtype == np.float32]
    if not (low < norms.min() and norms.max() < high):
        return None
    q /= q_norm
    unit_q = q.astype(candidates.dtype, copy=False)
    view = candidates.view()
    view.setflags(write=False)  # never write through to the caller's array
    inv_norms = 1.0 / norms
    rel = np.asarray(view @ unit_q, dtype=np.float64)
    rel *= inv_norms
    return PreparedInputs(query=unit_q, vectors=view, inv_norms=inv_norms, relevance=rel, k=min(k_int, n))


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
    if relevance is None and blank is None:
        fast = _prepare_fast(query, candidates, k_int)
        if fast is not None:
            return fast
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
    raw: NDArray[np.floating[Any]] | None = None
    squares: NDArray[np.floating[Any]] | None = None
    if rel is None and _blocked(cand):
        squares, raw = _squares_and_products(cand, q)
    if blank is not None and blank.shape[0] != cand.shape[0]:
        blank = None  # the method reports the length mismatch
    screen = None
    if drop:
        if squares is None:  # measured once, for the screen and the norms alike
            with np.errstate(all="ignore"):
                squares = row_dots(cand)
        screen = screen_rows(cand, squares, blank)
    if screen is not None:
        cand = _read_only_matrix(cand[screen.kept], "candidates")
        rel = None if rel is None else rel[screen.kept]
        raw = None if raw is None else raw[screen.kept]
        squares = None if squares is None else squares[screen.kept]
    norms = row_norms(cand, "candidates", squares)
    limits = SAFE_NORMS[cand.dtype == np.float32]
    if norms.min() > limits[0] and norms.max() < limits[1]:
        inv_norms = 1.0 / norms
    else:
        # Products of such rows would overflow or lose their digits: work on unit rows.
        cand = unit_copy(cand)
        inv_norms = np.ones(cand.shape[0])
        raw = None
    if rel is None:
        rel = np.asarray(cand @ q if raw is None else raw, dtype=np.float64)
        rel *= inv_norms
    prep = PreparedInputs(query=q, vectors=cand, inv_norms=inv_norms, relevance=rel, k=min(k_int, cand.shape[0]))
    prep.screen = screen
    return prep
