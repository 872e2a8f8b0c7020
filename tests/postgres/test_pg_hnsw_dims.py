"""Both faces over pgvector HNSW and fixed-size columns (issue 33 item 8, issue 35 item 1).

A database of its own holds a LangChain collection (``embedding_length`` set, so the
column is ``vector(16)``) and a LlamaIndex table, each with an HNSW index; the stores
connect with ``enable_seqscan=off`` so a search of a few hundred rows uses the index.
HNSW returns at most ``hnsw.ef_search`` rows (pgvector's default, 40): asked for
``fetch_k=100`` it used to return 40 candidates; the faces raise it for the search.
A query vector of another dimension used to surface as ``sqlalchemy.exc.StatementError:
expected 16 dimensions, not 8``; it is a ``DimensionMismatchError`` naming both sizes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from diverse_core.errors import DimensionMismatchError
from pg_fakes import CORPUS, DIM, vector_of

pytestmark = pytest.mark.postgres

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

K, FETCH_K = 60, 100
OPTIONS = "&options=-c%20enable_seqscan%3Doff"


@pytest.fixture(scope="module")
def hnsw_db(pg_socket_dir: str) -> Iterator[str]:
    """A database holding both faces' tables with HNSW indexes; its name."""
    from sqlalchemy import create_engine, text

    name = f"h{uuid.uuid4().hex[:10]}"
    admin = create_engine(f"postgresql+psycopg://postgres@/postgres?host={pg_socket_dir}",
                          isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f"CREATE DATABASE {name}"))
    db = create_engine(f"postgresql+psycopg://postgres@/{name}?host={pg_socket_dir}",
                       isolation_level="AUTOCOMMIT")
    with db.connect() as c:
        c.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
    _load_langchain(pg_socket_dir, name)
    _load_llamaindex(pg_socket_dir, name)
    with db.connect() as c:
        c.execute(text("CREATE INDEX ON langchain_pg_embedding USING hnsw (embedding vector_cosine_ops)"))
        c.execute(text("CREATE INDEX ON data_hnsw USING hnsw (embedding vector_cosine_ops)"))
        c.execute(text("ANALYZE"))
    db.dispose()
    yield name
    with admin.connect() as c:
        c.execute(text(f"DROP DATABASE {name} WITH (FORCE)"))
    admin.dispose()


def _lc_url(folder: str, db: str) -> str:
    return f"postgresql+psycopg://postgres@/{db}?host={folder}{OPTIONS}"


def _li_urls(folder: str, db: str) -> tuple[str, str]:
    return (f"postgresql+psycopg2://postgres@/{db}?host={folder}{OPTIONS}",
            f"postgresql+asyncpg://postgres@/{db}?host={folder}")


# ----------------------------------------------------------------------------- LangChain
class _LCEmbeddings:
    """The table's vectors (``dim`` != 16: the first ``dim`` components of the query)."""

    def __init__(self, dim: int = DIM) -> None:
        self.dim = dim

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector_of(t)[: self.dim] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return vector_of(text)[: self.dim]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


def _lc_embeddings(dim: int = DIM) -> Any:
    from langchain_core.embeddings import Embeddings

    class Emb(_LCEmbeddings, Embeddings):
        pass

    return Emb(dim)


def _load_langchain(folder: str, db: str) -> None:
    from langchain_postgres import PGVector

    store = PGVector(_lc_embeddings(), connection=_lc_url(folder, db), collection_name="hnsw",
                     embedding_length=DIM, use_jsonb=True)
    store.add_texts(CORPUS)
    store._engine.dispose()


def _lc_store(folder: str, db: str, dim: int = DIM, **kw: Any) -> Any:
    from langchain_postgres import PGVector

    return PGVector(_lc_embeddings(dim), connection=_lc_url(folder, db), collection_name="hnsw",
                    embedding_length=DIM, use_jsonb=True, **kw)


@pytest.fixture
def lc_store(pg_socket_dir: str, hnsw_db: str) -> Iterator[Any]:
    store = _lc_store(pg_socket_dir, hnsw_db)
    yield store
    store._engine.dispose()


def test_langchain_plain_search_is_capped_by_ef_search(lc_store: Any) -> None:
    """The premise: the store's own search over the index returns ef_search = 40 rows."""
    assert len(lc_store.similarity_search_by_vector(vector_of("q"), k=FETCH_K)) == 40


def test_langchain_hnsw_returns_fetch_k_candidates(lc_store: Any) -> None:
    from langchain_diverse import DiverseRetriever

    docs = DiverseRetriever(vectorstore=lc_store, k=K, fetch_k=FETCH_K, method="topk").invoke("q")
    assert len(docs) == K  # was 40
    plain = lc_store.similarity_search_by_vector(vector_of("q"), k=FETCH_K)
    assert len(plain) == 40  # transaction-local: the connection's setting is left as it was


async def test_langchain_hnsw_async(pg_socket_dir: str, hnsw_db: str) -> None:
    from langchain_diverse import DiverseRetriever

    store = _lc_store(pg_socket_dir, hnsw_db, async_mode=True)
    try:
        docs = await DiverseRetriever(vectorstore=store, k=K, fetch_k=FETCH_K,
                                      method="gmmr").ainvoke("q")
        assert len(docs) == K
    finally:
        await store._async_engine.dispose()


def _capture_searches(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[Any]:
    """The search states the face opens (``module.pg_search`` wrapped)."""
    from contextlib import contextmanager

    states: list[Any] = []
    original = module.pg_search

    @contextmanager
    def capturing(*args: Any, **kwargs: Any) -> Iterator[Any]:
        with original(*args, **kwargs) as state:
            states.append(state)
            yield state

    monkeypatch.setattr(module, "pg_search", capturing)
    return states


def test_langchain_ef_search_raised_only_when_needed(pg_socket_dir: str, hnsw_db: str,
                                                     lc_store: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Raised for the transaction when the connection's setting is lower; a connection
    configured for fetch_k gets no extra statement (its value is read once, remembered)."""
    from langchain_postgres import PGVector

    from langchain_diverse import DiverseRetriever, _stored

    states = _capture_searches(monkeypatch, _stored)
    DiverseRetriever(vectorstore=lc_store, k=K, fetch_k=FETCH_K, method="topk").invoke("q")
    assert [(s.ef_statement, s.ef_raised) for s in states] == [(True, FETCH_K)]
    states.clear()
    DiverseRetriever(vectorstore=lc_store, k=5, fetch_k=30, method="topk").invoke("q")
    assert [(s.ef_statement, s.ef_raised) for s in states] == [(False, None)]  # 30 <= 40 (known)
    url = _lc_url(pg_socket_dir, hnsw_db) + "%20-c%20hnsw.ef_search%3D150"
    store = PGVector(_lc_embeddings(), connection=url, collection_name="hnsw",
                     embedding_length=DIM, use_jsonb=True)
    try:
        retriever = DiverseRetriever(vectorstore=store, k=K, fetch_k=FETCH_K, method="topk")
        states.clear()
        assert len(retriever.invoke("q")) == K
        assert len(retriever.invoke("dup a")) == K
        # read once (150 >= 100: not raised, never lowered), then known: no statement
        assert [(s.ef_statement, s.ef_raised) for s in states] == [(True, None), (False, None)]
    finally:
        store._engine.dispose()


@pytest.mark.parametrize("async_mode", [False, True])
async def test_langchain_dimension_mismatch_is_typed(pg_socket_dir: str, hnsw_db: str,
                                                     async_mode: bool) -> None:
    from langchain_diverse import DiverseRetriever

    store = _lc_store(pg_socket_dir, hnsw_db, dim=8, async_mode=async_mode)
    retriever = DiverseRetriever(vectorstore=store, k=2, fetch_k=10, method="gmmr")
    try:
        with pytest.raises(DimensionMismatchError, match=r"8 dimensions.*have 16"):
            if async_mode:
                await retriever.ainvoke("q")
            else:
                retriever.invoke("q")
    finally:
        if async_mode:
            await store._async_engine.dispose()
        else:
            store._engine.dispose()


def test_langchain_vectors_come_back_binary(lc_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """psycopg 3: the search's rows come back in binary, the vectors decoded by numpy."""
    from diverse_core import pgvector_sql

    from langchain_diverse import DiverseRetriever
    from langchain_diverse._stored import StoreSearch

    loaded: list[int] = []
    loader = pgvector_sql._binary_loader()
    original = loader.load

    def counting(self: Any, data: Any) -> Any:
        loaded.append(len(data))
        return original(self, data)

    monkeypatch.setattr(loader, "load", counting)
    docs, known = StoreSearch(lc_store, {}, read_stored=True).run(vector_of("q"), 20)
    assert len(loaded) == 20 and set(loaded) == {4 + 4 * DIM}
    assert known is not None
    got = np.asarray(known([d.page_content for d in docs]), dtype=np.float32)
    want = np.asarray([vector_of(d.page_content) for d in docs], dtype=np.float32)
    assert np.array_equal(got, want)  # exact: the float4 bits as stored
    loaded.clear()
    lc_store.similarity_search_by_vector(vector_of("q"), k=5)
    assert not loaded  # the store's own search, outside the faces, is untouched
    assert len(DiverseRetriever(vectorstore=lc_store, k=3, fetch_k=20).invoke("q")) == 3


# ----------------------------------------------------------------------------- LlamaIndex
def _li_embedding(dim: int = DIM) -> Any:
    from llama_index.core.base.embeddings.base import BaseEmbedding

    class Emb(BaseEmbedding):
        model_name: str = f"pg-hnsw-{dim}"

        def _get_query_embedding(self, query: str) -> list[float]:
            return vector_of(query)[:dim]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return vector_of(query)[:dim]

        def _get_text_embedding(self, text: str) -> list[float]:
            return vector_of(text)[:dim]

        async def _aget_text_embedding(self, text: str) -> list[float]:
            return vector_of(text)[:dim]

    return Emb()


def _li_store(folder: str, db: str) -> Any:
    from llama_index.vector_stores.postgres import PGVectorStore

    sync_url, async_url = _li_urls(folder, db)
    return PGVectorStore(connection_string=sync_url, async_connection_string=async_url,
                         table_name="hnsw", embed_dim=DIM)


def _load_llamaindex(folder: str, db: str) -> None:
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.schema import TextNode

    store = _li_store(folder, db)
    VectorStoreIndex([TextNode(text=t) for t in CORPUS], embed_model=_li_embedding(),
                     storage_context=StorageContext.from_defaults(vector_store=store))
    store._engine.dispose()


@pytest.fixture
def li_index(pg_socket_dir: str, hnsw_db: str) -> Iterator[Any]:
    from llama_index.core import VectorStoreIndex

    store = _li_store(pg_socket_dir, hnsw_db)
    yield VectorStoreIndex.from_vector_store(store, embed_model=_li_embedding())
    if store._engine is not None:
        store._engine.dispose()


def test_llamaindex_plain_search_is_capped_by_ef_search(li_index: Any) -> None:
    assert len(li_index.as_retriever(similarity_top_k=FETCH_K).retrieve("q")) == 40


def test_llamaindex_hnsw_returns_fetch_k_candidates(li_index: Any) -> None:
    from llamaindex_diverse import DiverseRetriever

    out = DiverseRetriever.from_index(li_index, top_n=K, fetch_k=FETCH_K, method="topk").retrieve("q")
    assert len(out) == K  # was 40
    assert len(li_index.as_retriever(similarity_top_k=FETCH_K).retrieve("q")) == 40


async def test_llamaindex_hnsw_async(pg_socket_dir: str, hnsw_db: str) -> None:
    from llama_index.core import VectorStoreIndex

    from llamaindex_diverse import DiverseRetriever

    store = _li_store(pg_socket_dir, hnsw_db)
    index = VectorStoreIndex.from_vector_store(store, embed_model=_li_embedding())
    try:
        out = await DiverseRetriever.from_index(index, top_n=K, fetch_k=FETCH_K,
                                                method="gmmr").aretrieve("q")
        assert len(out) == K
    finally:
        await store.close()


def test_llamaindex_drrag_search_returns_fetch_k(li_index: Any) -> None:
    """The pipelines' source searches the same way."""
    from llamaindex_diverse.sources import LlamaIndexSource

    cands = LlamaIndexSource(li_index, fetch_k=FETCH_K).search("q")
    assert len(cands.ids) == FETCH_K


@pytest.mark.parametrize("async_mode", [False, True])
async def test_llamaindex_dimension_mismatch_is_typed(pg_socket_dir: str, hnsw_db: str,
                                                      async_mode: bool) -> None:
    from llama_index.core import VectorStoreIndex

    from llamaindex_diverse import DiverseRetriever

    store = _li_store(pg_socket_dir, hnsw_db)
    index = VectorStoreIndex.from_vector_store(store, embed_model=_li_embedding(8))
    retriever = DiverseRetriever.from_index(index, top_n=2, fetch_k=10, method="gmmr")
    try:
        with pytest.raises(DimensionMismatchError, match=r"8 dimensions.*have 16"):
            if async_mode:
                await retriever.aretrieve("q")
            else:
                retriever.retrieve("q")
    finally:
        await store.close()


def test_llamaindex_psycopg3_binary_vectors(pg_socket_dir: str, hnsw_db: str) -> None:
    """PGVectorStore on psycopg 3: the vector column is read as vector_send bytes too, and the
    vectors equal the stored ones bit for bit."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import QueryBundle
    from llama_index.vector_stores.postgres import PGVectorStore

    from llamaindex_diverse._pg_rows import collecting, searching_with_vectors

    store = PGVectorStore(connection_string=f"postgresql+psycopg://postgres@/{hnsw_db}?host={pg_socket_dir}",
                          async_connection_string=_li_urls(pg_socket_dir, hnsw_db)[1],
                          table_name="hnsw", embed_dim=DIM)
    try:
        index = VectorStoreIndex.from_vector_store(store, embed_model=_li_embedding())
        stand_in = searching_with_vectors(index.as_retriever(similarity_top_k=20), None)
        assert stand_in is not None
        with collecting() as found:
            nodes = stand_in.retrieve(QueryBundle("q", embedding=vector_of("q")))
        assert len(nodes) == 20 and len(found) == 20
        for n in nodes:
            got = found[n.node.node_id]
            assert isinstance(got, np.ndarray) and got.dtype == np.float32
            assert np.array_equal(got, np.asarray(vector_of(n.node.get_content()), dtype=np.float32))
    finally:
        store._engine.dispose()
