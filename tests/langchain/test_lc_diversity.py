"""The shared diversity knob in the LangChain faces (issue 36 item 4)."""

from __future__ import annotations

import pytest
from diverse_core.errors import ConflictingParametersError, InvalidParameterError
from diverse_core.registry import get_method
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from lc_fakes import TableEmbeddings

from langchain_diverse import (
    DiverseCompressor,
    DiverseRetriever,
    DiverseSelector,
    as_diverse_retriever,
)


def _ids(docs: list[Document]) -> list[str]:
    return [d.page_content for d in docs]


@pytest.mark.parametrize("method", ["mmr", "gmmr", "dartboard", "vendi", "gist", "cover"])
def test_diversity_keyword_and_search_kwargs_equal_the_native_parameter(
    store: InMemoryVectorStore, method: str
) -> None:
    kw = DiverseRetriever(vectorstore=store, method=method, k=3, fetch_k=8, diversity=0.75)
    sk = DiverseRetriever(vectorstore=store, method=method, search_kwargs={"k": 3, "fetch_k": 8, "diversity": 0.75})
    helper = as_diverse_retriever(store, search_type=method, search_kwargs={"k": 3, "fetch_k": 8, "diversity": 0.75})
    docs = kw.invoke("q")
    assert _ids(docs) == _ids(sk.invoke("q")) == _ids(helper.invoke("q"))
    native = get_method(method).diversity_params({"diversity": 0.75})
    assert set(native) == {get_method(method).param}
    same = DiverseRetriever(vectorstore=store, method=method, k=3, fetch_k=8, method_params=native)
    assert _ids(same.invoke("q")) == _ids(docs)
    per_call = DiverseRetriever(vectorstore=store, method=method, k=3, fetch_k=8)
    assert _ids(per_call.invoke("q", method_params={"diversity": 0.75})) == _ids(docs)


def test_conflicts_are_typed(store: InMemoryVectorStore) -> None:
    with pytest.raises(ConflictingParametersError):
        DiverseRetriever(vectorstore=store, method="gmmr", diversity=0.2, method_params={"diversity": 0.3})
    with pytest.raises(ConflictingParametersError, match="lambda_mult"):
        DiverseRetriever(vectorstore=store, method="gmmr", diversity=0.2, method_params={"lambda_mult": 0.5})
    with pytest.raises(InvalidParameterError, match="diversity given twice"):
        DiverseRetriever(vectorstore=store, method="gmmr", diversity=0.2, search_kwargs={"diversity": 0.4})
    with pytest.raises(InvalidParameterError, match="diversity"):
        DiverseRetriever(vectorstore=store, method="gmmr", diversity=1.5)
    with pytest.raises(InvalidParameterError, match="diversity"):
        DiverseRetriever(vectorstore=store, method="topk", diversity=1.5)
    # topk has no trade-off: any diversity in [0, 1] gives the top-k
    topk = DiverseRetriever(vectorstore=store, method="topk", k=3, fetch_k=8)
    assert _ids(DiverseRetriever(vectorstore=store, method="topk", k=3, fetch_k=8, diversity=0.5).invoke("q")) == _ids(
        topk.invoke("q"))


def test_compressor_and_selector_take_diversity(table_embeddings: TableEmbeddings, corpus_docs: list[Document]) -> None:
    a = DiverseCompressor(embeddings=table_embeddings, k=3, method="gmmr", diversity=1.0)
    b = DiverseCompressor(embeddings=table_embeddings, k=3, method="gmmr", method_params={"lambda_mult": 0.0})
    assert _ids(a.compress_documents(corpus_docs, "q")) == _ids(b.compress_documents(corpus_docs, "q"))
    sel = DiverseSelector(embeddings=table_embeddings, k=3, method="gmmr", diversity=1.0)
    assert _ids(sel.invoke({"query": "q", "documents": corpus_docs})) == _ids(b.compress_documents(corpus_docs, "q"))


def test_per_call_diversity_replaces_the_configured_trade_off(store: InMemoryVectorStore) -> None:
    retriever = DiverseRetriever(vectorstore=store, method="gmmr", k=3, fetch_k=8, method_params={"lambda_mult": 0.9})
    fixed = DiverseRetriever(vectorstore=store, method="gmmr", k=3, fetch_k=8, method_params={"lambda_mult": 0.0})
    assert _ids(retriever.invoke("q", diversity=1.0)) == _ids(fixed.invoke("q"))
    assert retriever.invoke("q", diversity=1.0)[0].metadata["selection_params"]["lambda_mult"] == 0.0
    with pytest.raises(ConflictingParametersError):
        retriever.invoke("q", diversity=1.0, method_params={"lambda_mult": 0.5})


def test_a_setting_given_twice_is_one_typed_error_with_one_message(store: InMemoryVectorStore) -> None:
    # diversity= with method_params, search_kwargs with fields, search_kwargs with method_params: one type,
    # one wording (the search_kwargs paths raised a plain InvalidParameterError before).
    cases = [
        {"diversity": 0.2, "method_params": {"diversity": 0.3}},
        {"diversity": 0.2, "search_kwargs": {"diversity": 0.4}},
        {"k": 2, "search_kwargs": {"k": 3}},
        {"method": "mmr", "method_params": {"lambda_mult": 0.2}, "search_kwargs": {"lambda_mult": 0.5}},
    ]
    for fields in cases:
        with pytest.raises(ConflictingParametersError, match=r"given twice with different values: .*; give it once"):
            DiverseRetriever(vectorstore=store, **fields)


def test_the_plan_is_resolved_once_and_again_only_when_settings_change(
    store: InMemoryVectorStore, resolved_methods: list[str]
) -> None:
    resolved = resolved_methods
    retriever = DiverseRetriever(vectorstore=store, method="gmmr", k=2, fetch_k=5, diversity=0.4)
    assert resolved == ["gmmr"]
    for _ in range(3):
        assert retriever.invoke("q")[0].metadata["selection_params"] == {"lambda_mult": 0.6}
    assert resolved == ["gmmr"]  # no call resolved the parameters again
    retriever.method_params["diversity"] = 1.0
    assert retriever.invoke("q")[0].metadata["selection_params"] == {"lambda_mult": 0.0}
    retriever.invoke("q")
    assert resolved == ["gmmr", "gmmr"]
