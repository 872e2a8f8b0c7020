"""Diversity and agreement metrics for selected sets (numpy/scipy only, vectorised).

* :func:`vendi_score` - effective number of distinct items (Friedman & Dieng, 2023;
  Rezaei & Dieng 2025, Eq. 1), with a cosine kernel and any Rényi order.
* :func:`max_pairwise_distance` - MPD (Rezaei & Dieng 2025, Eq. 7), cosine or Euclidean.
* :func:`mean_pairwise_similarity` - mean cosine over distinct pairs
  (one minus it is the diversity of Pickett et al. 2024, Fig. 3).
* :func:`jaccard` / :func:`jaccard_matrix` - set overlap (Khan et al. 2026, Sec. 5.1, Fig. 4).
* :func:`kendall_tau` / :func:`spearman_rho` - agreement of a ranking with the order of
  reference scores (Rezaei & Dieng 2025, Table 2).

Example:
    >>> import numpy as np
    >>> from diverse_core.metrics import vendi_score, jaccard
    >>> round(vendi_score(np.eye(3)), 6)
    3.0
    >>> jaccard([1, 2, 3], [2, 3, 4])
    0.5
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .array_checks import as_float_array
from .errors import DimensionMismatchError, InvalidParameterError, NonFiniteInputError
from .validation import as_real_array, brief_repr, check_renyi_order, unit_rows

__all__ = [
    "vendi_score",
    "max_pairwise_distance",
    "mean_pairwise_similarity",
    "jaccard",
    "jaccard_matrix",
    "kendall_tau",
    "spearman_rho",
]

FloatArray = NDArray[np.float64]

#: Eigenvalues of ``K / n`` at or below this are treated as zero (round-off of a PSD matrix).
_EIG_TOL = 1e-12


def _float_rows(embeddings: ArrayLike, name: str, min_rows: int) -> FloatArray:
    """Validated (n, d) float64 copy of ``embeddings`` (real, finite, n >= ``min_rows``, d >= 1)."""
    arr = as_float_array(embeddings, name, 2)
    if arr.shape[0] < min_rows:
        raise InvalidParameterError(
            f"{name} needs at least {min_rows} row(s); got {arr.shape[0]} (shape {arr.shape})"
        )
    if arr.shape[1] == 0:
        raise DimensionMismatchError(f"{name} has zero-dimensional rows (shape {arr.shape})")
    return arr


def _unit_embeddings(
    embeddings: ArrayLike, name: str = "embeddings", min_rows: int = 1
) -> FloatArray:
    """Validated (n, d) float64 copy of ``embeddings`` with unit-length rows."""
    return unit_rows(_float_rows(embeddings, name, min_rows), name)


def vendi_score(embeddings: ArrayLike, order: float = 1.0) -> float:
    """Vendi Score of a set of embeddings under the cosine kernel.

    With ``K[i, j] = cos(x_i, x_j)`` and ``w`` the eigenvalues of ``K / n``, the score
    is the exponential of the Rényi entropy of order ``q = order`` of ``w``::

        q = 1:    exp(-sum_i w_i log w_i)          (the paper's definition)
        q = inf:  1 / max_i w_i
        q = 0:    number of non-zero eigenvalues  (numerical rank of K)
        else:     (sum_i w_i ** q) ** (1 / (1 - q))   (q within 1e-12 of 1: as q = 1)

    It ranges from 1 (all items identical) to ``n`` (pairwise orthogonal items).
    The eigenvalues come from the singular values of the unit-normalised
    embeddings, so the cost is ``O(n d min(n, d))``.

    Args:
        embeddings: shape (n, d), n >= 1; rows need not be unit length.
        order: Rényi order ``q >= 0`` (``math.inf`` allowed).

    Returns:
        The Vendi Score, a float in ``[1, n]``.

    Raises:
        InvalidParameterError: ``order`` is negative, NaN or not a number; ``embeddings`` is empty.
        DimensionMismatchError, NonFiniteInputError, ZeroVectorError: bad ``embeddings``.

    Example:
        >>> import numpy as np
        >>> round(vendi_score(np.array([[1.0, 0.0], [1.0, 0.0]])), 6)
        1.0
    """
    q = check_renyi_order(order, "order", allow_zero=True)
    x = _unit_embeddings(embeddings)
    n = x.shape[0]
    if n == 1:
        return 1.0
    singular = np.linalg.svd(x, compute_uv=False)
    w = singular**2 / n
    w = w[w > _EIG_TOL]
    w = w / w.sum()  # the eigenvalues of K/n sum to trace(K)/n = 1; renormalise round-off
    if q == 1.0:
        value = math.exp(float(-(w * np.log(w)).sum()))
    elif math.isinf(q):
        value = 1.0 / float(w.max())
    elif q == 0.0:
        value = float(w.shape[0])
    else:
        value = math.exp(math.log(float((w**q).sum())) / (1.0 - q))
    return float(min(max(value, 1.0), float(n)))


def max_pairwise_distance(
    embeddings: ArrayLike, metric: Literal["cosine", "euclidean"] = "cosine"
) -> float:
    """Largest distance between two distinct items of a set (MPD).

    ``metric="cosine"`` (default) uses the cosine distance ``1 - cos(x_i, x_j)``,
    in ``[0, 2]``, which does not depend on vector lengths. ``metric="euclidean"``
    uses ``||x_i - x_j||_2`` on the embeddings as given, which is the definition
    of Rezaei & Dieng 2025, Eq. 7; for unit vectors it equals ``sqrt(2 * cosine distance)``.

    Args:
        embeddings: shape (n, d) with n >= 2.
        metric: ``"cosine"`` or ``"euclidean"``.

    Raises:
        InvalidParameterError: fewer than two rows, or an unknown ``metric``.
        DimensionMismatchError, NonFiniteInputError, ZeroVectorError: bad ``embeddings``
            (zero vectors are rejected for ``"cosine"`` only).

    Example:
        >>> max_pairwise_distance([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        1.0
    """
    if metric == "cosine":
        x = _unit_embeddings(embeddings, min_rows=2)
        sim = np.clip(x @ x.T, -1.0, 1.0)
        np.fill_diagonal(sim, np.inf)
        return float(max(0.0, 1.0 - float(sim.min())))
    if metric == "euclidean":
        raw = _float_rows(embeddings, "embeddings", 2)
        # measured on rows scaled by the largest magnitude, so squares never overflow
        scale = float(np.abs(raw).max()) or 1.0
        raw /= scale
        sq = np.einsum("ij,ij->i", raw, raw)
        d2 = sq[:, None] + sq[None, :] - 2.0 * (raw @ raw.T)
        unit_dist = math.sqrt(max(0.0, float(d2.max())))
        with np.errstate(over="ignore"):
            out = float(np.float64(scale) * unit_dist)
        if not math.isfinite(out):
            raise NonFiniteInputError(
                f"the largest distance ({scale:g} x {unit_dist:g}) exceeds the float64 range"
            )
        return out
    raise InvalidParameterError(f"metric must be 'cosine' or 'euclidean'; got metric={metric!r}")


def mean_pairwise_similarity(embeddings: ArrayLike) -> float:
    """Mean cosine similarity over the ``n (n - 1) / 2`` distinct pairs of a set.

    ``1 - mean_pairwise_similarity`` is the diversity plotted in Pickett et al. 2024, Fig. 3.

    Args:
        embeddings: shape (n, d) with n >= 2.

    Raises:
        InvalidParameterError: fewer than two rows.
        DimensionMismatchError, NonFiniteInputError, ZeroVectorError: bad ``embeddings``.

    Example:
        >>> mean_pairwise_similarity([[1.0, 0.0], [0.0, 1.0]])
        0.0
    """
    x = _unit_embeddings(embeddings, min_rows=2)
    n = x.shape[0]
    total = x.sum(axis=0)
    # sum over i != j of <x_i, x_j> = ||sum x||^2 - n (rows are unit length)
    pair_sum = float(total @ total) - float(n)
    return float(np.clip(pair_sum / (n * (n - 1)), -1.0, 1.0))


def _as_set(items: Iterable[Hashable], name: str) -> frozenset[Hashable]:
    if isinstance(items, (str, bytes)):
        raise InvalidParameterError(
            f"{name} must be a collection of items, not a string; got {name}={items!r}"
        )
    if isinstance(items, np.ndarray):
        if items.ndim != 1:
            raise DimensionMismatchError(f"{name} must be 1-D; got shape {items.shape}")
        return frozenset(items.tolist())
    try:
        return frozenset(items)
    except TypeError as exc:
        raise InvalidParameterError(
            f"{name} must be an iterable of hashable items; got {name}={items!r}"
        ) from exc


def jaccard(a: Iterable[Hashable], b: Iterable[Hashable]) -> float:
    """Jaccard index ``|A & B| / |A | B|`` of two collections (duplicates ignored).

    Two empty collections count as identical (1.0).

    Example:
        >>> jaccard([0, 1], [2, 3])
        0.0
    """
    sa, sb = _as_set(a, "a"), _as_set(b, "b")
    union = len(sa | sb)
    return 1.0 if union == 0 else len(sa & sb) / union


def jaccard_matrix(sets: Sequence[Iterable[Hashable]] | ArrayLike) -> FloatArray:
    """Pairwise Jaccard indices of ``L`` collections, shape (L, L) (Khan et al. 2026, Fig. 4).

    Args:
        sets: a sequence of collections, or an (L, k) array such as ``Sweep.indices``
            (each row is one set; repeated items within a row count once).

    Returns:
        Symmetric (L, L) float64 matrix with ones on the diagonal.

    Example:
        >>> jaccard_matrix([[0, 1], [1, 2], [0, 1]]).round(3).tolist()
        [[1.0, 0.333, 1.0], [0.333, 1.0, 0.333], [1.0, 0.333, 1.0]]
    """
    if isinstance(sets, np.ndarray):
        if sets.ndim != 2:
            raise DimensionMismatchError(
                f"sets as an array must have shape (L, k); got shape {sets.shape}"
            )
        rows: list[frozenset[Hashable]] = [frozenset(r.tolist()) for r in sets]
    elif isinstance(sets, (str, bytes)) or not isinstance(sets, Iterable):
        raise InvalidParameterError(f"sets must be a sequence of collections; got sets={sets!r}")
    else:
        rows = [_as_set(s, f"sets[{i}]") for i, s in enumerate(sets)]  # type: ignore[arg-type]
    n_sets = len(rows)
    if n_sets == 0:
        raise InvalidParameterError("sets must contain at least one collection; got sets=[]")
    universe = {item: j for j, item in enumerate(frozenset().union(*rows))}
    member = np.zeros((n_sets, max(len(universe), 1)), dtype=np.float64)
    for i, row in enumerate(rows):
        member[i, [universe[item] for item in row]] = 1.0
    inter = member @ member.T
    size = member.sum(axis=1)
    union = size[:, None] + size[None, :] - inter
    out = np.ones((n_sets, n_sets), dtype=np.float64)
    np.divide(inter, union, out=out, where=union > 0)
    return out


def _ranking_pairs(
    ranking: ArrayLike, reference_scores: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """(negated positions, reference scores) of the ranked items, validated."""
    ref = np.array(as_real_array(reference_scores, "reference_scores"), dtype=np.float64)
    if ref.ndim != 1:
        raise DimensionMismatchError(
            f"reference_scores must be 1-D (one score per candidate); got shape {ref.shape}"
        )
    if not np.all(np.isfinite(ref)):
        raise NonFiniteInputError("reference_scores contains NaN or inf")
    try:
        idx = np.asarray(ranking)
    except (TypeError, ValueError) as exc:  # ragged nesting
        raise DimensionMismatchError(
            f"ranking must be 1-D (candidate indices in rank order); got {brief_repr(ranking)}"
        ) from exc
    if idx.ndim != 1:
        raise DimensionMismatchError(
            f"ranking must be 1-D (candidate indices in rank order); got shape {idx.shape}"
        )
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise InvalidParameterError(f"ranking must contain integer indices; got dtype {idx.dtype}")
    if idx.size < 2:
        raise InvalidParameterError(
            f"ranking needs at least 2 items to compare orders; got ranking={idx.tolist()}"
        )
    if idx.min() < 0 or idx.max() >= ref.shape[0]:
        raise InvalidParameterError(
            f"ranking has indices outside [0, {ref.shape[0] - 1}] (reference_scores has {ref.shape[0]} entries)"
        )
    if np.unique(idx).size != idx.size:
        raise InvalidParameterError(
            f"ranking contains repeated indices; got ranking={idx.tolist()}"
        )
    return -np.arange(idx.size, dtype=np.float64), ref[idx]


def kendall_tau(ranking: ArrayLike, reference_scores: ArrayLike) -> float:
    """Kendall's tau-b between a ranking and the order of ``reference_scores``.

    Compares the rank positions of the items in ``ranking`` (first = best) with the
    reference scores of the same items, e.g. a selection's picks against their cosine
    similarity to the query. 1 means the ranking is in descending reference order,
    -1 ascending. Pass a full permutation of the candidates to compare against the
    complete cosine ranking (Rezaei & Dieng 2025, Table 2); for a top-k list only the
    order among the picked items is compared (use :func:`jaccard` for membership).

    Args:
        ranking: candidate indices in rank order, at least two, no repeats.
        reference_scores: one score per candidate, shape (n,), higher = better.

    Returns:
        tau in [-1, 1], or NaN when every ranked item has the same reference score.

    Example:
        >>> kendall_tau([2, 0, 1], [0.5, 0.1, 0.9])
        1.0
    """
    return _rank_correlation(ranking, reference_scores, "kendalltau")


def spearman_rho(ranking: ArrayLike, reference_scores: ArrayLike) -> float:
    """Spearman's rank correlation between a ranking and the order of ``reference_scores``.

    Same inputs and conventions as :func:`kendall_tau` (ties in the reference
    scores get average ranks).

    Example:
        >>> spearman_rho([0, 1, 2], [0.9, 0.1, 0.5])
        0.5
    """
    return _rank_correlation(ranking, reference_scores, "spearmanr")


def _rank_correlation(ranking: ArrayLike, reference_scores: ArrayLike, statistic: str) -> float:
    """``scipy.stats.<statistic>`` (``"kendalltau"``, ``"spearmanr"``) between the ranked items'
    positions and their reference scores; NaN when every ranked item has the same score."""
    pos, ref = _ranking_pairs(ranking, reference_scores)
    if np.all(ref == ref[0]):
        return math.nan
    from scipy import stats  # lazy: scipy.stats costs ~0.5 s to import

    return float(getattr(stats, statistic)(pos, ref).statistic)
