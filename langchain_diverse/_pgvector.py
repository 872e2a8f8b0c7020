"""``langchain_postgres.PGVector``: candidates and their stored vectors in one query.

PGVector's own search already selects whole rows of its embedding table, vectors
included, and drops the vectors when it builds the documents. Here the same query
(the store's own, so filters, distance and ordering are exactly those of
``similarity_search_by_vector``) is run and the vectors are kept: a query costs one
query embedding and one database round trip, as the plain search does. Where the
store's query method is not there (another ``langchain_postgres`` version), the
vectors of the found documents are read in one ``SELECT ... WHERE id IN (...)``.
Nothing here imports ``langchain_postgres``: the store is recognised by its attributes.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from diverse_core.errors import InvalidParameterError
from langchain_core.documents import Document

__all__ = ["apgvector_search", "is_pgvector", "pgvector_by_id", "pgvector_search"]

#: PGVector's query methods (name-mangled privates of ``langchain_postgres.PGVector``).
_SYNC_QUERY = "_PGVector__query_collection"
_ASYNC_QUERY = "_PGVector__aquery_collection"
_QUERY_ARGS = frozenset({"embedding", "k", "filter"})
_SIGNATURES: dict[tuple[type, str], bool] = {}


def is_pgvector(store: Any) -> bool:
    """Whether ``store`` is a ``langchain_postgres.PGVector`` (by its attributes)."""
    cls = type(store)  # (an async store sets its table models on first use)
    return cls.__name__ == "PGVector" and hasattr(cls, "_results_to_docs_and_scores")


def _has_query(store: Any, name: str) -> bool:
    """Whether ``store`` has PGVector's query method ``name`` taking embedding, k and filter."""
    key = (type(store), name)
    ok = _SIGNATURES.get(key)
    if ok is None:
        fn = getattr(type(store), name, None)
        try:
            ok = fn is not None and _QUERY_ARGS <= set(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            ok = False
        _SIGNATURES[key] = ok
    return ok


def _rows_to_result(store: Any, rows: Sequence[Any]) -> tuple[list[Document], list[Any]]:
    docs = [doc for doc, _ in store._results_to_docs_and_scores(rows)]
    return docs, [row.EmbeddingStore.embedding for row in rows]


def _is_async(store: Any) -> bool:
    return getattr(store, "_async_engine", None) is not None


def pgvector_search(
    store: Any, embedding: list[float], k: int, search_kwargs: Mapping[str, Any]
) -> tuple[list[Document], list[Any]] | None:
    """The ``k`` nearest documents and their stored vectors, or ``None`` (use the plain search).

    Raises:
        InvalidParameterError: the store was made with ``async_mode=True`` (it has no
            synchronous connection): call the async API (``ainvoke``) instead.
    """
    if _is_async(store):
        raise InvalidParameterError(
            "this PGVector store was created with async_mode=True and has no synchronous "
            "connection; use ainvoke()/aget_relevant_documents (or create the store with "
            "async_mode=False for sync calls)"
        )
    if not _has_query(store, _SYNC_QUERY):
        return None
    rows = getattr(store, _SYNC_QUERY)(
        embedding=embedding, k=k, filter=search_kwargs.get("filter")
    )
    return _rows_to_result(store, rows)


async def apgvector_search(
    store: Any, embedding: list[float], k: int, search_kwargs: Mapping[str, Any]
) -> tuple[list[Document], list[Any]] | None:
    """Async :func:`pgvector_search`; a store without ``async_mode`` is searched in a worker thread."""
    if not _is_async(store):
        return await asyncio.to_thread(pgvector_search, store, embedding, k, search_kwargs)
    if not _has_query(store, _ASYNC_QUERY):
        return None
    await store.__apost_init__()  # PGVector's lazy async set-up (creates the collection)
    rows = await getattr(store, _ASYNC_QUERY)(
        session=None, embedding=embedding, k=k, filter=search_kwargs.get("filter")
    )
    return _rows_to_result(store, rows)


def pgvector_by_id(store: Any, documents: Sequence[Document]) -> list[Any]:
    """The stored vectors of ``documents`` (by id), read in one query; ``None`` where unknown.

    A store in ``async_mode`` has no synchronous session: its documents are embedded.
    """
    ids = [doc.id for doc in documents]
    wanted = sorted({i for i in ids if i is not None})
    if not wanted or _is_async(store) or not hasattr(store, "EmbeddingStore"):
        return [None] * len(documents)
    from sqlalchemy import select

    table = store.EmbeddingStore
    with store._make_sync_session() as session:
        rows = session.execute(select(table.id, table.embedding).where(table.id.in_(wanted))).all()
    by_id = {str(row[0]): row[1] for row in rows}
    return [by_id.get(str(i)) if i is not None else None for i in ids]
