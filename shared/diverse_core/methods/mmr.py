"""``mmr``: classical Maximal Marginal Relevance (Carbonell & Goldstein, 1998).

Objective of candidate ``c`` given the picks ``S``::

    lambda_mult * cos(q, c) - (1 - lambda_mult) * max_{s in S} cos(c, s)

``lambda_mult = 1`` is pure relevance (top-k), ``lambda_mult = 0`` pure novelty:
the same convention and parameter name as LangChain's
``maximal_marginal_relevance``, and the same picks for the same input.
The first pick is the most relevant candidate.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..validation import PreparedInputs
from ._common import SimilarityColumns
from ._spec import lambda_mult_method
from ._sweep import GreedySweep

__all__ = ["mmr_select", "mmr_sweep", "SPEC"]


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


def mmr_select(
    prep: PreparedInputs, *, lambda_mult: float = 0.5, **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """MMR picks for one ``lambda_mult`` (see module docstring): the row of :func:`mmr_sweep`."""
    picks, scores = mmr_sweep(prep, np.array([float(lambda_mult)]))
    return picks[0], scores[0]


SPEC = lambda_mult_method("mmr", mmr_select, mmr_sweep)
