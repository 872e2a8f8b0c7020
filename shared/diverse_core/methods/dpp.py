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

Speed. One similarity column per step (pools up to ``GRAM_MAX_N``: all columns in
one product up front) and one ``(n, t)`` product with the Cholesky factor;
:func:`dpp_sweep` runs every value together on ``(L, n)`` arrays.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from ..validation import PreparedInputs, check_positive
from ._common import SimilarityColumns, StepColumns, argmax_first, argmax_rows
from ._spec import diversity_method
from ._sweep import pure_relevance_rows
from .topk import topk_select

__all__ = ["EPS32", "zscore", "dpp_select", "dpp_sweep", "SPEC"]

#: float32 machine epsilon: the kernel's diagonal jitter and the z-score's guard.
EPS32 = float(np.finfo(np.float32).eps)
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
        update /= (np.sqrt(gain) + EPS32)[:, None]
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
        if step:
            np.subtract(col, np.dot(factor[:step, best], factor[:step]), out=row)
            row /= math.sqrt(gain) + EPS32
        else:
            np.divide(col, math.sqrt(gain) + EPS32, out=row, dtype=np.float64)
        residual -= np.multiply(row, row, out=square)
        np.maximum(residual, floor, out=residual)
    return picks, scores


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
