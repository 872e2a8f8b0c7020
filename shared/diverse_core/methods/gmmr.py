"""``gmmr``: geometric MMR of DF-RAG (``df-rag.txt`` Eq. 1-3).

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

from ..registry import MethodSpec
from ..validation import PreparedInputs, check_unit_interval, row_dots
from ._common import PickColumns, argmax_first, argmax_rows

__all__ = ["gmmr_select", "gmmr_sweep", "SPEC"]

_TINY = 1e-12


def gmmr_sweep(
    prep: PreparedInputs, values: NDArray[np.float64], **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """gMMR for every ``lambda_mult`` in ``values`` at once; returns (L, k) picks and scores."""
    rel, k, n = prep.relevance, prep.k, prep.n
    lam = np.asarray(values, dtype=np.float64).reshape(-1)
    n_values = lam.shape[0]
    rows = np.arange(n_values)
    picks = np.empty((n_values, k), dtype=np.int64)
    scores = np.empty((n_values, k), dtype=np.float64)
    rtol = prep.tie_rtol
    first = argmax_first(rel, rtol)
    picks[:, 0] = first
    scores[:, 0] = rel[first]
    if k == 1:
        return picks, scores
    # (L, n) arrays are in the working precision (float32 for float32 input).
    work = prep.vectors.dtype
    # Values with lambda_mult = 1 ignore the distance term: they need no columns.
    w2 = (1.0 - lam) ** 2
    active = w2 > 0.0
    store = PickColumns(prep, capacity=1 + int(active.sum()) * (k - 2))
    slots = np.full(n_values, PickColumns.NONE, dtype=np.intp)
    slots[active] = store.slots(np.full(int(active.sum()), first))
    # dot[l, i] = <c_i, sum of value l's unit picks>; total[l] = that sum (float64), whose
    # norm is taken directly: the picks can nearly cancel out, and ||sum||^2 as a sum of
    # pairwise cosines would then lose every digit.
    dot = store.columns[slots]
    total = np.repeat(prep.unit_rows(np.array([first])), n_values, axis=0)
    # base[l, i] = lambda_l * rel_i, or -inf once value l picked candidate i.
    base = (lam[:, None] * rel[None, :]).astype(work)
    base[:, first] = -np.inf
    # (1 - lambda) * sqrt(2 - 2 cos) = sqrt(2 w2 - 2 w2 * dot / norm), w2 = (1 - lambda)^2
    two_w2 = (2.0 * w2).astype(work)[:, None]
    minus_two_w2 = -2.0 * w2
    coef = np.zeros(n_values)
    obj = np.empty((n_values, n), dtype=work)
    for step in range(1, k):
        norm = np.sqrt(row_dots(total))
        # zero-length centroid (the picks cancel out): distance sqrt(2) to everyone
        coef.fill(0.0)
        np.divide(minus_two_w2, norm, out=coef, where=norm > _TINY)
        np.multiply(dot, coef.astype(work)[:, None], out=obj)
        obj += two_w2
        # The argument is >= 0 up to rounding; |.| is as close to it as a clip at 0.
        np.abs(obj, out=obj)
        np.sqrt(obj, out=obj)
        obj += base
        best = argmax_rows(obj, rtol)
        picks[:, step] = best
        scores[:, step] = obj[rows, best]
        base[rows, best] = -np.inf
        if step + 1 < k:
            slots[active] = store.slots(best[active])
            dot += store.columns[slots]
            total += prep.unit_rows(best)  # rows with lambda = 1 never use theirs
    return picks, scores


def gmmr_select(
    prep: PreparedInputs, *, lambda_mult: float = 0.5, **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """gMMR picks for one ``lambda_mult`` (see module docstring)."""
    picks, scores = gmmr_sweep(prep, np.array([lambda_mult]))
    return picks[0], scores[0]


def _check(params: dict[str, Any]) -> dict[str, Any]:
    params["lambda_mult"] = check_unit_interval(params["lambda_mult"], "lambda_mult")
    return params


SPEC = MethodSpec(
    name="gmmr",
    run=gmmr_select,
    defaults={"lambda_mult": 0.5},
    check=_check,
    param="lambda_mult",
    run_sweep=gmmr_sweep,
)
