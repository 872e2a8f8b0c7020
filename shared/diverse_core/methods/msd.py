"""``msd``: Max Sum of Distances, greedy (Borodin, Lee & Ye, PODS 2012; the ``msd`` strategy of pyversity).

Objective of candidate ``c`` given the picks ``S``::

    (1 - diversity) * rel(c) + diversity * sum_{s in S} (1 - cos(c, s))

with ``cos`` clipped to ``[-1, 1]``. The first pick is the most relevant candidate.
Unlike MMR, whose penalty is the distance to the *closest* pick, MSD rewards the
*total* distance to every pick, so it favours items far from the bulk of the
selection (outliers) and its diversity term grows with the number of picks.

Parameter: ``diversity`` in ``[0, 1]``; **higher is more diverse**. ``0`` is pure
relevance (top-k), ``1`` pure dispersion. It is pyversity's ``diversity`` exactly
(``lambda = 1 - diversity`` in the paper's notation); the same input gives the same
picks as ``pyversity.msd`` up to ties (pyversity works in float32).

Speed. The sum of distances to the picks is ``t - <c, sum_s u_s> / |c|`` (``t`` the
number of picks, ``u_s`` the unit picks), so each step needs one similarity column
of the new pick; small pools get every column in one product up front when
enough of them will be needed (``gram_pays``). :func:`msd_sweep` runs every ``diversity`` value together on ``(L, n)``
arrays, sharing the columns of items several values pick.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..validation import PreparedInputs
from ._common import SimilarityColumns, StepColumns, argmax_first
from ._spec import diversity_method
from ._sweep import GreedySweep

__all__ = ["msd_select", "msd_sweep", "SPEC"]


def msd_sweep(
    prep: PreparedInputs, values: NDArray[np.float64], **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """MSD for every ``diversity`` in ``values`` at once; returns (L, k) picks and scores."""
    rel, k, n = prep.relevance, prep.k, prep.n
    div = np.asarray(values, dtype=np.float64).reshape(-1, 1)
    n_values = div.shape[0]
    run = GreedySweep(prep, n_values)
    relevance_term = (1.0 - div) * rel[None, :]
    run.scores[:, 0] = relevance_term[:, run.first]
    if k == 1:
        return run.picks, run.scores
    sims = SimilarityColumns(prep, n_values * (k - 1))
    # total[l, i]: sum over value l's picks of 1 - clip(cos(c_i, s), -1, 1)
    total = np.repeat(1.0 - np.clip(sims.column(run.first), -1.0, 1.0)[None, :], n_values, axis=0)
    obj = np.empty((n_values, n), dtype=np.float64)
    for step in range(1, k):
        np.multiply(div, total, out=obj)
        obj += relevance_term
        best = run.take(obj, step)
        if step + 1 < k:
            total += 1.0
            total -= np.clip(sims.rows(best), -1.0, 1.0)
    return run.picks, run.scores


def msd_select(
    prep: PreparedInputs, *, diversity: float = 0.5, **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """MSD picks for one ``diversity`` (see module docstring).

    The same computation as one row of :func:`msd_sweep` on 1-D arrays: the running
    objective (picked items at ``-inf``) loses ``diversity * cos`` of each new pick (the
    constant ``diversity`` per pick is added back to the reported scores), so a step is
    an argmax and one row update.
    """
    rel, k, rtol = prep.relevance, prep.k, prep.tie_rtol
    div = float(diversity)
    # obj = (1 - div) * rel - div * sum_s cos(c, s): the objective less the constant div * t
    obj = (1.0 - div) * rel
    picks = np.empty(k, dtype=np.int64)
    scores = np.empty(k, dtype=np.float64)

    def distance_term(col: NDArray[np.floating[Any]]) -> NDArray[np.floating[Any]]:
        col = np.clip(col, -1.0, 1.0, out=col)
        col *= div
        return col

    column = StepColumns(prep, k - 1, post=distance_term).column
    win = argmax_first(rel, rtol)
    for step in range(k):
        picks[step], scores[step] = win, obj[win] + div * step
        if step + 1 == k:
            break
        obj[win] = -np.inf
        obj -= column(win)
        win = argmax_first(obj, rtol)
    return picks, scores


SPEC = diversity_method("msd", msd_select, msd_sweep)
