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

from ..registry import MethodSpec
from ..validation import PreparedInputs, check_unit_interval
from ._common import SimilarityColumns, argmax_rows

__all__ = ["mmr_select", "mmr_sweep", "SPEC"]


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
    first = argmax_rows(rel[None, :])[0]
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
        best = argmax_rows(obj)
        picks[:, step] = best
        scores[:, step] = obj[rows, best]
        taken[rows, best] = True
        if step + 1 < k:
            # Similarity of every candidate to each value's latest pick (cached per item).
            np.maximum(max_sim, sims.rows(best), out=max_sim)
    return picks, scores


def mmr_select(
    prep: PreparedInputs, *, lambda_mult: float = 0.5, **_: Any
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """MMR picks for one ``lambda_mult`` (see module docstring)."""
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
