"""Issue 46, item 4 through the LangChain face: a document whose embedding is NaN, inf, all zero or
beyond float32's range is left out; the query is answered from the rest and every returned
document's ``selection_params`` lists what was dropped (positions among the fetched candidates)."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from langchain_core.callbacks.manager import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from lc_fakes import VECTORS, TableEmbeddings

from langchain_diverse import DiverseRetriever

BAD = {"nan doc": [float("nan"), 0.0, 1.0, 0.0], "inf doc": [float("inf"), 0.0, 0.0, 0.0],
       "zero doc": [0.0, 0.0, 0.0, 0.0], "huge doc": [1e300, 0.0, 0.0, 0.0]}


class ListRetriever(BaseRetriever):
    docs: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        return list(self.docs)


@pytest.mark.parametrize("method", ["topk", "mmr", "learned", "adaptive", "dpp"])
def test_bad_embeddings_are_dropped_and_reported(method: str) -> None:
    emb = TableEmbeddings({**VECTORS, **BAD})
    texts = ["nan doc", "dup a", "inf doc", "bridge", "zero doc", "huge doc", "noise"]
    retriever = DiverseRetriever(base_retriever=ListRetriever(docs=[Document(page_content=t) for t in texts]),
                                 embeddings=emb, k=3, method=method)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        docs = retriever.invoke("q")
    assert len(docs) == 3 and not {d.page_content for d in docs} & set(BAD)
    dropped = docs[0].metadata["selection_params"]["dropped"]
    assert [d["index"] for d in dropped] == [0, 2, 4, 5]
    assert dropped[0]["reason"] == "NaN in vector" and dropped[2]["reason"] == "zero vector"
    assert "float32" in dropped[3]["reason"]  # 1e300 is read into float32 as inf
    assert any("1e+300 (row" in str(w.message) and "beyond float32" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # warned again: bad vectors are never cached
        again = asyncio.run(retriever.ainvoke("q"))  # same answer, async too
    assert [d.page_content for d in again] == [d.page_content for d in docs]


@pytest.mark.parametrize("method", ["mmr", "learned", "topk"])
def test_blank_documents_are_left_out_not_fatal(method: str) -> None:
    """Issue 46 item 4: a blank chunk in the store no longer fails every query that fetches it."""
    emb = TableEmbeddings(VECTORS)
    texts = ["dup a", "", "bridge", "   ", "noise"]
    docs = [Document.model_construct(page_content=t, metadata={}) for t in texts]
    retriever = DiverseRetriever(base_retriever=ListRetriever(docs=docs), embeddings=emb, k=2, method=method)
    out = retriever.invoke("q")
    assert len(out) == 2 and all(d.page_content.strip() for d in out)
    assert out[0].metadata["selection_params"]["blank_documents"] == [1, 3]
    again = asyncio.run(retriever.ainvoke("q"))
    assert [d.page_content for d in again] == [d.page_content for d in out]


def test_a_compressor_given_only_blank_documents_names_them() -> None:
    from langchain_diverse import DiverseCompressor, EmptyDocumentError

    compressor = DiverseCompressor(embeddings=TableEmbeddings(VECTORS), k=1)
    kept = compressor.compress_documents([Document(page_content="dup a"), Document(page_content=" ")], "q")
    assert [d.page_content for d in kept] == ["dup a"]
    assert kept[0].metadata["selection_params"]["blank_documents"] == [1]
    with pytest.raises(EmptyDocumentError, match="document 0"):
        compressor.compress_documents([Document(page_content=" ")], "q")


def test_a_pipeline_run_lists_the_blank_documents_its_source_left_out() -> None:
    """e5775e9: LangChainSource dropped them with only a log line; the run's result said nothing."""
    from diverse_core.pipelines.drrag.pipeline import DRRAG

    from langchain_diverse import DRRAGRetriever
    from langchain_diverse.sources import LangChainSource

    class AnyText(TableEmbeddings):  # DR-RAG also embeds "query + document" texts
        def _vec(self, text: str) -> list[float]:
            return list(self.table.get(text, [1.0, 0.1 * len(text), 0.0, 1.0]))

    docs = [Document.model_construct(page_content=t, metadata={}) for t in ["dup a", "", "bridge", "  ", "noise"]]
    source = LangChainSource(base_retriever=ListRetriever(docs=docs), embeddings=AnyText())
    note = "left out 2 fetched document(s) with no text (positions [1, 3]) for query='q'"
    for run in (lambda: DRRAG(None, k=2).run("q", source, generate=False),
                lambda: asyncio.run(DRRAG(None, k=2).arun("q", source, generate=False))):
        result = run()
        assert result.documents and note in result.warnings, result.warnings
    clean = DRRAG(None, k=2).run("q", LangChainSource(base_retriever=ListRetriever(docs=docs[:1] + docs[2:3]),
                                                      embeddings=AnyText()), generate=False)
    assert not any("left out" in w for w in clean.warnings)
    face = DRRAGRetriever(base_retriever=ListRetriever(docs=docs), embeddings=AnyText(), k=2)
    assert note in face.invoke("q")[0].metadata["pipeline_warnings"]
