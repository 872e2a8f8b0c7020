"""Bookkeeping shared by the batched sweeps (every parameter value of a method at once)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..registry import IndexScores
from ..validation import PreparedInputs
from ._common import argmax_first, argmax_rows
from .topk import topk_select

__all__ = ["pure_relevance_rows", "GreedySweep"]

def pure_relevance_rows(sweep_live: Callable[..., IndexScores]) -> Callable[..., IndexScores]:
    """A sweep over ``diversity`` values from one over the values above 0.

    The rows of the values at 0 (pure relevance) are the top-k; ``sweep_live(prep,
    values, **params)`` gets the others, in order, and returns their (L', k) rows.
    """

    @functools.wraps(sweep_live)
    def sweep(prep: PreparedInputs, values: NDArray[np.float64], **params: Any) -> IndexScores:
        div = np.asarray(values, dtype=np.float64).reshape(-1)
        picks = np.empty((div.shape[0], prep.k), dtype=np.int64)
        scores = np.empty((div.shape[0], prep.k), dtype=np.float64)
        pure = div == 0.0
        if pure.any():
            picks[pure], scores[pure] = topk_select(prep)
        live = np.flatnonzero(~pure)
        if live.size:
            picks[live], scores[live] = sweep_live(prep, div[live], **params)
        return picks, scores

    return sweep


class GreedySweep:
    """The outputs and the bookkeeping of a batched greedy run over ``L`` parameter values
    whose first pick is the most relevant candidate (``mmr``, ``gmmr``, ``msd``, ``ssd``).

    Attributes:
        picks, scores: the (L, k) outputs; column 0 of ``picks`` holds :attr:`first`
            (the caller writes the first scores).
        first: the most relevant candidate (lowest index among near-ties).
        taken: (L, n), ``True`` where a value picked the candidate.
        rows: ``arange(L)``.

    Example:
        >>> import numpy as np
        >>> from diverse_core.validation import prepare_inputs
        >>> prep = prepare_inputs(np.array([1.0, 0.0]), np.array([[1.0, 0.1], [0.0, 1.0], [1.0, 0.0]]), k=2)
        >>> run = GreedySweep(prep, n_values=2)
        >>> run.first
        2
        >>> run.take(np.array([[0.5, 0.2, 9.0], [0.1, 0.3, 9.0]]), step=1).tolist()
        [0, 1]
    """

    def __init__(self, prep: PreparedInputs, n_values: int) -> None:
        self.rtol = prep.tie_rtol
        self.rows = np.arange(n_values)
        self.picks = np.empty((n_values, prep.k), dtype=np.int64)
        self.scores = np.empty((n_values, prep.k), dtype=np.float64)
        self.first = argmax_first(prep.relevance, self.rtol)
        self.picks[:, 0] = self.first
        self.taken = np.zeros((n_values, prep.n), dtype=bool)
        self.taken[:, self.first] = True

    def take(self, obj: NDArray[np.float64], step: int) -> NDArray[np.int64]:
        """Step ``step`` of every value: each row's tolerant argmax of ``obj`` (L, n) among
        the candidates it has not taken (``obj`` is set to ``-inf`` there), recorded with
        its objective; returns the picks."""
        obj[self.taken] = -np.inf
        best = argmax_rows(obj, self.rtol)
        self.picks[:, step] = best
        self.scores[:, step] = obj[self.rows, best]
        self.taken[self.rows, best] = True
        return best
