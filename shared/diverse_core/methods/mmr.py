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
product) it follows only the candidates with the highest bound (a short list,
one small product per step) as long as every other candidate's bound stays below
the best objective minus the tie tolerance, and follows more (every candidate that could reach it, and at least twice as many
as before) when not.
The picks are exactly those of the eager computation (:func:`mmr_sweep`, which
scores every candidate at every step for all values).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..registry import MethodSpec
from ..validation import PreparedInputs, check_unit_interval
from ._common import SimilarityColumns, argmax_first, argmax_rows

__all__ = ["mmr_select", "mmr_sweep", "LAZY_MIN_N", "SPEC"]

#: Pools at least this large use the lazy (bound-and-refresh) single-value path.
LAZY_MIN_N = 16
#: Candidates (best by their bound after the first pick) the lazy path follows exactly.
_SHORT_LIST = 256


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
    first = argmax_first(rel, rtol)
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
    """Exact MMR for one value, following only the candidates that can still win."""
    rel, k, n, rtol = prep.relevance, prep.k, prep.n, prep.tie_rtol
    vec, inv_norms = prep.vectors, prep.inv_norms
    first = argmax_first(rel, rtol)
    relevance_term = lam * rel
    penalty = 1.0 - lam
    col = prep.cosine_rows([first])[0]
    bound = relevance_term - penalty * col  # exact for the second pick, a bound afterwards
    bound[first] = -np.inf
    picks = np.empty(k, dtype=np.int64)
    scores = np.empty(k, dtype=np.float64)
    unit_picks = np.empty((k, vec.shape[1]), dtype=vec.dtype)
    picks[0], scores[0] = first, lam * rel[first]
    np.multiply(vec[first], inv_norms[first], out=unit_picks[0], casting="same_kind")
    # The followed candidates ("short list"), each with its exact max similarity to the picks.
    short = np.empty(0, dtype=np.int64)
    short_vec = np.empty((0, vec.shape[1]), dtype=vec.dtype)
    short_base = np.empty(0)  # lambda * relevance of the listed, -inf once picked
    short_inv = np.empty(0)
    max_sim = np.empty(0)
    blocked = np.empty(0)  # -inf at the list positions already picked
    off = np.ones(n, dtype=bool)  # not followed yet
    off[first] = False
    outside = np.inf  # no candidate off the list scores above this, now or later
    size = min(_SHORT_LIST, n - 1)
    step = 1
    while step < k:
        if outside < np.inf:
            obj = short_base - penalty * max_sim
            best = float(obj.max())
            floor = best - rtol * max(1.0, abs(best))
        if outside == np.inf or outside >= floor:
            # Follow more candidates: the next `size` by their bound, exact against the picks.
            rest = off.nonzero()[0]
            if outside < np.inf:  # at least every candidate that could reach the floor now
                size = max(size, int(np.count_nonzero(bound[rest] >= floor)))
            add = rest if rest.size <= size else rest[np.argpartition(bound[rest], -size)[-size:]]
            add_vec = vec[add]
            if step == 1:  # one pick so far: its similarity column is at hand
                sims = col[add]
            else:
                sims = (add_vec @ unit_picks[:step].T).max(axis=1).astype(np.float64)
                sims *= inv_norms[add]
            if short.size:
                short = np.concatenate([short, add])
                short_vec = np.concatenate([short_vec, add_vec])
                max_sim = np.concatenate([max_sim, sims])
                blocked = np.concatenate([blocked, np.zeros(add.size)])
            else:  # the first list: nothing to append to
                short, short_vec, max_sim, blocked = add, add_vec, sims, np.zeros(add.size)
            short_base = relevance_term[short] + blocked
            short_inv = inv_norms[short]
            off[add] = False
            outside = float(bound[off].max()) if off.any() else -np.inf
            size *= 2
            continue
        tied = (obj >= floor).nonzero()[0]
        # ties go to the lowest candidate index
        pos = int(tied[0]) if tied.size == 1 else int(tied[np.argmin(short[tied])])
        win = int(short[pos])
        picks[step], scores[step] = win, obj[pos]
        blocked[pos] = short_base[pos] = -np.inf
        np.multiply(vec[win], inv_norms[win], out=unit_picks[step], casting="same_kind")
        step += 1
        if step < k:
            # float32 products are scaled in float64 (the promotion happens in the multiply)
            new = np.multiply(short_vec @ unit_picks[step - 1], short_inv)
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
