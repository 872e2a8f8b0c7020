"""Stored vectors: with each supported store a query costs one query embedding and nothing else."""

from __future__ import annotations

import logging
import uuid
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from lc_fakes import CORPUS, DUPS, TableEmbeddings

from langchain_diverse import DiverseRetriever


def _in_memory(emb: Embeddings) -> VectorStore:
    store = InMemoryVectorStore(emb)
    store.add_texts(CORPUS)
    return store


def _faiss(emb: Embeddings) -> VectorStore:
    pytest.importorskip("faiss", reason="faiss-cpu is not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.vectorstores import FAISS
    return FAISS.from_texts(CORPUS, emb)


def _qdrant(emb: Embeddings) -> VectorStore:
    pytest.importorskip("qdrant_client", reason="qdrant-client is not installed")
    qdrant = pytest.importorskip("langchain_qdrant", reason="langchain-qdrant is not installed")
    if isinstance(emb, TableEmbeddings):
        emb.table.setdefault("dummy_text", [0.0, 0.0, 0.0, 1.0])  # from_texts probes the size
    return qdrant.QdrantVectorStore.from_texts(
        CORPUS, emb, location=":memory:", collection_name=f"c{uuid.uuid4().hex}"
    )


def _chroma(emb: Embeddings) -> VectorStore:
    chroma = pytest.importorskip("langchain_chroma", reason="langchain-chroma is not installed")
    from chromadb.config import Settings

    # Local, in-process, no telemetry: the LangChain embeddings compute every vector.
    return chroma.Chroma.from_texts(
        CORPUS, emb, collection_name=f"c{uuid.uuid4().hex}",
        client_settings=Settings(anonymized_telemetry=False, is_persistent=False),
    )


STORES: dict[str, Callable[[Embeddings], VectorStore]] = {
    "in_memory": _in_memory, "faiss": _faiss, "qdrant": _qdrant, "chroma": _chroma,
}


@pytest.mark.parametrize("name", list(STORES))
def test_one_embedding_call_per_query(name: str) -> None:
    emb = TableEmbeddings()
    store = STORES[name](emb)
    emb.calls.clear()
    retriever = DiverseRetriever(vectorstore=store, k=2, fetch_k=5, method="mmr",
                                 method_params={"lambda_mult": 0.5})
    docs = retriever.invoke("q")
    assert [d.page_content in DUPS for d in docs] == [True, False]
    assert docs[1].page_content == "bridge"  # same answer as with embedded candidates
    assert emb.calls == [("embed_query", ["q"])]  # no embed_documents: read from the store


@pytest.mark.parametrize("name", list(STORES))
async def test_one_embedding_call_per_query_async(name: str) -> None:
    emb = TableEmbeddings()
    store = STORES[name](emb)
    emb.calls.clear()
    retriever = DiverseRetriever(vectorstore=store, k=2, fetch_k=5, method="gmmr")
    docs = await retriever.ainvoke("q")
    assert len(docs) == 2
    assert [kind for kind, _ in emb.calls] == ["aembed_query"]


@pytest.mark.parametrize("name", ["faiss", "qdrant", "chroma"])
def test_stored_vectors_equal_the_model_vectors(name: str) -> None:
    emb = TableEmbeddings()
    store = STORES[name](emb)
    stored = DiverseRetriever(vectorstore=store, k=3, fetch_k=5).invoke("q")
    embedded = DiverseRetriever(vectorstore=store, k=3, fetch_k=5, embeddings=TableEmbeddings()
                                ).invoke("q")  # another model object: candidates embedded
    assert [d.page_content for d in stored] == [d.page_content for d in embedded]
    for a, b in zip(stored, embedded, strict=True):
        assert a.metadata["relevance_score"] == pytest.approx(b.metadata["relevance_score"],
                                                              rel=1e-5)


class OpaqueStore(InMemoryVectorStore):
    """Hides its documents' ids: the face cannot read its vectors and must say so."""

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4,
                                    **kwargs: Any) -> list[Document]:
        docs = super().similarity_search_by_vector(embedding, k=k, **kwargs)
        return [Document(page_content=d.page_content, metadata=d.metadata) for d in docs]


class UnknownStore(VectorStore):
    """A store type the face does not know."""

    def __init__(self, emb: Embeddings) -> None:
        self._emb = emb
        self._inner = _in_memory(emb)

    @property
    def embeddings(self) -> Embeddings:
        return self._emb

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4,
                                    **kwargs: Any) -> list[Document]:
        return self._inner.similarity_search_by_vector(embedding, k=k)

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        raise NotImplementedError

    def add_texts(self, texts: Any, metadatas: Any = None, **kwargs: Any) -> list[str]:
        raise NotImplementedError

    @classmethod
    def from_texts(cls, texts: Any, embedding: Any, metadatas: Any = None, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_unknown_store_falls_back_to_the_cache_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    emb = TableEmbeddings()
    store = UnknownStore(emb)
    emb.calls.clear()
    retriever = DiverseRetriever(vectorstore=store, k=2, fetch_k=5)
    with caplog.at_level(logging.WARNING, logger="langchain_diverse"):
        retriever.invoke("q")
        retriever.invoke("q")
    warnings_seen = [r for r in caplog.records if "cannot read stored vectors" in r.message]
    assert len(warnings_seen) == 1 and "UnknownStore" in warnings_seen[0].message
    assert len(emb.called("embed_documents")) == 1  # embedded once, then cached


def test_documents_without_ids_are_embedded(table_embeddings: TableEmbeddings) -> None:
    store = OpaqueStore(table_embeddings)
    store.add_texts(CORPUS)
    table_embeddings.calls.clear()
    DiverseRetriever(vectorstore=store, k=2, fetch_k=5).invoke("q")
    assert sorted(table_embeddings.called("embed_documents")[0]) == sorted(CORPUS)


def test_faiss_index_without_reconstruction_falls_back(caplog: pytest.LogCaptureFixture) -> None:
    emb = TableEmbeddings()
    store = _faiss(emb)
    store.index = NoReconstruct(store.index)
    emb.calls.clear()
    with caplog.at_level(logging.WARNING, logger="langchain_diverse"):
        docs = DiverseRetriever(vectorstore=store, k=2, fetch_k=5).invoke("q")
    assert [d.page_content for d in docs][1] == "bridge"
    assert len(emb.called("embed_documents")) == 1  # the fallback embeds with the model
    assert any("cannot reconstruct" in r.message for r in caplog.records)


class NoReconstruct:
    """A FAISS index (e.g. IVF without a direct map) that cannot hand back stored vectors."""

    def __init__(self, index: Any) -> None:
        self._index, self.d, self.ntotal = index, index.d, index.ntotal

    def search(self, *args: Any, **kwargs: Any) -> Any:
        return self._index.search(*args, **kwargs)

    def reconstruct_batch(self, ids: Any) -> Any:
        raise RuntimeError("direct map not initialized")


@pytest.mark.parametrize("method", ["dpp", "msd", "cover", "ssd", "gist"])
def test_peer_strategies_read_stored_vectors(method: str) -> None:
    emb = TableEmbeddings()
    store = STORES["faiss"](emb)
    emb.calls.clear()
    docs = DiverseRetriever(vectorstore=store, k=3, fetch_k=5, method=method).invoke("q")
    assert len(docs) == 3
    assert emb.calls == [("embed_query", ["q"])]  # no embed_documents: read from the store
