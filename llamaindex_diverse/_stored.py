"""Read node vectors a LlamaIndex vector store already holds, so a query embeds only itself.

Vector stores hand nodes back *without* their embeddings (the docstore keeps nodes
embedding-free), so the postprocessor would embed every fetched text once. For a
vector index retriever over a store that keeps the vectors, they are read instead:
``SimpleVectorStore`` (its ``embedding_dict``), Qdrant (points fetched by node id with
their vectors), FAISS (reconstructed from the index through the index's
vector-id -> node-id map) and Postgres (``PGVectorStore``: one ``SELECT node_id,
embedding ... WHERE node_id IN (...)`` per batch of cache misses; the store's query
results carry no vectors, so they need this read unless the search itself kept them, see
``_pg_rows``). Stores are recognised by their class names and attributes,
so nothing here imports their packages. Other stores: ``None`` (the text is embedded).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from diverse_core.embedding_cache import KnownAt
from diverse_core.embedding_cache.stored import faiss_vectors, qdrant_vectors
from diverse_core.pgvector_sql import sql_vectors, store_errors
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore

__all__ = ["StoredVectors", "known_for", "reading", "store_reader", "stored_vectors_of"]

logger = logging.getLogger(__name__)

#: ``read(node_ids) -> one vector or None per id``.
StoredVectors = Callable[[list[str]], list[Any]]


def _simple(store: Any) -> StoredVectors:
    table: dict[str, Any] = store.data.embedding_dict
    return lambda ids: [table.get(i) for i in ids]


def _qdrant(store: Any) -> StoredVectors:
    name = getattr(store, "dense_vector_name", None) or ""
    return lambda ids: qdrant_vectors(store.client, store.collection_name, ids, name)


# Postgres tables already checked for an index on node_id (engine URL, schema, table).
_NODE_ID_INDEX: dict[tuple[str, str, str], bool] = {}


def _check_node_id_index(store: Any, table: Any, session: Any) -> None:
    """Warn once per table when reading by node id cannot use an index (it then scans the table)."""
    schema = getattr(store, "schema_name", None) or "public"
    key = (str(getattr(store, "_engine", None) and store._engine.url), schema, table.__tablename__)
    if key in _NODE_ID_INDEX:
        return
    from sqlalchemy import text

    with session() as s:
        defs = s.execute(
            text("SELECT indexdef FROM pg_indexes WHERE schemaname = :s AND tablename = :t"),
            {"s": schema, "t": table.__tablename__},
        ).scalars().all()
    ok = any("(node_id)" in d for d in defs)
    _NODE_ID_INDEX[key] = ok
    if not ok:
        logger.warning(
            "PGVectorStore table %s.%s has no index on node_id, so reading the candidates' stored "
            "vectors by node id scans the table; create one once: CREATE INDEX ON %s.%s (node_id);",
            schema, table.__tablename__, schema, table.__tablename__,
        )


def _postgres(store: Any) -> StoredVectors:
    def read(ids: list[str]) -> list[Any]:
        """The stored vectors of ``ids`` (``None`` for an id without one), read in one statement."""
        with store_errors():  # the database gone: StoreUnavailableError, not OperationalError
            store._initialize()  # what the store's own calls do first (idempotent)
            # Looked up after initialising: the store makes its session factory on first use.
            table, session = store._table_class, store._session
            _check_node_id_index(store, table, session)
            return sql_vectors(session, table.node_id, table.embedding, ids)

    return read


def _faiss(store: Any, index: Any) -> StoredVectors | None:
    nodes_dict = getattr(getattr(index, "index_struct", None), "nodes_dict", None)
    if not isinstance(nodes_dict, dict):
        return None
    return lambda ids: faiss_vectors(store.client, nodes_dict, ids)


def stored_vectors_of(
    retriever: BaseRetriever, embed_model: BaseEmbedding | None
) -> StoredVectors | None:
    """A reader of the stored vectors behind ``retriever``, or ``None``.

    Only for a vector index retriever (``index.as_retriever()``) whose store keeps
    vectors, and only when ``embed_model`` is unset or is the index's own model (the
    stored vectors come from that model).

    Example:
        >>> from llama_index.core import VectorStoreIndex
        >>> from llama_index.core.embeddings import MockEmbedding
        >>> from llama_index.core.schema import TextNode
        >>> index = VectorStoreIndex([TextNode(text="a", id_="n1")],
        ...                          embed_model=MockEmbedding(embed_dim=3))
        >>> read = stored_vectors_of(index.as_retriever(), None)
        >>> read(["n1", "missing"])
        [[0.5, 0.5, 0.5], None]
    """
    store = getattr(retriever, "_vector_store", None)
    index = getattr(retriever, "_index", None)
    if store is None or index is None:
        return None
    index_model = getattr(index, "_embed_model", None)
    if embed_model is not None and embed_model is not index_model:
        return None  # the stored vectors belong to another model
    return store_reader(store, index)


def store_reader(store: Any, index: Any = None) -> StoredVectors | None:
    """A reader of the node vectors ``store`` keeps, or ``None`` when it cannot be read.

    ``SimpleVectorStore``, Qdrant and ``PGVectorStore`` are read by node id; FAISS
    also needs the ``index`` (its node-id map).
    """
    name = type(store).__name__
    if name == "SimpleVectorStore" and hasattr(getattr(store, "data", None), "embedding_dict"):
        return _simple(store)
    if "Qdrant" in name and hasattr(getattr(store, "client", None), "retrieve"):
        return _qdrant(store)
    if "Faiss" in name and index is not None and hasattr(getattr(store, "client", None), "reconstruct_batch"):
        return _faiss(store, index)
    if name == "PGVectorStore" and callable(getattr(store, "_initialize", None)):
        return _postgres(store)
    return None


_CURRENT: contextvars.ContextVar[StoredVectors | None] = contextvars.ContextVar(
    "llamaindex_diverse_stored_vectors", default=None
)


@contextmanager
def reading(read: StoredVectors | None) -> Iterator[None]:
    """Let postprocessing inside the block read node vectors with ``read``."""
    token = _CURRENT.set(read)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def known_for(
    nodes: Sequence[NodeWithScore], positions: list[int], default: StoredVectors | None = None
) -> KnownAt | None:
    """``known`` for the text cache: the stored vectors of ``nodes[positions[i]]``, if readable.

    ``positions`` are the nodes whose texts are being embedded (same order as the texts);
    the reader is the one set by :func:`reading`, else ``default``.
    """
    read = _CURRENT.get() or default
    if read is None:
        return None
    return lambda at: read([nodes[positions[i]].node.node_id for i in at])
