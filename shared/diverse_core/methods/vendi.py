"""``vendi``: greedy Vendi Retrieval Score selection (Rezaei & Dieng 2025, Eq. 1-2).

Objective of a set ``T`` (``|T| = N``), maximised greedily one item at a time
(``T = S ∪ {c}`` for the already picked ``S`` and each remaining candidate ``c``)::

    VRS(T) = s * VS~(T) + (1 - s) * SS~(q, T)

* ``VS(T) = exp(-sum_i l_i log l_i)``: the Vendi score of order 1 (Eq. 1), with
  ``l_i`` the eigenvalues of ``K / N`` and ``K`` the cosine kernel of ``T`` (unit
  diagonal). ``VS`` lies in ``[1, N]`` (1: all identical, ``N``: all orthogonal).
  ``order=q != 1`` uses the Rényi form ``(sum_i l_i ** q) ** (1 / (1 - q))``; an
  ``order`` within ``1e-12`` of 1 is order 1 (the Rényi form is 0/0 there).
* ``VS~(T) = (VS(T) - 1) / (N - 1)``, rescaled to ``[0, 1]``; ``0`` when ``N = 1``
  (a single item has ``VS = 1``, so the first pick is decided by relevance).
* ``SS~(q, T) = mean_{t in T} r~_t`` with the pool-normalised relevance
  ``r~_t = (r_t - min_pool r) / (max_pool r - min_pool r)`` over *all* ``n``
  candidates, so ``SS~`` lies in ``[0, 1]``. ``r`` is cosine similarity to the
  query unless the caller passes ``relevance=`` to :func:`diverse_core.select`.
  Degenerate pool (``max - min`` within the tie tolerance, every candidate equally
  relevant): ``r~ = 0`` for all, so the relevance term is constant and the
  diversity term decides.

``s`` in ``[0, 1]`` is the diversity weight: ``s = 0`` is pure relevance and gives
exactly the ``topk`` picks (ties included); ``s = 1`` is pure diversity (relevance
only breaks ties, e.g. the first pick). The paper leaves the normalisation of
Eq. 2 unspecified; the rescaling above puts both terms on ``[0, 1]``.

Objectives (``objective=``):

* ``"paper"`` (default): the formula above. Candidates whose objective is within
  the tie tolerance (``PreparedInputs.tie_rtol``) of the best are tied; a tie goes
  to the higher relevance, then to the lower index.
* ``"vendirag"``: the variant of the ``vendirag`` package (``vrs_select``),
  reproduced pick for pick: the relevance range is floored at ``1e-9``, the
  trial-set relevance is the normalised *mean raw* relevance, eigenvalues
  ``<= 1e-12`` are dropped from the entropy, and ``1e-9 * r~_c`` is added to the
  objective as a tie-break (remaining ties go to the lowest index).

Speed. Scoring a candidate exactly needs the spectrum of an ``N x N`` kernel; doing
that for all ``n`` candidates at every step dominates the cost. Instead, every step
first bounds ``VS`` of every candidate from above in O(1) per candidate: with
``p = eigenvalues / N``, the collision probability ``sum p^2 = ||K_T||_F^2 / N^2``
is updated incrementally (``||K_T||_F^2 = ||K_S||_F^2 + 2 ||b_c||^2 + 1``, ``b_c``
the similarities of ``c`` to ``S``), and for a given collision probability the
Shannon entropy is largest for a distribution ``(a, b, ..., b)`` with ``a >= b``,
which gives a closed-form bound. Exact spectra (batched ``eigvalsh``) are then
computed only for the candidates in decreasing order of their bound until no
unscored candidate's bound can reach the best exact objective (minus the tie
tolerance and a ``1e-9`` safety margin). The picks are therefore the exact
greedy picks; only the work skipped depends on the data.

That bound only sees ``||b_c||``; once the picked set is large (about 15 picks
of random vectors) it stops pruning, and scoring every candidate exactly would cost
``O(n m^3)`` per step. From then on every candidate's bound is tightened with the
picked set's spectrum (:mod:`._vendi_spectral`): with ``K_S = U diag(L) U^T`` and
``z = U^T b_c``, ``sum mu log mu`` of the bordered kernel exceeds that of ``K_S`` by
``integral_0^inf -log(1 - q(t)) dt``, ``q(t) = sum_j z_j^2 / ((L_j + t)(1 + t))``.
Its first-order term has a closed form (level 1, one ``(n, m) @ (m, m)`` product
per step); the remainder is under-estimated by Gauss-Legendre panels, valid because
the integrand is completely monotone (level 2, for the few candidates level 1
leaves). Only the candidates these bounds cannot rule out get an exact spectrum,
typically 2 to 5 per step, and with the same ``eigvalsh`` computation as before, so
the exact values that decide are unchanged.

Rényi orders: ``VS_q <= VS_1`` for ``q > 1`` (Rényi entropies fall with the order),
so the order-1 bounds prune ``q > 1`` too (``q >= 2`` also uses the exact
``VS_2 = N^2 / ||K_T||_F^2``); the ``vendirag`` objective with ``1 < q < 2`` and
every ``q < 1`` have no bound and score every candidate exactly (slower).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from ..registry import DiversityMap, MethodSpec
from ..validation import PreparedInputs, check_renyi_order, check_unit_interval
from ._common import SimilarityColumns, cosine_block
from ._vendi_spectral import SpectralBound

__all__ = ["OBJECTIVES", "vendi_select", "vendi_sweep", "vendi_upper_bound", "SPEC"]

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
#: The same once the spectral bound (tight to a relative ~1e-4 of the entropy change)
#: ranks the candidates.
_REFINED_BATCH = 2
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
    columns: SimilarityColumns | None = None

    @property
    def shannon_bounds(self) -> bool:
        """Whether the order-1 bounds also bound this order's Vendi score.

        Rényi entropies do not increase with the order, so ``VS_q <= VS_1`` for
        ``q > 1``. The ``vendirag`` objective drops eigenvalues ``<= 1e-12``, which
        raises ``VS_q`` for ``q > 1`` by a relative ``O(N 1e-12 / (q - 1))``: negligible
        against the bound slack from ``q = 2`` on only.
        """
        return self.order == 1.0 or self.order >= 2.0 or (self.order > 1.0 and not self.vendirag)

    @property
    def n(self) -> int:
        """Number of candidates."""
        return int(self.rel.shape[0])

    def similarities(self, rows: NDArray[np.int64], cols: list[int]) -> FloatArray:
        """Cosine similarities of candidates ``rows`` to candidates ``cols``, shape (R, C)."""
        return cosine_block(self.prep, rows, np.asarray(cols, dtype=np.int64))

    def pick_columns(self, picks: list[int]) -> FloatArray:
        """Similarities of every candidate to each of ``picks``, shape (len(picks), n).

        Cached per pick (shared by every step and swept value), for the bounds only:
        exact scores use :meth:`similarities`, whose rounding may differ in the last
        bits (the bound slack covers that).
        """
        if self.columns is None:
            self.columns = SimilarityColumns(self.prep)
        return self.columns.rows(np.asarray(picks, dtype=np.int64))


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
        self.bounded = pool.shannon_bounds
        if self.bounded:
            frob_t = (self.frob + 1.0) + 2.0 * self.rowsq
            self.div_upper = (vendi_upper_bound(frob_t, self.size) - 1.0) / m
            if pool.order >= 2.0:  # VS_q <= VS_2 = N^2 / ||K_T||_F^2
                np.minimum(self.div_upper, (self.size**2 / frob_t - 1.0) / m, out=self.div_upper)
        else:
            self.div_upper = np.full(n, np.inf)
        # 0: Frobenius bound; 1: + first-order spectral bound; 2: + quadrature (see _refine)
        self.level = np.zeros(n, dtype=np.int8)
        self.spectral: SpectralBound | None = None
        # the parent's similarity matrix, to extend by one column if this step needs one
        self._base_borders = None if parent is None else parent._borders
        self._borders: FloatArray | None = None
        # Once the cheap bound stopped pruning, it will not prune at the next (larger) step
        # either: tighten every bound before the first exact spectra.
        self.refine_first = self.bounded and parent is not None and bool(parent.level.any())
        self.div_exact = np.zeros(n)
        self.scored = np.zeros(n, dtype=bool)

    def _refine(self, idx: NDArray[np.int64], level: int) -> None:
        """Tighten the bounds of candidates ``idx`` with the picked set's spectrum.

        Level 1 uses the first-order term of :mod:`._vendi_spectral`'s bound, level 2
        the whole bound; either costs ``O(m^2 + m Q)`` per candidate instead of the
        ``O(m^3)`` of an exact spectrum.
        """
        if self.spectral is None:
            self.spectral = SpectralBound(self.kernel)
        m = self.size - 1
        border = self.borders()[idx]
        g_low = self.spectral.entropy_sum_lower(border, quadrature=level == 2)
        vs_up = self.size * np.exp(-g_low / self.size)
        vs_up -= 1.0
        vs_up /= m
        np.minimum(self.div_upper[idx], vs_up, out=vs_up)
        if self.pool.order >= 2.0:
            frob_t = (self.frob + 1.0) + 2.0 * np.einsum("ij,ij->i", border, border)
            np.minimum(vs_up, (self.size**2 / frob_t - 1.0) / m, out=vs_up)
        self.div_upper[idx] = vs_up
        self.level[idx] = level

    def borders(self) -> FloatArray:
        """Similarities of every candidate to the picks, shape (n, m), for the bounds.

        Extends the parent step's matrix (if it built one) by the newest pick's column.
        """
        if self._borders is None:
            m = self.size - 1
            base, self._base_borders = self._base_borders, None
            if base is not None:
                out = np.empty((self.pool.n, m))
                out[:, : m - 1] = base
                out[:, m - 1] = self.pool.pick_columns([self.prefix[-1]])[0]
            else:
                out = np.ascontiguousarray(self.pool.pick_columns(self.prefix).T)
            self._borders = out
        return self._borders

    def _tighten(self, idx: NDArray[np.int64]) -> bool:
        """Raise the bound level of the least refined of ``idx``; False if all are at the top."""
        level = self.level[idx]
        low = int(level.min())
        if low >= 2:
            return False
        self._refine(idx[level == low], low + 1)
        return True

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
        if self.refine_first:
            fresh = ((self.level == 0) & ~(self.taken | self.scored)).nonzero()[0]
            if fresh.size:
                self._refine(fresh, 1)
                upper[fresh] = s * self.div_upper[fresh] + rel_part_tie[fresh]
            batch = _REFINED_BATCH
        best = -np.inf
        while True:
            floor = best - pool.rtol * max(1.0, abs(best)) - max(_BOUND_SLACK, pool.rtol)
            todo = (upper >= floor).nonzero()[0]
            if todo.size == 0:
                break
            if todo.size > batch and best > -np.inf and self._tighten(todo):
                # The bounds left many: tightened theirs before computing spectra.
                upper[todo] = s * self.div_upper[todo] + rel_part_tie[todo]
                batch = _REFINED_BATCH
                continue
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


def _check(params: dict[str, Any]) -> dict[str, Any]:
    params["s"] = check_unit_interval(params["s"], "s")
    objective = params["objective"]
    if not isinstance(objective, str) or objective not in OBJECTIVES:
        raise InvalidParameterError(
            f"objective must be one of {list(OBJECTIVES)}; got objective={objective!r}"
        )
    params["order"] = check_renyi_order(params["order"], "order")
    return params


SPEC = MethodSpec(
    name="vendi",
    run=vendi_select,
    defaults={"s": 0.5, "objective": "paper", "order": 1.0},
    check=_check,
    param="s",
    diversity=DiversityMap("s", float, "s = diversity"),
    run_sweep=vendi_sweep,
)
