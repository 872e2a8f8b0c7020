"""``topk``: plain relevance (cosine) top-k, the baseline every other method is compared with."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..registry import DiversityMap, MethodSpec
from ..validation import PreparedInputs

__all__ = ["topk_select", "SPEC"]


def topk_select(prep: PreparedInputs, **_: Any) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The ``k`` most relevant candidates, most relevant first.

    Ties keep input order (stable sort). The objective value is the relevance itself.
    """
    neg = -prep.relevance
    k = prep.k
    if k < neg.shape[0]:
        # Every candidate tied with or above the k-th value, in input order; a stable
        # sort of those keeps tied candidates in input order as a full sort would.
        kth = np.partition(neg, k - 1)[k - 1]
        pool = np.flatnonzero(neg <= kth)
        order = pool[np.argsort(neg[pool], kind="stable")[:k]].astype(np.int64)
    else:
        order = np.argsort(neg, kind="stable").astype(np.int64)
    return order, prep.relevance[order].copy()


SPEC = MethodSpec(
    name="topk",
    run=topk_select,
    defaults={},
    guarded=False,
    diversity=DiversityMap(
        None, formula="no trade-off: the top-k at every diversity (its one setting)", constant=True,
    ),
)
