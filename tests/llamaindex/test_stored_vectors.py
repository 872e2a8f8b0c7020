"""Stored vectors: over SimpleVectorStore, Qdrant and FAISS a query costs one query embedding."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from li_fakes import KeyedEmbedding
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import Embedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from test_retriever_and_indexes import CORPUS, DUPS, QUERY

from llamaindex_diverse import DiverseRetriever


class CountingEmbedding(KeyedEmbedding):
    """Also counts query embeddings."""

    _queries: list[str] = PrivateAttr(default_factory=list)

    def _get_query_embedding(self, query: str) -> Embedding:
        self._queries.append(query)
        return super()._get_query_embedding(query)

    async def _aget_query_embedding(self, query: str) -> Embedding:
        self._queries.append(query)
        return await super()._aget_query_embedding(query)


def _embed() -> CountingEmbedding:
    return CountingEmbedding({**CORPUS, "the question": QUERY}, dim=4)


def _nodes() -> list[TextNode]:
    return [TextNode(text=text) for text in CORPUS]


def _simple(embed: CountingEmbedding) -> VectorStoreIndex:
    return VectorStoreIndex(_nodes(), embed_model=embed)


def _qdrant(embed: CountingEmbedding) -> VectorStoreIndex:
    qdrant_client = pytest.importorskip("qdrant_client")
    qdrant = pytest.importorskip("llama_index.vector_stores.qdrant")
    store = qdrant.QdrantVectorStore(client=qdrant_client.QdrantClient(location=":memory:"),
                                     collection_name="stored_vectors")
    return VectorStoreIndex(_nodes(), embed_model=embed,
                            storage_context=StorageContext.from_defaults(vector_store=store))


def _faiss(embed: CountingEmbedding) -> VectorStoreIndex:
    faiss = pytest.importorskip("faiss")
    module = pytest.importorskip("llama_index.vector_stores.faiss")
    store = module.FaissVectorStore(faiss_index=faiss.IndexFlatIP(4))
    return VectorStoreIndex(_nodes(), embed_model=embed,
                            storage_context=StorageContext.from_defaults(vector_store=store))


INDEXES: dict[str, Callable[[CountingEmbedding], VectorStoreIndex]] = {
    "simple": _simple, "qdrant": _qdrant, "faiss": _faiss,
}


def _texts(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.get_content() for n in nodes]


@pytest.mark.parametrize("name", list(INDEXES))
def test_one_embedding_call_per_query(name: str) -> None:
    embed = _embed()
    index = INDEXES[name](embed)
    embed.batches.clear()
    retriever = DiverseRetriever.from_index(index, top_n=3, fetch_k=6, method="mmr",
                                            method_params={"lambda_mult": 0.5})
    for _ in range(2):
        texts = _texts(retriever.retrieve("the question"))
        assert texts[0] in DUPS and len(DUPS & set(texts)) == 1
    assert embed.batches == []  # no node text embedded: vectors read from the store
    assert embed._queries == ["the question", "the question"]  # one per query
    out = retriever.retrieve("the question")
    assert all(n.node.embedding is None for n in out)  # returned nodes stay embedding-free


# Qdrant's async path needs an AsyncQdrantClient, whose ":memory:" store is another store.
@pytest.mark.parametrize("name", ["simple", "faiss"])
async def test_one_embedding_call_per_query_async(name: str) -> None:
    embed = _embed()
    index = INDEXES[name](embed)
    embed.batches.clear()
    retriever = DiverseRetriever.from_index(index, top_n=3, fetch_k=6)
    texts = _texts(await retriever.aretrieve("the question"))
    assert texts[0] in DUPS and len(DUPS & set(texts)) == 1
    assert embed.batches == [] and embed._queries == ["the question"]


def test_stored_vectors_give_the_same_answer_as_embedding() -> None:
    embed = _embed()
    index = _simple(embed)
    stored = DiverseRetriever.from_index(index, top_n=3, fetch_k=6).retrieve("the question")
    other = _embed()  # another model object: the stored vectors are not used
    embedded = DiverseRetriever.from_index(index, top_n=3, fetch_k=6,
                                           embed_model=other).retrieve(
        QueryBundle("the question", embedding=QUERY))
    assert _texts(stored) == _texts(embedded)
    assert other.batches  # this one embedded the texts


class ListRetriever(BaseRetriever):
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(text=t), score=1.0) for t in CORPUS]


def test_other_retrievers_embed_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    embed = _embed()
    retriever = DiverseRetriever(ListRetriever(), top_n=3, embed_model=embed)
    with caplog.at_level(logging.WARNING, logger="llamaindex_diverse"):
        retriever.retrieve("the question")
        retriever.retrieve("the question")
    records = [r for r in caplog.records if "cannot read stored vectors" in r.message]
    assert len(records) == 1 and "ListRetriever" in records[0].message
    assert len(embed.batches) == 1  # embedded once, then cached
