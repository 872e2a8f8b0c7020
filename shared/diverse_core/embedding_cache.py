"""A bounded, thread-safe per-text embedding cache that batches cache misses."""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from .errors import DimensionMismatchError, NonFiniteInputError

__all__ = ["EmbeddingCache"]

EmbedFn = Callable[[list[str]], "NDArray[np.floating] | Sequence[Sequence[float]]"]
AsyncEmbedFn = Callable[[list[str]], Awaitable["NDArray[np.floating] | Sequence[Sequence[float]]"]]


class EmbeddingCache:
    """Embed texts once per distinct text, in batches, and reuse the vectors.

    Misses of one call are embedded together with a single call of ``embed_fn``
    (deduplicated); the least recently used entries are evicted beyond ``maxsize``.

    Args:
        embed_fn: ``embed_fn(texts) -> array (len(texts), d)``.
        maxsize: most texts kept (LRU eviction).
        namespace: optional key prefix, e.g. the model name, so one cache can
            never hand out vectors of another model.

    Example:
        >>> calls = []
        >>> def fake(texts):
        ...     calls.append(list(texts))
        ...     return [[float(len(t)), 1.0] for t in texts]
        >>> cache = EmbeddingCache(fake, maxsize=10)
        >>> cache.embed(["a", "bb", "a"]).shape
        (3, 2)
        >>> cache.embed(["bb"]).tolist(), calls
        ([[2.0, 1.0]], [['a', 'bb']])
    """

    def __init__(self, embed_fn: EmbedFn, maxsize: int = 50_000, namespace: str = "") -> None:
        if maxsize <= 0:
            raise ValueError(f"maxsize must be positive; got maxsize={maxsize!r}")
        self._embed_fn = embed_fn
        self._maxsize = int(maxsize)
        self.namespace = namespace
        # Vectors live in one growing matrix; ``_slots`` maps text -> row, in LRU order.
        self._matrix: NDArray[np.float32] | None = None
        self._slots: OrderedDict[str, int] = OrderedDict()
        self._free: list[int] = []
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._slots)

    def clear(self) -> None:
        """Forget every cached vector."""
        with self._lock:
            self._slots.clear()
            self._free.clear()
            self._matrix = None

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Vectors for ``texts`` in order, shape (len(texts), d); misses embedded in one batch."""
        out, missing, where = self._lookup(texts)
        if missing:
            out = self._insert(missing, self._embed_fn(missing), out, where)
        assert out is not None  # _lookup returns None only together with misses
        return out

    async def aembed(
        self, texts: Sequence[str], aembed_fn: AsyncEmbedFn
    ) -> NDArray[np.float32]:
        """Like :meth:`embed`, but misses are embedded by awaiting ``aembed_fn(missing)``.

        The cache itself is shared with :meth:`embed`; only the way misses are
        computed differs (e.g. a framework's async embedding call).
        """
        out, missing, where = self._lookup(texts)
        if missing:
            out = self._insert(missing, await aembed_fn(missing), out, where)
        assert out is not None  # _lookup returns None only together with misses
        return out

    def _lookup(
        self, texts: Sequence[str]
    ) -> tuple[NDArray[np.float32] | None, list[str], list[list[int]]]:
        """Copy the cached rows out; return (partial output, distinct misses, their positions)."""
        slots = self._slots
        with self._lock:
            if self._matrix is not None:
                try:  # every text cached (the common case): C-level passes only
                    index = np.fromiter(map(slots.__getitem__, texts), np.intp, len(texts))
                except KeyError:
                    pass
                else:
                    deque(map(slots.move_to_end, texts), maxlen=0)  # refresh LRU order
                    self.hits += len(texts)
                    return self._matrix.take(index, axis=0), [], []
            found = [slots.get(t, -1) for t in texts]  # one hash look-up per text
            move = slots.move_to_end
            positions: dict[str, list[int]] = {}
            for pos, (text, slot) in enumerate(zip(texts, found, strict=True)):
                if slot >= 0:
                    move(text)
                else:
                    positions.setdefault(text, []).append(pos)
            out: NDArray[np.float32] | None = None
            if self._matrix is not None:
                index = np.asarray(found, dtype=np.int64)
                out = self._matrix[np.maximum(index, 0)]  # one gather; misses filled later
        missing = list(positions)
        self.hits += len(texts) - sum(len(p) for p in positions.values())
        self.misses += len(missing)
        if out is None and not missing:
            out = np.zeros((0, 0), dtype=np.float32)
        return out, missing, list(positions.values())

    def _insert(
        self,
        missing: list[str],
        raw: NDArray[np.floating] | Sequence[Sequence[float]],
        out: NDArray[np.float32] | None,
        where: list[list[int]],
    ) -> NDArray[np.float32]:
        """Validate freshly computed vectors, store them and write them into the output."""
        vectors = np.asarray(raw, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(missing):
            raise DimensionMismatchError(
                f"embed_fn returned shape {vectors.shape} for {len(missing)} texts"
            )
        if not np.all(np.isfinite(vectors)):
            raise NonFiniteInputError("embed_fn returned NaN or inf values")
        with self._lock:
            if self._matrix is not None and self._matrix.shape[1] != vectors.shape[1]:
                raise DimensionMismatchError(
                    f"embed_fn returned {vectors.shape[1]}-d vectors but the cache holds "
                    f"{self._matrix.shape[1]}-d vectors"
                )
            for text, vec in zip(missing, vectors, strict=True):
                self._matrix = self._store_row(text, vec)
        if out is None:
            n_out = sum(len(p) for p in where)
            out = np.empty((n_out, vectors.shape[1]), dtype=np.float32)
        for positions, vec in zip(where, vectors, strict=True):
            out[positions] = vec
        return out

    def _store_row(self, text: str, vec: NDArray[np.float32]) -> NDArray[np.float32]:
        """Put ``vec`` in a free row (growing or evicting as needed); caller holds the lock."""
        matrix = self._matrix
        if text in self._slots:
            slot = self._slots[text]
        elif self._free:
            slot = self._free.pop()
        elif matrix is None or len(self._slots) >= matrix.shape[0]:
            if matrix is not None and matrix.shape[0] >= self._maxsize:
                _, slot = self._slots.popitem(last=False)  # evict the least recently used
            else:
                size = min(self._maxsize, max(64, 2 * (0 if matrix is None else matrix.shape[0])))
                grown = np.empty((size, vec.shape[0]), dtype=np.float32)
                if matrix is not None:
                    grown[: matrix.shape[0]] = matrix
                matrix = grown
                slot = len(self._slots)
        else:
            slot = len(self._slots)
        assert matrix is not None
        matrix[slot] = vec
        self._slots[text] = slot
        self._slots.move_to_end(text)
        return matrix
