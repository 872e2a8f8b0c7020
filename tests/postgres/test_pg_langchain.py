"""LangChain over a real Postgres (``langchain_postgres.PGVector``): stored vectors come back
with the search, so a query costs one query embedding and one database round trip."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from diverse_core.errors import InvalidParameterError
from pg_fakes import CORPUS, DUPS, Calls, vector_of
from pg_urls import langchain_url

pytestmark = pytest.mark.postgres

langchain_core = pytest.importorskip("langchain_core")
from langchain_core.embeddings import Embeddings  # noqa: E402

from langchain_diverse import DiverseRetriever, as_diverse_retriever  # noqa: E402
from langchain_diverse.drrag import DRRAGRetriever  # noqa: E402


class CountingEmbeddings(Embeddings):
    """The table's vectors; records every text it is asked to embed."""

    def __init__(self) -> None:
        self.calls = Calls()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.documents.update(texts)
        return [vector_of(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.calls.queries.append(text)
        return vector_of(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


@pytest.fixture(scope="module")
def collection(pg_socket_dir: str) -> Iterator[tuple[str, CountingEmbeddings]]:
    """A collection holding the corpus (loaded once, through a sync store)."""
    from langchain_postgres import PGVector

    emb = CountingEmbeddings()
    name = f"c{uuid.uuid4().hex[:12]}"
    store = PGVector(emb, connection=langchain_url(pg_socket_dir), collection_name=name,
                     use_jsonb=True)
    store.add_texts(CORPUS, metadatas=[{"n": i} for i in range(len(CORPUS))])
    yield name, emb
    store.delete_collection()
    assert store._engine is not None
    store._engine.dispose()


@pytest.fixture
def store(pg_socket_dir: str, collection: tuple[str, CountingEmbeddings]) -> Iterator[Any]:
    from langchain_postgres import PGVector

    name, emb = collection
    emb.calls.clear()
    s = PGVector(emb, connection=langchain_url(pg_socket_dir), collection_name=name,
                 use_jsonb=True)
    yield s
    assert s._engine is not None
    s._engine.dispose()


@pytest.fixture
async def async_store(pg_socket_dir: str, collection: tuple[str, CountingEmbeddings]
                      ) -> Any:
    from langchain_postgres import PGVector

    name, emb = collection
    emb.calls.clear()
    s = PGVector(emb, connection=langchain_url(pg_socket_dir), collection_name=name,
                 use_jsonb=True, async_mode=True)
    yield s
    await s._async_engine.dispose()


def _statements(engine: Any) -> list[str]:
    """Every SQL statement ``engine`` runs from now on (until the engine is disposed)."""
    from sqlalchemy import event

    seen: list[str] = []

    @event.listens_for(engine, "before_cursor_execute")
    def _record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    return seen


def test_one_query_embedding_and_the_search_returns_the_vectors(store: Any) -> None:
    emb: CountingEmbeddings = store.embeddings
    retriever = DiverseRetriever(vectorstore=store, k=2, fetch_k=10, method="mmr",
                                 method_params={"lambda_mult": 0.5})
    plain = _statements(store._engine)
    store.similarity_search_by_vector(vector_of("q"), k=10)
    n_plain = len(plain)
    plain.clear()
    docs = retriever.invoke("q")
    assert [d.page_content in DUPS for d in docs] == [True, False]
    assert docs[1].page_content == "bridge"
    assert emb.calls.queries == ["q"] and not emb.calls.documents  # nothing re-embedded
    assert len(plain) == n_plain  # the same statements as the plain search: one round trip
    assert "LIMIT" in plain[-1] and "langchain_pg_embedding.embedding" in plain[-1]


def test_stored_vectors_equal_the_model_vectors(store: Any) -> None:
    stored = DiverseRetriever(vectorstore=store, k=3, fetch_k=10).invoke("q")
    embedded = DiverseRetriever(vectorstore=store, k=3, fetch_k=10,
                                embeddings=CountingEmbeddings()).invoke("q")
    assert [d.page_content for d in stored] == [d.page_content for d in embedded]
    for a, b in zip(stored, embedded, strict=True):
        assert a.metadata["relevance_score"] == pytest.approx(b.metadata["relevance_score"],
                                                              rel=1e-5)


def test_filter_and_as_diverse_retriever(store: Any) -> None:
    before = store.as_retriever(search_type="mmr", search_kwargs={
        "k": 2, "fetch_k": 10, "filter": {"n": {"$gte": 1}}})
    retriever = as_diverse_retriever(before)
    assert retriever.method == "mmr"
    docs = retriever.invoke("q")
    assert len(docs) == 2 and all(d.metadata["n"] >= 1 for d in docs)
    assert "dup a" not in {d.page_content for d in docs}  # n == 0 is filtered out in SQL
    assert not store.embeddings.calls.documents


def test_topk_matches_the_store_order(store: Any) -> None:
    docs = DiverseRetriever(vectorstore=store, k=5, fetch_k=5, method="topk").invoke("q")
    plain = store.similarity_search_by_vector(vector_of("q"), k=5)
    assert [d.page_content for d in docs] == [d.page_content for d in plain]
    assert [d.id for d in docs] == [d.id for d in plain]


async def test_async_store_one_query_embedding(async_store: Any) -> None:
    emb: CountingEmbeddings = async_store.embeddings
    assert not emb.calls.documents
    retriever = DiverseRetriever(vectorstore=async_store, k=2, fetch_k=10, method="gmmr")
    docs = await retriever.ainvoke("q")
    assert [d.page_content in DUPS for d in docs] == [True, False]
    assert emb.calls.queries == ["q"] and not emb.calls.documents
    with pytest.raises(InvalidParameterError, match="async_mode=True"):
        retriever.invoke("q")  # no sync connection: a clear error, not an assertion


async def test_sync_store_under_ainvoke(store: Any) -> None:
    """PGVector's own async search refuses a sync store; the retriever runs it in a thread."""
    retriever = DiverseRetriever(vectorstore=store, k=2, fetch_k=10, method="mmr")
    docs = await retriever.ainvoke("q")
    assert docs[1].page_content == "bridge"
    assert store.embeddings.calls.queries == ["q"] and not store.embeddings.calls.documents


def test_by_id_fallback_reads_one_batch(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without PGVector's query method (another version), the found documents' vectors are
    read by id in one statement."""
    from langchain_diverse import _stored

    monkeypatch.setattr(_stored, "_SYNC_QUERY", "_no_such_query")
    seen = _statements(store._engine)
    docs = DiverseRetriever(vectorstore=store, k=2, fetch_k=10, method="mmr").invoke("q")
    assert docs[1].page_content == "bridge" and not store.embeddings.calls.documents
    reads = [s for s in seen if "WHERE langchain_pg_embedding.id IN" in s]
    assert len(reads) == 1


def test_drrag_pipeline_embeds_only_its_queries(store: Any) -> None:
    emb: CountingEmbeddings = store.embeddings
    retriever = DRRAGRetriever(vectorstore=store, k=4, fetch_k=8, mode="qdc", k1=2)
    result, docs = retriever.run_pipeline("q")
    assert len(docs) == 4 and result.cost.searches >= 2
    assert len(emb.calls.queries) == result.cost.searches  # one embedding per search
    assert not emb.calls.documents  # candidate vectors all read from Postgres
    assert {d.page_content for d in docs} & DUPS


async def test_drrag_pipeline_async(async_store: Any) -> None:
    emb: CountingEmbeddings = async_store.embeddings
    retriever = DRRAGRetriever(vectorstore=async_store, k=4, fetch_k=8, mode="qdc", k1=2)
    result, docs = await retriever.arun_pipeline("q")
    assert len(docs) == 4 and len(emb.calls.queries) == result.cost.searches
    assert not emb.calls.documents
