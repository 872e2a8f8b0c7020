"""``cover``: facility-location coverage, greedy (the ``cover`` strategy of pyversity).

Objective of candidate ``c`` given the picks ``S`` (a concave-over-modular
coverage function, Lin & Bilmes, "A Class of Submodular Functions for Document
Summarization", ACL 2011)::

    (1 - diversity) * rel(c) + diversity * (F(S + c) - F(S)),
    F(S) = sum_i (sum_{s in S} sim(i, s)) ** gamma,   sim = clip(cos, 0, 1)

summed over every candidate ``i`` of the pool: a pick is worth how much *new*
coverage of the pool it adds. ``gamma`` in ``(0, 1]`` is the concavity (lower
values reward covering an uncovered region over piling onto a covered one;
``gamma = 1`` is modular, no diminishing returns).

Parameter: ``diversity`` in ``[0, 1]``; **higher is more diverse** (coverage weighs
more). ``0`` is pure relevance (the top-k). These are pyversity's ``diversity``
and ``gamma`` exactly: the same input gives the same picks as ``pyversity.cover``
up to ties (pyversity works in float32). Note that the first pick is the candidate
with the best combined score, not necessarily the most relevant.

Speed. ``F`` is submodular, so a candidate's gain can only fall as picks are
added and its last computed objective is an upper bound (lazy greedy, Minoux
1978). After one pass over the ``(n, n)`` similarity matrix for the first pick,
each step re-evaluates only the candidates whose bound can still reach the best
exact objective (minus the tie tolerance), in batches of growing size; the picks
are exactly the eager ones. pyversity evaluates the full ``(n, n)`` power at every
step. :func:`cover_sweep` shares the similarity matrix and the first pass across
all ``diversity`` values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from ..validation import PreparedInputs, check_unit_interval, product_with_rows
from ._common import argmax_first
from ._spec import diversity_method
from ._sweep import pure_relevance_rows

__all__ = ["cover_select", "cover_sweep", "SPEC"]

#: Candidates re-evaluated exactly in the first round of a lazy step (doubles each round).
_FIRST_BATCH = 8


def _concave(
    x: NDArray[np.floating[Any]], gamma: float, out: NDArray[np.floating[Any]] | None = None
) -> NDArray[np.floating[Any]]:
    """``x ** gamma`` for ``x >= 0`` (square root and identity taken directly), into ``out`` when given."""
    if gamma == 1.0:
        return x
    res: NDArray[np.floating[Any]] = np.sqrt(x, out=out) if gamma == 0.5 else np.power(x, gamma, out=out)
    return res


def _similarity(prep: PreparedInputs) -> NDArray[np.floating[Any]]:
    """``clip(cos, 0, 1)`` of every pair, shape (n, n), in the working precision.

    float32 input keeps the ``(n, n)`` matrix and the coverage sums in float32 (half the
    memory traffic of the per-step passes, as pyversity does); ties are then judged at
    the float32 tolerance (``PreparedInputs.tie_rtol``).
    """
    vec = prep.vectors
    inv = prep.inv_norms.astype(vec.dtype)
    sim = np.asarray(product_with_rows(vec, vec))
    sim *= inv[:, None]
    sim *= inv[None, :]
    return np.clip(sim, 0.0, 1.0, out=sim)


def _greedy(
    sim: NDArray[np.floating[Any]], first_gain: NDArray[np.float64], prep: PreparedInputs, gamma: float,
    diversity: float,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Exact lazy greedy for one ``diversity`` > 0, re-evaluating only candidates that can still win
    (``sim``: :func:`_similarity`; ``first_gain``: every candidate's gain on the empty selection)."""
    rtol, k, n = prep.tie_rtol, prep.k, prep.n
    base = (1.0 - diversity) * prep.relevance
    obj = base + diversity * first_gain  # an upper bound on each candidate's objective, exact where fresh
    picks, scores = np.empty(k, dtype=np.int64), np.empty(k, dtype=np.float64)
    covered = np.zeros(n, sim.dtype)  # sum of the picks' rows of sim
    taken = np.zeros(n, dtype=bool)
    fresh = np.ones(n, dtype=bool)  # obj[i] is exact for the current picks
    for step in range(k):
        size = _FIRST_BATCH
        while True:
            exact = np.where(fresh, obj, -np.inf)
            best = float(exact.max())
            floor = best - rtol * max(1.0, abs(best))
            need = np.flatnonzero(~fresh & (obj >= floor))
            if need.size == 0:
                break
            if need.size > size:
                need = need[np.argpartition(obj[need], need.size - size)[need.size - size :]]
            size *= 2
            before = float(_concave(covered, gamma).sum(dtype=np.float64))
            after = _concave(sim[need] + covered[None, :], gamma).sum(axis=1, dtype=np.float64)
            obj[need] = base[need] + diversity * (after - before)
            fresh[need] = True
        win = argmax_first(np.where(fresh, obj, -np.inf), rtol)
        picks[step], scores[step] = win, obj[win]
        taken[win] = True
        obj[win] = -np.inf
        covered += sim[win]
        fresh[:] = False
        fresh[taken] = True  # picked items stay at -inf
    return picks, scores


@pure_relevance_rows
def cover_sweep(
    prep: PreparedInputs, values: NDArray[np.float64], *, gamma: float = 0.5, **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Cover for every ``diversity`` in ``values``; returns (L, k) picks and scores
    (:func:`pure_relevance_rows`: the values at 0 are the top-k).

    The similarity matrix and the first pass are computed once for all values.
    """
    sim = _similarity(prep)
    first_gain = _concave(sim, gamma).sum(axis=0, dtype=np.float64)
    rows = [_greedy(sim, first_gain, prep, gamma, float(d)) for d in np.asarray(values, dtype=np.float64).reshape(-1)]
    return np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])


def cover_select(
    prep: PreparedInputs, *, diversity: float = 0.5, gamma: float = 0.5, **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Cover picks for one ``diversity`` (see module docstring): one row of :func:`cover_sweep`."""
    picks, scores = cover_sweep(prep, np.array([float(diversity)]), gamma=gamma)
    return picks[0], scores[0]


def _check_gamma(value: object, name: str) -> float:
    gamma = check_unit_interval(value, name)
    if gamma == 0.0:
        raise InvalidParameterError(f"{name} must be in (0, 1]; got {name}={value!r}")
    return gamma


SPEC = diversity_method("cover", cover_select, cover_sweep, gamma=(0.5, _check_gamma))
