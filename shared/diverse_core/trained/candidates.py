"""What both trained selectors know of each candidate before any pick: relevance, rank, redundancy, words.

:func:`candidate_features` describes each candidate (its relevance and rank, its similarity to the
better-ranked candidates and, when the texts are known, which of the question's words and names
it contains that the top candidate lacks). ``adaptive`` feeds these rows to its gold model;
``learned`` starts every pick's feature rows with them. All of it is array operations over the
``(n, n)`` candidate similarities.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> u = rng.normal(size=(20, 8)); u /= np.linalg.norm(u, axis=1, keepdims=True)
    >>> rel = u @ u[0]
    >>> candidate_features(u, rel, 5).shape == (20, len(EMBEDDING_CANDIDATE_FEATURES))
    True
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import DimensionMismatchError
from ..text.view import TextView
from .scale import IDENTITY, PoolScale

__all__ = [
    "EMBEDDING_CANDIDATE_FEATURES",
    "TEXT_CANDIDATE_FEATURES",
    "CandidateText",
    "SharedNames",
    "candidate_features",
    "sim_blocks",
    "static_features",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Per-candidate features from embeddings and relevance alone.
EMBEDDING_CANDIDATE_FEATURES = (
    "rel",  # relevance to the query
    "rel_vs_top1",  # relevance minus the best candidate's
    "rank",  # relevance rank / n
    "in_topk",  # 1 when among the k most relevant
    "log_rank",  # log(1 + rank)
    "red_better",  # highest cosine to a better-ranked candidate (0 for the best)
    "sim_top1",  # cosine to the most relevant candidate
    "sim_topk",  # mean cosine to the k most relevant
    "centrality",  # mean cosine to the whole pool
    "pool_top1",  # the best candidate's relevance (the same for all)
)

#: Per-candidate features that need the question and the candidate texts.
TEXT_CANDIDATE_FEATURES = (
    *EMBEDDING_CANDIDATE_FEATURES,
    "term_cover",  # share of the question's content words the text contains
    "name_cover",  # share of the question's names the text contains
    "term_complement",  # share of the words the top candidate lacks that this text has
    "name_complement",  # same for the question's names
    "bridge_top3",  # log(1 + names shared with the three most relevant candidates)
    "bridge_top1",  # log(1 + names shared with the most relevant candidate)
    "n_terms",  # question length in content words / 20
    "n_names",  # question names / 5
)

@dataclass(frozen=True)
class SharedNames:
    """The names outside the question that two candidates or more mention, as (candidate, name) entries.

    Only such names count between two candidates, so the bridge features follow from these entries
    and each candidate's total. No (n, n) matrix is kept: :meth:`counts` gives one row at a time.

    Attributes:
        rows: the candidate of each entry.
        cols: the name of each entry (``0 .. size - 1``).
        totals: (n,) how many names outside the question each candidate mentions (held once or more).
        size: how many names two candidates or more mention.

    Example:
        >>> sn = SharedNames.of_entries(np.array([0, 0, 1, 2]), np.array([0, 1, 0, 2]), 3)
        >>> sn.counts([0]).tolist()  # names each candidate shares with candidate 0 (0 itself: its total)
        [2.0, 1.0, 0.0]
    """

    rows: IntArray
    cols: IntArray
    totals: FloatArray
    size: int

    @classmethod
    def of_entries(cls, rows: IntArray, cols: IntArray, n: int) -> SharedNames:
        """From ``(candidate, name)`` entries (names numbered ``0, 1, ..``; each candidate's names distinct) of
        ``n`` candidates."""
        held = np.bincount(cols)
        keep = held[cols] >= 2
        renumber = np.cumsum(held >= 2) - 1  # the names held twice or more, numbered 0 .. size - 1
        totals = np.bincount(rows, minlength=n).astype(np.float64)
        return cls(rows[keep], renumber[cols[keep]], totals, int(np.count_nonzero(held >= 2)))

    @classmethod
    def of_holders(cls, held: NDArray[np.bool_]) -> SharedNames:
        """From an (n, V) table of who mentions each name."""
        rows, cols = np.nonzero(held)
        return cls.of_entries(rows.astype(np.int64), cols.astype(np.int64), held.shape[0])

    def counts(self, picks: Sequence[int] | IntArray) -> FloatArray:
        """(n,) how many of the names the ``picks`` mention each candidate mentions too (a pick itself: its total)."""
        at = np.asarray(picks, dtype=np.int64)
        picked = np.zeros(self.totals.shape[0], dtype=bool)
        picked[at] = True
        has = np.zeros(self.size, dtype=bool)
        has[self.cols[picked[self.rows]]] = True
        out = np.bincount(self.rows[has[self.cols]], minlength=self.totals.shape[0]).astype(np.float64)
        out[at] = self.totals[at]
        return out


@dataclass(frozen=True)
class CandidateText:
    """What the text columns read of a query: who holds each of the question's words, and the shared names.

    Attributes:
        words: (terms + names, n) 0/1: which candidates hold each of the question's terms, then each name.
        n_terms: how many of the rows are terms.
        shared: the candidates' :class:`SharedNames`.
    """

    words: FloatArray
    n_terms: int
    shared: SharedNames

    @classmethod
    def of_view(cls, view: TextView) -> CandidateText:
        """From a :class:`~diverse_core.text.view.TextView`."""
        words = np.concatenate([view.term_hits, view.name_hits], axis=1).T.astype(np.float64)
        return cls(words, view.term_hits.shape[1], SharedNames.of_holders(view.other_names))


@lru_cache(maxsize=1024)
def _count_weights(n_terms: int, n_names: int) -> FloatArray:
    """(terms + names, 4) 0/1: columns 0 and 2 mark the question's terms, columns 1 and 3 its names."""
    base = np.zeros((n_terms + n_names, 4))
    base[:n_terms, 0::2] = 1.0
    base[n_terms:, 1::2] = 1.0
    base.flags.writeable = False
    return base


#: Rows of the (n, n) cosine matrix :func:`sim_blocks` computes at once (memory O(SIM_BLOCK * n), not O(n^2)).
SIM_BLOCK = 1024


def sim_blocks(unit: FloatArray) -> Iterator[tuple[slice, FloatArray]]:
    """``(rows, unit[rows] @ unit.T)`` for blocks of at most :data:`SIM_BLOCK` rows (one block: the whole matrix)."""
    n = unit.shape[0]
    for a in range(0, n, SIM_BLOCK):
        rows = slice(a, min(a + SIM_BLOCK, n))
        yield rows, unit[rows] @ unit.T


def _text_columns(out: FloatArray, text: CandidateText, order: NDArray[np.intp]) -> None:
    """Write the text features (all but the first :data:`EMBEDDING_CANDIDATE_FEATURES`) into ``out``."""
    top = int(order[0])
    words, n_terms = text.words, text.n_terms
    n_names = words.shape[0] - n_terms
    # counts of 0/1 products (exact): words held, and words held that the top candidate lacks
    weights = _count_weights(n_terms, n_names).copy()
    weights[:, 2:] *= np.subtract(1.0, words[:, top])[:, None]
    np.divide(words.T @ weights, np.maximum(weights.sum(axis=0), 1.0), out=out[:, :4])
    np.log1p(text.shared.counts(order[:3]), out=out[:, 4])
    np.log1p(text.shared.counts([top]), out=out[:, 5])
    out[:, 6] = n_terms / 20.0
    out[:, 7] = n_names / 5.0


def candidate_features(unit: ArrayLike, relevance: ArrayLike, k: int, view: TextView | None = None,
                       scale: PoolScale = IDENTITY) -> FloatArray:
    """One row per candidate: :data:`EMBEDDING_CANDIDATE_FEATURES`, or :data:`TEXT_CANDIDATE_FEATURES` with ``view``.

    Args:
        unit: unit-length candidate embeddings, shape (n, d).
        relevance: relevance of each candidate to the query, shape (n,).
        k: the set size.
        view: the query's :class:`~diverse_core.text.view.TextView` (adds the text features).
        scale: the pool's :class:`~diverse_core.trained.scale.PoolScale` (the trained selectors pass
            ``PoolScale.of_pool(unit, relevance)``; default: raw cosines).
    """
    u = np.asarray(unit, dtype=np.float64)
    rel = np.asarray(relevance, dtype=np.float64).reshape(-1)
    if view is not None and view.term_hits.shape[0] != u.shape[0]:
        raise DimensionMismatchError(
            f"texts must give one text per candidate; got {view.term_hits.shape[0]} for {u.shape[0]}")
    return static_features(u, rel, k, None if view is None else CandidateText.of_view(view), scale)


def static_features(unit: FloatArray, rel: FloatArray, k: int, text: CandidateText | None,
                    scale: PoolScale = IDENTITY) -> FloatArray:
    """:func:`candidate_features` of checked inputs (``unit`` (n, d) and ``rel`` (n,) float64, raw: ``scale``
    maps them); the cosines are read in :func:`sim_blocks`."""
    rel = scale.relevance(rel)
    n = rel.shape[0]
    out = np.empty((n, len(EMBEDDING_CANDIDATE_FEATURES if text is None else TEXT_CANDIDATE_FEATURES)))
    order = np.argsort(-rel, kind="stable")
    top, top_k = int(order[0]), order[: min(k, n)]
    rank = np.empty(n, dtype=np.intp)
    rank[order] = np.arange(n)
    ranks = np.arange(n, dtype=np.float64)
    out[:, 0] = rel
    out[:, 1] = rel - rel[top]
    out[:, 2] = (ranks / n)[rank]
    out[:, 3] = (ranks < k)[rank]
    out[:, 4] = np.log1p(ranks)[rank]
    for rows, sim in sim_blocks(unit):
        # highest cosine to a better-ranked candidate ([i, j]: j ranks above i; -1 when none, 0 for the best)
        out[rows, 5] = np.where(rank[None, :] < rank[rows, None], sim, -1.0).max(axis=1)
        out[rows, 6] = sim[:, top]
        out[rows, 7] = np.add.reduce(sim[:, top_k], axis=1) / top_k.shape[0]  # the mean over the k most relevant
        out[rows, 8] = sim.sum(axis=1) / n
    out[:, 5:9] = scale.similarity(out[:, 5:9])  # increasing and affine: commutes with the maxima and means
    out[top, 5] = 0.0
    out[:, 9] = rel[top]
    if text is not None:
        _text_columns(out[:, len(EMBEDDING_CANDIDATE_FEATURES):], text, order)
    return out
