"""Embedding caches (issue 14 item 8, issue 19 item 8) and typed errors for bad vectors (issue 14 item 7)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import numpy as np
import pytest
from diverse_core.embedding_cache import EmbeddingCache
from diverse_core.errors import DimensionMismatchError, InvalidParameterError, ZeroVectorError
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore
from lc_fakes import VECTORS, TableEmbeddings
from pydantic import BaseModel, PrivateAttr

from langchain_diverse import DiverseCompressor, DiverseRetriever, cached_embeddings


class ScaledEmbeddings(BaseModel, Embeddings):
    """Equal ``repr`` and fields for every instance; the private ``_flip`` changes the vectors."""

    dim: int = 4
    _flip: bool = PrivateAttr(default=False)

    def _vec(self, text: str) -> list[float]:
        base = list(VECTORS.get(text, [0.5, 0.5, 0.5, 0.5]))
        return [-v for v in base] if self._flip else base

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)


def test_models_with_equal_repr_never_share_a_cache() -> None:
    a, b = ScaledEmbeddings(), ScaledEmbeddings()
    b._flip = True
    assert repr(a) == repr(b)
    va = cached_embeddings(a).embed_documents_array(["dup a"])
    vb = cached_embeddings(b).embed_documents_array(["dup a"])
    np.testing.assert_allclose(vb, -va)  # b's own vectors, not a's cached ones


def test_cache_registry_does_not_keep_models_alive() -> None:
    model = TableEmbeddings()
    ref = weakref.ref(model)
    retriever_cache = cached_embeddings(model)
    retriever_cache.embed_documents(["dup a"])
    del model, retriever_cache
    gc.collect()
    assert ref() is None


def test_registry_frees_many_short_lived_models() -> None:
    refs = []
    for _ in range(50):
        model = ScaledEmbeddings()
        cached_embeddings(model).embed_query("q")
        refs.append(weakref.ref(model))
    del model
    gc.collect()
    assert all(r() is None for r in refs)


def test_langchain_cache_size_bounds_the_cache(table_embeddings: TableEmbeddings) -> None:
    store = InMemoryVectorStore(table_embeddings)
    store.add_texts(list(VECTORS)[1:])
    retriever = DiverseRetriever(vectorstore=store, k=2, fetch_k=5, cache_size=3,
                                 use_stored_vectors=False)
    retriever.invoke("q")
    cache = retriever._embedder().document_cache
    assert cache.maxsize == 3 and len(cache) == 3
    compressor = DiverseCompressor(embeddings=table_embeddings, k=2, cache_size=2)
    compressor.compress_documents([Document(page_content=t) for t in ("dup a", "bridge")], "q")
    with pytest.raises(InvalidParameterError, match="cache_size"):
        DiverseRetriever(vectorstore=store, cache_size=0)


def test_both_faces_use_the_core_cache(table_embeddings: TableEmbeddings) -> None:
    assert type(cached_embeddings(table_embeddings).document_cache) is EmbeddingCache
    li = pytest.importorskip("llamaindex_diverse._vectors")
    assert li.ModelBoundCache.__module__.startswith("llamaindex_diverse")


class BadBatch(Embeddings):
    """Returns ``bad`` in place of the second document vector."""

    def __init__(self, bad: Any) -> None:
        self.bad = bad

    def embed_documents(self, texts: list[str]) -> list[Any]:
        return [VECTORS["dup a"], *([self.bad] * (len(texts) - 1))]

    def embed_query(self, text: str) -> list[float]:
        return VECTORS["q"]


@pytest.mark.parametrize("bad", [[1.0, 2.0], None, [], "abcd"])
def test_langchain_batch_with_a_bad_vector_is_a_dimension_error(bad: Any) -> None:
    emb = cached_embeddings(BadBatch(bad))
    with pytest.raises(DimensionMismatchError, match="text 1"):
        emb.embed_documents_array(["dup a", "bridge"])


class EmptyVectors(BadBatch):
    def embed_documents(self, texts: list[str]) -> list[Any]:
        return [[] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return []


def test_langchain_all_empty_vectors_are_a_dimension_error() -> None:
    emb = cached_embeddings(EmptyVectors(None))
    with pytest.raises(DimensionMismatchError, match="text 0 has 0"):
        emb.embed_documents_array(["only", "two"])
    with pytest.raises(DimensionMismatchError, match="text 0 has 0"):
        emb.embed_query_array("q")


@pytest.mark.parametrize(
    ("search_kwargs", "match"),
    [({"k": True}, "k=True"), ({"k": "3"}, "k='3'"), ({"fetch_k": 2.5}, "fetch_k=2.5"),
     ({"k": 0}, "k=0")],
)
def test_search_kwargs_k_of_a_bad_type_is_rejected_at_construction(
    store: InMemoryVectorStore, search_kwargs: dict[str, Any], match: str
) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        DiverseRetriever(vectorstore=store, search_kwargs=search_kwargs)


class CountingStore(InMemoryVectorStore):
    searched: int = 0

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4,
                                    **kwargs: Any) -> list[Document]:
        CountingStore.searched += 1
        return super().similarity_search_by_vector(embedding, k=k, **kwargs)


def test_zero_query_vector_is_caught_before_the_store(corpus_docs: list[Document]) -> None:
    table = dict(VECTORS, q=[0.0, 0.0, 0.0, 0.0])
    store = CountingStore(TableEmbeddings(table))
    store.add_documents(corpus_docs)
    CountingStore.searched = 0
    with pytest.raises(ZeroVectorError, match="all zeros"):
        DiverseRetriever(vectorstore=store, k=2).invoke("q")
    assert CountingStore.searched == 0


def test_wrong_dimension_query_vector_is_caught_before_the_store(
    corpus_docs: list[Document],
) -> None:
    store = CountingStore(TableEmbeddings(query_dim=3))
    store.add_documents(corpus_docs)
    CountingStore.searched = 0
    with pytest.raises(DimensionMismatchError, match="dimension 3 .* dimension 4"):
        DiverseRetriever(vectorstore=store, k=2).invoke("q")
    assert CountingStore.searched == 0
