"""LangChain idioms: as_retriever-style search_kwargs, the one-line swap helper, a selection
Runnable for LCEL, and fetch_k reaching a wrapped retriever (issue 19 item 2)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest
from diverse_core.errors import InvalidParameterError
from langchain_core.callbacks.manager import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore
from lc_fakes import CORPUS, DUPS, TableEmbeddings

from langchain_diverse import DiverseRetriever, DiverseSelector, as_diverse_retriever


def names(docs: list[Document]) -> list[str]:
    return [d.page_content for d in docs]


# -- search_kwargs as as_retriever(search_type="mmr") users write them ---------------------
def test_mmr_style_search_kwargs_map_onto_the_fields(store: InMemoryVectorStore) -> None:
    retriever = DiverseRetriever(vectorstore=store, method="mmr",
                                 search_kwargs={"k": 2, "fetch_k": 5, "lambda_mult": 0.5})
    assert (retriever.k, retriever.fetch_k) == (2, 5)
    assert retriever.method_params == {"lambda_mult": 0.5}
    assert retriever.search_kwargs == {}
    docs = retriever.invoke("q")  # before: TypeError at query time (k passed twice)
    assert names(docs)[1] == "bridge"
    assert len(retriever.invoke("q", k=1)) == 1


def test_filter_stays_a_store_argument(store: InMemoryVectorStore) -> None:
    retriever = DiverseRetriever(
        vectorstore=store, search_kwargs={"k": 2, "filter": lambda d: d.page_content in DUPS})
    assert retriever.k == 2 and set(retriever.search_kwargs) == {"filter"}
    assert set(names(retriever.invoke("q"))) <= DUPS


@pytest.mark.parametrize(
    ("fields", "search_kwargs", "match"),
    [({"k": 2}, {"k": 3}, r"k given twice .*k=2.*'k': 3"),
     ({"fetch_k": 10}, {"fetch_k": 5}, "fetch_k given twice"),
     ({"method": "mmr", "method_params": {"lambda_mult": 0.2}}, {"lambda_mult": 0.5},
      "lambda_mult given twice"),
     ({"method": "dartboard"}, {"lambda_mult": 0.5}, "lambda_mult"),
     ({}, {"k": 6, "fetch_k": 5}, "k must not exceed fetch_k"),
     ({}, {"score_threshold": 1.5}, "score_threshold"),
     ({}, "k=3", "search_kwargs must be a dict")],
)
def test_conflicting_search_kwargs_are_rejected_at_construction(
    store: InMemoryVectorStore, fields: dict[str, Any], search_kwargs: Any, match: str
) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        DiverseRetriever(vectorstore=store, search_kwargs=search_kwargs, **fields)


def test_same_value_given_both_ways_is_fine(store: InMemoryVectorStore) -> None:
    assert DiverseRetriever(vectorstore=store, k=3, search_kwargs={"k": 3}).k == 3


def test_score_threshold_drops_weak_candidates(store: InMemoryVectorStore) -> None:
    docs = DiverseRetriever(vectorstore=store, k=4, fetch_k=5, method="topk",
                            search_kwargs={"score_threshold": 0.8}).invoke("q")
    assert set(names(docs)) == DUPS  # the bridge (cos 0.70) and the noise fall below 0.8
    assert all(d.metadata["relevance_score"] >= 0.8 for d in docs)
    none = DiverseRetriever(vectorstore=store, k=2, score_threshold=0.99).invoke("q")
    assert none == []


# -- the one-line swap -------------------------------------------------------------------
def test_as_diverse_retriever_from_a_store(store: InMemoryVectorStore) -> None:
    retriever = as_diverse_retriever(store, search_type="gmmr",
                                     search_kwargs={"k": 2, "fetch_k": 5, "lambda_mult": 0.5})
    assert isinstance(retriever, DiverseRetriever) and retriever.method == "gmmr"
    assert names(retriever.invoke("q"))[1] == "bridge"
    assert as_diverse_retriever(store, search_type="similarity").method == "topk"


def test_as_diverse_retriever_unwraps_as_retriever(store: InMemoryVectorStore) -> None:
    before = store.as_retriever(search_type="mmr",
                                search_kwargs={"k": 2, "fetch_k": 5, "lambda_mult": 0.5})
    after = as_diverse_retriever(before)
    assert (after.method, after.k, after.fetch_k) == ("mmr", 2, 5)
    assert after.method_params == {"lambda_mult": 0.5}
    assert after.vectorstore is store
    assert names(after.invoke("q")) == names(before.invoke("q"))  # same MMR, same answer here


def test_as_diverse_retriever_errors(store: InMemoryVectorStore) -> None:
    with pytest.raises(InvalidParameterError, match="VectorStore"):
        as_diverse_retriever(RunnableLambda(lambda x: x))  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="search_type or method"):
        as_diverse_retriever(store, search_type="mmr", method="gmmr")


# -- selection alone, as a Runnable --------------------------------------------------------
def _candidates() -> list[Document]:
    return [Document(page_content=t, metadata={"i": i}) for i, t in enumerate(CORPUS)]


def test_selector_diversifies_documents_in_hand(table_embeddings: TableEmbeddings) -> None:
    selector = DiverseSelector(embeddings=table_embeddings, k=2, method="mmr",
                               method_params={"lambda_mult": 0.5})
    docs = selector.invoke({"query": "q", "documents": _candidates()})
    assert names(docs)[0] in DUPS and names(docs)[1] == "bridge"
    assert docs[1].metadata["selection_rank"] == 1 and docs[1].metadata["i"] == 3


async def test_selector_in_an_lcel_pipeline(table_embeddings: TableEmbeddings) -> None:
    selector = DiverseSelector(embeddings=table_embeddings, k=2, query_key="question",
                               documents_key="context")
    chain = {"question": RunnableLambda(lambda x: x),
             "context": RunnableLambda(lambda x: _candidates())} | selector
    sync = chain.invoke("q")
    assert names(sync) == names(await chain.ainvoke("q"))
    assert [len(b) for b in chain.batch(["q", "q"])] == [2, 2]


@pytest.mark.parametrize(
    ("value", "match"),
    [("q", "takes a dict"), ({"query": "q"}, "lacks"), ({"query": 1, "documents": []}, "query"),
     ({"query": "q", "documents": "text"}, "list of Documents")],
)
def test_selector_input_errors(table_embeddings: TableEmbeddings, value: Any, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        DiverseSelector(embeddings=table_embeddings).invoke(value)


# -- fetch_k reaches a wrapped retriever ---------------------------------------------------
def _bm25_corpus() -> tuple[list[str], TableEmbeddings]:
    rng = np.random.default_rng(0)
    texts = [f"coffee fact number {i} about caffeine" for i in range(40)]
    table = {t: rng.normal(size=4).tolist() for t in texts}
    table["caffeine"] = [1.0, 0.0, 0.0, 0.0]
    return texts, TableEmbeddings(table)


def test_readme_bm25_example_returns_k_of_fetch_k() -> None:
    bm25_module = pytest.importorskip("langchain_community.retrievers",
                                      reason="langchain-community is not installed")
    pytest.importorskip("rank_bm25", reason="rank-bm25 is not installed")
    texts, emb = _bm25_corpus()
    bm25 = bm25_module.BM25Retriever.from_texts(texts)  # its own k: 4
    retriever = DiverseRetriever(base_retriever=bm25, embeddings=emb, k=4, fetch_k=30)
    docs = retriever.invoke("caffeine")
    assert len(docs) == 4
    (batch,) = emb.called("embed_documents")
    assert len(batch) == 30  # chosen from fetch_k candidates, not from BM25's own 4
    assert bm25.k == 4  # the caller's retriever is not changed
    assert len(retriever.invoke("caffeine", fetch_k=35)) == 4
    assert len(emb.called("embed_documents")[-1]) == 5  # 5 new texts: 35 candidates


async def test_bm25_async_gets_fetch_k_too() -> None:
    bm25_module = pytest.importorskip("langchain_community.retrievers")
    pytest.importorskip("rank_bm25")
    texts, emb = _bm25_corpus()
    bm25 = bm25_module.BM25Retriever.from_texts(texts)
    await DiverseRetriever(base_retriever=bm25, embeddings=emb, k=4, fetch_k=20).ainvoke("caffeine")
    assert len(emb.called("aembed_documents")[0]) == 20


class FixedRetriever(BaseRetriever):
    """Takes no k and has no k field: fetch_k cannot reach it."""

    docs: list[Document]

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return self.docs


def test_retriever_that_cannot_take_fetch_k_is_warned_about(
    table_embeddings: TableEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    base = FixedRetriever(docs=_candidates()[:3])
    with caplog.at_level(logging.WARNING, logger="langchain_diverse"):
        retriever = DiverseRetriever(base_retriever=base, embeddings=table_embeddings, k=2,
                                     fetch_k=20)
    (record,) = [r for r in caplog.records if "fetch_k=20 is ignored" in r.message]
    assert "FixedRetriever" in record.message
    assert len(retriever.invoke("q")) == 2
