"""``mmr``: classical Maximal Marginal Relevance (Carbonell & Goldstein, 1998).

Objective of candidate ``c`` given the picks ``S``::

    lambda_mult * cos(q, c) - (1 - lambda_mult) * max_{s in S} cos(c, s)

``lambda_mult = 1`` is pure relevance (top-k), ``lambda_mult = 0`` pure novelty:
the same convention and parameter name as LangChain's
``maximal_marginal_relevance``, and the same picks for the same input.
The first pick is the most relevant candidate.

Speed. A candidate's objective can only fall as picks are added (its maximum
similarity to the picks can only grow), so its value after the first pick is an
upper bound for good. :func:`mmr_select` on pools of at least :data:`LAZY_MIN_N`
items exploits this: after the first pick's similarity column (one matrix-vector
product) it follows only the ``_SHORT_LIST`` candidates with the highest bound,
exactly (one small product per step), as long as every other candidate's bound
stays below the best objective minus the tie tolerance; otherwise it falls back to
the eager computation (:func:`mmr_sweep`, which scores every candidate at every
step). Either way the picks are the exact greedy picks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..registry import MethodSpec
from ..validation import PreparedInputs, check_unit_interval
from ._common import SimilarityColumns, argmax_rows

__all__ = ["mmr_select", "mmr_sweep", "LAZY_MIN_N", "SPEC"]

#: Pools at least this large use the lazy (bound-and-refresh) single-value path.
LAZY_MIN_N = 128
#: Candidates (best by their bound after the first pick) the lazy path follows exactly.
_SHORT_LIST = 192


def mmr_sweep(
    prep: PreparedInputs, values: NDArray[np.float64], **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """MMR for every ``lambda_mult`` in ``values`` at once; returns (L, k) picks and scores."""
    rel, k = prep.relevance, prep.k
    lam = np.asarray(values, dtype=np.float64).reshape(-1, 1)
    n_values, n = lam.shape[0], rel.shape[0]
    rows = np.arange(n_values)
    picks = np.empty((n_values, k), dtype=np.int64)
    scores = np.empty((n_values, k), dtype=np.float64)
    taken = np.zeros((n_values, n), dtype=bool)
    sims = SimilarityColumns(prep)
    # First pick: the most relevant candidate (the redundancy term is empty).
    rtol = prep.tie_rtol
    first = argmax_rows(rel[None, :], rtol)[0]
    picks[:, 0] = first
    scores[:, 0] = lam[:, 0] * rel[first]
    taken[:, first] = True
    if k == 1:
        return picks, scores
    relevance_term = lam * rel[None, :]
    penalty = 1.0 - lam
    max_sim = np.repeat(sims.column(int(first))[None, :], n_values, axis=0)
    obj = np.empty((n_values, n), dtype=np.float64)
    for step in range(1, k):
        np.multiply(penalty, max_sim, out=obj)
        np.subtract(relevance_term, obj, out=obj)
        obj[taken] = -np.inf
        best = argmax_rows(obj, rtol)
        picks[:, step] = best
        scores[:, step] = obj[rows, best]
        taken[rows, best] = True
        if step + 1 < k:
            # Similarity of every candidate to each value's latest pick (cached per item).
            np.maximum(max_sim, sims.rows(best), out=max_sim)
    return picks, scores


def _mmr_lazy(prep: PreparedInputs, lam: float) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Exact MMR for one value on a short list, falling back to the eager pass when needed."""
    rel, k, n, rtol = prep.relevance, prep.k, prep.n, prep.tie_rtol
    first = int(argmax_rows(rel[None, :], rtol)[0])
    relevance_term = lam * rel
    penalty = 1.0 - lam
    col = prep.cosine_rows([first])[0]
    upper = relevance_term - penalty * col  # exact for the second pick, a bound afterwards
    upper[first] = -np.inf
    size = min(_SHORT_LIST, n - 1)
    short = np.argpartition(upper, n - size)[n - size :]
    rest = np.ones(n, dtype=bool)
    rest[short] = False
    outside = float(upper[rest].max())  # no candidate off the list ever scores above this
    vec, inv_norms = prep.vectors, prep.inv_norms
    short_vec = vec[short]  # (size, d) in the working precision
    short_inv = inv_norms[short]
    short_rel = relevance_term[short]
    max_sim = col[short]
    blocked = np.zeros(size)
    blocked[short == first] = -np.inf
    picks = np.empty(k, dtype=np.int64)
    scores = np.empty(k, dtype=np.float64)
    picks[0], scores[0] = first, lam * rel[first]
    for step in range(1, k):
        obj = short_rel - penalty * max_sim + blocked
        best = float(obj.max())
        floor = best - rtol * max(1.0, abs(best))
        if outside >= floor:  # a candidate off the list might tie or win: do it all eagerly
            eager_picks, eager_scores = mmr_sweep(prep, np.array([lam]))
            return eager_picks[0], eager_scores[0]
        tied = (obj >= floor).nonzero()[0]
        pos = int(tied[np.argmin(short[tied])])  # ties go to the lowest candidate index
        win = int(short[pos])
        picks[step], scores[step] = win, obj[pos]
        blocked[pos] = -np.inf
        if step + 1 < k:
            new = (short_vec @ vec[win]).astype(np.float64)
            new *= short_inv * inv_norms[win]
            np.maximum(max_sim, new, out=max_sim)
    return picks, scores


def mmr_select(
    prep: PreparedInputs, *, lambda_mult: float = 0.5, **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """MMR picks for one ``lambda_mult`` (see module docstring)."""
    if prep.n >= LAZY_MIN_N and prep.k > 2:
        return _mmr_lazy(prep, float(lambda_mult))
    picks, scores = mmr_sweep(prep, np.array([lambda_mult]))
    return picks[0], scores[0]


def _check(params: dict[str, Any]) -> dict[str, Any]:
    params["lambda_mult"] = check_unit_interval(params["lambda_mult"], "lambda_mult")
    return params


SPEC = MethodSpec(
    name="mmr",
    run=mmr_select,
    defaults={"lambda_mult": 0.5},
    check=_check,
    param="lambda_mult",
    run_sweep=mmr_sweep,
)
