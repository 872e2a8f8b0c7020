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

When nobody observes the retriever's events, :meth:`_WithVectors.search_rows` goes one step
further: the same statement, but the rows come back as :class:`PgCandidates` (their vectors
decoded in one numpy call), so the selection runs on the vectors and only the chosen rows
become nodes (building a node from a row costs about 10 us, most of a 50-row search's client
time after the statement). Rows that the retriever would treat specially (repeated node ids,
non-text nodes, blank texts, missing vectors) become nodes first, as before.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
from diverse_core.pgvector_sql import PgSearch, pgvector_search
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store.retrievers.retriever import VectorIndexRetriever
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.dispatcher import Dispatcher
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import VectorStoreQueryMode
from numpy.typing import NDArray

from ._observers import observed
from ._stored import StoredVectors

__all__ = [
    "RETRIEVE_DISPATCHERS",
    "PgCandidates",
    "async_engine_usable",
    "collected_reader",
    "collecting",
    "pg_guard",
    "row_searcher",
    "searching_with_vectors",
]

#: The dispatchers whose events and spans a vector index retriever's ``retrieve`` sends (what a
#: search on the rows, :meth:`_WithVectors.search_rows`, skips).
RETRIEVE_DISPATCHERS = (
    get_dispatcher("llama_index.core.base.base_retriever"),
    get_dispatcher("llama_index.core.indices.vector_store.retrievers.retriever"),
)

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


#: What ``PGVectorStore`` (``node_to_metadata_dict``) writes into a node's JSON when the node has
#: no metadata of its own, and when it has no relationships (the fields follow in this order; the
#: node's own ``metadata`` is the first ``"metadata": `` of the JSON: ``id_`` and ``embedding``
#: come before it, and quotes inside strings are escaped).
_METADATA = '"metadata": '
_NO_METADATA = '"metadata": {}, "excluded_embed_metadata_keys"'
_NO_RELATIONSHIPS = '"relationships": {}'
_SOURCE = "1"  # NodeRelationship.SOURCE's value: the relationship ``ref_doc_id`` follows


def _ref_doc_id(metadata: dict[str, Any]) -> tuple[bool, str | None]:
    """``(known, node.ref_doc_id)`` of a row, read without building the node.

    The store writes ``ref_doc_id or "None"`` into the row's metadata, so ``"None"`` is read
    from the node's relationships (no relationships: ``None``; otherwise the JSON is parsed).
    """
    ref = metadata.get("ref_doc_id")
    if isinstance(ref, str) and ref != "None":
        return True, ref
    content = metadata.get("_node_content")
    if not isinstance(content, str):
        return False, None
    if _NO_RELATIONSHIPS in content:
        return True, None
    try:
        source = json.loads(content).get("relationships", {}).get(_SOURCE)
    except (ValueError, AttributeError):
        return False, None
    if source is None:
        return True, None
    return (True, source.get("node_id")) if isinstance(source, dict) else (False, None)


@dataclass
class PgCandidates:
    """A ``PGVectorStore`` search's rows and vectors, before any node is built.

    Only made for rows that all become plain ``TextNode`` s with non-blank text, distinct node
    ids and a stored vector each (see :meth:`_WithVectors.search_rows`), so the selection can
    run on :attr:`vectors` and :meth:`nodes` builds the nodes of the chosen rows alone, as the
    store builds them (the same nodes and scores the retriever would have returned).

    Attributes:
        rows: the store's rows (``node_id``, ``text``, ``metadata``, ``similarity``), in order.
        vectors: their stored vectors, (n, d) float32.
        texts: the rows' texts.
    """

    rows: list[Any]
    vectors: NDArray[np.float32]
    texts: list[str]
    stand_in: _WithVectors
    _sources: list[str | None] | None = None
    _readable: bool | None = None

    @property
    def scores(self) -> list[float]:
        """The rows' similarities (the retriever's ``NodeWithScore.score``)."""
        return [float(row.similarity) for row in self.rows]

    def readable(self) -> bool:
        """Whether a text-reading method can read the rows as they are: no row's node has
        metadata (its content in every metadata mode is its text) and every node's source
        (``ref_doc_id``) is known."""
        if self._readable is None:
            sources: list[str | None] = []
            ok = True
            for row in self.rows:
                content = row.metadata.get("_node_content")
                known, ref = _ref_doc_id(row.metadata)
                if not (known and isinstance(content, str) and not row.custom_fields
                        and content.find(_METADATA) == content.find(_NO_METADATA) != -1):
                    ok = False
                    break
                sources.append(ref)
            self._readable, self._sources = ok, (sources if ok else None)
        return self._readable

    @property
    def sources(self) -> list[str | None]:
        """The rows' nodes' ``ref_doc_id`` (only when :meth:`readable`)."""
        if not self.readable() or self._sources is None:
            raise ValueError("the rows' sources are not known")
        return self._sources

    def nodes(self, positions: list[int]) -> list[NodeWithScore]:
        """The retriever's nodes of the rows at ``positions``, in that order."""
        store: Any = self.stand_in._vector_store
        return self.stand_in._scored(store._db_rows_to_query_result([self.rows[i] for i in positions]))


def _candidates(
    pairs: list[tuple[Any, Any]], search: PgSearch, stand_in: _WithVectors
) -> PgCandidates | None:
    """The rows as :class:`PgCandidates`, or ``None`` when they must become nodes first."""
    rows = [row for row, _ in pairs]
    matrix = search.vectors(len(rows))
    if matrix is None:
        return None
    texts = [row.text for row in rows]
    if (
        len({str(row.node_id) for row in rows}) != len(rows)  # the retriever drops repeats
        or not all(isinstance(r.metadata, dict) and r.metadata.get("_node_type") == "TextNode" for r in rows)
        or not all(isinstance(t, str) and t and not t.isspace() for t in texts)
    ):
        return None
    return PgCandidates(rows=rows, vectors=matrix, texts=texts, stand_in=stand_in)


#: ``accept(candidates)``: whether the caller selects on the rows (else nodes are built).
Accept = Callable[[PgCandidates], bool]


class _WithVectors(VectorIndexRetriever):
    """``VectorIndexRetriever`` whose default-mode search over ``PGVectorStore`` keeps the vectors.

    Never constructed: a stand-in is made by :func:`searching_with_vectors` around an
    existing retriever's attribute dict.
    """

    def _pg_query(self, bundle: QueryBundle) -> Any:
        """The store query of ``bundle``, or ``None`` when the store's own search must run."""
        query = self._build_vector_store_query(bundle)
        store: Any = self._vector_store
        if query.mode != VectorStoreQueryMode.DEFAULT or not _usable(store):
            return None
        store._initialize()  # what PGVectorStore.query does first
        return query

    def _pairs(self, query: Any) -> tuple[list[tuple[Any, Any]], PgSearch]:
        with pgvector_search(query.similarity_top_k, binary=True) as search:
            pairs = _method(self._vector_store, _SYNC)(
                query.query_embedding, query.similarity_top_k, query.filters, **self._kwargs
            )
        return pairs, search

    async def _apairs(self, query: Any) -> tuple[list[tuple[Any, Any]], PgSearch]:
        with pgvector_search(query.similarity_top_k, binary=True) as search:
            pairs = await _method(self._vector_store, _ASYNC)(
                query.query_embedding, query.similarity_top_k, query.filters, **self._kwargs
            )
        return pairs, search

    def _get_nodes_with_embeddings(self, query_bundle_with_embeddings: QueryBundle) -> list[NodeWithScore]:
        query = self._pg_query(query_bundle_with_embeddings)
        if query is None:
            return super()._get_nodes_with_embeddings(query_bundle_with_embeddings)
        return self._finish(self._result(*self._pairs(query)))

    async def _aget_nodes_with_embeddings(
        self, query_bundle_with_embeddings: QueryBundle
    ) -> list[NodeWithScore]:
        query = self._pg_query(query_bundle_with_embeddings)
        if query is None:
            return await super()._aget_nodes_with_embeddings(query_bundle_with_embeddings)
        return await self._afinish(self._result(*await self._apairs(query)))

    def search_rows(self, bundle: QueryBundle, accept: Accept) -> PgCandidates | list[NodeWithScore]:
        """What ``retrieve(bundle)`` finds, as rows when ``accept`` takes them, else as its nodes.

        The same statement either way; ``retrieve``'s events and spans are not sent (the
        caller uses this only when nobody listens to them). Use it inside :func:`collecting`.
        """
        if self._needs_embedding() and bundle.embedding is None and bundle.embedding_strs:
            bundle.embedding = self._embed_model.get_agg_embedding_from_queries(bundle.embedding_strs)
        query = self._pg_query(bundle)
        if query is None:
            nodes = super()._get_nodes_with_embeddings(bundle)
        else:
            pairs, search = self._pairs(query)
            found = _candidates(pairs, search, self)
            if found is not None and accept(found):
                return found
            nodes = self._finish(self._result(pairs, search))
        return self._handle_recursive_retrieval(bundle, nodes)

    async def asearch_rows(self, bundle: QueryBundle, accept: Accept) -> PgCandidates | list[NodeWithScore]:
        """Async :meth:`search_rows` (searching a bundle of its own, as ``aretrieve`` does)."""
        embedding = bundle.embedding
        if self._needs_embedding() and embedding is None and bundle.embedding_strs:
            embedding = await self._embed_model.aget_agg_embedding_from_queries(bundle.embedding_strs)
        searched = QueryBundle(query_str=bundle.query_str, embedding=embedding)
        query = self._pg_query(searched)
        if query is None:
            return await self._ahandle_recursive_retrieval(bundle, await self._aget_nodes_with_embeddings(searched))
        pairs, search = await self._apairs(query)
        found = _candidates(pairs, search, self)
        if found is not None and accept(found):
            return found
        return await self._ahandle_recursive_retrieval(bundle, await self._afinish(self._result(pairs, search)))

    def _result(self, pairs: list[tuple[Any, Any]], search: PgSearch) -> Any:
        """The store's query result of the rows (their vectors put into the call's sink)."""
        store: Any = self._vector_store
        return store._db_rows_to_query_result(_keep(pairs, search))

    def _finish(self, result: Any) -> list[NodeWithScore]:
        """What ``VectorIndexRetriever`` does with a query result (sync docstore look-up)."""
        nodes_to_fetch = self._determine_nodes_to_fetch(result)
        if nodes_to_fetch:
            fetched = self._docstore.get_nodes(node_ids=nodes_to_fetch, raise_error=False)
            result.nodes = self._insert_fetched_nodes_into_query_result(result, fetched)
        return self._scored(result)

    async def _afinish(self, result: Any) -> list[NodeWithScore]:
        """Async :meth:`_finish` (async docstore look-up)."""
        nodes_to_fetch = self._determine_nodes_to_fetch(result)
        if nodes_to_fetch:
            fetched = await self._docstore.aget_nodes(node_ids=nodes_to_fetch, raise_error=False)
            result.nodes = self._insert_fetched_nodes_into_query_result(result, fetched)
        return self._scored(result)

    def _scored(self, result: Any) -> list[NodeWithScore]:
        """The retriever's scored nodes of ``result``, after its debug log of them (formatted, as
        the retriever does unconditionally, only when that logger is enabled for DEBUG)."""
        from llama_index.core.indices.utils import log_vector_store_query_result

        if logging.getLogger(log_vector_store_query_result.__module__).isEnabledFor(logging.DEBUG):
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


def row_searcher(
    retriever: BaseRetriever,
    embed_model: BaseEmbedding | None,
    dispatchers: tuple[Dispatcher, ...] = RETRIEVE_DISPATCHERS,
    *callback_managers: Any,
) -> _WithVectors | None:
    """The stand-in of :func:`searching_with_vectors`, for :meth:`_WithVectors.search_rows`, only
    when nobody observes what that skips: no event or span handler on ``dispatchers`` (the
    base retriever's by default) and no handler on the retriever's or ``callback_managers``.
    """
    stand_in = searching_with_vectors(retriever, embed_model)
    if stand_in is None or observed(dispatchers, retriever.callback_manager, *callback_managers):
        return None
    assert isinstance(stand_in, _WithVectors)
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
    different loop"; the caller then runs the sync search instead (on a synchronous run's
    own loop right there, else in a worker thread).
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
