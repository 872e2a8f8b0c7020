"""What an embedding model or a vector store hands an :class:`~.cache.EmbeddingCache` back, and
the checks that turn it into a float32 matrix (or a typed error naming the bad row)."""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import DimensionMismatchError, InvalidTextError

__all__ = ["AsyncEmbedFn", "EmbedFn", "KnownAt", "as_matrix", "check_texts"]

EmbedFn = Callable[[list[str]], "NDArray[np.floating] | Sequence[Sequence[float]]"]
AsyncEmbedFn = Callable[[list[str]], Awaitable["NDArray[np.floating] | Sequence[Sequence[float]]"]]
#: ``known(positions) -> one vector or None per position``: vectors already computed
#: elsewhere (e.g. held by a vector store) for the texts at those positions of the call.
KnownAt = Callable[[list[int]], Sequence[Any]]


def check_texts(texts: Sequence[object], positions: Sequence[int] | None = None) -> None:
    """Raise :class:`InvalidTextError` naming the first of ``texts`` that is not a string or has no
    UTF-8 encoding (a lone surrogate such as ``"\\ud800"``); ``positions`` name them (default 0, 1, ...)."""
    for i, text in enumerate(texts):
        at = i if positions is None else positions[i]
        if not isinstance(text, str):
            raise InvalidTextError(f"text {at} is not a string; got {type(text).__name__}: {text!r:.80}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidTextError(
                f"text {at} is not valid Unicode: {text[exc.start:exc.end]!r} at character {exc.start} "
                "is a lone surrogate (no UTF-8 encoding); fix or drop that record"
            ) from None


def _cast(raw: NDArray[Any], source: str) -> NDArray[np.float32]:
    """``raw`` as float32; a finite value beyond float32's range (read as inf) is warned about,
    naming the row."""
    with np.errstate(over="ignore"):
        out = raw.astype(np.float32, copy=False)
    if raw.dtype.itemsize > 4 and raw.dtype.kind == "f" and out.size and np.isinf(out).any():
        with np.errstate(invalid="ignore"):
            over = np.isinf(out) & np.isfinite(raw)
        if over.any():
            row, col = (int(v) for v in np.argwhere(over)[0])
            warnings.warn(
                f"{source} returned {float(raw[row, col]):g} (row {row} of its batch), beyond float32's "
                "range: it reads as inf, and that candidate is left out of the selection",
                RuntimeWarning, stacklevel=3,
            )
    return out


def as_matrix(
    raw: NDArray[np.floating] | Sequence[Any], source: str
) -> NDArray[np.float32]:
    """``raw`` as a float32 (n, d) matrix with d >= 1, or a typed error naming the bad row.

    Catches what a model (or a store) may hand back: a ragged batch (one vector of
    another length), ``None`` or ``[]`` rows, non-numeric entries.
    """
    if isinstance(raw, np.ndarray) and raw.ndim == 2 and raw.shape[1] > 0:
        try:
            return _cast(raw, source)
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
        return _cast(np.asarray(rows, dtype=np.float64), source)
    except (TypeError, ValueError) as exc:
        raise DimensionMismatchError(f"{source} returned non-numeric vectors: {exc}") from None
