"""DiverseRetriever: known answers, metadata, per-call options, caching, async, callbacks, errors."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import numpy as np
import pytest
from diverse_core import select
from diverse_core.errors import (
    DimensionMismatchError,
    InvalidParameterError,
    UnknownMethodError,
)
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.callbacks.manager import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from lc_fakes import CORPUS, DIVERSE, DUPS, VECTORS, TableEmbeddings
from pydantic import ValidationError

from langchain_diverse import SELECTION_METADATA_KEYS, DiverseRetriever, EmptyDocumentError


class ListRetriever(BaseRetriever):
    """Returns the same Document objects every time (to check they are never mutated)."""

    docs: list[Document]
    seen_k: list[int] = []

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int = 4
    ) -> list[Document]:
        self.seen_k.append(k)
        return self.docs[:k]


def names(docs: list[Document]) -> list[str]:
    return [d.page_content for d in docs]


def test_topk_returns_near_duplicates(store: InMemoryVectorStore) -> None:
    docs = DiverseRetriever(vectorstore=store, k=2, method="topk").invoke("q")
    assert set(names(docs)) <= DUPS


@pytest.mark.parametrize(("method", "params"), DIVERSE)
def test_diverse_methods_return_the_bridge(
    store: InMemoryVectorStore, method: str, params: dict[str, Any]
) -> None:
    docs = DiverseRetriever(vectorstore=store, k=2, method=method, method_params=params).invoke("q")
    assert names(docs)[0] in DUPS
    assert names(docs)[1] == "bridge"


def test_metadata_matches_core_selection(store: InMemoryVectorStore) -> None:
    retriever = DiverseRetriever(vectorstore=store, k=3, fetch_k=5, method="gmmr",
                                 method_params={"lambda_mult": 0.4})
    docs = retriever.invoke("q")
    assert [d.metadata["selection_rank"] for d in docs] == [0, 1, 2]
    for d in docs:
        assert set(SELECTION_METADATA_KEYS) <= set(d.metadata)
        assert d.metadata["selection_method"] == "gmmr"
        assert d.metadata["selection_params"] == {"lambda_mult": 0.4}
        assert d.metadata["name"] == d.page_content  # original metadata kept
        q, v = np.array(VECTORS["q"]), np.array(VECTORS[d.page_content])
        cosine = float(q @ v / np.linalg.norm(q) / np.linalg.norm(v))
        assert d.metadata["relevance_score"] == pytest.approx(cosine)
    json.dumps([d.metadata for d in docs])
    # Same objective values as the core on the same vectors (candidates in the store's order).
    fetched = store.similarity_search_by_vector(VECTORS["q"], k=5)
    sel = select("gmmr", VECTORS["q"], [VECTORS[d.page_content] for d in fetched], 3,
                 lambda_mult=0.4)
    assert names(docs) == [fetched[i].page_content for i in sel.indices]
    assert [d.metadata["selection_score"] for d in docs] == pytest.approx(sel.scores.tolist())


def test_selection_params_fill_defaults_and_are_json(store: InMemoryVectorStore) -> None:
    docs = DiverseRetriever(vectorstore=store, k=2, method="dartboard").invoke("q")
    params = docs[0].metadata["selection_params"]
    assert params == {"sigma": 0.1, "variant": "cosine", "scorer": None, "triage_k": 100}
    json.dumps(params)


def test_input_documents_are_not_mutated(table_embeddings: TableEmbeddings,
                                         corpus_docs: list[Document]) -> None:
    before = [d.model_copy(deep=True) for d in corpus_docs]
    base = ListRetriever(docs=corpus_docs)
    out = DiverseRetriever(base_retriever=base, embeddings=table_embeddings, k=2).invoke("q")
    assert corpus_docs == before
    assert all("selection_rank" not in d.metadata for d in corpus_docs)
    assert all(o is not d for o in out for d in corpus_docs)
    out[0].metadata["nested"]["y"] = 2  # shallow copy of values is documented; keys are new
    assert "selection_rank" not in corpus_docs[0].metadata


def test_k_kwarg_and_per_call_options(store: InMemoryVectorStore) -> None:
    retriever = DiverseRetriever(vectorstore=store, k=2, fetch_k=5, method="gmmr")
    assert len(retriever.invoke("q", k=1)) == 1
    assert len(retriever.invoke("q", k=4)) == 4
    assert set(names(retriever.invoke("q", method="topk"))) <= DUPS
    # lambda_mult=1 is pure relevance: without the near-duplicate guard the bridge disappears.
    plain = retriever.invoke("q", method_params={"lambda_mult": 1.0, "duplicate_threshold": None})
    assert set(names(plain)) <= DUPS
    assert plain[0].metadata["selection_params"] == {"lambda_mult": 1.0}
    # With it (the faces' default) the second copy gives way to the bridge.
    guarded = retriever.invoke("q", method_params={"lambda_mult": 1.0})
    assert "bridge" in names(guarded) and len(set(names(guarded)) & DUPS) == 1
    # fetch_k=3 leaves only duplicates as candidates.
    assert set(names(retriever.invoke("q", fetch_k=3))) <= DUPS
    # The configured fields are unchanged by per-call options.
    assert "bridge" in names(retriever.invoke("q"))


def test_per_call_errors(store: InMemoryVectorStore) -> None:
    retriever = DiverseRetriever(vectorstore=store, k=2, fetch_k=4)
    with pytest.raises(InvalidParameterError, match=r"k=5, fetch_k=4"):
        retriever.invoke("q", k=5)
    with pytest.raises(InvalidParameterError, match="unknown keyword"):
        retriever.invoke("q", lambda_mult=0.3)
    with pytest.raises(InvalidParameterError, match="lambda_mult"):
        retriever.invoke("q", method_params={"lambda_mult": 2.0})
    with pytest.raises(InvalidParameterError, match="sigma"):
        retriever.invoke("q", method_params={"sigma": 0.2})  # gmmr has no sigma
    with pytest.raises(UnknownMethodError):
        retriever.invoke("q", method="nope")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"k": 5, "fetch_k": 3}, InvalidParameterError, "k must not exceed fetch_k"),
        ({"k": 0}, InvalidParameterError, "k must be a positive integer"),
        ({"fetch_k": -1}, InvalidParameterError, "fetch_k"),
        ({"method": "mmmr"}, UnknownMethodError, "mmmr"),
        ({"method": "mmr", "method_params": {"lamda": 0.5}}, InvalidParameterError, "lamda"),
        ({"method": "vendi", "method_params": {"s": 1.5}}, InvalidParameterError, "s must be in"),
        ({"method": "dartboard", "method_params": {"scorer": lambda pairs: [0.0] * len(pairs)}},
         InvalidParameterError, "scorer"),
    ],
)
def test_construction_errors(store: InMemoryVectorStore, kwargs: dict[str, Any],
                             error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        DiverseRetriever(vectorstore=store, **kwargs)


def test_source_errors(store: InMemoryVectorStore, table_embeddings: TableEmbeddings) -> None:
    base = ListRetriever(docs=[])
    with pytest.raises(InvalidParameterError, match="exactly one"):
        DiverseRetriever()
    with pytest.raises(InvalidParameterError, match="exactly one"):
        DiverseRetriever(vectorstore=store, base_retriever=base, embeddings=table_embeddings)
    with pytest.raises(InvalidParameterError, match="needs embeddings"):
        DiverseRetriever(base_retriever=base)
    with pytest.raises(ValidationError, match="lambda_mult"):
        DiverseRetriever(vectorstore=store, lambda_mult=0.3)  # typo'd field: rejected, not ignored


def test_fewer_candidates_than_k(table_embeddings: TableEmbeddings) -> None:
    small = InMemoryVectorStore(table_embeddings)
    small.add_texts(["dup a", "bridge"])
    docs = DiverseRetriever(vectorstore=small, k=4, fetch_k=10).invoke("q")
    assert sorted(names(docs)) == ["bridge", "dup a"]
    empty = InMemoryVectorStore(table_embeddings)
    assert DiverseRetriever(vectorstore=empty, k=4).invoke("q") == []


def test_empty_page_content_is_left_out_and_all_blank_is_an_error(table_embeddings: TableEmbeddings) -> None:
    docs = [Document(page_content="dup a"), Document(page_content="  ", id="blank")]
    retriever = DiverseRetriever(base_retriever=ListRetriever(docs=docs), embeddings=table_embeddings)
    out = retriever.invoke("q")
    assert [d.page_content for d in out] == ["dup a"]
    assert out[0].metadata["selection_params"]["blank_documents"] == [1]
    only_blank = DiverseRetriever(base_retriever=ListRetriever(docs=docs[1:]), embeddings=table_embeddings)
    with pytest.raises(EmptyDocumentError, match="document 0 .*'blank'"):
        only_blank.invoke("q")


def test_dimension_mismatch_is_an_error(corpus_docs: list[Document]) -> None:
    emb = TableEmbeddings(query_dim=3)
    retriever = DiverseRetriever(base_retriever=ListRetriever(docs=corpus_docs), embeddings=emb)
    with pytest.raises(DimensionMismatchError, match="same embeddings model"):
        retriever.invoke("q")


def test_stored_vectors_and_cache_avoid_re_embedding(store: InMemoryVectorStore,
                                                     table_embeddings: TableEmbeddings) -> None:
    DiverseRetriever(vectorstore=store, k=2).invoke("q")
    assert table_embeddings.called("embed_documents") == []  # read from the store
    assert table_embeddings.called("embed_query") == [["q"]]
    table_embeddings.calls.clear()
    DiverseRetriever(vectorstore=store, k=3).invoke("q")  # another retriever, same process cache
    assert table_embeddings.calls == []


def test_cache_embeds_each_text_once_in_one_batch(store: InMemoryVectorStore,
                                                  table_embeddings: TableEmbeddings) -> None:
    retriever = DiverseRetriever(vectorstore=store, k=2, fetch_k=5, use_stored_vectors=False)
    first = retriever.invoke("q")
    batches = table_embeddings.called("embed_documents")
    assert len(batches) == 1 and sorted(batches[0]) == sorted(CORPUS)
    assert retriever.invoke("q") == first
    assert len(table_embeddings.called("embed_documents")) == 1


def test_other_embeddings_than_the_store_are_used_for_candidates(
    store: InMemoryVectorStore,
) -> None:
    other = TableEmbeddings()
    DiverseRetriever(vectorstore=store, embeddings=other, k=2).invoke("q")
    assert len(other.called("embed_documents")) == 1  # stored vectors belong to another model


def test_wrapped_vectorstore_retriever_gets_fetch_k(store: InMemoryVectorStore,
                                                   table_embeddings: TableEmbeddings) -> None:
    base = store.as_retriever()  # its own default k is 4
    retriever = DiverseRetriever(base_retriever=base, embeddings=table_embeddings, k=5, fetch_k=5,
                                 method="topk")
    assert len(retriever.invoke("q")) == 5
    base_list = ListRetriever(docs=[Document(page_content=t) for t in CORPUS])
    DiverseRetriever(base_retriever=base_list, embeddings=table_embeddings, k=2,
                     fetch_k=3).invoke("q")
    assert base_list.seen_k == [3]


async def test_async_matches_sync_and_awaits_async_embeddings(store: InMemoryVectorStore,
                                                              table_embeddings: TableEmbeddings
                                                              ) -> None:
    retriever = DiverseRetriever(vectorstore=store, k=3, use_stored_vectors=False)
    adocs = await retriever.ainvoke("q")
    assert [k for k, _ in table_embeddings.calls] == ["aembed_query", "aembed_documents"]
    assert adocs == retriever.invoke("q")
    assert len(await retriever.ainvoke("q", k=1)) == 1


async def test_async_base_retriever(table_embeddings: TableEmbeddings,
                                    corpus_docs: list[Document]) -> None:
    base = ListRetriever(docs=corpus_docs)
    retriever = DiverseRetriever(base_retriever=base, embeddings=table_embeddings, k=2,
                                 fetch_k=5, method="mmr")
    assert names(await retriever.ainvoke("q"))[1] == "bridge"
    assert base.seen_k == [5]  # fetch_k reached a retriever whose async path takes no k
    with pytest.raises(InvalidParameterError):
        await retriever.ainvoke("q", k=30)


class Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, UUID, UUID | None]] = []

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID,
                           parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self.events.append(("start", run_id, parent_run_id))

    def on_retriever_end(self, documents: Any, *, run_id: UUID,
                         parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self.events.append(("end", run_id, parent_run_id))


@pytest.mark.parametrize("use_async", [False, True])
async def test_callbacks_see_outer_and_child_runs(table_embeddings: TableEmbeddings,
                                                  corpus_docs: list[Document],
                                                  use_async: bool) -> None:
    recorder = Recorder()
    retriever = DiverseRetriever(base_retriever=ListRetriever(docs=corpus_docs),
                                 embeddings=table_embeddings, k=2)
    config = {"callbacks": [recorder]}
    if use_async:
        await retriever.ainvoke("q", config=config)
    else:
        retriever.invoke("q", config=config)
    kinds = [e[0] for e in recorder.events]
    assert kinds == ["start", "start", "end", "end"]
    outer, inner = recorder.events[0][1], recorder.events[1][1]
    assert recorder.events[0][2] is None
    assert recorder.events[1][2] == outer  # the wrapped retriever ran as a child
    assert recorder.events[2][1] == inner and recorder.events[3][1] == outer


def test_cover_through_the_retriever(store: InMemoryVectorStore) -> None:
    """Cover (facility location) may keep a second copy of a dense cluster (it covers mass); the
    faces' near-duplicate guard takes one copy and lists the others it left out."""
    docs = DiverseRetriever(vectorstore=store, k=3, method="cover",
                            method_params={"diversity": 0.9}).invoke("q")
    assert len(docs) == 3 and len(set(names(docs)) & DUPS) == 1
    assert docs[0].metadata["selection_params"]["near_duplicates"]
    assert {d.metadata["selection_method"] for d in docs} == {"cover"}
