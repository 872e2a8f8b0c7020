"""The near-duplicate guard: no pick is a near-copy of an earlier pick while a distinct candidate remains.

Overlapping chunk windows and pages ingested twice give pools where several candidates are
the same passage (cosine about 0.99). Several diversity methods still pick two of them: their
trade-off prices redundancy, it does not forbid it. The guard wraps any method's run:

1. run the method on the pool;
2. look for the first pick that is a near-duplicate of an earlier pick (cosine similarity of
   the two unit rows above ``threshold``, or the same text once case and white space are
   folded); if there is none, the picks stand as they are;
3. otherwise keep the picks that copy no earlier pick, remove from the pool every other
   candidate that is a near-duplicate of one of them, and run the method again.

Each round removes at least the first offending pick (a near-duplicate of kept picks only), and the check costs ``k × n`` products, so a
pool without duplicates among the picks pays one ``k × k`` check and keeps its picks bit for
bit. When fewer than ``k`` distinct candidates are left, the remaining slots are filled with the
removed candidates, most relevant first (a near-duplicate is then the only thing left to give).
A method runs guarded unless its spec says otherwise (:attr:`~diverse_core.registry.MethodSpec.guarded`):
``topk``, the plain relevance baseline, is never guarded.

Example:
    >>> import numpy as np
    >>> vecs = np.array([[1.0, 0.0], [1.0, 0.001], [0.6, 0.8]])
    >>> rel = vecs @ np.array([1.0, 0.0])
    >>> run = lambda pool: (pool[np.argsort(-rel[pool], kind="stable")][:2], rel[pool][:2])
    >>> picks, _, dropped = guard(run, vecs, rel, k=2, threshold=0.95)
    >>> picks.tolist(), dropped.tolist()
    ([0, 2], [1])
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from .errors import InvalidParameterError

__all__ = ["DEFAULT_THRESHOLD", "check_threshold", "guard", "near_pairs", "normalised_text", "text_ids"]

#: Cosine similarity above which two candidates count as the same passage (LangChain's
#: ``EmbeddingsRedundantFilter`` uses the same default).
DEFAULT_THRESHOLD = 0.95

RunOn = Callable[[NDArray[np.int64]], tuple[NDArray[np.int64], NDArray[np.float64]]]

_SPACE = re.compile(r"\s+")


def normalised_text(text: str) -> str:
    """``text`` case-folded, with runs of white space made one space and the ends trimmed."""
    return _SPACE.sub(" ", text).strip().casefold()


def check_threshold(threshold: object) -> float | None:
    """``threshold`` as a float in (0, 1], or ``None`` (the guard is off).

    Raises:
        InvalidParameterError: anything else, named with its value.
    """
    if threshold is None:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.floating, np.integer)):
        raise InvalidParameterError(
            f"duplicate_threshold must be a number in (0, 1] or None; got duplicate_threshold={threshold!r}"
        )
    value = float(threshold)
    if not 0.0 < value <= 1.0:
        raise InvalidParameterError(
            f"duplicate_threshold must lie in (0, 1] (cosine similarity) or be None; "
            f"got duplicate_threshold={threshold!r}"
        )
    return value


def text_ids(texts: object, n: int) -> NDArray[np.int64] | None:
    """One id per candidate, equal for texts that are equal after :func:`normalised_text`
    (``None`` unless ``texts`` is a list or tuple of ``n`` texts)."""
    if not isinstance(texts, (list, tuple)) or len(texts) != n:
        return None
    ids: dict[str, int] = {}
    return np.fromiter((ids.setdefault(normalised_text(t), len(ids)) for t in texts), np.int64, n)


def near_pairs(
    unit: NDArray[np.float64], ids: NDArray[np.int64] | None, threshold: float,
    rows: NDArray[np.int64], cols: NDArray[np.int64],
) -> NDArray[np.bool_]:
    """``out[..., i, j]``: candidates ``rows[..., i]`` and ``cols[..., j]`` are near-duplicates (cosine
    similarity of their ``unit`` rows above ``threshold``, or the same text id in ``ids``); ``rows`` and
    ``cols`` are 1-D, or (L, k) for L selections at once."""
    hit: NDArray[np.bool_] = (unit[rows] @ np.swapaxes(unit[cols], -1, -2)) > threshold
    if ids is not None:
        hit |= ids[rows][..., :, None] == ids[cols][..., None, :]
    return hit


def _rows(vectors: NDArray[np.floating], texts: Sequence[str] | None,
          at: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.int64] | None]:
    """The unit rows and the text ids (:func:`text_ids`) of the candidates ``at``."""
    rows = vectors[at]
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    unit = np.asarray(rows / np.where(norms > 0, norms, 1.0), dtype=np.float64)
    given = isinstance(texts, (list, tuple)) and len(texts) == vectors.shape[0]
    return unit, text_ids([texts[i] for i in at.tolist()], at.shape[0]) if given else None  # type: ignore[index]


def guard(
    run_on: RunOn,
    vectors: NDArray[np.floating],
    relevance: NDArray[np.floating],
    k: int,
    threshold: float,
    texts: Sequence[str] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """Run ``run_on`` until no pick is a near-duplicate of an earlier one (see the module text).

    Args:
        run_on: ``run_on(pool) -> (indices, scores)``: the method run on the candidates ``pool``
            (sorted original indices), returning original indices in pick order.
        vectors: the candidates' rows, shape (n, d) (any length; they are unit-normalised here).
        relevance: the candidates' relevance, shape (n,): the order of the fill-up.
        k: picks wanted.
        threshold: cosine similarity above which two rows are near-duplicates.
        texts: the candidates' texts, or ``None``; equal texts (after folding) are near-duplicates.

    Returns:
        ``(indices, scores, dropped)``: the picks, their scores (``nan`` for a fill-up pick,
        which the method did not score) and the candidates the guard removed from the pool,
        sorted.
    """
    n = vectors.shape[0]
    pool = np.arange(n, dtype=np.int64)
    indices, scores = run_on(pool)
    indices = np.asarray(indices, dtype=np.int64)
    at = np.arange(indices.shape[0])
    if not np.triu(near_pairs(*_rows(vectors, texts, indices), threshold, at, at), 1).any():  # the usual case
        return indices, np.asarray(scores, dtype=np.float64), np.zeros(0, dtype=np.int64)
    unit, ids = _rows(vectors, texts, pool)
    for _ in range(n):  # each round removes at least one candidate from the pool
        indices = np.asarray(indices, dtype=np.int64)
        copied = np.triu(near_pairs(unit, ids, threshold, indices, indices), 1).any(axis=0)
        if not copied.any():
            break
        kept = indices[~copied]
        drop = near_pairs(unit, ids, threshold, kept, pool).any(axis=0) & ~np.isin(pool, kept)
        pool = pool[~drop]
        indices, scores = run_on(pool)
    indices = np.asarray(indices, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    dropped = np.setdiff1d(np.arange(n, dtype=np.int64), pool)
    want = min(k, n)
    if indices.shape[0] < want:  # too few distinct candidates: fill up with the removed ones
        rest = dropped[np.argsort(-relevance[dropped], kind="stable")][: want - indices.shape[0]]
        indices = np.concatenate([indices, rest])
        scores = np.concatenate([scores, np.full(rest.shape[0], np.nan)])
    return indices, scores, dropped
