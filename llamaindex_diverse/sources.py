"""A LlamaIndex index or retriever as a pipeline's :class:`~diverse_core.pipelines.CandidateSource`."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from diverse_core.errors import EmptyCandidatesError, InvalidParameterError
from diverse_core.pipelines import Candidates
from diverse_core.pipelines.base import on_sync_run_loop
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store.base import VectorStoreIndex
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
from numpy.typing import NDArray

from ._pg_rows import (
    PgCandidates,
    RowNodes,
    async_engine_usable,
    collected_reader,
    collecting,
    pg_guard,
    row_searcher,
    searching_with_vectors,
)
from ._query_vectors import aembed_query, embed_query
from ._stored import known_for, reading, stored_vectors_of
from ._vectors import ModelBoundCache, nodes_to_embed, stack_node_vectors

__all__ = ["LlamaIndexSource"]

#: One cache for every source of the process (a text is embedded once per model).
_CACHE = ModelBoundCache(maxsize=8192)


class LlamaIndexSource:
    """Search a ``VectorStoreIndex`` (``k`` hits per search) or any ``BaseRetriever`` (its own
    number of hits; ``k`` then only truncates), and embed what the nodes do not carry.

    Args:
        origin: a ``VectorStoreIndex`` or a ``BaseRetriever``.
        embed_model: embeds queries and nodes lacking an embedding (default: the index's model,
            else ``Settings.embed_model``, resolved only when needed).
        fetch_k: hits per search of an index when a pipeline asks for ``k=None``.

    Example:
        >>> from llama_index.core import Document, VectorStoreIndex
        >>> from llama_index.core.embeddings import MockEmbedding
        >>> emb = MockEmbedding(embed_dim=8)
        >>> index = VectorStoreIndex.from_documents([Document(text=t) for t in "abc"], embed_model=emb)
        >>> len(LlamaIndexSource(index, embed_model=emb, fetch_k=2).search("a"))
        2
    """

    def __init__(self, origin: Any, *, embed_model: BaseEmbedding | None = None, fetch_k: int = 50) -> None:
        if not isinstance(origin, (BaseRetriever, VectorStoreIndex)):
            raise InvalidParameterError(
                f"retriever must be a llama_index BaseRetriever or VectorStoreIndex; got {type(origin).__name__}"
            )
        if embed_model is not None and not isinstance(embed_model, BaseEmbedding):
            raise InvalidParameterError(
                f"embed_model must be a llama_index BaseEmbedding; got {type(embed_model).__name__}"
            )
        self.origin = origin
        self._embed_model = embed_model
        self.fetch_k = fetch_k

    @property
    def embed_model(self) -> BaseEmbedding:
        """The model that embeds queries and unembedded nodes."""
        if self._embed_model is not None:
            return self._embed_model
        if isinstance(self.origin, VectorStoreIndex):
            return self.origin._embed_model
        from llama_index.core import Settings

        return Settings.embed_model

    def _retriever(self, k: int | None) -> BaseRetriever:
        if isinstance(self.origin, VectorStoreIndex):
            return self.origin.as_retriever(similarity_top_k=k or self.fetch_k, embed_model=self.embed_model)
        return self.origin

    def _searcher(self, retriever: BaseRetriever) -> BaseRetriever:
        """``retriever``, or its stand-in that also returns the stored vectors (PGVectorStore)."""
        return searching_with_vectors(retriever, self._embed_model) or retriever

    @staticmethod
    def texts(nodes: Sequence[NodeWithScore]) -> list[str]:
        """What an LLM reads of each node."""
        return [n.node.get_content(metadata_mode=MetadataMode.LLM) for n in nodes]

    def _nodes(self, query: str, got: Any) -> tuple[list[NodeWithScore], list[int], list[str]]:
        """The retrieved nodes, and the positions and texts of those lacking a vector."""
        nodes = list(got)
        if not nodes:
            raise EmptyCandidatesError(f"no candidate nodes were retrieved for query={query!r}")
        positions, texts = nodes_to_embed(nodes, MetadataMode.EMBED)
        return nodes, positions, texts

    def _build(self, query: str, query_embedding: Any, nodes: list[NodeWithScore], positions: list[int],
               embedded: Any, k: int | None) -> Candidates:
        vecs = stack_node_vectors(nodes, positions, embedded, self.embed_model.model_name)
        if k is not None:
            nodes, vecs = nodes[:k], vecs[:k]
        qv = np.asarray(query_embedding, dtype=np.float64)
        return Candidates.build(query, self.texts(nodes), [n.node.node_id for n in nodes], vecs, qv, payloads=nodes)

    def _bundle(self, query: str, retriever: BaseRetriever, qv: list[float]) -> QueryBundle:
        """The query for ``retriever``, carrying ``qv`` when it embeds queries with our model
        (so the query is embedded once per search, not twice)."""
        if getattr(retriever, "_embed_model", None) is self.embed_model:
            return QueryBundle(query, embedding=qv)
        return QueryBundle(query)

    def _from_rows(self, query: str, query_embedding: Any, rows: PgCandidates, k: int | None) -> Candidates:
        """The candidates of a ``PGVectorStore`` search's rows (see :func:`_rows_readable`): their
        texts, ids and stored vectors; each payload becomes a node when it is first read."""
        n = len(rows.rows) if k is None else min(k, len(rows.rows))
        ids = rows.node_ids() or []
        qv = np.asarray(query_embedding, dtype=np.float64)
        found = Candidates.build(query, rows.texts[:n], ids[:n], rows.vectors[:n], qv)
        return dataclasses.replace(found, payloads=RowNodes(rows, n))

    def search(self, query: str, k: int | None = None) -> Candidates:
        """Retrieve candidates for ``query`` and their vectors (read from the store when it keeps
        them: SimpleVectorStore, Qdrant, FAISS, PGVectorStore); the query is embedded once.

        Over ``PGVectorStore``, when nobody observes the retriever (no callback, event or span
        handler) and no row's node has metadata, the candidates come from the search's rows and
        only the payloads a pipeline reads (its chosen documents) become nodes.
        """
        retriever = self._retriever(k)
        model = self.embed_model
        query_embedding = embed_query(model, query)
        bundle = self._bundle(query, retriever, query_embedding)
        rows = row_searcher(retriever, self._embed_model)
        with collecting() as found, pg_guard(retriever):
            if rows is None:
                got = self._searcher(retriever).retrieve(bundle)
            else:
                got = rows.search_rows(bundle, _rows_readable)
        if isinstance(got, PgCandidates):
            return self._from_rows(query, query_embedding, got, k)
        nodes, positions, texts = self._nodes(query, got)
        with reading(collected_reader(found, stored_vectors_of(retriever, self._embed_model))):
            embedded = _CACHE.for_model(model).embed(texts, known_for(nodes, positions)) if positions else None
        return self._build(query, query_embedding, nodes, positions, embedded, k)

    async def asearch(self, query: str, k: int | None = None) -> Candidates:
        """Asynchronous :meth:`search` (``aretrieve``, the model's async embeddings). Over a
        ``PGVectorStore`` whose async pool belongs to another loop it is :meth:`search`: on a
        synchronous run's own loop right there, on any other loop in a worker thread."""
        retriever = self._retriever(k)
        if not async_engine_usable(retriever):  # PGVectorStore's async pool belongs to another loop:
            if on_sync_run_loop():  # a sync run's own loop (nobody else waits on it): right here
                return self.search(query, k)
            return await asyncio.to_thread(self.search, query, k)  # the sync search, in a thread
        model = self.embed_model
        query_embedding = await aembed_query(model, query)
        bundle = self._bundle(query, retriever, query_embedding)
        rows = row_searcher(retriever, self._embed_model)
        with collecting() as found, pg_guard(retriever):
            if rows is None:
                got = await self._searcher(retriever).aretrieve(bundle)
            else:
                got = await rows.asearch_rows(bundle, _rows_readable)
        if isinstance(got, PgCandidates):
            return self._from_rows(query, query_embedding, got, k)
        nodes, positions, texts = self._nodes(query, got)
        with reading(collected_reader(found, stored_vectors_of(retriever, self._embed_model))):
            embedded = (
                await _CACHE.for_model(model).aembed(texts, None, known_for(nodes, positions))
                if positions else None
            )
        return self._build(query, query_embedding, nodes, positions, embedded, k)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float64]:
        """Query embeddings of ``texts``."""
        model = self.embed_model
        return np.asarray([embed_query(model, t) for t in texts], dtype=np.float64)

    async def aembed(self, texts: Sequence[str]) -> NDArray[np.float64]:
        """Asynchronous :meth:`embed`."""
        model = self.embed_model
        return np.asarray([await aembed_query(model, t) for t in texts], dtype=np.float64)

    def __repr__(self) -> str:
        return f"LlamaIndexSource({type(self.origin).__name__}, fetch_k={self.fetch_k})"


def _rows_readable(rows: PgCandidates) -> bool:
    """Whether a search's rows make the candidates as they are: no node has metadata (what an LLM
    reads of one, and what is embedded, is its text) and every node id is known."""
    return rows.readable() and rows.node_ids() is not None
