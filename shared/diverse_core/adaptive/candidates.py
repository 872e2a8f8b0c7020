"""What the gold probabilities of a set's picks say about the set (the adaptive selector's per-set features).

:class:`~diverse_core.trained.gold.GoldModel` gives each candidate a probability of being gold
evidence; :func:`gold_set_features` turns them into per-set features (expected gold picks,
discounted for picks that repeat an earlier one), over the ``(L, k)`` sets.

Example:
    >>> import numpy as np
    >>> p = np.array([0.9, 0.8, 0.1]); sim = np.eye(3)
    >>> gold_set_features(p, sim, np.array([[0, 1], [0, 2]]))[:, 0].round(2).tolist()  # expected gold picks
    [1.7, 1.0]
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .features import picked_pairs

__all__ = ["GOLD_SET_FEATURES", "gold_set_features"]

FloatArray = NDArray[np.float64]

#: Per-set features from the gold probabilities of its picks.
GOLD_SET_FEATURES = (
    "p_sum",  # expected gold picks
    "p_sum_novel",  # same, counting only picks with cosine < 0.8 to every earlier pick
    "p_sum_discounted",  # each pick's probability times (1 - its cosine to the closest earlier pick)
    "p_max",  # most likely gold pick
    "p_second",  # second most likely
    "p_any",  # probability that at least one pick is gold (independent picks)
)


def gold_set_features(probabilities: ArrayLike, sim: ArrayLike, sets: ArrayLike, novel_below: float = 0.8) -> FloatArray:
    """One row of :data:`GOLD_SET_FEATURES` per set.

    Args:
        probabilities: each candidate's gold probability, shape (n,).
        sim: candidate cosine similarities, shape (n, n), or the picks' columns
            (:func:`~diverse_core.adaptive.features.pick_cosines`, shape (n, L, k)).
        sets: candidate indices of each set in pick order, shape (L, k).
        novel_below: a pick counts as novel when its cosine to every earlier pick is below this.
    """
    p = np.asarray(probabilities, dtype=np.float64)
    s = np.asarray(sim, dtype=np.float64)
    idx = np.asarray(sets, dtype=np.int64)
    k = idx.shape[1]
    picked = p[idx]  # (L, k)
    pair = picked_pairs(s, idx)  # (L, k, k)
    lower = np.tril(np.ones((k, k), dtype=bool), k=-1)
    closest = np.where(lower[None], pair, -1.0).max(axis=2)  # first pick: -1 (nothing before it)
    ordered = -np.sort(-picked, axis=1)
    second = ordered[:, 1] if k > 1 else np.zeros(idx.shape[0])
    return np.column_stack(
        [
            picked.sum(axis=1),
            (picked * (closest < novel_below)).sum(axis=1),
            (picked * (1.0 - np.clip(closest, 0.0, 1.0))).sum(axis=1),
            ordered[:, 0],
            second,
            1.0 - np.prod(1.0 - picked, axis=1),
        ]
    )
