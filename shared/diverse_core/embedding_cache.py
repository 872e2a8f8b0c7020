"""A bounded, thread-safe per-text embedding cache that batches cache misses."""

from __future__ import annotations

import threading
from collections import OrderedDict
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
        self._namespace = namespace
        self._store: OrderedDict[tuple[str, str], NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._store)

    def clear(self) -> None:
        """Forget every cached vector."""
        with self._lock:
            self._store.clear()

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Vectors for ``texts`` in order, shape (len(texts), d); misses embedded in one batch."""
        keys, found, missing = self._lookup(texts)
        if missing:
            self._insert(missing, self._embed_fn(missing), found)
        return self._assemble(keys, found)

    async def aembed(
        self, texts: Sequence[str], aembed_fn: AsyncEmbedFn
    ) -> NDArray[np.float32]:
        """Like :meth:`embed`, but misses are embedded by awaiting ``aembed_fn(missing)``.

        The cache itself is shared with :meth:`embed`; only the way misses are
        computed differs (e.g. a framework's async embedding call).
        """
        keys, found, missing = self._lookup(texts)
        if missing:
            self._insert(missing, await aembed_fn(missing), found)
        return self._assemble(keys, found)

    def _lookup(
        self, texts: Sequence[str]
    ) -> tuple[list[tuple[str, str]], dict[tuple[str, str], NDArray[np.float32]], list[str]]:
        """(keys in order, cached vectors found, distinct missing texts in first-seen order)."""
        keys = [(self._namespace, t) for t in texts]
        store = self._store
        with self._lock:
            got = [store.get(key) for key in keys]  # one hash look-up per text
            move = store.move_to_end
            for key, vec in zip(keys, got, strict=True):
                if vec is not None:
                    move(key)
        found = {key: vec for key, vec in zip(keys, got, strict=True) if vec is not None}
        absent = [key[1] for key, vec in zip(keys, got, strict=True) if vec is None]
        missing = list(dict.fromkeys(absent))
        self.hits += len(keys) - len(absent)
        self.misses += len(missing)
        return keys, found, missing

    def _insert(
        self,
        missing: list[str],
        raw: NDArray[np.floating] | Sequence[Sequence[float]],
        found: dict[tuple[str, str], NDArray[np.float32]],
    ) -> None:
        """Validate freshly computed vectors, store them and add them to ``found``."""
        vectors = np.asarray(raw, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(missing):
            raise DimensionMismatchError(
                f"embed_fn returned shape {vectors.shape} for {len(missing)} texts"
            )
        if not np.all(np.isfinite(vectors)):
            raise NonFiniteInputError("embed_fn returned NaN or inf values")
        with self._lock:
            for text, vec in zip(missing, vectors, strict=True):
                key = (self._namespace, text)
                found[key] = vec
                self._store[key] = vec
                self._store.move_to_end(key)
            while len(self._store) > self._maxsize:
                self._store.popitem(last=False)

    @staticmethod
    def _assemble(
        keys: list[tuple[str, str]], found: dict[tuple[str, str], NDArray[np.float32]]
    ) -> NDArray[np.float32]:
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        # np.array on equal-length rows is ~2-3x faster than np.stack for many small rows.
        return np.array([found[key] for key in keys], dtype=np.float32)
