"""How likely each candidate is gold evidence, and what that says about each λ's set.

The set scorer compares a query's gMMR sets; it compares them better when it knows,
for every candidate, how likely the candidate is one of the passages the question
needs. :func:`candidate_features` describes each candidate (its relevance and rank,
its similarity to the better-ranked candidates and, when the texts are known, which
of the question's words and names it contains that the top candidate lacks);
:class:`GoldModel` is a logistic regression of "is gold" on those features, trained
on the same questions as the scorer; :func:`gold_set_features` turns its
probabilities into per-set features (expected gold picks, discounted for picks that
repeat an earlier one). All of it is array operations over the ``(n, n)`` candidate
similarities and the ``(L, k)`` sets.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> u = rng.normal(size=(20, 8)); u /= np.linalg.norm(u, axis=1, keepdims=True)
    >>> rel = u @ u[0]
    >>> candidate_features(u, rel, 5).shape == (20, len(EMBEDDING_CANDIDATE_FEATURES))
    True
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import DimensionMismatchError, InvalidParameterError, NonFiniteInputError
from ..gil_blocks import work_blocks
from .lexical import TextView

__all__ = [
    "EMBEDDING_CANDIDATE_FEATURES",
    "TEXT_CANDIDATE_FEATURES",
    "GOLD_SET_FEATURES",
    "GoldModel",
    "SharedNames",
    "candidate_features",
    "gold_set_features",
    "relevance_order",
    "static_features",
    "word_rows",
    "fit_gold_model",
]

FloatArray = NDArray[np.float64]

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

#: Per-set features from the gold probabilities of its picks.
GOLD_SET_FEATURES = (
    "p_sum",  # expected gold picks
    "p_sum_novel",  # same, counting only picks with cosine < 0.8 to every earlier pick
    "p_sum_discounted",  # each pick's probability times (1 - its cosine to the closest earlier pick)
    "p_max",  # most likely gold pick
    "p_second",  # second most likely
    "p_any",  # probability that at least one pick is gold (independent picks)
)


@dataclass(frozen=True)
class SharedNames:
    """The names outside the question two or more candidates mention, counted once per query by the caller.

    Only such names count between two candidates, so the bridge features follow from them
    and each candidate's total (what the learned selector's pair view computes anyway).

    Attributes:
        columns: (n, V) 0/1 (float32 or float64): who mentions each of the V names held by two or more.
        totals: (n,) how many names outside the question each candidate mentions.
        log_pairs: (n, n) ``log1p`` of the names two candidates share (the diagonal: ``log1p(totals)``).

    Example:
        >>> cols = np.array([[1.0], [1.0], [0.0]])
        >>> sn = SharedNames(cols, np.array([2.0, 1.0, 1.0]), np.log1p(cols @ cols.T + np.diag([2.0, 0.0, 1.0])))
        >>> sn.columns.shape
        (3, 1)
    """

    columns: NDArray[np.floating[Any]]
    totals: FloatArray
    log_pairs: FloatArray


@lru_cache(maxsize=1024)
def _rank_columns(n: int, k: int) -> tuple[FloatArray, NDArray[np.intp], NDArray[np.intp]]:
    """``(table, offsets, arange)``: the flat ``(3 * n,)`` table of ``rank / n``, ``in_topk`` and ``log_rank`` of
    ranks 0 .. n-1 (one block after the other), ``(1, 3)`` where each block starts, and ``arange(n)``."""
    r = np.arange(n, dtype=np.float64)
    table = np.concatenate([r / n, (r < k).astype(np.float64), np.log1p(r)])
    offsets = np.arange(0, 3 * n, n, dtype=np.intp)[None, :]
    ranks = np.arange(n, dtype=np.intp)
    for a in (table, offsets, ranks):
        a.flags.writeable = False
    return table, offsets, ranks


@lru_cache(maxsize=1024)
def _count_weights(n_terms: int, n_names: int) -> FloatArray:
    """(terms + names, 4) 0/1: columns 0 and 2 mark the question's terms, columns 1 and 3 its names."""
    base = np.zeros((n_terms + n_names, 4))
    base[:n_terms, 0::2] = 1.0
    base[n_terms:, 1::2] = 1.0
    base.flags.writeable = False
    return base


def relevance_order(rel: FloatArray) -> NDArray[np.intp]:
    """The candidates from the most to the least relevant, ties in index order (``np.argsort(-rel, kind="stable")``).

    A Python sort of the values, descending (numpy's argsort releases the GIL, a thread switch under many
    callers); NaN (where Python's comparisons give no order) takes numpy's argsort.
    """
    keys = rel.tolist()
    total = sum(keys)
    if total != total:  # a NaN (or +inf and -inf): numpy's order
        return np.argsort(-rel, kind="stable")
    # a reversed sort keeps equal keys in their order (stable), as the ascending sort of -rel does
    return np.fromiter(sorted(range(len(keys)), key=keys.__getitem__, reverse=True), dtype=np.intp, count=len(keys))


def word_rows(view: TextView) -> FloatArray:
    """``(terms + names, n)`` float 0/1: which candidates hold each of the question's terms, then each name."""
    n_terms = view.term_hits.shape[1]
    words = np.empty((n_terms + view.name_hits.shape[1], view.term_hits.shape[0]))
    words[:n_terms] = view.term_hits.T
    words[n_terms:] = view.name_hits.T
    return words


def _near_max(cols: NDArray[np.floating[Any]], near: list[int]) -> NDArray[np.floating[Any]]:
    """``cols[near].max(axis=0)`` for a few rows, as elementwise maxima (a fancy row gather releases the GIL)."""
    top: NDArray[np.floating[Any]] = cols[near[0]].copy()
    for i in near[1:]:
        np.maximum(top, cols[i], out=top)
    return top


def _text_columns(out: FloatArray, view: TextView, order: NDArray[np.intp], shared: SharedNames | None,
                  words: FloatArray) -> None:
    """Write the text features (all but the first :data:`EMBEDDING_CANDIDATE_FEATURES`) into ``out``."""
    near = order[:3]
    rows = near.tolist()
    top = rows[0]
    # counts of 0/1 products (exact): words held, and words held that the top candidate lacks
    weights = _count_weights(view.term_hits.shape[1], view.name_hits.shape[1]).copy()
    weights[:, 2:] *= np.subtract(1.0, words[:, top])[:, None]
    np.divide(words.T @ weights, np.maximum(np.add.reduce(weights, axis=0), 1.0), out=out[:, :4])
    if shared is None:
        other = view.other_names.astype(np.float64)
        np.log1p(other @ np.column_stack([_near_max(other, rows), other[top]]), out=out[:, 4:6])
    else:  # a candidate among the three holds all of its names; the others share only names held twice or more
        cols = shared.columns  # float32 or float64: the counts are exact either way, taken as float64
        to_near = np.asarray(cols @ _near_max(cols, rows), dtype=np.float64) if cols.shape[1] else np.zeros(len(out))
        to_near[near] = shared.totals[near]
        np.log1p(to_near, out=out[:, 4])
        out[:, 5] = shared.log_pairs[:, top]
    out[:, 6] = len(view.terms) / 20.0
    out[:, 7] = len(view.names) / 5.0


#: Above this k, ``sim_topk`` sums its columns in one reduction instead of one add per column.
_TOPK_ADDS = 16


def candidate_features(
    unit: ArrayLike, relevance: ArrayLike, k: int, view: TextView | None = None, *, sim: ArrayLike | None = None,
    shared: SharedNames | None = None,
) -> FloatArray:
    """One row per candidate: :data:`EMBEDDING_CANDIDATE_FEATURES`, or :data:`TEXT_CANDIDATE_FEATURES` with ``view``.

    Args:
        unit: unit-length candidate embeddings, shape (n, d).
        relevance: relevance of each candidate to the query, shape (n,).
        k: the set size.
        view: the query's :class:`~diverse_core.adaptive.lexical.TextView` (adds the text features).
        sim: the candidates' cosine matrix ``unit @ unit.T`` when the caller already has it.
        shared: the :class:`SharedNames` of ``view`` when the caller already has them (same values, fewer passes).
    """
    u = np.asarray(unit, dtype=np.float64)
    rel = np.asarray(relevance, dtype=np.float64).reshape(-1)
    n = u.shape[0]
    sim = u @ u.T if sim is None else np.asarray(sim, dtype=np.float64)
    if view is not None and view.term_hits.shape[0] != n:
        raise DimensionMismatchError(f"texts must give one text per candidate; got {view.term_hits.shape[0]} for {n}")
    return static_features(sim, rel, k, view, shared, None if view is None else word_rows(view))


def static_features(sim: FloatArray, rel: FloatArray, k: int, view: TextView | None, shared: SharedNames | None,
                    words: FloatArray | None) -> FloatArray:
    """:func:`candidate_features` of checked inputs: ``sim`` (n, n) and ``rel`` (n,) float64, ``words`` the
    :func:`word_rows` of ``view`` (with a view)."""
    n = rel.shape[0]
    out = np.empty((n, len(EMBEDDING_CANDIDATE_FEATURES if view is None else TEXT_CANDIDATE_FEATURES)))
    order = relevance_order(rel)
    top = int(order[0])
    table, offsets, ranks = _rank_columns(n, k)
    rank = np.empty(n, dtype=np.intp)
    rank[order] = ranks
    out[:, 0] = rel
    np.subtract(rel, rel[top], out=out[:, 1])
    out[:, 2:5] = table[rank[:, None] + offsets]  # a flat gather of 3n entries
    blocks = work_blocks(n, n)  # whole rows: a reduction along each row gives what it gives over the whole matrix
    # highest cosine to a better-ranked candidate ([i, j]: j ranks above i; -1 when none, 0 for the best)
    column = rank[:, None]
    for b in blocks:
        np.maximum.reduce(np.where(rank < column[b], sim[b], -1.0), axis=1, out=out[b, 5])
    out[top, 5] = 0.0
    out[:, 6] = sim[:, top]
    top_k = order[: min(k, n)]
    if top_k.shape[0] <= _TOPK_ADDS:  # what the reduction over sim[:, top_k] (column-major) adds, column by column
        first, *rest = top_k.tolist()
        acc = out[:, 7]
        acc[:] = sim[:, first]
        for j in rest:
            acc += sim[:, j]
        acc /= top_k.shape[0]
    else:
        np.divide(np.add.reduce(sim[:, top_k], axis=1), top_k.shape[0], out=out[:, 7])  # as .mean(axis=1) does
    sums = out[:, 8]
    for b in blocks:
        np.add.reduce(sim[b], axis=1, out=sums[b])
    sums /= n
    out[:, 9] = rel[top]
    if view is not None:
        assert words is not None
        _text_columns(out[:, len(EMBEDDING_CANDIDATE_FEATURES):], view, order, shared, words)
    return out


def gold_set_features(probabilities: ArrayLike, sim: ArrayLike, sets: ArrayLike, novel_below: float = 0.8) -> FloatArray:
    """One row of :data:`GOLD_SET_FEATURES` per set.

    Args:
        probabilities: each candidate's gold probability, shape (n,).
        sim: candidate cosine similarities, shape (n, n).
        sets: candidate indices of each set in pick order, shape (L, k).
        novel_below: a pick counts as novel when its cosine to every earlier pick is below this.
    """
    p = np.asarray(probabilities, dtype=np.float64)
    s = np.asarray(sim, dtype=np.float64)
    idx = np.asarray(sets, dtype=np.int64)
    k = idx.shape[1]
    picked = p[idx]  # (L, k)
    pair = s[idx[:, :, None], idx[:, None, :]]  # (L, k, k)
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


def sigmoid(z: FloatArray) -> FloatArray:
    """``1 / (1 + exp(-z))`` with ``z`` clipped to [-50, 50] (no overflow)."""
    return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0))), dtype=np.float64)


@dataclass(frozen=True)
class GoldModel:
    """Logistic regression of "this candidate is gold": ``sigmoid(((x - mean) / scale) @ w + b)``.

    Attributes:
        mean, scale: per-feature standardisation of the training rows, shape (F,).
        weights: shape (F,); bias: the intercept.
        feature_names: names of the F features.
        l2: the ridge penalty used.
    """

    mean: FloatArray
    scale: FloatArray
    weights: FloatArray
    bias: float
    feature_names: tuple[str, ...]
    l2: float = 1.0
    info: dict[str, Any] = field(default_factory=dict)

    def probabilities(self, features: ArrayLike) -> FloatArray:
        """Gold probability of each row of ``features`` (shape (n, F)) -> (n,)."""
        x = np.asarray(features, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.weights.shape[0]:
            raise DimensionMismatchError(f"features must have shape (n, {self.weights.shape[0]}); got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise NonFiniteInputError(f"features must be finite; got {int(np.sum(~np.isfinite(x)))} NaN/inf")
        return self.probabilities_of_checked(x)

    def logits_of_checked(self, x: FloatArray) -> FloatArray:
        """The logit of each row of float rows already known to be finite and of the right width."""
        return np.asarray(((x - self.mean) / self.scale) @ self.weights + self.bias, dtype=np.float64)

    def probabilities_of_checked(self, x: FloatArray) -> FloatArray:
        """:meth:`probabilities` of float rows already known to be finite and of the right width."""
        return sigmoid(self.logits_of_checked(x))

    @cached_property
    def folded(self) -> tuple[FloatArray, float] | None:
        """``(coef, intercept)`` with the standardisation folded in: logit ``= x @ coef + intercept``.

        ``coef = weights / scale`` and ``intercept = bias - mean @ coef`` (equal to
        :meth:`logits_of_checked` up to float rounding). ``None`` when a parameter is not finite
        or beyond ``1e100`` in size (or a scale below ``1e-100``), where the two forms could
        disagree on overflow: use :meth:`logits_of_checked` then. Computed once per model (the
        model is frozen: its arrays are read, never written).
        """
        mean, scale, w = (np.asarray(a, dtype=np.float64) for a in (self.mean, self.scale, self.weights))
        if w.ndim != 1 or mean.shape != w.shape or scale.shape != w.shape:
            return None
        params = np.abs(np.concatenate([mean, w, [self.bias]]))
        size = np.abs(scale)
        if not (np.all(params <= 1e100) and np.all(size >= 1e-100) and np.all(size <= 1e100)):  # NaN: False
            return None
        coef = w / scale
        coef.setflags(write=False)
        return coef, float(self.bias - mean @ coef)

    def to_arrays(self, prefix: str) -> dict[str, Any]:
        """The arrays to store under ``prefix`` in a model file."""
        meta = {"bias": self.bias, "l2": self.l2, "feature_names": list(self.feature_names), "info": self.info}
        return {f"{prefix}mean": self.mean, f"{prefix}scale": self.scale, f"{prefix}weights": self.weights,
                f"{prefix}meta": np.array(json.dumps(meta))}

    @classmethod
    def from_arrays(cls, data: Any, prefix: str) -> GoldModel:
        """Read what :meth:`to_arrays` stored."""
        meta = json.loads(str(data[f"{prefix}meta"]))
        return cls(np.asarray(data[f"{prefix}mean"], dtype=np.float64), np.asarray(data[f"{prefix}scale"], dtype=np.float64),
                   np.asarray(data[f"{prefix}weights"], dtype=np.float64), float(meta["bias"]),
                   tuple(meta["feature_names"]), float(meta["l2"]), dict(meta["info"]))


def fit_gold_model(
    features: ArrayLike, is_gold: ArrayLike, *, feature_names: tuple[str, ...], l2: float = 1.0, max_iter: int = 100
) -> GoldModel:
    """Fit a :class:`GoldModel` by Newton's method (deterministic; no randomness).

    Args:
        features: candidate rows, shape (m, F).
        is_gold: 1 for a gold candidate, else 0, shape (m,).
        feature_names: the F names stored with the model.
        l2: ridge penalty on the standardised weights (not the intercept).
        max_iter: Newton steps at most.
    """
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(is_gold, dtype=np.float64).reshape(-1)
    if x.ndim != 2 or y.shape[0] != x.shape[0]:
        raise DimensionMismatchError(f"features must be (m, F) and is_gold (m,); got {x.shape} and {y.shape}")
    if len(feature_names) != x.shape[1]:
        raise DimensionMismatchError(
            f"feature_names must name the {x.shape[1]} feature columns; got {len(feature_names)} names"
        )
    for label, values in (("features", x), ("is_gold", y)):
        if not np.all(np.isfinite(values)):
            raise NonFiniteInputError(f"{label} must be finite; got {int((~np.isfinite(values)).sum())} NaN/inf")
    if not (0.0 < y.mean() < 1.0):
        raise InvalidParameterError(
            f"is_gold must hold both gold (1) and non-gold (0) candidates; got a gold share of {y.mean():g}"
        )
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-12] = 1.0
    z = np.column_stack([(x - mean) / scale, np.ones(x.shape[0])])
    penalty = l2 * np.diag(np.r_[np.ones(x.shape[1]), 0.0])
    w = np.zeros(z.shape[1])
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -50.0, 50.0)))
        grad = z.T @ (p - y) + penalty @ w
        hess = (z * (p * (1.0 - p))[:, None]).T @ z + penalty
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-9:
            break
    return GoldModel(mean, scale, w[:-1].copy(), float(w[-1]), tuple(feature_names), float(l2),
                     {"n_rows": int(x.shape[0]), "gold_share": round(float(y.mean()), 6)})
