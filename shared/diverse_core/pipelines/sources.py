"""Candidate sources that live in the core: a searchable in-memory collection, and a fixed pool."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._lazy import ProcessDefault
from ..embedding_cache import EmbeddingCache
from ..errors import DimensionMismatchError, InvalidParameterError
from ..validation import check_k
from .contract import Candidates

__all__ = ["InMemorySource", "PoolSource", "Embedder"]

Embedder = Callable[[list[str]], Any]



def _minilm_cache() -> EmbeddingCache:
    from ..embedders import get_default_embedder

    return EmbeddingCache(get_default_embedder(), namespace="all-MiniLM-L6-v2")


#: One process-wide cache over the packaged MiniLM (a text is embedded once per process).
_DEFAULT_CACHE = ProcessDefault(_minilm_cache)


class InMemorySource:
    """Texts searchable by cosine similarity: the core's :class:`CandidateSource`.

    Texts are embedded once (on first use) through an embedding cache; each search embeds
    only its query (cached too) and ranks the collection with one matrix-vector product.

    Args:
        texts: the collection.
        embedder: ``embedder(list_of_texts) -> array (n, d)``; default: the packaged
            all-MiniLM-L6-v2 (``embeddings`` extra), shared by every source in the process.
        ids: stable ids (default: the positions as strings).
        embeddings: precomputed vectors of ``texts`` (then only queries are embedded).
        default_k: pool size when a search asks for ``k=None``.
        query_vectors: precomputed query embeddings by query text.

    Example:
        >>> import numpy as np
        >>> def embed(texts):
        ...     return np.array([[t.count("a"), t.count("b"), 1.0] for t in texts])
        >>> src = InMemorySource(["aa", "bb", "ab"], embedder=embed)
        >>> src.search("a", k=2).texts
        ('aa', 'ab')
    """

    def __init__(
        self,
        texts: Sequence[str],
        embedder: Embedder | None = None,
        *,
        ids: Sequence[str] | None = None,
        embeddings: Any = None,
        default_k: int = 50,
        query_vectors: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise InvalidParameterError("texts must be a sequence of strings")
        if len(texts) == 0:
            raise InvalidParameterError("texts is empty: a source needs at least one text")
        if ids is not None and len(ids) != len(texts):
            raise DimensionMismatchError(f"ids has {len(ids)} entries for {len(texts)} texts")
        if ids is not None and len(set(ids)) != len(ids):
            raise InvalidParameterError("ids must be unique")
        self.texts = tuple(texts)
        self.ids = tuple(str(i) for i in ids) if ids is not None else tuple(str(i) for i in range(len(texts)))
        self.default_k = check_k(default_k, "default_k")
        self._cache = _DEFAULT_CACHE.get() if embedder is None else EmbeddingCache(embedder)
        self._query_vectors = {q: np.asarray(v, dtype=np.float32).reshape(-1) for q, v in (query_vectors or {}).items()}
        self._matrix: NDArray[np.float32] | None = None
        if embeddings is not None:
            self._matrix = self._checked(np.asarray(embeddings, dtype=np.float32))
        self._lock = threading.Lock()

    def _checked(self, matrix: NDArray[np.float32]) -> NDArray[np.float32]:
        if matrix.ndim != 2 or matrix.shape[0] != len(self.texts):
            raise DimensionMismatchError(
                f"embeddings must have shape (len(texts), d) = ({len(self.texts)}, d); got {matrix.shape}"
            )
        return matrix

    @property
    def matrix(self) -> NDArray[np.float32]:
        """The collection's vectors, shape (n, d) (embedded on first use)."""
        if self._matrix is None:
            with self._lock:
                if self._matrix is None:
                    self._matrix = self._checked(self._cache.embed(list(self.texts)))
        return self._matrix

    def __len__(self) -> int:
        return len(self.texts)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embeddings of ``texts`` (cached; precomputed query vectors are used when given)."""
        texts = list(texts)
        if texts and all(t in self._query_vectors for t in texts):
            return np.stack([self._query_vectors[t] for t in texts])
        if not self._can_embed():
            missing = [t for t in texts if t not in self._query_vectors]
            raise InvalidParameterError(
                f"this source has no embedder for new texts (got query={missing[0]!r}); pass embedder="
            )
        out = self._cache.embed(texts)
        for i, t in enumerate(texts):
            if t in self._query_vectors:
                out[i] = self._query_vectors[t]
        return out

    def _can_embed(self) -> bool:
        return True

    async def aembed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """:meth:`embed` in a worker thread."""
        return await asyncio.to_thread(self.embed, texts)

    def _order(self, sims: NDArray[np.float64], k: int) -> NDArray[np.int64]:
        n = sims.shape[0]
        if k >= n:
            return np.lexsort((np.arange(n), -sims)).astype(np.int64)
        part = np.argpartition(-sims, k - 1)[:k]
        return part[np.lexsort((part, -sims[part]))].astype(np.int64)

    def search(self, query: str, k: int | None = None) -> Candidates:
        """The ``k`` texts most similar to ``query`` (ties: lower position first)."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidParameterError(f"query must be a non-empty string; got query={query!r}")
        k = self.default_k if k is None else check_k(k, "k")
        qv = self.embed([query])[0]
        matrix = self.matrix
        if qv.shape[0] != matrix.shape[1]:
            raise DimensionMismatchError(
                f"the query embedding has dimension {qv.shape[0]} but the collection's is {matrix.shape[1]}"
            )
        norms = np.linalg.norm(matrix, axis=1).astype(np.float64) * float(np.linalg.norm(qv))
        sims = np.divide(matrix @ qv, norms, out=np.zeros(len(self.texts)), where=norms > 0)
        order = self._order(sims, k)
        return Candidates.build(
            query,
            [self.texts[i] for i in order],
            [self.ids[i] for i in order],
            matrix[order],
            qv,
            positions=order.tolist(),
        )

    async def asearch(self, query: str, k: int | None = None) -> Candidates:
        """:meth:`search` in a worker thread."""
        return await asyncio.to_thread(self.search, query, k)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n={len(self.texts)}, default_k={self.default_k})"


class PoolSource(InMemorySource):
    """A fixed candidate pool with its vectors and the question's vector: what a caller that
    already retrieved candidates hands a pipeline.

    Searching the question returns the pool's most relevant ``k`` candidates **in pool order**
    (``k=None``: the whole pool), so indices into the result are positions in the pool when
    ``k`` covers it. Other query texts need ``embedder=``.

    Example:
        >>> import numpy as np
        >>> src = PoolSource("q?", ["a", "b", "c"], np.eye(3), np.array([0.0, 1.0, 0.5]))
        >>> src.search("q?", k=2).texts
        ('b', 'c')
    """

    def __init__(
        self,
        question: str,
        texts: Sequence[str],
        embeddings: Any,
        query_embedding: Any,
        *,
        embedder: Embedder | None = None,
        ids: Sequence[str] | None = None,
    ) -> None:
        emb = np.asarray(embeddings, dtype=np.float32)
        super().__init__(
            texts,
            embedder if embedder is not None else _no_embedder,
            ids=ids,
            embeddings=emb,
            default_k=max(1, len(texts)),
            query_vectors={question: query_embedding},
        )
        self._has_embedder = embedder is not None

    def _can_embed(self) -> bool:
        return self._has_embedder

    def _order(self, sims: NDArray[np.float64], k: int) -> NDArray[np.int64]:
        return np.sort(super()._order(sims, k)).astype(np.int64)


def _no_embedder(texts: list[str]) -> Any:  # pragma: no cover - guarded by _can_embed
    raise InvalidParameterError("this source has no embedder for new texts; pass embedder=")
