"""``dpp``: greedy MAP inference for a determinantal point process (the ``dpp`` strategy of pyversity).

Greedy MAP of Chen, Zhang & Zhou, "Fast Greedy MAP Inference for Determinantal
Point Process to Improve Recommendation Diversity" (NeurIPS 2018, Algorithm 1), on
the quality-weighted cosine kernel::

    L[i, j] = w_i * cos(c_i, c_j) * w_j,   w_i = exp(beta * z_i),   beta = 1 - diversity

with ``z`` the z-scored relevance (``(r - mean) / (std + eps32)``, ``eps32`` the
float32 machine epsilon) and ``eps32`` added to the diagonal. Each step picks the
candidate with the largest residual variance ``d_i^2`` (the gain in
``log det L_S``) and updates every residual by one incremental Cholesky step,
``e_i = (L[i, j] - <C_i, C_j>) / (sqrt(d_j^2) + eps32)``, ``d_i^2 -= e_i^2``.

Parameter: ``diversity`` in ``[0, 1]``; **higher is more diverse** (relevance
weighs less in the kernel). ``0`` is pure relevance (the top-k, as in pyversity),
``1`` ignores relevance (every ``w_i = 1``: the first pick is then the lowest index,
an exact tie). ``scale > 0`` multiplies ``beta`` (pyversity's ``scale``). These are
pyversity's ``diversity`` and ``scale`` exactly: the same input gives the same picks
as ``pyversity.dpp`` up to ties (pyversity works in float32). Scores are each
pick's residual variance.

Speed. Pools up to ``GRAM_MAX_N``: one similarity column per step (all columns in
one product up front when enough are needed) and one ``(n, t)`` product with the
Cholesky factor. Larger pools (:func:`_dpp_lazy`): residual variances only fall as
picks are added, so after the first pick's column the candidates with the highest
residuals are followed exactly (a short list, one small product per step) and more
join when one left off could still win; the picks are those of the eager loop (which
:func:`dpp_sweep` runs for every value together on ``(L, n)`` arrays) except where the
residuals have fallen to rounding noise (beyond the kernel's rank), where any order is
a rounding accident.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from ..validation import PreparedInputs, check_positive
from ._common import (
    GRAM_MAX_N,
    SimilarityColumns,
    StepColumns,
    argmax_first,
    argmax_rows,
    cosine_column,
)
from ._spec import diversity_method
from ._sweep import pure_relevance_rows
from .topk import topk_select

__all__ = ["EPS32", "zscore", "dpp_select", "dpp_sweep", "SPEC"]

#: float32 machine epsilon: the kernel's diagonal jitter and the z-score's guard.
EPS32 = float(np.finfo(np.float32).eps)
#: A pick whose gain is at most this share of the first pick's is rounding noise (the kernel's
#: rank is spent: the pool's remaining vectors lie in the picks' span). Its Cholesky row would
#: divide that noise by ``sqrt(gain) + eps32`` and blow up step after step (overflow at a few
#: picks past the rank), so the row is taken as 0 and the other residuals stay where they are.
SPENT_SHARE = 8.0 * EPS32


def _denominator(gain: float, first: float) -> float:
    """``sqrt(gain) + eps32``, or infinity (a row of zeros) once the kernel's rank is spent."""
    return math.sqrt(gain) + EPS32 if gain > SPENT_SHARE * first else math.inf
#: Candidates (best by their bound after the first pick) the lazy path follows exactly.
_SHORT_LIST = 256
#: ``exp(x) ** 2`` stays finite for ``x`` below this (``exp(354) ** 2`` is about ``1e307``).
_EXP_SAFE = 354.0


def zscore(rel: NDArray[np.float64], guard: float) -> NDArray[np.float64]:
    """``(rel - mean) / (std + guard)``, or ``rel - mean`` where that divides by 0.

    Computed on ``rel / max|rel|`` (with ``guard`` scaled alike), so relevance values
    up to ``RELEVANCE_MAX`` do not overflow the squares of the standard deviation.
    """
    top = float(np.abs(rel).max())
    if top == 0.0:
        return np.zeros_like(rel)
    n = rel.shape[0]
    scaled = rel / top
    # ``scaled.mean()`` and ``scaled.std()`` operation for operation (the same sums, so
    # the same bits), without their Python-level wrappers
    centred = scaled - float(scaled.sum()) / n
    spread = math.sqrt(float(np.square(centred).sum()) / n) + guard / top
    if spread == 0.0:
        out: NDArray[np.float64] = centred * top
        return out
    z: NDArray[np.float64] = centred / spread
    return z


@pure_relevance_rows
def dpp_sweep(
    prep: PreparedInputs, values: NDArray[np.float64], *, scale: float = 1.0, **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Greedy DPP for every ``diversity`` in ``values`` at once; returns (L, k) picks and scores
    (:func:`pure_relevance_rows`: the values at 0 are the top-k)."""
    rel, k, n = prep.relevance, prep.k, prep.n
    div = np.asarray(values, dtype=np.float64).reshape(-1)
    n_live = div.shape[0]
    picks = np.empty((n_live, k), dtype=np.int64)
    scores = np.empty((n_live, k), dtype=np.float64)
    beta = (1.0 - div)[:, None] * scale
    weights, residual = _quality(rel, beta, float(beta.max()), scale)  # (L, n)
    taken = np.zeros(residual.shape, dtype=bool)
    rows = np.arange(n_live)
    factor = np.empty((n_live, k, n))  # factor[l, t] = Cholesky column t of value l
    sims = SimilarityColumns(prep, n_live * (k - 1))
    rtol = prep.tie_rtol
    for step in range(k):
        best = argmax_rows(residual, rtol)
        gain = residual[rows, best]
        picks[:, step] = best
        scores[:, step] = gain
        residual[rows, best] = -np.inf
        taken[rows, best] = True
        if step + 1 == k:
            break
        update = sims.rows(best)
        update *= weights
        update *= weights[rows, best][:, None]
        if step:
            update -= np.einsum("ltn,lt->ln", factor[:, :step], factor[rows, :step, best])
        spent = gain <= SPENT_SHARE * scores[:, 0]
        update /= np.where(spent, np.inf, np.sqrt(gain) + EPS32)[:, None]
        factor[:, step] = update
        np.square(update, out=update)
        residual -= update
        np.maximum(residual, 0.0, out=residual)
        residual[taken] = -np.inf  # (the clip above turned the picked items' -inf into 0)
    return picks, scores


def dpp_select(
    prep: PreparedInputs, *, diversity: float = 0.5, scale: float = 1.0, **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Greedy DPP picks for one ``diversity`` (see module docstring).

    One row of :func:`dpp_sweep` on 1-D arrays, the kernel columns from
    :class:`StepColumns` (small pools: the whole weighted kernel in one product up
    front when enough columns will be needed, or else weighted unit rows). A step writes
    its Cholesky row in place (``factor[step]``) and keeps picked items at ``-inf``
    (``floor`` holds ``-inf`` there and 0 elsewhere: one ``maximum`` both clips the
    residuals at 0 and keeps the picks out).
    """
    if diversity == 0.0:
        return topk_select(prep)
    k, n, rtol = prep.k, prep.n, prep.tie_rtol
    beta = (1.0 - diversity) * scale
    weights, residual = _quality(prep.relevance, beta, beta, scale)
    if n > GRAM_MAX_N and k > 2:
        return _dpp_lazy(prep, weights, residual)
    column = StepColumns(prep, k - 1, weights=weights).column  # kernel columns w * w[i] * cos
    factor = np.empty((k, n))
    square = np.empty(n)
    floor = np.zeros(n)
    picks = np.empty(k, dtype=np.int64)
    scores = np.empty(k, dtype=np.float64)
    for step in range(k):
        best = argmax_first(residual, rtol)
        gain = residual.item(best)
        picks[step], scores[step] = best, gain
        if step + 1 == k:
            break
        residual[best] = floor[best] = -np.inf
        row = factor[step]
        col = column(best)
        den = _denominator(gain, scores[0])
        if step:
            np.subtract(col, np.dot(factor[:step, best], factor[:step]), out=row)
            row /= den
        else:
            np.divide(col, den, out=row, dtype=np.float64)
        residual -= np.multiply(row, row, out=square)
        np.maximum(residual, floor, out=residual)
    return picks, scores


def _dpp_lazy(
    prep: PreparedInputs, weights: NDArray[np.float64], residual: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Greedy DPP for one value (``residual``: the first residuals ``weights^2 + eps32``),
    following only the candidates that can still win.

    A candidate's residual variance can only fall as picks are added (each step
    subtracts a square, then clips at 0), so its value after the first pick bounds it
    for good. After the first pick's kernel column (one matrix-vector product for the
    whole pool) the :data:`_SHORT_LIST` candidates with the highest bound are followed
    exactly: per step, the kernel column and Cholesky row of the listed candidates
    only, the same operations as :func:`dpp_select`'s on the whole pool. When the
    best bound left off the list comes within the tie tolerance of the best exact
    residual, more candidates join (every one that could reach it, and at least twice
    as many as before), their Cholesky rows computed against every pick so far. The
    picks are those of the eager computation.
    """
    k, n, rtol = prep.k, prep.n, prep.tie_rtol
    vec, inv = prep.vectors, prep.inv_norms
    picks = np.empty(k, dtype=np.int64)
    scores = np.empty(k, dtype=np.float64)
    dens = np.empty(k)  # sqrt(gain) + eps32 of each step
    win = argmax_first(residual, rtol)
    picks[0] = win
    scores[0] = gain = residual.item(win)
    dens[0] = math.sqrt(gain) + EPS32
    col = cosine_column(prep, win)
    col *= weights
    col *= weights[win]
    first_row = np.divide(col, dens[0])
    bound = residual - np.multiply(first_row, first_row)  # exact after one pick, a bound afterwards
    np.maximum(bound, 0.0, out=bound)
    bound[win] = -np.inf
    size = min(_SHORT_LIST, n - 1)
    order = np.argpartition(bound, n - 1 - size)
    short = order[n - size :]
    outside = float(bound[order[n - 1 - size]])  # the best bound left off the list
    off = np.ones(n, dtype=bool)
    off[win] = False
    off[short] = False
    # per listed candidate: its vector, inverse norm and weight, residual (-inf once
    # picked), Cholesky rows (factor[t, j]: of listed candidate j at step t)
    short_vec, short_inv, short_w = vec[short], inv[short], weights[short]
    res = bound[short]
    floor = np.zeros(size)
    factor = np.empty((k, size))
    factor[0] = first_row[short]
    pick_pos = np.full(k, -1)  # where each pick stands in the list (the first: not listed)
    size *= 2
    step = 1
    while step < k:
        best = float(res.max())
        cut = best - rtol * max(1.0, abs(best))
        if outside >= cut:
            add = _more(bound, off, cut, size)
            add_factor, add_res = _cholesky_rows(prep, weights, first_row, residual, add, picks[:step], dens, factor, pick_pos)
            short = np.concatenate([short, add])
            short_vec = np.concatenate([short_vec, vec[add]])
            short_inv = np.concatenate([short_inv, inv[add]])
            short_w = np.concatenate([short_w, weights[add]])
            res = np.concatenate([res, add_res])
            floor = np.concatenate([floor, np.zeros(add.size)])
            factor = np.concatenate([factor, add_factor], axis=1)
            off[add] = False
            outside = float(bound[off].max()) if off.any() else -np.inf
            size *= 2
            continue
        tied = (res >= cut).nonzero()[0]
        pos = int(tied[0]) if tied.size == 1 else int(tied[np.argmin(short[tied])])  # lowest index
        win = int(short[pos])
        picks[step], scores[step] = win, res[pos]
        pick_pos[step] = pos
        gain = float(res[pos])
        dens[step] = _denominator(gain, scores[0])
        res[pos] = floor[pos] = -np.inf
        step += 1
        if step < k:
            # the kernel column of the new pick, then its Cholesky row, on the listed rows
            row = factor[step - 1]
            col = np.multiply(short_vec @ vec[win], short_inv)
            col *= inv[win]
            col *= short_w
            col *= weights[win]
            np.subtract(col, np.dot(factor[: step - 1, pos], factor[: step - 1]), out=row)
            row /= dens[step - 1]
            res -= np.multiply(row, row)
            np.maximum(res, floor, out=res)
    return picks, scores


def _more(bound: NDArray[np.float64], off: NDArray[np.bool_], cut: float, size: int) -> NDArray[np.intp]:
    """The candidates off the list to follow now: every one whose bound reaches ``cut``,
    and at least the ``size`` best bounds."""
    rest = off.nonzero()[0]
    size = max(size, int(np.count_nonzero(bound[rest] >= cut)))
    return rest if rest.size <= size else rest[np.argpartition(bound[rest], -size)[-size:]]


def _cholesky_rows(
    prep: PreparedInputs,
    weights: NDArray[np.float64],
    first_row: NDArray[np.float64],
    residual: NDArray[np.float64],
    add: NDArray[np.intp],
    picks: NDArray[np.int64],
    dens: NDArray[np.float64],
    factor: NDArray[np.float64],
    pick_pos: NDArray[np.int64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Cholesky rows (k, len(add)) and residuals of the candidates ``add`` against the
    ``t`` picks so far, step by step as the eager loop computes them (row 0: from
    ``first_row``, the first pick's row for the whole pool; ``factor`` and ``pick_pos``:
    the listed candidates' rows and where each later pick stands among them)."""
    vec, inv = prep.vectors, prep.inv_norms
    add_vec, add_inv, add_w = vec[add], inv[add], weights[add]
    rows = np.empty((factor.shape[0], add.size))
    rows[0] = first_row[add]
    res = residual[add] - np.multiply(rows[0], rows[0])
    np.maximum(res, 0.0, out=res)
    for j in range(1, picks.shape[0]):
        # one product per pick, as the eager loop (a matrix product rounds differently)
        p = picks[j]
        col = np.multiply(add_vec @ vec[p], add_inv)
        col *= inv[p]
        col *= add_w
        col *= weights[p]
        row = rows[j]
        np.subtract(col, np.dot(factor[:j, pick_pos[j]], rows[:j]), out=row)
        row /= dens[j]
        res -= np.multiply(row, row)
        np.maximum(res, 0.0, out=res)
    return rows, res


def _quality(
    rel: NDArray[np.float64], beta: float | NDArray[np.float64], beta_max: float, scale: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The quality weights ``exp(beta * z)`` and the first residuals ``weights^2 + eps32``.

    ``beta`` (largest value ``beta_max``) is a number or an (L, 1) column: shapes (n,)
    or (L, n) out.

    Raises:
        InvalidParameterError: the weights or their squares overflow float64.
    """
    z = zscore(rel, EPS32)
    # |z| <= sqrt(n): no centred value exceeds sqrt(n) standard deviations (and the
    # spread is the deviation plus a guard > 0); the 1 covers rounding
    if beta_max * (math.sqrt(z.shape[0]) + 1.0) < _EXP_SAFE:  # the usual case: nothing can overflow
        weights: NDArray[np.float64] = np.exp(beta * z)
        return weights, weights * weights + EPS32
    with np.errstate(over="ignore"):  # overflow: the typed error below
        weights = np.exp(beta * z)
        residual = weights * weights + EPS32
    if not np.isfinite(residual).all():
        _overflow(scale, z)
    return weights, residual


def _overflow(scale: float, z: NDArray[np.float64]) -> None:
    raise InvalidParameterError(
        f"scale={scale!r} makes the DPP quality weights exp(beta * z) overflow float64 "
        f"(largest |z| = {float(np.abs(z).max()):.3g}); use a smaller scale"
    )


SPEC = diversity_method("dpp", dpp_select, dpp_sweep, scale=(1.0, check_positive))
