"""DIVA's retrieval diversification (In et al. 2024, Sec. 3.2, Eq. 4-5), LLM-free and vectorised.

Every interpretation takes its top ``per_interpretation_k`` candidates (Eq. 4), from one
first-stage pool (:func:`diversify_pool`) or from its own search (:func:`diversify_hits`); the
hits are united, remembering which interpretations each passage serves, and pruned to ``k``
(Eq. 5: mean cosine similarity to all interpretations). Variants of the pruning: ``"max"`` (best
similarity to any interpretation), ``"round_robin"`` (the hits rank by rank, no re-scoring) and
``"mmr"`` (MMR over the union: relevance = the mean score, query = the interpretations'
centroid). Ties go to the caller's ``relevance``, then to first appearance.

Example:
    >>> import numpy as np
    >>> pool = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [-1.0, 0.0]])
    >>> interps = np.array([[1.0, 0.1], [0.1, 1.0]])
    >>> r = diversify_pool(pool, interps, k=2, per_interpretation_k=1)
    >>> r.union.tolist(), r.indices.tolist(), r.served_by
    ([0, 1], [0, 1], ((0,), (1,)))
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import (
    DimensionMismatchError,
    EmptyCandidatesError,
    InvalidParameterError,
    NonFiniteInputError,
    ZeroVectorError,
)
from ...validation import check_k, check_unit_interval, row_dots
from ..options import check_choice

__all__ = [
    "PRUNE_MODES",
    "DEFAULT_K",
    "DEFAULT_PER_INTERPRETATION_K",
    "DivaRetrieval",
    "diversify_pool",
    "diversify_hits",
    "merge_hit_ids",
]

#: Pruning rules accepted by ``prune=`` (``"mean"`` is the paper's Eq. 5).
PRUNE_MODES = ("mean", "max", "round_robin", "mmr")
#: Passages kept after pruning (the paper's K = 5).
DEFAULT_K = 5
#: Hits each interpretation takes before the union (the paper uses the same K).
DEFAULT_PER_INTERPRETATION_K = 5

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class DivaRetrieval:
    """The trace of one diversified retrieval.

    All indices refer to the candidate matrix given to :func:`diversify_pool` /
    :func:`diversify_hits`.

    Attributes:
        indices: the kept candidates, best first, at most ``k``.
        scores: the pruning score of each kept candidate (for ``round_robin`` the mean
            similarity, shown for the trace only; the order is the round-robin order).
        union: every candidate some interpretation retrieved, in first-seen order
            (interpretation 0's hits, then interpretation 1's new ones, ...).
        union_scores: mean cosine similarity of each union member to all
            interpretations (Eq. 5), whatever the ``prune`` rule.
        served: which interpretations retrieved each union member, bool (len(union), m).
        hits: per interpretation, its hits in rank order.
        similarity: cosine similarity, shape (m interpretations, len(union)).
        prune: the pruning rule used.

    Example:
        >>> import numpy as np
        >>> r = diversify_pool(np.eye(3), np.eye(3)[:2], k=1, per_interpretation_k=1)
        >>> r.indices.tolist(), r.kept_served_by
        ([0], ((0,),))
    """

    indices: IntArray
    scores: FloatArray
    union: IntArray
    union_scores: FloatArray
    served: NDArray[np.bool_]
    hits: tuple[IntArray, ...]
    similarity: FloatArray
    prune: str

    @property
    def served_by(self) -> tuple[tuple[int, ...], ...]:
        """Per union member, the interpretations (row numbers) that retrieved it."""
        return tuple(tuple(np.flatnonzero(row).tolist()) for row in self.served)

    @property
    def kept_served_by(self) -> tuple[tuple[int, ...], ...]:
        """The interpretations each kept candidate serves (aligned with :attr:`indices`)."""
        where = {int(u): i for i, u in enumerate(self.union.tolist())}
        return tuple(self.served_by[where[int(c)]] for c in self.indices.tolist())


def _unit_rows(value: ArrayLike, name: str, empty_error: type[Exception]) -> FloatArray:
    """``value`` as float64 unit rows, validating shape, finiteness and zero rows."""
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DimensionMismatchError(f"{name} must be a numeric array; got {type(value).__name__}") from exc
    if arr.ndim != 2:
        raise DimensionMismatchError(f"{name} must be a 2-D array (rows, dim); got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise empty_error(f"{name} is empty (shape {arr.shape}); need at least one row")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise NonFiniteInputError(f"{name} contains NaN or inf (first at index {np.argwhere(bad)[0].tolist()})")
    norms = np.sqrt(row_dots(arr))
    if not np.all(norms > 0.0):
        raise ZeroVectorError(f"{name} row {int(np.argmin(norms))} has zero norm; cosine is undefined")
    unit: FloatArray = arr / norms[:, None]
    return unit


def _check_relevance(relevance: ArrayLike | None, n: int) -> FloatArray | None:
    if relevance is None:
        return None
    rel = np.array(relevance, dtype=np.float64).reshape(-1) if np.ndim(relevance) <= 1 else None
    if rel is None or rel.shape[0] != n:
        raise DimensionMismatchError(
            f"relevance must have one entry per candidate ({n}); got shape {np.shape(relevance)}"
        )
    if not np.all(np.isfinite(rel)):
        raise NonFiniteInputError("relevance contains NaN or inf")
    return rel


def _first_seen(flat: IntArray) -> IntArray:
    """The distinct non-negative entries of ``flat`` in order of first appearance."""
    valid = flat[flat >= 0]
    if valid.size == 0:
        return np.zeros(0, dtype=np.int64)
    uniq, first = np.unique(valid, return_index=True)
    return np.asarray(uniq[np.argsort(first, kind="stable")], dtype=np.int64)


def _order(scores: FloatArray, rel: FloatArray | None) -> IntArray:
    """Positions sorted by score desc, then relevance desc, then position."""
    pos = np.arange(scores.shape[0])
    keys = (pos, -rel, -scores) if rel is not None else (pos, -scores)
    return np.asarray(np.lexsort(keys), dtype=np.int64)


def _union_and_prune(
    cands: FloatArray,
    interps: FloatArray,
    hits: IntArray,
    k: int,
    prune: str,
    mmr_lambda: float,
    rel: FloatArray | None,
) -> DivaRetrieval:
    """Union of ``hits`` (m, p; -1 = padding) and pruning down to ``k``."""
    m, n = interps.shape[0], cands.shape[0]
    union = _first_seen(hits.reshape(-1))
    member = np.zeros((m, n), dtype=bool)
    rows, cols = np.nonzero(hits >= 0)
    member[rows, hits[rows, cols]] = True
    served = member[:, union].T
    per_interp = tuple(_first_seen(h) for h in hits)
    sim: FloatArray = interps @ cands[union].T
    mean: FloatArray = sim.mean(axis=0) if union.size else np.zeros(0)
    empty = DivaRetrieval(
        np.zeros(0, np.int64), np.zeros(0), union, mean, served, per_interp, sim, prune
    )
    if union.size == 0:
        return empty
    keep = min(k, union.size)
    union_rel = rel[union] if rel is not None else None
    if prune in ("mean", "max"):
        scores = mean if prune == "mean" else sim.max(axis=0)
        local = _order(scores, union_rel)[:keep]
        kept_scores = scores[local]
    elif prune == "round_robin":
        by_rank = _first_seen(hits.T.reshape(-1))[:keep]  # rank 1 of every interpretation, then rank 2, ...
        where = np.searchsorted(union, by_rank, sorter=np.argsort(union))
        local = np.argsort(union)[where]
        kept_scores = mean[local]
    else:
        from ...api import select

        centroid = interps.mean(axis=0)
        if not np.any(centroid):  # opposite interpretations cancel out: use the first one
            centroid = interps[0]
        sel = select("mmr", centroid, cands[union], keep, relevance=mean, lambda_mult=mmr_lambda)
        local = sel.indices
        kept_scores = np.asarray(sel.scores, dtype=np.float64)
    return DivaRetrieval(
        indices=union[local].astype(np.int64),
        scores=np.asarray(kept_scores, dtype=np.float64),
        union=union,
        union_scores=mean,
        served=served,
        hits=per_interp,
        similarity=sim,
        prune=prune,
    )


def _checked(
    k: int,
    prune: str,
    mmr_lambda: float,
    candidates: ArrayLike,
    candidates_name: str,
    interpretations: ArrayLike,
    relevance: ArrayLike | None,
) -> tuple[int, float, FloatArray, FloatArray, FloatArray | None]:
    """The validated ``k``, ``mmr_lambda``, unit candidates, unit interpretations and relevance."""
    k = check_k(k, "k")
    check_choice(prune, "prune", PRUNE_MODES)
    lam = check_unit_interval(mmr_lambda, "mmr_lambda")
    cands = _unit_rows(candidates, candidates_name, EmptyCandidatesError)
    interps = _unit_rows(interpretations, "interpretation_embeddings", InvalidParameterError)
    if interps.shape[1] != cands.shape[1]:
        raise DimensionMismatchError(
            f"interpretation_embeddings have dimension {interps.shape[1]} but "
            f"{candidates_name} have dimension {cands.shape[1]}"
        )
    return k, lam, cands, interps, _check_relevance(relevance, cands.shape[0])


def diversify_pool(
    pool_embeddings: ArrayLike,
    interpretation_embeddings: ArrayLike,
    *,
    k: int = DEFAULT_K,
    per_interpretation_k: int = DEFAULT_PER_INTERPRETATION_K,
    relevance: ArrayLike | None = None,
    prune: str = "mean",
    mmr_lambda: float = 0.5,
) -> DivaRetrieval:
    """Diversified retrieval from one first-stage pool (Eq. 4 with C_i = the pool, then Eq. 5).

    Args:
        pool_embeddings: the first-stage candidates, shape (n, d), best first.
        interpretation_embeddings: one row per interpretation, shape (m, d), m >= 1
            (with no parsed interpretation, pass the question's own embedding).
        k: passages kept after pruning.
        per_interpretation_k: hits each interpretation takes from the pool.
        relevance: optional relevance of each pool entry to the original question,
            shape (n,); used only to break ties in the pruning.
        prune: ``"mean"`` (paper), ``"max"``, ``"round_robin"`` or ``"mmr"``.
        mmr_lambda: ``lambda_mult`` of the ``"mmr"`` rule (1 = pure mean score).

    Raises:
        InvalidParameterError: bad ``k``, ``per_interpretation_k``, ``prune``,
            ``mmr_lambda`` or no interpretation.
        EmptyCandidatesError: empty pool.
        DimensionMismatchError: wrong shapes or embedding sizes.
        NonFiniteInputError, ZeroVectorError: NaN/inf or zero rows.

    Example:
        >>> import numpy as np
        >>> pool = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
        >>> diversify_pool(pool, [[1.0, 0.0], [0.0, 1.0]], k=2, per_interpretation_k=1).indices.tolist()
        [0, 2]
    """
    per_k = check_k(per_interpretation_k, "per_interpretation_k")
    k, lam, cands, interps, rel = _checked(
        k, prune, mmr_lambda, pool_embeddings, "pool_embeddings", interpretation_embeddings, relevance
    )
    sims = interps @ cands.T  # (m, n): the one matrix product over the pool
    top = min(per_k, cands.shape[0])
    hits = np.asarray(np.argsort(-sims, axis=1, kind="stable")[:, :top], dtype=np.int64)
    return _union_and_prune(cands, interps, hits, k, prune, lam, rel)


def diversify_hits(
    hit_lists: Sequence[Sequence[int]],
    candidate_embeddings: ArrayLike,
    interpretation_embeddings: ArrayLike,
    *,
    k: int = DEFAULT_K,
    relevance: ArrayLike | None = None,
    prune: str = "mean",
    mmr_lambda: float = 0.5,
) -> DivaRetrieval:
    """Union and pruning when each interpretation searched the source itself.

    Args:
        hit_lists: per interpretation, the indices (into ``candidate_embeddings``) of its
            hits in rank order; repeats inside one list are dropped. Use
            :func:`merge_hit_ids` to turn per-interpretation id lists into these.
        candidate_embeddings: every passage any interpretation retrieved, shape (n, d).
        interpretation_embeddings: shape (m, d), one row per entry of ``hit_lists``.
        k, relevance, prune, mmr_lambda: as in :func:`diversify_pool`.

    Example:
        >>> import numpy as np
        >>> cands = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
        >>> r = diversify_hits([[0, 2], [1, 2]], cands, [[1.0, 0.0], [0.0, 1.0]], k=2)
        >>> r.union.tolist(), r.served_by, r.indices.tolist()
        ([0, 2, 1], ((0,), (0, 1), (1,)), [2, 0])
    """
    k, lam, cands, interps, rel = _checked(
        k, prune, mmr_lambda, candidate_embeddings, "candidate_embeddings", interpretation_embeddings, relevance
    )
    if len(hit_lists) != interps.shape[0]:
        raise DimensionMismatchError(
            f"hit_lists has {len(hit_lists)} lists but there are {interps.shape[0]} interpretations"
        )
    width = max((len(h) for h in hit_lists), default=0)
    hits = np.full((interps.shape[0], max(width, 1)), -1, dtype=np.int64)
    for j, h in enumerate(hit_lists):
        row = _hit_row(h, j, cands.shape[0])
        hits[j, : row.size] = row
    return _union_and_prune(cands, interps, hits, k, prune, lam, rel)


def _hit_row(hits: Sequence[Any], j: int, n: int) -> IntArray:
    arr = np.asarray(list(hits))
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_:
        raise InvalidParameterError(f"hit_lists[{j}] must be a list of integer indices; got {list(hits)!r}")
    if arr.min() < 0 or arr.max() >= n:
        raise InvalidParameterError(
            f"hit_lists[{j}] has an index outside 0..{n - 1}; got {list(hits)!r}"
        )
    return _first_seen(arr.astype(np.int64))


def merge_hit_ids(hit_ids: Sequence[Sequence[Hashable]]) -> tuple[list[Hashable], list[list[int]]]:
    """Turn per-interpretation id lists into one id list plus index hit lists.

    Returns ``(ids, hit_lists)``: ``ids`` are the distinct ids in first-seen order (stack
    their embeddings in this order) and ``hit_lists[j]`` are positions into ``ids``.

    Example:
        >>> merge_hit_ids([["a", "b"], ["b", "c"]])
        (['a', 'b', 'c'], [[0, 1], [1, 2]])
    """
    position: dict[Hashable, int] = {}
    lists: list[list[int]] = []
    for row in hit_ids:
        lists.append([position.setdefault(i, len(position)) for i in row])
    return list(position), lists
