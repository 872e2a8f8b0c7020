"""What an embedding model or a vector store hands an :class:`~.cache.EmbeddingCache` back, and
the checks that turn it into a float32 matrix (or a typed error naming the bad row)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import DimensionMismatchError, NonFiniteInputError

__all__ = [
    "AsyncEmbedFn",
    "EmbedFn",
    "KnownAt",
    "as_matrix",
    "checked_vectors",
    "known_rows",
    "merge_known",
]

EmbedFn = Callable[[list[str]], "NDArray[np.floating] | Sequence[Sequence[float]]"]
AsyncEmbedFn = Callable[[list[str]], Awaitable["NDArray[np.floating] | Sequence[Sequence[float]]"]]
#: ``known(positions) -> one vector or None per position``: vectors already computed
#: elsewhere (e.g. held by a vector store) for the texts at those positions of the call.
KnownAt = Callable[[list[int]], Sequence[Any]]


def known_rows(where: list[list[int]], known: KnownAt | None) -> list[Any]:
    """One known vector or ``None`` per distinct miss (asked at its first position)."""
    if known is None:
        return [None] * len(where)
    rows = list(known([positions[0] for positions in where]))
    if len(rows) != len(where):
        raise DimensionMismatchError(
            f"known() returned {len(rows)} entries for {len(where)} positions"
        )
    return rows


def merge_known(
    found: list[Any],
    todo: list[int],
    fresh: NDArray[np.floating] | Sequence[Sequence[float]] | None,
) -> NDArray[np.floating] | Sequence[Sequence[float]]:
    """Known vectors with the freshly embedded ones at positions ``todo``."""
    if fresh is None:
        return found
    if len(todo) == len(found):
        return fresh
    rows = list(found)
    fresh_rows = as_matrix(fresh, "embed_fn")
    if fresh_rows.shape[0] != len(todo):
        raise DimensionMismatchError(
            f"embed_fn returned {fresh_rows.shape[0]} vectors for {len(todo)} texts"
        )
    for pos, vec in zip(todo, fresh_rows, strict=True):
        rows[pos] = vec
    return rows


def checked_vectors(
    raw: NDArray[np.floating] | Sequence[Sequence[float]], n: int
) -> NDArray[np.float32]:
    """Freshly computed vectors as a finite float32 (n, d) matrix, or a typed error."""
    vectors = as_matrix(raw, "embed_fn")
    if vectors.shape[0] != n:
        raise DimensionMismatchError(f"embed_fn returned {vectors.shape[0]} vectors for {n} texts")
    if not np.all(np.isfinite(vectors)):
        raise NonFiniteInputError("embed_fn returned NaN or inf values")
    return vectors


def as_matrix(
    raw: NDArray[np.floating] | Sequence[Any], source: str
) -> NDArray[np.float32]:
    """``raw`` as a float32 (n, d) matrix with d >= 1, or a typed error naming the bad row.

    Catches what a model (or a store) may hand back: a ragged batch (one vector of
    another length), ``None`` or ``[]`` rows, non-numeric entries.
    """
    if isinstance(raw, np.ndarray) and raw.ndim == 2 and raw.shape[1] > 0:
        try:
            return raw.astype(np.float32, copy=False)
        except (TypeError, ValueError):
            pass  # e.g. an object array: the row-by-row pass names the bad row
    rows = list(raw)
    lengths: list[int] = []
    for i, row in enumerate(rows):
        try:
            if isinstance(row, (str, bytes)):
                raise TypeError(row)
            lengths.append(len(row))
        except TypeError:
            raise DimensionMismatchError(
                f"{source} returned {row!r} for text {i}; expected a vector of floats"
            ) from None
    if not rows:
        return np.zeros((0, 0), dtype=np.float32)
    if lengths[0] == 0 or any(n != lengths[0] for n in lengths):
        bad = next(i for i, n in enumerate(lengths) if n == 0 or n != lengths[0])
        raise DimensionMismatchError(
            f"{source} returned vectors that differ in dimension: text 0 has {lengths[0]}, "
            f"text {bad} has {lengths[bad]} (dimensions seen: {sorted(set(lengths))})"
        )
    try:
        return np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise DimensionMismatchError(f"{source} returned non-numeric vectors: {exc}") from None
