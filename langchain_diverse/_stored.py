"""Read candidate vectors a LangChain vector store already holds, so a query embeds only itself.

Each reader takes the store and the documents its search returned and gives back
``known(texts) -> [vector or None, ...]`` for the per-text cache, which consults it on
cache misses only. Supported: ``InMemoryVectorStore`` (its table, by document id),
FAISS (``langchain_community``; reconstructed from the index by docstore id), Qdrant
(``langchain_qdrant`` and ``langchain_community``; points fetched by id with their
vectors), Chroma (``langchain_chroma``; ``include=["embeddings"]``) and Postgres
(``langchain_postgres.PGVector``: the search itself returns the vectors, see
:mod:`._pgvector`; documents found otherwise are read by id in one query). Stores are
recognised by their attributes, so nothing here imports those packages. Any other
store returns ``None`` from :func:`stored_vector_reader`: the caller embeds the texts.

:class:`StoreSearch` runs the store search and hands back the documents with ``known`` for
the cache; both faces (the retriever and the pipeline source) search through it.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
from diverse_core.pgvector_sql import pgvector_search as pg_search
from diverse_core.pgvector_sql import store_errors
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from ._pgvector import apgvector_search, is_pgvector, pgvector_by_id, pgvector_search
from .embeddings import KnownVectors

__all__ = ["StoreSearch", "stored_vector_reader", "supports_stored_vectors"]

logger = logging.getLogger(__name__)

#: ``read(store, documents) -> one vector or None per document``.
Reader = Callable[[Any, Sequence[Document]], list[Any]]


def _in_memory(store: InMemoryVectorStore, documents: Sequence[Document]) -> list[Any]:
    table = store.store
    out: list[Any] = []
    for doc in documents:
        entry = table.get(doc.id) if doc.id is not None else None
        out.append(None if entry is None or entry.get("text") != doc.page_content else entry["vector"])
    return out


# FAISS: docstore id -> position in the index, rebuilt when the store's mapping changed.
_FAISS_POSITIONS: weakref.WeakKeyDictionary[Any, dict[str, int]] = weakref.WeakKeyDictionary()


def _faiss_positions(store: Any, ids: list[str | None]) -> list[int | None]:
    mapping: dict[int, str] = store.index_to_docstore_id
    reverse = _FAISS_POSITIONS.get(store)
    if reverse is None or any(
        i is not None and (reverse.get(i) is None or mapping.get(reverse[i]) != i) for i in ids
    ):
        reverse = {doc_id: pos for pos, doc_id in mapping.items()}
        _FAISS_POSITIONS[store] = reverse
    return [reverse.get(i) if i is not None else None for i in ids]


def _faiss(store: Any, documents: Sequence[Document]) -> list[Any]:
    positions = _faiss_positions(store, [doc.id for doc in documents])
    found = [p for p in positions if p is not None]
    if not found:
        return [None] * len(documents)
    try:
        rows = store.index.reconstruct_batch(np.asarray(found, dtype=np.int64))
    except RuntimeError as exc:  # e.g. an IVF index without a direct map
        logger.warning(
            "FAISS index %s cannot reconstruct stored vectors (%s); candidates are embedded "
            "instead (call index.make_direct_map() to avoid it)", type(store.index).__name__, exc
        )
        return [None] * len(documents)
    by_position = dict(zip(found, rows, strict=True))
    return [by_position[p] if p is not None else None for p in positions]


def _point_vector(vector: Any, name: str) -> Any:
    if isinstance(vector, dict):
        return vector.get(name)
    return vector


def _qdrant(store: Any, documents: Sequence[Document]) -> list[Any]:
    ids = [doc.metadata.get("_id") if doc.metadata else None for doc in documents]
    wanted = [i for i in ids if i is not None]
    if not wanted:
        return [None] * len(documents)
    name = getattr(store, "vector_name", None) or ""
    points = store.client.retrieve(
        collection_name=store.collection_name,
        ids=wanted,
        with_payload=False,
        with_vectors=[name] if name else True,
    )
    by_id = {str(p.id): _point_vector(p.vector, name) for p in points}
    return [by_id.get(str(i)) if i is not None else None for i in ids]


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
        return pgvector_by_id
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
