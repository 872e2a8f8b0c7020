"""``DiverseCompressor``: keep a relevant, diverse subset of the documents it is handed."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from diverse_core.embedder_check import check_embedder
from diverse_core.plan import Plan
from diverse_core.validation import check_k
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.embeddings import Embeddings
from pydantic import ConfigDict, Field, PrivateAttr

from .embeddings import DEFAULT_CACHE_SIZE, CachedEmbeddings, cached_embeddings
from .selection import (
    current_plan,
    document_texts,
    face_plan,
    fold_diversity,
    nonblank_documents,
    select_documents,
)

__all__ = ["DiverseCompressor"]


class DiverseCompressor(BaseDocumentCompressor):
    """A document compressor that selects ``k`` documents for relevance and diversity.

    Use it after any retriever with ``ContextualCompressionRetriever`` or as a step of
    a ``DocumentCompressorPipeline``. Documents are embedded with ``embeddings``
    (cached per text for the whole process); returned documents are copies with the
    metadata keys listed in :mod:`langchain_diverse.selection`.

    Args:
        embeddings: the model that embeds the query and the documents.
        k: documents to keep (all of them when fewer are handed in).
        method: selection method name (any of ``diverse_core.available_methods()``).
        method_params: the method's parameters, e.g. ``{"lambda_mult": 0.5}``.
        diversity: the shared knob in [0, 1] (0: pure relevance, 1: the method's most diverse
            setting), a keyword kept in ``method_params``.
        cache_size: most texts kept in the process-wide embedding cache of the model.
        source_key: the metadata key of each document's source (``"source"`` by default):
            ``method="learned"`` counts windows of one source as one (``None``: the texts'
            ``"title: "`` prefix is read instead).
        title_key: the metadata key of a document's display title (``None``: not read).

    Example:
        >>> from langchain_core.documents import Document
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> compressor = DiverseCompressor(embeddings=DeterministicFakeEmbedding(size=16), k=2)
        >>> docs = [Document(page_content=t) for t in ["a", "b", "c"]]
        >>> len(compressor.compress_documents(docs, "a"))
        2
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    embeddings: Embeddings
    k: int = 4
    method: str = "gmmr"
    method_params: dict[str, Any] = Field(default_factory=dict)
    cache_size: int = DEFAULT_CACHE_SIZE
    source_key: str | None = "source"
    title_key: str | None = "title"

    _embedder_memo: tuple[Embeddings, CachedEmbeddings] | None = PrivateAttr(default=None)
    _plan: Plan | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        fold_diversity(data)
        for name in ("k", "cache_size"):  # before pydantic turns "3" into 3
            if name in data:
                check_k(data[name], name)
        super().__init__(**data)
        # Outside pydantic validation so the core's typed errors reach the caller unwrapped.
        self._plan = face_plan(self.method, self.method_params)
        check_embedder(self._plan.method, self._plan.params, self.embeddings)

    def _embedder(self) -> CachedEmbeddings:
        source = self.embeddings
        memo = self._embedder_memo
        if memo is None or memo[0] is not source:  # namespace look-up once per model object
            memo = (source, cached_embeddings(source, maxsize=self.cache_size))
            self._embedder_memo = memo
        return memo[1]

    def _prepare(self, documents: Sequence[Document]) -> tuple[Plan, int, list[Document], list[str], list[int]]:
        """The plan and ``k`` (checked even when no document came), the documents with text, their
        texts, and the positions of the blank ones left out."""
        plan, k = current_plan(self), check_k(self.k, "k")
        kept, blank = nonblank_documents(list(documents))
        return plan, k, kept, document_texts(kept), blank

    def _select(self, plan: Plan, k: int, documents: list[Document], query: str, query_vector: Any,
                vectors: Any, blank: list[int]) -> list[Document]:
        return select_documents(query_vector, documents, vectors, plan, k, question=query,
                                source_key=self.source_key, title_key=self.title_key, blank=blank)

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Return ``k`` of ``documents`` chosen by ``method``, in pick order."""
        plan, k, documents, texts, blank = self._prepare(documents)
        if not documents:
            return []
        embedder = self._embedder()
        return self._select(plan, k, documents, query, embedder.embed_query_array(query),
                            embedder.embed_documents_array(texts), blank)

    async def acompress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Async :meth:`compress_documents`: awaits the model; selection runs in a worker thread."""
        plan, k, documents, texts, blank = self._prepare(documents)
        if not documents:
            return []
        embedder = self._embedder()
        query_vector = await embedder.aembed_query_array(query)
        vectors = await embedder.aembed_documents_array(texts)
        return await asyncio.to_thread(self._select, plan, k, documents, query, query_vector, vectors, blank)
