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
from ..validation import PreparedInputs, check_unit_interval
from ._common import SimilarityColumns, argmax_rows

__all__ = ["gmmr_select", "gmmr_sweep", "SPEC"]

_TINY = 1e-12


def gmmr_sweep(
    prep: PreparedInputs, values: NDArray[np.float64], **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """gMMR for every ``lambda_mult`` in ``values`` at once; returns (L, k) picks and scores."""
    rel, k = prep.relevance, prep.k
    lam = np.asarray(values, dtype=np.float64).reshape(-1, 1)
    n_values, n = lam.shape[0], rel.shape[0]
    rows = np.arange(n_values)
    picks = np.empty((n_values, k), dtype=np.int64)
    scores = np.empty((n_values, k), dtype=np.float64)
    sims = SimilarityColumns(prep)
    rtol = prep.tie_rtol
    first = argmax_rows(rel[None, :], rtol)[0]
    picks[:, 0] = first
    scores[:, 0] = rel[first]
    if k == 1:
        return picks, scores
    # The (L, n) arrays are in the working precision (float32 for float32 input).
    work = prep.vectors.dtype
    # dot[l, i] = <c_i, sum of value l's picks>; total[l] = that sum (unit picks, float64),
    # whose norm is taken directly: the picks can nearly cancel out, and
    # ||sum||^2 = sum of their pairwise cosines would then lose every digit.
    dot = np.repeat(sims.column(int(first))[None, :].astype(work), n_values, axis=0)
    total = np.repeat(prep.unit_rows(np.array([first])), n_values, axis=0)
    # base[l, i] = lambda_l * rel_i, or -inf once value l picked candidate i.
    base = (lam * rel[None, :]).astype(work)
    base[:, first] = -np.inf
    # (1 - lambda) * sqrt(2 - 2 cos) = sqrt(max(w2 * (2 - 2 * dot / norm), 0)), w2 = (1 - lambda)^2
    w2 = (1.0 - lam) ** 2
    two_w2 = (2.0 * w2).astype(work)
    obj = np.empty((n_values, n), dtype=work)
    for step in range(1, k):
        norm = np.sqrt(np.einsum("ld,ld->l", total, total))[:, None]
        # zero-length centroid (the picks cancel out): distance sqrt(2) to everyone
        coef = np.where(norm <= _TINY, 0.0, -2.0 * w2 / np.maximum(norm, _TINY))
        np.multiply(dot, coef.astype(work), out=obj)
        obj += two_w2
        np.maximum(obj, 0.0, out=obj)
        np.sqrt(obj, out=obj)
        obj += base
        best = argmax_rows(obj, rtol)
        picks[:, step] = best
        scores[:, step] = obj[rows, best]
        base[rows, best] = -np.inf
        if step + 1 < k:
            total += prep.unit_rows(best)
            np.add(dot, sims.rows(best), out=dot, casting="same_kind")
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
