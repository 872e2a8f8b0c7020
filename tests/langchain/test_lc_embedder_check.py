"""The LangChain faces warn once when a trained method runs on another embedder's vectors (issue 45)."""

from __future__ import annotations

import logging

import pytest
from diverse_core import embedder_check
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_diverse import DiverseCompressor, DiverseRetriever, MiniLMEmbeddings


class BgeEmbeddings(DeterministicFakeEmbedding):
    model_name: str = "BAAI/bge-small-en-v1.5"


@pytest.fixture(autouse=True)
def _fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedder_check, "_WARNED", set())


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "diverse_core" and r.levelno == logging.WARNING]


def _store(embeddings: DeterministicFakeEmbedding) -> InMemoryVectorStore:
    store = InMemoryVectorStore(embedding=embeddings)
    store.add_documents([Document(page_content=f"text {i}", metadata={"source": f"s{i % 3}"}) for i in range(8)])
    return store


def test_retriever_over_another_embedder_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    store = _store(BgeEmbeddings(size=16))
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        retriever = DiverseRetriever(vectorstore=store, k=2, fetch_k=6, method="learned")
        DiverseRetriever(vectorstore=store, k=2, fetch_k=6, method="learned")
        assert len(retriever.invoke("text 1")) == 2
    [message] = _warnings(caplog)
    assert "bge-small-en-v1.5" in message and "all-MiniLM-L6-v2" in message and "'learned'" in message


def test_compressor_over_another_embedder_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        DiverseCompressor(embeddings=BgeEmbeddings(size=16), k=2, method="adaptive")
    [message] = _warnings(caplog)
    assert "'adaptive'" in message


def test_no_warning_for_minilm_a_nameless_model_or_a_plain_method(caplog: pytest.LogCaptureFixture) -> None:
    assert MiniLMEmbeddings().model_name == "all-MiniLM-L6-v2"  # no model load
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        DiverseCompressor(embeddings=MiniLMEmbeddings(), k=2, method="learned")
        DiverseRetriever(vectorstore=_store(DeterministicFakeEmbedding(size=16)), k=2, fetch_k=6, method="learned")
        DiverseRetriever(vectorstore=_store(BgeEmbeddings(size=16)), k=2, fetch_k=6, method="gmmr")
    assert _warnings(caplog) == []


def test_dfrag_with_the_adaptive_evaluator_checks_the_store_embedder(caplog: pytest.LogCaptureFixture) -> None:
    from langchain_diverse import DFRAGRetriever

    store = _store(BgeEmbeddings(size=16))
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        DFRAGRetriever(vectorstore=store, k=2, fetch_k=6, evaluator="adaptive")
    [message] = _warnings(caplog)
    assert "'adaptive'" in message and "bge-small-en-v1.5" in message
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="diverse_core"):  # the LLM Evaluator reads no cosine features
        DFRAGRetriever(vectorstore=store, k=2, fetch_k=6, llm=lambda prompt, **kw: "0.5")
    assert _warnings(caplog) == []
