"""Issue 46, item 6: Postgres going away mid-query is a typed StoreUnavailableError through both
faces (not SQLAlchemy's OperationalError), and the next query works once the database answers.

The outage is real: while the face's search (or its read of stored vectors) is about to run, a
separate admin connection terminates every other client backend (``pg_terminate_backend``), so
the statement meets a dropped connection."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from diverse_core.errors import StoreError, StoreUnavailableError
from pg_fakes import CORPUS, DIM, DUPS, vector_of
from pg_urls import langchain_url, llamaindex_urls

pytestmark = pytest.mark.postgres


class _Killer:
    """Terminates the other client connections once, just before the next statement matching
    ``marker`` runs on ``engine``."""

    def __init__(self, engine: Any, admin_url: str, marker: str) -> None:
        from sqlalchemy import create_engine, event

        self.armed = False
        self.killed = 0
        self._admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=None)
        self._marker = marker
        event.listen(engine, "before_cursor_execute", self._before)

    def _before(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not self.armed or self._marker not in statement:
            return
        self.armed = False
        from sqlalchemy import text

        with self._admin.connect() as admin:
            self.killed += len(admin.execute(text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
            )).all())

    def close(self) -> None:
        self._admin.dispose()


# ------------------------------------------------------------------------------ LangChain
pytest.importorskip("langchain_postgres")
from langchain_core.embeddings import Embeddings  # noqa: E402

from langchain_diverse import DiverseRetriever  # noqa: E402


class _Emb(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector_of(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return vector_of(text)


@pytest.fixture
def lc_store(pg_socket_dir: str) -> Iterator[Any]:
    from langchain_postgres import PGVector

    store = PGVector(_Emb(), connection=langchain_url(pg_socket_dir), collection_name=f"c{uuid.uuid4().hex[:12]}",
                     use_jsonb=True)
    store.add_texts(CORPUS)
    yield store
    store.delete_collection()
    assert store._engine is not None
    store._engine.dispose()


def test_langchain_search_outage_is_typed_and_recovers(lc_store: Any, pg_socket_dir: str) -> None:
    retriever = DiverseRetriever(vectorstore=lc_store, k=2, fetch_k=10, method="mmr")
    first = [d.page_content for d in retriever.invoke("q")]
    killer = _Killer(lc_store._engine, langchain_url(pg_socket_dir), "<=>")
    try:
        killer.armed = True
        with pytest.raises(StoreUnavailableError, match="unreachable or dropped the connection") as caught:
            retriever.invoke("q")
        assert killer.killed >= 1
        assert isinstance(caught.value, StoreError) and isinstance(caught.value, ConnectionError)
        assert type(caught.value.__cause__).__name__ == "OperationalError"
        assert [d.page_content for d in retriever.invoke("q")] == first  # the next query works
    finally:
        killer.close()


# ------------------------------------------------------------------------------ LlamaIndex
pytest.importorskip("llama_index.vector_stores.postgres")
from llama_index.core import StorageContext, VectorStoreIndex  # noqa: E402
from llama_index.core.embeddings import MockEmbedding  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402

from llamaindex_diverse import DiverseNodePostprocessor  # noqa: E402
from llamaindex_diverse import DiverseRetriever as LIRetriever  # noqa: E402


class _LIEmb(MockEmbedding):
    def _get_query_embedding(self, query: str) -> list[float]:
        return vector_of(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return vector_of(text)


@pytest.fixture
def li_index(pg_socket_dir: str) -> Iterator[VectorStoreIndex]:
    from llama_index.vector_stores.postgres import PGVectorStore

    sync_url, async_url = llamaindex_urls(pg_socket_dir)
    store = PGVectorStore(connection_string=sync_url, async_connection_string=async_url,
                          table_name=f"t{uuid.uuid4().hex[:12]}", embed_dim=DIM)
    index = VectorStoreIndex([TextNode(text=t) for t in CORPUS], embed_model=_LIEmb(embed_dim=DIM),
                             storage_context=StorageContext.from_defaults(vector_store=store))
    yield index
    store._engine.dispose()


def test_llamaindex_search_outage_is_typed_and_recovers(li_index: VectorStoreIndex, pg_socket_dir: str) -> None:
    retriever = LIRetriever.from_index(li_index, top_n=2, fetch_k=10, method="mmr")
    first = [n.node.get_content() for n in retriever.retrieve("q")]
    store: Any = li_index.vector_store
    killer = _Killer(store._engine, llamaindex_urls(pg_socket_dir)[0], "<=>")
    try:
        killer.armed = True
        with pytest.raises(StoreUnavailableError) as caught:
            retriever.retrieve("q")
        assert killer.killed >= 1 and type(caught.value.__cause__).__name__ == "OperationalError"
        assert [n.node.get_content() for n in retriever.retrieve("q")] == first
        assert first[0] in DUPS
    finally:
        killer.close()


def test_llamaindex_stored_vector_read_outage_is_typed(li_index: VectorStoreIndex, pg_socket_dir: str) -> None:
    store: Any = li_index.vector_store
    nodes = li_index.as_retriever(similarity_top_k=5).retrieve("q")
    for n in nodes:
        n.node.embedding = None  # the postprocessor reads them from the store by node id
    pp = DiverseNodePostprocessor(top_n=2, method="mmr", vector_store=store, embed_model=_LIEmb(embed_dim=DIM))
    killer = _Killer(store._engine, llamaindex_urls(pg_socket_dir)[0], "IN (")
    try:
        killer.armed = True
        with pytest.raises(StoreUnavailableError):
            pp.postprocess_nodes(nodes, query_str="q")
        assert killer.killed >= 1
        assert len(pp.postprocess_nodes(nodes, query_str="q")) == 2
    finally:
        killer.close()
