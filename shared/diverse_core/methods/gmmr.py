"""``gmmr``: geometric MMR of DF-RAG (Khan et al. 2026, Eq. 1-3).

The first pick is the most relevant candidate (Eq. 3). Afterwards candidate ``c``
scores::

    lambda_mult * cos(q, c) + (1 - lambda_mult) * sqrt(2 - 2 * cos(c, centroid(S)))

where ``centroid(S)`` is the mean of the selected (unit) embeddings (Eq. 2) and
the square root is the Euclidean distance between unit vectors. ``lambda_mult = 1``
is pure relevance (top-k); smaller values push picks away from what is already
chosen. This follows the paper: the authors' released script instead keeps a
decaying two-item running mean of the picks, which we do not reproduce.

If the picks cancel out (centroid of zero length) the distance term is taken as
``sqrt(2)``, i.e. orthogonal to every candidate.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..validation import PreparedInputs, row_dots
from ._common import PickColumns, argmax_rows
from ._spec import lambda_mult_method
from ._sweep import GreedySweep

__all__ = ["gmmr_select", "gmmr_sweep", "SPEC"]

#: Squared lengths of the sum of a value's unit picks below this are recomputed from
#: the picks in float64. The running update (:func:`gmmr_sweep`) adds the rounding
#: of one product entry (float32 for float32 input) per step: next to a squared
#: length of 1 or more that stays below the tie tolerance, but not when the picks
#: nearly cancel out. Below 1 means they partly do (two picks: cosine < -1/2).
_EXACT_BELOW = 1.0
#: A centroid whose squared length is below this counts as zero (the picks cancel out).
_TINY_NORM2 = 1e-24


def _exact_norms(
    prep: PreparedInputs, picks: NDArray[np.int64], norm2: NDArray[np.float64], active: NDArray[np.intp]
) -> None:
    """Recompute in float64, in place, the entries of ``norm2`` below :data:`_EXACT_BELOW`.

    ``picks`` (L, t) are each value's picks so far; only the rows in ``active`` are
    looked at (values with ``lambda_mult = 1`` never use theirs).
    """
    if norm2.min() >= _EXACT_BELOW:  # the usual case: nothing cancels
        return
    redo = active[norm2[active] < _EXACT_BELOW]
    if redo.size:
        units = prep.unit_rows(picks[redo].reshape(-1)).reshape(redo.size, picks.shape[1], -1)
        norm2[redo] = row_dots(units.sum(axis=1))


def _distance_weights(
    minus_two_w2: NDArray[np.float64], norm2: NDArray[np.float64], work: np.dtype[Any]
) -> NDArray[np.floating[Any]]:
    """``-2 (1 - lambda)^2 / ||t||`` per value as an (L, 1) column; 0 where ``t`` is zero."""
    coef = minus_two_w2 / np.sqrt(np.maximum(norm2, _TINY_NORM2))
    if norm2.min() <= _TINY_NORM2:
        # zero-length centroid (the picks cancel out): distance sqrt(2) to everyone
        coef[norm2 <= _TINY_NORM2] = 0.0
    return coef.astype(work)[:, None]


def _step_picks(
    dot: NDArray[np.floating[Any]],
    weights: NDArray[np.floating[Any]],
    two_w2: NDArray[np.floating[Any]],
    base: NDArray[np.floating[Any]],
    rtol: float,
    obj: NDArray[np.floating[Any]],
    near: NDArray[np.bool_],
) -> NDArray[np.int64]:
    """One step of every value: writes the objective into ``obj`` (L, n), returns each row's pick.

    ``obj = base + sqrt(|two_w2 + weights * dot|)`` (``weights`` and ``two_w2`` are (L, 1)
    columns), then the tolerant row-wise argmax; ``near`` is its scratch array.
    """
    np.multiply(dot, weights, out=obj)
    obj += two_w2
    # The argument is >= 0 up to rounding; |.| is as close to it as a clip at 0.
    np.abs(obj, out=obj)
    np.sqrt(obj, out=obj)
    obj += base
    return argmax_rows(obj, rtol, near)


def gmmr_sweep(
    prep: PreparedInputs, values: NDArray[np.float64], **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """gMMR for every ``lambda_mult`` in ``values`` at once; returns (L, k) picks and scores.

    Per value ``l`` it keeps ``dot[l, i] = <c_i, t_l>``, ``t_l`` the sum of the value's
    unit picks, and ``norm2[l] = ||t_l||^2``, updated as
    ``||t + u||^2 = ||t||^2 + 2 <t, u> + 1`` from the dot of the new pick; then
    ``cos(c_i, centroid) = dot[l, i] / sqrt(norm2[l])``.
    """
    rel, k, n = prep.relevance, prep.k, prep.n
    lam = np.asarray(values, dtype=np.float64).reshape(-1)
    n_values = lam.shape[0]
    # (picked items are kept out by base = -inf below, not by run.taken)
    run = GreedySweep(prep, n_values)
    picks, scores, rows, first, rtol = run.picks, run.scores, run.rows, run.first, run.rtol
    scores[:, 0] = rel[first]
    if k == 1:
        return picks, scores
    # (L, n) arrays are in the working precision (float32 for float32 input).
    work = prep.vectors.dtype
    # Values with lambda_mult = 1 ignore the distance term: they need no columns.
    w2 = (1.0 - lam) ** 2
    active = np.flatnonzero(w2 > 0.0)
    store = PickColumns(prep, capacity=1 + active.size * (k - 2))
    slots = np.full(n_values, PickColumns.NONE, dtype=np.intp)
    slots[active] = store.slots(np.full(active.size, first))
    dot = store.columns[slots]
    norm2 = np.ones(n_values)
    # base[l, i] = lambda_l * rel_i, or -inf once value l picked candidate i.
    base = (lam[:, None] * rel[None, :]).astype(work)
    base[:, first] = -np.inf
    # (1 - lambda) * sqrt(2 - 2 cos) = sqrt(2 w2 - 2 w2 * dot / norm), w2 = (1 - lambda)^2
    two_w2 = (2.0 * w2).astype(work)[:, None]
    minus_two_w2 = -2.0 * w2
    obj = np.empty((n_values, n), dtype=work)
    near = np.empty((n_values, n), dtype=bool)
    for step in range(1, k):
        weights = _distance_weights(minus_two_w2, norm2, work)
        best = _step_picks(dot, weights, two_w2, base, rtol, obj, near)
        picks[:, step] = best
        scores[:, step] = obj[rows, best]
        base[rows, best] = -np.inf
        if step + 1 < k:
            norm2 += 1.0
            norm2 += 2.0 * dot[rows, best]  # in float64
            _exact_norms(prep, picks[:, : step + 1], norm2, active)
            slots[active] = store.slots(best[active])
            dot += store.columns[slots]
    return picks, scores


def gmmr_select(
    prep: PreparedInputs, *, lambda_mult: float = 0.5, **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """gMMR picks for one ``lambda_mult`` (see module docstring): the row of :func:`gmmr_sweep`."""
    picks, scores = gmmr_sweep(prep, np.array([float(lambda_mult)]))
    return picks[0], scores[0]


SPEC = lambda_mult_method("gmmr", gmmr_select, gmmr_sweep)
