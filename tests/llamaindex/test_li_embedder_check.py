"""The LlamaIndex faces warn once when a trained method runs on another embedder's vectors (issue 45)."""

from __future__ import annotations

import logging

import pytest
from diverse_core import embedder_check
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding

from llamaindex_diverse import DiverseNodePostprocessor, DiverseRetriever


@pytest.fixture(autouse=True)
def _fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedder_check, "_WARNED", set())


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "diverse_core" and r.levelno == logging.WARNING]


def test_postprocessor_with_another_embedder_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    e5 = MockEmbedding(embed_dim=8, model_name="intfloat/multilingual-e5-small")
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        DiverseNodePostprocessor(top_n=2, method="adaptive", embed_model=e5)
        DiverseNodePostprocessor(top_n=2, method="adaptive", embed_model=e5)
        DiverseNodePostprocessor(top_n=2, method="learned", embed_model=e5)  # validated on e5: no warning
    [message] = _warnings(caplog)
    assert "multilingual-e5-small" in message and "all-MiniLM-L6-v2" in message and "'adaptive'" in message


def test_retriever_reads_the_index_embedder(caplog: pytest.LogCaptureFixture) -> None:
    bge = MockEmbedding(embed_dim=8, model_name="BAAI/bge-small-en-v1.5")
    index = VectorStoreIndex.from_documents([Document(text=f"text {i}") for i in range(6)], embed_model=bge)
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        DiverseRetriever(index.as_retriever(similarity_top_k=6), top_n=2, method="adaptive")
        retriever = DiverseRetriever.from_index(index, top_n=2, fetch_k=6, method="adaptive")
        assert len(retriever.retrieve("text 1")) == 2
    [message] = _warnings(caplog)
    assert "'adaptive'" in message and "bge-small-en-v1.5" in message


def test_no_warning_for_minilm_an_unnamed_mock_or_a_plain_method(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        DiverseNodePostprocessor(top_n=2, method="learned", embed_model=MockEmbedding(embed_dim=8))
        DiverseNodePostprocessor(top_n=2, method="learned",
                                 embed_model=MockEmbedding(embed_dim=8, model_name="all-MiniLM-L6-v2"))
        DiverseNodePostprocessor(top_n=2, method="gmmr",
                                 embed_model=MockEmbedding(embed_dim=8, model_name="BAAI/bge-small-en-v1.5"))
    assert _warnings(caplog) == []


def test_dfrag_with_the_adaptive_evaluator_checks_the_embedder(caplog: pytest.LogCaptureFixture) -> None:
    from llamaindex_diverse import DFRAGRetriever

    bge = MockEmbedding(embed_dim=8, model_name="BAAI/bge-small-en-v1.5")
    index = VectorStoreIndex.from_documents([Document(text=f"f{i}") for i in range(8)], embed_model=bge)
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        retriever = DFRAGRetriever(index, embed_model=bge, k=3, evaluator="adaptive")
        assert len(retriever.retrieve("f1")) == 3
    [message] = _warnings(caplog)
    assert "'adaptive'" in message and "bge-small-en-v1.5" in message
