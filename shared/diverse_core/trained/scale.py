"""One pool's cosines on a common scale, so a trained selector reads any embedder's pools alike.

Embedders spread their cosines very differently. On the same top-50 pools the packaged MiniLM
gives query relevance around 0.38 (spread 0.07) and candidate pairs around 0.26 (spread 0.13),
while multilingual-e5-small puts nearly everything between 0.79 and 0.89. A model that reads raw
cosines (``rel``, ``sim_max``, a fixed "novel below 0.8" threshold) trained on one embedder
misreads the other. :class:`PoolScale` maps each pool onto a common scale before any feature is
computed: the relevance of its candidates, and the cosines between its candidates, each by the
increasing affine map that gives the pool the reference mean and spread (:data:`REFERENCE`, the
average MiniLM pool of the TRAIN questions, so MiniLM pools barely move). Every feature built on
the mapped values, and every threshold on them, is then relative to the pool: an embedder (or a
relevance score) that stretches or shifts cosines gives the same features. The map is increasing,
so orders (ranks, maxima, the greedy choice) are unchanged.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> u = rng.normal(size=(30, 8)); u /= np.linalg.norm(u, axis=1, keepdims=True)
    >>> rel = u @ u[0]
    >>> s = PoolScale.of_pool(u, rel)
    >>> mapped = s.relevance(rel)
    >>> round(float(mapped.mean()), 3), round(float(mapped.std()), 3)
    (0.375, 0.066)
    >>> bool(np.allclose(PoolScale.of_pool(u, 5 * rel + 2).relevance(5 * rel + 2), mapped))
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["IDENTITY", "REFERENCE", "PoolScale"]

FloatArray = NDArray[np.float64]

#: (mean, standard deviation) each pool is mapped to: of the relevance of its candidates, and of the
#: cosines between two of its candidates. Measured on 900 TRAIN pools (HotpotQA, MuSiQue, 2Wiki;
#: paragraphs and chunks, titled; fetch_k = 50; packaged MiniLM): relevance 0.375 / 0.066,
#: pairs 0.256 / 0.128 (the pools' own means vary by 0.06 and 0.09).
REFERENCE = {"relevance": (0.375, 0.066), "similarity": (0.256, 0.128)}

#: Below this spread a pool's values count as equal: they are only shifted to the reference mean.
_FLAT = 1e-6


def _affine(mean: float, std: float, target: tuple[float, float]) -> tuple[float, float]:
    """(slope, offset) of the increasing map taking ``mean`` / ``std`` to ``target``."""
    slope = target[1] / std if std > _FLAT else 1.0
    return slope, target[0] - slope * mean


def _relevance_map(rel: FloatArray) -> tuple[float, float]:
    """The relevance map, its mean and spread taken on ``rel`` over its largest magnitude (no square
    overflows, whatever the scores' scale)."""
    top = float(np.abs(rel).max()) if rel.size else 0.0
    if not 0.0 < top < np.inf:
        return 1.0, REFERENCE["relevance"][0] - (float(rel.mean()) if rel.size else 0.0)
    v = rel / top
    return _affine(float(v.mean()) * top, float(v.std()) * top, REFERENCE["relevance"])


@dataclass(frozen=True)
class PoolScale:
    """The affine maps (slope, offset) of one pool's relevance and of its candidate-pair cosines.

    Attributes:
        relevance_map: (slope, offset) applied to relevance values (and other query-side cosines).
        similarity_map: (slope, offset) applied to cosines between two candidates.

    Example:
        >>> import numpy as np
        >>> s = PoolScale.of_pool(np.eye(3), np.array([0.9, 0.5, 0.1]))
        >>> s.similarity(np.array([0.0, 1.0])).round(3).tolist()  # pairs: all 0 -> the reference mean
        [0.256, 1.256]
    """

    relevance_map: tuple[float, float]
    similarity_map: tuple[float, float]

    @classmethod
    def of_pool(cls, unit: FloatArray, relevance: FloatArray) -> PoolScale:
        """The maps of a pool: ``unit`` (n, d) unit-length candidates, ``relevance`` (n,).

        The pairs' mean and spread come from the (d, d) or (n, n) Gram matrix, whichever is
        smaller (never an (n, n) matrix when n > d). A pool of one candidate keeps its cosines.
        """
        n, d = unit.shape
        rel = np.asarray(relevance, dtype=np.float64)
        rel_map = _relevance_map(rel)
        if n < 2:
            return cls(rel_map, (1.0, 0.0))
        squares = np.einsum("ij,ij->i", unit, unit)  # the diagonal: 1 for unit rows
        total = unit.sum(axis=0)
        gram = unit.T @ unit if n > d else unit @ unit.T  # same Frobenius norm either way
        pairs = n * (n - 1)
        mean = (float(total @ total) - float(squares.sum())) / pairs
        mean_sq = (float(np.einsum("ij,ij->", gram, gram)) - float(squares @ squares)) / pairs
        std = float(np.sqrt(max(mean_sq - mean * mean, 0.0)))
        return cls(rel_map, _affine(mean, std, REFERENCE["similarity"]))

    def relevance(self, values: FloatArray) -> FloatArray:
        """``values`` (relevance, or another query-to-candidate cosine) on the common scale."""
        slope, offset = self.relevance_map
        return np.asarray(values * slope + offset, dtype=np.float64)

    def similarity(self, values: FloatArray) -> FloatArray:
        """``values`` (cosines between candidates) on the common scale."""
        slope, offset = self.similarity_map
        return np.asarray(values * slope + offset, dtype=np.float64)


#: The maps that change nothing (features on raw cosines).
IDENTITY = PoolScale((1.0, 0.0), (1.0, 0.0))
