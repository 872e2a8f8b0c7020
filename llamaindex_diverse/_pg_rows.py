"""Search a ``PGVectorStore`` so the candidates' stored vectors come back with the rows.

``PGVectorStore.query`` selects no vectors (its results carry ``embedding=None``), so
reading them needs a second statement by node id. The store has its own query that
keeps the vector column (``_query_with_embedding``, what its MMR mode runs): for a plain
``VectorIndexRetriever`` in the default query mode over such a store,
:func:`searching_with_vectors` gives a stand-in that runs that query instead. The
stand-in shares the retriever's state and runs its own ``retrieve``/``aretrieve`` (the
same events, spans, docstore look-ups and node building), so the only difference is the
statement: the same rows, scores and order, plus the vectors, collected per call in a
context variable. Any other retriever, store, mode or version of the integration gets
``None`` (the caller keeps the read by node id).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from diverse_core.pgvector_sql import PgSearch, pgvector_search
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store.retrievers.retriever import VectorIndexRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import VectorStoreQueryMode

from ._stored import StoredVectors

__all__ = ["async_engine_usable", "collected_reader", "collecting", "pg_guard", "searching_with_vectors"]

#: node id -> stored vector, filled by the stand-in's searches inside :func:`collecting`.
_SINK: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "llamaindex_diverse_pg_rows", default=None
)

_SYNC = ("_query_with_embedding",)
_ASYNC = ("_async_query_with_embedding", "_aquery_with_embedding")


def _method(store: Any, names: tuple[str, ...]) -> Any:
    for name in names:
        fn = getattr(store, name, None)
        if callable(fn):
            return fn
    return None


def _usable(store: Any) -> bool:
    return (
        type(store).__name__ == "PGVectorStore"
        and _method(store, _SYNC) is not None
        and _method(store, _ASYNC) is not None
        and callable(getattr(store, "_db_rows_to_query_result", None))
        and callable(getattr(store, "_initialize", None))
    )


def _keep(pairs: list[tuple[Any, Any]], search: PgSearch) -> list[Any]:
    """The rows, with their vectors put into the current call's sink: the binary ones
    the search read (one numpy decode), else those the store's query returned."""
    sink = _SINK.get()
    if sink is not None:
        matrix = search.vectors(len(pairs))
        if matrix is not None:
            for (row, _), vector in zip(pairs, matrix, strict=True):
                sink[str(row.node_id)] = vector
        else:
            for row, vector in pairs:
                if vector is not None and len(vector):
                    sink[str(row.node_id)] = vector
    return [row for row, _ in pairs]


class _WithVectors(VectorIndexRetriever):
    """``VectorIndexRetriever`` whose default-mode search over ``PGVectorStore`` keeps the vectors.

    Never constructed: a stand-in is made by :func:`searching_with_vectors` around an
    existing retriever's attribute dict.
    """

    def _get_nodes_with_embeddings(self, query_bundle_with_embeddings: QueryBundle) -> list[NodeWithScore]:
        query = self._build_vector_store_query(query_bundle_with_embeddings)
        store: Any = self._vector_store
        if query.mode != VectorStoreQueryMode.DEFAULT or not _usable(store):
            return super()._get_nodes_with_embeddings(query_bundle_with_embeddings)
        store._initialize()  # what PGVectorStore.query does first
        with pgvector_search(query.similarity_top_k, binary=True) as search:
            pairs = _method(store, _SYNC)(
                query.query_embedding, query.similarity_top_k, query.filters, **self._kwargs
            )
        return self._finish(store._db_rows_to_query_result(_keep(pairs, search)))

    async def _aget_nodes_with_embeddings(
        self, query_bundle_with_embeddings: QueryBundle
    ) -> list[NodeWithScore]:
        query = self._build_vector_store_query(query_bundle_with_embeddings)
        store: Any = self._vector_store
        if query.mode != VectorStoreQueryMode.DEFAULT or not _usable(store):
            return await super()._aget_nodes_with_embeddings(query_bundle_with_embeddings)
        store._initialize()
        with pgvector_search(query.similarity_top_k, binary=True) as search:
            pairs = await _method(store, _ASYNC)(
                query.query_embedding, query.similarity_top_k, query.filters, **self._kwargs
            )
        result = store._db_rows_to_query_result(_keep(pairs, search))
        nodes_to_fetch = self._determine_nodes_to_fetch(result)
        if nodes_to_fetch:
            fetched = await self._docstore.aget_nodes(node_ids=nodes_to_fetch, raise_error=False)
            result.nodes = self._insert_fetched_nodes_into_query_result(result, fetched)
        return self._scored(result)

    def _finish(self, result: Any) -> list[NodeWithScore]:
        """What ``VectorIndexRetriever`` does with a query result (sync docstore look-up)."""
        nodes_to_fetch = self._determine_nodes_to_fetch(result)
        if nodes_to_fetch:
            fetched = self._docstore.get_nodes(node_ids=nodes_to_fetch, raise_error=False)
            result.nodes = self._insert_fetched_nodes_into_query_result(result, fetched)
        return self._scored(result)

    def _scored(self, result: Any) -> list[NodeWithScore]:
        from llama_index.core.indices.utils import log_vector_store_query_result

        log_vector_store_query_result(result)
        return self._convert_nodes_to_scored_nodes(result)


def searching_with_vectors(
    retriever: BaseRetriever, embed_model: BaseEmbedding | None
) -> BaseRetriever | None:
    """A stand-in for ``retriever`` whose search also returns the stored vectors, or ``None``.

    Only for a plain ``VectorIndexRetriever`` (not a subclass, which may search its own
    way) in the default query mode over a ``PGVectorStore`` that has the vector-keeping
    query, and only when ``embed_model`` is unset or is the index's model (the stored
    vectors come from that model). The stand-in shares the retriever's attributes, so
    later changes to the retriever (e.g. ``similarity_top_k``) apply to it too. Use it
    inside :func:`collecting`.
    """
    if type(retriever) is not VectorIndexRetriever:
        return None
    if getattr(retriever, "_vector_store_query_mode", None) != VectorStoreQueryMode.DEFAULT:
        return None
    if not _usable(getattr(retriever, "_vector_store", None)):
        return None
    index_model = getattr(getattr(retriever, "_index", None), "_embed_model", None)
    if embed_model is not None and embed_model is not index_model:
        return None  # the stored vectors belong to another model
    stand_in = object.__new__(_WithVectors)
    stand_in.__dict__ = retriever.__dict__  # the same state, read and written live
    return stand_in


@contextmanager
def collecting() -> Iterator[dict[str, Any]]:
    """Collect the vectors the stand-ins' searches return inside the block (node id -> vector)."""
    found: dict[str, Any] = {}
    token = _SINK.set(found)
    try:
        yield found
    finally:
        _SINK.reset(token)


def collected_reader(found: dict[str, Any], fallback: StoredVectors | None) -> StoredVectors | None:
    """Read from ``found`` first; ask ``fallback`` (one batch) only for the ids it lacks."""
    if not found:
        return fallback

    def read(ids: list[str]) -> list[Any]:
        out = [found.get(i) for i in ids]
        missing = [i for i, v in zip(ids, out, strict=True) if v is None]
        if missing and fallback is not None:
            more = dict(zip(missing, fallback(missing), strict=True))
            out = [v if v is not None else more.get(i) for i, v in zip(ids, out, strict=True)]
        return out

    return read


def pg_guard(retriever: Any) -> AbstractContextManager[Any]:
    """Around any search by ``retriever``: over ``PGVectorStore``, HNSW may return its
    ``similarity_top_k`` rows and a dimension mismatch is typed (see
    :mod:`diverse_core.pgvector_sql`); a no-op over other stores. The stand-in's own search
    opens the inner block that also reads the vectors in binary."""
    store = getattr(retriever, "_vector_store", None)
    if type(store).__name__ != "PGVectorStore":
        return nullcontext()
    top_k = getattr(retriever, "_similarity_top_k", None)
    return pgvector_search(top_k if isinstance(top_k, int) else None)


# PGVectorStore's async engine (asyncpg) keeps its pooled connections bound to the event loop
# that opened them: id(store) -> that loop. A sync pipeline run makes a fresh loop per call.
_FIRST_LOOP: dict[int, weakref.ref[asyncio.AbstractEventLoop]] = {}
_FIRST_LOOP_LOCK = threading.Lock()


def async_engine_usable(retriever: Any) -> bool:
    """Whether ``retriever``'s async search may run on the running loop.

    Always true except over ``PGVectorStore``, whose async engine may only be used on the
    loop that first used it through this face: a search on another loop (e.g. the fresh
    loop of each synchronous pipeline ``run()``) would meet connections "attached to a
    different loop"; the caller then runs the sync search in a worker thread instead.
    """
    store = getattr(retriever, "_vector_store", None)
    if type(store).__name__ != "PGVectorStore":
        return True
    loop = asyncio.get_running_loop()
    with _FIRST_LOOP_LOCK:
        ref = _FIRST_LOOP.get(id(store))
        if ref is None:
            _FIRST_LOOP[id(store)] = weakref.ref(loop)
            return True
        return ref() is loop
