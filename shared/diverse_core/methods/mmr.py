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

from ..validation import PreparedInputs
from ._common import GRAM_MAX_N, SimilarityColumns, StepColumns, argmax_first
from ._spec import lambda_mult_method
from ._sweep import GreedySweep

__all__ = ["mmr_select", "mmr_sweep", "LAZY_MIN_N", "SPEC"]

#: Pools at least this large use the lazy (bound-and-refresh) single-value path.
LAZY_MIN_N = 16
#: Candidates (best by their bound after the first pick) the lazy path follows exactly.
_SHORT_LIST = 256


def mmr_sweep(
    prep: PreparedInputs, values: NDArray[np.float64], **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """MMR for every ``lambda_mult`` in ``values`` at once; returns (L, k) picks and scores."""
    rel, k, n = prep.relevance, prep.k, prep.n
    lam = np.asarray(values, dtype=np.float64).reshape(-1, 1)
    # First pick: the most relevant candidate (the redundancy term is empty).
    run = GreedySweep(prep, lam.shape[0])
    run.scores[:, 0] = lam[:, 0] * rel[run.first]
    if k == 1:
        return run.picks, run.scores
    sims = SimilarityColumns(prep)
    relevance_term = lam * rel[None, :]
    penalty = 1.0 - lam
    max_sim = np.repeat(sims.column(run.first)[None, :], lam.shape[0], axis=0)
    obj = np.empty((lam.shape[0], n), dtype=np.float64)
    for step in range(1, k):
        np.multiply(penalty, max_sim, out=obj)
        np.subtract(relevance_term, obj, out=obj)
        best = run.take(obj, step)
        if step + 1 < k:
            # Similarity of every candidate to each value's latest pick (cached per item).
            np.maximum(max_sim, sims.rows(best), out=max_sim)
    return run.picks, run.scores


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
    picks[0], scores[0] = first, lam * rel[first]
    # The first short list: the `size` best bounds, from one partition of all of them;
    # the best bound left off the list caps every other candidate (-inf: none is left).
    size = min(_SHORT_LIST, n - 1)
    order = np.argpartition(bound, n - 1 - size)
    short = order[n - size :]
    outside = float(bound[order[n - 1 - size]])
    off = np.ones(n, dtype=bool)  # not followed yet
    off[first] = False
    off[short] = False
    short_vec = vec[short]
    # Per listed candidate: lambda * relevance (-inf once picked); (1 - lambda) * its
    # exact max similarity to the picks; (1 - lambda) / its norm.
    short_base = relevance_term[short]
    pen_sim = penalty * col[short]
    short_scale = penalty * inv_norms[short]
    size *= 2
    step = 1
    while step < k:
        obj = short_base - pen_sim
        best = float(obj.max())
        floor = best - rtol * max(1.0, abs(best))
        if outside >= floor:
            # Follow more candidates: at least every one that could reach the floor now
            # (and twice as many as last time), exact against the picks so far.
            rest = off.nonzero()[0]
            size = max(size, int(np.count_nonzero(bound[rest] >= floor)))
            add = rest if rest.size <= size else rest[np.argpartition(bound[rest], -size)[-size:]]
            add_vec = vec[add]
            done = picks[:step]
            units = prep.unit_rows(done).astype(vec.dtype, copy=False)
            sims = (add_vec @ units.T).max(axis=1).astype(np.float64)
            sims *= inv_norms[add]
            short = np.concatenate([short, add])
            short_vec = np.concatenate([short_vec, add_vec])
            short_base = np.concatenate([short_base, relevance_term[add]])
            pen_sim = np.concatenate([pen_sim, penalty * sims])
            short_scale = np.concatenate([short_scale, penalty * inv_norms[add]])
            off[add] = False
            outside = float(bound[off].max()) if off.any() else -np.inf
            size *= 2
            continue
        tied = (obj >= floor).nonzero()[0]
        # ties go to the lowest candidate index
        pos = int(tied[0]) if tied.size == 1 else int(tied[np.argmin(short[tied])])
        win = int(short[pos])
        picks[step], scores[step] = win, obj[pos]
        short_base[pos] = -np.inf
        step += 1
        if step < k:
            # (1 - lambda) * cosine to the new pick, from the listed rows as stored
            new = np.multiply(short_vec @ short_vec[pos], short_scale)
            new *= inv_norms[win]
            np.maximum(pen_sim, new, out=pen_sim)
    return picks, scores


def _mmr_small(prep: PreparedInputs, lam: float) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Eager MMR for one value on 1-D arrays (small pools, where per-call overhead dominates).

    The same objective and tie rule as :func:`mmr_sweep`; one similarity column per step
    (:class:`StepColumns`).
    """
    rel, k, n, rtol = prep.relevance, prep.k, prep.n, prep.tie_rtol
    column = StepColumns(prep, k - 1)
    base = lam * rel  # -inf once picked
    penalty = 1.0 - lam
    picks = np.empty(k, dtype=np.int64)
    scores = np.empty(k, dtype=np.float64)
    win = argmax_first(rel, rtol)
    picks[0], scores[0] = win, base[win]
    # max_sim and its scaled copy in the columns' precision; the objective in float64
    max_sim = np.full(n, -np.inf, dtype=column.dtype)
    scaled = np.empty(n, dtype=column.dtype)
    obj = np.empty(n)
    for step in range(1, k):
        base[win] = -np.inf
        np.maximum(max_sim, column.column(win), out=max_sim)
        np.subtract(base, np.multiply(max_sim, penalty, out=scaled), out=obj)
        win = argmax_first(obj, rtol)
        picks[step], scores[step] = win, obj.item(win)
    return picks, scores


def mmr_select(
    prep: PreparedInputs, *, lambda_mult: float = 0.5, **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """MMR picks for one ``lambda_mult`` (see module docstring)."""
    if prep.n <= GRAM_MAX_N:
        return _mmr_small(prep, float(lambda_mult))
    if prep.n >= LAZY_MIN_N and prep.k > 2:
        return _mmr_lazy(prep, float(lambda_mult))
    picks, scores = mmr_sweep(prep, np.array([lambda_mult]))
    return picks[0], scores[0]


SPEC = lambda_mult_method("mmr", mmr_select, mmr_sweep)
