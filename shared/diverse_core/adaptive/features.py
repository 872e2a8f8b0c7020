"""Features of the gMMR sets of one query, one row per ``lambda_mult``.

For a query, its candidate pool and the gMMR set picked at each ``lambda_mult`` of a
grid, :func:`set_features` describes every set by what an LLM judge would look at
without reading it: how relevant its items are, how redundant, how much of the pool
it covers, how much it shares with the other sets, and how the pool itself looks
(crossed with ``lambda_mult``, so a linear scorer can learn "on this kind of pool,
diversify more"). Everything is computed from embeddings and relevance scores, so the
selector needs no text and no LLM; all the work is array operations over the
``(L, k)`` sets and the cosines of every candidate to the picks (:func:`pick_cosines`: n·L·k
values, never an (n, n) matrix; no loop over candidates).

Example:
    >>> import numpy as np
    >>> from diverse_core import sweep
    >>> rng = np.random.default_rng(0)
    >>> q, c = rng.normal(size=8), rng.normal(size=(30, 8))
    >>> unit = c / np.linalg.norm(c, axis=1, keepdims=True)
    >>> rel = unit @ (q / np.linalg.norm(q))
    >>> sw = sweep("gmmr", q, c, 5, values=[0.3, 0.7, 1.0])
    >>> f = set_features(sw.values, sw.indices, unit, rel)
    >>> f.shape == (3, len(FEATURE_NAMES))
    True
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..text.view import TextView
from ..trained.scale import IDENTITY, PoolScale

__all__ = [
    "FEATURE_NAMES",
    "SET_FEATURES",
    "POOL_FEATURES",
    "LEXICAL_SET_FEATURES",
    "set_features",
    "pick_cosines",
    "pool_features",
    "lexical_set_features",
]

FloatArray = NDArray[np.float64]

#: Per-set features (one value per lambda_mult).
SET_FEATURES = (
    "rel_mean",  # mean relevance of the set
    "rel_min",  # least relevant pick
    "rel_drop",  # relevance of the top-k cosine set minus the set's (what diversity costs)
    "rank_mean",  # mean relevance rank of the picks / n
    "rank_max",  # deepest pick's relevance rank / n
    "red_mean",  # mean pairwise cosine of the picks (redundancy)
    "red_max",  # most similar pair of picks
    "cover_top",  # mean over the top-2k candidates of their best cosine to the set
    "cover_pool",  # same over the whole pool, relevance-weighted
    "consensus",  # mean share of the other sets containing each pick
    "jaccard_mean",  # mean Jaccard index with the other sets
    "unique",  # share of picks no other set has
    "new_vs_topk",  # picks outside the cosine top-k set / k
    "gain_mean",  # mean marginal distance of each pick to the earlier picks
)

#: Per-query features of the pool (the same for every set), crossed with lambda_mult.
POOL_FEATURES = (
    "pool_top1",  # best relevance
    "pool_gap",  # relevance drop from the 1st to the k-th candidate
    "pool_spread",  # std of the pool's relevance
    "pool_tail",  # relevance drop from the k-th to the 2k-th candidate
    "topk_red",  # mean pairwise cosine of the cosine top-k set
    "pool_red",  # mean pairwise cosine of the top-2k candidates
)

FEATURE_NAMES = (
    *SET_FEATURES,
    "lambda",
    "lambda_sq",
    *(f"{p}*lambda" for p in POOL_FEATURES),
    *(f"{p}*lambda_sq" for p in POOL_FEATURES),
)


def _pairwise_mean(sim: FloatArray) -> FloatArray:
    """Mean off-diagonal entry of each (m, m) block of a (..., m, m) stack."""
    m = sim.shape[-1]
    if m < 2:
        return np.zeros(sim.shape[:-2])
    off = sim.sum(axis=(-1, -2)) - np.trace(sim, axis1=-2, axis2=-1)
    return np.asarray(off / (m * (m - 1)), dtype=np.float64)


def pool_features(unit: FloatArray, relevance: FloatArray, k: int, scale: PoolScale = IDENTITY) -> FloatArray:
    """The :data:`POOL_FEATURES` of one pool, shape (len(POOL_FEATURES),) (``relevance`` already on ``scale``;
    the pairs' cosines are put on it here)."""
    order = np.argsort(-relevance, kind="stable")
    r = relevance[order]
    n = r.shape[0]
    kk = min(k, n)
    k2 = min(2 * k, n)
    top = unit[order[:kk]]
    top2 = unit[order[:k2]]
    return np.array(
        [
            r[0],
            r[0] - r[kk - 1],
            float(r.std()),
            r[kk - 1] - r[k2 - 1],
            float(scale.similarity(_pairwise_mean(top @ top.T))),
            float(scale.similarity(_pairwise_mean(top2 @ top2.T))),
        ],
        dtype=np.float64,
    )


def pick_cosines(unit: ArrayLike, sets: ArrayLike) -> FloatArray:
    """(n, L, k): the cosine of every candidate to every pick of every set, from the distinct picks'
    columns only (n·L·k values, not an (n, n) matrix). ``unit``: unit-length candidates (n, d).

    Example:
        >>> pick_cosines(np.eye(3), np.array([[0, 2]]))[:, 0].tolist()
        [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]]
    """
    u = np.asarray(unit, dtype=np.float64)
    idx = np.asarray(sets, dtype=np.int64)
    cols, at = np.unique(idx, return_inverse=True)
    return np.asarray((u @ u[cols].T)[:, at.reshape(idx.shape)], dtype=np.float64)


def picked_pairs(sim: FloatArray, idx: NDArray[np.int64]) -> FloatArray:
    """(L, k, k) cosines among each set's picks, from the (n, n) cosines or :func:`pick_cosines` (n, L, k)."""
    if sim.ndim == 3:
        return sim[idx, np.arange(idx.shape[0])[:, None]]
    return sim[idx[:, :, None], idx[:, None, :]]


def set_features(
    lambdas: ArrayLike, sets: ArrayLike, unit: ArrayLike, relevance: ArrayLike, *, sim: FloatArray | None = None,
    scale: PoolScale = IDENTITY,
) -> FloatArray:
    """One row of :data:`FEATURE_NAMES` per set.

    Args:
        lambdas: the ``lambda_mult`` of each set, shape (L,).
        sets: candidate indices of each set in pick order, shape (L, k).
        unit: unit-length candidate embeddings, shape (n, d).
        relevance: relevance of each candidate to the query, shape (n,) (cosine by default; any
            other scale is read through ``scale``).
        sim: ``unit @ unit.T`` (n, n) or :func:`pick_cosines` (n, L, k) when the caller has it
            (default: :func:`pick_cosines`).
        scale: the pool's :class:`~diverse_core.trained.scale.PoolScale`: ``relevance`` and ``sim`` (raw)
            are put on it first (the selector passes ``PoolScale.of_pool(unit, relevance)``).

    Returns:
        Array of shape (L, len(FEATURE_NAMES)), float64.
    """
    lam = np.asarray(lambdas, dtype=np.float64).reshape(-1)
    idx = np.asarray(sets, dtype=np.int64)
    u = np.asarray(unit, dtype=np.float64)
    rel = np.asarray(relevance, dtype=np.float64).reshape(-1)
    rel = scale.relevance(rel)  # any scorer's scale (cosine, cross-encoder logits) onto the pool's common one
    n_sets, k = idx.shape
    n = u.shape[0]
    sim = scale.similarity(pick_cosines(u, idx) if sim is None else sim)
    order = np.argsort(-rel, kind="stable")
    rank = np.empty(n, dtype=np.float64)
    rank[order] = np.arange(n, dtype=np.float64)
    topk = order[:k]
    k2 = min(2 * k, n)
    top2 = order[:k2]

    rel_sets = rel[idx]  # (L, k)
    pair = picked_pairs(sim, idx)  # (L, k, k)
    eye = np.eye(k, dtype=bool)
    masked = np.where(eye, -np.inf, pair)
    red_max = masked.max(axis=(1, 2)) if k > 1 else np.zeros(n_sets)
    cover = (sim if sim.ndim == 3 else sim[:, idx]).max(axis=2)  # (n, L): best cosine of each candidate to each set
    w = np.clip(rel - rel.min(), 0.0, None) + 1e-12
    member = np.zeros((n_sets, n), dtype=np.float64)
    np.put_along_axis(member, idx, 1.0, axis=1)
    inter = member @ member.T  # (L, L)
    others = max(n_sets - 1, 1)
    jac = inter / (2 * k - inter)
    jac_mean = (jac.sum(axis=1) - 1.0) / others
    freq = member.sum(axis=0)  # sets containing each candidate
    consensus = ((freq[idx] - 1.0) / others).mean(axis=1)
    unique = (freq[idx] == 1.0).mean(axis=1)
    in_topk = np.zeros(n, dtype=bool)
    in_topk[topk] = True
    # marginal distance of pick j to picks < j (1 - max cosine); the first pick gets 1
    lower = np.tril(np.ones((k, k), dtype=bool), k=-1)
    prev = np.where(lower[None], pair, -np.inf).max(axis=2)  # (L, k)
    gain = np.where(np.isfinite(prev), 1.0 - prev, 1.0).mean(axis=1)
    per_set = np.column_stack(
        [
            rel_sets.mean(axis=1),
            rel_sets.min(axis=1),
            rel[topk].mean() - rel_sets.mean(axis=1),
            rank[idx].mean(axis=1) / n,
            rank[idx].max(axis=1) / n,
            _pairwise_mean(pair),
            red_max,
            cover[top2].mean(axis=0),
            (w[:, None] * cover).sum(axis=0) / w.sum(),
            consensus,
            jac_mean,
            unique,
            (~in_topk[idx]).mean(axis=1),
            gain,
        ]
    )
    pool = pool_features(u, rel, k, scale)
    return np.column_stack(
        [per_set, lam, lam**2, lam[:, None] * pool[None, :], (lam**2)[:, None] * pool[None, :]]
    )


#: Per-set features from the question's words (:mod:`~diverse_core.text.view`); the selector
#: also uses each crossed with lambda_mult.
LEXICAL_SET_FEATURES = (
    "term_union",  # share of the question's content words some pick contains
    "term_gain",  # term_union minus that of the cosine top-k set
    "term_mean",  # mean share per pick
    "name_union",  # share of the question's names some pick contains
    "name_gain",  # name_union minus that of the cosine top-k set
    "name_mean",  # mean share per pick
    "bridge",  # other names shared by two picks or more, / k
    "term_all",  # 1 when the picks together contain every content word (0 when there are none)
)


def _union_share(hits: NDArray[np.bool_], sets: NDArray[np.int64], topk: NDArray[np.int64]) -> tuple[FloatArray, FloatArray, float]:
    """(share covered by each set's union, mean share per pick, share covered by the top-k set)."""
    if hits.shape[1] == 0:
        zeros = np.zeros(sets.shape[0])
        return zeros, zeros, 0.0
    picked = hits[sets]  # (L, k, T)
    return (picked.any(axis=1).mean(axis=1), picked.mean(axis=2).mean(axis=1), float(hits[topk].any(axis=0).mean()))


def lexical_set_features(view: TextView, sets: ArrayLike, relevance: ArrayLike) -> FloatArray:
    """One row of :data:`LEXICAL_SET_FEATURES` per set.

    Args:
        view: the query's :class:`~diverse_core.text.view.TextView`.
        sets: candidate indices of each set in pick order, shape (L, k).
        relevance: relevance of each candidate (defines the cosine top-k set), shape (n,).
    """
    idx = np.asarray(sets, dtype=np.int64)
    k = idx.shape[1]
    topk = np.argsort(-np.asarray(relevance, dtype=np.float64).reshape(-1), kind="stable")[:k]
    term_union, term_mean, term_top = _union_share(view.term_hits, idx, topk)
    name_union, name_mean, name_top = _union_share(view.name_hits, idx, topk)
    shared = (view.other_names[idx].sum(axis=1) >= 2).sum(axis=1) / k
    # 1 when the union holds every content word; 0 (as term_union) when the question has none
    has_terms = float(view.term_hits.shape[1] > 0)
    every = np.all(np.any(view.term_hits[idx], axis=1), axis=1).astype(np.float64) * has_terms
    return np.column_stack(
        [term_union, term_union - term_top, term_mean, name_union, name_union - name_top, name_mean, shared, every]
    )
