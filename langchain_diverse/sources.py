"""A LangChain vector store or retriever as a pipeline's :class:`~diverse_core.pipelines.CandidateSource`."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
from diverse_core.errors import EmptyCandidatesError, InvalidParameterError
from diverse_core.pipelines import Candidates
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import VectorStore
from numpy.typing import NDArray

from ._stored import StoreSearch
from .embeddings import CachedEmbeddings, cached_embeddings
from .selection import document_texts, nonblank_documents

__all__ = ["LangChainSource", "document_id"]


def document_id(doc: Document) -> str:
    """The document's own id, else a hash of its text (stable across runs)."""
    if doc.id:
        return str(doc.id)
    return "sha1:" + hashlib.sha1(doc.page_content.encode("utf-8")).hexdigest()[:16]


class LangChainSource:
    """Search a LangChain ``VectorStore`` (by the query's vector) or any ``BaseRetriever`` (by
    text), and embed the candidates through the process-wide embedding cache.

    Vectors a store already holds are read from it (InMemory, FAISS, Qdrant, Chroma, PGVector), so a search
    costs one query embedding; other stores' candidates are embedded once per process. A wrapped retriever returns its own number of documents; ``k``
    then only truncates.

    Args:
        vectorstore: the store searched for candidates (give this or ``base_retriever``).
        base_retriever: any retriever whose results are the candidates (or ``vectorstore``).
        embeddings: embeds queries and candidates (default: the store's embeddings).
        fetch_k: candidates per search when a pipeline asks for ``k=None``.
        search_kwargs: extra arguments for the store search (e.g. ``filter``).
        callbacks: the LangChain callbacks a wrapped retriever's runs nest under.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
        >>> _ = store.add_texts(["a", "b", "c"])
        >>> len(LangChainSource(vectorstore=store, fetch_k=2).search("a"))
        2
    """

    def __init__(
        self,
        *,
        vectorstore: VectorStore | None = None,
        base_retriever: BaseRetriever | None = None,
        embeddings: Embeddings | None = None,
        fetch_k: int = 50,
        search_kwargs: dict[str, Any] | None = None,
        callbacks: Any = None,
    ) -> None:
        if (vectorstore is None) == (base_retriever is None):
            raise InvalidParameterError(
                "give exactly one of vectorstore= or base_retriever=; got "
                f"vectorstore={type(vectorstore).__name__}, base_retriever={type(base_retriever).__name__}"
            )
        emb = embeddings if embeddings is not None else getattr(vectorstore, "embeddings", None)
        if emb is None:
            raise InvalidParameterError(
                "no embeddings: pass embeddings= (required with base_retriever=, or when the "
                "vector store exposes none)"
            )
        self.vectorstore = vectorstore
        self.base_retriever = base_retriever
        self.raw_embeddings = emb
        self.embedder: CachedEmbeddings = cached_embeddings(emb)
        self.fetch_k = fetch_k
        self.search_kwargs = dict(search_kwargs or {})
        self.callbacks = callbacks

    # ------------------------------------------------------------------ helpers
    def _config(self) -> RunnableConfig | None:
        return {"callbacks": self.callbacks} if self.callbacks is not None else None

    def _reads_stored(self) -> bool:
        store = self.vectorstore
        return store is not None and self.raw_embeddings is store.embeddings

    def _store_search(self) -> StoreSearch:
        assert self.vectorstore is not None
        return StoreSearch(self.vectorstore, self.search_kwargs, self._reads_stored())

    def _build(self, query: str, qv: NDArray[np.float32], docs: list[Document], vecs: Any,
               k: int | None, blank: list[int]) -> Candidates:
        if not docs:
            raise EmptyCandidatesError(f"no candidate documents were retrieved for query={query!r}")
        if k is not None:
            docs, vecs = docs[:k], vecs[:k]
        found = Candidates.build(
            query, document_texts(docs), [document_id(d) for d in docs], vecs, qv, payloads=docs
        )
        if not blank:
            return found
        note = f"left out {len(blank)} fetched document(s) with no text (positions {blank[:20]}) for query={query!r}"
        return dataclasses.replace(found, notes=(note,))

    # ------------------------------------------------------------------ CandidateSource
    def search(self, query: str, k: int | None = None) -> Candidates:
        """Retrieve up to ``k`` (default ``fetch_k``) candidates for ``query``."""
        qv = self.embedder.embed_query_array(query)
        known = None
        if self.vectorstore is not None:
            docs, known = self._store_search().run(qv.tolist(), k or self.fetch_k)
        else:
            assert self.base_retriever is not None
            docs = list(self.base_retriever.invoke(query, self._config()))
        docs, blank = nonblank_documents(docs) if docs else (docs, [])
        vecs = self.embedder.embed_documents_array(document_texts(docs), known=known) if docs else None
        return self._build(query, qv, docs, vecs, k, blank)

    async def asearch(self, query: str, k: int | None = None) -> Candidates:
        """Asynchronous :meth:`search` (the store's / retriever's async API, the model's async embeddings)."""
        qv = await self.embedder.aembed_query_array(query)
        known = None
        if self.vectorstore is not None:
            docs, known = await self._store_search().arun(qv.tolist(), k or self.fetch_k)
        else:
            assert self.base_retriever is not None
            docs = list(await self.base_retriever.ainvoke(query, self._config()))
        docs, blank = nonblank_documents(docs) if docs else (docs, [])
        vecs = (
            await self.embedder.aembed_documents_array(document_texts(docs), known=known)
            if docs else None
        )
        return self._build(query, qv, docs, vecs, k, blank)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Query embeddings of ``texts`` (cached)."""
        return np.stack([self.embedder.embed_query_array(t) for t in texts])

    async def aembed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Asynchronous :meth:`embed`."""
        return np.stack(await asyncio.gather(*(self.embedder.aembed_query_array(t) for t in texts)))

    def __repr__(self) -> str:
        origin = type(self.vectorstore or self.base_retriever).__name__
        return f"LangChainSource({origin}, fetch_k={self.fetch_k})"
