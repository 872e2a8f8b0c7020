"""``ssd``: Sliding Spectrum Decomposition, greedy (the ``ssd`` strategy of pyversity).

Huang et al., "Sliding Spectrum Decomposition for Diversified Recommendation"
(KDD 2021), in its stabilised form (SSD*, Eq. 12). Every candidate is the vector
``x_c = [c / |c|, 1]`` (unit embedding plus the paper's constant bias coordinate,
Sec. 5.3). Objective of candidate ``c`` given the picks::

    (1 - diversity) * z(c) + diversity * gamma * |r_c|

where ``z`` is the z-scored relevance (mean subtracted, divided by the standard
deviation when it is not 0) and ``r_c`` is the residual of ``x_c`` after
Gram-Schmidt against the bases of the last ``window`` picks: the length of
what is new in ``c`` relative to what was just shown. The first pick is the most
relevant candidate. A basis that leaves the window gives its projection back to
the residuals (the "sliding" part); with ``window >= k`` (the default,
``window=None`` means ``k``) nothing leaves and the residual is the distance to
the span of all picks.

Parameters: ``diversity`` in ``[0, 1]``; **higher is more diverse**; ``0`` is pure
relevance (the top-k). ``gamma > 0`` scales the diversity term. ``window`` (a
positive integer or ``None``) is the sliding window. These are pyversity's
``diversity``, ``gamma`` and ``window`` (with its defaults ``append_bias=True``,
``normalize_scores=True`` and no ``recent_embeddings``): the same input gives the same
picks as ``pyversity.ssd`` up to ties (pyversity works in float32), including its
``eps32`` guard in the projection coefficients.

Speed. Neither the residual matrix nor the bases are formed: everything is kept
as inner products (``<r_c, b> = <x_c, b> - sum_s a_sc <b_s, b>``, see ``_Window``), so
each step costs one similarity column of the new pick (all of them in one product
up front for pools up to ``GRAM_MAX_N``) plus ``O(window * n)`` work, where pyversity
rewrites the whole ``(n, d)`` residual matrix. :func:`ssd_sweep` runs
every ``diversity`` value together on ``(L, window, n)`` arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..validation import PreparedInputs, check_k, check_positive
from ._common import SimilarityColumns, StepColumns, argmax_first
from ._spec import diversity_method, optional
from ._sweep import GreedySweep, pure_relevance_rows
from .dpp import EPS32, zscore
from .topk import topk_select

__all__ = ["ssd_select", "ssd_sweep", "SPEC"]

_SQRT2 = float(np.sqrt(2.0))


class _Window:
    """The sliding window of Gram-Schmidt bases of ``L`` values, advanced together.

    Kept in kernel form, never as ``(d + 1)``-vectors: per slot ``s`` the inner
    products ``P[s, c] = <x_c, b_s>`` with every candidate, the coefficients
    ``a[s, c]`` of the residuals ``r_c = x_c - sum_s a[s, c] b_s``, and the Gram
    matrix ``B[s, t] = <b_s, b_t>`` of the bases. A new basis is the residual of a
    pick ``p``, ``b = x_p - sum_s a[s, p] b_s``, so all it needs from the vectors is
    the column ``<x_c, x_p> = cos(c, p) + 1``.
    """

    def __init__(self, prep: PreparedInputs, n_values: int, size: int) -> None:
        n = prep.n
        self.size = size
        self.count = 0
        self.head = 0
        self.x_dots = np.zeros((n_values, size, n))
        self.coef = np.zeros((n_values, size, n))
        self.gram = np.zeros((n_values, size, size))
        self.cols = SimilarityColumns(prep, n_values * (prep.k - 1))
        self.rows = np.arange(n_values)

    def push(self, picks: NDArray[np.int64], taken: NDArray[np.bool_], sq: NDArray[np.float64]) -> None:
        """Add the residual of each value's pick as a basis (evicting the oldest when full).

        Updates the squared residual norms ``sq`` (L, n) in place.
        """
        h, rows = self.head, self.rows
        a = self.coef[rows, :, picks]  # (L, W): the pick's coefficients before any eviction
        # <x_c, b> and <b_s, b> for the new basis b, against the bases held now
        xb = self.cols.rows(picks) + 1.0
        xb -= np.einsum("lwn,lw->ln", self.x_dots, a)
        bb = self.x_dots[rows, :, picks] - np.einsum("lst,lt->ls", self.gram, a)
        base_sq = xb[rows, picks] - np.einsum("ls,ls->l", a, bb)
        if self.count == self.size:
            # <r_c, b_h> of the leaving basis; its projection goes back to the residuals
            proj = self.x_dots[:, h] - np.einsum("lwn,lw->ln", self.coef, self.gram[:, :, h])
            back = np.where(taken, 0.0, self.coef[:, h])
            sq += back * (2.0 * proj + back * self.gram[:, h, h][:, None])
            self.coef[:, h] = 0.0
        else:
            self.count += 1
        bb[:, h] = 0.0  # slot h is empty now (or was never filled)
        proj = xb - np.einsum("lwn,lw->ln", self.coef, bb)
        coef = proj / (base_sq + EPS32)[:, None]
        coef[taken] = 0.0
        sq -= coef * (2.0 * proj - coef * base_sq[:, None])
        np.maximum(sq, 0.0, out=sq)
        self.x_dots[:, h] = xb
        self.coef[:, h] = coef
        self.gram[:, h, :] = bb
        self.gram[:, :, h] = bb
        self.gram[:, h, h] = base_sq
        self.head = (h + 1) % self.size


@pure_relevance_rows
def ssd_sweep(
    prep: PreparedInputs,
    values: NDArray[np.float64],
    *,
    gamma: float = 1.0,
    window: int | None = None,
    **_: Any,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """SSD for every ``diversity`` in ``values`` at once; returns (L, k) picks and scores
    (:func:`pure_relevance_rows`: the values at 0 are the top-k)."""
    rel, k, n = prep.relevance, prep.k, prep.n
    div = np.asarray(values, dtype=np.float64).reshape(-1)
    z = zscore(rel, 0.0)
    theta = 1.0 - div
    base = theta[:, None] * z[None, :]
    weight = ((1.0 - theta) * gamma)[:, None]
    n_live = div.shape[0]
    run = GreedySweep(prep, n_live)
    run.scores[:, 0] = base[:, run.first] + weight[:, 0] * _SQRT2
    if k == 1:
        return run.picks, run.scores
    sq = np.full((n_live, n), 2.0)  # |x_c|^2 = |unit c|^2 + 1
    win = _Window(prep, n_live, k if window is None else int(window))
    best = np.full(n_live, run.first, dtype=np.int64)
    obj = np.empty((n_live, n))
    for step in range(1, k):
        win.push(best, run.taken, sq)
        np.sqrt(sq, out=obj)
        obj *= weight
        obj += base
        best = run.take(obj, step)
    return run.picks, run.scores


def _ssd_one(
    prep: PreparedInputs, div: float, gamma: float, size: int
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """One value of :func:`ssd_sweep` on 2-D arrays (the ``_Window`` state of a single value)."""
    rel, k, n, rtol = prep.relevance, prep.k, prep.n, prep.tie_rtol
    theta = 1.0 - div
    base = theta * zscore(rel, 0.0)  # -inf once picked
    weight = div * gamma
    picks = np.empty(k, dtype=np.int64)
    scores = np.empty(k, dtype=np.float64)
    win = argmax_first(rel, rtol)
    picks[0], scores[0] = win, base[win] + weight * _SQRT2
    # <x_c, x_p> = cos(c, p) + 1 (the bias coordinate), in float64
    column = StepColumns(prep, k - 1, post=lambda col: np.add(col, 1.0, dtype=np.float64)).column
    x_dots = np.zeros((size, n))
    coef = np.zeros((size, n))
    gram = np.zeros((size, size))
    sq = np.full(n, 2.0)
    count = head = 0
    for step in range(1, k):
        base[win] = -np.inf
        col = column(win)
        a = coef[:, win].copy()
        xb = col - a @ x_dots
        bb = x_dots[:, win] - gram @ a
        base_sq = float(xb[win] - a @ bb)
        done = picks[:step]
        if count == size:
            proj = x_dots[head] - gram[:, head] @ coef
            back = coef[head].copy()
            back[done] = 0.0
            sq += back * (2.0 * proj + back * gram[head, head])
            coef[head] = 0.0
        else:
            count += 1
        bb[head] = 0.0
        proj = xb - bb @ coef
        new = proj / (base_sq + EPS32)
        new[done] = 0.0
        sq -= new * (2.0 * proj - new * base_sq)
        np.maximum(sq, 0.0, out=sq)
        x_dots[head], coef[head] = xb, new
        gram[head, :], gram[:, head] = bb, bb
        gram[head, head] = base_sq
        head = (head + 1) % size
        obj = np.sqrt(sq)
        obj *= weight
        obj += base
        win = argmax_first(obj, rtol)
        picks[step], scores[step] = win, obj[win]
    return picks, scores


def ssd_select(
    prep: PreparedInputs,
    *,
    diversity: float = 0.5,
    gamma: float = 1.0,
    window: int | None = None,
    **_: Any,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """SSD picks for one ``diversity`` (see module docstring): one row of :func:`ssd_sweep`."""
    if diversity == 0.0:
        return topk_select(prep)
    return _ssd_one(prep, float(diversity), float(gamma), prep.k if window is None else int(window))


SPEC = diversity_method(
    "ssd", ssd_select, ssd_sweep, gamma=(1.0, check_positive), window=(None, optional(check_k))
)
