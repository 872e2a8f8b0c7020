"""LlamaIndex over a real Postgres (``PGVectorStore``): its query results carry no vectors.
Over a plain vector index retriever the faces run the store's own query that keeps the
vector column (one statement, rows and vectors); a postprocessor given the store (which
sees the nodes only after the search) reads them by node id in one statement. A query
costs one query embedding either way."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from diverse_core.embedding_cache import clear_model_caches
from diverse_core.errors import InvalidParameterError
from pg_fakes import CORPUS, DIM, DUPS, Calls, vector_of
from pg_urls import llamaindex_urls

pytestmark = pytest.mark.postgres

pytest.importorskip("llama_index.core")
from llama_index.core import StorageContext, VectorStoreIndex  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding  # noqa: E402
from llama_index.core.bridge.pydantic import PrivateAttr  # noqa: E402
from llama_index.core.schema import (  # noqa: E402
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)

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
    """Every statement the store sends from now on (its sync and its async engine)."""
    from sqlalchemy import event

    store._initialize()
    seen: list[str] = []

    def _record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    for engine in (store._engine, store._async_engine.sync_engine):
        event.listen(engine, "before_cursor_execute", _record)
    return seen


def _searches(seen: list[str]) -> list[str]:
    """The similarity searches (ordered by distance, with a limit)."""
    return [s for s in seen if "distance" in s and "LIMIT" in s]


def _binary_vectors(statement: str) -> bool:
    """Whether a search selects the vector column in pgvector's binary form."""
    return "vector_send(" in statement and "embedding) AS embedding" in statement


def _reads_by_id(seen: list[str]) -> list[str]:
    """Reads of stored vectors by node id (no limit, an IN list)."""
    return [s for s in seen if "IN (" in s and "embedding" in s and "LIMIT" not in s]


def test_retriever_one_statement_rows_and_vectors(index: VectorStoreIndex) -> None:
    embed: CountingEmbedding = index._embed_model  # type: ignore[assignment]
    store = index.vector_store
    seen = _statements(store)
    retriever = DiverseRetriever.from_index(index, top_n=2, fetch_k=10, method="mmr",
                                            method_params={"lambda_mult": 0.5})
    out = retriever.retrieve("q")
    assert out[0].node.get_content() in DUPS and out[1].node.get_content() == "bridge"
    assert embed.calls.queries == ["q"] and not embed.calls.documents
    searches = _searches(seen)
    assert len(searches) == 1 and _binary_vectors(searches[0])  # the search keeps the vector column
    assert not _reads_by_id(seen)  # no second statement for the vectors
    assert all(n.node.embedding is None for n in out)  # returned nodes stay embedding-free
    seen.clear()
    retriever.retrieve("q")  # cached vectors: still one statement, the search
    assert len(_searches(seen)) == 1 and not _reads_by_id(seen)


def test_stand_in_search_returns_what_the_store_returns(index: VectorStoreIndex) -> None:
    """The vector-keeping search gives the plain search's nodes, scores and order."""
    from llamaindex_diverse._pg_rows import collecting, searching_with_vectors

    base = index.as_retriever(similarity_top_k=12)
    bundle = QueryBundle("q", embedding=vector_of("q"))
    plain = base.retrieve(bundle)
    stand_in = searching_with_vectors(base, None)
    assert stand_in is not None
    with collecting() as found:
        kept = stand_in.retrieve(QueryBundle("q", embedding=vector_of("q")))
    assert [(n.node.node_id, n.score) for n in plain] == [(n.node.node_id, n.score) for n in kept]
    assert [n.node.get_content() for n in plain] == [n.node.get_content() for n in kept]
    assert set(found) == {n.node.node_id for n in kept}
    for n in kept:
        assert list(found[n.node.node_id]) == pytest.approx(vector_of(n.node.get_content()), abs=1e-6)
    base.similarity_top_k = 5  # the stand-in shares the retriever's settings
    with collecting():
        assert len(stand_in.retrieve(bundle)) == 5
    # Not for another model, another query mode, or a retriever subclass.
    assert searching_with_vectors(base, CountingEmbedding()) is None
    assert searching_with_vectors(index.as_retriever(vector_store_query_mode="mmr"), None) is None


def test_by_id_read_is_the_fallback(index: VectorStoreIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """A version of the integration without the vector-keeping query: one batched read by id."""
    from llama_index.vector_stores.postgres import PGVectorStore

    embed: CountingEmbedding = index._embed_model  # type: ignore[assignment]
    monkeypatch.delattr(PGVectorStore, "_query_with_embedding")
    seen = _statements(index.vector_store)
    out = DiverseRetriever.from_index(index, top_n=2, fetch_k=10, method="mmr").retrieve("q")
    assert _texts(out)[1] == "bridge"
    assert embed.calls.queries == ["q"] and not embed.calls.documents
    assert len(_searches(seen)) == 1 and "embedding) AS embedding" not in _searches(seen)[0]
    assert len(_reads_by_id(seen)) == 1  # the ten candidates in one statement, not the table


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
    seen = _statements(index.vector_store)
    nodes = index.as_retriever(similarity_top_k=10).retrieve("q")
    out = pp.postprocess_nodes(nodes, query_str="q")
    assert _texts(out)[1] == "bridge" and _texts(out)[0] in DUPS
    assert not embed.calls.documents  # vectors read from Postgres
    assert len(_reads_by_id(seen)) == 1  # after the search: one batched read by node id
    assert len(embed.calls.queries) == 2  # the retriever's and the postprocessor's (no bundle)
    with pytest.raises(InvalidParameterError, match="vector_store"):
        DiverseNodePostprocessor(top_n=2, vector_store=object())


async def test_async_retriever(aindex: VectorStoreIndex) -> None:
    embed: CountingEmbedding = aindex._embed_model  # type: ignore[assignment]
    seen = _statements(aindex.vector_store)
    retriever = DiverseRetriever.from_index(aindex, top_n=2, fetch_k=10, method="mmr")
    out = await retriever.aretrieve("q")
    assert _texts(out)[1] == "bridge"
    assert embed.calls.queries == ["q"] and not embed.calls.documents
    searches = _searches(seen)
    assert len(searches) == 1 and _binary_vectors(searches[0]) and not _reads_by_id(seen)


def test_drrag_pipeline_embeds_only_its_queries(index: VectorStoreIndex) -> None:
    embed: CountingEmbedding = index._embed_model  # type: ignore[assignment]
    seen = _statements(index.vector_store)
    retriever = DRRAGRetriever(index, k=4, fetch_k=8, mode="qdc", k1=2)
    result, nodes = retriever.run_pipeline("q")
    assert len(nodes) == 4 and result.cost.searches >= 2
    assert len(embed.calls.queries) == result.cost.searches  # one embedding per search
    assert not embed.calls.documents
    assert len(_searches(seen)) == result.cost.searches and not _reads_by_id(seen)
    assert set(_texts(nodes)) & DUPS


async def test_drrag_pipeline_async(aindex: VectorStoreIndex) -> None:
    embed: CountingEmbedding = aindex._embed_model  # type: ignore[assignment]
    seen = _statements(aindex.vector_store)
    retriever = DRRAGRetriever(aindex, k=4, fetch_k=8, mode="qdc", k1=2)
    result, nodes = await retriever.arun_pipeline("q")
    assert len(nodes) == 4 and len(embed.calls.queries) == result.cost.searches
    assert not embed.calls.documents
    assert len(_searches(seen)) == result.cost.searches and not _reads_by_id(seen)


def test_missing_node_id_index_is_reported_once(index: VectorStoreIndex,
                                                caplog: pytest.LogCaptureFixture,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """PGVectorStore makes no index on node_id: the by-id read would scan the table."""
    import logging

    from sqlalchemy import text

    from llamaindex_diverse import _stored

    monkeypatch.setattr(_stored, "_NODE_ID_INDEX", {})
    embed = index._embed_model
    pp = DiverseNodePostprocessor(top_n=2, embed_model=embed, vector_store=index.vector_store)
    base = index.as_retriever(similarity_top_k=10)
    with caplog.at_level(logging.WARNING, logger="llamaindex_diverse"):
        pp.postprocess_nodes(base.retrieve("q"), query_str="q")
        # other candidates: read again, not checked again
        pp.postprocess_nodes(base.retrieve("dup a"), query_str="dup a")
    found = [r for r in caplog.records if "no index on node_id" in r.message]
    assert len(found) == 1 and "CREATE INDEX ON" in found[0].message
    store = index.vector_store
    name = store._table_class.__tablename__
    with store._session() as s, s.begin():
        s.execute(text(f"CREATE INDEX IF NOT EXISTS {name}_node_id ON {name} (node_id)"))
    monkeypatch.setattr(_stored, "_NODE_ID_INDEX", {})
    clear_model_caches()  # the next query reads its candidates again
    caplog.clear()
    pp = DiverseNodePostprocessor(top_n=2, embed_model=embed, vector_store=index.vector_store)
    with caplog.at_level(logging.WARNING, logger="llamaindex_diverse"):
        pp.postprocess_nodes(base.retrieve("dup b"), query_str="dup b")
    assert not [r for r in caplog.records if "no index on node_id" in r.message]
    assert _stored._NODE_ID_INDEX  # the table was checked (and found indexed)


def test_drrag_sync_runs_repeat(index: VectorStoreIndex) -> None:
    """Each sync run() is a fresh event loop; PGVectorStore's async (asyncpg) pool belongs to
    the first: later runs search through the sync engine in a worker thread. Used to fail on
    the second run with 'attached to a different loop'."""
    retriever = DRRAGRetriever(index, k=4, fetch_k=8, mode="qdc", k1=2)
    first = [n.node.node_id for n in retriever.retrieve("q")]
    for _ in range(3):
        assert [n.node.node_id for n in retriever.retrieve("q")] == first


# ----------------------------------------------------------------------------- rows, not nodes
# With nobody observing the events, DiverseRetriever selects on the search's rows and stored
# vectors and builds nodes for the chosen rows only; the result must be what the node path
# (every candidate a node, then the postprocessor) returns.

def _plain_node(i: int, text: str) -> TextNode:
    """No metadata; sources shared by pairs of documents; every third has none."""
    rel = {} if i % 3 == 0 else {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=f"doc-{i // 2}")}
    return TextNode(text=text, id_=f"p{i}", relationships=rel)


@pytest.fixture(scope="module")
def plain_table(pg_socket_dir: str) -> Iterator[str]:
    name = f"p{uuid.uuid4().hex[:12]}"
    store = _store(pg_socket_dir, name)
    VectorStoreIndex([_plain_node(i, t) for i, t in enumerate(CORPUS)], embed_model=CountingEmbedding(),
                     storage_context=StorageContext.from_defaults(vector_store=store))
    yield name
    store._engine.dispose()


@pytest.fixture(params=["plain", "with metadata"])
def any_index(request: pytest.FixtureRequest, pg_socket_dir: str, table: str,
              plain_table: str) -> Iterator[VectorStoreIndex]:
    store = _store(pg_socket_dir, plain_table if request.param == "plain" else table)
    yield VectorStoreIndex.from_vector_store(store, embed_model=CountingEmbedding())
    if store._engine is not None:
        store._engine.dispose()


def _built_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many rows each call of the store's node building gets."""
    from llama_index.vector_stores.postgres import PGVectorStore

    sizes: list[int] = []
    build = PGVectorStore._db_rows_to_query_result

    def counting(self: Any, rows: list[Any]) -> Any:
        sizes.append(len(rows))
        return build(self, rows)

    monkeypatch.setattr(PGVectorStore, "_db_rows_to_query_result", counting)
    return sizes


def _as_compared(nodes: list[NodeWithScore]) -> list[tuple[Any, ...]]:
    return [(type(n.node), n.node.node_id, n.score, n.node.get_content(), n.node.metadata,
             n.node.excluded_embed_metadata_keys, n.node.excluded_llm_metadata_keys,
             n.node.relationships, n.node.embedding) for n in nodes]


def _node_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(DiverseRetriever, "_row_searcher", lambda self: None)


METHODS = [("gmmr", {"lambda_mult": 0.5}, False), ("mmr", {"lambda_mult": 0.3}, True),
           ("learned", {}, False), ("adaptive", {}, False)]


@pytest.mark.parametrize(("method", "params", "use_scores"), METHODS, ids=[m[0] for m in METHODS])
def test_rows_path_returns_what_the_node_path_returns(any_index: VectorStoreIndex, method: str,
                                                      params: dict[str, Any], use_scores: bool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def run() -> list[list[tuple[Any, ...]]]:
        pp = DiverseNodePostprocessor(top_n=4, method=method, method_params=params,
                                      use_node_scores=use_scores, embed_model=any_index._embed_model)
        retriever = DiverseRetriever(any_index.as_retriever(similarity_top_k=12), pp)
        return [_as_compared(retriever.retrieve(q)) for q in ("q", "bridge", "dup b")]

    sizes = _built_rows(monkeypatch)
    rows = run()
    plain = any_index.vector_store.table_name.startswith("p")
    if plain or method in ("gmmr", "mmr"):  # text-reading methods need metadata-free rows
        assert sizes == [4, 4, 4]  # only the chosen rows became nodes
    else:
        assert sizes == [12, 12, 12]
    sizes.clear()
    _node_path(monkeypatch)
    assert run() == rows
    assert sizes == [12, 12, 12]
    assert rows[0][0][4]["selection_method"] == method and rows[0][3][4]["selection_rank"] == 3


@pytest.mark.parametrize("method", ["gmmr", "learned"])
async def test_async_rows_path_returns_what_the_node_path_returns(
        pg_socket_dir: str, plain_table: str, method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(pg_socket_dir, plain_table)
    index = VectorStoreIndex.from_vector_store(store, embed_model=CountingEmbedding())
    embed: CountingEmbedding = index._embed_model  # type: ignore[assignment]
    seen = _statements(store)
    sizes = _built_rows(monkeypatch)
    retriever = DiverseRetriever.from_index(index, top_n=3, fetch_k=10, method=method)
    rows = _as_compared(await retriever.aretrieve("q"))
    assert sizes == [3] and embed.calls.queries == ["q"] and not embed.calls.documents
    assert len(_searches(seen)) == 1 and _binary_vectors(_searches(seen)[0]) and not _reads_by_id(seen)
    _node_path(monkeypatch)
    assert _as_compared(await retriever.aretrieve("q")) == rows
    assert _as_compared(retriever.retrieve("q")) == rows
    await store.close()


def test_observed_retrieval_takes_the_node_path(index: VectorStoreIndex,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A callback handler or an instrumentation handler sees the base retriever's events, as before."""
    from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler

    sizes = _built_rows(monkeypatch)
    debug = LlamaDebugHandler()
    base = index.as_retriever(similarity_top_k=10)
    base.callback_manager = CallbackManager([debug])
    out = DiverseRetriever(base, top_n=2, method="gmmr", embed_model=index._embed_model).retrieve("q")
    assert sizes == [10] and len(out) == 2
    retrieved = debug.get_event_pairs(CBEventType.RETRIEVE)
    assert any(len(end.payload["nodes"]) == 10 for _, end in retrieved)  # the base retriever's event

    class Seen(BaseEventHandler):
        names: list[str] = []

        def handle(self, event: Any, **kwargs: Any) -> None:
            self.names.append(event.class_name())

    handler = Seen()
    root = get_dispatcher("root")
    root.add_event_handler(handler)
    try:
        sizes.clear()
        DiverseRetriever.from_index(index, top_n=2, fetch_k=10).retrieve("q")
    finally:
        root.event_handlers.remove(handler)
    assert sizes == [10] and handler.names.count("RetrievalEndEvent") == 2  # inner and outer
    sizes.clear()
    DiverseRetriever.from_index(index, top_n=2, fetch_k=10).retrieve("q")
    assert sizes == [2]  # nobody listening: the rows path


# ----------------------------------------------------------------------------- a pipeline's source
# LlamaIndexSource (what DR-RAG and the other pipelines search) runs the stand-in's search: one
# statement per search returns the candidates and their vectors.

def _as_candidates(found: Any) -> tuple[Any, ...]:
    return (found.query, found.texts, found.ids, found.embeddings.dtype, found.embeddings.tobytes(),
            found.query_embedding.tobytes(), found.relevance.tobytes(), found.positions,
            _as_compared(list(found.payloads)))


@pytest.mark.parametrize("k", [None, 5])
def test_source_reads_the_vectors_with_the_search(any_index: VectorStoreIndex, k: int | None) -> None:
    from llamaindex_diverse.sources import LlamaIndexSource

    embed: CountingEmbedding = any_index._embed_model  # type: ignore[assignment]
    seen = _statements(any_index.vector_store)
    source = LlamaIndexSource(any_index, fetch_k=12)
    found = [source.search(q, k) for q in ("q", "bridge", "dup b")]
    assert [len(c) for c in found] == [12 if k is None else 5] * 3
    assert len(_searches(seen)) == 3 and not _reads_by_id(seen) and not embed.calls.documents


async def test_async_source_returns_what_the_sync_source_returns(pg_socket_dir: str, plain_table: str) -> None:
    from llamaindex_diverse.sources import LlamaIndexSource

    store = _store(pg_socket_dir, plain_table)
    index = VectorStoreIndex.from_vector_store(store, embed_model=CountingEmbedding())
    source = LlamaIndexSource(index, fetch_k=10)
    found = _as_candidates(await source.asearch("q"))
    assert _as_candidates(source.search("q")) == found
    await store.close()


def test_sync_runs_search_on_the_callers_thread(pg_socket_dir: str, plain_table: str) -> None:
    """A sync run() whose loop cannot use the store's async pool (every run after the first) sends
    its searches through the sync engine from the caller's own thread (no worker-thread hop per
    search), and finds what the first run found."""
    from sqlalchemy import event

    store = _store(pg_socket_dir, plain_table)
    index = VectorStoreIndex.from_vector_store(store, embed_model=CountingEmbedding())
    retriever = DRRAGRetriever(index, k=4, fetch_k=8, mode="cfs", k1=2, fill=True)
    first = [n.node.node_id for n in retriever.retrieve("q")]  # this loop owns the async pool now
    threads: list[int] = []

    def _record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "distance" in statement and "LIMIT" in statement:
            threads.append(threading.get_ident())

    event.listen(store._engine, "before_cursor_execute", _record)
    for _ in range(2):
        assert [n.node.node_id for n in retriever.retrieve("q")] == first
    assert threads == [threading.get_ident()] * 6  # three searches per run
    store._engine.dispose()
