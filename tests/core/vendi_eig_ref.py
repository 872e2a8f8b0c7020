"""Test-only reference: the ``vendi`` method as it was before the large-k speed-up.

A verbatim copy (imports aside) of ``diverse_core.methods.vendi`` at the commit
before issue 24: every candidate that the Frobenius-norm bound cannot prune is
scored with a batched ``eigvalsh`` of its ``(m+1) x (m+1)`` kernel, so a step costs
``O(n m^3)`` once the bound stops pruning. The library must pick exactly what this
picks. ``eig_reference_select`` / ``eig_reference_sweep`` take the public API's
arguments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from diverse_core.methods._common import cosine_block
from diverse_core.validation import PreparedInputs, prepare_inputs
from numpy.typing import NDArray

__all__ = ["eig_reference_select", "eig_reference_sweep"]

FloatArray = NDArray[np.float64]

#: Accepted values of the ``objective`` parameter.
OBJECTIVES = ("paper", "vendirag")

_VENDIRAG_RANGE_FLOOR = 1e-9
_VENDIRAG_TIE_WEIGHT = 1e-9
_VENDIRAG_EIG_CUTOFF = 1e-12
#: Absolute slack on bounds, far above the rounding error of any float64 objective
#: value (float32 input uses its tie tolerance, which is larger).
_BOUND_SLACK = 1e-9
#: Candidates scored exactly in the first round of a step (doubles each round).
_FIRST_BATCH = 8
_TINY = 1e-300


def vendi_upper_bound(frob_sq: FloatArray, size: int) -> FloatArray:
    """Upper bound on the order-1 Vendi score of ``size``-item kernels.

    Args:
        frob_sq: squared Frobenius norms ``||K||_F^2`` of unit-diagonal PSD kernels.
        size: their side ``N``.

    Returns:
        ``exp(H(a, b, ..., b))``, the largest ``exp(Shannon entropy)`` of any
        distribution on ``N`` outcomes with collision probability
        ``||K||_F^2 / N^2`` (the eigenvalues of ``K / N`` are such a distribution).

    Example:
        >>> round(float(vendi_upper_bound(np.array([3.0]), 3)[0]), 9)  # identity kernel
        3.0
    """
    n_out = float(size)
    if size <= 1:
        return np.ones_like(frob_sq)
    # root = sqrt((N - 1) * (N * sum p^2 - 1)), clipped to its range [0, N - 1]
    root = np.clip(frob_sq / n_out - 1.0, 0.0, n_out - 1.0)
    root *= n_out - 1.0
    np.sqrt(root, out=root)
    a = (1.0 + root) / n_out  # >= 1 / N > 0
    rest = (n_out - 1.0 - root) / n_out  # (N - 1) * b >= 0
    entropy = a * np.log(a)
    entropy += rest * np.log(np.maximum(rest / (n_out - 1.0), _TINY))
    np.negative(entropy, out=entropy)
    return np.exp(entropy, out=entropy)


def _xlogx(p: FloatArray) -> FloatArray:
    """``p * log p`` elementwise with ``0 log 0 = 0`` (and ``p <= 0`` treated as 0)."""
    pos = p > 0.0
    return np.asarray(np.where(pos, p * np.log(np.where(pos, p, 1.0)), 0.0), dtype=np.float64)


def _vendi_of_kernels(kernels: FloatArray, order: float, cutoff: float) -> FloatArray:
    """Vendi score of a batch of ``(B, N, N)`` kernels (eigenvalues ``<= cutoff`` dropped)."""
    size = kernels.shape[-1]
    w = np.linalg.eigvalsh(kernels / size)
    w = np.where(w > cutoff, w, 0.0)
    if order == 1.0:
        return np.asarray(np.exp(-_xlogx(w).sum(axis=-1)), dtype=np.float64)
    if math.isinf(order):
        return np.asarray(1.0 / w.max(axis=-1), dtype=np.float64)
    top = w.max(axis=-1, keepdims=True)  # > 0: the eigenvalues of K / N sum to 1
    log_power = order * np.log(top[..., 0]) + np.log(((w / top) ** order).sum(axis=-1))
    return np.asarray(np.exp(log_power / (1.0 - order)), dtype=np.float64)


@dataclass
class _Pool:
    """Per-call data shared by every step and every swept value."""

    prep: PreparedInputs
    rel: FloatArray
    rel_norm: FloatArray
    rel_min: float
    rel_range: float
    vendirag: bool
    order: float
    rtol: float

    @property
    def n(self) -> int:
        """Number of candidates."""
        return int(self.rel.shape[0])

    def similarities(self, rows: NDArray[np.int64], cols: list[int]) -> FloatArray:
        """Cosine similarities of candidates ``rows`` to candidates ``cols``, shape (R, C)."""
        return cosine_block(self.prep, rows, np.asarray(cols, dtype=np.int64))


def _make_pool(prep: PreparedInputs, objective: str, order: float) -> _Pool:
    rel = prep.relevance
    lo, hi = float(rel.min()), float(rel.max())
    vendirag = objective == "vendirag"
    span = max(hi - lo, _VENDIRAG_RANGE_FLOOR) if vendirag else hi - lo
    # A spread within the tie tolerance is rounding noise: every candidate equally relevant.
    flat = span <= prep.tie_rtol * max(1.0, abs(hi))
    rel_norm = np.zeros_like(rel) if flat else (rel - lo) / span
    return _Pool(prep, rel, rel_norm, lo, span, vendirag, order, prep.tie_rtol)


class _Step:
    """One greedy step from a fixed prefix ``S``, shared by every value with that prefix.

    Built from the previous step's state plus the newest pick. Only the first pick's
    similarities to every candidate are computed (one matrix-vector product); later
    steps bound every candidate with the squared similarities known so far (a lower
    bound on ``||b_c||^2``, hence an upper bound on its Vendi score) and compute the
    similarities to all picks only for the candidates scored exactly, so a step costs
    O(n) vector work plus small products.
    """

    def __init__(self, pool: _Pool, parent: _Step | None, new: int) -> None:
        self.pool = pool
        n = pool.n
        if parent is None:
            col = pool.prep.cosine_rows([new])[0]
            self.prefix = [new]
            self.frob = 1.0  # ||K_S||_F^2
            self.rowsq = col * col  # ||b_c||^2 for every candidate c (exact here)
            self.rel_sum = 0.0
            self.taken = np.zeros(n, dtype=bool)
            self.kernel = np.ones((1, 1))
        else:
            self.prefix = [*parent.prefix, new]
            b_new = pool.similarities(np.asarray(parent.prefix), [new])[:, 0]
            self.frob = parent.frob + 2.0 * float(b_new @ b_new) + 1.0
            # a lower bound on ||b_c||^2: the newest pick's term is added on exact scoring
            self.rowsq = parent.rowsq.copy()
            self.rel_sum = parent.rel_sum
            self.taken = parent.taken.copy()
            m_old = len(parent.prefix)
            self.kernel = np.empty((m_old + 1, m_old + 1))
            self.kernel[:m_old, :m_old] = parent.kernel
            self.kernel[m_old, :m_old] = b_new
            self.kernel[:m_old, m_old] = b_new
            self.kernel[m_old, m_old] = 1.0
        self.taken[new] = True
        m = len(self.prefix)
        self.size = m + 1
        if pool.vendirag:
            self.rel_sum += float(pool.rel[new])
            self.rel_term = ((self.rel_sum + pool.rel) / self.size - pool.rel_min) / pool.rel_range
        else:
            self.rel_sum += float(pool.rel_norm[new])
            self.rel_term = (self.rel_sum + pool.rel_norm) / self.size
        self.bounded = pool.order == 1.0
        if self.bounded:
            frob_t = (self.frob + 1.0) + 2.0 * self.rowsq
            self.div_upper = (vendi_upper_bound(frob_t, self.size) - 1.0) / m
        else:
            self.div_upper = np.full(n, np.inf)
        self.div_exact = np.zeros(n)
        self.scored = np.zeros(n, dtype=bool)

    def _score_exactly(self, idx: NDArray[np.int64]) -> None:
        m = self.size - 1
        border = self.pool.similarities(idx, self.prefix)
        self.rowsq[idx] = np.einsum("ij,ij->i", border, border)  # exact from now on
        kernels = np.empty((idx.shape[0], self.size, self.size))
        kernels[:, :m, :m] = self.kernel
        kernels[:, m, :m] = border
        kernels[:, :m, m] = border
        kernels[:, m, m] = 1.0
        cutoff = _VENDIRAG_EIG_CUTOFF if self.pool.vendirag else 0.0
        vs = _vendi_of_kernels(kernels, self.pool.order, cutoff)
        self.div_exact[idx] = (vs - 1.0) / m
        self.scored[idx] = True

    def pick(self, s: float) -> tuple[int, float]:
        """The greedy pick for diversity weight ``s`` and its objective value."""
        pool = self.pool
        rel_part = (1.0 - s) * self.rel_term
        if pool.vendirag:
            rel_part_tie = rel_part + _VENDIRAG_TIE_WEIGHT * pool.rel_norm
        else:
            rel_part_tie = rel_part
        if s == 0.0:
            obj = rel_part_tie.copy()
            obj[self.taken] = -np.inf
            idx, _ = _choose(pool, obj)
            return idx, float(rel_part[idx])
        upper = s * self.div_upper
        upper += rel_part_tie
        upper[self.taken] = np.nan  # NaN never passes `upper >= floor`
        upper[self.scored] = np.nan
        batch = _FIRST_BATCH if self.bounded else upper.shape[0]
        best = -np.inf
        while True:
            floor = best - pool.rtol * max(1.0, abs(best)) - max(_BOUND_SLACK, pool.rtol)
            todo = (upper >= floor).nonzero()[0]
            if todo.size == 0:
                break
            if todo.size > batch:
                todo = todo[np.argpartition(upper[todo], todo.size - batch)[-batch:]]
            self._score_exactly(todo)
            upper[todo] = np.nan
            batch *= 2
            done = self.scored.nonzero()[0]
            best = float((s * self.div_exact[done] + rel_part_tie[done]).max())
        done = self.scored.nonzero()[0]
        diversity = s * self.div_exact[done]
        idx, _ = _choose(pool, diversity + rel_part_tie[done], done)
        return int(done[idx]), float(diversity[idx] + rel_part[done[idx]])


def _first_pick(pool: _Pool, s: float) -> tuple[int, float]:
    """Singleton sets: ``VS = 1`` (rescaled 0) for everyone, so relevance decides."""
    if pool.vendirag:
        rel_part = (1.0 - s) * ((pool.rel - pool.rel_min) / pool.rel_range)
        obj = rel_part + _VENDIRAG_TIE_WEIGHT * pool.rel_norm
    else:
        rel_part = (1.0 - s) * pool.rel_norm
        obj = rel_part
    idx, _ = _choose(pool, obj)
    return idx, float(rel_part[idx])


def _choose(
    pool: _Pool, obj: FloatArray, ids: NDArray[np.int64] | None = None
) -> tuple[int, float]:
    """Tolerant argmax of ``obj`` (position, value); ties by higher relevance, then lower index.

    ``ids`` are the candidate indices of the entries of ``obj`` (increasing;
    default ``arange``). The ``vendirag`` objective skips the relevance rule.
    """
    best = float(obj.max())
    near = (obj >= best - pool.rtol * max(1.0, abs(best))).nonzero()[0]
    if not pool.vendirag and near.size > 1:
        rel = pool.rel[near if ids is None else ids[near]]
        near = near[rel == rel.max()]
    return int(near[0]), best


def vendi_sweep(
    prep: PreparedInputs,
    values: NDArray[np.float64],
    *,
    objective: str = "paper",
    order: float = 1.0,
    **_: Any,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Vendi selection for every ``s`` in ``values``; returns (L, k) picks and scores.

    Values whose picks share a prefix share that step's work (similarities,
    bounds and exact spectra), so a sweep costs far less than ``L`` runs.
    """
    s_values = np.asarray(values, dtype=np.float64).reshape(-1)
    n_values, k = s_values.shape[0], prep.k
    pool = _make_pool(prep, objective, float(order))
    picks = np.empty((n_values, k), dtype=np.int64)
    scores = np.empty((n_values, k), dtype=np.float64)
    for row in range(n_values):
        picks[row, 0], scores[row, 0] = _first_pick(pool, float(s_values[row]))
    states: dict[tuple[int, ...], _Step | None] = {(): None}
    for step in range(1, k):
        next_states: dict[tuple[int, ...], _Step | None] = {}
        for row in range(n_values):
            prefix = tuple(picks[row, :step].tolist())
            state = next_states.get(prefix)
            if state is None:
                state = _Step(pool, states[prefix[:-1]], prefix[-1])
                next_states[prefix] = state
            picks[row, step], scores[row, step] = state.pick(float(s_values[row]))
        states = next_states
    return picks, scores


def vendi_select(
    prep: PreparedInputs,
    *,
    s: float = 0.5,
    objective: str = "paper",
    order: float = 1.0,
    **_: Any,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Vendi picks for one diversity weight ``s`` (see module docstring)."""
    picks, scores = vendi_sweep(prep, np.array([s]), objective=objective, order=order)
    return picks[0], scores[0]


def eig_reference_sweep(
    query: NDArray[Any],
    cand: NDArray[Any],
    k: int,
    values: list[float],
    *,
    objective: str = "paper",
    order: float = 1.0,
    relevance: NDArray[Any] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Picks and scores, shape (L, k), of the pre-speed-up implementation."""
    prep = prepare_inputs(query, cand, k, relevance)
    return vendi_sweep(prep, np.asarray(values, dtype=np.float64), objective=objective, order=order)


def eig_reference_select(
    query: NDArray[Any],
    cand: NDArray[Any],
    k: int,
    s: float,
    *,
    objective: str = "paper",
    order: float = 1.0,
    relevance: NDArray[Any] | None = None,
) -> list[int]:
    """Picks of the pre-speed-up implementation for one ``s``."""
    picks, _ = eig_reference_sweep(
        query, cand, k, [s], objective=objective, order=order, relevance=relevance
    )
    return [int(i) for i in picks[0]]
