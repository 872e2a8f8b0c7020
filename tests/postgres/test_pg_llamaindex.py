"""LlamaIndex over a real Postgres (``PGVectorStore``): its query results carry no vectors,
so the candidates' stored vectors are read by node id in one statement; a query costs one
query embedding."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import llamaindex_urls
from diverse_core.embedding_cache import clear_model_caches
from diverse_core.errors import InvalidParameterError
from pg_fakes import CORPUS, DIM, DUPS, Calls, vector_of

pytestmark = pytest.mark.postgres

pytest.importorskip("llama_index.core")
from llama_index.core import StorageContext, VectorStoreIndex  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding  # noqa: E402
from llama_index.core.bridge.pydantic import PrivateAttr  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode  # noqa: E402

from llamaindex_diverse import DiverseNodePostprocessor, DiverseRetriever  # noqa: E402
from llamaindex_diverse.drrag import DRRAGRetriever  # noqa: E402


class CountingEmbedding(BaseEmbedding):
    """The table's vectors; records every text it is asked to embed."""

    model_name: str = "pg-counting"
    _calls: Calls = PrivateAttr(default_factory=Calls)

    @property
    def calls(self) -> Calls:
        return self._calls

    def _get_query_embedding(self, query: str) -> Embedding:
        self._calls.queries.append(query)
        return vector_of(query)

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> Embedding:
        self._calls.documents[text] += 1
        return vector_of(text)

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return self._get_text_embedding(text)


def _texts(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.get_content() for n in nodes]


def _store(folder: str, table: str) -> Any:
    from llama_index.vector_stores.postgres import PGVectorStore

    sync_url, async_url = llamaindex_urls(folder)
    return PGVectorStore(connection_string=sync_url, async_connection_string=async_url,
                         table_name=table, embed_dim=DIM)


@pytest.fixture(scope="module")
def table(pg_socket_dir: str) -> Iterator[str]:
    """A table holding the corpus, loaded once through an index."""
    name = f"t{uuid.uuid4().hex[:12]}"
    store = _store(pg_socket_dir, name)
    VectorStoreIndex([TextNode(text=t, metadata={"n": i}, excluded_embed_metadata_keys=["n"])
                      for i, t in enumerate(CORPUS)],
                     embed_model=CountingEmbedding(),
                     storage_context=StorageContext.from_defaults(vector_store=store))
    yield name
    store._engine.dispose()


@pytest.fixture
def index(pg_socket_dir: str, table: str) -> Iterator[VectorStoreIndex]:
    store = _store(pg_socket_dir, table)
    yield VectorStoreIndex.from_vector_store(store, embed_model=CountingEmbedding())
    if store._engine is not None:
        store._engine.dispose()


@pytest.fixture
async def aindex(pg_socket_dir: str, table: str) -> Any:
    store = _store(pg_socket_dir, table)
    yield VectorStoreIndex.from_vector_store(store, embed_model=CountingEmbedding())
    await store.close()


def _statements(store: Any) -> list[str]:
    from sqlalchemy import event

    store._initialize()
    seen: list[str] = []

    @event.listens_for(store._engine, "before_cursor_execute")
    def _record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    return seen


def test_retriever_one_query_embedding_one_batched_read(index: VectorStoreIndex) -> None:
    embed: CountingEmbedding = index._embed_model  # type: ignore[assignment]
    store = index.vector_store
    seen = _statements(store)
    retriever = DiverseRetriever.from_index(index, top_n=2, fetch_k=10, method="mmr",
                                            method_params={"lambda_mult": 0.5})
    out = retriever.retrieve("q")
    assert out[0].node.get_content() in DUPS and out[1].node.get_content() == "bridge"
    assert embed.calls.queries == ["q"] and not embed.calls.documents
    reads = [s for s in seen if "IN (" in s and ".embedding" in s and "LIMIT" not in s]
    assert len(reads) == 1  # one batched read by id for the ten candidates, not the table
    assert all(n.node.embedding is None for n in out)  # returned nodes stay embedding-free
    seen.clear()
    retriever.retrieve("q")  # cached: no read at all
    assert not [s for s in seen if "IN (" in s and "LIMIT" not in s]


def test_stored_vectors_equal_the_model_vectors(index: VectorStoreIndex) -> None:
    stored = DiverseRetriever.from_index(index, top_n=3, fetch_k=10).retrieve("q")
    other = CountingEmbedding()
    embedded = DiverseRetriever.from_index(index, top_n=3, fetch_k=10, embed_model=other
                                           ).retrieve(QueryBundle("q", embedding=vector_of("q")))
    assert _texts(stored) == _texts(embedded)
    assert other.calls.documents  # another model object: the texts were embedded


def test_postprocessor_with_vector_store_in_a_query_pipeline(index: VectorStoreIndex) -> None:
    embed: CountingEmbedding = index._embed_model  # type: ignore[assignment]
    pp = DiverseNodePostprocessor(top_n=2, method="gmmr", embed_model=embed,
                                  vector_store=index.vector_store)
    nodes = index.as_retriever(similarity_top_k=10).retrieve("q")
    out = pp.postprocess_nodes(nodes, query_str="q")
    assert _texts(out)[1] == "bridge" and _texts(out)[0] in DUPS
    assert not embed.calls.documents  # vectors read from Postgres
    assert len(embed.calls.queries) == 2  # the retriever's and the postprocessor's (no bundle)
    with pytest.raises(InvalidParameterError, match="vector_store"):
        DiverseNodePostprocessor(top_n=2, vector_store=object())


async def test_async_retriever(aindex: VectorStoreIndex) -> None:
    embed: CountingEmbedding = aindex._embed_model  # type: ignore[assignment]
    retriever = DiverseRetriever.from_index(aindex, top_n=2, fetch_k=10, method="mmr")
    out = await retriever.aretrieve("q")
    assert _texts(out)[1] == "bridge"
    assert embed.calls.queries == ["q"] and not embed.calls.documents


def test_drrag_pipeline_embeds_only_its_queries(index: VectorStoreIndex) -> None:
    embed: CountingEmbedding = index._embed_model  # type: ignore[assignment]
    retriever = DRRAGRetriever(index, k=4, fetch_k=8, mode="qdc", k1=2)
    result, nodes = retriever.run_pipeline("q")
    assert len(nodes) == 4 and result.cost.searches >= 2
    assert len(embed.calls.queries) == result.cost.searches  # one embedding per search
    assert not embed.calls.documents
    assert set(_texts(nodes)) & DUPS


async def test_drrag_pipeline_async(aindex: VectorStoreIndex) -> None:
    embed: CountingEmbedding = aindex._embed_model  # type: ignore[assignment]
    retriever = DRRAGRetriever(aindex, k=4, fetch_k=8, mode="qdc", k1=2)
    result, nodes = await retriever.arun_pipeline("q")
    assert len(nodes) == 4 and len(embed.calls.queries) == result.cost.searches
    assert not embed.calls.documents


def test_missing_node_id_index_is_reported_once(index: VectorStoreIndex,
                                                caplog: pytest.LogCaptureFixture,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """PGVectorStore makes no index on node_id: the by-id read would scan the table."""
    import logging

    from sqlalchemy import text

    from llamaindex_diverse import _stored

    monkeypatch.setattr(_stored, "_NODE_ID_INDEX", {})
    retriever = DiverseRetriever.from_index(index, top_n=2, fetch_k=10)
    with caplog.at_level(logging.WARNING, logger="llamaindex_diverse"):
        retriever.retrieve("q")
        retriever.retrieve("dup a")  # other candidates: read again, not checked again
    found = [r for r in caplog.records if "no index on node_id" in r.message]
    assert len(found) == 1 and "CREATE INDEX ON" in found[0].message
    store = index.vector_store
    name = store._table_class.__tablename__
    with store._session() as s, s.begin():
        s.execute(text(f"CREATE INDEX IF NOT EXISTS {name}_node_id ON {name} (node_id)"))
    monkeypatch.setattr(_stored, "_NODE_ID_INDEX", {})
    clear_model_caches()  # the next query reads its candidates again
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="llamaindex_diverse"):
        DiverseRetriever.from_index(index, top_n=2, fetch_k=10).retrieve("dup b")
    assert not [r for r in caplog.records if "no index on node_id" in r.message]
    assert _stored._NODE_ID_INDEX  # the table was checked (and found indexed)
