"""Read candidate vectors a LangChain vector store already holds, so a query embeds only itself.

Each reader takes the store and the documents its search returned and gives back
``known(texts) -> [vector or None, ...]`` for the per-text cache, which consults it on
cache misses only. Supported: ``InMemoryVectorStore`` (its table, by document id),
FAISS (``langchain_community``; reconstructed from the index by docstore id), Qdrant
(``langchain_qdrant`` and ``langchain_community``; points fetched by id with their
vectors), Chroma (``langchain_chroma``; ``include=["embeddings"]``) and Postgres
(``langchain_postgres.PGVector``: the search itself returns the vectors, see
:func:`pgvector_search`; documents found otherwise are read by id in one query). Stores are
recognised by their attributes, so nothing here imports those packages. Any other
store returns ``None`` from :func:`stored_vector_reader`: the caller embeds the texts.

:class:`StoreSearch` runs the store search and hands back the documents with ``known`` for
the cache; both faces (the retriever and the pipeline source) search through it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from diverse_core.embedding_cache.stored import faiss_vectors, qdrant_vectors
from diverse_core.errors import InvalidParameterError
from diverse_core.pgvector_sql import pgvector_search as pg_search
from diverse_core.pgvector_sql import sql_vectors, store_errors
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from .embeddings import KnownVectors

__all__ = ["StoreSearch", "stored_vector_reader", "supports_stored_vectors"]

#: ``read(store, documents) -> one vector or None per document``.
Reader = Callable[[Any, Sequence[Document]], list[Any]]


def _in_memory(store: InMemoryVectorStore, documents: Sequence[Document]) -> list[Any]:
    table = store.store
    out: list[Any] = []
    for doc in documents:
        entry = table.get(doc.id) if doc.id is not None else None
        out.append(None if entry is None or entry.get("text") != doc.page_content else entry["vector"])
    return out


def _faiss(store: Any, documents: Sequence[Document]) -> list[Any]:
    return faiss_vectors(store.index, store.index_to_docstore_id, [doc.id for doc in documents])


def _qdrant(store: Any, documents: Sequence[Document]) -> list[Any]:
    ids = [doc.metadata.get("_id") if doc.metadata else None for doc in documents]
    return qdrant_vectors(store.client, store.collection_name, ids, getattr(store, "vector_name", None) or "")


#: PGVector's query methods (name-mangled privates of ``langchain_postgres.PGVector``).
_SYNC_QUERY = "_PGVector__query_collection"
_ASYNC_QUERY = "_PGVector__aquery_collection"


def is_pgvector(store: Any) -> bool:
    """Whether ``store`` is a ``langchain_postgres.PGVector`` (by its attributes)."""
    cls = type(store)  # (an async store sets its table models on first use)
    return cls.__name__ == "PGVector" and hasattr(cls, "_results_to_docs_and_scores")


def _is_async(store: Any) -> bool:
    return getattr(store, "_async_engine", None) is not None


def _pgvector(store: Any, documents: Sequence[Document]) -> list[Any]:
    """The stored vectors of ``documents`` (by id) in one query; a store in ``async_mode`` has no
    synchronous session: its documents are embedded."""
    if _is_async(store) or not hasattr(store, "EmbeddingStore"):
        return [None] * len(documents)
    table = store.EmbeddingStore
    return sql_vectors(store._make_sync_session, table.id, table.embedding, [doc.id for doc in documents])


def _found(store: Any, rows: Sequence[Any]) -> tuple[list[Document], list[Any]]:
    """PGVector's rows as its documents, and their vectors."""
    docs = [doc for doc, _ in store._results_to_docs_and_scores(rows)]
    return docs, [row.EmbeddingStore.embedding for row in rows]


def pgvector_search(
    store: Any, embedding: list[float], k: int, search_kwargs: Mapping[str, Any]
) -> tuple[list[Document], list[Any]] | None:
    """The ``k`` documents nearest ``embedding`` and their stored vectors, by PGVector's own query
    (its filters, distance and ordering, the vectors kept); ``None`` when the store lacks it.

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
    query = getattr(store, _SYNC_QUERY, None)
    return None if query is None else _found(store, query(embedding=embedding, k=k, filter=search_kwargs.get("filter")))


async def apgvector_search(
    store: Any, embedding: list[float], k: int, search_kwargs: Mapping[str, Any]
) -> tuple[list[Document], list[Any]] | None:
    """Async :func:`pgvector_search`; a store without ``async_mode`` is searched in a worker thread."""
    if not _is_async(store):
        return await asyncio.to_thread(pgvector_search, store, embedding, k, search_kwargs)
    query = getattr(store, _ASYNC_QUERY, None)
    if query is None:
        return None
    await store.__apost_init__()  # PGVector's lazy async set-up (creates the collection)
    return _found(store, await query(session=None, embedding=embedding, k=k, filter=search_kwargs.get("filter")))


def _chroma(store: Any, documents: Sequence[Document]) -> list[Any]:
    ids = [doc.id for doc in documents]
    wanted = [i for i in ids if i is not None]
    if not wanted:
        return [None] * len(documents)
    got = store._collection.get(ids=wanted, include=["embeddings"])
    vectors = got.get("embeddings")
    if vectors is None:
        return [None] * len(documents)
    by_id = dict(zip(got["ids"], vectors, strict=True))
    return [by_id.get(i) if i is not None else None for i in ids]


def _reader_for(store: VectorStore) -> Reader | None:
    if isinstance(store, InMemoryVectorStore):
        return _in_memory
    attrs = vars(store)
    if "index_to_docstore_id" in attrs and hasattr(getattr(store, "index", None), "reconstruct_batch"):
        return _faiss
    if is_pgvector(store):
        return _pgvector
    module = type(store).__module__
    if "chroma" in module and hasattr(getattr(store, "_collection", None), "get"):
        return _chroma
    if "qdrant" in module or "qdrant" in type(store).__name__.lower():
        client = getattr(store, "client", None)
        if hasattr(client, "retrieve") and isinstance(getattr(store, "collection_name", None), str):
            return _qdrant
    return None


def supports_stored_vectors(store: VectorStore) -> bool:
    """Whether :func:`stored_vector_reader` can read ``store``'s vectors."""
    return _reader_for(store) is not None


def stored_vector_reader(
    store: VectorStore, documents: Sequence[Document]
) -> Callable[[list[str]], list[Any]] | None:
    """``known(texts)`` for the per-text cache, or ``None`` when ``store`` is not supported.

    ``known`` is called on cache misses only, with the missing texts; it returns the
    stored vector of the document with that text (``None`` where the store has none,
    e.g. a document without an id), read in one batch from the store.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=4))
        >>> _ = store.add_texts(["a", "b"])
        >>> docs = store.similarity_search("a", k=2)
        >>> known = stored_vector_reader(store, docs)
        >>> [len(v) for v in known(["b", "a"])]
        [4, 4]
    """
    reader = _reader_for(store)
    if reader is None:
        return None

    def known(texts: list[str]) -> list[Any]:
        first: dict[str, Document] = {}
        for doc in documents:
            first.setdefault(doc.page_content, doc)
        wanted = [first.get(t) for t in texts]
        present = [d for d in wanted if d is not None]
        with store_errors():  # a database gone mid-query: StoreUnavailableError
            vectors = reader(store, present) if present else []
        it = iter(vectors)
        return [next(it) if d is not None else None for d in wanted]

    return known


def _known_from(documents: Sequence[Document], vectors: Sequence[Any]) -> KnownVectors:
    """``known(texts)`` over vectors already in hand (the first document with each text)."""
    by_text: dict[str, Any] = {}
    for doc, vector in zip(documents, vectors, strict=True):
        by_text.setdefault(doc.page_content, vector)
    return lambda texts: [by_text.get(t) for t in texts]


@dataclass(frozen=True)
class StoreSearch:
    """A similarity search of ``store`` by vector, handing back the documents and ``known`` for
    their stored vectors.

    With ``read_stored``, a store whose search can return the vectors (PGVector) is
    searched that way (one round trip); other supported stores are searched as usual
    and their vectors read in one batch when the cache misses; ``known`` is ``None``
    for unsupported stores (and without ``read_stored``). Both faces (the retriever and the
    pipeline source) search through it.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=4))
        >>> _ = store.add_texts(["a", "b"])
        >>> docs, known = StoreSearch(store, {}, read_stored=True).run(store.embeddings.embed_query("a"), 2)
        >>> len(docs), [len(v) for v in known(["a", "b"])]
        (2, [4, 4])
    """

    store: VectorStore
    search_kwargs: Mapping[str, Any]
    read_stored: bool

    def _scope(self, k: int) -> AbstractContextManager[Any]:
        """Around the search: pgvector's search settings (see :func:`pg_search`), else nothing."""
        return pg_search(k, binary=self.read_stored) if is_pgvector(self.store) else nullcontext()

    def _result(
        self, docs: list[Document], vectors: list[Any] | None
    ) -> tuple[list[Document], KnownVectors | None]:
        if vectors is not None:  # the search returned them
            return docs, _known_from(docs, vectors)
        return docs, stored_vector_reader(self.store, docs) if self.read_stored else None

    def run(self, vector: list[float], k: int) -> tuple[list[Document], KnownVectors | None]:
        """The ``k`` documents nearest ``vector``, and ``known`` for their stored vectors."""
        store, kwargs = self.store, self.search_kwargs
        with store_errors(), self._scope(k):
            found = None
            if self.read_stored and is_pgvector(store):
                found = pgvector_search(store, vector, k, kwargs)
            docs, vectors = found or (list(store.similarity_search_by_vector(vector, k=k, **kwargs)), None)
        return self._result(docs, vectors)

    async def arun(self, vector: list[float], k: int) -> tuple[list[Document], KnownVectors | None]:
        """Async :meth:`run` (the store's async search)."""
        store, kwargs = self.store, self.search_kwargs
        with store_errors(), self._scope(k):
            found = None
            if self.read_stored and is_pgvector(store):
                found = await apgvector_search(store, vector, k, kwargs)
            docs, vectors = found or (list(await store.asimilarity_search_by_vector(vector, k=k, **kwargs)), None)
        return self._result(docs, vectors)
