"""Helpers shared by the greedy selection methods."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..validation import TIE_RTOL_FLOAT64, PreparedInputs, product_with_rows

__all__ = [
    "argmax_rows",
    "argmax_first",
    "TIE_RTOL",
    "SimilarityColumns",
    "StepColumns",
    "PickColumns",
    "cosine_block",
    "GRAM_MAX_N",
    "cosine_column",
    "gram_pays",
    "unit_working",
]

#: Objective values within this relative distance of a row's maximum count as tied
#: (float64 input; float32 input uses ``PreparedInputs.tie_rtol``); ties go to the
#: lowest candidate index. This keeps picks stable against last-bit rounding
#: differences between a batched sweep and a single run.
TIE_RTOL = TIE_RTOL_FLOAT64


def argmax_rows(
    obj: NDArray[np.floating[Any]], rtol: float = TIE_RTOL, scratch: NDArray[np.bool_] | None = None
) -> NDArray[np.int64]:
    """Row-wise argmax of ``obj`` (L, n) with tolerant, lowest-index tie-breaking.

    Entries equal to ``-inf`` are never chosen unless a whole row is ``-inf``.
    ``scratch``, a boolean array of ``obj``'s shape, saves an allocation per call.
    """
    top = obj.max(axis=1)
    floor = top - rtol * np.maximum(1.0, np.abs(top))
    picks: NDArray[np.int64] = np.greater_equal(obj, floor[:, None], out=scratch).argmax(axis=1)
    return picks


def argmax_first(values: NDArray[np.float64], rtol: float = TIE_RTOL) -> int:
    """:func:`argmax_rows` of one row: the lowest index within ``rtol`` of the maximum
    (0 when the maximum is NaN)."""
    top = float(values.max())
    return int((values >= top - rtol * max(1.0, abs(top))).argmax())


def cosine_column(prep: PreparedInputs, i: int) -> NDArray[np.float64]:
    """Cosine of every candidate to candidate ``i`` in float64, shape (n,): one matrix-vector product."""
    vec = prep.vectors
    col: NDArray[np.float64] = np.multiply(vec @ vec[i], prep.inv_norms)
    col *= prep.inv_norms[i]
    return col


def unit_working(prep: PreparedInputs) -> NDArray[np.floating[Any]]:
    """Unit-length copies of the candidates in the working precision, shape (n, d).

    For small pools, where one copy costs less than rescaling every column afterwards:
    ``unit @ unit[i]`` is then a cosine column in a single product.
    """
    vec = prep.vectors
    unit: NDArray[np.floating[Any]] = vec * prep.inv_norms.astype(vec.dtype)[:, None]
    return unit


def gram_pays(n: int, columns: int) -> bool:
    """Whether one ``(n, n)`` product up front costs less than ``columns`` single columns.

    Small pools only (:data:`GRAM_MAX_N`), and only when at least half the columns
    will be needed (a product makes ``n`` columns for about the price of ``n / 2``).
    """
    return n <= GRAM_MAX_N and 2 * columns >= n


def cosine_block(
    prep: PreparedInputs, rows: NDArray[np.int64], cols: NDArray[np.int64]
) -> NDArray[np.float64]:
    """Cosine similarity between candidates ``rows`` and candidates ``cols``, shape (R, C)."""
    vec = prep.vectors
    block = np.asarray(vec[rows] @ vec[cols].T, dtype=np.float64)
    block *= prep.inv_norms[rows][:, None]
    block *= prep.inv_norms[cols][None, :]
    return block


#: Pools up to this size get all pairwise similarities in one product up front.
GRAM_MAX_N = 128


class StepColumns:
    """Similarity columns for one greedy run (one parameter value), one column per step.

    ``column(i)`` is ``post(w * w[i] * cos(., c_i))`` for every candidate, shape (n,)
    (``w`` the optional per-candidate ``weights``, ``post`` an optional elementwise map
    that may work in place), computed the cheapest way for the pool (:attr:`dtype`: the
    columns' dtype before ``post``):

    * every pair in one product up front (float64) when :func:`gram_pays` for ``steps``
      columns, ``post`` applied once to the whole matrix; ``column`` then returns a row
      of it, which the caller must not write to;
    * pools up to :data:`GRAM_MAX_N`: (weighted) unit rows in the working precision
      (:func:`unit_working`), so that a column is one product (``np.dot``: less call
      overhead than ``@``);
    * larger pools: one scaled matrix-vector product (:func:`cosine_column`, float64).

    Example:
        >>> import numpy as np
        >>> from diverse_core.validation import prepare_inputs
        >>> prep = prepare_inputs(np.ones(2), np.array([[1.0, 0.0], [1.0, 1.0]]), k=2)
        >>> np.round(StepColumns(prep, steps=1).column(0), 3).tolist()
        [1.0, 0.707]
    """

    def __init__(
        self,
        prep: PreparedInputs,
        steps: int,
        weights: NDArray[np.float64] | None = None,
        post: Callable[[NDArray[np.floating[Any]]], NDArray[np.floating[Any]]] | None = None,
    ) -> None:
        n = prep.n
        self.column: Callable[[int], NDArray[np.floating[Any]]]
        if gram_pays(n, steps):
            gram: NDArray[np.floating[Any]] = prep.cosine_rows(np.arange(n))
            if weights is not None:
                gram *= weights[:, None]
                gram *= weights[None, :]
            self.dtype: np.dtype[Any] = gram.dtype
            gram = gram if post is None else post(gram)
            self.column = gram.__getitem__
        elif n <= GRAM_MAX_N:
            unit = unit_working(prep)
            if weights is not None:
                unit *= weights.astype(unit.dtype)[:, None]
            self.dtype = unit.dtype
            if post is None:
                self.column = lambda i: np.dot(unit, unit[i])
            else:
                self.column = lambda i: post(np.dot(unit, unit[i]))
        else:
            self.dtype = np.dtype(np.float64)

            def column(i: int) -> NDArray[np.floating[Any]]:
                col = cosine_column(prep, i)
                if weights is not None:
                    col *= weights
                    col *= weights[i]
                return col if post is None else post(col)

            self.column = column


class SimilarityColumns:
    """Cosine similarities of every candidate to one candidate, computed once per candidate.

    A sweep over ``L`` parameter values picks the same item for many values, so the
    ``(n,)`` column ``candidates @ candidates[i]`` is computed on first use and
    reused afterwards. Columns first needed together are computed in one matrix
    product (far cheaper than one matrix-vector product each); its rounding can
    differ from a matrix-vector product in the last bits, which the tie tolerance
    (``PreparedInputs.tie_rtol``) absorbs.
    """

    def __init__(self, prep: PreparedInputs, columns: int | None = None) -> None:
        """``columns``: how many distinct columns the caller may need at most (``None``:
        unknown); small pools get every pair up front when :func:`gram_pays`."""
        self._prep = prep
        self._slot: dict[int, int] = {}  # candidate -> row of `_mat`
        self._mat: NDArray[np.float64]
        if gram_pays(prep.n, prep.n if columns is None else columns):
            # Small pools (e.g. a retriever's fetch_k): every pair at once in one product
            # costs less than the per-call overhead of computing columns step by step.
            self._mat = prep.cosine_rows(np.arange(prep.n))
            self._gram = True
        else:
            self._mat = np.empty((0, prep.n))
            self._gram = False

    def column(self, i: int) -> NDArray[np.float64]:
        """Cosine of every candidate to candidate ``i``, shape (n,)."""
        row: NDArray[np.float64] = self.rows(np.array([i]))[0]
        return row

    def rows(self, picks: NDArray[np.int64]) -> NDArray[np.float64]:
        """Stack of :meth:`column` for each entry of ``picks``, shape (len(picks), n).

        Columns not cached yet are computed together in one matrix product.
        """
        if self._gram:
            return self._mat[picks]
        slot = self._slot
        missing = sorted({int(i) for i in picks}.difference(slot))
        if missing:
            start = len(slot)
            if start + len(missing) > self._mat.shape[0]:
                grown = np.empty((max(16, 2 * (start + len(missing))), self._prep.n))
                grown[:start] = self._mat[:start]
                self._mat = grown
            self._mat[start : start + len(missing)] = self._prep.cosine_rows(missing)
            slot.update(zip(missing, range(start, start + len(missing)), strict=True))
        return self._mat[[slot[int(i)] for i in picks]]


#: :class:`PickColumns` computes every column up front when ``n * n * d`` is at most this.
_GRAM_MAX_WORK = 64 * 64 * 384


class PickColumns:
    """Similarity columns of picked candidates, addressed by slot.

    For the batched sweeps: each step needs, for every parameter value, the cosine
    similarity of all candidates to that value's latest pick. Items picked for the
    first time in a step get their columns from one matrix product together; the
    caller then gathers ``columns[slots]`` with the slots this returns (one
    vectorised lookup, no per-item Python work). Slot :attr:`NONE` is all zeros,
    for values that need no column.

    Attributes:
        columns: ``columns[s, i]`` is the cosine of candidate ``i`` to the item in slot
            ``s``, in the working precision, shape (slots, n).
    """

    NONE = 0

    def __init__(self, prep: PreparedInputs, capacity: int) -> None:
        n = prep.n
        self._prep = prep
        self._inv = prep.inv_norms.astype(prep.vectors.dtype)
        self._slot = np.zeros(n, dtype=np.intp)
        gram = n * n * prep.vectors.shape[1] <= _GRAM_MAX_WORK
        size = n if gram else max(1, min(capacity, n))
        self.columns: NDArray[np.floating] = np.empty((1 + size, n), dtype=prep.vectors.dtype)
        self.columns[0] = 0.0
        self._used = 1
        if gram:
            # Small pools (a retriever's fetch_k): every column in one product up front
            # costs less than the per-step calls (measured up to about n = 64 at d = 384).
            self._fill(slice(None), 1)
            self._slot[:] = np.arange(1, n + 1)
            self._used = 1 + n

    def slots(self, picks: NDArray[np.int64] | list[int]) -> NDArray[np.intp]:
        """Slots of ``picks`` (computing the columns of items not stored yet)."""
        idx = np.asarray(picks, dtype=np.intp)
        found = self._slot[idx]
        if found.all():
            return found
        missing = np.array(sorted(set(idx[found == 0].tolist())), dtype=np.intp)
        start, stop = self._used, self._used + missing.shape[0]
        if stop > self.columns.shape[0]:
            grown = np.empty((2 * stop, self.columns.shape[1]), dtype=self.columns.dtype)
            grown[:start] = self.columns[:start]
            self.columns = grown
        self._fill(missing, start)
        self._slot[missing] = np.arange(start, stop)
        self._used = stop
        out: NDArray[np.intp] = self._slot[idx]
        return out

    def _fill(self, items: NDArray[np.intp] | slice, start: int) -> None:
        """Write the columns of candidates ``items`` (a slice: those rows, without a gather) into
        the slots from ``start`` on."""
        vec, inv = self._prep.vectors, self._inv
        unit = vec[items] * inv[items][:, None]
        stop = start + unit.shape[0]
        np.multiply(product_with_rows(vec, unit).T, inv, out=self.columns[start:stop])
