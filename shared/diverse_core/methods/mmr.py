"""``mmr``: classical Maximal Marginal Relevance (Carbonell & Goldstein, 1998).

Objective of candidate ``c`` given the picks ``S``::

    lambda_mult * cos(q, c) - (1 - lambda_mult) * max_{s in S} cos(c, s)

``lambda_mult = 1`` is pure relevance (top-k), ``lambda_mult = 0`` pure novelty:
the same convention and parameter name as LangChain's
``maximal_marginal_relevance``, and the same picks for the same input.
The first pick is the most relevant candidate.

Speed. A candidate's objective can only fall as picks are added (its maximum
similarity to the picks can only grow), so a value computed against fewer picks is
an upper bound. :func:`mmr_select` on pools of at least :data:`LAZY_MIN_N` items
exploits this: after the first pick's similarity column (one matrix-vector
product), each step refreshes only the candidates whose stale bound can still reach
the best exact objective (a few dozen, in blocks), instead of computing a full
similarity column per pick. The picks are exactly those of the eager computation
(:func:`mmr_sweep`, which scores every candidate at every step for all values).
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
#: Candidates refreshed in the first round of a lazy step (grows 4x per round).
_FIRST_BLOCK = 48
#: Candidates (by bound after the first pick) the lazy steps look at before the rest.
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
    """Exact MMR for one value, refreshing only candidates whose bound can still win."""
    rel, k, n, rtol = prep.relevance, prep.k, prep.n, prep.tie_rtol
    picks = np.empty(k, dtype=np.int64)
    scores = np.empty(k, dtype=np.float64)
    first = int(argmax_rows(rel[None, :], rtol)[0])
    picks[0], scores[0] = first, lam * rel[first]
    if k == 1:
        return picks, scores
    relevance_term = lam * rel
    penalty = 1.0 - lam
    known = prep.cosine_rows([first])[0]  # max similarity to picks[:seen], a lower bound
    seen = np.ones(n, dtype=np.int64)  # how many leading picks `known` covers (1 or `step`)
    upper = relevance_term - penalty * known  # exact where seen == step, else an upper bound
    upper[first] = -np.inf
    vec, inv_norms = prep.vectors, prep.inv_norms
    unit_picks = np.empty((k, vec.shape[1]), dtype=vec.dtype)  # in the working precision
    unit_picks[0] = vec[first] * inv_norms[first]
    # Bounds only fall, so a candidate outside the initial top `short` stays below
    # `outside` for good: steps work on the short list until the tie floor drops
    # below that value, then on the whole pool.
    short = min(_SHORT_LIST, n)
    cands = np.argpartition(upper, n - short)[n - short :]
    outside = float(upper[cands].min()) if short < n else -np.inf
    for step in range(1, k):
        block = min(_FIRST_BLOCK, cands.size)
        while True:
            # The `block` largest values of `upper` among `cands` (bounds or exact) ...
            part = upper[cands]
            pos = np.argpartition(part, part.size - block)[part.size - block :]
            top = cands[pos]
            cut = max(float(part[pos].min()) if block < part.size else -np.inf, outside)
            stale = top[(seen[top] < step) & (part[pos] > -np.inf)]  # never a pick
            if stale.size:  # one small product against every pick so far
                sims = (vec[stale] @ unit_picks[:step].T).max(axis=1)
                known[stale] = sims * inv_norms[stale]
                seen[stale] = step
                upper[stale] = relevance_term[stale] - penalty * known[stale]
            # ... are now exact; every other candidate's objective is <= cut.
            best = float(upper[top].max())
            floor = best - rtol * max(1.0, abs(best))
            if cut < floor:
                break
            if outside >= floor:  # leave the short list for the whole pool
                cands, outside = np.arange(n), -np.inf
            block = min(4 * block, cands.size)
        tied = top[upper[top] >= floor]
        win = int(tied.min())
        picks[step], scores[step] = win, upper[win]
        upper[win] = -np.inf
        unit_picks[step] = vec[win] * inv_norms[win]
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
